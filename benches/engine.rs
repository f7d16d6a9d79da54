//! Criterion benchmarks of the engine's stages on real skills.
//!
//! Sets: `examples/hermes-home` (always); the Hermes skills (~170) and the whole shared corpus
//! (~2,800) when `../shared/corpus` is beside the checkout; and the hub (~90,000) when
//! `SKILLIDX_BENCH_HUB` names a home made by `benches/make_hub_home.py` (slow: a full build
//! takes seconds, and criterion runs it ten times). `SKILLIDX_BENCH_SETS=hermes-170,hub-90k`
//! keeps only the named sets.
//!
//! Per set: tokenizer throughput, SKILL.md parsing, full build, sync with nothing changed,
//! sync with one skill changed (on a copy of the home), the per-turn freshness check, open +
//! first search, and warm search for short queries and for a ~200-word agent turn with a
//! pasted log (`benches/queries.json`, shared with `benches/compare.py`).
//!
//! Run: `cargo bench --bench engine`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use skillidx::freshness::Freshness;
use skillidx::home::Root;
use skillidx::search::SearchOptions;
use skillidx::skill::{self, Location, Origin};
use skillidx::sync::SyncOptions;
use skillidx::Index;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The short queries and the long agent turn of `benches/queries.json`.
fn queries() -> (Vec<String>, String) {
    let v: serde_json::Value =
        serde_json::from_str(include_str!("queries.json")).expect("benches/queries.json");
    let short = v["short"]
        .as_array()
        .expect("short")
        .iter()
        .map(|q| q.as_str().expect("query").to_owned())
        .collect();
    (short, v["turn"].as_str().expect("turn").to_owned())
}

fn sets() -> Vec<(&'static str, PathBuf)> {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut out = vec![("example", repo.join("examples/hermes-home"))];
    let corpus = repo.join("../shared/corpus");
    if corpus.join("skills").is_dir() {
        // The Hermes set as a home of its own: a temp home whose skills/ links to it.
        let hermes = std::env::temp_dir().join("skillidx-bench-hermes-home");
        let _ = std::fs::create_dir_all(&hermes);
        let link = hermes.join("skills");
        if !link.exists() {
            #[cfg(unix)]
            let _ =
                std::os::unix::fs::symlink(corpus.join("skills/nousresearch-hermes-agent"), &link);
        }
        out.push(("hermes-170", hermes));
        out.push(("corpus-2800", corpus));
    }
    if let Some(hub) = std::env::var_os("SKILLIDX_BENCH_HUB") {
        let hub = PathBuf::from(hub);
        assert!(
            hub.join("skills").is_dir(),
            "SKILLIDX_BENCH_HUB={}: no skills/ (run benches/make_hub_home.py)",
            hub.display()
        );
        out.push(("hub-90k", hub));
    }
    if let Ok(only) = std::env::var("SKILLIDX_BENCH_SETS") {
        out.retain(|(name, _)| only.split(',').any(|o| o.trim() == *name));
    }
    out
}

/// Copies `home`'s skills (links followed) into a fresh temp home, so a bench may edit them.
fn copy_home(home: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = home.join("skills");
    for e in walkdir::WalkDir::new(&src).follow_links(true) {
        let e = e.expect("walk");
        let to = dir
            .path()
            .join("skills")
            .join(e.path().strip_prefix(&src).expect("prefix"));
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&to).expect("mkdir");
        } else if e.file_type().is_file() {
            std::fs::copy(e.path(), &to).expect("copy");
        }
    }
    dir
}

/// Builds an index of `home` at `db`, then syncs again once its files have aged past the
/// racily-clean window, as they have in real use.
fn settled_index(home: &Path, db: &Path) {
    let profile = Root::from_home(home).profile("default").expect("profile");
    Index::open_writable(db)
        .expect("open")
        .sync(&profile, &SyncOptions::default())
        .expect("sync");
    std::thread::sleep(Duration::from_millis(2100));
    Index::open_for_sync(db)
        .expect("open")
        .sync(&profile, &SyncOptions::default())
        .expect("sync");
}

fn skill_files(home: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    walkdir::WalkDir::new(home.join("skills"))
        .follow_links(true)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_name() == "SKILL.md")
        .map(|e| (e.path().to_owned(), std::fs::read(e.path()).unwrap()))
        .collect()
}

fn bench(c: &mut Criterion) {
    let (short, turn) = queries();
    for (name, home) in sets() {
        let hub = name == "hub-90k";
        let files = skill_files(&home);
        let bytes: usize = files.iter().map(|(_, b)| b.len()).sum();
        let mut g = c.benchmark_group(name);
        g.sample_size(10);
        if hub {
            g.warm_up_time(Duration::from_millis(500));
        }
        g.throughput(Throughput::Bytes(bytes as u64));
        g.bench_function("tokenize", |b| {
            b.iter(|| {
                let mut n = 0usize;
                for (_, f) in &files {
                    skillidx::tokenize::tokenize_with(std::str::from_utf8(f).unwrap_or(""), |_| {
                        n += 1
                    });
                }
                n
            })
        });
        let loc = Location {
            origin: Origin::Local,
            rel: vec!["cat".into(), "skill".into(), "SKILL.md".into()],
        };
        g.bench_function("parse", |b| {
            b.iter(|| {
                files
                    .iter()
                    .map(|(_, f)| skill::parse(f, &loc).name.len())
                    .sum::<usize>()
            })
        });
        g.throughput(Throughput::Elements(files.len() as u64));
        let root = Root::from_home(&home);
        let profile = root.profile("default").unwrap();
        g.bench_function("full_build", |b| {
            b.iter_batched(
                || tempfile::tempdir().unwrap(),
                |dir| {
                    let index = Index::open_writable(&dir.path().join("i.redb")).unwrap();
                    index.sync(&profile, &SyncOptions::default()).unwrap();
                    dir
                },
                BatchSize::PerIteration,
            )
        });
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("i.redb");
        settled_index(&home, &db);
        g.bench_function("sync_unchanged", |b| {
            b.iter(|| {
                Index::open_for_sync(&db)
                    .unwrap()
                    .sync(&profile, &SyncOptions::default())
                    .unwrap()
            })
        });

        // One skill changed: on a copy, append a line to one SKILL.md before each sync.
        let copy = copy_home(&home);
        let copy_db = copy.path().join("i.redb");
        settled_index(copy.path(), &copy_db);
        let copy_profile = Root::from_home(copy.path()).profile("default").unwrap();
        let victim = skill_files(copy.path())
            .into_iter()
            .map(|(p, _)| p)
            .min()
            .expect("a skill");
        let mut edits = 0u64;
        g.bench_function("sync_one_changed", |b| {
            b.iter_batched(
                || {
                    edits += 1;
                    let mut text = std::fs::read_to_string(&victim).unwrap();
                    text.push_str(&format!("\nedit {edits} zebra{edits}\n"));
                    std::fs::write(&victim, text).unwrap();
                },
                |()| {
                    let r = Index::open_for_sync(&copy_db)
                        .unwrap()
                        .sync(&copy_profile, &SyncOptions::default())
                        .unwrap();
                    assert_eq!(r.updated, 1, "one skill changed");
                },
                BatchSize::PerIteration,
            )
        });
        drop(copy);

        g.throughput(Throughput::Elements(1));
        g.bench_function("freshness_check", |b| {
            let mut f = Freshness::with_ttl(&home, Duration::from_secs(3600));
            f.is_stale();
            f.mark_synced();
            b.iter(|| assert!(!f.is_stale(), "home changed during the bench"))
        });
        let index = Index::open(&db).unwrap();
        let opts = SearchOptions::default();
        g.bench_function("search_short", |b| {
            let mut i = 0;
            b.iter(|| {
                i += 1;
                index
                    .search("default", &short[i % short.len()], &opts)
                    .unwrap()
            })
        });
        g.bench_function("search_turn_200_words", |b| {
            b.iter(|| index.search("default", &turn, &opts).unwrap())
        });
        g.bench_function("open_and_search", |b| {
            b.iter(|| {
                Index::open(&db)
                    .unwrap()
                    .search("default", &short[0], &opts)
                    .unwrap()
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
