//! The whole shared corpus of ~2,800 real SKILL.md files from 19 collections indexes with
//! nothing skipped, and answers real requests sensibly.

mod common;
use common::*;
use skillidx::home::Root;
use skillidx::search::SearchOptions;
use skillidx::Index;

#[test]
fn the_shared_corpus_indexes_and_answers() {
    let Some(corpus) = corpus() else {
        eprintln!("skipped: ../shared/corpus is not beside this checkout");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("corpus.redb");
    let index = Index::open_writable(&db).unwrap();
    let profile = Root::from_home(&corpus).profile("default").unwrap();
    let r = index.sync(&profile, &Default::default()).unwrap();
    assert!(r.added >= 2700, "{} added", r.added);
    // The corpus holds no broken file: nothing may be skipped.
    assert!(r.skipped.is_empty(), "{:#?}", r.skipped);
    // One description is over Hermes' 1,024 characters and is cut, as Hermes cuts it.
    assert!(
        r.warnings.iter().all(|w| w.reason.contains("longer than")),
        "{:#?}",
        r.warnings
    );
    // Inactive: duplicate names across collections, and macOS-only Hermes skills on Linux.
    let list = index.list("default").unwrap();
    assert!(list
        .iter()
        .filter_map(|s| s.inactive.as_deref())
        .all(|w| w.contains("shadowed") || w.contains("platforms")));
    let opts = SearchOptions::default();
    let top = |q: &str| {
        index
            .search("default", q, &opts)
            .unwrap()
            .into_iter()
            .map(|h| h.id)
            .collect::<Vec<_>>()
    };
    assert!(top("review a pull request on github")
        .iter()
        .any(|id| id.contains("review") || id.contains("pr")));
    assert!(
        top("한국 주식 시세")
            .iter()
            .any(|id| id.contains("stock") || id.contains("kr")),
        "{:?}",
        top("한국 주식 시세")
    );
    // A second sync finds nothing to do.
    let r = index.sync(&profile, &Default::default()).unwrap();
    assert_eq!((r.added, r.updated, r.removed), (0, 0, 0));
}
