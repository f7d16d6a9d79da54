//! The rankings, pinned: every hit and its exact score for the evaluation queries and the
//! benchmark queries over `examples/hermes-home`, with both rankings, with and without the
//! relevance floor, and in a session that hides skills (tool information, an environment).
//!
//! Search is optimised for speed without being allowed to change a single ranking; this
//! test fails if an optimisation does. The fixture, `tests/fixtures/ranking-golden.tsv`
//! (variant, query number, `id=score` of each hit, best first), was written by the search
//! that predates the optimisations. Regenerate it only for a deliberate ranking change:
//! `SKILLIDX_WRITE_GOLDEN=1 cargo test --test ranking_golden` writes it from this build.

use serde_json::Value;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// One answer with hits: variant, query number, (id, score) of each hit, best first.
type Answer = (String, usize, Vec<(String, f64)>);

/// How many of the evaluation set's queries the fixture holds (those written before the
/// set grew; the rest are measured by `eval`).
const EVAL_QUERIES: usize = 316;

/// The queries, in fixture order: the evaluation set's first [`EVAL_QUERIES`], then the
/// benchmark's.
fn queries(repo: &Path) -> Vec<String> {
    let eval = std::fs::read_to_string(repo.join("tests/eval/queries.jsonl")).unwrap();
    let mut out: Vec<String> = eval
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(EVAL_QUERIES)
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            v["query"].as_str().unwrap().to_owned()
        })
        .collect();
    let bench: Value =
        serde_json::from_str(&std::fs::read_to_string(repo.join("benches/queries.json")).unwrap())
            .unwrap();
    for q in bench["short"].as_array().unwrap() {
        out.push(q.as_str().unwrap().to_owned());
    }
    out.push(bench["turn"].as_str().unwrap().to_owned());
    out
}

/// The `score` of every hit of an answer line, in order, read from the text with the
/// standard library's exact parser: serde_json's default float parser can be a unit in the
/// last place off, and this test compares scores bit for bit. (`"score":` cannot occur
/// inside a JSON string, where its quotes would be escaped.)
fn scores(line: &str) -> Vec<f64> {
    line.split("\"score\":")
        .skip(1)
        .map(|rest| {
            let end = rest.find([',', '}']).unwrap();
            rest[..end].parse().unwrap()
        })
        .collect()
}

#[test]
fn every_hit_and_score_is_as_before() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let home = repo.join("examples/hermes-home");
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("golden.redb");
    let bin = env!("CARGO_BIN_EXE_skillidx");
    let sync = Command::new(bin)
        .args(["sync", "--home"])
        .arg(&home)
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(sync.status.success(), "{sync:?}");
    let input: String = queries(repo)
        .iter()
        .map(|q| serde_json::json!({"query": q, "k": 6}).to_string() + "\n")
        .collect();
    let hidden = ["--tools", "web_search", "--env", "docker"];
    let variants: [(&str, Vec<&str>); 6] = [
        ("default", vec![]),
        ("default-floor", vec!["--floor"]),
        ("seed", vec!["--ranking", "seed"]),
        ("default-tools", hidden.to_vec()),
        ("default-floor-tools", [&["--floor"][..], &hidden].concat()),
        ("seed-tools", [&["--ranking", "seed"][..], &hidden].concat()),
    ];
    let mut got: Vec<Answer> = Vec::new();
    for (name, args) in &variants {
        let mut child = Command::new(bin)
            .args(["search", "--batch", "--db"])
            .arg(&db)
            .arg("--home")
            .arg(&home)
            .args(args)
            .env_remove("HERMES_PLATFORM")
            .env_remove("HERMES_SESSION_PLATFORM")
            .env_remove("HERMES_KANBAN_TASK")
            .env_remove("HERMES_KANBAN_BOARD")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{name}: {out:?}");
        for (i, line) in String::from_utf8(out.stdout).unwrap().lines().enumerate() {
            let v: Value = serde_json::from_str(line).unwrap();
            let hits: Vec<(String, f64)> = v["hits"]
                .as_array()
                .unwrap()
                .iter()
                .zip(scores(line))
                .map(|(h, score)| (h["id"].as_str().unwrap().to_owned(), score))
                .collect();
            if !hits.is_empty() {
                got.push((name.to_string(), i, hits));
            }
        }
    }
    let path = repo.join("tests/fixtures/ranking-golden.tsv");
    if std::env::var_os("SKILLIDX_WRITE_GOLDEN").is_some() {
        let text: String = got
            .iter()
            .map(|(name, i, hits)| {
                let hits: Vec<String> = hits.iter().map(|(id, s)| format!("{id}={s}")).collect();
                format!("{name}\t{i}\t{}\n", hits.join(" "))
            })
            .collect();
        std::fs::write(&path, text).unwrap();
        return;
    }
    let fixture = std::fs::read_to_string(&path).unwrap();
    let want: Vec<Answer> = fixture
        .lines()
        .map(|l| {
            let mut cols = l.split('\t');
            let name = cols.next().unwrap().to_owned();
            let i = cols.next().unwrap().parse().unwrap();
            let hits = cols
                .next()
                .unwrap()
                .split(' ')
                .map(|h| {
                    let (id, score) = h.rsplit_once('=').unwrap();
                    (id.to_owned(), score.parse().unwrap())
                })
                .collect();
            (name, i, hits)
        })
        .collect();
    assert_eq!(got.len(), want.len(), "queries with hits");
    for (g, w) in got.iter().zip(&want) {
        // Exact equality, scores included: the same additions in the same order.
        assert_eq!(g, w, "variant {}, query {}", w.0, w.1);
    }
}
