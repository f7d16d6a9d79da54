//! Schema 4 → 5: the `words` table.
//!
//! Proximity needs the word order of a candidate's name and description, and used to
//! analyse them again at every query (45 % of a new process's first answer at 2,800 skills).
//! Schema 5 stores them analysed, per document ([`crate::analyze::word_order`]). The step
//! fills the table from the document records, which schema 5 leaves as they are (schemas 3
//! to 7 share `DocHead`, frozen in `schema_v7`, and `DocBody`), so no file is read again and every answer stays the
//! same.

use super::schema_v7::DocHead;
use crate::analyze::word_order;
use crate::store::records::DocBody;
use crate::store::{decode, encode, ProfileTables, Result, Store};
use redb::{ReadableTable, WriteTransaction};

/// Brings every profile of `store` to schema 5 inside `txn`.
pub fn migrate(store: &Store, txn: &WriteTransaction) -> Result<()> {
    for profile in super::profiles(store, txn)? {
        let tables = ProfileTables::new(&profile);
        let docs = txn.open_table(tables.docs()).map_err(|e| store.err(e))?;
        let mut words = txn.open_table(tables.words()).map_err(|e| store.err(e))?;
        for row in docs.iter().map_err(|e| store.err(e))? {
            let (k, v) = row.map_err(|e| store.err(e))?;
            let (head, body): (DocHead, DocBody) = decode(store, v.value(), "schema-4 document")?;
            let row = encode(&word_order(&head.name, &body.description));
            words
                .insert(k.value(), row.as_slice())
                .map_err(|e| store.err(e))?;
        }
    }
    Ok(())
}
