//! Schema migrations: each step brings an index file from one schema version to the next.
//!
//! This folder is the top-level `migrations/` and is compiled into the crate (see
//! `src/lib.rs`). Every step is a function from version N to N + 1 that runs inside one
//! write transaction, so a file is either wholly at the old version or wholly at the new
//! one. Several processes may open an old file at once (gateways restarting after an
//! upgrade): each reads the version again inside its write transaction, so a step runs
//! once, by whichever process takes the lock first, and the others find nothing to do.
//!
//! A step decodes the records of its source version with the types frozen beside it
//! (`schema_v2.rs`, whose forward-index entry schema 3 kept), never with today's types: postcard is not self-describing, so a
//! change to a record in `src/store/records.rs` would otherwise silently misread every
//! older file. Each step is tested on a fixture file written by the older version
//! (`tests/fixtures/schema-vN.redb`, see `tests/backward_compatibility.rs`).
//!
//! When the layout changes: bump `store::SCHEMA_VERSION`; copy today's record types into
//! `schema_vN.rs` (N the version being left) and make the step that writes version N
//! encode with them; add `vN_to_vN1.rs` and its `migrate` to [`STEPS`]; keep the old
//! fixture, write a new one, and update `docs/store.md`.

use crate::failpoint;
use crate::store::{Result, Store, StoreError, META, SCHEMA_VERSION};

pub mod schema_v2;
pub mod schema_v5;
pub mod schema_v7;
pub mod v1_to_v2;
pub mod v2_to_v3;
pub mod v3_to_v4;
pub mod v4_to_v5;
pub mod v5_to_v6;
pub mod v6_to_v7;
pub mod v7_to_v8;
pub mod v8_to_v9;

/// A migration step from version `from` to `from + 1`.
pub type Step = fn(&Store, &redb::WriteTransaction) -> Result<()>;

/// The steps, indexed by the version they start from (`STEPS[0]` starts from 1).
pub const STEPS: &[Step] = &[
    v1_to_v2::migrate,
    v2_to_v3::migrate,
    v3_to_v4::migrate,
    v4_to_v5::migrate,
    v5_to_v6::migrate,
    v6_to_v7::migrate,
    v7_to_v8::migrate,
    v8_to_v9::migrate,
];

/// Brings `store`, found at schema `found`, up to [`SCHEMA_VERSION`], one committed step
/// at a time. The version is read again inside each step's write transaction: another
/// process may have migrated the file since `found` was read.
pub fn upgrade(store: &Store, found: u64) -> Result<()> {
    if found == 0 || found > SCHEMA_VERSION {
        return Err(StoreError::Migration {
            path: store.path().to_owned(),
            from: found,
            detail: format!("no migration path from schema {found} to {SCHEMA_VERSION}"),
        });
    }
    loop {
        failpoint::point(failpoint::names::MIGRATE_BEFORE_WRITE).map_err(|e| io(store, e))?;
        let txn = store.write()?;
        let version = {
            let meta = txn.open_table(META).map_err(|e| store.err(e))?;
            store.version_in(&meta)?.unwrap_or(found)
        };
        if version >= SCHEMA_VERSION {
            txn.abort().map_err(|e| store.err(e))?;
            return Ok(());
        }
        let step = (version as usize)
            .checked_sub(1)
            .and_then(|i| STEPS.get(i))
            .ok_or_else(|| StoreError::Migration {
                path: store.path().to_owned(),
                from: version,
                detail: "missing migration step".into(),
            })?;
        step(store, &txn)?;
        store.set_schema_version(&txn, version + 1)?;
        failpoint::point(failpoint::names::MIGRATE_BEFORE_COMMIT).map_err(|e| io(store, e))?;
        store.commit(txn)?;
    }
}

/// The names of the profiles in `store` (the `skillidx.profiles` keys, the same in every
/// schema), for a step to migrate each.
pub(crate) fn profiles(store: &Store, txn: &redb::WriteTransaction) -> Result<Vec<String>> {
    use redb::ReadableTable;
    let table = txn
        .open_table(crate::store::PROFILES)
        .map_err(|e| store.err(e))?;
    let mut names = Vec::new();
    for row in table.iter().map_err(|e| store.err(e))? {
        names.push(row.map_err(|e| store.err(e))?.0.value().to_owned());
    }
    Ok(names)
}

fn io(store: &Store, source: std::io::Error) -> StoreError {
    StoreError::Io {
        path: store.path().to_owned(),
        source,
    }
}
