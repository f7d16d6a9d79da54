//! Index files written by earlier schema versions still open and answer, after the
//! migrations in `migrations/` bring them up to date.
//!
//! `tests/fixtures/schema-vN.redb` was written by the skillidx of schema N from
//! `examples/hermes-home` with `--all-profiles`, run from the repository root. Keep every old
//! fixture when the schema changes, and add one per new version (`schema-v8.redb`: the
//! build at b7ccf50).

mod common;
use skillidx::home::Root;
use skillidx::search::{Hit, Ranking, SearchOptions};
use skillidx::Index;

fn fixture_copy(version: u32) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = common::fixture_copy(version, dir.path());
    (dir, db)
}

/// The example home's default profile; the fixtures' paths are relative to the repository
/// root, where cargo runs tests.
fn example_profile() -> skillidx::home::Profile {
    Root::from_home(std::path::Path::new("examples/hermes-home"))
        .profile("default")
        .unwrap()
}

/// The id of the best hit for `query`.
fn top(index: &Index, profile: &str, query: &str, opts: &SearchOptions) -> String {
    index.search(profile, query, opts).unwrap()[0].id.clone()
}

fn ids(hits: &[Hit]) -> Vec<(String, f64)> {
    hits.iter().map(|h| (h.id.clone(), h.score)).collect()
}

/// `a` answers `first` and a few more queries (CJK, stemmed, one word) exactly as `b`, in
/// both rankings: same hits, same order, same scores.
fn assert_same_answers(a: &Index, b: &Index, first: &str) {
    for q in [first, "会議の議事録", "deploying containers", "git"] {
        for ranking in [Ranking::Default, Ranking::Seed] {
            let opts = SearchOptions {
                ranking,
                ..Default::default()
            };
            let x = a.search("default", q, &opts).unwrap();
            let y = b.search("default", q, &opts).unwrap();
            assert_eq!(ids(&x), ids(&y), "query {q} ({ranking:?})");
        }
    }
}

#[test]
fn schema_1_is_migrated_on_open_and_answers() {
    let (_dir, db) = fixture_copy(1);
    let index = Index::open(&db).unwrap();
    // Schema 2's analyzer is in force: a stemmed query finds the skill.
    assert_eq!(
        top(
            &index,
            "default",
            "converting PDFs into markdown",
            &SearchOptions::default()
        ),
        "pdf-to-markdown"
    );
    let seed = SearchOptions {
        ranking: Ranking::Seed,
        ..Default::default()
    };
    assert_eq!(
        top(&index, "default", "convert a PDF file to Markdown", &seed),
        "pdf-to-markdown"
    );
    assert_eq!(
        top(
            &index,
            "work",
            "write a postmortem for the outage",
            &SearchOptions::default()
        ),
        "incident-postmortem"
    );
}

#[test]
fn schema_1_is_reparsed_by_the_next_sync_and_then_equals_a_fresh_build() {
    let (_dir, db) = fixture_copy(1);
    let index = Index::open_for_sync(&db).unwrap();
    let profile = example_profile();
    let report = index.sync(&profile, &Default::default()).unwrap();
    // External skill dirs are resolved to absolute paths, as Hermes resolves them, so in a
    // checkout elsewhere than where the fixture was written its two external skills come
    // back under new paths: removed and added again. Every other skill is kept.
    assert_eq!(report.added, report.removed, "{report:#?}");
    assert!(report.added <= 2, "{report:#?}");
    assert!(
        report.updated > 60,
        "every file is parsed again after the migration"
    );
    let fresh_dir = tempfile::tempdir().unwrap();
    let fresh = Index::open_writable(&fresh_dir.path().join("fresh.redb")).unwrap();
    fresh.sync(&profile, &Default::default()).unwrap();
    assert_same_answers(&index, &fresh, "pdfToMarkdown converter");
}

#[test]
fn schema_2_opens_and_answers() {
    let (_dir, db) = fixture_copy(2);
    let index = Index::open(&db).unwrap();
    assert_eq!(
        top(
            &index,
            "default",
            "convert a PDF file to Markdown",
            &SearchOptions::default()
        ),
        "pdf-to-markdown"
    );
}

#[test]
fn schema_2_migrates_then_syncs_every_file_again_and_gains_a_folder_cache() {
    // The step to schema 3 marks every file for re-reading (to record `environments`), and
    // files of schema 2 written before the folder cache have no `dirs` table: the first
    // sync re-parses each file in place, lists every folder, and stores the cache.
    let (_dir, db) = fixture_copy(2);
    let index = Index::open_for_sync(&db).unwrap();
    let profile = example_profile();
    let first = index.sync(&profile, &Default::default()).unwrap();
    assert_eq!(first.added, first.removed, "{first:#?}");
    assert_eq!(first.updated + first.added, first.parsed, "{first:#?}");
    assert!(first.listed > 10, "{first:#?}");
    let second = index.sync(&profile, &Default::default()).unwrap();
    assert!(!second.committed && second.parsed == 0, "{second:#?}");
    assert_eq!(
        top(
            &index,
            "default",
            "convert a PDF file to Markdown",
            &SearchOptions::default()
        ),
        "pdf-to-markdown"
    );
}

/// The fixture of schema `version`, opened (and so migrated), after checking that it
/// answers `first` with the skill a fresh build of the example home ranks first, and that a
/// copy of it, once synced, answers `first` and a few more queries exactly as the fresh
/// build. The reading rules have moved since every fixture was written (schema 9's
/// `RULES_VERSION` 5 reads a body without its name heading), so until its next sync a
/// migrated file holds the documents its own build read; that sync reads every file again
/// in place, in the migrated tables.
fn migrated_and_answering_as_fresh(version: u32, first: &str) -> (tempfile::TempDir, Index) {
    let (dir, db) = fixture_copy(version);
    let index = Index::open(&db).unwrap();
    let fresh_dir = tempfile::tempdir().unwrap();
    let fresh = Index::open_writable(&fresh_dir.path().join("fresh.redb")).unwrap();
    fresh.sync(&example_profile(), &Default::default()).unwrap();
    for ranking in [Ranking::Default, Ranking::Seed] {
        let opts = SearchOptions {
            ranking,
            ..Default::default()
        };
        assert_eq!(
            top(&index, "default", first, &opts),
            top(&fresh, "default", first, &opts),
            "{ranking:?}"
        );
    }
    let (_synced_dir, synced_db) = fixture_copy(version);
    let synced = Index::open_for_sync(&synced_db).unwrap();
    // The fixture's claim is this checkout's home, as an absolute path.
    let profile = Root::from_home(&common::repo().join("examples/hermes-home"))
        .profile("default")
        .unwrap();
    let report = synced.sync(&profile, &Default::default()).unwrap();
    assert!(report.read_again, "{report:#?}");
    assert_same_answers(&synced, &fresh, first);
    (dir, index)
}

#[test]
fn schema_3_gets_the_compact_forward_index_and_answers_as_before() {
    let (_dir, index) = migrated_and_answering_as_fresh(3, "convert a PDF file to Markdown");
    // Every re-encoded forward index names exactly the postings its document is in, with
    // the same statistics: what a later sync relies on to take the document out again.
    for profile in ["default", "work"] {
        let (forward, in_postings) = forward_and_postings(&index, profile);
        assert!(forward > 0, "{profile}");
        assert_eq!(forward, in_postings, "{profile}");
    }
}

#[test]
fn schema_4_gets_the_word_order_table_and_answers_as_before() {
    // "PDF into Markdown" has a pair in order, so proximity reads the migrated table.
    let (_dir, index) = migrated_and_answering_as_fresh(4, "turn this PDF into Markdown");
    // Every document has its name and description in word order, as a sync writes them.
    use redb::{ReadableTable, ReadableTableMetadata};
    use skillidx::store::records::{DocBody, DocHead};
    use skillidx::store::{decode, encode, ProfileTables};
    let store = index.store();
    let txn = store.read().unwrap();
    for profile in ["default", "work"] {
        let t = ProfileTables::new(profile);
        let docs = txn.open_table(t.docs()).unwrap();
        let words = txn.open_table(t.words()).unwrap();
        assert!(docs.len().unwrap() > 0, "{profile}");
        assert_eq!(docs.len().unwrap(), words.len().unwrap(), "{profile}");
        for row in docs.iter().unwrap() {
            let (k, v) = row.unwrap();
            let (head, body): (DocHead, DocBody) = decode(store, v.value(), "doc").unwrap();
            let want = encode(&skillidx::analyze::word_order(
                &head.name,
                &body.description,
            ));
            let got = words.get(k.value()).unwrap().expect("word order row");
            assert_eq!(got.value(), want.as_slice(), "{}", head.key);
        }
    }
}

#[test]
fn schema_5_gets_the_block_directories_and_answers_as_before() {
    let (_dir, index) = migrated_and_answering_as_fresh(5, "convert a PDF file to Markdown");
    // Every list is in today's layout (schema 5's would not decode as it), and holds the
    // entries it held: the forward index still names exactly the postings.
    use redb::ReadableTable;
    use skillidx::store::ProfileTables;
    let store = index.store();
    let txn = store.read().unwrap();
    for profile in ["default", "work"] {
        let postings = txn
            .open_table(ProfileTables::new(profile).postings())
            .unwrap();
        let mut lists = 0;
        for row in postings.iter().unwrap() {
            let (term, bytes) = row.unwrap();
            let list = skillidx::postings::decode(bytes.value())
                .unwrap_or_else(|e| panic!("{profile} {}: {e}", term.value()));
            assert_eq!(skillidx::postings::encode(&list), bytes.value());
            lists += 1;
        }
        assert!(lists > 100, "{profile}: {lists} lists");
        let (forward, in_postings) = forward_and_postings(&index, profile);
        assert_eq!(forward, in_postings, "{profile}");
    }
}

#[test]
fn schema_6_gets_the_seed_projections_and_answers_as_before() {
    // The seed ranking reads the migrated `seed` table: it answers as a fresh build does.
    let (_dir, index) = migrated_and_answering_as_fresh(6, "convert a PDF file to Markdown");
    use redb::ReadableTable;
    use skillidx::fields::Field;
    use skillidx::postings::Projection;
    use skillidx::store::ProfileTables;
    let store = index.store();
    let txn = store.read().unwrap();
    for profile in ["default", "work"] {
        let t = ProfileTables::new(profile);
        let postings = txn.open_table(t.postings()).unwrap();
        let seed = txn.open_table(t.seed()).unwrap();
        let mut projected = 0;
        for row in postings.iter().unwrap() {
            let (term, bytes) = row.unwrap();
            let want = Projection::of_bytes(Field::Seed, bytes.value()).unwrap();
            let got = seed.get(term.value()).unwrap().map(|v| v.value().to_vec());
            assert_eq!(got, want, "{profile} {}", term.value());
            projected += usize::from(want.is_some());
        }
        assert!(projected > 50, "{profile}: {projected} projections");
        assert_eq!(seed.iter().unwrap().count(), projected, "{profile}");
        // Stamped in step with the lists, so queries read them.
        let state = txn.open_table(t.state()).unwrap();
        let stats: skillidx::store::records::CorpusStats =
            skillidx::store::decode(store, state.get("stats").unwrap().unwrap().value(), "stats")
                .unwrap();
        let stamp: u64 = skillidx::store::decode(
            store,
            state
                .get(skillidx::store::records::SEED_GENERATION)
                .unwrap()
                .expect("a seed stamp")
                .value(),
            "stamp",
        )
        .unwrap();
        assert_eq!(stamp, stats.generation, "{profile}");
    }
}

/// Checks every active document's forward index against the postings lists; returns the
/// number of forward entries of active documents and of postings entries.
fn forward_and_postings(index: &Index, profile: &str) -> (usize, usize) {
    use redb::ReadableTable;
    use skillidx::store::records::DocHead;
    use skillidx::store::{decode_head, ProfileTables};
    let store = index.store();
    let txn = store.read().unwrap();
    let t = ProfileTables::new(profile);
    let docs = txn.open_table(t.docs()).unwrap();
    let terms = txn.open_table(t.terms()).unwrap();
    let postings = txn.open_table(t.postings()).unwrap();
    let mut forward = 0;
    for row in docs.iter().unwrap() {
        let (k, v) = row.unwrap();
        let head: DocHead = decode_head(store, v.value()).unwrap();
        let bytes = terms.get(k.value()).unwrap().expect("forward index row");
        let entries = skillidx::forward::decode(bytes.value(), &head.lens).unwrap();
        assert!(!entries.is_empty(), "{}", head.key);
        if head.inactive.is_some() {
            continue;
        }
        for (term, stats) in &entries {
            let list = postings.get(term.as_str()).unwrap().expect("postings list");
            let list = skillidx::postings::decode(list.value()).unwrap();
            assert!(
                list.iter().any(|p| p.doc == k.value() && p.stats == *stats),
                "{}: {term}",
                head.key
            );
        }
        forward += entries.len();
    }
    let mut in_postings = 0;
    for row in postings.iter().unwrap() {
        in_postings += skillidx::postings::decode(row.unwrap().1.value())
            .unwrap()
            .len();
    }
    (forward, in_postings)
}

#[test]
fn schema_7_gets_session_platforms_and_answers_as_before() {
    let (_dir, index) = migrated_and_answering_as_fresh(7, "convert a PDF file to Markdown");
    // Every head and the offer rules are in today's layout (schema 7's would not decode as
    // it), with no `session_platforms` until the next sync reads the files again.
    use redb::ReadableTable;
    use skillidx::store::records::{DocBody, DocHead};
    use skillidx::store::{decode, ProfileTables};
    let store = index.store();
    let txn = store.read().unwrap();
    for profile in ["default", "work"] {
        let t = ProfileTables::new(profile);
        let docs = txn.open_table(t.docs()).unwrap();
        let mut n = 0;
        for row in docs.iter().unwrap() {
            let (_, v) = row.unwrap();
            let (head, _): (DocHead, DocBody) = decode(store, v.value(), "doc").unwrap();
            assert!(head.conditions.session_platforms.is_empty(), "{}", head.key);
            n += 1;
        }
        assert!(n > 5, "{profile}: {n} documents");
        let state = txn.open_table(t.state()).unwrap();
        let rules: skillidx::offer::OfferRules = decode(
            store,
            state.get("offer_rules").unwrap().unwrap().value(),
            "rules",
        )
        .unwrap();
        assert!(
            !rules.docs.is_empty(),
            "{profile}: the example has conditions"
        );
    }
    drop(txn);
    drop(index);
    let (_dir, db) = fixture_copy(7);
    let index = Index::open_for_sync(&db).unwrap();
    // The fixture's claim is this checkout's home, as an absolute path.
    let profile = Root::from_home(&common::repo().join("examples/hermes-home"))
        .profile("default")
        .unwrap();
    let report = index.sync(&profile, &Default::default()).unwrap();
    assert!(
        report.read_again,
        "the reading rules moved with the schema: {report:#?}"
    );
}

#[test]
fn schema_8_gets_each_fields_document_count() {
    let (_dir, index) = migrated_and_answering_as_fresh(8, "convert a PDF file to Markdown");
    // The statistics count, per field, the offered documents that have it, as a sync
    // counts them.
    use redb::ReadableTable;
    use skillidx::store::records::{CorpusStats, DocBody, DocHead};
    use skillidx::store::{decode, ProfileTables};
    let store = index.store();
    let txn = store.read().unwrap();
    for profile in ["default", "work"] {
        let t = ProfileTables::new(profile);
        let mut want = [0u32; skillidx::fields::FIELD_COUNT];
        let mut offered = 0;
        for row in txn.open_table(t.docs()).unwrap().iter().unwrap() {
            let (_, v) = row.unwrap();
            let (head, _): (DocHead, DocBody) = decode(store, v.value(), "doc").unwrap();
            if head.inactive.is_none() {
                offered += 1;
                for (w, &len) in want.iter_mut().zip(&head.lens) {
                    *w += u32::from(len > 0);
                }
            }
        }
        let state = txn.open_table(t.state()).unwrap();
        let stats: CorpusStats =
            decode(store, state.get("stats").unwrap().unwrap().value(), "stats").unwrap();
        assert_eq!(stats.docs, offered, "{profile}");
        assert_eq!(stats.field_docs, want, "{profile}");
        assert!(
            want.iter().all(|&w| w > 0 && w <= offered),
            "{profile}: {want:?}"
        );
    }
}
