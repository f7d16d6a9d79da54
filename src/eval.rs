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
    /// Per query.
    pub outcomes: Vec<Outcome>,
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
    // Relevant skills that the session is not offered (e.g. a duplicate in the same category,
    // or a skill for another environment) cannot be retrieved; the ideal ranking is computed
    // without them.
    let offered: HashSet<String> = index
        .offered(profile, session)?
        .into_iter()
        .map(|s| relative(&s.path, skills_root))
        .collect();
    let mut overall = Sums::default();
    let mut by_kind: BTreeMap<String, Sums> = BTreeMap::new();
    let mut by_lang: BTreeMap<String, Sums> = BTreeMap::new();
    let mut outcomes = Vec::new();
    for q in queries {
        let opts = SearchOptions {
            k: 10,
            ranking,
            ingredients,
            // What the plugin would inject, floor included.
            floor: true,
            session: Some(session.clone()),
            ..Default::default()
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
        let groups = [
            &mut overall,
            by_kind.entry(q.kind.clone()).or_default(),
            by_lang.entry(q.lang.clone()).or_default(),
        ];
        if relevant.is_empty() {
            let injected = hits.len().min(6) as f64;
            for g in groups {
                g.empty += 1;
                g.injected += injected;
            }
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
            for g in groups {
                g.queries += 1;
                g.s1 += f64::from(u8::from(first == Some(1)));
                g.s6 += f64::from(u8::from(first.is_some_and(|r| r <= 6)));
                g.mrr += first.map_or(0.0, |r| 1.0 / r as f64);
                g.ndcg += dcg / idcg;
            }
        }
        outcomes.push(Outcome {
            id: q.id.clone(),
            kind: q.kind.clone(),
            first_relevant: first,
            scores: hits.iter().map(|h| h.score).collect(),
            top: hits.into_iter().map(|h| h.id).collect(),
        });
    }
    Ok(Report {
        ranking,
        ingredients,
        overall: overall.metrics(),
        by_kind: by_kind.into_iter().map(|(k, s)| (k, s.metrics())).collect(),
        by_lang: by_lang.into_iter().map(|(k, s)| (k, s.metrics())).collect(),
        outcomes,
    })
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
        let name = format!("{:?}", r.ranking).to_lowercase();
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
