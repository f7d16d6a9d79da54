//! Index files written by earlier schema versions still open and answer, after the
//! migrations in `migrations/` bring them up to date.
//!
//! `tests/fixtures/schema-v1.redb` was written by skillidx 0.1.0 (schema 1) from
//! `examples/hermes-home` with `--all-profiles`. Keep every old fixture when the schema
//! changes, and add one per new version.

mod common;
use common::*;
use skillidx::bm25::SearchOptions;
use skillidx::home::Root;
use skillidx::Index;

fn fixture_copy(version: u32) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("index.redb");
    std::fs::copy(
        repo().join(format!("tests/fixtures/schema-v{version}.redb")),
        &db,
    )
    .unwrap();
    (dir, db)
}

#[test]
fn schema_1_opens_and_answers() {
    let (_dir, db) = fixture_copy(1);
    let index = Index::open(&db).unwrap();
    let hits = index
        .search(
            "default",
            "convert a PDF file to Markdown",
            &SearchOptions::default(),
        )
        .unwrap();
    assert_eq!(hits[0].id, "pdf-to-markdown");
    let hits = index
        .search(
            "work",
            "write a postmortem for the outage",
            &SearchOptions::default(),
        )
        .unwrap();
    assert_eq!(hits[0].id, "incident-postmortem");
}

#[test]
fn schema_1_syncs_incrementally_against_the_same_home() {
    let (_dir, db) = fixture_copy(1);
    let index = Index::open_for_sync(&db).unwrap();
    // The fixture's paths are relative to the repository root, which is where cargo runs tests.
    let root = Root::from_home(std::path::Path::new("examples/hermes-home"));
    let report = index
        .sync(&root.profile("default").unwrap(), &Default::default())
        .unwrap();
    assert_eq!(
        (report.added, report.updated, report.removed),
        (0, 0, 0),
        "{report:#?}"
    );
    assert!(report.unchanged > 60);
}
