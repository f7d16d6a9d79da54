//! The semantic stage's part of a sync (feature `semantic`): one int8 vector per skill,
//! keyed by the SKILL.md content hash, in the profile's `vectors` table.
//!
//! Vectors are derived data. A missing one is computed by the next sync that has the model;
//! a stale one (its hash no longer belongs to any indexed manifest entry) is dropped by the
//! next sync that writes them. Keyed by content hash, so a rename or a move never embeds
//! again. The table also holds the model's fingerprint under [`MODEL_KEY`]: a different
//! model makes every vector stale. Older builds, and syncs without the model, never open
//! the table.
//!
//! [`prepare`] runs after observe, with no lock: it reads which vectors exist and embeds, in
//! parallel, the skills that lack one. [`write`] runs in the sync's write transaction.

use super::observe::{Observation, Observed};
use super::plan::Committed;
use crate::semantic::{self, Model, DIM};
use crate::store::records::{DocBody, DocHead, EntryState, ManifestEntry};
use crate::store::{decode, open_or_none, Store, StoreError};
use rayon::prelude::*;
use redb::{ReadableTable, ReadableTableMetadata, TableDefinition, WriteTransaction};
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The key of the row holding the fingerprint of the model the vectors were made with. It
/// is not 32 bytes long, so it cannot be a content hash.
pub const MODEL_KEY: &[u8] = b"#model";

/// The key of the row counting the commits that wrote vectors (u64, little-endian): a
/// process that keeps the decoded vectors between queries keys them with it, since a commit
/// that only adds one vector and drops another moves neither the generation nor the count.
pub const STAMP_KEY: &[u8] = b"#stamp";

/// The vectors stamp stored in `t` (0 when none was ever written).
pub fn stamp(
    t: &impl ReadableTable<&'static [u8], &'static [u8]>,
) -> Result<u64, redb::StorageError> {
    Ok(t.get(STAMP_KEY)?
        .and_then(|v| <[u8; 8]>::try_from(v.value()).ok())
        .map_or(0, u64::from_le_bytes))
}

/// The key of the row holding the profile generation (u64, little-endian) at which every
/// indexed manifest entry had a vector of the fingerprinted model. A sync whose base has that
/// generation and whose walk found nothing changed knows the table is complete without
/// reading it: the stat-walk fast path holds with the semantic stage on (a 90k-skill table
/// is about 50 MB). Any commit that moves the generation without writing vectors (a sync
/// without the model) leaves it behind, and the next sync with the model reads the table.
pub const COMPLETE_KEY: &[u8] = b"#complete";

/// How much of a skill's text is embedded, in characters: the model has no length limit
/// and costs time linear in the tokens, so a pathological description must not cost
/// seconds.
pub const MAX_EMBED_CHARS: usize = 1_000;

/// The name of profile `profile`'s vectors table.
pub fn table_name(profile: &str) -> String {
    format!("profile.{profile}.vectors")
}

/// content hash (32 bytes) → the int8 vector (512 bytes); [`MODEL_KEY`] → fingerprint;
/// [`STAMP_KEY`] → the vectors stamp.
pub fn table(name: &str) -> TableDefinition<'_, &'static [u8], &'static [u8]> {
    TableDefinition::new(name)
}

/// The text a skill is embedded as: `name: description`, then its triggers and tags, cut
/// at [`MAX_EMBED_CHARS`]. The name's separators become spaces so `pdf-to-markdown` reads
/// as words.
pub fn skill_text(name: &str, description: &str, triggers: &[String], tags: &[String]) -> String {
    let mut text = format!("{}: {}", name.replace(['-', '_'], " "), description.trim());
    let extra: Vec<&str> = triggers
        .iter()
        .chain(tags)
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .collect();
    if !extra.is_empty() {
        text.push_str(". ");
        text.push_str(&extra.join(", "));
    }
    match text.char_indices().nth(MAX_EMBED_CHARS) {
        Some((at, _)) => text[..at].to_owned(),
        None => text,
    }
}

/// What [`prepare`] found and computed, for [`write`].
#[derive(Default)]
pub struct Prepared {
    fingerprint: String,
    /// The stored vectors were made by another model (or there is no fingerprint yet).
    stale_model: bool,
    /// Hashes with a stored vector.
    stored: FxHashSet<[u8; 32]>,
    /// New vectors.
    computed: Vec<([u8; 32], [i8; DIM])>,
    /// Whether some stored vector belongs to no indexed entry of the base.
    orphans: bool,
    /// Whether the table was read through (its [`COMPLETE_KEY`] did not name the base's
    /// generation): the sync then writes the mark, so that the next one need not.
    read_through: bool,
}

impl Prepared {
    /// Vectors embedded by this sync.
    pub fn embedded(&self) -> usize {
        self.computed.len()
    }

    /// Whether the table needs a write even if nothing else changed.
    pub fn dirty(&self) -> bool {
        !self.computed.is_empty()
            || self.orphans
            || (self.stale_model && !self.stored.is_empty())
            || self.read_through
    }
}

/// Reads which vectors exist and embeds every skill that lacks one: the skills whose bytes
/// changed, and the indexed skills of the base without a vector (a first sync with the model,
/// or a model change). Texts are embedded in parallel; `progress` gets (done, total).
///
/// When the table says it is complete for the base's generation ([`COMPLETE_KEY`]), only
/// the changed skills' hashes are looked up; the table is not read through.
pub fn prepare(
    store: &Store,
    profile: &str,
    model: &Model,
    base: &Committed,
    observed: &[Observed],
    progress: Option<&(dyn Fn(usize, usize) + Sync)>,
) -> Result<Prepared, StoreError> {
    let txn = store.read()?;
    let mut prepared = Prepared {
        fingerprint: model.fingerprint().to_owned(),
        ..Default::default()
    };
    let vectors = open_or_none(store, &txn, table(&table_name(profile)))?;
    let complete = match &vectors {
        Some(t) => is_complete(t, model, base.stats.generation).map_err(|e| store.err(e))?,
        None => false,
    };
    let todo = match (&vectors, complete) {
        (Some(t), true) => {
            changed_without_vector(observed, |hash| t.get(hash.as_slice()).map(|v| v.is_some()))
                .map_err(|e| store.err(e))?
        }
        _ => {
            prepared.read_through = true;
            if let Some(t) = &vectors {
                read_stored(store, t, model, &mut prepared)?;
            }
            let has = |hash: &[u8; 32]| Ok(!prepared.stale_model && prepared.stored.contains(hash));
            prepared.orphans = has_orphans(&prepared.stored, base);
            let mut todo = changed_without_vector(observed, has).map_err(|e| store.err(e))?;
            unchanged_without_vector(store, &txn, profile, base, observed, &prepared, &mut todo)?;
            todo
        }
    };
    drop(vectors);
    drop(txn);
    prepared.computed = embed_all(model, todo, progress);
    Ok(prepared)
}

/// Whether `t` holds a vector of `model` for every indexed entry of generation `generation`.
fn is_complete(
    t: &impl ReadableTable<&'static [u8], &'static [u8]>,
    model: &Model,
    generation: u64,
) -> Result<bool, redb::StorageError> {
    let same_model = t
        .get(MODEL_KEY)?
        .is_some_and(|v| v.value() == model.fingerprint().as_bytes());
    let complete_at = t
        .get(COMPLETE_KEY)?
        .and_then(|v| <[u8; 8]>::try_from(v.value()).ok())
        .map(u64::from_le_bytes);
    Ok(same_model && complete_at == Some(generation))
}

/// Reads every stored hash and the model's fingerprint into `prepared`.
fn read_stored(
    store: &Store,
    t: &impl ReadableTable<&'static [u8], &'static [u8]>,
    model: &Model,
    prepared: &mut Prepared,
) -> Result<(), StoreError> {
    let mut stored_fingerprint = None;
    for row in t.iter().map_err(|e| store.err(e))? {
        let (k, v) = row.map_err(|e| store.err(e))?;
        match <[u8; 32]>::try_from(k.value()) {
            Ok(hash) => {
                prepared.stored.insert(hash);
            }
            Err(_) if k.value() == MODEL_KEY => {
                stored_fingerprint = Some(String::from_utf8_lossy(v.value()).into_owned());
            }
            // A key of a later format: left alone.
            Err(_) => {}
        }
    }
    prepared.stale_model = stored_fingerprint.as_deref() != Some(model.fingerprint());
    Ok(())
}

/// Whether some stored vector belongs to no indexed entry of the base.
fn has_orphans(stored: &FxHashSet<[u8; 32]>, base: &Committed) -> bool {
    let indexed: FxHashSet<[u8; 32]> = base
        .manifest
        .values()
        .filter(|e| matches!(e.state, EntryState::Indexed(_)))
        .map(|e| e.hash)
        .collect();
    stored.iter().any(|h| !indexed.contains(h))
}

/// The text of every changed skill whose hash `has` no vector, one per hash.
fn changed_without_vector(
    observed: &[Observed],
    mut has: impl FnMut(&[u8; 32]) -> Result<bool, redb::StorageError>,
) -> Result<FxHashMap<[u8; 32], String>, redb::StorageError> {
    let mut todo = FxHashMap::default();
    for o in observed {
        if let Observation::Changed { hash, parsed } = &o.observation {
            if !todo.contains_key(hash) && !has(hash)? {
                let s = &parsed.skill;
                todo.insert(
                    *hash,
                    skill_text(&s.name, &s.description, &s.triggers, &s.tags),
                );
            }
        }
    }
    Ok(todo)
}

/// Adds to `todo` the indexed skills of the base that are still there, unchanged, but have
/// no vector, with their text read from the store rather than the file.
fn unchanged_without_vector(
    store: &Store,
    txn: &redb::ReadTransaction,
    profile: &str,
    base: &Committed,
    observed: &[Observed],
    prepared: &Prepared,
    todo: &mut FxHashMap<[u8; 32], String>,
) -> Result<(), StoreError> {
    let has = |hash: &[u8; 32]| !prepared.stale_model && prepared.stored.contains(hash);
    let unchanged: FxHashSet<String> = observed
        .iter()
        .filter(|o| {
            matches!(
                o.observation,
                Observation::StatUnchanged | Observation::SameBytes { .. }
            )
        })
        .map(|o| o.candidate.key())
        .collect();
    let missing: Vec<(u32, [u8; 32])> = base
        .manifest
        .iter()
        .filter(|(key, _)| unchanged.contains(*key))
        .filter_map(|(_, e): (&String, &ManifestEntry)| match e.state {
            EntryState::Indexed(d) if !has(&e.hash) && !todo.contains_key(&e.hash) => {
                Some((d, e.hash))
            }
            _ => None,
        })
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let tables = crate::store::ProfileTables::new(profile);
    if let Some(docs) = open_or_none(store, txn, tables.docs())? {
        for (doc, hash) in missing {
            if let Some(v) = docs.get(doc).map_err(|e| store.err(e))? {
                let (h, b): (DocHead, DocBody) = decode(store, v.value(), "document")?;
                todo.entry(hash)
                    .or_insert_with(|| skill_text(&h.name, &b.description, &b.triggers, &b.tags));
            }
        }
    }
    Ok(())
}

/// Embeds every text of `todo` in parallel; `progress` gets (done, total).
fn embed_all(
    model: &Model,
    todo: FxHashMap<[u8; 32], String>,
    progress: Option<&(dyn Fn(usize, usize) + Sync)>,
) -> Vec<([u8; 32], [i8; DIM])> {
    let total = todo.len();
    let done = AtomicUsize::new(0);
    todo.into_par_iter()
        .map(|(hash, text)| {
            let v = semantic::quantize(&model.embed(&text));
            if let Some(report) = progress {
                report(done.fetch_add(1, Ordering::Relaxed) + 1, total);
            }
            (hash, v)
        })
        .collect()
}

/// Writes the vectors in the sync's write transaction, after the manifest: records the
/// model's fingerprint (dropping every vector of another model), inserts the new vectors,
/// and drops every vector whose hash belongs to no indexed manifest entry as committed.
/// When every indexed entry then has a vector, records [`COMPLETE_KEY`] = `generation`, the
/// profile generation the transaction commits.
pub fn write(
    store: &Store,
    txn: &WriteTransaction,
    profile: &str,
    prepared: &Prepared,
    generation: u64,
) -> Result<(), StoreError> {
    let tables = crate::store::ProfileTables::new(profile);
    let name = table_name(profile);
    let indexed: FxHashSet<[u8; 32]> = {
        let manifest = txn
            .open_table(tables.manifest())
            .map_err(|e| store.err(e))?;
        let mut set = FxHashSet::default();
        for row in manifest.iter().map_err(|e| store.err(e))? {
            let (_, v) = row.map_err(|e| store.err(e))?;
            let e: ManifestEntry = decode(store, v.value(), "manifest entry")?;
            if matches!(e.state, EntryState::Indexed(_)) {
                set.insert(e.hash);
            }
        }
        set
    };
    let mut t = txn.open_table(table(&name)).map_err(|e| store.err(e))?;
    let stored_fingerprint = t
        .get(MODEL_KEY)
        .map_err(|e| store.err(e))?
        .map(|v| v.value().to_vec());
    if stored_fingerprint.as_deref() != Some(prepared.fingerprint.as_bytes()) {
        // Made by another model (or another sync changed the model meanwhile): all stale.
        t.retain(|_, _| false).map_err(|e| store.err(e))?;
        t.insert(MODEL_KEY, prepared.fingerprint.as_bytes())
            .map_err(|e| store.err(e))?;
    }
    for (hash, v) in &prepared.computed {
        if indexed.contains(hash) {
            t.insert(hash.as_slice(), bytes_of(v).as_slice())
                .map_err(|e| store.err(e))?;
        }
    }
    t.retain(|k, _| match <&[u8; 32]>::try_from(k) {
        Ok(hash) => indexed.contains(hash),
        Err(_) => true,
    })
    .map_err(|e| store.err(e))?;
    let next = stamp(&t).map_err(|e| store.err(e))?.wrapping_add(1);
    t.insert(STAMP_KEY, next.to_le_bytes().as_slice())
        .map_err(|e| store.err(e))?;
    mark_complete(&mut t, indexed.len() as u64, generation).map_err(|e| store.err(e))
}

/// Records [`COMPLETE_KEY`] = `generation` when the table holds exactly one vector per
/// indexed hash (`indexed` of them), and removes it otherwise. Every hash row left belongs
/// to an indexed entry, so counting rows is enough; a row of a later format makes the count
/// differ, which only costs the next sync a read through the table.
fn mark_complete(
    t: &mut redb::Table<&'static [u8], &'static [u8]>,
    indexed: u64,
    generation: u64,
) -> Result<(), redb::StorageError> {
    t.remove(COMPLETE_KEY)?;
    let mut special = 0;
    for key in [MODEL_KEY, STAMP_KEY] {
        special += u64::from(t.get(key)?.is_some());
    }
    if t.len()? == indexed + special {
        t.insert(COMPLETE_KEY, generation.to_le_bytes().as_slice())?;
    }
    Ok(())
}

/// An int8 vector as stored.
pub fn bytes_of(v: &[i8; DIM]) -> [u8; DIM] {
    v.map(|x| x as u8)
}

/// A stored vector, or `None` when the bytes are not one (another format).
pub fn vector_of(bytes: &[u8]) -> Option<[i8; DIM]> {
    let b: &[u8; DIM] = bytes.try_into().ok()?;
    Some(b.map(|x| x as i8))
}
