//! MaxScore: the documents that can reach the top k, without scoring every posting.
//!
//! Exhaustive scoring (`score`) decodes and scores every posting of every query term. A
//! search only needs the documents that can reach the top: this step walks the lists
//! document by document (Turtle and Flood's MaxScore) and keeps a threshold θ, the k-th
//! best score so far (or the relevance floor, if higher). Each term has a bound on what it
//! can add to a document, computed from its list's block directory (the largest frequency
//! and smallest length of each field, `postings::Block`), on which a score that grows with
//! frequency and falls with length is largest. Sorted by bound, the terms whose bounds sum
//! below θ are *non-essential*: a document they alone contain cannot reach θ, so only the
//! other lists are walked, and a non-essential list is looked up only for a document that
//! can still reach θ with it, and then only in the block that would hold the document (its
//! bound first, so most blocks are never decoded). The common words of the seed ranking
//! (`a`, `to`, `for`, in nearly every skill) are the lists this saves most on.
//!
//! The answer is exactly exhaustive scoring's: every document kept is scored with every
//! term, summed in plan order as `score` sums it (so the same floating-point number), and
//! every document left out scores below a k-th best score, strictly, so the top k and
//! every document tied with the k-th are among those kept. `tests/ranking_golden.rs` and
//! `tests/maxscore.rs` check this against exhaustive scoring.

use super::plan::{Plan, PlannedTerm};
use super::score::{term_score, Watch};
use super::{Ranking, SearchOptions, Snapshot, View};
use crate::postings::{Block, Cursor};
use crate::store::StoreError;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Queries with more terms than this (long turns) are scored exhaustively: walking many
/// lists document by document costs more than it saves.
pub const MAX_TERMS: usize = 16;

/// The share of a query's postings that must be in lists likely to be skipped for MaxScore
/// to run (see [`worthwhile`]); measured on the benchmark's queries (`bench-results/
/// profiles.md`).
pub const SKIPPABLE_SHARE: f64 = 2.0 / 3.0;

/// How many documents a cold accumulator must hold per posting of the query for MaxScore
/// to run in its place (see [`worthwhile`]).
pub const COLD_DOCS_PER_POSTING: u64 = 8;

/// How far below θ, as a share of θ, a bound must be for a document to be left out:
/// bounds and partial sums are added in other orders than the final sum, and this margin
/// (far above the rounding of a few additions) keeps every rounding on the safe side.
const MARGIN: f64 = 1e-9;

/// Whether `bound` is certainly below `theta`, rounding included.
#[inline]
fn below(bound: f64, theta: f64) -> bool {
    bound < theta - MARGIN * theta.abs()
}

/// Whether [`score_top`] may stand in for exhaustive scoring of `plan`: every list is read
/// in place (none decoded while counting a session's hidden documents), there are at most
/// [`MAX_TERMS`], and every score grows with frequency and falls with length: no negative
/// weight or IDF, and BM25 parameters with `k1 ≥ 0` and `0 ≤ b ≤ 1` (a user may pass others,
/// under which a block's bound would not bound it).
pub(super) fn applies(plan: &Plan, opts: &SearchOptions) -> bool {
    let p = opts.params;
    plan.terms.len() <= MAX_TERMS
        && p.k1 >= 0.0
        && (0.0..=1.0).contains(&p.b)
        && plan.terms.iter().all(|t| {
            t.list.stored().is_some() && t.weight >= 0.0 && t.idf >= 0.0 && t.body_idf >= 0.0
        })
}

/// One term's walk: its cursor, what counts in it, and its bounds.
struct Walk<'a> {
    term: &'a PlannedTerm,
    cursor: Cursor<'a>,
    fields: u32,
    /// The most the term adds to any document.
    bound: f64,
    /// The last block probed for a document ([`Walk::block_bound`]), by index, with its
    /// bound: the documents probed in a row often fall in one block.
    probed: Option<(usize, f64)>,
}

impl Walk<'_> {
    /// Moves to the first counted entry at or after document `target`.
    fn seek(&mut self, target: u32, view: &View) -> Result<(), String> {
        self.cursor.seek(target).map_err(|e| self.bad(e))?;
        self.settle(view)
    }

    /// Moves past the entry the cursor is on, to the next counted entry.
    fn advance(&mut self, view: &View) -> Result<(), String> {
        self.cursor.advance().map_err(|e| self.bad(e))?;
        self.settle(view)
    }

    /// Moves on from where the cursor is to a counted entry: a document in a counted field,
    /// not hidden.
    fn settle(&mut self, view: &View) -> Result<(), String> {
        while let Some(doc) = self.cursor.doc() {
            if self.cursor.entry().0 & self.fields != 0 && !view.is_hidden(doc) {
                break;
            }
            self.cursor.advance().map_err(|e| self.bad(e))?;
        }
        Ok(())
    }

    /// The most the term adds to document `doc`, from the bound of the block that would
    /// hold it (`None` past the list's last block), computed once per block.
    fn block_bound(&mut self, doc: u32, view: &View, opts: &SearchOptions) -> Option<f64> {
        let (at, block) = self.cursor.block_for(doc)?;
        match self.probed {
            Some((seen, b)) if seen == at => Some(b),
            _ => {
                let b = bound(self.term, block, view, opts);
                self.probed = Some((at, b));
                Some(b)
            }
        }
    }

    fn bad(&self, e: crate::postings::CodecError) -> String {
        format!("postings of {:?}: {e}", self.term.term)
    }
}

/// What the terms found so far add to the document being scored.
struct Scored {
    /// Per planned term: its score in the document, and its field mask there.
    parts: Vec<f64>,
    masks: Vec<u32>,
    /// The planned terms found in the document, as bits.
    present: u32,
    /// Their scores summed in the order found: for bounds only.
    partial: f64,
}

impl Scored {
    /// Adds planned term `i`, whose walk `w` is on the document.
    fn add(&mut self, i: usize, w: &Walk, view: &View, opts: &SearchOptions) {
        let (mask, stats) = w.cursor.entry();
        self.parts[i] = term_score(w.term, stats, mask, view, opts);
        self.masks[i] = mask;
        self.present |= 1 << i;
        self.partial += self.parts[i];
    }

    fn has(&self, i: usize) -> bool {
        self.present & 1 << i != 0
    }

    /// The document's score: the terms' scores summed in plan order, as exhaustive scoring
    /// sums them, so the same number to the last bit.
    fn sum(&self) -> f64 {
        (0..self.parts.len())
            .filter(|&i| self.has(i))
            .fold(0.0, |sum, i| sum + self.parts[i])
    }
}

/// The most term `t` adds to a document whose statistics `block` bounds.
fn bound(t: &PlannedTerm, block: &Block, view: &View, opts: &SearchOptions) -> f64 {
    term_score(t, &block.bound, block.mask, view, opts)
}

/// The scores, each as exhaustive scoring gives it, of a set of documents that holds the
/// best `keep` (and every document tied with the `keep`-th), above zero and at least
/// `floor`; in document order. The caller checks [`applies`] first.
pub(super) fn score_top<W: Watch>(
    snap: &Snapshot,
    plan: &Plan,
    view: &View,
    opts: &SearchOptions,
    floor: f64,
    mut pairs: Option<&mut W>,
    keep: usize,
) -> Result<Vec<(u32, f64)>, StoreError> {
    let bad = |e: String| snap.store.bad_record(e);
    let mut walks = Vec::with_capacity(plan.terms.len());
    for t in &plan.terms {
        let bytes = t.list.stored().unwrap_or_default();
        let cursor =
            Cursor::new(bytes).map_err(|e| bad(format!("postings of {:?}: {e}", t.term)))?;
        let mut walk = Walk {
            term: t,
            fields: t.list.fields(),
            bound: bound(t, &Block::merged(cursor.blocks()), view, opts),
            probed: None,
            cursor,
        };
        walk.settle(view).map_err(bad)?;
        walks.push(walk);
    }
    let m = walks.len();
    // Terms by bound, smallest first, and the sums of those bounds: `lower[j]` bounds what
    // the terms `order[..=j]` add together.
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| walks[a].bound.total_cmp(&walks[b].bound));
    let lower: Vec<f64> = order
        .iter()
        .scan(0.0, |sum, &i| {
            *sum += walks[i].bound;
            Some(*sum)
        })
        .collect();
    let mut best: BinaryHeap<Reverse<Score>> = BinaryHeap::with_capacity(keep + 1);
    let mut theta = floor;
    // The first essential term in `order`: those before it cannot make a document reach θ.
    let mut essential = lower.iter().take_while(|&&b| below(b, theta)).count();
    let mut out = Vec::new();
    let mut at = Scored {
        parts: vec![0.0; m],
        masks: vec![0; m],
        present: 0,
        partial: 0.0,
    };
    while essential < m {
        let Some(doc) = order[essential..]
            .iter()
            .filter_map(|&i| walks[i].cursor.doc())
            .min()
        else {
            break;
        };
        at.present = 0;
        at.partial = 0.0;
        for &i in &order[essential..] {
            let w = &mut walks[i];
            if w.cursor.doc() == Some(doc) {
                at.add(i, w, view, opts);
                w.advance(view).map_err(bad)?;
            }
        }
        // The non-essential terms, largest bound first, while the document can still
        // reach θ.
        let mut reachable = true;
        for j in (0..essential).rev() {
            let rest = if j > 0 { lower[j - 1] } else { 0.0 };
            if below(at.partial + lower[j], theta) {
                reachable = false;
                break;
            }
            let w = &mut walks[order[j]];
            match w.cursor.doc() {
                None => continue,
                Some(d) if d < doc => {
                    // Its block's bound, before decoding anything of it.
                    let Some(block) = w.block_bound(doc, view, opts) else {
                        continue;
                    };
                    if below(at.partial + block + rest, theta) {
                        reachable = false;
                        break;
                    }
                    w.seek(doc, view).map_err(bad)?;
                }
                Some(_) => {}
            }
            if w.cursor.doc() == Some(doc) {
                at.add(order[j], w, view, opts);
            }
        }
        if !reachable {
            continue;
        }
        let score = at.sum();
        if !(score > 0.0 && score >= floor) {
            continue;
        }
        out.push((doc, score));
        if let Some(p) = pairs.as_deref_mut() {
            for i in (0..m).filter(|&i| at.has(i)) {
                if let Some(seen) = p.watching(i) {
                    W::note(seen, doc, at.masks[i]);
                }
            }
        }
        best.push(Reverse(Score(score)));
        if best.len() > keep {
            best.pop();
        }
        if best.len() == keep {
            let kth = best.peek().map_or(floor, |s| s.0 .0);
            if kth > theta {
                theta = kth;
                essential += lower[essential..]
                    .iter()
                    .take_while(|&&b| below(b, theta))
                    .count();
            }
        }
    }
    Ok(out)
}

/// Whether MaxScore is likely to beat exhaustive scoring of `plan`. It walks document by
/// document, which costs more per posting than exhaustive scoring's walk of one list at a
/// time, and saves only on the lists that become non-essential. Those are, most likely, the
/// lists that cannot on their own outscore the strongest term: by IDF (what a term adds to
/// a document, before its frequency and length count), the longest run of the weakest
/// terms whose IDFs sum below the strongest's, since the top documents soon outscore it.
/// MaxScore runs when those lists hold at least [`SKIPPABLE_SHARE`] of the postings: a
/// query with common words (`a`, `to`, `for`) under the seed ranking.
///
/// It also runs for a thread's first query when exhaustive scoring would first have to
/// zero its per-document accumulator (`cold_docs`, the documents it would grow by) and that
/// vector dwarfs the postings (at least [`COLD_DOCS_PER_POSTING`] documents each): zeroing
/// and faulting in 8 bytes a document then costs more than walking the postings document
/// by document, and a command that answers one query never needs the accumulator. A new
/// process's first answer at 90k skills: 2.2 → 2.0 ms. Later queries pay for it once.
pub(super) fn worthwhile(plan: &Plan, ranking: Ranking, cold_docs: usize) -> bool {
    let postings: u64 = plan.terms.iter().map(|t| u64::from(t.list.df)).sum();
    if cold_docs as u64 >= COLD_DOCS_PER_POSTING * postings {
        return true;
    }
    let weight = |t: &PlannedTerm| match ranking {
        Ranking::Seed => t.idf,
        Ranking::Default => t.weight * t.idf.max(t.body_idf),
    };
    let mut terms: Vec<(f64, u64)> = plan
        .terms
        .iter()
        .map(|t| (weight(t), u64::from(t.list.df)))
        .collect();
    terms.sort_by(|a, b| a.0.total_cmp(&b.0));
    let Some(&(strongest, _)) = terms.last() else {
        return false;
    };
    let mut sum = 0.0;
    let skippable = terms
        .iter()
        .take_while(|(w, _)| {
            sum += w;
            sum < strongest
        })
        .count();
    let all: u64 = terms.iter().map(|t| t.1).sum();
    let cheap: u64 = terms[..skippable].iter().map(|t| t.1).sum();
    cheap as f64 >= SKIPPABLE_SHARE * all as f64
}

/// A score ordered by `total_cmp`, for the heap of the best.
#[derive(PartialEq)]
struct Score(f64);

impl Eq for Score {}

impl PartialOrd for Score {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Score {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}
