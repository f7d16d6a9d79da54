//! Schema 3 → 4: the compact forward index.
//!
//! Schemas 1–3 stored a document's forward index as a postcard `Vec<(term, [(tf, len); 6])>`:
//! every field of every term, lengths included, about 4.7 KB per real skill and most of the
//! file. Schema 4 stores it with [`crate::forward`] (front-coded terms, only the fields a
//! term occurs in, no lengths: they are the document's). The step re-encodes every row;
//! nothing else changes, so the index answers exactly as before and no file is read again.

use super::schema_v2 as v3;
use crate::forward;
use crate::store::{decode, ProfileTables, Result, Store};
use redb::{ReadableTable, WriteTransaction};

/// Brings every profile of `store` to schema 4 inside `txn`.
pub fn migrate(store: &Store, txn: &WriteTransaction) -> Result<()> {
    for profile in super::profiles(store, txn)? {
        let tables = ProfileTables::new(&profile);
        let mut table = txn.open_table(tables.terms()).map_err(|e| store.err(e))?;
        let mut rows: Vec<(u32, Vec<u8>)> = Vec::new();
        for row in table.iter().map_err(|e| store.err(e))? {
            let (k, v) = row.map_err(|e| store.err(e))?;
            let mut entries: Vec<v3::TermEntry> =
                decode(store, v.value(), "schema-3 forward index")?;
            // Sorted already by every writer; sorting again costs little and keeps the
            // front coding valid whatever wrote the row.
            entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            entries.dedup_by(|a, b| a.0 == b.0);
            rows.push((k.value(), forward::encode(&entries)));
        }
        for (doc, bytes) in rows {
            table
                .insert(doc, bytes.as_slice())
                .map_err(|e| store.err(e))?;
        }
    }
    Ok(())
}
