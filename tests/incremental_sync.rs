//! A sync touches only what changed, writes nothing when nothing did, and always ends in
//! the same index a clean build would produce.

mod common;
use common::*;
use skillidx::sync::SyncOptions;
use std::time::Duration;

fn old_enough() {
    // Files modified within two seconds of a sync are hashed again by the next one (their
    // stat could hide a change); age them so that the stat alone is trusted.
    std::thread::sleep(Duration::from_millis(2100));
}

#[test]
fn first_sync_adds_then_nothing_changed_writes_nothing() {
    let h = Home::new();
    h.skill(
        "devops/docker",
        "docker-basics",
        "Write Dockerfiles and run containers",
    );
    h.skill(
        "data/postgres",
        "query-postgres",
        "Query a PostgreSQL database with psql",
    );
    let r = h.sync();
    assert_eq!((r.added, r.updated, r.removed, r.unchanged), (2, 0, 0, 0));
    assert!(r.committed);
    old_enough();
    let r = h.sync();
    assert!(
        r.committed,
        "the first resync still records that the files are old enough"
    );
    let before = std::fs::read(h.db()).unwrap();
    let r = h.sync();
    assert_eq!((r.added, r.updated, r.removed, r.unchanged), (0, 0, 0, 2));
    assert_eq!((r.hashed, r.parsed), (0, 0));
    assert!(!r.committed);
    assert!(
        std::fs::read(h.db()).unwrap() == before,
        "a sync that finds nothing changed writes nothing"
    );
}

#[test]
fn one_edit_rehashes_and_reparses_only_that_skill() {
    let h = Home::new();
    for i in 0..20 {
        h.skill(
            &format!("cat/s{i}"),
            &format!("skill-{i}"),
            &format!("Skill number {i} about topic{i}"),
        );
    }
    h.sync();
    old_enough();
    h.sync();
    h.skill("cat/s7", "skill-7", "Now about kubernetes deployments");
    let r = h.sync();
    assert_eq!((r.added, r.updated, r.removed, r.unchanged), (0, 1, 0, 19));
    assert_eq!((r.hashed, r.parsed), (1, 1));
    assert_eq!(h.search("kubernetes"), ["skill-7"]);
    assert!(h.search("topic7").is_empty());
}

#[test]
fn touching_a_file_hashes_it_but_does_not_reparse() {
    let h = Home::new();
    let p = h.skill("a/one", "one", "The first skill");
    h.sync();
    old_enough();
    h.sync();
    let bytes = std::fs::read(&p).unwrap();
    std::fs::write(&p, bytes).unwrap();
    let r = h.sync();
    assert_eq!((r.hashed, r.parsed, r.updated, r.unchanged), (1, 0, 0, 1));
}

#[test]
fn removed_skills_leave_the_index() {
    let h = Home::new();
    h.skill("a/one", "one", "alpha skill");
    let p = h.skill("a/two", "two", "beta skill");
    h.sync();
    std::fs::remove_dir_all(p.parent().unwrap()).unwrap();
    let r = h.sync();
    assert_eq!(r.removed, 1);
    assert!(h.search("beta").is_empty());
    assert_eq!(h.search("alpha"), ["one"]);
    let stats = skillidx::Index::open(&h.db())
        .unwrap()
        .stats("default")
        .unwrap();
    assert_eq!(stats.active, 1);
}

#[test]
fn incremental_syncs_end_where_a_clean_build_does() {
    let h = Home::new();
    for i in 0..30 {
        h.skill(
            &format!("c{}/s{i}", i % 4),
            &format!("s{i}"),
            &format!("word{} common text {}", i % 7, i),
        );
    }
    h.sync();
    for i in (0..30).step_by(3) {
        h.skill(
            &format!("c{}/s{i}", i % 4),
            &format!("s{i}"),
            &format!("changed word{} text", i % 5),
        );
    }
    for i in (1..30).step_by(7) {
        std::fs::remove_dir_all(h.path().join(format!("skills/c{}/s{i}", i % 4))).unwrap();
    }
    h.skill("new/fresh", "fresh", "a new skill with common text");
    h.sync();
    let incremental = digest(&h.db(), "default");
    let r = h.sync_with(&SyncOptions {
        rebuild: true,
        ..Default::default()
    });
    assert!(r.committed);
    assert_eq!(digest(&h.db(), "default"), incremental);
    for q in ["common text", "word3", "changed", "fresh skill"] {
        let clean = clean_copy(&h);
        // Paths differ between the homes; compare ids and scores.
        assert_eq!(
            clean.search_with(q, &Default::default()),
            h.search_with(q, &Default::default()),
            "query {q}"
        );
    }
}

/// The seed ranking reads each list's projection onto the seed field (the `seed` table).
/// A word that leaves every skill's seed text but stays in a body keeps its postings list
/// and loses its projection; one that comes back to a seed text gets it again.
#[test]
fn a_word_leaving_every_seed_text_leaves_the_seed_table_and_comes_back() {
    let h = Home::new();
    let with_body = |rel: &str, name: &str, description: &str, body: &str| {
        h.write(
            rel,
            &format!("---\nname: {name}\ndescription: {description}\n---\n# {name}\n\n{body}\n"),
        );
    };
    with_body("a/one", "one", "alpha tools", "Run gamma first.");
    with_body("a/two", "two", "gamma tools", "Nothing else.");
    h.sync();
    let seed_row = |term: &str| -> bool {
        let index = skillidx::Index::open(&h.db()).unwrap();
        let txn = index.store().read().unwrap();
        let t = skillidx::store::ProfileTables::new("default");
        let table = txn.open_table(t.seed()).unwrap();
        table.get(term).map(|row| row.is_some()).unwrap()
    };
    assert!(seed_row("gamma"));
    let seed = skillidx::search::SearchOptions {
        ranking: skillidx::search::Ranking::Seed,
        ..Default::default()
    };
    let ids = |opts: &skillidx::search::SearchOptions| -> Vec<String> {
        h.search_with("gamma", opts)
            .into_iter()
            .map(|(id, _)| id)
            .collect()
    };
    assert_eq!(ids(&seed), ["two"]);

    old_enough();
    with_body("a/two", "two", "delta tools", "Nothing else.");
    h.sync();
    // "gamma" is still in one's body (its postings list stays) but in no seed text.
    assert!(!seed_row("gamma"));
    assert!(ids(&seed).is_empty());
    assert_eq!(ids(&Default::default()), ["one"]);
    let incremental = full_digest(&h.db(), "default");
    h.sync_with(&SyncOptions {
        rebuild: true,
        ..Default::default()
    });
    assert_eq!(full_digest(&h.db(), "default"), incremental);

    old_enough();
    with_body("a/two", "two", "gamma again", "Nothing else.");
    h.sync();
    assert!(seed_row("gamma"));
    assert_eq!(ids(&seed), ["two"]);
    let incremental = full_digest(&h.db(), "default");
    h.sync_with(&SyncOptions {
        rebuild: true,
        ..Default::default()
    });
    assert_eq!(full_digest(&h.db(), "default"), incremental);
}

/// A build of schema 6 can commit to a file that another process migrated to schema 7 after
/// it opened it: it updates the lists and leaves the seed projections as they were. Queries
/// must not trust projections behind the lists, and the next sync writes them afresh.
#[test]
fn projections_left_behind_by_an_older_build_are_not_read_and_are_written_again() {
    use redb::ReadableTable;
    use skillidx::store::records::SEED_GENERATION;
    use skillidx::store::{ProfileTables, Store};
    let h = Home::new();
    let with_body = |rel: &str, name: &str, description: &str| {
        h.write(
            rel,
            &format!("---\nname: {name}\ndescription: {description}\n---\n# {name}\n\nRun gamma first.\n"),
        );
    };
    with_body("a/one", "one", "alpha tools");
    with_body("a/two", "two", "gamma tools");
    h.sync();
    let t = ProfileTables::new("default");
    // What the older build's commit will leave: the projections and stamp of now.
    let (rows, stamp) = {
        let store = Store::open_read(&h.db()).unwrap();
        let txn = store.read().unwrap();
        let seed = txn.open_table(t.seed()).unwrap();
        let rows: Vec<(String, Vec<u8>)> = seed
            .iter()
            .unwrap()
            .map(|r| {
                let (k, v) = r.unwrap();
                (k.value().to_owned(), v.value().to_vec())
            })
            .collect();
        let state = txn.open_table(t.state()).unwrap();
        let stamp = state
            .get(SEED_GENERATION)
            .unwrap()
            .unwrap()
            .value()
            .to_vec();
        (rows, stamp)
    };
    assert!(rows.iter().any(|(term, _)| term == "gamma"));
    old_enough();
    with_body("a/two", "two", "delta tools");
    h.sync();
    {
        let store = Store::open_write(&h.db()).unwrap();
        let txn = store.write().unwrap();
        {
            let mut seed = txn.open_table(t.seed()).unwrap();
            seed.retain(|_, _| false).unwrap();
            for (term, bytes) in &rows {
                seed.insert(term.as_str(), bytes.as_slice()).unwrap();
            }
            let mut state = txn.open_table(t.state()).unwrap();
            state.insert(SEED_GENERATION, stamp.as_slice()).unwrap();
        }
        store.commit(txn).unwrap();
    }
    // The stale projection still names two under "gamma"; the lists do not.
    let seed = skillidx::search::SearchOptions {
        ranking: skillidx::search::Ranking::Seed,
        ..Default::default()
    };
    assert_eq!(h.search_with("gamma", &seed), Vec::<(String, f64)>::new());
    let clean = clean_copy(&h);
    assert_eq!(
        h.search_with("delta tools", &seed),
        clean.search_with("delta tools", &seed)
    );

    // The next sync that commits writes the projections again (the digest checks them).
    old_enough();
    with_body("a/one", "one", "alpha tools again");
    assert!(h.sync().committed);
    let incremental = full_digest(&h.db(), "default");
    h.sync_with(&SyncOptions {
        rebuild: true,
        ..Default::default()
    });
    assert_eq!(full_digest(&h.db(), "default"), incremental);
    let clean = clean_copy(&h);
    assert_eq!(
        h.search_with("delta tools", &seed),
        clean.search_with("delta tools", &seed)
    );
}

/// One sync that both offers an indexed skill again (the configuration stops disabling it)
/// and adds new skills sharing its words: the postings of the two kinds of document are
/// queued apart (the new ones' on a second thread) and merged into one list per term.
#[test]
fn a_skill_offered_again_and_new_skills_in_one_sync_end_where_a_clean_build_does() {
    let h = Home::new();
    for i in 0..20 {
        h.skill(
            &format!("c/s{i:02}"),
            &format!("s{i:02}"),
            &format!("shared words {i}"),
        );
    }
    h.config("skills:\n  disabled: [s05, s11]\n");
    h.sync();
    h.config("skills:\n  disabled: [s11]\n");
    // New documents take ids above every old one, so the merged lists interleave: the
    // old s05 among new documents on both sides of it in no order the writer controls.
    for i in 20..40 {
        h.skill(
            &format!("c/s{i:02}"),
            &format!("s{i:02}"),
            &format!("shared words {i}"),
        );
    }
    let r = h.sync();
    assert!(r.committed);
    assert!(digest(&h.db(), "default").contains("active=39 inactive=1"));
    let incremental = full_digest(&h.db(), "default");
    h.sync_with(&SyncOptions {
        rebuild: true,
        ..Default::default()
    });
    assert_eq!(full_digest(&h.db(), "default"), incremental);
    let hits = h.search_with(
        "shared words",
        &skillidx::search::SearchOptions {
            k: 40,
            ..Default::default()
        },
    );
    assert_eq!(hits.len(), 39);
}

#[test]
fn an_index_made_by_other_reading_rules_is_read_again_in_place() {
    // Unchanged files are never read again, so a build whose parsing or tokenizing changed
    // would keep the old build's reading of them; its version in the profile's state makes
    // the next sync read every file again, keeping document ids, and then rest.
    use skillidx::store::records::RULES_VERSION_KEY;
    use skillidx::store::{encode, ProfileTables, Store};
    let h = Home::new();
    h.skill("a/one", "one", "brew green tea");
    h.skill("a/two", "two", "grind coffee beans");
    h.sync();
    old_enough();
    h.sync();
    let r = h.sync();
    assert_eq!((r.parsed, r.committed), (0, false), "{r:#?}");
    let store = Store::open_write(&h.db()).unwrap();
    let txn = store.write().unwrap();
    txn.open_table(ProfileTables::new("default").state())
        .unwrap()
        .insert(
            RULES_VERSION_KEY,
            encode(&(skillidx::sync::RULES_VERSION - 1)).as_slice(),
        )
        .unwrap();
    store.commit(txn).unwrap();
    drop(store);
    let before = h.search_with("green tea", &Default::default());
    let r = h.sync();
    assert!(r.read_again);
    assert_eq!(
        (r.parsed, r.updated, r.added, r.removed),
        (2, 2, 0, 0),
        "{r:#?}"
    );
    assert!(r.warnings.iter().any(|w| w.reason.contains("read again")));
    assert_eq!(h.search_with("green tea", &Default::default()), before);
    let r = h.sync();
    assert_eq!((r.parsed, r.committed), (0, false), "{r:#?}");
    assert!(r.warnings.is_empty(), "{r:#?}");
}
