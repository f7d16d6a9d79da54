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
use redb::{ReadableTable, TableDefinition, WriteTransaction};
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
}

impl Prepared {
    /// Vectors embedded by this sync.
    pub fn embedded(&self) -> usize {
        self.computed.len()
    }

    /// Whether the table needs a write even if nothing else changed.
    pub fn dirty(&self) -> bool {
        !self.computed.is_empty() || self.orphans || (self.stale_model && !self.stored.is_empty())
    }
}

/// Reads which vectors exist and embeds every skill that lacks one: the skills whose bytes
/// changed, and the indexed skills of the base without a vector (a first sync with the model,
/// or a model change). Texts are embedded in parallel; `progress` gets (done, total).
pub fn prepare(
    store: &Store,
    profile: &str,
    model: &Model,
    base: &Committed,
    observed: &[Observed],
    progress: Option<&(dyn Fn(usize, usize) + Sync)>,
) -> Result<Prepared, StoreError> {
    let name = table_name(profile);
    let tables = crate::store::ProfileTables::new(profile);
    let txn = store.read()?;
    let mut prepared = Prepared {
        fingerprint: model.fingerprint().to_owned(),
        ..Default::default()
    };
    let mut stored_fingerprint = None;
    if let Some(t) = open_or_none(store, &txn, table(&name))? {
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
    }
    prepared.stale_model = stored_fingerprint.as_deref() != Some(model.fingerprint());
    let has = |hash: &[u8; 32]| !prepared.stale_model && prepared.stored.contains(hash);
    let indexed: FxHashSet<[u8; 32]> = base
        .manifest
        .values()
        .filter(|e| matches!(e.state, EntryState::Indexed(_)))
        .map(|e| e.hash)
        .collect();
    prepared.orphans = prepared.stored.iter().any(|h| !indexed.contains(h));

    // What to embed, one text per hash.
    let mut todo: FxHashMap<[u8; 32], String> = FxHashMap::default();
    let mut changed_keys: FxHashSet<String> = FxHashSet::default();
    for o in observed {
        match &o.observation {
            Observation::Changed { hash, parsed } => {
                changed_keys.insert(o.candidate.key());
                if !has(hash) {
                    let s = &parsed.skill;
                    todo.entry(*hash).or_insert_with(|| {
                        skill_text(&s.name, &s.description, &s.triggers, &s.tags)
                    });
                }
            }
            Observation::Rejected { .. } | Observation::Vanished => {
                changed_keys.insert(o.candidate.key());
            }
            Observation::StatUnchanged | Observation::SameBytes { .. } => {}
        }
    }
    // Indexed skills of the base that are still there, unchanged, but have no vector: read
    // their text from the store rather than the file.
    let found: FxHashSet<String> = observed.iter().map(|o| o.candidate.key()).collect();
    let missing: Vec<(u32, [u8; 32])> = base
        .manifest
        .iter()
        .filter(|(key, _)| found.contains(*key) && !changed_keys.contains(*key))
        .filter_map(|(_, e): (&String, &ManifestEntry)| match e.state {
            EntryState::Indexed(d) if !has(&e.hash) && !todo.contains_key(&e.hash) => {
                Some((d, e.hash))
            }
            _ => None,
        })
        .collect();
    if !missing.is_empty() {
        if let Some(docs) = open_or_none(store, &txn, tables.docs())? {
            for (doc, hash) in missing {
                if let Some(v) = docs.get(doc).map_err(|e| store.err(e))? {
                    let (h, b): (DocHead, DocBody) = decode(store, v.value(), "document")?;
                    todo.entry(hash).or_insert_with(|| {
                        skill_text(&h.name, &b.description, &b.triggers, &b.tags)
                    });
                }
            }
        }
    }
    drop(txn);

    let total = todo.len();
    let done = AtomicUsize::new(0);
    prepared.computed = todo
        .into_par_iter()
        .map(|(hash, text)| {
            let v = semantic::quantize(&model.embed(&text));
            if let Some(report) = progress {
                report(done.fetch_add(1, Ordering::Relaxed) + 1, total);
            }
            (hash, v)
        })
        .collect();
    Ok(prepared)
}

/// Writes the vectors in the sync's write transaction, after the manifest: records the
/// model's fingerprint (dropping every vector of another model), inserts the new vectors,
/// and drops every vector whose hash belongs to no indexed manifest entry as committed.
pub fn write(
    store: &Store,
    txn: &WriteTransaction,
    profile: &str,
    prepared: &Prepared,
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
