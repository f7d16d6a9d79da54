//! Schema 6 → 7: the `seed` table, each postings list's projection onto the seed field.
//!
//! The seed ranking scores the seed field alone. On schema 6 it walked every entry of a
//! term's list and passed over those without the field: at 2.8k real skills, whose bodies
//! hold the common words, seven in ten. Schema 7 keeps beside every list its projection
//! (`postings::Projection`): the entries with the seed field, with that field's statistics
//! only, in the same codec. The step writes the projection of every list; the postings
//! themselves are unchanged.
//!
//! It stamps each profile's projections with its generation (`SEED_GENERATION`), so that a
//! build of schema 6 committing to the file afterwards (it checked the schema when it
//! opened the file) leaves them visibly behind instead of silently wrong.
//!
//! It reads the lists with today's type (`crate::postings`), whose layout schemas 6 and 7
//! share (a later change must freeze it for this step, as `schema_v5.rs` froze schema 5's
//! lists for the step to 6), and the statistics with schema 2's (`schema_v2::CorpusStats`,
//! the layout of schemas 2 to 8).

use super::schema_v2::CorpusStats;
use crate::store::records::SEED_GENERATION;
use crate::store::{self, decode, encode, ProfileTables, Result, Store};
use redb::{ReadableTable, WriteTransaction};

/// Brings every profile of `store` to schema 7 inside `txn`.
pub fn migrate(store: &Store, txn: &WriteTransaction) -> Result<()> {
    for profile in super::profiles(store, txn)? {
        let tables = ProfileTables::new(&profile);
        store::project_seed(store, txn, &tables)?;
        // The projections are in step with the lists as committed: stamp them so.
        let mut state = txn.open_table(tables.state()).map_err(|e| store.err(e))?;
        let stats: Option<CorpusStats> = match state.get("stats").map_err(|e| store.err(e))? {
            Some(v) => Some(decode(store, v.value(), "corpus stats")?),
            None => None,
        };
        if let Some(stats) = stats {
            state
                .insert(SEED_GENERATION, encode(&stats.generation).as_slice())
                .map_err(|e| store.err(e))?;
        }
    }
    Ok(())
}
