//! Scoring: every planned term's postings list adds the term's score to each document in it.
//!
//! The default ranking scores a term in a document by BM25F: the field frequencies are
//! weighted and length-normalised per field, then saturated once, with the metadata fields
//! and the body saturated apart. The seed ranking scores it by Okapi BM25 over the seed
//! document. Each list is walked once and nothing is sorted here; ranking the sums is the
//! next step's work.

use super::plan::{Plan, PlannedTerm};
use super::{Params, Ranking, SearchOptions, Snapshot, View};
use crate::fields::{Field, FieldStats, FIELD_COUNT};
use crate::store::StoreError;
use std::cell::{Cell, RefCell};

/// The default ranking's per-field length normalisation.
pub const FIELD_B: [f64; FIELD_COUNT] = [0.3, 0.75, 0.6, 0.3, 0.75, 0.75];

/// One term's BM25 weight in one document.
pub fn term_weight(idf: f64, tf: f64, dl: f64, avgdl: f64, p: Params) -> f64 {
    idf * (tf * (p.k1 + 1.0)) / (tf + p.k1 * (1.0 - p.b + p.b * dl / avgdl))
}

/// What a scoring walk notes of some terms' postings on the way (proximity's pair terms),
/// so that no list is decoded twice. Implemented by a later step; scoring only calls it.
pub(super) trait Watch {
    /// Where the walk of planned term `i` notes its postings, if it is watched.
    fn watching(&mut self, i: usize) -> Option<&mut Vec<(u32, u32)>>;
    /// Notes a posting of a watched term, with `mask` its fields.
    fn note(seen: &mut Vec<(u32, u32)>, doc: u32, mask: u32);
}

/// Every document's summed score, in the order first touched, keeping only those above
/// zero and at least `floor`.
pub(super) fn score_all<W: Watch>(
    snap: &Snapshot,
    plan: &Plan,
    view: &View,
    opts: &SearchOptions,
    floor: f64,
    mut pairs: Option<&mut W>,
) -> Result<Vec<(u32, f64)>, StoreError> {
    // Every counted posting may touch a new document: room for them all up front, so the
    // list of touched documents never grows by copying.
    let postings: usize = plan.terms.iter().map(|t| t.list.df as usize).sum();
    let mut acc = Accumulator::take(snap.stats.next_doc as usize, postings);
    for (i, t) in plan.terms.iter().enumerate() {
        let walked = match pairs.as_deref_mut().and_then(|p| p.watching(i)) {
            // A term of a proximity pair: where it occurs is noted on the way, so that
            // proximity need not decode its list again.
            Some(seen) => t.list.visit(view, |doc, mask, stats| {
                acc.add(doc, term_score(t, stats, mask, view, opts));
                W::note(seen, doc, mask);
            }),
            None => t.list.visit(view, |doc, mask, stats| {
                acc.add(doc, term_score(t, stats, mask, view, opts));
            }),
        };
        walked.map_err(|e| snap.store.bad_record(e))?;
    }
    Ok(acc.finish(floor))
}

/// The score of term `t` in a document whose statistics for it are `stats`, with `mask`
/// the fields that contain it.
pub(super) fn term_score(
    t: &PlannedTerm,
    stats: &FieldStats,
    mask: u32,
    view: &View,
    opts: &SearchOptions,
) -> f64 {
    let p = opts.params;
    match opts.ranking {
        Ranking::Seed => {
            let (tf, dl) = stats[Field::Seed as usize];
            term_weight(
                t.idf,
                f64::from(tf),
                f64::from(dl),
                view.avg[Field::Seed as usize],
                p,
            )
        }
        Ranking::Default => {
            // Metadata fields and the body saturate separately, each with its own IDF: a
            // word common in bodies (`name`, `run`) but rare in descriptions counts fully
            // where it says what a skill is for, and only as much as it is rare in bodies
            // where it merely occurs in an example.
            let parts = bm25f_tf(stats, mask, view, &t.list.weights);
            let sat = |x: f64| x * (p.k1 + 1.0) / (x + p.k1);
            if !opts.ingredients.body_apart {
                return t.weight * t.idf * sat(parts.iter().sum());
            }
            let body = parts[Field::Body as usize];
            let meta: f64 = parts.iter().sum::<f64>() - body;
            t.weight * (t.idf * sat(meta) + t.body_idf * sat(body))
        }
    }
}

/// The default ranking's pseudo term frequency: each field's frequency, weighted and
/// normalised by that field's length against its average (BM25F).
#[inline]
pub(super) fn bm25f_tf(
    stats: &FieldStats,
    mask: u32,
    view: &View,
    w: &[f64; FIELD_COUNT],
) -> [f64; FIELD_COUNT] {
    let mut parts = [0.0; FIELD_COUNT];
    let mut bits = mask;
    while bits != 0 {
        let i = bits.trailing_zeros() as usize;
        bits &= bits - 1;
        let (tf, len) = stats[i];
        if tf == 0 || w[i] == 0.0 {
            continue;
        }
        let avg = if view.avg[i] > 0.0 { view.avg[i] } else { 1.0 };
        let norm = 1.0 - FIELD_B[i] + FIELD_B[i] * f64::from(len) / avg;
        parts[i] = w[i] * f64::from(tf) / norm;
    }
    parts
}

thread_local! {
    static SUMS: RefCell<Vec<f64>> = const { RefCell::new(Vec::new()) };
}

thread_local! {
    static ASKED: Cell<bool> = const { Cell::new(false) };
}

/// For this thread's first query: how many documents its accumulator would have to grow by
/// to hold `docs`, which [`score_all`] would zero (and fault in) before scoring anything.
/// 0 for every later query: a process that answers more than one query pays for the
/// accumulator once, where a process that answers one (a command, a cron job) need not.
pub(super) fn first_query_cold_docs(docs: usize) -> usize {
    if ASKED.with(|asked| asked.replace(true)) {
        return 0;
    }
    SUMS.with(|a| docs.saturating_sub(a.borrow().len()))
}

/// Scores summed per document in a dense vector indexed by document, kept per thread and
/// reset entry by entry, so a query pays only for the documents it touches.
struct Accumulator {
    sums: Vec<f64>,
    touched: Vec<u32>,
}

impl Accumulator {
    /// This thread's vector, long enough for `docs` documents, for `postings` postings.
    fn take(docs: usize, postings: usize) -> Self {
        let mut sums = SUMS.with(|a| std::mem::take(&mut *a.borrow_mut()));
        if sums.len() < docs {
            sums.resize(docs, 0.0);
        }
        Accumulator {
            sums,
            touched: Vec::with_capacity(postings.min(docs)),
        }
    }

    // Part of the postings walk, inlined with it (see `TermList::visit`).
    #[inline(always)]
    fn add(&mut self, doc: u32, score: f64) {
        let i = doc as usize;
        // Statistics that undercount the documents (a damaged file) must not make this panic.
        if i >= self.sums.len() {
            self.sums.resize(i + 1, 0.0);
        }
        if self.sums[i] == 0.0 {
            self.touched.push(doc);
        }
        self.sums[i] += score;
    }

    /// The sums of the touched documents at least `floor` (and above zero), leaving the
    /// vector zeroed for this thread's next query.
    fn finish(self, floor: f64) -> Vec<(u32, f64)> {
        let Accumulator { mut sums, touched } = self;
        let mut scores = Vec::with_capacity(touched.len());
        scores.extend(
            touched
                .into_iter()
                .map(|d| (d, std::mem::take(&mut sums[d as usize])))
                .filter(|&(_, s)| s > 0.0 && s >= floor),
        );
        SUMS.with(|a| *a.borrow_mut() = sums);
        scores
    }
}

/// Best score first, then ascending document number: a total order on scored documents.
pub(super) fn by_score(a: &(u32, f64), b: &(u32, f64)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_threads_first_query_counts_a_cold_accumulator() {
        std::thread::spawn(|| {
            assert_eq!(first_query_cold_docs(90_000), 90_000);
            assert_eq!(first_query_cold_docs(90_000), 0);
            // Later queries pay for the accumulator, however large it must grow.
            Accumulator::take(10, 1).finish(0.0);
            assert_eq!(first_query_cold_docs(90_000), 0);
        })
        .join()
        .unwrap();
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
