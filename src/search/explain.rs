//! Explaining: why one skill scored what it did for a query.
//!
//! An explanation replays the search (the same plan, the same scores, so its total and rank
//! are the search's) and then breaks the skill's score down per query term and, within a
//! term, per field, in proportion to each field's part of the BM25F pseudo frequency.

use super::plan::TermList;
use super::query::Query;
use super::score::{bm25f_tf, term_score};
use super::{Ranking, SearchOptions, Snapshot, View};
use crate::fields::{Field, FieldStats, FIELD_COUNT};
use crate::store::StoreError;
use serde::Serialize;

/// One field's part in a term's contribution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldContribution {
    /// The field.
    pub field: &'static str,
    /// The term's frequency in it.
    pub tf: u32,
    /// The field's length in the skill.
    pub length: u32,
    /// The share of the term's score this field brings.
    pub score: f64,
}

/// One query term's part in a skill's score.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TermContribution {
    /// The term as scored (analysed; for a typo, the vocabulary term it was matched to).
    pub term: String,
    /// The query word it came from, when it was matched as a typo.
    pub typo_of: Option<String>,
    /// Offered skills containing it.
    pub df: u32,
    /// Its IDF.
    pub idf: f64,
    /// Its weight in the query (1, less for a typo match).
    pub weight: f64,
    /// Per field where the skill contains it.
    pub fields: Vec<FieldContribution>,
    /// What it adds to the score.
    pub score: f64,
}

/// Why a skill scored what it did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    /// The skill.
    pub id: String,
    /// The SKILL.md path.
    pub path: String,
    /// The ranking explained.
    pub ranking: Ranking,
    /// Its rank among all hits (1-based), if it is a hit at all.
    pub rank: Option<usize>,
    /// Its total score.
    pub score: f64,
    /// Offered skills counted.
    pub docs: u32,
    /// Why it is not offered, if it is not.
    pub inactive: Option<String>,
    /// Query words dropped before scoring (stop words, words beyond the long-turn cut,
    /// words matching nothing).
    pub dropped: Vec<String>,
    /// Per query term scored.
    pub terms: Vec<TermContribution>,
    /// Why the turn asks for a skill or not (`intent`); when it does not and the floor
    /// applies, nothing is a hit.
    pub intent: super::Verdict,
    /// How the semantic stage made its score, when it ran and the skill is a candidate
    /// (the terms then explain its lexical score).
    #[cfg(feature = "semantic")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub semantic: Option<super::semantic::SemanticContribution>,
}

/// Explains the score of the skill `id` (or name) for `query`; an offered skill of that id
/// is preferred to one that is not.
pub(super) fn explain(
    snap: &Snapshot,
    query: &str,
    id: &str,
    opts: &SearchOptions,
) -> Result<Option<Explanation>, StoreError> {
    let docs = snap.all_docs()?;
    let Some((doc, head, _)) = docs
        .iter()
        .filter(|(_, h, _)| h.id == id || h.name == id)
        .min_by_key(|(_, h, _)| h.inactive.is_some())
    else {
        return Ok(None);
    };
    let query = Query::new(query, opts);
    #[cfg_attr(not(feature = "semantic"), allow(unused_mut))]
    let mut lexical = snap.score_lexical(&query, opts, None)?;
    #[cfg(feature = "semantic")]
    let (scores, mut details) = super::semantic::fuse(snap, &query, &mut lexical, opts)?;
    #[cfg(not(feature = "semantic"))]
    let scores = std::mem::take(&mut lexical.scores);
    let (plan, view) = (lexical.plan, lexical.view);
    let total = scores
        .iter()
        .find(|(d, _)| d == doc)
        .map_or(0.0, |&(_, s)| s);
    let rank = (total > 0.0).then(|| 1 + scores.iter().filter(|&&(_, s)| s > total).count());
    let mut terms = Vec::new();
    for t in &plan.terms {
        let mut stats = None;
        t.list
            .visit(&view, |d, mask, s| {
                if d == *doc {
                    stats = Some((*s, mask));
                }
            })
            .map_err(|e| snap.store.bad_record(e))?;
        let score = stats.map_or(0.0, |(s, mask)| term_score(t, &s, mask, &view, opts));
        let fields = stats
            .map(|(s, mask)| field_shares(&t.list, &s, mask, score, &view, opts))
            .unwrap_or_default();
        terms.push(TermContribution {
            term: t.term.clone(),
            typo_of: t.typo_of.clone(),
            df: t.list.df,
            idf: t.idf,
            weight: t.weight,
            fields,
            score,
        });
    }
    Ok(Some(Explanation {
        id: head.id.clone(),
        path: head.key.clone(),
        ranking: opts.ranking,
        rank,
        score: total,
        docs: view.n,
        inactive: head.inactive.as_ref().map(ToString::to_string).or_else(|| {
            view.hidden.contains(doc).then(|| {
                "hidden in this session (tool conditions, environments, platform_disabled, \
                 plugin, or a clash with a skill shown in it)"
                    .to_owned()
            })
        }),
        dropped: plan.dropped,
        terms,
        intent: query.intent,
        #[cfg(feature = "semantic")]
        semantic: details.remove(doc),
    }))
}

/// A term's `score` in one skill, shared among the fields that contain it.
fn field_shares(
    list: &TermList,
    stats: &FieldStats,
    mask: u32,
    score: f64,
    view: &View,
    opts: &SearchOptions,
) -> Vec<FieldContribution> {
    let parts = match opts.ranking {
        Ranking::Seed => {
            let mut parts = [0.0; FIELD_COUNT];
            parts[Field::Seed as usize] = 1.0;
            parts
        }
        Ranking::Default => bm25f_tf(stats, mask, view, &list.weights),
    };
    let total: f64 = parts.iter().sum();
    Field::ALL
        .iter()
        .filter(|&&f| parts[f as usize] > 0.0)
        .map(|&f| FieldContribution {
            field: f.as_str(),
            tf: stats[f as usize].0,
            length: stats[f as usize].1,
            score: score * parts[f as usize] / total,
        })
        .collect()
}
