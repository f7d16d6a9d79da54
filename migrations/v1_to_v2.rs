//! Schema 1 → 2: the default ranking's analyzer.
//!
//! Schema 1 indexed every field with the plain tokenizer. Schema 2 indexes the name,
//! description, keywords, category and body fields with the default analyzer (identifiers
//! split, English stemmed); the seed field is unchanged. The step re-derives each document's
//! analysed terms from its stored forward index (the plain tokens, already lowercase, so
//! `camelCase` splits cannot be recovered), rebuilds the postings, lengths and statistics,
//! and marks every manifest entry for re-reading, so the next sync re-parses each file and
//! replaces the approximation with the exact analysis. Until then the index answers, with
//! nearly the new terms: it is never empty.

use super::schema_v2::{
    CorpusStats, DocBody, DocHead, FieldStats, ManifestEntry, TermEntry, FIELD_COUNT,
};
use crate::fields::Field;
use crate::postings::Posting;
use crate::store::{decode, encode, ProfileTables, Result, Store};
use crate::tokenize::analyze;
use redb::{ReadableTable, WriteTransaction};
use std::collections::BTreeMap;

/// Re-analyses every profile of `store` inside `txn`.
pub fn migrate(store: &Store, txn: &WriteTransaction) -> Result<()> {
    for profile in super::profiles(store, txn)? {
        migrate_profile(store, txn, &ProfileTables::new(&profile))?;
    }
    Ok(())
}

/// The schema-2 forward index of a document from its schema-1 one, and the field lengths.
pub fn reanalyze(old: &[TermEntry]) -> (Vec<TermEntry>, [u32; FIELD_COUNT]) {
    let mut tfs: BTreeMap<String, [u32; FIELD_COUNT]> = BTreeMap::new();
    let mut lens = [0u32; FIELD_COUNT];
    for (term, stats) in old {
        for f in Field::ALL {
            let (tf, len) = stats[f as usize];
            if tf == 0 {
                continue;
            }
            if f == Field::Seed {
                tfs.entry(term.clone()).or_default()[f as usize] += tf;
                lens[f as usize] = len;
                continue;
            }
            for part in analyze(term) {
                tfs.entry(part).or_default()[f as usize] += tf;
                lens[f as usize] += tf;
            }
        }
    }
    let terms = tfs
        .into_iter()
        .map(|(term, counts)| {
            let mut stats: FieldStats = [(0, 0); FIELD_COUNT];
            for f in 0..FIELD_COUNT {
                if counts[f] > 0 {
                    stats[f] = (counts[f], lens[f]);
                }
            }
            (term, stats)
        })
        .collect();
    (terms, lens)
}

fn migrate_profile(store: &Store, txn: &WriteTransaction, tables: &ProfileTables) -> Result<()> {
    let mut docs = txn.open_table(tables.docs()).map_err(|e| store.err(e))?;
    let mut terms = txn.open_table(tables.terms()).map_err(|e| store.err(e))?;
    let mut postings: BTreeMap<String, Vec<Posting>> = BTreeMap::new();
    let mut sum_lens = [0u64; FIELD_COUNT];
    let mut offered = 0u32;
    let ids: Vec<u32> = {
        let mut ids = Vec::new();
        for row in docs.iter().map_err(|e| store.err(e))? {
            ids.push(row.map_err(|e| store.err(e))?.0.value());
        }
        ids
    };
    for id in ids {
        let Some(bytes) = docs
            .get(id)
            .map_err(|e| store.err(e))?
            .map(|v| v.value().to_vec())
        else {
            continue;
        };
        let (mut head, body): (DocHead, DocBody) = decode(store, &bytes, "document")?;
        let old: Vec<TermEntry> = match terms.get(id).map_err(|e| store.err(e))? {
            Some(v) => decode(store, v.value(), "forward index")?,
            None => Vec::new(),
        };
        let (new, lens) = reanalyze(&old);
        head.lens = lens;
        if head.inactive.is_none() {
            offered += 1;
            for (sum, len) in sum_lens.iter_mut().zip(lens) {
                *sum += u64::from(len);
            }
            for (term, stats) in &new {
                postings.entry(term.clone()).or_default().push(Posting {
                    doc: id,
                    stats: *stats,
                });
            }
        }
        docs.insert(id, encode(&(&head, &body)).as_slice())
            .map_err(|e| store.err(e))?;
        terms
            .insert(id, encode(&new).as_slice())
            .map_err(|e| store.err(e))?;
    }
    drop(docs);
    drop(terms);
    txn.delete_table(tables.postings())
        .map_err(|e| store.err(e))?;
    let mut table = txn
        .open_table(tables.postings())
        .map_err(|e| store.err(e))?;
    for (term, list) in postings {
        table
            .insert(term.as_str(), super::schema_v5::encode(&list).as_slice())
            .map_err(|e| store.err(e))?;
    }
    drop(table);

    let mut state = txn.open_table(tables.state()).map_err(|e| store.err(e))?;
    let mut stats: CorpusStats = match state.get("stats").map_err(|e| store.err(e))? {
        Some(v) => decode(store, v.value(), "corpus stats")?,
        None => CorpusStats::default(),
    };
    stats.docs = offered;
    stats.sum_lens = sum_lens;
    stats.generation += 1;
    state
        .insert("stats", encode(&stats).as_slice())
        .map_err(|e| store.err(e))?;
    drop(state);

    let mut manifest = txn
        .open_table(tables.manifest())
        .map_err(|e| store.err(e))?;
    let mut entries = Vec::new();
    for row in manifest.iter().map_err(|e| store.err(e))? {
        let (k, v) = row.map_err(|e| store.err(e))?;
        entries.push((
            k.value().to_owned(),
            decode::<ManifestEntry>(store, v.value(), "manifest entry")?,
        ));
    }
    for (key, mut entry) in entries {
        // An impossible hash and an untrusted stat: the next sync reads and parses it again.
        entry.hash = [0; 32];
        entry.verified_at_ns = 0;
        manifest
            .insert(key.as_str(), encode(&entry).as_slice())
            .map_err(|e| store.err(e))?;
    }
    Ok(())
}
