//! Schema 7 → 8: `session_platforms` in the tool conditions.
//!
//! Hermes 0.21 hides a skill whose `metadata.hermes.session_platforms` does not name the
//! session's messaging platform. Schema 8 stores that list in `skill::Conditions`, inside
//! each document head and each offer rule. The step re-encodes every head and the offer
//! rules with an empty list (decoding them with the frozen `schema_v7` types); the reading
//! rules moved with it (`sync::RULES_VERSION` 4), so the next sync reads every file again
//! and records the lists. Until then every answer stays the same.

use super::schema_v7 as v7;
use crate::store::records::DocBody;
use crate::store::{decode, encode, ProfileTables, Result, Store};
use redb::{ReadableTable, WriteTransaction};

/// Brings every profile of `store` to schema 8 inside `txn`.
pub fn migrate(store: &Store, txn: &WriteTransaction) -> Result<()> {
    for profile in super::profiles(store, txn)? {
        let tables = ProfileTables::new(&profile);
        let mut docs = txn.open_table(tables.docs()).map_err(|e| store.err(e))?;
        let mut rows = Vec::new();
        for row in docs.iter().map_err(|e| store.err(e))? {
            let (k, v) = row.map_err(|e| store.err(e))?;
            let (head, body): (v7::DocHead, DocBody) =
                decode(store, v.value(), "schema-7 document")?;
            rows.push((k.value(), encode(&(head.upgrade(), body))));
        }
        for (id, bytes) in rows {
            docs.insert(id, bytes.as_slice())
                .map_err(|e| store.err(e))?;
        }
        let mut state = txn.open_table(tables.state()).map_err(|e| store.err(e))?;
        let rules = match state.get("offer_rules").map_err(|e| store.err(e))? {
            Some(v) => Some(decode::<v7::OfferRules>(
                store,
                v.value(),
                "schema-7 offer rules",
            )?),
            None => None,
        };
        if let Some(rules) = rules {
            state
                .insert("offer_rules", encode(&rules.upgrade()).as_slice())
                .map_err(|e| store.err(e))?;
        }
    }
    Ok(())
}
