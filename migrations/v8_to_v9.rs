//! Schema 8 → 9: each field's document count in the statistics.
//!
//! The default ranking normalises a field's length by its average over the documents that
//! have the field (`CorpusStats::field_docs`), as Lucene does, not over every document: in a
//! home of 90,000 hub skills without a body, the average body was a few terms long and every
//! real body hundreds of times "too long". The step counts, per profile, the offered
//! documents with each field from their heads' lengths, and writes the statistics in
//! schema 9's layout (decoding schema 8's with the frozen `schema_v2::CorpusStats`). The
//! reading rules moved with it (`sync::RULES_VERSION` 5: a body's first heading that only
//! repeats the name is no longer body text), so the next sync reads every file again; until
//! then the documents are those of the last sync, averaged the new way.

use super::schema_v2 as v2;
use crate::store::records::{CorpusStats, DocBody, DocHead};
use crate::store::{decode, encode, ProfileTables, Result, Store};
use redb::{ReadableTable, WriteTransaction};

/// Brings every profile of `store` to schema 9 inside `txn`.
pub fn migrate(store: &Store, txn: &WriteTransaction) -> Result<()> {
    for profile in super::profiles(store, txn)? {
        let tables = ProfileTables::new(&profile);
        let mut state = txn.open_table(tables.state()).map_err(|e| store.err(e))?;
        let old: v2::CorpusStats = match state.get("stats").map_err(|e| store.err(e))? {
            Some(v) => decode(store, v.value(), "schema-8 corpus stats")?,
            None => continue,
        };
        let mut field_docs = [0u32; crate::fields::FIELD_COUNT];
        let docs = txn.open_table(tables.docs()).map_err(|e| store.err(e))?;
        for row in docs.iter().map_err(|e| store.err(e))? {
            let (_, v) = row.map_err(|e| store.err(e))?;
            let (head, _): (DocHead, DocBody) = decode(store, v.value(), "document")?;
            if head.inactive.is_none() {
                for (with, &len) in field_docs.iter_mut().zip(&head.lens) {
                    *with += u32::from(len > 0);
                }
            }
        }
        let stats = CorpusStats {
            docs: old.docs,
            sum_lens: old.sum_lens,
            field_docs,
            next_doc: old.next_doc,
            generation: old.generation,
            synced_at_ns: old.synced_at_ns,
            os: old.os,
        };
        state
            .insert("stats", encode(&stats).as_slice())
            .map_err(|e| store.err(e))?;
    }
    Ok(())
}
