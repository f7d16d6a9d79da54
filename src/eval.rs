//! The evaluation harness: run a labelled query file against an index and measure ranking.
//!
//! A query file has one JSON object per line:
//! `{"id", "kind", "lang", "query", "relevant": ["<collection>/<category>/<skill-dir>", …]}`,
//! where each relevant entry is a skill folder relative to the home's `skills/`. A query with
//! no relevant skill (chit-chat, off-topic) should retrieve nothing; for those the harness
//! counts how many skills would be injected.

use crate::search::{Ingredients, Ranking, SearchOptions};
use crate::Index;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

/// One labelled query.
#[derive(Debug, Clone, Deserialize)]
pub struct Query {
    /// Its id.
    pub id: String,
    /// Its kind (direct, paraphrase, long, typo, zh, ja, ko, mixed, chitchat, …).
    pub kind: String,
    /// Its language.
    #[serde(default)]
    pub lang: String,
    /// The request.
    pub query: String,
    /// Every acceptable skill folder, relative to `skills/`.
    pub relevant: Vec<String>,
}

/// Ranking quality over a group of queries.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Metrics {
    /// Queries with at least one relevant skill.
    pub queries: usize,
    /// Share with a relevant skill first.
    pub success_at_1: f64,
    /// Share with a relevant skill in the top 6.
    pub success_at_6: f64,
    /// Mean reciprocal rank of the first relevant skill within the top 10.
    pub mrr_at_10: f64,
    /// Mean nDCG@10 with binary gains.
    pub ndcg_at_10: f64,
    /// Queries that should retrieve nothing.
    pub empty_queries: usize,
    /// Skills they retrieve on average (at most 6 each).
    pub injected_when_empty: f64,
}

/// The result for one query, for inspection.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// Query id.
    pub id: String,
    /// Query kind.
    pub kind: String,
    /// Query language.
    pub lang: String,
    /// Whether the query has relevant skills (else it should retrieve nothing).
    pub labelled: bool,
    /// Its nDCG@10 (0 for a query without relevant skills).
    pub ndcg_at_10: f64,
    /// Skills injected (at most 6), for a query without relevant skills.
    pub injected: usize,
    /// Rank (1-based) of the first relevant skill in the top 10.
    pub first_relevant: Option<usize>,
    /// The top ids.
    pub top: Vec<String>,
    /// Their scores.
    pub scores: Vec<f64>,
}

/// A whole evaluation.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The ranking evaluated.
    pub ranking: Ranking,
    /// Its ingredients.
    pub ingredients: Ingredients,
    /// Over every query.
    pub overall: Metrics,
    /// Per query kind.
    pub by_kind: BTreeMap<String, Metrics>,
    /// Per language.
    pub by_lang: BTreeMap<String, Metrics>,
    /// Chit-chat (queries without relevant skills) per language: skills injected per turn.
    pub chitchat_by_lang: BTreeMap<String, Metrics>,
    /// Per query.
    pub outcomes: Vec<Outcome>,
    /// Whether the semantic stage ran (the table calls the column `hybrid`).
    #[cfg(feature = "semantic")]
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hybrid: bool,
}

/// Errors reading a query file.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A line is not a query.
    #[error("{path} line {line}: {source}")]
    Parse {
        /// The file.
        path: String,
        /// The 1-based line.
        line: usize,
        /// The cause.
        source: serde_json::Error,
    },
    /// The index failed.
    #[error(transparent)]
    Index(#[from] crate::Error),
}

/// Reads a query file.
pub fn load(path: &Path) -> Result<Vec<Query>, EvalError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| EvalError::Read {
        path: name.clone(),
        source,
    })?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|source| EvalError::Parse {
                path: name.clone(),
                line: i + 1,
                source,
            })
        })
        .collect()
}

#[derive(Default)]
struct Sums {
    queries: usize,
    s1: f64,
    s6: f64,
    mrr: f64,
    ndcg: f64,
    empty: usize,
    injected: f64,
}

impl Sums {
    fn metrics(&self) -> Metrics {
        let q = self.queries.max(1) as f64;
        Metrics {
            queries: self.queries,
            success_at_1: self.s1 / q,
            success_at_6: self.s6 / q,
            mrr_at_10: self.mrr / q,
            ndcg_at_10: self.ndcg / q,
            empty_queries: self.empty,
            injected_when_empty: self.injected / self.empty.max(1) as f64,
        }
    }
}

/// Runs `queries` against profile `profile` of `index`, whose skills live under
/// `skills_root`, with `ranking`, for `session`.
pub fn evaluate(
    index: &Index,
    profile: &str,
    skills_root: &Path,
    queries: &[Query],
    ranking: Ranking,
    ingredients: Ingredients,
    session: &crate::offer::Session,
) -> Result<Report, EvalError> {
    let opts = SearchOptions {
        ranking,
        ingredients,
        ..Default::default()
    };
    evaluate_with(index, profile, skills_root, queries, &opts, session)
}

/// [`evaluate`] with the ranking, ingredients (and, with the `semantic` feature, the
/// semantic stage) of `base`; `k`, the floor and the session are set as the plugin would.
pub fn evaluate_with(
    index: &Index,
    profile: &str,
    skills_root: &Path,
    queries: &[Query],
    base: &SearchOptions,
    session: &crate::offer::Session,
) -> Result<Report, EvalError> {
    let (ranking, ingredients) = (base.ranking, base.ingredients);
    // Relevant skills that the session is not offered (e.g. a duplicate in the same category,
    // or a skill for another environment) cannot be retrieved; the ideal ranking is computed
    // without them.
    let offered: HashSet<String> = index
        .offered(profile, session)?
        .into_iter()
        .map(|s| relative(&s.path, skills_root))
        .collect();
    let mut outcomes = Vec::new();
    for q in queries {
        let opts = SearchOptions {
            k: 10,
            // What the plugin would inject, floor included.
            floor: true,
            session: Some(session.clone()),
            ..base.clone()
        };
        let hits = index.search(profile, &q.query, &opts)?;
        let top: Vec<String> = hits
            .iter()
            .map(|h| relative(&h.path, skills_root))
            .collect();
        let relevant: HashSet<&str> = q.relevant.iter().map(|r| r.trim_end_matches('/')).collect();
        let first = top
            .iter()
            .position(|p| relevant.contains(p.as_str()))
            .map(|i| i + 1);
        let ndcg = if relevant.is_empty() {
            0.0
        } else {
            let ideal = relevant
                .iter()
                .filter(|r| offered.contains(**r))
                .count()
                .clamp(1, 10);
            let dcg: f64 = top
                .iter()
                .enumerate()
                .filter(|(_, p)| relevant.contains(p.as_str()))
                .map(|(i, _)| 1.0 / ((i + 2) as f64).log2())
                .sum();
            let idcg: f64 = (0..ideal).map(|i| 1.0 / ((i + 2) as f64).log2()).sum();
            dcg / idcg
        };
        outcomes.push(Outcome {
            id: q.id.clone(),
            kind: q.kind.clone(),
            lang: q.lang.clone(),
            labelled: !relevant.is_empty(),
            ndcg_at_10: ndcg,
            injected: if relevant.is_empty() {
                hits.len().min(6)
            } else {
                0
            },
            first_relevant: first,
            scores: hits.iter().map(|h| h.score).collect(),
            top: hits.into_iter().map(|h| h.id).collect(),
        });
    }
    Ok(summarise(ranking, ingredients, outcomes))
}

/// A report from per-query outcomes: the metrics overall, per kind and per language.
pub fn summarise(ranking: Ranking, ingredients: Ingredients, outcomes: Vec<Outcome>) -> Report {
    let mut overall = Sums::default();
    let mut by_kind: BTreeMap<String, Sums> = BTreeMap::new();
    let mut by_lang: BTreeMap<String, Sums> = BTreeMap::new();
    let mut chitchat: BTreeMap<String, Sums> = BTreeMap::new();
    for o in &outcomes {
        let groups = [
            &mut overall,
            by_kind.entry(o.kind.clone()).or_default(),
            by_lang.entry(o.lang.clone()).or_default(),
        ];
        if !o.labelled {
            for g in groups {
                g.empty += 1;
                g.injected += o.injected as f64;
            }
            let g = chitchat.entry(o.lang.clone()).or_default();
            g.empty += 1;
            g.injected += o.injected as f64;
        } else {
            let first = o.first_relevant;
            for g in groups {
                g.queries += 1;
                g.s1 += f64::from(u8::from(first == Some(1)));
                g.s6 += f64::from(u8::from(first.is_some_and(|r| r <= 6)));
                g.mrr += first.map_or(0.0, |r| 1.0 / r as f64);
                g.ndcg += o.ndcg_at_10;
            }
        }
    }
    let done = |m: BTreeMap<String, Sums>| m.into_iter().map(|(k, s)| (k, s.metrics())).collect();
    Report {
        ranking,
        ingredients,
        overall: overall.metrics(),
        by_kind: done(by_kind),
        by_lang: done(by_lang),
        chitchat_by_lang: done(chitchat),
        outcomes,
        #[cfg(feature = "semantic")]
        hybrid: false,
    }
}

/// A SKILL.md path as a skill folder relative to `skills_root`.
fn relative(path: &str, skills_root: &Path) -> String {
    let p = Path::new(path);
    let folder = p.parent().unwrap_or(p);
    folder
        .strip_prefix(skills_root)
        .unwrap_or(folder)
        .to_string_lossy()
        .into_owned()
}

/// Renders reports side by side as a Markdown table: one row per group, per ranking the
/// four metrics (and, for groups of empty queries, the skills injected on average).
pub fn table(reports: &[Report]) -> String {
    let mut out = String::from("| group | n |");
    for r in reports {
        let name = column_name(r);
        out.push_str(&format!(
            " {name} S@1 | {name} S@6 | {name} MRR@10 | {name} nDCG@10 |"
        ));
    }
    out.push_str("\n|---|---:|");
    for _ in reports {
        out.push_str("---:|---:|---:|---:|");
    }
    out.push('\n');
    let Some(first) = reports.first() else {
        return out;
    };
    let mut rows: Vec<(String, &Metrics)> = vec![("overall".into(), &first.overall)];
    rows.extend(first.by_kind.iter().map(|(k, m)| (format!("kind {k}"), m)));
    rows.extend(first.by_lang.iter().map(|(k, m)| (format!("lang {k}"), m)));
    for (name, m0) in rows {
        let pick = |r: &Report| -> Metrics {
            if name == "overall" {
                r.overall.clone()
            } else if let Some(k) = name.strip_prefix("kind ") {
                r.by_kind.get(k).cloned().unwrap_or_default()
            } else {
                r.by_lang
                    .get(name.trim_start_matches("lang "))
                    .cloned()
                    .unwrap_or_default()
            }
        };
        if m0.queries == 0 {
            out.push_str(&format!("| {name} | {} |", m0.empty_queries));
            for r in reports {
                out.push_str(&format!(
                    " injected {:.2} | | | |",
                    pick(r).injected_when_empty
                ));
            }
        } else {
            out.push_str(&format!("| {name} | {} |", m0.queries));
            for r in reports {
                let m = pick(r);
                out.push_str(&format!(
                    " {:.1}% | {:.1}% | {:.3} | {:.3} |",
                    100.0 * m.success_at_1,
                    100.0 * m.success_at_6,
                    m.mrr_at_10,
                    m.ndcg_at_10
                ));
            }
        }
        out.push('\n');
    }
    out
}

// ------------------------------------------------------------------------------------------
// Cross-validation.

/// What cross-validation maximises on the training folds to choose a grid point.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Objective {
    /// MRR@10 over the labelled queries.
    Mrr,
    /// nDCG@10 over the labelled queries.
    Ndcg,
    /// MRR@10 over the labelled queries less this much per skill injected per chit-chat
    /// turn: with 0.05, injecting one skill into every chit-chat turn costs as much as
    /// 0.05 of MRR.
    MrrLessInjected(f64),
    /// [`Objective::MrrLessInjected`], among the grid points that leave no kind and no
    /// language of the training folds worse on S@1, S@6, MRR@10 or nDCG@10 than the first
    /// grid point (the ingredients' neutral values) does; the first point when none does.
    Guarded(f64),
    /// [`Objective::Guarded`], but a group may be worse by up to one of its queries' worth
    /// (`1/n` on each metric), never on chit-chat: the semantic stage's objective, as a
    /// reordering moves single queries both ways, and a strict guard then keeps only the
    /// neutral point.
    Tolerant(f64),
}

impl Default for Objective {
    fn default() -> Self {
        Objective::Guarded(0.05)
    }
}

impl Objective {
    /// The objective over `outcomes`.
    pub fn value<'o>(&self, outcomes: impl IntoIterator<Item = &'o Outcome>) -> f64 {
        let (mut labelled, mut mrr, mut ndcg, mut empty, mut injected) =
            (0usize, 0.0, 0.0, 0usize, 0.0);
        for o in outcomes {
            if o.labelled {
                labelled += 1;
                mrr += o.first_relevant.map_or(0.0, |r| 1.0 / r as f64);
                ndcg += o.ndcg_at_10;
            } else {
                empty += 1;
                injected += o.injected as f64;
            }
        }
        let l = labelled.max(1) as f64;
        match *self {
            Objective::Mrr => mrr / l,
            Objective::Ndcg => ndcg / l,
            Objective::MrrLessInjected(penalty)
            | Objective::Guarded(penalty)
            | Objective::Tolerant(penalty) => mrr / l - penalty * injected / empty.max(1) as f64,
        }
    }
}

/// The fold (of `folds`) of the query `id`: a hash of the id (64-bit FNV-1a), so a query
/// keeps its fold when others are added, and the assignment is the same on every machine.
pub fn fold_of(id: &str, folds: usize) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % folds.max(1) as u64) as usize
}

/// Every point of the grid (the cartesian product of the values), in order: the first
/// parameter's values vary slowest. An empty grid has one point, with no values.
pub fn grid_points(grid: &[(String, Vec<f64>)]) -> Vec<Vec<f64>> {
    let mut points = vec![Vec::new()];
    for (_, values) in grid {
        points = points
            .into_iter()
            .flat_map(|p| {
                values.iter().map(move |&v| {
                    let mut q = p.clone();
                    q.push(v);
                    q
                })
            })
            .collect();
    }
    points
}

/// The result of a cross-validation.
#[derive(Debug, Clone, Serialize)]
pub struct CrossValidation {
    /// How many folds.
    pub folds: usize,
    /// What was maximised on the training folds.
    pub objective: Objective,
    /// The tuned parameters' names.
    pub names: Vec<String>,
    /// Per fold, the values chosen on the other folds.
    pub chosen: Vec<Vec<f64>>,
    /// Per fold, how many queries it holds.
    pub fold_sizes: Vec<usize>,
    /// The out-of-fold report: every query scored with the values chosen without it.
    pub report: Report,
}

/// K-fold cross-validation of the parameters in `grid`. `run` evaluates every query with
/// one grid point (values in `grid` order); then for each fold the point that maximises
/// `objective` on the other folds is chosen (ties: the earliest point), and the fold's
/// queries are scored with it. The report is over those out-of-fold outcomes only, so no
/// query is judged with values tuned on it.
pub fn cross_validate<E>(
    folds: usize,
    grid: &[(String, Vec<f64>)],
    objective: Objective,
    mut run: impl FnMut(&[f64]) -> Result<Report, E>,
) -> Result<CrossValidation, E> {
    let folds = folds.max(2);
    let points = grid_points(grid);
    let reports = points
        .iter()
        .map(|p| run(p))
        .collect::<Result<Vec<_>, E>>()?;
    let first = &reports[0];
    let fold: Vec<usize> = first
        .outcomes
        .iter()
        .map(|o| fold_of(&o.id, folds))
        .collect();
    let mut chosen = Vec::new();
    let mut fold_sizes = Vec::new();
    let mut oof: Vec<Option<Outcome>> = vec![None; first.outcomes.len()];
    let training = |r: &Report, f: usize| -> Vec<Outcome> {
        r.outcomes
            .iter()
            .zip(&fold)
            .filter(|(_, &k)| k != f)
            .map(|(o, _)| o.clone())
            .collect()
    };
    for f in 0..folds {
        let mut best = (f64::NEG_INFINITY, 0usize);
        let base = summarise(first.ranking, first.ingredients, training(first, f));
        for (i, r) in reports.iter().enumerate() {
            let train = training(r, f);
            if matches!(objective, Objective::Guarded(_) | Objective::Tolerant(_)) && i > 0 {
                let cand = summarise(r.ranking, r.ingredients, train.clone());
                let slack = matches!(objective, Objective::Tolerant(_));
                if !no_group_worse_than(&base, &cand, slack) {
                    continue;
                }
            }
            let v = objective.value(&train);
            if v > best.0 + 1e-12 {
                best = (v, i);
            }
        }
        chosen.push(points[best.1].clone());
        fold_sizes.push(fold.iter().filter(|&&k| k == f).count());
        for (i, o) in reports[best.1].outcomes.iter().enumerate() {
            if fold[i] == f {
                oof[i] = Some(o.clone());
            }
        }
    }
    let report = summarise(
        first.ranking,
        first.ingredients,
        oof.into_iter().flatten().collect(),
    );
    Ok(CrossValidation {
        folds,
        objective,
        names: grid.iter().map(|(n, _)| n.clone()).collect(),
        chosen,
        fold_sizes,
        report,
    })
}

/// Whether no kind and no language of `cand` is worse than in `base` on S@1, S@6, MRR@10
/// or nDCG@10 (nor injects more skills per chit-chat turn).
pub fn no_group_worse(base: &Report, cand: &Report) -> bool {
    no_group_worse_than(base, cand, false)
}

/// [`no_group_worse`]; with `one_query`, a group may lose up to one of its queries' worth
/// (`1/n`) on each of S@1, S@6, MRR@10 and nDCG@10 (never more injected chit-chat).
pub fn no_group_worse_than(base: &Report, cand: &Report, one_query: bool) -> bool {
    let worse = |b: &Metrics, c: &Metrics| {
        let slack = if one_query && b.queries > 0 {
            1.0 / b.queries as f64
        } else {
            0.0
        } + 1e-9;
        c.success_at_1 < b.success_at_1 - slack
            || c.success_at_6 < b.success_at_6 - slack
            || c.mrr_at_10 < b.mrr_at_10 - slack
            || c.ndcg_at_10 < b.ndcg_at_10 - slack
            || c.injected_when_empty > b.injected_when_empty + 1e-9
    };
    let groups = |r: &Report| -> Vec<(String, Metrics)> {
        r.by_kind
            .iter()
            .map(|(k, m)| (format!("kind {k}"), m.clone()))
            .chain(
                r.by_lang
                    .iter()
                    .map(|(k, m)| (format!("lang {k}"), m.clone())),
            )
            .collect()
    };
    let c: BTreeMap<String, Metrics> = groups(cand).into_iter().collect();
    groups(base)
        .iter()
        .all(|(g, b)| c.get(g).is_none_or(|m| !worse(b, m)))
}

/// A report's name in tables: its ranking, or `hybrid` when the semantic stage ran.
pub fn column_name(r: &Report) -> String {
    #[cfg(feature = "semantic")]
    if r.hybrid {
        return "hybrid".to_owned();
    }
    format!("{:?}", r.ranking).to_lowercase()
}

/// One line per report: chit-chat skills injected per turn, per language.
pub fn chitchat_line(reports: &[Report]) -> String {
    let mut out = String::new();
    for r in reports {
        let name = column_name(r);
        let per: Vec<String> = r
            .chitchat_by_lang
            .iter()
            .map(|(l, m)| format!("{l} {:.2}", m.injected_when_empty))
            .collect();
        out.push_str(&format!(
            "{name}: chit-chat skills injected per turn: {}\n",
            per.join(", ")
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(id: &str, first: Option<usize>, injected: usize) -> Outcome {
        Outcome {
            id: id.into(),
            kind: "k".into(),
            lang: "en".into(),
            labelled: injected == 0,
            ndcg_at_10: first.map_or(0.0, |r| 1.0 / r as f64),
            injected,
            first_relevant: first,
            top: Vec::new(),
            scores: Vec::new(),
        }
    }

    #[test]
    fn folds_are_deterministic_and_spread() {
        assert_eq!(fold_of("q001", 5), fold_of("q001", 5));
        let mut counts = [0usize; 5];
        for i in 0..500 {
            counts[fold_of(&format!("q{i:03}"), 5)] += 1;
        }
        assert!(counts.iter().all(|&c| c > 60), "{counts:?}");
    }

    #[test]
    fn grid_is_a_cartesian_product() {
        let g = vec![
            ("a".to_owned(), vec![0.0, 1.0]),
            ("b".to_owned(), vec![2.0, 3.0, 4.0]),
        ];
        let p = grid_points(&g);
        assert_eq!(p.len(), 6);
        assert_eq!(p[0], vec![0.0, 2.0]);
        assert_eq!(p[5], vec![1.0, 4.0]);
        assert_eq!(grid_points(&[]), vec![Vec::<f64>::new()]);
    }

    #[test]
    fn objective_penalises_injection() {
        let o = [
            outcome("a", Some(1), 0),
            outcome("b", Some(2), 0),
            outcome("c", None, 6),
        ];
        assert!((Objective::Mrr.value(&o) - 0.75).abs() < 1e-12);
        assert!((Objective::MrrLessInjected(0.05).value(&o) - 0.45).abs() < 1e-12);
    }

    #[test]
    fn the_tolerant_guard_allows_one_query_per_group_and_no_more() {
        let ids: Vec<String> = (0..10).map(|i| format!("q{i}")).collect();
        let report = |firsts: &[Option<usize>]| {
            summarise(
                Ranking::Default,
                Ingredients::default(),
                ids.iter()
                    .zip(firsts)
                    .map(|(id, f)| outcome(id, *f, 0))
                    .collect(),
            )
        };
        let base = report(&[Some(1); 10]);
        let mut one = [Some(1); 10];
        one[0] = Some(2);
        let mut two = one;
        two[1] = Some(2);
        assert!(!no_group_worse(&base, &report(&one)));
        assert!(no_group_worse_than(&base, &report(&one), true));
        assert!(!no_group_worse_than(&base, &report(&two), true));
    }

    #[test]
    fn each_fold_is_scored_with_values_chosen_without_it() {
        // A parameter that helps every query: it is chosen in every fold, and the report is
        // that of the good point. The ids cover every fold.
        let ids: Vec<String> = (0..50).map(|i| format!("q{i:03}")).collect();
        let grid = vec![("w".to_owned(), vec![0.0, 1.0])];
        let cv = cross_validate::<()>(5, &grid, Objective::Mrr, |p| {
            let first = if p[0] > 0.5 { Some(1) } else { Some(2) };
            Ok(summarise(
                Ranking::Default,
                Ingredients::default(),
                ids.iter().map(|id| outcome(id, first, 0)).collect(),
            ))
        })
        .unwrap();
        assert_eq!(cv.chosen, vec![vec![1.0]; 5]);
        assert_eq!(cv.fold_sizes.iter().sum::<usize>(), 50);
        assert!((cv.report.overall.mrr_at_10 - 1.0).abs() < 1e-12);
        assert_eq!(cv.report.outcomes.len(), 50);
    }
}
