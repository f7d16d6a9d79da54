//! BM25 search, answered from a read transaction on the store.
//!
//! The seed ranking is Okapi BM25 over the seed document ([`Field::Seed`]) with Lucene's
//! always-positive IDF, `ln(1 + (N − df + 0.5) / (df + 0.5))`. A query term counts once
//! however often it is repeated, as in the seed plugin. Skills hidden on
//! the query's messaging platform are left out of N, df and the average length as well as
//! the results, so the answer equals that of an index built without them.

use crate::fields::{Field, FieldStats};
use crate::postings;
use crate::store::records::{CorpusStats, DocBody, DocHead, PlatformHidden};
use crate::store::{self, decode, open_or_none, ProfileTables, Store, StoreError};
use crate::tokenize::tokenize;
use redb::{ReadOnlyTable, ReadTransaction, ReadableTable};
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// BM25's free parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Params {
    /// Term-frequency saturation.
    pub k1: f64,
    /// Length normalisation.
    pub b: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params { k1: 1.5, b: 0.75 }
    }
}

/// Lucene's IDF: `ln(1 + (n − df + 0.5) / (df + 0.5))`, positive for every df ≤ n.
pub fn idf(n: f64, df: f64) -> f64 {
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// One term's BM25 weight in one document.
pub fn term_weight(idf: f64, tf: f64, dl: f64, avgdl: f64, p: Params) -> f64 {
    idf * (tf * (p.k1 + 1.0)) / (tf + p.k1 * (1.0 - p.b + p.b * dl / avgdl))
}

/// What to search for.
#[derive(Debug, Clone)]
pub struct SearchOptions {
    /// How many hits at most.
    pub k: usize,
    /// The messaging platform (`cli`, `telegram`, …) whose disabled skills are left out.
    pub platform: Option<String>,
    /// BM25 parameters.
    pub params: Params,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            k: 6,
            platform: None,
            params: Params::default(),
        }
    }
}

/// A skill found by a search.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    /// The id to load it by (`skill_view(id)`).
    pub id: String,
    /// The frontmatter name.
    pub name: String,
    /// The category path.
    pub category: String,
    /// The description.
    pub description: String,
    /// The BM25 score.
    pub score: f64,
    /// The SKILL.md path.
    pub path: String,
}

/// One term's part in a skill's score.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TermContribution {
    /// The term.
    pub term: String,
    /// Offered skills containing it.
    pub df: u32,
    /// Its IDF.
    pub idf: f64,
    /// Its frequency per field in the skill (fields where it is absent are left out).
    pub fields: Vec<(String, u32)>,
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
    /// Its rank among all hits (1-based), if it is a hit at all.
    pub rank: Option<usize>,
    /// Its total score.
    pub score: f64,
    /// Document length and the average over offered skills.
    pub length: u32,
    /// The average length.
    pub avg_length: f64,
    /// Offered skills counted.
    pub docs: u32,
    /// Why it is not offered, if it is not.
    pub inactive: Option<String>,
    /// Per query term.
    pub terms: Vec<TermContribution>,
}

/// A read snapshot of one profile, open for queries.
pub struct Snapshot<'s> {
    store: &'s Store,
    postings: Option<ReadOnlyTable<&'static str, &'static [u8]>>,
    docs: Option<ReadOnlyTable<u32, &'static [u8]>>,
    stats: CorpusStats,
    hidden: PlatformHidden,
}

impl<'s> Snapshot<'s> {
    /// Opens the tables of `profile` in `txn`.
    pub fn open(
        store: &'s Store,
        txn: &ReadTransaction,
        profile: &str,
    ) -> Result<Self, StoreError> {
        let tables = ProfileTables::new(profile);
        let postings = open_or_none(store, txn, tables.postings())?;
        let docs = open_or_none(store, txn, tables.docs())?;
        let (mut stats, mut hidden) = (CorpusStats::default(), PlatformHidden::new());
        if let Some(state) = open_or_none(store, txn, tables.state())? {
            if let Some(v) = state.get("stats").map_err(|e| store.err(e))? {
                stats = decode(store, v.value(), "corpus stats")?;
            }
            if let Some(v) = state.get("platform_hidden").map_err(|e| store.err(e))? {
                hidden = decode(store, v.value(), "platform hidden list")?;
            }
        }
        Ok(Snapshot {
            store,
            postings,
            docs,
            stats,
            hidden,
        })
    }

    /// The profile's corpus statistics.
    pub fn stats(&self) -> &CorpusStats {
        &self.stats
    }

    /// Reads the head and body of document `doc`.
    pub fn doc(&self, doc: u32) -> Result<Option<(DocHead, DocBody)>, StoreError> {
        let Some(docs) = &self.docs else {
            return Ok(None);
        };
        match docs.get(doc).map_err(|e| self.store.err(e))? {
            Some(v) => Ok(Some(decode(self.store, v.value(), "document")?)),
            None => Ok(None),
        }
    }

    /// Every document, in id order.
    pub fn all_docs(&self) -> Result<Vec<(u32, DocHead, DocBody)>, StoreError> {
        let Some(docs) = &self.docs else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for row in docs.iter().map_err(|e| self.store.err(e))? {
            let (k, v) = row.map_err(|e| self.store.err(e))?;
            let (h, b): (DocHead, DocBody) = decode(self.store, v.value(), "document")?;
            out.push((k.value(), h, b));
        }
        Ok(out)
    }

    /// The collection statistics with the documents hidden on `platform` left out.
    fn view(&self, platform: Option<&str>) -> Result<View, StoreError> {
        let hidden: HashSet<u32> = platform
            .and_then(|p| self.hidden.get(p))
            .map(|ids| ids.iter().copied().collect())
            .unwrap_or_default();
        let mut n = self.stats.docs;
        let mut sum = self.stats.sum_lens[Field::Seed as usize];
        for &d in &hidden {
            if let Some((h, _)) = self.doc(d)? {
                n -= 1;
                sum -= u64::from(h.lens[Field::Seed as usize]);
            }
        }
        Ok(View {
            hidden,
            n,
            avgdl: if n == 0 {
                0.0
            } else {
                sum as f64 / f64::from(n)
            },
        })
    }

    /// The seed-field postings of `term`: (doc, tf, doc length), hidden documents left out.
    fn seed_postings(&self, term: &str, view: &View) -> Result<Vec<(u32, u32, u32)>, StoreError> {
        let Some(table) = &self.postings else {
            return Ok(Vec::new());
        };
        let Some(bytes) = table.get(term).map_err(|e| self.store.err(e))? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        postings::decode_with(bytes.value(), |doc, stats: &FieldStats| {
            let (tf, len) = stats[Field::Seed as usize];
            if tf > 0 && !view.hidden.contains(&doc) {
                out.push((doc, tf, len));
            }
        })
        .map_err(|e| self.store.bad_record(format!("postings of {term:?}: {e}")))?;
        Ok(out)
    }

    /// Scores every matching document.
    fn score_all(
        &self,
        query: &str,
        opts: &SearchOptions,
    ) -> Result<(HashMap<u32, f64>, View), StoreError> {
        let view = self.view(opts.platform.as_deref())?;
        let mut scores: HashMap<u32, f64> = HashMap::new();
        if view.n == 0 {
            return Ok((scores, view));
        }
        for term in query_terms(query) {
            let list = self.seed_postings(&term, &view)?;
            let idf = idf(f64::from(view.n), list.len() as f64);
            for (doc, tf, dl) in list {
                *scores.entry(doc).or_insert(0.0) +=
                    term_weight(idf, f64::from(tf), f64::from(dl), view.avgdl, opts.params);
            }
        }
        Ok((scores, view))
    }

    /// The top `opts.k` skills for `query`, best first; ties ordered by id, then path.
    pub fn search(&self, query: &str, opts: &SearchOptions) -> Result<Vec<Hit>, StoreError> {
        let (scores, _) = self.score_all(query, opts)?;
        let ranked = self.rank(scores, opts.k)?;
        Ok(ranked.into_iter().map(|(_, hit)| hit).collect())
    }

    fn rank(&self, scores: HashMap<u32, f64>, k: usize) -> Result<Vec<(u32, Hit)>, StoreError> {
        let mut scored: Vec<(u32, f64)> = scores.into_iter().filter(|&(_, s)| s > 0.0).collect();
        if k == 0 || scored.is_empty() {
            return Ok(Vec::new());
        }
        scored.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        // Keep every document tied with the k-th, then break ties by id, which is stable
        // across rebuilds, unlike document numbers.
        let cutoff = scored[k.min(scored.len()) - 1].1;
        scored.retain(|&(_, s)| s >= cutoff);
        let mut hits = Vec::with_capacity(scored.len());
        for (doc, score) in scored {
            if let Some((h, b)) = self.doc(doc)? {
                hits.push((
                    doc,
                    Hit {
                        id: h.id,
                        name: h.name,
                        category: b.category,
                        description: b.description,
                        score,
                        path: h.key,
                    },
                ));
            }
        }
        hits.sort_by(|a, b| {
            b.1.score
                .total_cmp(&a.1.score)
                .then_with(|| a.1.id.cmp(&b.1.id))
                .then_with(|| a.1.path.cmp(&b.1.path))
        });
        hits.truncate(k);
        Ok(hits)
    }

    /// Explains the score of the skill `id` for `query`.
    pub fn explain(
        &self,
        query: &str,
        id: &str,
        opts: &SearchOptions,
    ) -> Result<Option<Explanation>, StoreError> {
        let docs = self.all_docs()?;
        let Some((doc, head, _)) = docs
            .iter()
            .filter(|(_, h, _)| h.id == id || h.name == id)
            .min_by_key(|(_, h, _)| h.inactive.is_some())
        else {
            return Ok(None);
        };
        let (scores, view) = self.score_all(query, opts)?;
        let total = scores.get(doc).copied().unwrap_or(0.0);
        let rank = (total > 0.0).then(|| 1 + scores.values().filter(|&&s| s > total).count());
        let mut terms = Vec::new();
        let all_postings = self.postings.as_ref();
        for term in query_terms(query) {
            let list = self.seed_postings(&term, &view)?;
            let df = list.len() as u32;
            let idf = idf(f64::from(view.n), f64::from(df));
            let mut fields = Vec::new();
            if let Some(bytes) = all_postings
                .map(|t| t.get(term.as_str()))
                .transpose()
                .map_err(|e| self.store.err(e))?
                .flatten()
            {
                postings::decode_with(bytes.value(), |d, stats| {
                    if d == *doc {
                        for f in Field::ALL {
                            if stats[f as usize].0 > 0 {
                                fields.push((f.as_str().to_owned(), stats[f as usize].0));
                            }
                        }
                    }
                })
                .map_err(|e| self.store.bad_record(e))?;
            }
            let score = list
                .iter()
                .find(|(d, _, _)| d == doc)
                .map_or(0.0, |&(_, tf, dl)| {
                    term_weight(idf, f64::from(tf), f64::from(dl), view.avgdl, opts.params)
                });
            terms.push(TermContribution {
                term,
                df,
                idf,
                fields,
                score,
            });
        }
        Ok(Some(Explanation {
            id: head.id.clone(),
            path: head.key.clone(),
            rank,
            score: total,
            length: head.lens[Field::Seed as usize],
            avg_length: view.avgdl,
            docs: view.n,
            inactive: head.inactive.clone(),
            terms,
        }))
    }
}

/// The distinct terms of `query`, in order of first occurrence.
pub fn query_terms(query: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    tokenize(query)
        .into_iter()
        .filter(|t| seen.insert(t.clone()))
        .collect()
}

struct View {
    hidden: HashSet<u32>,
    n: u32,
    avgdl: f64,
}

/// Reads the forward index of a document (for tools and tests).
pub fn doc_terms(
    store: &Store,
    txn: &ReadTransaction,
    profile: &str,
    doc: u32,
) -> Result<Vec<(String, FieldStats)>, StoreError> {
    let tables = ProfileTables::new(profile);
    match open_or_none(store, txn, tables.terms())? {
        Some(t) => store::read_terms(store, &t, doc),
        None => Ok(Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idf_is_lucenes_and_positive() {
        assert!((idf(10.0, 10.0) - (1.0f64 + 0.5 / 10.5).ln()).abs() < 1e-12);
        assert!(idf(1.0, 1.0) > 0.0);
        assert!(idf(100.0, 1.0) > idf(100.0, 50.0));
    }

    #[test]
    fn longer_documents_weigh_less() {
        let p = Params::default();
        assert!(term_weight(1.0, 1.0, 5.0, 10.0, p) > term_weight(1.0, 1.0, 20.0, 10.0, p));
        // b = 0 ignores length entirely.
        let flat = Params { k1: 1.5, b: 0.0 };
        assert_eq!(
            term_weight(1.0, 2.0, 5.0, 10.0, flat),
            term_weight(1.0, 2.0, 50.0, 10.0, flat)
        );
    }
}
