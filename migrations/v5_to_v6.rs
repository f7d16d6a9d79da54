//! Schema 5 → 6: a block directory in every long postings list.
//!
//! A search walks only the postings that can change its top k (`search::maxscore`), and to
//! skip the others it needs, per block of [`postings::BLOCK`] entries, where the block ends
//! and what bounds its statistics. Schema 6 writes that directory between a list's header
//! and its entries (see `crate::postings`); the header and the entries are as before. The
//! step re-encodes every list from its schema-5 form, read with the frozen layout of
//! `schema_v5.rs`.

use crate::postings;
use crate::store::{ProfileTables, Result, Store};
use redb::{ReadableTable, WriteTransaction};

/// Brings every profile of `store` to schema 6 inside `txn`.
pub fn migrate(store: &Store, txn: &WriteTransaction) -> Result<()> {
    for profile in super::profiles(store, txn)? {
        let tables = ProfileTables::new(&profile);
        let mut table = txn
            .open_table(tables.postings())
            .map_err(|e| store.err(e))?;
        let mut lists = Vec::new();
        for row in table.iter().map_err(|e| store.err(e))? {
            let (term, bytes) = row.map_err(|e| store.err(e))?;
            let term = term.value().to_owned();
            let list = reencode(bytes.value()).ok_or_else(|| {
                store.bad_record(format!("schema-5 postings of {term:?} are malformed"))
            })?;
            lists.push((term, list));
        }
        for (term, list) in lists {
            table
                .insert(term.as_str(), list.as_slice())
                .map_err(|e| store.err(e))?;
        }
    }
    Ok(())
}

/// A schema-5 list in today's layout; `None` if it is not a valid schema-5 list.
fn reencode(bytes: &[u8]) -> Option<Vec<u8>> {
    Some(postings::encode(&super::schema_v5::decode(bytes)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_5_list_becomes_the_same_list_with_its_directory() {
        let mut stats = [(0, 0); crate::fields::FIELD_COUNT];
        let list: Vec<postings::Posting> = (0..300u32)
            .map(|d| {
                stats[d as usize % crate::fields::FIELD_COUNT] = (1 + d % 3, 10 + d % 7);
                postings::Posting {
                    doc: 3 * d + 1,
                    stats,
                }
            })
            .collect();
        let old = super::super::schema_v5::encode(&list);
        // Schema 5 wrote today's header and entries with nothing between them.
        let today = postings::encode(&list);
        let header = postings::Header::read(&today).unwrap();
        assert!(old.ends_with(&today[header.body..]));
        assert_eq!(super::super::schema_v5::decode(&old).unwrap(), list);
        assert_eq!(reencode(&old).unwrap(), today);
        assert!(today.len() > old.len(), "the directory is written");
        assert_eq!(reencode(&old[..old.len() - 1]), None);
    }
}
