//! Schema 6 → 7: the `seed` table, each postings list's projection onto the seed field.
//!
//! The seed ranking scores the seed field alone. On schema 6 it walked every entry of a
//! term's list and passed over those without the field: at 2.8k real skills, whose bodies
//! hold the common words, seven in ten. Schema 7 keeps beside every list its projection
//! (`postings::Projection`): the entries with the seed field, with that field's statistics
//! only, in the same codec. The step writes the projection of every list; the postings
//! themselves are unchanged.
//!
//! It reads the lists with today's codec (`crate::postings`), whose layout schemas 6 and 7
//! share. A later change to that layout must freeze it for this step, as `schema_v5.rs`
//! froze schema 5's for the step to 6.

use crate::fields::Field;
use crate::postings::Projection;
use crate::store::{self, ProfileTables, Result, Store};
use redb::{ReadableTable, WriteTransaction};

/// Brings every profile of `store` to schema 7 inside `txn`.
pub fn migrate(store: &Store, txn: &WriteTransaction) -> Result<()> {
    for profile in super::profiles(store, txn)? {
        let tables = ProfileTables::new(&profile);
        let postings = txn
            .open_table(tables.postings())
            .map_err(|e| store.err(e))?;
        let mut rows = Vec::new();
        for row in postings.iter().map_err(|e| store.err(e))? {
            let (term, bytes) = row.map_err(|e| store.err(e))?;
            let projection = Projection::of_bytes(Field::Seed, bytes.value())
                .map_err(|e| store.bad_record(format!("postings of {:?}: {e}", term.value())))?;
            if let Some(projection) = projection {
                rows.push((term.value().to_owned(), projection));
            }
        }
        let mut seed = txn.open_table(tables.seed()).map_err(|e| store.err(e))?;
        let rows = rows.iter().map(|(t, p)| (t.as_str(), p.as_slice()));
        store::insert_sorted(&mut seed, rows).map_err(|e| store.err(e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::fields::{Field, FIELD_COUNT};
    use crate::postings::{self, Posting, Projection};

    #[test]
    fn the_projection_keeps_the_entries_with_the_field_and_only_its_statistics() {
        let seed = Field::Seed as usize;
        let list: Vec<Posting> = (0..600u32)
            .map(|d| {
                let mut stats = [(0, 0); FIELD_COUNT];
                stats[d as usize % FIELD_COUNT] = (1 + d % 3, 10 + d % 7);
                stats[(d as usize + 1) % FIELD_COUNT] = (2, 20);
                Posting {
                    doc: 3 * d + 1,
                    stats,
                }
            })
            .collect();
        let want: Vec<Posting> = list
            .iter()
            .filter(|p| p.stats[seed].0 > 0)
            .map(|p| {
                let mut stats = [(0, 0); FIELD_COUNT];
                stats[seed] = p.stats[seed];
                Posting { doc: p.doc, stats }
            })
            .collect();
        assert!(
            want.len() > postings::BLOCK,
            "the projection has a directory"
        );
        let bytes = postings::encode(&list);
        let projected = Projection::of_bytes(Field::Seed, &bytes).unwrap().unwrap();
        assert_eq!(postings::decode(&projected).unwrap(), want);
        assert_eq!(projected, postings::encode(&want));
        assert_eq!(
            Projection::of_postings(Field::Seed, &list),
            Some(projected.clone())
        );
        let mut builder = postings::Builder::default();
        for p in &list {
            builder.push(p.doc, &p.stats);
        }
        assert_eq!(
            Projection::of_builder(Field::Seed, &builder),
            Some(projected)
        );
        // Out of order, as a builder can be given entries: the same projection.
        let mut unsorted = postings::Builder::default();
        for p in list.iter().rev() {
            unsorted.push(p.doc, &p.stats);
        }
        assert_eq!(
            Projection::of_builder(Field::Seed, &unsorted),
            Projection::of_postings(Field::Seed, &list)
        );
        // No entry with the field: no row.
        let name_only: Vec<Posting> = list
            .iter()
            .filter(|p| p.stats[seed].0 == 0)
            .cloned()
            .collect();
        let bytes = postings::encode(&name_only);
        assert_eq!(Projection::of_bytes(Field::Seed, &bytes).unwrap(), None);
        assert!(Projection::of_bytes(Field::Seed, &bytes[..bytes.len() - 1]).is_err());
    }
}
