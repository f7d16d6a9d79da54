//! MaxScore (`search::maxscore`) answers exactly as exhaustive scoring: the same hits, in
//! the same order, with bit-for-bit the same scores, for every k, both rankings, with and
//! without the relevance floor, and in a session that hides skills.
//!
//! Each answer is computed with [`Scoring::Pruned`] (MaxScore wherever it applies, whether
//! or not it is likely faster) and with [`Scoring::Exhaustive`]. The lists must span many
//! blocks of the postings' directory for the pruning to skip anything, so the homes are a
//! generated one of 1,500 skills whose words follow a Zipf law (common words in most
//! skills, rare ones in a few, repeated and of every length) and, when it is beside the
//! checkout, the shared corpus of ~2,800 real skills.

mod common;
use common::rand_lite::Rng;
use common::*;
use skillidx::offer::Session;
use skillidx::search::{Hit, Ranking, Scoring, SearchOptions};
use skillidx::Index;

/// A generated home: `n` skills over a vocabulary of 400 words drawn by a Zipf law, some
/// of which need a tool (`requires_tools: [browser]`), so that a session without it hides
/// them.
fn zipf_home(n: usize) -> (Home, Vec<String>) {
    let h = Home::new();
    let words: Vec<String> = (0..400).map(|i| format!("w{i}x")).collect();
    let mut rng = Rng::new(0x5eed);
    // Word i drawn with weight 1 / (i + 1): a draw from the cumulative weights.
    let cumulative: Vec<f64> = (0..words.len())
        .scan(0.0, |s, i| {
            *s += 1.0 / (i as f64 + 1.0);
            Some(*s)
        })
        .collect();
    let total = *cumulative.last().unwrap();
    let draw = |rng: &mut Rng, count: usize| -> String {
        (0..count)
            .map(|_| {
                let x = rng.below(1 << 30) as f64 / f64::from(1u32 << 30) * total;
                words[cumulative.partition_point(|&c| c < x).min(words.len() - 1)].as_str()
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    for i in 0..n {
        let name = format!("skill-{i}-{}", draw(&mut rng, 1));
        let (d, t, b) = (3 + rng.below(20), rng.below(4), rng.below(200));
        let description = draw(&mut rng, d as usize);
        let tags = draw(&mut rng, t as usize);
        let body = draw(&mut rng, b as usize);
        let needs = if rng.chance(5) {
            "metadata:\n  hermes:\n    requires_tools: [browser]\n"
        } else {
            ""
        };
        h.write(
            &format!("gen/s{i}"),
            &format!(
                "---\nname: {name}\ndescription: {description}\ntags: [{}]\n{needs}---\n# {name}\n\n{body}\n",
                tags.replace(' ', ", ")
            ),
        );
    }
    h.sync();
    (h, words)
}

/// Hits as (id, score bits), for an exact comparison.
fn exact(hits: &[Hit]) -> Vec<(String, u64)> {
    hits.iter()
        .map(|h| (h.id.clone(), h.score.to_bits()))
        .collect()
}

/// `q` answered under `opts` with MaxScore and exhaustively: the same hits, bit for bit.
/// Returns whether there were any.
fn assert_same(index: &Index, q: &str, opts: SearchOptions, what: &str) -> bool {
    let with = |scoring| SearchOptions {
        scoring,
        ..opts.clone()
    };
    let pruned = index.search("default", q, &with(Scoring::Pruned)).unwrap();
    let all = index
        .search("default", q, &with(Scoring::Exhaustive))
        .unwrap();
    assert_eq!(exact(&pruned), exact(&all), "{q:?} {what}");
    !all.is_empty()
}

/// Every query answered with MaxScore and exhaustively, compared; returns how many
/// answers had hits.
fn assert_pruned_is_exhaustive(
    index: &Index,
    queries: &[String],
    sessions: &[Option<Session>],
) -> usize {
    let mut with_hits = 0;
    for session in sessions {
        for q in queries {
            for ranking in [Ranking::Default, Ranking::Seed] {
                for floor in [false, true] {
                    for k in [1, 6, 30, 31, 100] {
                        let opts = SearchOptions {
                            k,
                            ranking,
                            floor,
                            session: session.clone(),
                            ..Default::default()
                        };
                        let what = format!("{ranking:?} floor {floor} k {k} session {session:?}");
                        with_hits += usize::from(assert_same(index, q, opts, &what));
                    }
                }
            }
        }
    }
    with_hits
}

#[test]
fn maxscore_answers_as_exhaustive_scoring_on_long_lists() {
    let (h, words) = zipf_home(1_500);
    let index = Index::open(&h.db()).unwrap();
    let mut rng = Rng::new(7);
    let mut queries = Vec::new();
    for _ in 0..200 {
        // Common and rare words mixed, some repeated, some in direction pairs (`to`), so
        // that proximity's candidates are asked for.
        let n = 1 + rng.below(6) as usize;
        let mut q: Vec<&str> = (0..n)
            .map(|_| {
                let rank = if rng.chance(2) {
                    rng.below(8)
                } else {
                    rng.below(400)
                };
                words[rank as usize].as_str()
            })
            .collect();
        if rng.chance(3) && q.len() >= 2 {
            q.insert(1, "to");
        }
        queries.push(q.join(" "));
    }
    // A session without the browser tool hides a fifth of the skills.
    let hiding = Session {
        tools: Some(["terminal".to_owned()].into_iter().collect()),
        toolsets: Some(Default::default()),
        ..Default::default()
    };
    let hidden = index
        .search(
            "default",
            "w0x",
            &SearchOptions {
                k: 2_000,
                session: Some(hiding.clone()),
                ..Default::default()
            },
        )
        .unwrap()
        .len();
    let shown = index
        .search(
            "default",
            "w0x",
            &SearchOptions {
                k: 2_000,
                session: Some(Session::default()),
                ..Default::default()
            },
        )
        .unwrap()
        .len();
    assert!(
        hidden < shown,
        "the session hides skills: {hidden} of {shown}"
    );
    let with_hits =
        assert_pruned_is_exhaustive(&index, &queries, &[Some(Session::default()), Some(hiding)]);
    assert!(with_hits > 1_000, "{with_hits} answers with hits");
    // Other BM25 parameters, some outside the range where a block bound bounds its block
    // (there exhaustive scoring runs whatever is asked).
    for (k1, b) in [
        (1.2, 0.75),
        (0.0, 1.0),
        (3.0, 0.0),
        (1.5, 1.7),
        (-0.5, 0.75),
    ] {
        for q in &queries[..40] {
            for ranking in [Ranking::Default, Ranking::Seed] {
                let opts = SearchOptions {
                    k: 6,
                    ranking,
                    params: skillidx::search::Params { k1, b },
                    session: Some(Session::default()),
                    ..Default::default()
                };
                assert_same(&index, q, opts, &format!("{ranking:?} k1 {k1} b {b}"));
            }
        }
    }
}

#[test]
fn maxscore_answers_as_exhaustive_scoring_on_the_shared_corpus() {
    let Some(corpus) = corpus() else {
        eprintln!("skipped: ../shared/corpus is not beside this checkout");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("corpus.redb");
    let (index, _) = library_sync(&corpus, &db);
    let eval = std::fs::read_to_string(repo().join("tests/eval/queries.jsonl")).unwrap();
    let queries: Vec<String> = eval
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["query"].as_str().unwrap().to_owned()
        })
        .step_by(3)
        .collect();
    let with_hits = assert_pruned_is_exhaustive(&index, &queries, &[Some(Session::default())]);
    assert!(with_hits > 500, "{with_hits} answers with hits");
}
