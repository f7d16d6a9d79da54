//! The semantic stage of the default ranking (feature `semantic`): hybrid re-ranking with
//! the local multilingual sentence encoder ([`crate::semantic`]).
//!
//! The lexical ranking stays the first stage. Its top [`CANDIDATES`] are re-scored by
//! `w · bm25 / max bm25 + (1 − w) · cosine(query, skill)`, and the [`DENSE`] skills nearest
//! the query (a scan of every stored vector's signs, then the exact cosine of a shortlist)
//! join them for recall, when their cosine clears a floor. `w` ([`Weights::semantic`](super::Weights)) and the floor
//! ([`Weights::dense_floor`](super::Weights)) are chosen by cross-validation
//! (`skillidx eval --semantic --folds 5`).
//!
//! Dense candidates never bypass the lexical gates: a CJK pleasantry
//! ([`super::is_cjk_chit_chat`]) or a turn of nothing but stop words gets no dense
//! candidate, and the documents the session hides, or that are never offered, are never one.
//! Vectors come from the sync (`crate::sync::embed`); a skill without one scores cosine 0.

use super::plan::Plan;
use super::query::Query;
use super::{Lexical, Ranking, SearchOptions, Snapshot};
use crate::semantic::{self, Model, DIM};
use crate::store::records::{EntryState, ManifestEntry};
use crate::store::{decode, StoreError};
use redb::{ReadableTable, ReadableTableMetadata};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;
use std::sync::{Arc, Mutex};

/// How many of the lexical ranking's best are re-scored.
pub const CANDIDATES: usize = 30;
/// How many of the skills nearest the query (by cosine) join the candidates.
pub const DENSE: usize = 5;
/// The default BM25 share `w` of the fused score.
pub const DEFAULT_SEMANTIC: f64 = 0.3;
/// The values cross-validation chooses `w` from; the first (1: BM25 only) is neutral.
pub const SEMANTIC_GRID: [f64; 6] = [1.0, 0.7, 0.5, 0.4, 0.3, 0.2];
/// The default cosine a dense candidate needs (on the injected path, where floors apply).
pub const DEFAULT_DENSE_FLOOR: f64 = 0.25;
/// The values cross-validation chooses the dense floor from; the first (2: above any
/// cosine) adds no dense candidate, the neutral point.
pub const DENSE_FLOOR_GRID: [f64; 6] = [2.0, 0.45, 0.35, 0.3, 0.25, 0.2];
/// How much of a query is embedded, in characters: a long turn costs time linear in its
/// tokens, and its first part says what is wanted.
pub const MAX_QUERY_CHARS: usize = 2_000;
/// Query embeddings kept per stage (a cache for `eval` and repeated turns).
const CACHE: usize = 4_096;

/// The model as queries use it: shared, with the embeddings of recent queries kept, and the
/// decoded vectors of the last index state queried.
#[derive(Debug, Clone)]
pub struct SemanticStage {
    model: Arc<Model>,
    cache: Arc<Mutex<FxHashMap<String, Arc<[f32; DIM]>>>>,
    matrix: Arc<Mutex<Option<Arc<Matrix>>>>,
}

/// Which index state a [`Matrix`] was read from: the file, the profile, its generation (moved
/// by every commit that changes the manifest) with the start of the sync that made it (a new
/// file that replaced a damaged one, or a profile made again, starts its generations over),
/// the vectors stamp (moved by every commit that writes vectors, even one that adds a vector
/// and drops another) and the number of rows of the vectors table (for a file whose vectors
/// an older build wrote, which kept no stamp). Vectors of another model are never read into
/// one (see `Snapshot::cosines`).
type MatrixKey = (std::path::PathBuf, String, u64, i64, u64, u64);

/// Every stored vector of an indexed document, decoded once per index state: a query then
/// scores them without reading the manifest or the vectors table again.
#[derive(Debug)]
pub(super) struct Matrix {
    key: MatrixKey,
    docs: Vec<u32>,
    rows: Vec<[i8; DIM]>,
    /// Each row's squared norm, so a query computes only dot products.
    norms: Vec<f32>,
    /// Each row's signs, for the dense scan's first pass.
    signs: Vec<semantic::Signs>,
    /// Each document's row.
    row_of: FxHashMap<u32, u32>,
}

impl SemanticStage {
    /// A stage around a loaded model.
    pub fn new(model: Arc<Model>) -> SemanticStage {
        SemanticStage {
            model,
            cache: Arc::default(),
            matrix: Arc::default(),
        }
    }

    /// The model.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The embedding of `query` (its first [`MAX_QUERY_CHARS`] characters).
    pub fn embed_query(&self, query: &str) -> Arc<[f32; DIM]> {
        let text = match query.char_indices().nth(MAX_QUERY_CHARS) {
            Some((at, _)) => &query[..at],
            None => query,
        };
        // A poisoned lock only means another query panicked; the map is still sound.
        if let Some(v) = self
            .cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(text)
        {
            return v.clone();
        }
        let v = Arc::new(self.model.embed(text));
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.len() >= CACHE {
            cache.clear();
        }
        cache.insert(text.to_owned(), v.clone());
        v
    }
}

/// How one hit's fused score was made.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SemanticContribution {
    /// Its lexical score (0 when it came from the dense scan alone, below the floor).
    pub lexical: f64,
    /// The lexical score divided by the best candidate's.
    pub lexical_normalised: f64,
    /// The cosine of the query and the skill (`None`: no vector stored).
    pub cosine: Option<f64>,
    /// The BM25 share `w`.
    pub w: f64,
    /// `(1 − w) · cosine`: what the semantic stage adds.
    pub semantic_share: f64,
    /// Whether it joined the candidates through the dense scan (not the lexical top-N).
    pub dense: bool,
    /// The fused score.
    pub score: f64,
}

/// Per document, how its fused score was made.
pub(super) type Details = FxHashMap<u32, SemanticContribution>;

/// Whether the stage runs for `opts`.
pub(super) fn active(opts: &SearchOptions) -> bool {
    opts.semantic.is_some() && opts.ingredients.semantic && opts.ranking == Ranking::Default
}

/// Whether `query` may get dense candidates: not CJK chit-chat, and some word that is not
/// a stop word (scored, or matching nothing in the vocabulary: a request in another
/// language).
fn has_content(query: &Query<'_>, plan: &Plan) -> bool {
    if query.small_talk {
        return false;
    }
    !plan.terms.is_empty()
        || plan
            .dropped
            .iter()
            .any(|t| !super::stopwords::is_stop_word(t))
}

/// Re-scores the lexical `scores` (every document above the floor) with the semantic
/// stage, when it runs: the fused scores of the candidates, and how each was made.
/// The lexical scores are taken out of `lexical`; its plan and view stay for the caller.
pub(super) fn fuse(
    snap: &Snapshot,
    query: &Query<'_>,
    lexical: &mut Lexical,
    opts: &SearchOptions,
) -> Result<(Vec<(u32, f64)>, Details), StoreError> {
    let scores = std::mem::take(&mut lexical.scores);
    let unfloored = lexical.unfloored.take();
    let (plan, view) = (&lexical.plan, &lexical.view);
    let mut details = Details::default();
    let Some(stage) = opts.semantic.as_ref().filter(|_| active(opts)) else {
        return Ok((scores, details));
    };
    let w = opts.ingredients.weights.semantic.clamp(0.0, 1.0);
    let floors = opts.floor && opts.ingredients.floor;
    let dense_floor = if floors {
        opts.ingredients.weights.dense_floor
    } else {
        f64::NEG_INFINITY
    };
    // The neutral point is exactly the lexical ranking.
    if w >= 1.0 && dense_floor > 1.0 {
        return Ok((scores, details));
    }
    // Lexical candidates come from the scores without the floor: a paraphrase's skill
    // often scores under it. One that did not clear the floor is kept only when its cosine
    // clears the dense floor, and never for chit-chat.
    let open_door = dense_floor <= 1.0 && has_content(query, plan);
    if scores.is_empty() && !open_door {
        return Ok((scores, details));
    }
    let passed: FxHashSet<u32> = scores.iter().map(|&(d, _)| d).collect();
    let mut lexical = match unfloored {
        Some(all) if open_door => all,
        _ => scores,
    };
    let q = stage.embed_query(query.text);
    let cos = snap.cosines(&q, stage, &view.hidden)?;

    lexical.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    lexical.truncate(CANDIDATES);
    let lex_of: FxHashMap<u32, f64> = lexical.iter().copied().collect();
    let mut cosine_of: FxHashMap<u32, Option<f32>> =
        lexical.iter().map(|&(d, _)| (d, cos.of(d))).collect();
    let admitted = |d: u32| {
        passed.contains(&d)
            || (open_door && cosine_of[&d].is_some_and(|c| f64::from(c) >= dense_floor))
    };
    let mut candidates: Vec<(u32, bool)> = lexical
        .iter()
        .filter(|&&(d, _)| admitted(d))
        .map(|&(d, _)| (d, false))
        .collect();
    if open_door {
        for (d, c) in dense_candidates(snap, &cos, dense_floor, &lex_of)? {
            candidates.push((d, true));
            cosine_of.insert(d, Some(c));
        }
    }
    let max = lexical.first().map_or(0.0, |&(_, s)| s);
    let mut out = Vec::with_capacity(candidates.len());
    for (d, dense) in candidates {
        let lex = lex_of.get(&d).copied().unwrap_or(0.0);
        let norm = if max > 0.0 { lex / max } else { 0.0 };
        let cosine = cosine_of[&d].map(f64::from);
        let share = (1.0 - w) * cosine.unwrap_or(0.0);
        let score = w * norm + share;
        out.push((d, score));
        details.insert(
            d,
            SemanticContribution {
                lexical: lex,
                lexical_normalised: norm,
                cosine,
                w,
                semantic_share: share,
                dense,
                score,
            },
        );
    }
    Ok((out, details))
}

/// How many rows the sign pass hands to the exact cosine for each one wanted, and at least
/// how many. A margin, not a bound: at 93k skills the top 6 then equal the exact scan's on
/// every query measured; a dense candidate further down is lost now and then (see
/// docs/semantic.md, "The sign pass").
const SHORTLIST_PER_ROW: usize = 100;
const SHORTLIST_MIN: usize = 4_000;

/// The [`DENSE`] offered skills nearest the query (cosine at least `floor`) that are not
/// lexical candidates, with their cosines, nearest first: the best few of the sign pass's
/// shortlist, enough for DENSE offered ones unless most of the nearest are never offered,
/// and then more are. Once the shortlist holds fewer than `few` over the floor, the rows
/// the sign pass puts further away are not looked at.
fn dense_candidates(
    snap: &Snapshot,
    cos: &Cosines<'_>,
    floor: f64,
    lex_of: &FxHashMap<u32, f64>,
) -> Result<Vec<(u32, f32)>, StoreError> {
    let near = cos.near();
    let skipped = |d: u32| lex_of.contains_key(&d);
    let mut few = DENSE * 8;
    loop {
        let best = cos.best(&near, floor, few, skipped);
        let exhausted = best.len() < few || few >= near.len();
        let mut added = Vec::new();
        for (d, c) in best {
            if added.len() == DENSE {
                break;
            }
            // Only offered skills: the postings hold no other, but the vectors do.
            if let Some((h, _)) = snap.doc(d)? {
                if h.inactive.is_none() {
                    added.push((d, c));
                }
            }
        }
        if added.len() == DENSE || exhausted {
            return Ok(added);
        }
        few *= 4;
    }
}

/// One query's cosines against the vectors of the index state queried ([`Matrix`]), computed
/// where they are needed: exactly (`cosine_of` over [`semantic::dot_f32_i8`], the bits every
/// build gives) for a named document and for the dense scan's shortlist, which a first pass
/// over every row's signs ([`semantic::sign_distance`]: 64 bytes a row, not 512) chooses.
pub(super) struct Cosines<'a> {
    matrix: Option<Arc<Matrix>>,
    query: &'a [f32; DIM],
    query_sq: f32,
    hidden: &'a FxHashSet<u32>,
}

/// The sign pass over every row: each row's distance to the query's signs, and how many
/// rows lie at each distance.
pub(super) struct Near {
    distance: Vec<u16>,
    at: Vec<u32>,
}

impl Near {
    fn len(&self) -> usize {
        self.distance.len()
    }
}

impl<'a> Cosines<'a> {
    /// The cosines of `query` with the rows of `matrix` (none: no vectors), leaving out the
    /// documents in `hidden`.
    fn new(
        matrix: Option<Arc<Matrix>>,
        query: &'a [f32; DIM],
        hidden: &'a FxHashSet<u32>,
    ) -> Cosines<'a> {
        Cosines {
            matrix,
            query,
            query_sq: semantic::sq_norm_f32(query),
            hidden,
        }
    }
}

impl Cosines<'_> {
    /// The exact cosine of `doc` (`None`: no vector stored, or the session hides it).
    fn of(&self, doc: u32) -> Option<f32> {
        let m = self.matrix.as_ref()?;
        if self.hidden.contains(&doc) {
            return None;
        }
        m.row_of.get(&doc).map(|&row| self.exact(m, row as usize))
    }

    fn exact(&self, m: &Matrix, row: usize) -> f32 {
        let dot = semantic::dot_f32_i8(self.query, &m.rows[row]);
        semantic::cosine_of(dot, self.query_sq, m.norms[row])
    }

    /// The sign pass: every row's distance to the query's signs.
    fn near(&self) -> Near {
        let Some(m) = self.matrix.as_ref() else {
            return Near {
                distance: Vec::new(),
                at: Vec::new(),
            };
        };
        let q = semantic::signs_f32(self.query);
        let mut at = vec![0u32; DIM + 1];
        let distance = m
            .signs
            .iter()
            .map(|r| {
                let d = semantic::sign_distance(&q, r) as usize;
                at[d] += 1;
                d as u16
            })
            .collect();
        Near { distance, at }
    }

    /// The `few` rows of the [`shortlist`](Self::shortlist) with the highest exact cosine at
    /// least `floor`, best first (ties by document id), as documents with their exact
    /// cosines; the shortlist holds at least [`SHORTLIST_PER_ROW`] rows for each of the few.
    fn best(
        &self,
        near: &Near,
        floor: f64,
        few: usize,
        skipped: impl Fn(u32) -> bool,
    ) -> Vec<(u32, f32)> {
        let Some(m) = self.matrix.as_ref() else {
            return Vec::new();
        };
        let want = few.saturating_mul(SHORTLIST_PER_ROW).max(SHORTLIST_MIN);
        let rows = self.shortlist(m, near, want, skipped);
        let mut exact: Vec<(u32, f32)> = rows
            .into_iter()
            .map(|row| (m.docs[row], self.exact(m, row)))
            .filter(|&(_, c)| f64::from(c) >= floor)
            .collect();
        exact.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        exact.truncate(few);
        exact
    }

    /// At least `want` rows of documents neither hidden nor `skipped` (every one, when
    /// fewer are), nearest by sign distance, with every such row at the last distance
    /// taken, so the shortlist never depends on the rows' order.
    fn shortlist(
        &self,
        m: &Matrix,
        near: &Near,
        want: usize,
        skipped: impl Fn(u32) -> bool,
    ) -> Vec<usize> {
        let eligible = |row: usize| {
            let doc = m.docs[row];
            !skipped(doc) && !self.hidden.contains(&doc)
        };
        // The counts take in rows the session hides or that are already candidates: few,
        // as a rule, so one pass usually fills the shortlist. When it does not, the rows
        // still eligible are counted per distance in a second pass, and a third takes what is
        // missing.
        let to = last_distance(&near.at, 0, want);
        let mut rows: Vec<usize> = rows_between(near, 0, to, eligible);
        if rows.len() < want && to < DIM {
            let mut at = vec![0u32; DIM + 1];
            for (row, &d) in near.distance.iter().enumerate() {
                if usize::from(d) > to && eligible(row) {
                    at[usize::from(d)] += 1;
                }
            }
            let last = last_distance(&at, to + 1, want - rows.len());
            rows.extend(rows_between(near, to + 1, last, eligible));
        }
        rows
    }
}

/// The smallest distance `to` from `from` on such that the rows at distances `from..=to`
/// number at least `want` (`at`: rows per distance), or the largest distance.
fn last_distance(at: &[u32], from: usize, want: usize) -> usize {
    let mut count = 0usize;
    for (d, &n) in at.iter().enumerate().skip(from) {
        count += n as usize;
        if count >= want {
            return d;
        }
    }
    at.len().saturating_sub(1)
}

/// The `eligible` rows at distances `from..=to`, in row order.
fn rows_between(
    near: &Near,
    from: usize,
    to: usize,
    eligible: impl Fn(usize) -> bool,
) -> Vec<usize> {
    near.distance
        .iter()
        .enumerate()
        .filter(|&(row, &d)| (from..=to).contains(&usize::from(d)) && eligible(row))
        .map(|(row, _)| row)
        .collect()
}

impl Snapshot<'_> {
    /// The cosines of `query` with the stored vectors of the indexed documents the session
    /// does not hide; none when the vectors were made by another model than the stage's (the
    /// next sync with it makes them again).
    fn cosines<'a>(
        &self,
        query: &'a [f32; DIM],
        stage: &SemanticStage,
        hidden: &'a FxHashSet<u32>,
    ) -> Result<Cosines<'a>, StoreError> {
        Ok(Cosines::new(self.matrix(stage)?, query, hidden))
    }

    /// The decoded vectors of this index state: the stage's, when it holds this state's,
    /// else read and kept there.
    fn matrix(&self, stage: &SemanticStage) -> Result<Option<Arc<Matrix>>, StoreError> {
        let (Some(manifest), Some(vectors)) = (&self.manifest, &self.vectors) else {
            return Ok(None);
        };
        let made_by = vectors
            .get(crate::sync::embed::MODEL_KEY)
            .map_err(|e| self.store.err(e))?;
        if made_by.is_none_or(|v| v.value() != stage.model().fingerprint().as_bytes()) {
            return Ok(None);
        }
        let key: MatrixKey = (
            self.store.path().to_owned(),
            self.profile.clone(),
            self.stats.generation,
            self.stats.synced_at_ns,
            crate::sync::embed::stamp(vectors).map_err(|e| self.store.err(e))?,
            vectors.len().map_err(|e| self.store.err(e))?,
        );
        let cached = stage
            .matrix
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
            .filter(|m| m.key == key);
        Ok(Some(match cached {
            Some(m) => m,
            None => {
                let m = Arc::new(self.read_matrix(manifest, vectors, key)?);
                *stage.matrix.lock().unwrap_or_else(|p| p.into_inner()) = Some(m.clone());
                m
            }
        }))
    }

    /// Decodes every stored vector of an indexed document: a merge join of the manifest
    /// (hash → documents) and the vectors table, both in hash order.
    fn read_matrix(
        &self,
        manifest: &redb::ReadOnlyTable<&'static str, &'static [u8]>,
        vectors: &redb::ReadOnlyTable<&'static [u8], &'static [u8]>,
        key: MatrixKey,
    ) -> Result<Matrix, StoreError> {
        let mut docs: Vec<([u8; 32], u32)> = Vec::new();
        for row in manifest.iter().map_err(|e| self.store.err(e))? {
            let (_, v) = row.map_err(|e| self.store.err(e))?;
            let e: ManifestEntry = decode(self.store, v.value(), "manifest entry")?;
            if let EntryState::Indexed(d) = e.state {
                docs.push((e.hash, d));
            }
        }
        docs.sort_unstable();
        let mut matrix = Matrix {
            key,
            docs: Vec::new(),
            rows: Vec::new(),
            norms: Vec::new(),
            signs: Vec::new(),
            row_of: FxHashMap::default(),
        };
        let mut at = 0;
        for row in vectors.iter().map_err(|e| self.store.err(e))? {
            if at == docs.len() {
                break;
            }
            let (k, v) = row.map_err(|e| self.store.err(e))?;
            let Ok(hash) = <[u8; 32]>::try_from(k.value()) else {
                continue;
            };
            while at < docs.len() && docs[at].0 < hash {
                at += 1;
            }
            let Some(stored) = crate::sync::embed::vector_of(v.value()) else {
                continue;
            };
            while at < docs.len() && docs[at].0 == hash {
                let row = u32::try_from(matrix.docs.len()).unwrap_or(u32::MAX);
                matrix.row_of.insert(docs[at].1, row);
                matrix.docs.push(docs[at].1);
                matrix.rows.push(stored);
                matrix.norms.push(semantic::sq_norm_i8(&stored));
                matrix.signs.push(semantic::signs_i8(&stored));
                at += 1;
            }
        }
        Ok(matrix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// splitmix64: a deterministic stream for generated vectors.
    struct Stream(u64);
    impl Stream {
        fn next(&mut self) -> f32 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
        }
        fn vector(&mut self) -> [f32; DIM] {
            std::array::from_fn(|_| self.next())
        }
    }

    /// `n` rows around `centres` random centres (near-copies, as hub skills are), `spread`
    /// the noise around each.
    fn matrix(s: &mut Stream, n: usize, centres: usize, spread: f32) -> Matrix {
        let centres: Vec<[f32; DIM]> = (0..centres).map(|_| s.vector()).collect();
        let mut m = Matrix {
            key: (Default::default(), String::new(), 0, 0, 0, 0),
            docs: Vec::new(),
            rows: Vec::new(),
            norms: Vec::new(),
            signs: Vec::new(),
            row_of: FxHashMap::default(),
        };
        for i in 0..n {
            let c = &centres[i % centres.len()];
            let noise = s.vector();
            let v: [f32; DIM] = std::array::from_fn(|j| c[j] + spread * noise[j]);
            let row = semantic::quantize(&v);
            let doc = (i * 7 + 3) as u32;
            m.row_of.insert(doc, m.docs.len() as u32);
            m.docs.push(doc);
            m.norms.push(semantic::sq_norm_i8(&row));
            m.signs.push(semantic::signs_i8(&row));
            m.rows.push(row);
        }
        m
    }

    /// Every row not hidden or skipped with its exact cosine at least `floor`, best first.
    fn exact_best(
        cos: &Cosines<'_>,
        m: &Matrix,
        floor: f64,
        few: usize,
        skipped: impl Fn(u32) -> bool,
    ) -> Vec<(u32, f32)> {
        let mut all: Vec<(u32, f32)> = m
            .docs
            .iter()
            .filter(|&&d| !skipped(d))
            .filter_map(|&d| cos.of(d).map(|c| (d, c)))
            .filter(|&(_, c)| f64::from(c) >= floor)
            .collect();
        all.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        all.truncate(few);
        all
    }

    #[test]
    fn a_shortlist_of_every_row_is_the_exact_answer() {
        let mut s = Stream(42);
        let m = Arc::new(matrix(&mut s, SHORTLIST_MIN - 100, 12, 0.05));
        let hidden: FxHashSet<u32> = m.docs.iter().copied().step_by(11).collect();
        let centre_like = {
            let r = &m.rows[5];
            std::array::from_fn(|j| f32::from(r[j]) / 127.0 + 0.01 * s.next())
        };
        for query in &[s.vector(), centre_like, [0.0; DIM]] {
            let cos = Cosines::new(Some(m.clone()), query, &hidden);
            let near = cos.near();
            let skipped = |d: u32| d.is_multiple_of(5);
            for floor in [f64::NEG_INFINITY, 0.0, 0.25, 0.5, 0.9] {
                for few in [1, 5, 40] {
                    assert_eq!(
                        cos.best(&near, floor, few, skipped),
                        exact_best(&cos, &m, floor, few, skipped),
                        "floor {floor}, few {few}"
                    );
                }
            }
        }
    }

    /// Among 20,000 rows (near-copies in groups of ten), a query near some of them gets the
    /// same nearest rows from the shortlist as from every row's exact cosine.
    #[test]
    fn the_sign_pass_keeps_the_nearest_rows() {
        let mut s = Stream(7);
        let m = Arc::new(matrix(&mut s, 20_000, 2_000, 0.4));
        let hidden = FxHashSet::default();
        for i in 0..20 {
            let r = &m.rows[i * 997];
            let query: [f32; DIM] =
                std::array::from_fn(|j| f32::from(r[j]) / 127.0 + 0.5 * s.next());
            let cos = Cosines::new(Some(m.clone()), &query, &hidden);
            let near = cos.near();
            assert_eq!(
                cos.best(&near, DEFAULT_DENSE_FLOOR, DENSE * 8, |_| false),
                exact_best(&cos, &m, DEFAULT_DENSE_FLOOR, DENSE * 8, |_| false),
                "query {i}"
            );
        }
    }

    /// With most rows hidden, the shortlist still holds `want` rows the session can see,
    /// the nearest by sign distance, and none it hides.
    #[test]
    fn the_shortlist_fills_up_with_rows_the_session_sees() {
        let mut s = Stream(11);
        let m = Arc::new(matrix(&mut s, 20_000, 2_000, 0.4));
        let hidden: FxHashSet<u32> = m.docs.iter().copied().filter(|d| d % 19 != 0).collect();
        let query = s.vector();
        let cos = Cosines::new(Some(m.clone()), &query, &hidden);
        let near = cos.near();
        let skipped = |d: u32| d.is_multiple_of(3);
        let visible = |row: usize| !hidden.contains(&m.docs[row]) && !skipped(m.docs[row]);
        for want in [1, 100, 500] {
            let rows = cos.shortlist(&m, &near, want, skipped);
            assert!(rows.len() >= want, "{} rows for {want}", rows.len());
            assert!(rows.iter().all(|&r| visible(r)));
            let last = rows.iter().map(|&r| near.distance[r]).max().unwrap_or(0);
            let nearer_left_out = (0..m.docs.len())
                .filter(|r| visible(*r) && !rows.contains(r))
                .any(|r| near.distance[r] <= last);
            assert!(!nearer_left_out, "want {want}");
        }
        let every = (0..m.docs.len()).filter(|&r| visible(r)).count();
        assert_eq!(cos.shortlist(&m, &near, every + 1, skipped).len(), every);
    }

    #[test]
    fn a_named_document_gets_its_exact_cosine_unless_hidden() {
        let mut s = Stream(7);
        let m = Arc::new(matrix(&mut s, 50, 12, 0.05));
        let query = s.vector();
        let hidden: FxHashSet<u32> = [m.docs[3]].into_iter().collect();
        let cos = Cosines::new(Some(m.clone()), &query, &hidden);
        assert_eq!(
            cos.of(m.docs[4]),
            Some(semantic::cosine_f32_i8(&query, &m.rows[4]))
        );
        assert_eq!(cos.of(m.docs[3]), None, "hidden");
        assert_eq!(cos.of(1), None, "no vector");
    }
}
