//! Search: BM25 answered from a read transaction on the store.
//!
//! Two rankings ([`Ranking`]). The **default** is BM25F over the analysed fields (name,
//! description, keywords, category, body), each with its own weight and length
//! normalisation, with stop words and pleasantries dropped from the query, long turns cut to
//! their most informative terms, and unknown query words matched to a vocabulary term one or
//! two edits away. The **seed** ranking reproduces the seed plugin.
//!
//! The seed ranking is Okapi BM25 over the seed document ([`Field::Seed`]) with Lucene's
//! always-positive IDF, `ln(1 + (N − df + 0.5) / (df + 0.5))`. A query term counts once
//! however often it is repeated, as in the seed plugin. Skills hidden in the query's
//! [`Session`] (tool conditions, environments, `platform_disabled`, and the clashes those
//! decide; see [`crate::offer`]) are left out of N, df and the average length as well as
//! the results, so the answer equals that of an index built without them.
//!
//! A query passes through one module per step, each reading only what came before it:
//!
//! 1. `query`: the text analysed once (its terms in order, the seed ranking's terms, the
//!    CJK pleasantry cut of `chitchat`, and `intent`'s verdict on whether the turn asks for
//!    anything a skill could do: where the floor applies, a turn that does not gets no hit).
//! 2. [`Snapshot`] (here): the profile's statistics, less the skills hidden in the session.
//! 3. `plan`: the query's terms → the terms to score, each with its postings list, IDF and
//!    weight (`stopwords` dropped, typo matching, the long-turn cut).
//! 4. `score`: each term's BM25F (or seed BM25) score added up per document; or, when only
//!    the top k is wanted and pruning is likely to pay, `maxscore`: the same sums for the
//!    documents that can reach the top k, skipping the rest on the lists' block bounds.
//!    `proximity` notes where its pair terms occur on the way (`score::Watch`) and then
//!    adds its bonus.
//! 5. `rank`: the relevance floor and the CJK coverage rule, then the top k, ties broken by
//!    id, and their records. With the semantic model, `semantic` re-ranks the candidates
//!    first.
//!
//! `explain` replays the steps for one skill and says where its score comes from.
//!
//! [`Field::Seed`]: crate::fields::Field::Seed

mod chitchat;
mod counts;
mod english;
mod explain;
mod intent;
mod intent_words;
mod maxscore;
mod named;
mod plan;
mod proximity;
mod query;
mod rank;
mod score;
#[cfg(feature = "semantic")]
pub mod semantic;
mod stopwords;

pub use chitchat::{is_cjk_chit_chat, strip_pleasantries, PLEASANTRIES};

pub use explain::{Explanation, FieldContribution, TermContribution};
pub use intent::{verdict, Verdict};
pub use plan::{edit_distance, MAX_QUERY_TERMS, TYPO_MAX_QUERY_TERMS, TYPO_WEIGHT};
pub use plan::{idf, CJK_FIELD_WEIGHTS, FIELD_WEIGHTS};
pub use query::query_terms;
pub use rank::{CJK_COVERAGE_GRID, DEFAULT_CJK_COVERAGE, FLOOR_CJK, FLOOR_CJK_GRID, FLOOR_LATIN};
pub use score::{term_weight, FIELD_B};

use crate::offer::{OfferRules, Session};
use crate::store::records::{CorpusStats, DocBody, DocHead, HitFields, SEED_GENERATION};
use crate::store::{decode, open_or_none, ProfileTables, Store, StoreError};
use plan::Plan;
use redb::{ReadOnlyTable, ReadTransaction, ReadableTable};
use rustc_hash::FxHashSet;
use serde::Serialize;
use std::cell::OnceCell;
use std::sync::Arc;

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

/// Which ranking answers a query.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ranking {
    /// BM25F over the analysed fields, with query cleanup and typo tolerance.
    #[default]
    Default,
    /// The seed plugin's Okapi BM25 over its single document, for users who want the
    /// plugin they came from exactly.
    Seed,
}

/// How the scores behind a search's top k are found. Every choice gives the same answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Scoring {
    /// MaxScore where it applies and is likely faster (`search::maxscore`), else
    /// exhaustive.
    #[default]
    Auto,
    /// Every posting of every query term scored.
    Exhaustive,
    /// MaxScore wherever it applies, likely faster or not: for tests and measurements.
    Pruned,
}

impl std::str::FromStr for Scoring {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Scoring::Auto),
            "exhaustive" => Ok(Scoring::Exhaustive),
            "pruned" => Ok(Scoring::Pruned),
            _ => Err(format!(
                "unknown scoring {s:?} (auto, exhaustive or pruned)"
            )),
        }
    }
}

impl std::str::FromStr for Ranking {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "default" => Ok(Ranking::Default),
            "seed" => Ok(Ranking::Seed),
            other => Err(format!("unknown ranking {other:?} (default, seed)")),
        }
    }
}

/// The ingredients of the default ranking, each of which can be switched off to measure
/// what it adds (`skillidx eval --without …`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Ingredients {
    /// Drop stop words and pleasantries from the query.
    pub stop_words: bool,
    /// Match unknown query words to a vocabulary term an edit or two away.
    pub typos: bool,
    /// Return nothing below the relevance floor.
    pub floor: bool,
    /// Score the body at all.
    pub body: bool,
    /// Score the body apart from the metadata fields, with its own IDF.
    pub body_apart: bool,
    /// Score CJK terms on the seed document instead of the analysed fields.
    pub cjk_on_seed: bool,
    /// Cut CJK pleasantry phrases (`谢谢`, `お疲れ様でした`, `안녕하세요`) out of the query.
    pub cjk_pleasantries: bool,
    /// A hit found by CJK terms alone must match several separate CJK words of the query.
    pub cjk_coverage: bool,
    /// Reward query term pairs found in the same order, close together, in a hit's name or
    /// description.
    pub proximity: bool,
    /// Inject nothing for a message that asks for nothing (small talk, general knowledge;
    /// see `intent`), where the floor applies.
    pub needs_skill: bool,
    /// Re-rank with the semantic model, when the search has one
    /// ([`SearchOptions::semantic`]).
    #[cfg(feature = "semantic")]
    pub semantic: bool,
    /// The tunable weights of the ingredients above.
    pub weights: Weights,
}

/// The ingredients' tunable weights, chosen by cross-validation (`skillidx eval --folds`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Weights {
    /// The ordered-proximity bonus, as a share of the best score.
    pub proximity: f64,
    /// How many separate CJK units of the query a hit found by CJK terms alone must match.
    pub cjk_coverage: f64,
    /// The relevance floor for CJK terms, in units of `ln(1 + N)` ([`FLOOR_CJK`]).
    pub floor_cjk: f64,
    /// The semantic stage's BM25 share `w` (1: BM25 alone).
    #[cfg(feature = "semantic")]
    pub semantic: f64,
    /// The cosine a dense candidate needs where floors apply (above 1: no dense candidate).
    #[cfg(feature = "semantic")]
    pub dense_floor: f64,
}

impl Default for Weights {
    fn default() -> Self {
        Weights {
            proximity: proximity::DEFAULT_PROXIMITY,
            cjk_coverage: rank::DEFAULT_CJK_COVERAGE,
            floor_cjk: rank::FLOOR_CJK,
            #[cfg(feature = "semantic")]
            semantic: semantic::DEFAULT_SEMANTIC,
            #[cfg(feature = "semantic")]
            dense_floor: semantic::DEFAULT_DENSE_FLOOR,
        }
    }
}

impl Weights {
    /// The tunable weights: name, the grid cross-validation chooses from, and where it goes.
    pub fn grid() -> Vec<(&'static str, Vec<f64>)> {
        vec![
            ("proximity", proximity::PROXIMITY_GRID.to_vec()),
            ("cjk-coverage", rank::CJK_COVERAGE_GRID.to_vec()),
            ("floor-cjk", rank::FLOOR_CJK_GRID.to_vec()),
        ]
    }

    /// The semantic stage's weights and the grids cross-validation chooses them from
    /// (their first points together are the lexical ranking).
    #[cfg(feature = "semantic")]
    pub fn semantic_grid() -> Vec<(&'static str, Vec<f64>)> {
        vec![
            ("semantic", semantic::SEMANTIC_GRID.to_vec()),
            ("dense-floor", semantic::DENSE_FLOOR_GRID.to_vec()),
        ]
    }

    /// Sets the weight named `name` (as in [`Weights::grid`]).
    pub fn set(&mut self, name: &str, value: f64) -> Result<(), String> {
        match name {
            #[cfg(feature = "semantic")]
            "semantic" => self.semantic = value,
            #[cfg(feature = "semantic")]
            "dense-floor" => self.dense_floor = value,
            "proximity" => self.proximity = value,
            "cjk-coverage" => self.cjk_coverage = value,
            "floor-cjk" => self.floor_cjk = value,
            other => return Err(format!("unknown weight {other:?}")),
        }
        Ok(())
    }
}

impl Default for Ingredients {
    fn default() -> Self {
        Ingredients {
            stop_words: true,
            typos: true,
            floor: true,
            body: true,
            body_apart: true,
            cjk_on_seed: true,
            cjk_pleasantries: true,
            cjk_coverage: true,
            proximity: true,
            needs_skill: true,
            #[cfg(feature = "semantic")]
            semantic: true,
            weights: Weights::default(),
        }
    }
}

impl Ingredients {
    /// Switches off the ingredient named `name` (as in [`Ingredients::NAMES`]).
    pub fn without(mut self, name: &str) -> Result<Self, String> {
        match name {
            "stop-words" => self.stop_words = false,
            "typos" => self.typos = false,
            "floor" => self.floor = false,
            "body" => self.body = false,
            "body-apart" => self.body_apart = false,
            "cjk-on-seed" => self.cjk_on_seed = false,
            "cjk-pleasantries" => self.cjk_pleasantries = false,
            "cjk-coverage" => self.cjk_coverage = false,
            "proximity" => self.proximity = false,
            "needs-skill" => self.needs_skill = false,
            #[cfg(feature = "semantic")]
            "semantic" => self.semantic = false,
            other => {
                return Err(format!(
                    "unknown ingredient {other:?} (one of {})",
                    Self::NAMES.join(", ")
                ))
            }
        }
        Ok(self)
    }

    /// The ingredients' names.
    pub const NAMES: [&'static str; 10] = [
        "stop-words",
        "typos",
        "floor",
        "body",
        "body-apart",
        "cjk-on-seed",
        "cjk-pleasantries",
        "cjk-coverage",
        "proximity",
        "needs-skill",
    ];

    /// Whether the ingredient a tunable weight belongs to (same name) is on.
    pub fn is_on(&self, name: &str) -> bool {
        match name {
            "proximity" => self.proximity,
            "cjk-coverage" => self.cjk_coverage && self.floor,
            "floor-cjk" => self.floor,
            _ => true,
        }
    }
}

/// What to search for.
#[derive(Debug, Clone)]
pub struct SearchOptions {
    /// How many hits at most.
    pub k: usize,
    /// The session the answer is for: what it hides (tool conditions, environments,
    /// `platform_disabled`, and the clashes those decide) is left out of the results and of
    /// the statistics. `None`: this process's session for the profile
    /// ([`Session::detect`]: platform from the environment, environments detected, no tool
    /// information).
    pub session: Option<Session>,
    /// The messaging platform whose `platform_disabled` list applies; when set it replaces
    /// the session's (kept for callers that predate [`Session`]).
    pub platform: Option<String>,
    /// BM25 parameters.
    pub params: Params,
    /// Which ranking.
    pub ranking: Ranking,
    /// The default ranking's ingredients.
    pub ingredients: Ingredients,
    /// Apply the default ranking's relevance floor: return nothing that only grazes the
    /// query. On for what is injected into a turn (the plugin, `eval`); off for an explicit
    /// search, where a weak match on a rare word (`zanzibar`) is still an answer.
    pub floor: bool,
    /// The semantic model: when set (and the `semantic` ingredient is on), the default
    /// ranking re-ranks its candidates with it (see [`semantic`]).
    #[cfg(feature = "semantic")]
    pub semantic: Option<semantic::SemanticStage>,
    /// How the top k is found: the same answer whatever it is.
    pub scoring: Scoring,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            k: 6,
            session: None,
            platform: None,
            params: Params::default(),
            ranking: Ranking::default(),
            ingredients: Ingredients::default(),
            floor: false,
            #[cfg(feature = "semantic")]
            semantic: None,
            scoring: Scoring::Auto,
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
    /// Copies of this skill that ranked lower, named rather than shown (filled by
    /// [`crate::select`]; empty in a ranking's own answer).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<Alternative>,
}

/// A copy of a shown skill: what a prompt needs to name it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Alternative {
    /// The id to load it by.
    pub id: String,
    /// Its category path.
    pub category: String,
    /// Its SKILL.md path.
    pub path: String,
}

impl Alternative {
    /// The alternative that names `hit`.
    pub fn of(hit: &Hit) -> Alternative {
        Alternative {
            id: hit.id.clone(),
            category: hit.category.clone(),
            path: hit.path.clone(),
        }
    }
}

/// A table of postings lists by term: the lists, or their seed projections.
type ListTable = ReadOnlyTable<&'static str, &'static [u8]>;

/// A read snapshot of one profile, open for queries.
pub struct Snapshot<'s> {
    store: &'s Store,
    txn: &'s ReadTransaction,
    postings: Option<ListTable>,
    /// The seed projections of the lists, opened by the first seed-ranked query.
    seed: OnceCell<Option<ListTable>>,
    /// Whether the seed projections are in step with the lists in this snapshot (their
    /// stamp, `SEED_GENERATION`, is the profile's generation).
    seed_in_step: bool,
    docs: Option<ReadOnlyTable<u32, &'static [u8]>>,
    stats: CorpusStats,
    rules: Arc<OfferRules>,
    profile: String,
    /// The profile's table names, formatted once: proximity opens `words` from them.
    tables: ProfileTables,
    #[cfg(feature = "semantic")]
    manifest: Option<ReadOnlyTable<&'static str, &'static [u8]>>,
    #[cfg(feature = "semantic")]
    vectors: Option<ReadOnlyTable<&'static [u8], &'static [u8]>>,
}

/// The (category, name) of every skill a profile holds, offered or not.
pub type Indexed = FxHashSet<(String, String)>;

/// A skill offered in a session, as `<available_skills>` lists it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Offered {
    /// The category path.
    pub category: String,
    /// The name Hermes lists.
    pub name: String,
    /// The id to load it by.
    pub id: String,
    /// The SKILL.md path.
    pub path: String,
    /// Its description (the frontmatter's, else the body's first line).
    pub description: String,
    /// Its document id in this index state.
    #[serde(skip)]
    pub doc: u32,
}

/// The collection as one query sees it: the snapshot's statistics with the documents hidden
/// in the query's session taken out, so that IDF and average lengths match an index built
/// without them.
struct View {
    hidden: FxHashSet<u32>,
    /// The index state and hidden set that the session's document frequencies are
    /// remembered for (see `counts`); `None` when nothing is hidden.
    counted_in: Option<counts::State>,
    /// `hidden` as a bitset by document, so that the postings walk tests a bit instead of
    /// hashing every posting.
    hidden_bits: Vec<u64>,
    n: u32,
    avg: [f64; crate::fields::FIELD_COUNT],
}

impl View {
    /// Whether document `doc` is hidden in the query's session.
    #[inline]
    fn is_hidden(&self, doc: u32) -> bool {
        self.hidden_bits
            .get(doc as usize / 64)
            .is_some_and(|w| w >> (doc % 64) & 1 != 0)
    }
}

/// What the lexical steps leave: every document's score above the floor, the plan that
/// produced them, the view, and, when the semantic stage will re-rank, every document's
/// score, those under the floor included.
struct Lexical {
    scores: Vec<(u32, f64)>,
    #[cfg_attr(not(feature = "semantic"), allow(dead_code))]
    unfloored: Option<Vec<(u32, f64)>>,
    plan: Plan,
    view: View,
}

impl<'s> Snapshot<'s> {
    /// Opens the tables of `profile` in `txn`.
    pub fn open(
        store: &'s Store,
        txn: &'s ReadTransaction,
        profile: &str,
    ) -> Result<Self, StoreError> {
        let tables = ProfileTables::new(profile);
        let postings = open_or_none(store, txn, tables.postings())?;
        let docs = open_or_none(store, txn, tables.docs())?;
        let mut stats = CorpusStats::default();
        let mut rules = None;
        let mut seed_stamp: Option<u64> = None;
        if let Some(state) = open_or_none(store, txn, tables.state())? {
            if let Some(v) = state.get("stats").map_err(|e| store.err(e))? {
                stats = decode(store, v.value(), "corpus stats")?;
            }
            seed_stamp = crate::store::get_lenient(store, &state, SEED_GENERATION)?;
            if let Some(v) = state.get("offer_rules").map_err(|e| store.err(e))? {
                rules = Some(store.decode_shared(v.value(), "offer rules")?);
            }
        }
        let rules = rules.unwrap_or_default();
        Ok(Snapshot {
            store,
            txn,
            postings,
            seed: OnceCell::new(),
            seed_in_step: seed_stamp == Some(stats.generation),
            docs,
            stats,
            rules,
            profile: profile.to_owned(),
            #[cfg(feature = "semantic")]
            manifest: open_or_none(store, txn, tables.manifest())?,
            #[cfg(feature = "semantic")]
            vectors: open_or_none(
                store,
                txn,
                crate::sync::embed::table(&crate::sync::embed::table_name(profile)),
            )?,
            tables,
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

    /// The hit document `doc` makes with `score`: the fields a hit shows, read from its
    /// record in place ([`HitFields`]).
    fn hit(&self, doc: u32, score: f64) -> Result<Option<Hit>, StoreError> {
        let Some(docs) = &self.docs else {
            return Ok(None);
        };
        let Some(v) = docs.get(doc).map_err(|e| self.store.err(e))? else {
            return Ok(None);
        };
        let f = HitFields::read(v.value())
            .map_err(|e| self.store.bad_record(format!("document: {e}")))?;
        Ok(Some(Hit {
            id: f.id.to_owned(),
            name: f.name.to_owned(),
            category: f.category.to_owned(),
            description: f.description.to_owned(),
            score,
            path: f.key.to_owned(),
            alternatives: Vec::new(),
        }))
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

    /// The table a term's list is read from under `ranking`, and whether it holds seed
    /// projections: the seed ranking scores the seed field alone, so it reads that field's
    /// projections (the `seed` table) and walks only the entries it scores, unless they are
    /// behind the lists (see `SEED_GENERATION`); the whole lists give the same scores.
    fn lists(&self, ranking: Ranking) -> Result<(Option<&ListTable>, bool), StoreError> {
        if ranking == Ranking::Default || !self.seed_in_step {
            return Ok((self.postings.as_ref(), false));
        }
        if self.seed.get().is_none() {
            let table = open_or_none(self.store, self.txn, self.tables.seed())?;
            // Only this thread can have filled it since: a snapshot is not shared.
            let _ = self.seed.set(table);
        }
        Ok((self.seed.get().and_then(Option::as_ref), true))
    }

    /// The top `opts.k` skills for `query`, best first; ties ordered by id, then path.
    pub fn search(&self, query: &str, opts: &SearchOptions) -> Result<Vec<Hit>, StoreError> {
        // No answer holds more skills than the profile has: a k of 2^32 from a request
        // must not size a buffer.
        let k = opts.k.min(self.stats.docs as usize);
        // Only the top k matter here, unless the semantic stage re-ranks every lexical
        // candidate.
        #[cfg(feature = "semantic")]
        let top = opts.semantic.is_none().then_some(k);
        #[cfg(not(feature = "semantic"))]
        let top = Some(k);
        let scores = self.score_all(query, opts, top)?;
        rank::top_k(self, scores, k)
    }

    /// Explains the score of the skill `id` (or name) for `query`; of several skills so
    /// named, an offered one.
    pub fn explain(
        &self,
        query: &str,
        id: &str,
        opts: &SearchOptions,
    ) -> Result<Option<Explanation>, StoreError> {
        explain::explain(self, query, id, opts)
    }

    /// The offer rules the last sync left for the session.
    pub fn rules(&self) -> &OfferRules {
        &self.rules
    }

    /// The session `opts` ask for: theirs, or this process's for the profile, with
    /// `opts.platform` over its platform.
    pub fn session(&self, opts: &SearchOptions) -> Result<Session, StoreError> {
        let mut session = match &opts.session {
            Some(s) => s.clone(),
            None => Session::for_profile(&self.profile, &self.profile_home()?),
        };
        if let Some(p) = &opts.platform {
            session.platform = Some(p.clone());
        }
        Ok(session)
    }

    /// The home the profile was synced from (empty when unknown), read in this snapshot's
    /// transaction: a query without a session needs it, and opening a second transaction
    /// to list every profile cost more than the rest of a short query's setup.
    fn profile_home(&self) -> Result<std::path::PathBuf, StoreError> {
        let Some(table) = open_or_none(self.store, self.txn, crate::store::PROFILES)? else {
            return Ok(std::path::PathBuf::new());
        };
        let Some(v) = table
            .get(self.profile.as_str())
            .map_err(|e| self.store.err(e))?
        else {
            return Ok(std::path::PathBuf::new());
        };
        let info: crate::store::records::ProfileInfo =
            decode(self.store, v.value(), "profile info")?;
        Ok(std::path::PathBuf::from(info.home))
    }

    /// The documents hidden in `session`: never offered ones are not in the postings; these
    /// are the ones the session's conditions and clashes hide.
    pub fn hidden(&self, session: &Session) -> FxHashSet<u32> {
        self.rules.hidden(session)
    }

    /// What `<available_skills>` lists in `session`: every skill offered, by category and
    /// name, as Hermes' `build_skills_system_prompt()` would list it.
    pub fn offered(&self, session: &Session) -> Result<Vec<Offered>, StoreError> {
        Ok(self.offered_and_indexed(session)?.0)
    }

    /// [`Snapshot::offered`], and the (category, name) of every skill the profile holds,
    /// offered or not: a reader of Hermes' block tells an entry the engine leaves out from
    /// one it has never seen.
    pub fn offered_and_indexed(
        &self,
        session: &Session,
    ) -> Result<(Vec<Offered>, Indexed), StoreError> {
        let hidden = self.hidden(session);
        let mut names = FxHashSet::default();
        let mut out = Vec::new();
        for (d, h, b) in self.all_docs()? {
            names.insert((b.category.clone(), h.name.clone()));
            if h.inactive.is_some() || hidden.contains(&d) {
                continue;
            }
            out.push(Offered {
                category: b.category,
                name: h.name,
                id: h.id,
                path: h.key,
                description: b.description,
                doc: d,
            });
        }
        out.sort();
        Ok((out, names))
    }

    /// The collection statistics with the documents hidden in the session of `opts` left
    /// out.
    fn view(&self, opts: &SearchOptions) -> Result<View, StoreError> {
        let hidden = self.hidden(&self.session(opts)?);
        let mut counted = CorpusStats {
            docs: self.stats.docs,
            sum_lens: self.stats.sum_lens,
            field_docs: self.stats.field_docs,
            ..CorpusStats::default()
        };
        for &d in &hidden {
            if let Some(lens) = self.rules.lens(d) {
                counted.count(&lens, false);
            }
        }
        let (n, avg) = (counted.docs, counted.avg_lens());
        let mut hidden_bits = Vec::new();
        for &d in &hidden {
            let word = d as usize / 64;
            if word >= hidden_bits.len() {
                hidden_bits.resize(word + 1, 0u64);
            }
            hidden_bits[word] |= 1 << (d % 64);
        }
        let counted_in = (!hidden.is_empty()).then(|| {
            let mut sorted: Vec<u32> = hidden.iter().copied().collect();
            sorted.sort_unstable();
            counts::State {
                path: self.store.path().to_owned(),
                profile: self.profile.clone(),
                generation: self.stats.generation,
                synced_at_ns: self.stats.synced_at_ns,
                hidden: sorted,
            }
        });
        Ok(View {
            hidden,
            counted_in,
            hidden_bits,
            n,
            avg,
        })
    }

    /// Every step but the last: analysis, view, plan, score, floor, and the semantic stage
    /// when it runs. Search uses it.
    fn score_all(
        &self,
        text: &str,
        opts: &SearchOptions,
        top: Option<usize>,
    ) -> Result<Vec<(u32, f64)>, StoreError> {
        let query = query::Query::new(text, opts);
        #[cfg_attr(not(feature = "semantic"), allow(unused_mut))]
        let mut lexical = self.score_lexical(&query, opts, top)?;
        #[cfg(feature = "semantic")]
        let (scores, _) = semantic::fuse(self, &query, &mut lexical, opts)?;
        #[cfg(not(feature = "semantic"))]
        let scores = lexical.scores;
        Ok(scores)
    }

    /// The lexical steps: view, plan, score, floor, coverage, proximity. Search and explain
    /// share them, so an explanation's total and rank are those of the search. With `top`,
    /// the scores are those of a set of documents that holds the best `top` (and every
    /// document tied with the last of them, see `maxscore`), each as exhaustive scoring
    /// gives it; without, of every document. When the semantic stage will re-rank, the
    /// documents under the floor are scored too ([`Lexical::unfloored`]), in the same walk.
    fn score_lexical(
        &self,
        query: &query::Query<'_>,
        opts: &SearchOptions,
        top: Option<usize>,
    ) -> Result<Lexical, StoreError> {
        let view = self.view(opts)?;
        if view.n == 0 || rank::asks_nothing(query, opts) {
            return Ok(Lexical {
                scores: Vec::new(),
                unfloored: None,
                plan: Plan::default(),
                view,
            });
        }
        let plan = plan::plan(self, query, opts, &view)?;
        let floor = rank::floor(&plan, view.n, opts);
        #[cfg(feature = "semantic")]
        let unfloored = semantic::active(opts) && floor > 0.0;
        #[cfg(not(feature = "semantic"))]
        let unfloored = false;
        let mut pairs = proximity::Pairs::new(query, &plan, opts);
        // MaxScore where it gives the same answer (the coverage rule drops hits, after
        // which a document it left out could rise into the top) and likely sooner.
        let raw = match top {
            Some(k)
                if !unfloored
                    && maxscore::applies(&plan, opts)
                    && !rank::covers(&plan, opts)
                    && match opts.scoring {
                        Scoring::Auto => maxscore::worthwhile(
                            &plan,
                            opts.ranking,
                            score::first_query_cold_docs(self.stats.next_doc as usize),
                        ),
                        Scoring::Exhaustive => false,
                        Scoring::Pruned => true,
                    } =>
            {
                // Proximity re-ranks its best CANDIDATES.
                let keep = match pairs {
                    Some(_) => k.max(proximity::CANDIDATES),
                    None => k.max(1),
                };
                maxscore::score_top(self, &plan, &view, opts, floor, pairs.as_mut(), keep)?
            }
            _ => {
                let at_least = if unfloored { 0.0 } else { floor };
                score::score_all(self, &plan, &view, opts, at_least, pairs.as_mut())?
            }
        };
        let bad = |e| self.store.bad_record(e);
        if !unfloored {
            let scores = rank::cover(query, &plan, &view, opts, raw).map_err(bad)?;
            let scores = proximity::boost(self, pairs, opts, scores)?;
            return Ok(Lexical {
                scores,
                unfloored: None,
                plan,
                view,
            });
        }
        // What clears the floor and the coverage rule, then one proximity pass over every
        // score: a document's bonus depends on the best score and its own pairs only, so
        // it is the same whether the others under the floor were scored or not.
        let above: Vec<(u32, f64)> = raw.iter().copied().filter(|&(_, s)| s >= floor).collect();
        let passed: FxHashSet<u32> = rank::cover(query, &plan, &view, opts, above)
            .map_err(bad)?
            .into_iter()
            .map(|(d, _)| d)
            .collect();
        let all = proximity::boost(self, pairs, opts, raw)?;
        Ok(Lexical {
            scores: all
                .iter()
                .copied()
                .filter(|(d, _)| passed.contains(d))
                .collect(),
            unfloored: Some(all),
            plan,
            view,
        })
    }
}
