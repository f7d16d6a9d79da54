//! The sessions a plugin process serves, each with the skills Hermes lists in it.
//!
//! The plugin's `llm_request` middleware sees each request's own `<available_skills>` block
//! and tools; [`Sessions::allow`] reads the block against the engine's offer for those tools
//! ([`super::listing::verified`]) and keeps the result for the session, so that the next
//! turns' retrieval keeps only listed skills. The block is frozen per session, and sessions
//! with the same tools share it: a reading is kept per (index state, block, tools) and
//! shared, so a gateway with many sessions reads a hub-sized block once, not once per
//! session or per turn.

use super::budget::{self, Budget, Usage};
use super::listing::{self, Allowed, Block};
use crate::compact::block_insides;
use crate::offer::Session;
use crate::refresh::{IndexState, LiveIndex};
use crate::Error;
use rustc_hash::FxHashMap;
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

/// How many sessions are remembered (the least recently used is forgotten first).
pub const SESSIONS: usize = 256;
/// How many distinct readings are kept.
const READINGS: usize = 8;

/// What a request tells of its session, besides its block.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shape {
    /// The session's tools and toolsets, when the request told them.
    pub tools: Option<(BTreeSet<String>, BTreeSet<String>)>,
    /// The session's messaging platform, as Hermes' builder reads it (`None`: the engine
    /// reads this process's environment).
    pub platform: Option<String>,
}

/// What a reading depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Key {
    state: IndexState,
    /// blake3 of the system text the block was read from.
    text: [u8; 32],
    shape: Shape,
}

#[derive(Debug)]
struct Reading {
    key: Key,
    /// The blocks read, in order.
    blocks: Vec<Block>,
    allowed: Arc<Allowed>,
    /// Hermes' usage records as read with the blocks: the budgeted listing's order.
    usage: Usage,
    /// The blocks' rewritten insides for the budget they were made for, made once.
    rewritten: Mutex<Option<(Budget, Arc<Vec<String>>)>>,
}

impl Reading {
    /// The insides the blocks are rewritten to under `budget`
    /// ([`budget::budgeted`]; `None` for a block read as listing nothing).
    fn rewritten(&self, budget: &Budget) -> Arc<Vec<String>> {
        let mut cache = self
            .rewritten
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some((made_for, insides)) = cache.as_ref() {
            if made_for == budget {
                return Arc::clone(insides);
            }
        }
        let insides: Arc<Vec<String>> = Arc::new(
            self.blocks
                .iter()
                .map(|b| budget::budgeted(b, &self.usage, budget))
                .collect(),
        );
        *cache = Some((budget.clone(), Arc::clone(&insides)));
        insides
    }
}

#[derive(Default)]
struct State {
    /// Session id → its reading, and when it was last used.
    sessions: FxHashMap<String, (u64, Arc<Reading>)>,
    /// The latest distinct readings, newest last.
    readings: Vec<Arc<Reading>>,
    tick: u64,
}

/// The sessions of one profile's index (see the module documentation). Safe to share.
#[derive(Default)]
pub struct Sessions {
    state: Mutex<State>,
}

impl Sessions {
    /// Reads what the `<available_skills>` blocks of `system` list for the session (its
    /// tools, toolsets and platform, when the request told them: `shape`), keeps it as the session's
    /// allow-list, and returns it. Read once per index state, block and tools.
    pub fn allow(
        &self,
        live: &LiveIndex,
        session_id: &str,
        system: &str,
        shape: Shape,
    ) -> Result<Arc<Allowed>, Error> {
        Ok(Arc::clone(
            &self.reading(live, session_id, system, shape)?.allowed,
        ))
    }

    /// The request's system texts with what the session's block lists kept as its
    /// allow-list ([`Sessions::allow`] of the texts joined by newlines), and, with
    /// `compact`, each block rewritten to names only ([`Block::names_only`]), or to fit
    /// `budget` when it has one ([`budget::budgeted`], made once per reading). A block read
    /// as listing nothing, a block listing entries the engine cannot explain
    /// ([`Block::unexplained`]), or texts whose blocks cannot be matched with those read, are
    /// left as they are: compaction only saves tokens, and never loses a listed skill.
    pub fn rewrite(
        &self,
        live: &LiveIndex,
        session_id: &str,
        texts: &[String],
        shape: Shape,
        compact: bool,
        budget: &Budget,
    ) -> Result<Vec<String>, Error> {
        let reading = self.reading(live, session_id, &texts.join("\n"), shape)?;
        let found: usize = texts.iter().map(|t| block_insides(t).len()).sum();
        if !compact || found != reading.blocks.len() {
            return Ok(texts.to_vec());
        }
        let insides = reading.rewritten(budget);
        let mut blocks = reading.blocks.iter().zip(insides.iter());
        Ok(texts
            .iter()
            .map(|t| {
                let mut out = String::with_capacity(t.len());
                let mut at = 0;
                for (start, end) in block_insides(t) {
                    out.push_str(&t[at..start]);
                    match blocks.next() {
                        Some((b, inside)) if !b.groups.is_empty() && b.unexplained == 0 => {
                            out.push_str(inside)
                        }
                        _ => out.push_str(&t[start..end]),
                    }
                    at = end;
                }
                out.push_str(&t[at..]);
                out
            })
            .collect())
    }

    /// The session's reading of `system`: the one it has or another session's with the
    /// same key, else a new one.
    fn reading(
        &self,
        live: &LiveIndex,
        session_id: &str,
        system: &str,
        shape: Shape,
    ) -> Result<Arc<Reading>, Error> {
        let key = Key {
            state: live.state()?,
            text: *blake3::hash(system.as_bytes()).as_bytes(),
            shape,
        };
        let found = {
            let st = self.lock();
            st.sessions
                .get(session_id)
                .map(|(_, r)| r)
                .into_iter()
                .chain(st.readings.iter().rev())
                .find(|r| r.key == key)
                .cloned()
        };
        let reading = match found {
            Some(r) => r,
            None => Arc::new(read(live, key, system)?),
        };
        self.remember(session_id, Arc::clone(&reading));
        Ok(reading)
    }

    /// The session's allow-list, `None` before its first request was seen.
    pub fn allowed(&self, session_id: &str) -> Option<Arc<Allowed>> {
        let mut st = self.lock();
        st.tick += 1;
        let tick = st.tick;
        let (used, reading) = st.sessions.get_mut(session_id)?;
        *used = tick;
        Some(Arc::clone(&reading.allowed))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn remember(&self, session_id: &str, reading: Arc<Reading>) {
        let mut st = self.lock();
        st.tick += 1;
        let tick = st.tick;
        if !st.readings.iter().any(|r| Arc::ptr_eq(r, &reading)) {
            st.readings.push(Arc::clone(&reading));
            if st.readings.len() > READINGS {
                st.readings.remove(0);
            }
        }
        st.sessions.insert(session_id.to_owned(), (tick, reading));
        if st.sessions.len() > SESSIONS {
            if let Some(oldest) = st
                .sessions
                .iter()
                .min_by_key(|(_, (used, _))| *used)
                .map(|(k, _)| k.clone())
            {
                st.sessions.remove(&oldest);
            }
        }
    }
}

/// Reads the block against the engine's offer for the session the key describes.
fn read(live: &LiveIndex, key: Key, system: &str) -> Result<Reading, Error> {
    let mut session = Session::detect(&live.profile().home);
    if let Some((tools, toolsets)) = &key.shape.tools {
        session.tools = Some(tools.clone());
        session.toolsets = Some(toolsets.clone());
    }
    if let Some(platform) = &key.shape.platform {
        session.platform = Some(platform.clone());
    }
    let (state, offered, indexed) = live.offered_and_indexed(&session)?;
    let blocks = listing::read(system, &offered, &indexed);
    let allowed = Arc::new(listing::allowed(&blocks));
    Ok(Reading {
        key: Key { state, ..key },
        blocks,
        allowed,
        usage: Usage::read(&live.profile().home),
        rewritten: Mutex::new(None),
    })
}
