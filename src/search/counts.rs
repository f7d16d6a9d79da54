//! Document frequencies in a session, remembered per index state.
//!
//! With nothing hidden, a term's document frequency is in its postings list's header. A
//! session that hides documents (a skill whose environment is not active, a tool condition
//! the session fails) needs the count without them, which takes a walk of the whole list:
//! for the seed ranking, whose document keeps `a` and `to`, most of a short query's work.
//! That count changes only when the profile is committed to or the hidden set changes, so
//! each process keeps it for the index state it was counted in (file, profile, generation,
//! and the start of the sync that made that generation, which tells apart a profile dropped
//! and made again, or a damaged file replaced by a new one) and the hidden documents; a
//! later query with the term reads the count instead of walking the list.

use rustc_hash::FxHashMap;
use std::path::PathBuf;
use std::sync::Mutex;

/// What the counts were counted in: an index state and the documents hidden there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct State {
    /// The index file.
    pub(super) path: PathBuf,
    /// The profile.
    pub(super) profile: String,
    /// The profile's generation.
    pub(super) generation: u64,
    /// When the sync that committed this generation started.
    pub(super) synced_at_ns: i64,
    /// The hidden documents, ascending.
    pub(super) hidden: Vec<u32>,
}

/// A term's counts for one set of counted fields: (fields, documents, documents with the
/// term in a metadata field). The fields carry `plan`'s `PROJECTED` bit when the counts
/// were taken on a seed projection, which has no metadata field to count.
type Counted = (u32, u32, u32);

/// The counts of one state.
struct Counts {
    state: State,
    by_term: FxHashMap<String, Vec<Counted>>,
}

/// How many states are kept (a process serves a few sessions and profiles at a time).
const STATES: usize = 8;
/// How many terms a state keeps, so that a process fed endless distinct words stays small.
const TERMS: usize = 1 << 14;

static CACHE: Mutex<Vec<Counts>> = Mutex::new(Vec::new());

/// The counts of `term` over `fields` in `state`, when a query has counted them.
pub(super) fn get(state: &State, term: &str, fields: u32) -> Option<(u32, u32)> {
    let cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let counts = cache.iter().find(|c| c.state == *state)?;
    counts
        .by_term
        .get(term)?
        .iter()
        .find(|&&(f, _, _)| f == fields)
        .map(|&(_, df, meta_df)| (df, meta_df))
}

/// Keeps the counts of `term` over `fields` in `state`.
pub(super) fn put(state: &State, term: &str, fields: u32, df: u32, meta_df: u32) {
    let mut cache = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let at = match cache.iter().position(|c| c.state == *state) {
        Some(at) => at,
        None => {
            if cache.len() == STATES {
                // The oldest state goes: states are pushed in the order first queried.
                cache.remove(0);
            }
            cache.push(Counts {
                state: state.clone(),
                by_term: FxHashMap::default(),
            });
            cache.len() - 1
        }
    };
    let by_term = &mut cache[at].by_term;
    if by_term.len() >= TERMS && !by_term.contains_key(term) {
        return;
    }
    let entry = by_term.entry(term.to_owned()).or_default();
    if !entry.iter().any(|&(f, _, _)| f == fields) {
        entry.push((fields, df, meta_df));
    }
}
