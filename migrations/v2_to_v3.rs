//! Schema 2 → 3: typed offer decisions, injection flags apart from notes, environments,
//! and the offer rules a query applies for its session.
//!
//! Schema 3 stores why a skill is not offered as [`NotOffered`] instead of prose, keeps the
//! possible prompt injections found in a skill (`DocBody::flags`) apart from the parser's
//! notes, and records each skill's Hermes `environments` in its head. The step decodes
//! every record with the frozen schema-2 types, decides every offer again from the heads
//! and the stored configuration (the same [`offer::decide`] the sync applies, which replaces
//! the per-platform hidden lists with the offer rules), rebuilds the postings and
//! statistics from the forward index so they match those decisions, and marks every
//! manifest entry for re-reading: the next sync parses each file again and records its
//! `environments`. Until then the index answers as before.

use super::schema_v2 as v2;
use crate::fields::FIELD_COUNT;
use crate::offer;
use crate::postings::Posting;
use crate::scan::FileStat;
use crate::skill::{Conditions, Origin};
use crate::store::records::*;
use crate::store::{decode, encode, ProfileTables, Result, Store};
use redb::{ReadableTable, WriteTransaction};
use std::collections::BTreeMap;

/// Brings every profile of `store` to schema 3 inside `txn`.
pub fn migrate(store: &Store, txn: &WriteTransaction) -> Result<()> {
    for profile in super::profiles(store, txn)? {
        migrate_profile(store, txn, &ProfileTables::new(&profile))?;
    }
    Ok(())
}

fn record(old: v2::DocHead, old_body: v2::DocBody) -> (DocHead, DocBody) {
    let (flags, notes) = old_body
        .notes
        .into_iter()
        .partition(|n| n.contains("possible prompt injection"));
    let c = old_body.conditions;
    let origin = match old_body.origin {
        v2::Origin::Local => Origin::Local,
        v2::Origin::External(i) => Origin::External(i),
        v2::Origin::Plugin(p) => Origin::Plugin(p),
    };
    // Until the next sync re-reads the file, the folder path is the category's and the
    // folder's (right for every skill below a category folder).
    let folder = if old_body.category == old.dir_name {
        old.dir_name.clone()
    } else {
        format!("{}/{}", old_body.category, old.dir_name)
    };
    let head = DocHead {
        id: old.id,
        name: old.name,
        dir_name: old.dir_name,
        folder,
        category: old_body.category.clone(),
        rank: old.rank,
        key: old.key,
        platforms: old.platforms,
        environments: Vec::new(),
        has_environments: false,
        conditions: Conditions {
            requires_toolsets: c.requires_toolsets,
            requires_tools: c.requires_tools,
            fallback_for_toolsets: c.fallback_for_toolsets,
            fallback_for_tools: c.fallback_for_tools,
            never_with_tools: false,
            session_platforms: Vec::new(),
        },
        lens: old.lens,
        inactive: None,
    };
    let body = DocBody {
        category: old_body.category,
        description: old_body.description,
        origin,
        platforms: old_body.platforms,
        triggers: old_body.triggers,
        tags: old_body.tags,
        notes,
        flags,
    };
    (head, body)
}

fn migrate_profile(store: &Store, txn: &WriteTransaction, tables: &ProfileTables) -> Result<()> {
    let mut state = txn.open_table(tables.state()).map_err(|e| store.err(e))?;
    let old_stats: v2::CorpusStats = match state.get("stats").map_err(|e| store.err(e))? {
        Some(v) => decode(store, v.value(), "schema-2 corpus stats")?,
        None => v2::CorpusStats::default(),
    };
    let old_config: v2::ConfigSnapshot = match state.get("config").map_err(|e| store.err(e))? {
        Some(v) => decode(store, v.value(), "schema-2 config snapshot")?,
        None => v2::ConfigSnapshot::default(),
    };
    let config = ConfigSnapshot {
        disabled: old_config.disabled,
        platform_disabled: old_config.platform_disabled,
    };

    let mut docs = txn.open_table(tables.docs()).map_err(|e| store.err(e))?;
    let mut records: BTreeMap<u32, (DocHead, DocBody)> = BTreeMap::new();
    for row in docs.iter().map_err(|e| store.err(e))? {
        let (k, v) = row.map_err(|e| store.err(e))?;
        let (h, b): (v2::DocHead, v2::DocBody) = decode(store, v.value(), "schema-2 document")?;
        records.insert(k.value(), record(h, b));
    }
    let heads: BTreeMap<u32, DocHead> = records
        .iter()
        .map(|(id, (h, _))| (*id, h.clone()))
        .collect();
    let decided = offer::decide(&heads, &config, &old_stats.os);

    let terms = txn.open_table(tables.terms()).map_err(|e| store.err(e))?;
    let mut lists: BTreeMap<String, Vec<Posting>> = BTreeMap::new();
    let mut offered = 0u32;
    let mut sum_lens = [0u64; FIELD_COUNT];
    for (id, (h, b)) in &mut records {
        h.inactive = decided.inactive.get(id).cloned();
        if let Some(new_id) = decided.ids.get(id) {
            h.id = new_id.clone();
        }
        if h.inactive.is_none() {
            offered += 1;
            for (sum, len) in sum_lens.iter_mut().zip(h.lens) {
                *sum += u64::from(len);
            }
            if let Some(v) = terms.get(*id).map_err(|e| store.err(e))? {
                let entries: Vec<v2::TermEntry> =
                    decode(store, v.value(), "schema-2 forward index")?;
                for (term, stats) in entries {
                    lists
                        .entry(term)
                        .or_default()
                        .push(Posting { doc: *id, stats });
                }
            }
        }
        // Schema 3's head (the layout schemas 3 to 7 share).
        let head = super::schema_v7::DocHead::of(h.clone());
        docs.insert(*id, encode(&(&head, &*b)).as_slice())
            .map_err(|e| store.err(e))?;
    }
    drop(docs);
    drop(terms);

    txn.delete_table(tables.postings())
        .map_err(|e| store.err(e))?;
    let mut table = txn
        .open_table(tables.postings())
        .map_err(|e| store.err(e))?;
    for (term, list) in lists {
        table
            .insert(term.as_str(), super::schema_v5::encode(&list).as_slice())
            .map_err(|e| store.err(e))?;
    }
    drop(table);

    let stats = v2::CorpusStats {
        docs: offered,
        sum_lens,
        next_doc: old_stats.next_doc,
        generation: old_stats.generation + 1,
        synced_at_ns: old_stats.synced_at_ns,
        os: old_stats.os,
    };
    for (key, value) in [
        ("stats", encode(&stats)),
        ("config", encode(&config)),
        (
            "offer_rules",
            encode(&super::schema_v7::OfferRules::of(decided.rules)),
        ),
    ] {
        state
            .insert(key, value.as_slice())
            .map_err(|e| store.err(e))?;
    }
    state.remove("platform_hidden").map_err(|e| store.err(e))?;
    drop(state);

    let mut manifest = txn
        .open_table(tables.manifest())
        .map_err(|e| store.err(e))?;
    let mut entries = Vec::new();
    for row in manifest.iter().map_err(|e| store.err(e))? {
        let (k, v) = row.map_err(|e| store.err(e))?;
        let old: v2::ManifestEntry = decode(store, v.value(), "schema-2 manifest entry")?;
        entries.push((k.value().to_owned(), old));
    }
    for (key, old) in entries {
        // An impossible hash and an untrusted stat: the next sync reads and parses it again.
        let entry = ManifestEntry {
            stat: FileStat {
                mtime_ns: old.stat.mtime_ns,
                ctime_ns: old.stat.ctime_ns,
                size: old.stat.size,
                ino: old.stat.ino,
            },
            hash: [0; 32],
            verified_at_ns: 0,
            state: match old.state {
                v2::EntryState::Indexed(d) => EntryState::Indexed(d),
                v2::EntryState::Skipped(r) => EntryState::Skipped(r),
            },
        };
        manifest
            .insert(key.as_str(), encode(&entry).as_slice())
            .map_err(|e| store.err(e))?;
    }
    Ok(())
}
