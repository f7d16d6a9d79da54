//! A long-running process's index: what the Hermes plugin answers turns from.
//!
//! A gateway answers turns from several threads for days while skills change on disk and
//! other processes (a cron `skillidx sync --all-profiles`, CLI sessions, other gateways)
//! sync the same file. [`LiveIndex`] keeps every turn off the sync path:
//!
//! - **Queries use a read-only handle** ([`Index::open`]: the lean read cache, no writer,
//!   nothing written on open). Before each query one `stat` of the index path compares its
//!   device and inode with the open handle's. When the file was replaced (`sync --rebuild`
//!   moved a damaged one aside, a backup was restored), the path is opened again and the
//!   answers come from the new file. While the new file cannot be opened, the old handle
//!   keeps answering and [`LiveStatus::open_error`] says why.
//! - **[`LiveIndex::refresh`] only checks and schedules.** It takes the cheap stat
//!   signature of [`Freshness`] (and the TTL); when a sync is due it starts one on a
//!   background thread and returns at once. It never syncs inline. The result is seen from
//!   the next turn on: each query's read transaction sees the last commit.
//! - **At most one sync in flight per profile**: a flag in this process, and across
//!   processes a `flock` try-lock on `<index>.sync-<profile>.lock` beside the index. A
//!   second gateway on the same home that finds it held skips its sync (the other one's
//!   commit is what it will read) and checks again a moment later.
//! - **No turn waits on a lock.** The handle slot is locked only to clone an `Arc`; the
//!   freshness state is taken with `try_lock`, so a turn that finds another thread
//!   checking skips its own check; a sync in flight or backing off after a failure skips
//!   the check altogether.
//! - The background sync runs at a lower CPU priority (`nice` 10 for its thread and for
//!   the threads of its own rayon pool), so on a small machine the turns get the cores
//!   first. A failure is kept as [`LiveStatus::sync_error`] (cleared by the next success)
//!   and retried after [`FAILURE_RETRY`] (or the TTL, when shorter).
//!
//! Why a thread and not a `skillidx sync` child process: the plugin's Python environment
//! need not have the `skillidx` executable on its `PATH`, a thread costs no process start
//! or second open of the file, and its failure comes back as a typed error; the lowered
//! priority and the sync's own short-lived write handle keep it out of the turns' way.

use crate::bm25::{Explanation, Hit, SearchOptions};
use crate::freshness::{Freshness, DEFAULT_TTL};
use crate::home::{Profile, Root};
use crate::store::StoreError;
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
}

impl Default for LiveOptions {
    fn default() -> Self {
        LiveOptions {
            ttl: DEFAULT_TTL,
            readonly: false,
        }
    }
}

/// A file's identity: device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId {
    dev: u64,
    ino: u64,
}

fn file_id(path: &Path) -> Option<FileId> {
    let meta = std::fs::metadata(path).ok()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some(FileId {
            dev: meta.dev(),
            ino: meta.ino(),
        })
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        Some(FileId { dev: 0, ino: 0 })
    }
}

/// An open read-only handle and the identity the path had when it was opened.
struct Opened {
    index: Index,
    id: Option<FileId>,
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
    /// The last successful background sync.
    pub last_sync: Option<LastSync>,
}

#[derive(Default)]
struct State {
    status: LiveStatus,
    /// No background sync starts before this.
    retry_at: Option<Instant>,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    idle: Condvar,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One profile's index in a long-running process: read-only queries that follow the file,
/// syncs in the background. Safe to share between threads. See the module docs.
pub struct LiveIndex {
    db: PathBuf,
    profile: Profile,
    opts: LiveOptions,
    handle: Mutex<Option<Arc<Opened>>>,
    freshness: Arc<Mutex<Freshness>>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for LiveIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LiveIndex")
            .field("db", &self.db)
            .field("profile", &self.profile)
            .finish()
    }
}

impl LiveIndex {
    /// The index of `profile` (default: the active one) of the root home `home` (default:
    /// `$HERMES_HOME`, else `~/.hermes`), in `db` (default: `<root home>/skillidx.redb`).
    pub fn locate(
        home: Option<&Path>,
        profile: Option<&str>,
        db: Option<&Path>,
        opts: LiveOptions,
    ) -> Result<LiveIndex, Error> {
        let root = Root::locate(home);
        let name = profile.map_or_else(|| root.active_profile_name(), str::to_owned);
        let profile = root.profile(&name)?;
        let db = db.map_or_else(|| root.default_db_path(), Path::to_path_buf);
        Self::new(profile, db, opts)
    }

    /// Opens `db` read-only for `profile`. A missing file is fine (the first sync creates
    /// it) unless `opts.readonly`; any other problem with the file is an error.
    pub fn new(profile: Profile, db: PathBuf, opts: LiveOptions) -> Result<LiveIndex, Error> {
        let live = LiveIndex {
            freshness: Arc::new(Mutex::new(Freshness::with_ttl(&profile.home, opts.ttl))),
            db,
            profile,
            opts,
            handle: Mutex::new(None),
            shared: Arc::default(),
        };
        match live.current() {
            Ok(_) => {}
            Err(Error::Store(StoreError::Missing(_))) if !opts.readonly => {}
            Err(e) => return Err(e),
        }
        Ok(live)
    }

    /// The profile.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// The index file.
    pub fn db(&self) -> &Path {
        &self.db
    }

    /// The options.
    pub fn options(&self) -> LiveOptions {
        self.opts
    }

    fn slot(&self) -> MutexGuard<'_, Option<Arc<Opened>>> {
        self.handle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The handle to answer from: the open one while the path still names its file, else
    /// the file at the path opened again (one `stat` when nothing changed).
    fn current(&self) -> Result<Arc<Opened>, Error> {
        let id = file_id(&self.db);
        let held = self.slot().clone();
        if let Some(h) = &held {
            // Same file, or no file at all: a missing file is recreated by the next
            // sync, and until then the last commit we hold is the best answer.
            if id.is_none() || h.id == id {
                return Ok(h.clone());
            }
        }
        // Record the identity seen *before* opening: if the file is replaced again while
        // it opens, the next query sees a mismatch and opens once more.
        match Index::open(&self.db) {
            Ok(index) => {
                let opened = Arc::new(Opened { index, id });
                *self.slot() = Some(opened.clone());
                let mut st = self.shared.state();
                if held.is_some() {
                    st.status.reopened += 1;
                }
                st.status.open_error = None;
                Ok(opened)
            }
            Err(e) => match held {
                Some(h) => {
                    self.shared.state().status.open_error = Some(e.to_string());
                    Ok(h)
                }
                None => Err(e),
            },
        }
    }

    /// Per-turn freshness: checks the cheap stat signature (and the TTL) and, when a sync
    /// is due, starts one in the background. Never syncs inline and never waits; returns
    /// whether it started a sync.
    pub fn refresh(&self) -> bool {
        if self.opts.readonly {
            return false;
        }
        {
            let st = self.shared.state();
            if st.status.syncing || st.retry_at.is_some_and(|t| Instant::now() < t) {
                return false;
            }
        }
        let mut fresh = match self.freshness.try_lock() {
            Ok(f) => f,
            Err(TryLockError::Poisoned(p)) => p.into_inner(),
            // Another thread is checking right now and will schedule what is due.
            Err(TryLockError::WouldBlock) => return false,
        };
        let due = fresh.check();
        drop(fresh);
        if !due.stale && self.db.exists() {
            return false;
        }
        self.schedule(due.signature)
    }

    fn schedule(&self, signature: u64) -> bool {
        {
            let mut st = self.shared.state();
            if st.status.syncing {
                return false;
            }
            st.status.syncing = true;
        }
        let job = Job {
            db: self.db.clone(),
            profile: self.profile.clone(),
            ttl: self.opts.ttl,
            freshness: Arc::clone(&self.freshness),
            shared: Arc::clone(&self.shared),
            signature,
        };
        let spawned = std::thread::Builder::new()
            .name("skillidx-sync".into())
            .spawn(move || job.run());
        if let Err(e) = spawned {
            let mut st = self.shared.state();
            st.status.syncing = false;
            st.status.failures += 1;
            st.status.sync_error = Some(format!("cannot start a background sync: {e}"));
            st.retry_at = Some(Instant::now() + FAILURE_RETRY.min(self.opts.ttl));
            self.shared.idle.notify_all();
            return false;
        }
        true
    }

    /// Syncs now, in the calling thread (for an explicit `sync`, not for turns): opens the
    /// file for writing only if there is something to commit. `rebuild` builds the
    /// profile's index again, moving a damaged file aside first.
    pub fn sync(&self, rebuild: bool) -> Result<SyncReport, Error> {
        let signature = self
            .freshness
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .check()
            .signature;
        let started = Instant::now();
        let opts = SyncOptions {
            rebuild,
            ..Default::default()
        };
        let index = if rebuild {
            Index::open_for_rebuild(&self.db)?.0
        } else {
            Index::open_for_sync(&self.db)?
        };
        let report = index.sync(&self.profile, &opts)?;
        self.freshness
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .mark_synced_as(signature, started);
        Ok(report)
    }

    /// At startup (not a turn): builds the profile's index in the calling thread when the
    /// file or the profile is not in it yet, and returns the report; otherwise starts a
    /// background sync when one is due and returns `None`.
    pub fn prepare(&self) -> Result<Option<SyncReport>, Error> {
        let built = match self.current() {
            Ok(h) => h.index.profiles()?.contains(&self.profile.name),
            Err(Error::Store(StoreError::Missing(_))) => false,
            Err(e) => return Err(e),
        };
        if built || self.opts.readonly {
            self.refresh();
            return Ok(None);
        }
        self.sync(false).map(Some)
    }

    /// Waits until no background sync is running, at most `timeout` (`None`: no limit);
    /// returns whether none is. For tests, benchmarks and shutdown, never for turns.
    pub fn wait(&self, timeout: Option<Duration>) -> bool {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut st = self.shared.state();
        while st.status.syncing {
            match deadline {
                None => {
                    st = self
                        .shared
                        .idle
                        .wait(st)
                        .unwrap_or_else(PoisonError::into_inner)
                }
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return false;
                    }
                    st = self
                        .shared
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
        self.shared.state().status.clone()
    }

    /// The top hits for `query`.
    pub fn search(&self, query: &str, opts: &SearchOptions) -> Result<Vec<Hit>, Error> {
        self.current()?
            .index
            .search(&self.profile.name, query, opts)
    }

    /// Why `skill` scores what it does for `query`.
    pub fn explain(
        &self,
        query: &str,
        skill: &str,
        opts: &SearchOptions,
    ) -> Result<Option<Explanation>, Error> {
        self.current()?
            .index
            .explain(&self.profile.name, query, skill, opts)
    }

    /// The profile's figures.
    pub fn stats(&self) -> Result<ProfileStats, Error> {
        self.current()?.index.stats(&self.profile.name)
    }

    /// Every indexed skill of the profile.
    pub fn list(&self) -> Result<Vec<SkillEntry>, Error> {
        self.current()?.index.list(&self.profile.name)
    }
}

/// One background sync.
struct Job {
    db: PathBuf,
    profile: Profile,
    ttl: Duration,
    freshness: Arc<Mutex<Freshness>>,
    shared: Arc<Shared>,
    signature: u64,
}

enum Outcome {
    Synced(Box<SyncReport>),
    Busy,
    Failed(String),
}

impl Job {
    fn run(self) {
        lower_priority();
        let started = Instant::now();
        let started_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let outcome = match SyncLock::try_acquire(&self.db, &self.profile.name) {
            SyncLock::Busy => Outcome::Busy,
            lock => {
                let outcome = self.sync();
                drop(lock);
                outcome
            }
        };
        let mut st = self.shared.state();
        match outcome {
            Outcome::Synced(report) => {
                self.freshness
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .mark_synced_as(self.signature, started);
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
                st.retry_at = Some(Instant::now() + BUSY_RETRY.min(self.ttl));
            }
            Outcome::Failed(message) => {
                st.status.failures += 1;
                st.status.sync_error = Some(message);
                st.retry_at = Some(Instant::now() + FAILURE_RETRY.min(self.ttl));
            }
        }
        st.status.syncing = false;
        drop(st);
        self.shared.idle.notify_all();
    }

    fn sync(&self) -> Outcome {
        let work = || -> Result<SyncReport, Error> {
            Index::open_for_sync(&self.db)?.sync(&self.profile, &SyncOptions::default())
        };
        let result = catch_unwind(AssertUnwindSafe(|| match pool() {
            Some(pool) => pool.install(work),
            None => work(),
        }));
        match result {
            Ok(Ok(report)) => Outcome::Synced(Box::new(report)),
            Ok(Err(e)) => Outcome::Failed(e.to_string()),
            Err(payload) => Outcome::Failed(format!(
                "internal error in the background sync: {}",
                payload
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".to_owned())
            )),
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
            LiveOptions {
                ttl,
                readonly: false,
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
