//! The semantic stage of the default ranking (feature `semantic`): hybrid re-ranking with
//! the local multilingual sentence encoder ([`crate::semantic`]).
//!
//! The lexical ranking stays the first stage. Its top [`CANDIDATES`] are re-scored by
//! `w · bm25 / max bm25 + (1 − w) · cosine(query, skill)`, and the [`DENSE`] skills nearest
//! the query (a scan of every stored int8 vector) join them for recall, when their cosine
//! clears a floor. `w` ([`Weights::semantic`](super::Weights)) and the floor
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
    let cosines = snap.cosines(&q, stage, &view.hidden)?;
    let admitted = |d: u32| {
        passed.contains(&d)
            || (open_door
                && cosines
                    .get(&d)
                    .is_some_and(|&c| f64::from(c) >= dense_floor))
    };

    lexical.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    lexical.truncate(CANDIDATES);
    let lex_of: FxHashMap<u32, f64> = lexical.iter().copied().collect();
    let mut candidates: Vec<(u32, bool)> = lexical
        .iter()
        .filter(|&&(d, _)| admitted(d))
        .map(|&(d, _)| (d, false))
        .collect();
    if open_door {
        let near: Vec<(u32, f32)> = cosines
            .iter()
            .filter(|(d, c)| !lex_of.contains_key(*d) && f64::from(**c) >= dense_floor)
            .map(|(&d, &c)| (d, c))
            .collect();
        let nearest = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        // The best few, selected rather than sorting every skill over the dense floor (at
        // hub scale, tens of thousands): enough for DENSE offered ones unless most of the
        // nearest are never offered, and then the whole list is sorted after all.
        let mut few = (DENSE * 8).min(near.len());
        loop {
            let mut head: Vec<(u32, f32)> = if few < near.len() {
                let mut v = near.clone();
                v.select_nth_unstable_by(few, nearest);
                v.truncate(few);
                v
            } else {
                near.clone()
            };
            head.sort_unstable_by(nearest);
            let mut added = Vec::new();
            for (d, _) in head {
                if added.len() == DENSE {
                    break;
                }
                // Only offered skills: the postings hold no other, but the vectors do.
                if let Some((h, _)) = snap.doc(d)? {
                    if h.inactive.is_none() {
                        added.push((d, true));
                    }
                }
            }
            if added.len() == DENSE || few >= near.len() {
                candidates.extend(added);
                break;
            }
            few = (few * 4).min(near.len());
        }
    }
    let max = lexical.first().map_or(0.0, |&(_, s)| s);
    let mut out = Vec::with_capacity(candidates.len());
    for (d, dense) in candidates {
        let lex = lex_of.get(&d).copied().unwrap_or(0.0);
        let norm = if max > 0.0 { lex / max } else { 0.0 };
        let cosine = cosines.get(&d).map(|&c| f64::from(c));
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

impl Snapshot<'_> {
    /// The cosine of `query` and every stored vector of an indexed document that the
    /// session does not hide; none when the vectors were made by another model than the
    /// stage's (the next sync with it makes them again).
    fn cosines(
        &self,
        query: &[f32; DIM],
        stage: &SemanticStage,
        hidden: &FxHashSet<u32>,
    ) -> Result<FxHashMap<u32, f32>, StoreError> {
        let mut out = FxHashMap::default();
        let (Some(manifest), Some(vectors)) = (&self.manifest, &self.vectors) else {
            return Ok(out);
        };
        let made_by = vectors
            .get(crate::sync::embed::MODEL_KEY)
            .map_err(|e| self.store.err(e))?;
        if made_by.is_none_or(|v| v.value() != stage.model().fingerprint().as_bytes()) {
            return Ok(out);
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
        let matrix = match cached {
            Some(m) => m,
            None => {
                let m = Arc::new(self.read_matrix(manifest, vectors, key)?);
                *stage.matrix.lock().unwrap_or_else(|p| p.into_inner()) = Some(m.clone());
                m
            }
        };
        out.reserve(matrix.docs.len());
        let query_sq = semantic::sq_norm_f32(query);
        for ((&d, row), &row_sq) in matrix.docs.iter().zip(&matrix.rows).zip(&matrix.norms) {
            if !hidden.contains(&d) {
                let dot = semantic::dot_f32_i8(query, row);
                out.insert(d, semantic::cosine_of(dot, query_sq, row_sq));
            }
        }
        Ok(out)
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
                matrix.docs.push(docs[at].1);
                matrix.rows.push(stored);
                matrix.norms.push(semantic::sq_norm_i8(&stored));
                at += 1;
            }
        }
        Ok(matrix)
    }
}
