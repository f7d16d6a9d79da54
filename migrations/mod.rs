//! Schema migrations: each step brings an index file from one schema version to the next.
//!
//! This file lives in the top-level `migrations/` folder and is compiled into the crate
//! (see `src/lib.rs`). Every step is a function from version N to N + 1 that runs inside
//! one write transaction, so a file is either wholly at the old version or wholly at the
//! new one. Each step is tested on a fixture file written by the older version
//! (`tests/fixtures/schema-vN.redb`, see `tests/backward_compatibility.rs`).
//!
//! When the layout changes: bump `store::SCHEMA_VERSION`, add a module `vN_to_vN1.rs` here
//! and its `migrate` to [`STEPS`], keep the old fixture, write a new one, and update
//! `docs/store.md`.

use crate::store::{Result, Store, StoreError, SCHEMA_VERSION};

pub mod v1_to_v2;

/// A migration step from version `from` to `from + 1`.
pub type Step = fn(&Store, &redb::WriteTransaction) -> Result<()>;

/// The steps, indexed by the version they start from (`STEPS[0]` starts from 1).
pub const STEPS: &[Step] = &[v1_to_v2::migrate];

/// Brings `store`, found at schema `found`, up to [`SCHEMA_VERSION`], one committed step
/// at a time.
pub fn upgrade(store: &Store, found: u64) -> Result<()> {
    if found == 0 || found > SCHEMA_VERSION {
        return Err(StoreError::Migration {
            path: store.path().to_owned(),
            from: found,
            detail: format!("no migration path from schema {found} to {SCHEMA_VERSION}"),
        });
    }
    for version in found..SCHEMA_VERSION {
        let step = STEPS
            .get((version - 1) as usize)
            .ok_or_else(|| StoreError::Migration {
                path: store.path().to_owned(),
                from: version,
                detail: "missing migration step".into(),
            })?;
        let txn = store.write()?;
        step(store, &txn)?;
        store.set_schema_version(&txn, version + 1)?;
        store.commit(txn)?;
    }
    Ok(())
}
