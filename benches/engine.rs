//! Criterion benchmarks of the engine's stages on real skills.
//!
//! Sets: `examples/hermes-home` (always), and the Hermes skills (~170) and the whole shared
//! corpus (~2,800) when `../shared/corpus` is beside the checkout.
//! Run: `cargo bench --bench engine`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use skillidx::bm25::SearchOptions;
use skillidx::home::Root;
use skillidx::skill::{self, Location, Origin};
use skillidx::sync::SyncOptions;
use skillidx::Index;
use std::path::{Path, PathBuf};

const SHORT_QUERIES: [&str; 6] = [
    "convert a PDF to markdown",
    "review a pull request",
    "fine-tune an LLM with LoRA",
    "会議の議事録を作成",
    "주식 시세 조회",
    "写一篇小红书文案",
];

fn long_turn() -> String {
    let mut s = String::from(
        "I'm trying to deploy our service with docker compose but the container keeps restarting. \
         Here is the log, can you figure out what is wrong and fix the Dockerfile? ",
    );
    for i in 0..12 {
        s.push_str(&format!(
            "2026-11-30T09:{i:02}:13Z web-1 | Error: connect ECONNREFUSED 127.0.0.1:5432 at TCPConnectWrap.afterConnect \
             [as oncomplete] (node:net:1595:16) postgres not ready, retrying in 5s; "
        ));
    }
    s
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
    out
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
    for (name, home) in sets() {
        let files = skill_files(&home);
        let bytes: usize = files.iter().map(|(_, b)| b.len()).sum();
        let mut g = c.benchmark_group(name);
        g.sample_size(10);
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
                    .filter_map(|(_, f)| skill::parse(f, &loc).ok())
                    .count()
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
        Index::open_writable(&db)
            .unwrap()
            .sync(&profile, &SyncOptions::default())
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2100));
        Index::open_for_sync(&db)
            .unwrap()
            .sync(&profile, &SyncOptions::default())
            .unwrap();
        g.bench_function("sync_unchanged", |b| {
            b.iter(|| {
                Index::open_for_sync(&db)
                    .unwrap()
                    .sync(&profile, &SyncOptions::default())
                    .unwrap()
            })
        });
        g.throughput(Throughput::Elements(1));
        let index = Index::open(&db).unwrap();
        let opts = SearchOptions::default();
        g.bench_function("search_short", |b| {
            let mut i = 0;
            b.iter(|| {
                i += 1;
                index
                    .search("default", SHORT_QUERIES[i % SHORT_QUERIES.len()], &opts)
                    .unwrap()
            })
        });
        let turn = long_turn();
        g.bench_function("search_long_turn", |b| {
            b.iter(|| index.search("default", &turn, &opts).unwrap())
        });
        g.bench_function("open_and_search", |b| {
            b.iter(|| {
                Index::open(&db)
                    .unwrap()
                    .search("default", SHORT_QUERIES[0], &opts)
                    .unwrap()
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
