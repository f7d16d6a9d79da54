//! Per-query outcomes and the metrics over groups of them.

use super::judgements::{Grade, RELEVANT};
use crate::search::{Ingredients, Ranking};
use serde::Serialize;
use std::collections::BTreeMap;

/// How many hits the plugin injects at most, and the depth of the `@6` metrics.
pub const INJECTED: usize = 6;

/// Ranking quality over a group of queries.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Metrics {
    /// Queries with at least one relevant skill.
    pub queries: usize,
    /// Share with a skill of grade 2 first.
    pub success_at_1: f64,
    /// Share with a skill of grade 2 among those injected (the top 6 the plugin keeps).
    pub success_at_6: f64,
    /// Of the skills injected (the top 6 over the floor), the share that helps (grade 1
    /// or 2; an ungraded one counts as not), averaged over the queries that inject any.
    pub precision_at_6: f64,
    /// Mean nDCG@6 with graded gains (`2^grade − 1`).
    pub ndcg_at_6: f64,
    /// Mean reciprocal rank of the first skill of grade 2 within the top 10.
    pub mrr_at_10: f64,
    /// Mean nDCG@10 with binary gains (grade 2).
    pub ndcg_at_10: f64,
    /// Skills injected per labelled query.
    pub injected: f64,
    /// Copies named (folded into an injected entry) per labelled query.
    pub named: f64,
    /// Injected skills no judgement grades (each counted as not helping).
    pub ungraded: usize,
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
    /// Its nDCG@10 with binary gains (0 for a query without relevant skills).
    pub ndcg_at_10: f64,
    /// Its nDCG@6 with graded gains.
    pub ndcg_at_6: f64,
    /// Skills injected (the top 6 over the floor).
    pub injected: usize,
    /// Copies named by those entries rather than injected ([`crate::select`]).
    pub named: usize,
    /// Of those, the skills of grade 1 or 2.
    pub helpful: usize,
    /// Of those, the skills no judgement grades.
    pub ungraded: usize,
    /// Rank (1-based) of the first skill of grade 2 in the top 10.
    pub first_relevant: Option<usize>,
    /// Whether a skill of grade 2 is injected.
    pub found: bool,
    /// The top ids.
    pub top: Vec<String>,
    /// Their scores.
    pub scores: Vec<f64>,
    /// Their grades (`None`: ungraded).
    pub grades: Vec<Option<Grade>>,
}

impl Outcome {
    /// The outcome of a query whose top hits (best first, at most 10) have `grades` and
    /// whose injected hits (what the plugin keeps of them) have `shown`; `ideal` are the
    /// best grades any ranking could show for it, best first.
    pub fn score(grades: &[Option<Grade>], shown: &[Option<Grade>], ideal: &[Grade]) -> Scored {
        let gain = |g: Grade| f64::from((1u32 << g) - 1);
        let discount = |i: usize| 1.0 / ((i + 2) as f64).log2();
        // What is not injected helps no one: the @6 metrics read only the injected hits.
        let shown = &shown[..shown.len().min(INJECTED)];
        let dcg6: f64 = shown
            .iter()
            .enumerate()
            .map(|(i, g)| gain(g.unwrap_or(0)) * discount(i))
            .sum();
        let idcg6: f64 = ideal
            .iter()
            .take(INJECTED)
            .enumerate()
            .map(|(i, &g)| gain(g) * discount(i))
            .sum();
        let relevant = |g: &Option<Grade>| *g == Some(RELEVANT);
        let dcg10: f64 = grades
            .iter()
            .take(10)
            .enumerate()
            .filter(|(_, g)| relevant(g))
            .map(|(i, _)| discount(i))
            .sum();
        let ideal10 = ideal
            .iter()
            .filter(|&&g| g == RELEVANT)
            .count()
            .clamp(1, 10);
        let idcg10: f64 = (0..ideal10).map(discount).sum();
        Scored {
            ndcg_at_6: if idcg6 > 0.0 { dcg6 / idcg6 } else { 0.0 },
            ndcg_at_10: dcg10 / idcg10,
            helpful: shown.iter().filter(|g| g.is_some_and(|g| g >= 1)).count(),
            ungraded: shown.iter().filter(|g| g.is_none()).count(),
            first_relevant: grades.iter().take(10).position(relevant).map(|i| i + 1),
            found: shown.iter().any(relevant),
        }
    }
}

/// What [`Outcome::score`] computes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scored {
    /// nDCG@6, graded gains.
    pub ndcg_at_6: f64,
    /// nDCG@10, binary gains.
    pub ndcg_at_10: f64,
    /// Injected skills of grade ≥ 1.
    pub helpful: usize,
    /// Injected skills without a grade.
    pub ungraded: usize,
    /// Rank of the first skill of grade 2.
    pub first_relevant: Option<usize>,
    /// Whether a skill of grade 2 is injected.
    pub found: bool,
}

/// A whole evaluation.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The ranking evaluated.
    pub ranking: Ranking,
    /// Its ingredients.
    pub ingredients: Ingredients,
    /// Which home it ran on, for tables that put homes side by side (`""`: the only one).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub home: String,
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

#[derive(Default)]
struct Sums {
    queries: usize,
    s1: f64,
    s6: f64,
    p6: f64,
    p6_queries: usize,
    ndcg6: f64,
    mrr: f64,
    ndcg: f64,
    injected_labelled: f64,
    named: f64,
    ungraded: usize,
    empty: usize,
    injected: f64,
}

impl Sums {
    fn add(&mut self, o: &Outcome) {
        self.ungraded += o.ungraded;
        if !o.labelled {
            self.empty += 1;
            self.injected += o.injected as f64;
            return;
        }
        let first = o.first_relevant;
        self.queries += 1;
        self.s1 += f64::from(u8::from(first == Some(1)));
        self.s6 += f64::from(u8::from(o.found));
        self.mrr += first.map_or(0.0, |r| 1.0 / r as f64);
        self.ndcg += o.ndcg_at_10;
        self.ndcg6 += o.ndcg_at_6;
        self.injected_labelled += o.injected as f64;
        self.named += o.named as f64;
        if o.injected > 0 {
            self.p6_queries += 1;
            self.p6 += o.helpful as f64 / o.injected as f64;
        }
    }

    fn metrics(&self) -> Metrics {
        let q = self.queries.max(1) as f64;
        Metrics {
            queries: self.queries,
            success_at_1: self.s1 / q,
            success_at_6: self.s6 / q,
            precision_at_6: self.p6 / self.p6_queries.max(1) as f64,
            ndcg_at_6: self.ndcg6 / q,
            mrr_at_10: self.mrr / q,
            ndcg_at_10: self.ndcg / q,
            injected: self.injected_labelled / q,
            named: self.named / q,
            ungraded: self.ungraded,
            empty_queries: self.empty,
            injected_when_empty: self.injected / self.empty.max(1) as f64,
        }
    }
}

/// A report from per-query outcomes: the metrics overall, per kind and per language.
pub fn summarise(ranking: Ranking, ingredients: Ingredients, outcomes: Vec<Outcome>) -> Report {
    let mut overall = Sums::default();
    let mut by_kind: BTreeMap<String, Sums> = BTreeMap::new();
    let mut by_lang: BTreeMap<String, Sums> = BTreeMap::new();
    let mut chitchat: BTreeMap<String, Sums> = BTreeMap::new();
    for o in &outcomes {
        overall.add(o);
        by_kind.entry(o.kind.clone()).or_default().add(o);
        by_lang.entry(o.lang.clone()).or_default().add(o);
        if !o.labelled {
            chitchat.entry(o.lang.clone()).or_default().add(o);
        }
    }
    let done = |m: BTreeMap<String, Sums>| m.into_iter().map(|(k, s)| (k, s.metrics())).collect();
    Report {
        ranking,
        ingredients,
        home: String::new(),
        overall: overall.metrics(),
        by_kind: done(by_kind),
        by_lang: done(by_lang),
        chitchat_by_lang: done(chitchat),
        outcomes,
        #[cfg(feature = "semantic")]
        hybrid: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graded_scores_of_one_query() {
        // Injected: a 2, an ungraded, a 0, a 1; one more 2 exists beyond the top.
        let grades = [Some(2), None, Some(0), Some(1)];
        let s = Outcome::score(&grades, &grades, &[2, 2, 1]);
        assert_eq!(s.first_relevant, Some(1));
        assert_eq!((s.helpful, s.ungraded), (2, 1));
        let d = |i: usize| 1.0 / ((i + 2) as f64).log2();
        let dcg = 3.0 * d(0) + d(3);
        let idcg = 3.0 * d(0) + 3.0 * d(1) + d(2);
        assert!((s.ndcg_at_6 - dcg / idcg).abs() < 1e-12);
        assert!((s.ndcg_at_10 - 1.0 / (d(0) + d(1))).abs() < 1e-12);
        // Nothing to find: zero, not NaN.
        assert_eq!(Outcome::score(&[], &[], &[]).ndcg_at_6, 0.0);
        // A relevant hit under the plugin's floor is ranked but not injected.
        let s = Outcome::score(&[Some(0), Some(2)], &[Some(0)], &[2]);
        assert_eq!(
            (s.first_relevant, s.found, s.ndcg_at_6),
            (Some(2), false, 0.0)
        );
    }
}
