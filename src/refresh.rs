//! A long-running process's index: what the Hermes plugin answers turns from.
//!
//! A gateway answers turns from several threads for days while skills change on disk and
//! other processes (a cron `skillidx sync --all-profiles`, CLI sessions, other gateways)
//! sync the same file. [`LiveIndex`] keeps every turn off the sync path:
//!
//! - **Queries use a read-only handle** ([`Index::open`]: the lean read cache, no writer,
//!   nothing written on open but the repair of a file a killed writer left unclean, or an
//!   upgrade of an older schema: `Store::open_read`). Before each query one `stat` of the index path compares its
//!   device and inode with the open handle's. When the file was replaced (`sync --rebuild`
//!   moved a damaged one aside, a backup was restored), the path is opened again and the
//!   answers come from the new file. While the new file cannot be opened, the old handle
//!   keeps answering and [`LiveStatus::open_error`] says why.
//! - **A query never begins a transaction.** redb holds its header lock while a writer in
//!   any process opens the file, commits or closes it, across `fsync`s, and `begin_read`
//!   waits for it (tens of milliseconds on a busy disk). So queries answer from the latest
//!   published read snapshot; a pump thread takes a new one when the file's stamp (mtime,
//!   ctime, size) changes: within [`PUMP_PERIOD`], or at once when a query saw the change
//!   (that query still answers from the last commit it has). The plugin's own sync, and an
//!   explicit [`LiveIndex::sync`], publish a new snapshot before they count as done, so
//!   their result is seen from the next query on.
//! - **[`LiveIndex::refresh`] only checks and schedules.** It takes the cheap stat
//!   signature of [`Freshness`] (and the TTL); when a sync is due it starts one on a
//!   background thread and returns at once. It never syncs inline. The result is seen from
//!   the next turn on.
//! - **At most one sync in flight per profile**: a flag in this process, and across
//!   processes a `flock` try-lock on `<index>.sync-<profile>.lock` beside the index. A
//!   second gateway on the same home that finds it held skips its sync (the other one's
//!   commit is what it will read) and checks again a moment later.
//! - **No turn waits on a lock.** The handle and snapshot slots are locked only to clone an
//!   `Arc`; the freshness state is taken with `try_lock`, so a turn that finds another
//!   thread checking skips its own check; a sync in flight or backing off after a failure
//!   skips the check altogether.
//! - The background sync runs at a lower CPU priority (`nice` 10 for its thread and for
//!   the threads of its own rayon pool), so on a small machine the turns get the cores
//!   first. A failure is kept as [`LiveStatus::sync_error`] (cleared by the next success)
//!   and retried after [`FAILURE_RETRY`] (or the TTL, when shorter).
//!
//! Why a thread and not a `skillidx sync` child process: the plugin's Python environment
//! need not have the `skillidx` executable on its `PATH`, a thread costs no process start
//! or second open of the file, and its failure comes back as a typed error; the lowered
//! priority and the sync's own short-lived write handle keep it out of the turns' way.

use crate::freshness::{Freshness, DEFAULT_TTL};
use crate::home::{Profile, Root};
use crate::offer::Session;
use crate::search::{Explanation, Hit, Offered, SearchOptions, Snapshot};
use crate::store::{self, StoreError};
use crate::sync::{SyncOptions, SyncReport};
use crate::{Error, Index, ProfileStats, SkillEntry};
use serde::Serialize;
use std::fs::File;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError, TryLockError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long after a failed background sync the next one may start (the TTL when shorter).
pub const FAILURE_RETRY: Duration = Duration::from_secs(5);
/// How long after finding another process syncing the profile the check runs again (the
/// TTL when shorter).
pub const BUSY_RETRY: Duration = Duration::from_secs(1);
/// The CPU priority (`nice`) of background sync threads.
pub const SYNC_NICE: i32 = 10;

/// How a [`LiveIndex`] behaves.
#[derive(Debug, Clone, Copy)]
pub struct LiveOptions {
    /// The longest time [`LiveIndex::refresh`] trusts the cheap stat check before a sync
    /// is due anyway.
    pub ttl: Duration,
    /// Never sync in the background, and require the index file to exist at open.
    pub readonly: bool,
    /// The Hermes release whose offer rules syncs follow (`None`: see
    /// [`crate::version::HermesVersion::resolve`]).
    pub hermes: Option<crate::version::HermesVersion>,
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            ttl: DEFAULT_TTL,
            readonly: false,
            hermes: None,
        }
    }
}

/// What a `stat` of the index file says: its identity (device, inode) and whether it was
/// written to (modification and change time, size).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    mtime_ns: i64,
    ctime_ns: i64,
    size: u64,
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        let meta = std::fs::metadata(path).ok()?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Some(Stamp {
                dev: meta.dev(),
                ino: meta.ino(),
                mtime_ns: meta.mtime() * 1_000_000_000 + meta.mtime_nsec(),
                ctime_ns: meta.ctime() * 1_000_000_000 + meta.ctime_nsec(),
                size: meta.len(),
            })
        }
        #[cfg(not(unix))]
        {
            let mtime_ns = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as i64);
            Some(Stamp {
                dev: 0,
                ino: 0,
                mtime_ns,
                ctime_ns: 0,
                size: meta.len(),
            })
        }
    }

    fn same_file(&self, other: &Stamp) -> bool {
        (self.dev, self.ino) == (other.dev, other.ino)
    }
}

/// A write this close to a stat (or after it) may leave the modification time unchanged
/// at a coarse clock's resolution, so a snapshot taken then is taken again later.
const RACY_NS: i64 = 100_000_000;

/// A read transaction the turns answer from, and the file's stamp just before it began.
struct View {
    txn: redb::ReadTransaction,
    stamp: Option<Stamp>,
    /// The stamp is old enough that any later write changes it.
    settled: bool,
}

impl View {
    /// Whether this view still shows the last commit of the file that `now` describes.
    fn current(&self, now: Option<Stamp>) -> bool {
        self.settled && self.stamp == now
    }
}

/// An open read-only handle, the identity the path had when it was opened, and the latest
/// read snapshot of it.
struct Opened {
    index: Index,
    id: Option<Stamp>,
    view: Mutex<Option<Arc<View>>>,
}

impl Opened {
    fn view(&self) -> Option<Arc<View>> {
        self.view
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Begins a read transaction and publishes it. This is the one call on the query path
    /// that can wait (redb holds its header lock while a writer opens, commits or closes),
    /// so only the pump, a sync and the first query of a handle make it.
    fn take_view(&self, db: &Path) -> Result<Arc<View>, Error> {
        let stamp = Stamp::of(db);
        let now_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64);
        let txn = store::contain(self.index.store().path(), || self.index.store().read())?;
        let settled = stamp.is_some_and(|s| now_ns - s.mtime_ns.max(s.ctime_ns) > RACY_NS);
        let view = Arc::new(View {
            txn,
            stamp,
            settled,
        });
        let old = self
            .view
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .replace(Arc::clone(&view));
        // Dropped here, in the thread that took the new one, not in a turn's.
        drop(old);
        Ok(view)
    }
}

/// The last background sync that completed.
#[derive(Debug, Clone, Serialize)]
pub struct LastSync {
    /// When it started, ms since the epoch.
    pub started_ms: u64,
    /// How long it took, in ms.
    pub elapsed_ms: f64,
    /// Whether it committed (something had changed).
    pub committed: bool,
    /// The profile's generation after it.
    pub generation: u64,
    /// Skills offered after it.
    pub active: usize,
}

/// What a [`LiveIndex`] has been doing, for logs and tests.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LiveStatus {
    /// Whether a background sync is running now.
    pub syncing: bool,
    /// Background syncs that succeeded.
    pub syncs: u64,
    /// Background syncs that failed.
    pub failures: u64,
    /// Background syncs skipped because another process was syncing the profile.
    pub busy: u64,
    /// The last background sync's error; `None` once one succeeds.
    pub sync_error: Option<String>,
    /// Why the index file at the path could not be (re)opened, while an older handle
    /// answers; `None` once it opens.
    pub open_error: Option<String>,
    /// How many times the file was found replaced and opened again.
    pub reopened: u64,
    /// How many read snapshots the pump has taken (each after another commit).
    pub snapshots: u64,
    /// The last successful background sync.
    pub last_sync: Option<LastSync>,
}

#[derive(Default)]
struct State {
    status: LiveStatus,
    /// No background sync starts before this.
    retry_at: Option<Instant>,
    /// A query found the file damaged: the next background sync rebuilds it.
    rebuild_due: bool,
}

/// Wakes the snapshot pump: at once when a query saw the file change, else every
/// [`PUMP_PERIOD`].
struct Pump {
    started: std::sync::Once,
    nudged: Mutex<bool>,
    wake: Condvar,
    stop: std::sync::atomic::AtomicBool,
}

impl Default for Pump {
    fn default() -> Self {
        Pump {
            started: std::sync::Once::new(),
            nudged: Mutex::new(false),
            wake: Condvar::new(),
            stop: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

/// How often the pump looks at the index file's stamp.
pub const PUMP_PERIOD: Duration = Duration::from_millis(20);

/// Everything a [`LiveIndex`] shares with its background sync and its snapshot pump.
struct Inner {
    db: PathBuf,
    profile: Profile,
    opts: LiveOptions,
    handle: Mutex<Option<Arc<Opened>>>,
    freshness: Mutex<Freshness>,
    state: Mutex<State>,
    idle: Condvar,
    pump: Pump,
    /// The semantic stage, once [`LiveIndex::enable_semantic`] gave it a model: syncs embed,
    /// queries re-rank.
    #[cfg(feature = "semantic")]
    semantic: std::sync::OnceLock<crate::search::semantic::SemanticStage>,
}

/// One profile's index in a long-running process: read-only queries that follow the file,
/// syncs in the background. Safe to share between threads. See the module docs.
pub struct LiveIndex {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for LiveIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveIndex")
            .field("db", &self.inner.db)
            .field("profile", &self.inner.profile)
            .finish()
    }
}

impl Drop for LiveIndex {
    fn drop(&mut self) {
        let pump = &self.inner.pump;
        pump.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        pump.wake.notify_all();
    }
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn slot(&self) -> MutexGuard<'_, Option<Arc<Opened>>> {
        self.handle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The handle to answer from, and the file's stamp now: the open handle while the path
    /// still names its file, else the file at the path opened again. One `stat` when
    /// nothing changed.
    fn current(&self) -> Result<(Arc<Opened>, Option<Stamp>), Error> {
        let stamp = Stamp::of(&self.db);
        let held = self.slot().clone();
        if let Some(h) = &held {
            // Same file, or no file at all: a missing file is recreated by the next
            // sync, and until then the last commit we hold is the best answer.
            let same = match (&stamp, &h.id) {
                (None, _) => true,
                (Some(now), Some(then)) => now.same_file(then),
                (Some(_), None) => false,
            };
            if same {
                return Ok((Arc::clone(h), stamp));
            }
        }
        // Record the identity seen *before* opening: if the file is replaced again while
        // it opens, the next query sees a mismatch and opens once more.
        match Index::open(&self.db) {
            Ok(index) => {
                let opened = Arc::new(Opened {
                    index,
                    id: stamp,
                    view: Mutex::new(None),
                });
                *self.slot() = Some(Arc::clone(&opened));
                let mut st = self.state();
                if held.is_some() {
                    st.status.reopened += 1;
                }
                st.status.open_error = None;
                Ok((opened, stamp))
            }
            Err(e) => match held {
                Some(h) => {
                    self.state().status.open_error = Some(e.to_string());
                    Ok((h, stamp))
                }
                None => Err(e),
            },
        }
    }

    /// Runs `f` on the latest read snapshot without waiting for one: when the file changed
    /// since it was taken, the pump is woken to take a new one and this query still
    /// answers from the last commit it has. Only a handle's first query begins a
    /// transaction itself. A query that finds the file damaged makes the next background
    /// sync build it again.
    fn with_view<T>(
        self: &Arc<Self>,
        f: impl FnOnce(&crate::store::Store, &redb::ReadTransaction) -> Result<T, StoreError>,
    ) -> Result<T, Error> {
        let out = self.view_and(f);
        if let Err(Error::Store(e)) = &out {
            if e.is_corrupt() && !self.opts.readonly {
                // A file cut short after its last commit is noticed by the first query that
                // reads a missing page (a sync with nothing to change reads too little):
                // the next background sync builds it again, the damaged file kept aside.
                self.state().rebuild_due = true;
            }
        }
        out
    }

    /// [`Inner::with_view`]'s work.
    fn view_and<T>(
        self: &Arc<Self>,
        f: impl FnOnce(&crate::store::Store, &redb::ReadTransaction) -> Result<T, StoreError>,
    ) -> Result<T, Error> {
        let (h, stamp) = self.current()?;
        self.start_pump();
        let view = match h.view() {
            Some(v) => {
                if !v.current(stamp) {
                    self.nudge();
                }
                v
            }
            None => h.take_view(&self.db)?,
        };
        let store = h.index.store();
        store::contain(store.path(), || f(store, &view.txn)).map_err(Error::from)
    }

    /// Takes a new snapshot of the current handle when the file changed since the last
    /// one (or always, with `force`). For the pump and for syncs, never for turns.
    fn publish(&self, force: bool) {
        let Some(h) = self.slot().clone() else {
            return;
        };
        let stamp = Stamp::of(&self.db);
        if let (Some(now), Some(id)) = (&stamp, &h.id) {
            if !now.same_file(id) {
                return; // replaced: the next query opens the new file
            }
        }
        if !force && h.view().is_some_and(|v| v.current(stamp)) {
            return;
        }
        if h.take_view(&self.db).is_ok() {
            self.state().status.snapshots += 1;
        }
    }

    fn nudge(&self) {
        *self
            .pump
            .nudged
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = true;
        self.pump.wake.notify_one();
    }

    fn start_pump(self: &Arc<Self>) {
        self.pump.started.call_once(|| {
            let weak = Arc::downgrade(self);
            // Without the thread the queries still answer, from the snapshot they have.
            let _ = std::thread::Builder::new()
                .name("skillidx-snapshots".into())
                .spawn(move || pump(weak));
        });
    }
}

/// The snapshot pump: keeps the published read transaction at the last commit, so that
/// no query waits in redb's `begin_read` while another process's writer holds the header.
fn pump(weak: std::sync::Weak<Inner>) {
    use std::sync::atomic::Ordering;
    loop {
        let Some(inner) = weak.upgrade() else {
            return;
        };
        if inner.pump.stop.load(Ordering::Relaxed) {
            return;
        }
        inner.publish(false);
        let nudged = inner
            .pump
            .nudged
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let (mut nudged, _) = inner
            .pump
            .wake
            .wait_timeout_while(nudged, PUMP_PERIOD, |n| {
                !*n && !inner.pump.stop.load(Ordering::Relaxed)
            })
            .unwrap_or_else(PoisonError::into_inner);
        *nudged = false;
    }
}

/// Which commit of a profile a snapshot shows: its generation (moved by every commit that
/// changes it) and the start of the sync that made it (a rebuilt file, or a profile made
/// again, starts its generations over). What is derived from one state is valid until the
/// state changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct IndexState {
    /// The profile's generation.
    pub generation: u64,
    /// When the sync that committed it started (ns since the epoch).
    pub synced_at_ns: i64,
    /// How many skills the profile offers (before any session's rules).
    pub docs: u32,
}

impl IndexState {
    fn of(stats: &crate::store::records::CorpusStats) -> IndexState {
        IndexState {
            generation: stats.generation,
            synced_at_ns: stats.synced_at_ns,
            docs: stats.docs,
        }
    }
}

/// An [`Index`] for a long-running reader that answers one request at a time (`skillidx
/// search --batch`), following its path as [`LiveIndex`] does: before each request one
/// `stat` compares the file at the path with the open one, and a file replaced (by `sync
/// --rebuild`, a restored backup) is opened again, as is the same file after a request
/// found it damaged (a redb handle that met an I/O error answers nothing more). A
/// replacement that cannot be opened (yet) leaves the held file answering; a damaged one
/// that cannot be opened again makes that error the request's answer, and the next request
/// tries again.
pub struct Followed {
    db: PathBuf,
    index: Option<Index>,
    id: Option<Stamp>,
    suspect: bool,
}

impl Followed {
    /// Follows `db`, already opened as `index`.
    pub fn new(db: PathBuf, index: Index) -> Followed {
        Followed {
            id: Stamp::of(&db),
            db,
            index: Some(index),
            suspect: false,
        }
    }

    /// Runs `f` on the index at the path, opened again first when it was replaced or found
    /// damaged.
    pub fn with<T>(&mut self, f: impl FnOnce(&Index) -> Result<T, Error>) -> Result<T, Error> {
        let now = Stamp::of(&self.db);
        let replaced = match (&now, &self.id) {
            (Some(now), Some(then)) => !now.same_file(then),
            (Some(_), None) => true,
            (None, _) => false,
        };
        if replaced || self.suspect || self.index.is_none() {
            match Index::open(&self.db) {
                Ok(index) => {
                    (self.index, self.id, self.suspect) = (Some(index), now, false);
                }
                // Replaced by a file that cannot be opened (yet): the one held answers, as
                // in a `LiveIndex`.
                Err(_) if !self.suspect && self.index.is_some() => {}
                Err(e) => return Err(e),
            }
        }
        let Some(index) = &self.index else {
            return Err(StoreError::Missing(self.db.clone()).into());
        };
        let out = f(index);
        if let Err(Error::Store(e)) = &out {
            self.suspect = e.is_damage();
        }
        out
    }
}

impl LiveIndex {
    /// The index of `profile` (default: the active one) of the root home `home` (default:
    /// `$HERMES_HOME`, else `~/.hermes`), in `db` (default: `<root home>/skillidx.redb`).
    /// With `cwd`, a session's working directory: inside a trusted project (Hermes 0.21) the
    /// project's profile ([`Profile::for_session`]).
    pub fn locate(
        home: Option<&Path>,
        profile: Option<&str>,
        db: Option<&Path>,
        cwd: Option<&Path>,
        opts: LiveOptions,
    ) -> Result<LiveIndex, Error> {
        let root = Root::locate(home)?;
        let name = profile.map_or_else(|| root.active_profile_name(), str::to_owned);
        let mut profile = root.profile(&name)?;
        if let Some(cwd) = cwd {
            let version = crate::version::HermesVersion::resolve(opts.hermes, None);
            profile = profile.for_session(cwd, version).0;
        }
        let db = db.map_or_else(|| root.default_db_path(), Path::to_path_buf);
        Self::new(profile, db, opts)
    }

    /// Opens `db` read-only for `profile`. A missing file is fine (the first sync creates
    /// it) unless `opts.readonly`; any other problem with the file is an error.
    pub fn new(profile: Profile, db: PathBuf, opts: LiveOptions) -> Result<LiveIndex, Error> {
        let inner = Arc::new(Inner {
            freshness: Mutex::new(Freshness::of_profile(&profile, opts.ttl)),
            db,
            profile,
            opts,
            handle: Mutex::new(None),
            state: Mutex::default(),
            idle: Condvar::new(),
            pump: Pump::default(),
            #[cfg(feature = "semantic")]
            semantic: std::sync::OnceLock::new(),
        });
        match inner.current() {
            Ok(_) => {}
            Err(Error::Store(StoreError::Missing(_) | StoreError::Empty(_))) if !opts.readonly => {}
            // A damaged file is built again by the first sync (`prepare`, `refresh`).
            Err(Error::Store(e)) if e.is_corrupt() && !opts.readonly => {
                inner.state().rebuild_due = true;
            }
            Err(e) => return Err(e),
        }
        Ok(LiveIndex { inner })
    }

    /// Turns the semantic stage on with `model`: from now on syncs embed the skills and
    /// queries re-rank with it (their own [`SearchOptions::semantic`] wins). Once per index;
    /// a second call is ignored.
    #[cfg(feature = "semantic")]
    pub fn enable_semantic(&self, model: Arc<crate::semantic::Model>) {
        let _ = self
            .inner
            .semantic
            .set(crate::search::semantic::SemanticStage::new(model));
    }

    /// The profile.
    pub fn profile(&self) -> &Profile {
        &self.inner.profile
    }

    /// The index file.
    pub fn db(&self) -> &Path {
        &self.inner.db
    }

    /// The options.
    pub fn options(&self) -> LiveOptions {
        self.inner.opts
    }

    /// Per-turn freshness: checks the cheap stat signature (and the TTL) and, when a sync
    /// is due, starts one in the background. Never syncs inline and never waits; returns
    /// whether it started a sync.
    pub fn refresh(&self) -> bool {
        let inner = &self.inner;
        if inner.opts.readonly {
            return false;
        }
        {
            let st = inner.state();
            if st.status.syncing || st.retry_at.is_some_and(|t| Instant::now() < t) {
                return false;
            }
            if st.rebuild_due {
                drop(st);
                return self.schedule(0);
            }
        }
        let mut fresh = match inner.freshness.try_lock() {
            Ok(f) => f,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            // Another thread is checking right now and will schedule what is due.
            Err(TryLockError::WouldBlock) => return false,
        };
        let due = fresh.check();
        drop(fresh);
        if !due.stale && inner.db.exists() {
            return false;
        }
        self.schedule(due.signature)
    }

    fn schedule(&self, signature: u64) -> bool {
        let inner = &self.inner;
        {
            let mut st = inner.state();
            if st.status.syncing {
                return false;
            }
            st.status.syncing = true;
        }
        let job = Job {
            inner: Arc::clone(inner),
            signature,
            rebuild: std::mem::take(&mut inner.state().rebuild_due),
        };
        let spawned = std::thread::Builder::new()
            .name("skillidx-sync".into())
            .spawn(move || job.run());
        if let Err(e) = spawned {
            let mut st = inner.state();
            st.status.syncing = false;
            st.status.failures += 1;
            st.status.sync_error = Some(format!("cannot start a background sync: {e}"));
            st.retry_at = Some(Instant::now() + FAILURE_RETRY.min(inner.opts.ttl));
            inner.idle.notify_all();
            return false;
        }
        true
    }

    /// Syncs now, in the calling thread (for an explicit `sync`, not for turns): opens the
    /// file for writing only if there is something to commit. `rebuild` builds the
    /// profile's index again, moving a damaged file aside first. The next query sees the
    /// result.
    pub fn sync(&self, rebuild: bool) -> Result<SyncReport, Error> {
        let inner = &self.inner;
        let signature = inner
            .freshness
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .check()
            .signature;
        let started = Instant::now();
        let opts = SyncOptions {
            rebuild,
            hermes: inner.opts.hermes,
            #[cfg(feature = "semantic")]
            semantic: inner.semantic.get().map(|s| s.model()),
            ..Default::default()
        };
        let index = if rebuild {
            Index::open_for_rebuild(&inner.db, &inner.profile.root)?.0
        } else {
            Index::open_for_sync(&inner.db)?
        };
        let report = index.sync(&inner.profile, &opts)?;
        drop(index);
        inner
            .freshness
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .mark_synced_as(signature, started);
        // A file created or replaced is opened by the next query; one written is read
        // from a new snapshot.
        inner.publish(true);
        Ok(report)
    }

    /// At startup (not a turn): builds the profile's index in the calling thread when the
    /// file or the profile is not in it yet, and returns the report; otherwise starts a
    /// background sync when one is due and returns `None`.
    pub fn prepare(&self) -> Result<Option<SyncReport>, Error> {
        let built = match self.inner.current().and_then(|(h, _)| h.index.profiles()) {
            Ok(profiles) => profiles.contains(&self.inner.profile.name),
            Err(Error::Store(StoreError::Missing(_) | StoreError::Empty(_))) => false,
            Err(Error::Store(e)) if e.is_corrupt() && !self.inner.opts.readonly => {
                self.inner.state().rebuild_due = false;
                return self.sync(true).map(Some);
            }
            Err(e) => return Err(e),
        };
        if built || self.inner.opts.readonly {
            self.refresh();
            return Ok(None);
        }
        self.sync(false).map(Some)
    }

    /// Waits until no background sync is running, at most `timeout` (`None`: no limit);
    /// returns whether none is. For tests, benchmarks and shutdown, never for turns.
    pub fn wait(&self, timeout: Option<Duration>) -> bool {
        let inner = &self.inner;
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut st = inner.state();
        while st.status.syncing {
            match deadline {
                None => st = inner.idle.wait(st).unwrap_or_else(PoisonError::into_inner),
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return false;
                    }
                    st = inner
                        .idle
                        .wait_timeout(st, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
            }
        }
        true
    }

    /// What the background syncs and the handle have been doing.
    pub fn status(&self) -> LiveStatus {
        self.inner.state().status.clone()
    }

    /// `opts` with this process's session for the profile when they name none. The search
    /// would otherwise look the profile's home up in the index, a read transaction of its
    /// own: the one thing a query must not begin.
    fn with_session(&self, opts: &SearchOptions) -> SearchOptions {
        let mut opts = opts.clone();
        if opts.session.is_none() {
            opts.session = Some(Session::for_profile(
                &self.inner.profile.name,
                &self.inner.profile.home,
            ));
        }
        #[cfg(feature = "semantic")]
        if opts.semantic.is_none() {
            opts.semantic = self.inner.semantic.get().cloned();
        }
        opts
    }

    /// The top hits for `query`, from the latest snapshot (never waiting for one).
    pub fn search(&self, query: &str, opts: &SearchOptions) -> Result<Vec<Hit>, Error> {
        let profile = &self.inner.profile.name;
        let opts = self.with_session(opts);
        self.inner
            .with_view(|store, txn| Snapshot::open(store, txn, profile)?.search(query, &opts))
    }

    /// The offered skills `name` may mean ([`Snapshot::named`]), from the latest snapshot.
    pub fn named(&self, name: &str, opts: &SearchOptions) -> Result<Vec<Hit>, Error> {
        let profile = &self.inner.profile.name;
        let opts = self.with_session(opts);
        self.inner
            .with_view(|store, txn| Snapshot::open(store, txn, profile)?.named(name, &opts))
    }

    /// Why `skill` scores what it does for `query`, from the latest snapshot.
    pub fn explain(
        &self,
        query: &str,
        skill: &str,
        opts: &SearchOptions,
    ) -> Result<Option<Explanation>, Error> {
        let profile = &self.inner.profile.name;
        let opts = self.with_session(opts);
        self.inner.with_view(|store, txn| {
            Snapshot::open(store, txn, profile)?.explain(query, skill, &opts)
        })
    }

    /// What Hermes' block lists in `session` (every skill offered there, sorted by category
    /// and name), from the latest snapshot, with the index state it was read from.
    pub fn offered(&self, session: &Session) -> Result<(IndexState, Vec<Offered>), Error> {
        let profile = &self.inner.profile.name;
        self.inner.with_view(|store, txn| {
            let snap = Snapshot::open(store, txn, profile)?;
            Ok((IndexState::of(snap.stats()), snap.offered(session)?))
        })
    }

    /// [`LiveIndex::offered`] with the name of every skill the profile holds, offered or
    /// not ([`Snapshot::offered_and_indexed`]).
    pub fn offered_and_indexed(
        &self,
        session: &Session,
    ) -> Result<(IndexState, Vec<Offered>, crate::search::Indexed), Error> {
        let profile = &self.inner.profile.name;
        self.inner.with_view(|store, txn| {
            let snap = Snapshot::open(store, txn, profile)?;
            let (offered, indexed) = snap.offered_and_indexed(session)?;
            Ok((IndexState::of(snap.stats()), offered, indexed))
        })
    }

    /// The index state of the latest snapshot (which commit of the profile it shows).
    pub fn state(&self) -> Result<IndexState, Error> {
        let profile = &self.inner.profile.name;
        self.inner.with_view(|store, txn| {
            Ok(IndexState::of(Snapshot::open(store, txn, profile)?.stats()))
        })
    }

    /// The profile's figures (a fresh read transaction: not for turns).
    pub fn stats(&self) -> Result<ProfileStats, Error> {
        self.inner
            .current()?
            .0
            .index
            .stats(&self.inner.profile.name)
    }

    /// Every indexed skill of the profile (a fresh read transaction: not for turns).
    pub fn list(&self) -> Result<Vec<SkillEntry>, Error> {
        self.inner.current()?.0.index.list(&self.inner.profile.name)
    }
}

/// One background sync.
struct Job {
    inner: Arc<Inner>,
    signature: u64,
    /// Build the profile again, moving a damaged file aside first.
    rebuild: bool,
}

enum Outcome {
    Synced(Box<SyncReport>),
    Busy,
    /// The message, and whether it said the file is damaged (then the next sync rebuilds).
    Failed(String, bool),
}

impl Job {
    fn run(self) {
        lower_priority();
        let inner = &self.inner;
        let started = Instant::now();
        let started_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let outcome = match SyncLock::try_acquire(&inner.db, &inner.profile.name) {
            SyncLock::Busy => Outcome::Busy,
            lock => {
                let outcome = self.sync();
                drop(lock);
                outcome
            }
        };
        if let Outcome::Synced(report) = &outcome {
            // Before the sync counts as done: the next turn answers from what it committed
            // (or from what another process committed meanwhile).
            inner.publish(report.committed);
            inner
                .freshness
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .mark_synced_as(self.signature, started);
        }
        let mut st = inner.state();
        match outcome {
            Outcome::Synced(report) => {
                st.status.syncs += 1;
                st.status.sync_error = None;
                st.status.last_sync = Some(LastSync {
                    started_ms,
                    elapsed_ms: started.elapsed().as_secs_f64() * 1e3,
                    committed: report.committed,
                    generation: report.generation,
                    active: report.active,
                });
                st.retry_at = None;
            }
            Outcome::Busy => {
                st.status.busy += 1;
                st.retry_at = Some(Instant::now() + BUSY_RETRY.min(inner.opts.ttl));
            }
            Outcome::Failed(message, corrupt) => {
                st.status.failures += 1;
                st.status.sync_error = Some(message);
                // A file cut on its last page answers queries but fails every sync: build
                // it again.
                st.rebuild_due |= corrupt && !inner.opts.readonly;
                st.retry_at = Some(Instant::now() + FAILURE_RETRY.min(inner.opts.ttl));
            }
        }
        st.status.syncing = false;
        drop(st);
        inner.idle.notify_all();
    }

    fn sync(&self) -> Outcome {
        let (db, profile) = (&self.inner.db, &self.inner.profile);
        let opts = SyncOptions {
            rebuild: self.rebuild,
            hermes: self.inner.opts.hermes,
            #[cfg(feature = "semantic")]
            semantic: self.inner.semantic.get().map(|s| s.model()),
            ..Default::default()
        };
        let work = || -> Result<SyncReport, Error> {
            let index = if self.rebuild {
                Index::open_for_rebuild(db, &profile.root)?.0
            } else {
                Index::open_for_sync(db)?
            };
            index.sync(profile, &opts)
        };
        let result = catch_unwind(AssertUnwindSafe(|| match pool() {
            Some(pool) => pool.install(work),
            None => work(),
        }));
        match result {
            Ok(Ok(report)) => Outcome::Synced(Box::new(report)),
            Ok(Err(e)) => {
                let corrupt = matches!(&e, Error::Store(s) if s.is_corrupt());
                Outcome::Failed(e.to_string(), corrupt)
            }
            Err(payload) => Outcome::Failed(
                format!(
                    "internal error in the background sync: {}",
                    payload
                        .downcast_ref::<&str>()
                        .map(|s| (*s).to_owned())
                        .or_else(|| payload.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "panic".to_owned())
                ),
                false,
            ),
        }
    }
}

/// The cross-process "one sync per profile" lock: `flock` on a file beside the index,
/// released when dropped (or when the process dies).
enum SyncLock {
    Held(#[allow(dead_code)] File),
    Busy,
    /// The lock file could not be made (e.g. a read-only folder): sync without it; a sync
    /// with nothing to write still succeeds there.
    Unavailable,
}

impl SyncLock {
    fn path(db: &Path, profile: &str) -> PathBuf {
        let mut name = db.file_name().unwrap_or_default().to_owned();
        name.push(format!(".sync-{profile}.lock"));
        db.with_file_name(name)
    }

    fn try_acquire(db: &Path, profile: &str) -> SyncLock {
        let mut open = std::fs::OpenOptions::new();
        open.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            open.mode(0o600);
        }
        let Ok(file) = open.open(Self::path(db, profile)) else {
            return SyncLock::Unavailable;
        };
        match file.try_lock() {
            Ok(()) => SyncLock::Held(file),
            Err(std::fs::TryLockError::WouldBlock) => SyncLock::Busy,
            Err(std::fs::TryLockError::Error(_)) => SyncLock::Unavailable,
        }
    }
}

/// The rayon pool background syncs parse in: its threads run at [`SYNC_NICE`].
fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("skillidx-sync-{i}"))
            .start_handler(|_| lower_priority())
            .build()
            .ok()
    })
    .as_ref()
}

/// Lowers the calling thread's CPU priority to [`SYNC_NICE`] (Linux: per thread).
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority only reads its integer arguments; a thread id of the calling
    // thread names that thread alone on Linux.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, SYNC_NICE);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn write(p: &Path, text: &str) {
        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        fs::write(p, text).expect("write");
    }

    fn skill(home: &Path, rel: &str, name: &str, desc: &str) {
        write(
            &home.join("skills").join(rel).join("SKILL.md"),
            &format!("---\nname: {name}\ndescription: {desc}\n---\n# {name}\n"),
        );
    }

    fn live(home: &Path, ttl: Duration) -> LiveIndex {
        LiveIndex::locate(
            Some(home),
            None,
            Some(&home.join("idx.redb")),
            None,
            LiveOptions {
                ttl,
                ..LiveOptions::default()
            },
        )
        .expect("open")
    }

    fn top(l: &LiveIndex, q: &str) -> Option<String> {
        l.search(q, &SearchOptions::default())
            .expect("search")
            .into_iter()
            .next()
            .map(|h| h.description)
    }

    #[test]
    fn opening_writes_nothing_and_prepare_builds_a_missing_index() {
        let t = tempfile::tempdir().expect("tempdir");
        skill(t.path(), "a/x", "x-skill", "alpha beta");
        let l = live(t.path(), Duration::from_secs(3600));
        assert!(!t.path().join("idx.redb").exists(), "open created the file");
        assert!(matches!(
            l.search("alpha", &SearchOptions::default()),
            Err(Error::Store(StoreError::Missing(_)))
        ));
        let built = l.prepare().expect("prepare");
        assert!(built.is_some_and(|r| r.active == 1));
        assert_eq!(top(&l, "alpha").as_deref(), Some("alpha beta"));
        // Built and fresh: prepare neither builds nor schedules.
        assert!(l.prepare().expect("prepare").is_none());
        assert!(l.wait(Some(Duration::from_secs(30))));
        assert_eq!(l.status().syncs, 0);
        // A read-only open of a missing file is an error.
        let missing = LiveIndex::locate(
            Some(t.path()),
            None,
            Some(&t.path().join("none.redb")),
            None,
            LiveOptions {
                readonly: true,
                ..Default::default()
            },
        );
        assert!(matches!(missing, Err(Error::Store(StoreError::Missing(_)))));
    }

    #[test]
    fn refresh_schedules_in_the_background_and_the_next_query_sees_it() {
        let t = tempfile::tempdir().expect("tempdir");
        skill(t.path(), "a/x", "x-skill", "alpha beta");
        let l = live(t.path(), Duration::from_secs(3600));
        l.prepare().expect("prepare");
        assert!(!l.refresh(), "fresh after the startup build");
        skill(t.path(), "b/y", "y-skill", "gamma delta");
        assert!(l.refresh(), "a new skill folder schedules a sync");
        assert!(l.wait(Some(Duration::from_secs(30))));
        let st = l.status();
        assert_eq!((st.syncs, st.failures), (1, 0), "{st:?}");
        assert!(st.last_sync.is_some_and(|s| s.committed && s.active == 2));
        assert_eq!(top(&l, "gamma").as_deref(), Some("gamma delta"));
        assert!(!l.refresh());
    }

    #[test]
    fn another_writers_commit_reaches_the_queries_through_the_pump() {
        let t = tempfile::tempdir().expect("tempdir");
        skill(t.path(), "a/x", "x-skill", "alpha beta");
        let l = live(t.path(), Duration::from_secs(3600));
        l.prepare().expect("prepare");
        assert_eq!(top(&l, "alpha").as_deref(), Some("alpha beta"));
        // Another writer (as a cron sync would) commits an edit; this index never syncs.
        skill(t.path(), "a/x", "x-skill", "alpha edited");
        let r = Index::open_for_sync(l.db())
            .and_then(|i| i.sync(l.profile(), &SyncOptions::default()))
            .expect("sync");
        assert!(r.committed);
        let deadline = Instant::now() + Duration::from_secs(10);
        while top(&l, "alpha").as_deref() != Some("alpha edited") {
            assert!(
                Instant::now() < deadline,
                "the commit never reached the queries"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let st = l.status();
        assert!(st.snapshots >= 1 && st.syncs == 0, "{st:?}");
    }

    #[test]
    fn a_second_process_holding_the_lock_skips_the_sync() {
        let t = tempfile::tempdir().expect("tempdir");
        skill(t.path(), "a/x", "x-skill", "alpha beta");
        let l = live(t.path(), Duration::from_millis(50));
        l.prepare().expect("prepare");
        let db = t.path().join("idx.redb");
        let SyncLock::Held(held) = SyncLock::try_acquire(&db, "default") else {
            panic!("lock not taken");
        };
        skill(t.path(), "b/y", "y-skill", "gamma delta");
        assert!(l.refresh());
        assert!(l.wait(Some(Duration::from_secs(30))));
        assert_eq!(l.status().busy, 1);
        assert_eq!(top(&l, "gamma"), None);
        drop(held);
        std::thread::sleep(Duration::from_millis(60));
        assert!(l.refresh(), "retried once the lock is free");
        assert!(l.wait(Some(Duration::from_secs(30))));
        assert_eq!(top(&l, "gamma").as_deref(), Some("gamma delta"));
    }

    #[test]
    fn a_replaced_file_is_opened_again() {
        let t = tempfile::tempdir().expect("tempdir");
        skill(t.path(), "a/x", "x-skill", "alpha beta");
        let l = live(t.path(), Duration::from_secs(3600));
        l.prepare().expect("prepare");
        assert_eq!(top(&l, "alpha").as_deref(), Some("alpha beta"));
        // Another index of the same home, with an edit, moved over the path.
        skill(t.path(), "a/x", "x-skill", "alpha replaced");
        let other = t.path().join("other.redb");
        Index::open_for_sync(&other)
            .and_then(|i| i.sync(l.profile(), &SyncOptions::default()))
            .expect("sync other");
        fs::rename(&other, t.path().join("idx.redb")).expect("rename");
        assert_eq!(top(&l, "alpha").as_deref(), Some("alpha replaced"));
        assert_eq!(l.status().reopened, 1);
        // Junk moved over the path: the last good handle answers, and says why.
        let junk = t.path().join("junk");
        fs::write(&junk, b"not a database").expect("junk");
        fs::rename(&junk, t.path().join("idx.redb")).expect("rename");
        assert_eq!(top(&l, "alpha").as_deref(), Some("alpha replaced"));
        let st = l.status();
        assert!(
            st.open_error
                .as_deref()
                .is_some_and(|e| e.contains("not a skillidx index")),
            "{st:?}"
        );
    }

    #[test]
    fn failures_are_kept_until_a_sync_succeeds() {
        let t = tempfile::tempdir().expect("tempdir");
        skill(t.path(), "a/x", "x-skill", "alpha beta");
        let db = t.path().join("idx.redb");
        let l = live(t.path(), Duration::from_millis(20));
        // A folder where the index should be: every sync fails.
        fs::create_dir(&db).expect("mkdir");
        assert!(l.refresh());
        assert!(l.wait(Some(Duration::from_secs(30))));
        let st = l.status();
        assert_eq!(st.failures, 1);
        assert!(st.sync_error.is_some(), "{st:?}");
        assert!(!l.refresh(), "backs off after a failure");
        fs::remove_dir(&db).expect("rmdir");
        std::thread::sleep(Duration::from_millis(30));
        assert!(l.refresh());
        assert!(l.wait(Some(Duration::from_secs(30))));
        let st = l.status();
        assert_eq!((st.syncs, st.sync_error), (1, None));
        assert_eq!(top(&l, "alpha").as_deref(), Some("alpha beta"));
    }
}
