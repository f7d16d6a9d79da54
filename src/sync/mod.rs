//! Sync: bring one profile's index in line with the skills on disk.
//!
//! Three steps, so the write lock is held only to write:
//! 1. [`observe`], with no lock: read the profile's config, walk its roots, stat every
//!    SKILL.md, and against the base (the last commit, read in one read transaction) hash
//!    only files whose stat changed and parse only files whose hash changed, in parallel.
//! 2. [`plan`], pure: the base, the observations, the configuration and the OS → the
//!    changes. An empty plan ends the sync without opening the file for writing.
//! 3. [`apply`], in one write transaction: when another sync committed after the base
//!    was read (the profile's generation moved), plan again against what is committed
//!    now; then write the plan and commit.

pub mod apply;
#[cfg(feature = "semantic")]
pub mod embed;
pub mod observe;
pub mod plan;

use crate::config::HermesConfig;
use crate::failpoint;
use crate::home::Profile;
use crate::scan::{self, Problem};
use crate::skill;
use crate::store::records::*;
use crate::store::{self, decode, encode, ProfileTables, Store, StoreError, PROFILES};
use crate::version::HermesVersion;
use plan::Committed;
use redb::{ReadableTable, WriteTransaction};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

pub use observe::MAX_FILE_BYTES;

/// The version of the rules that turn a SKILL.md into stored documents: parsing, offer
/// conditions, safety flags, tokenizing. Bump it with any change to what a file produces.
/// Unchanged files are not read again, so without it an index built by an older skillidx
/// would keep that build's reading of every file; a sync that finds its profile made by
/// another version reads every file again instead, in its one transaction.
pub const RULES_VERSION: u64 = 5;

/// The reading rules a profile's documents are made by under Hermes `version`: skillidx's
/// own ([`RULES_VERSION`]) and the Hermes release's (which names and settings it reads), as
/// stored in the profile's state.
pub fn reading_rules(version: crate::version::HermesVersion) -> u64 {
    RULES_VERSION * 100 + version.code()
}

/// How a sync should run.
#[derive(Default)]
pub struct SyncOptions<'a> {
    /// Forget the profile's index and build it again from the files.
    pub rebuild: bool,
    /// Called with (files examined, files to examine) while files are read.
    pub progress: Option<&'a (dyn Fn(usize, usize) + Sync)>,
    /// The OS to decide `platforms` for; the running one when `None`.
    pub os: Option<String>,
    /// The Hermes release whose rules decide what is offered; `None`: the Hermes install
    /// found on `PATH`, else the release the profile's index already follows, else the
    /// newest ([`crate::version::HermesVersion::resolve`]).
    pub hermes: Option<crate::version::HermesVersion>,
    /// The semantic model: when set, every indexed skill without a vector is embedded
    /// (see [`embed`]).
    #[cfg(feature = "semantic")]
    pub semantic: Option<&'a crate::semantic::Model>,
    /// Called with (skills embedded, skills to embed) while skills are embedded.
    #[cfg(feature = "semantic")]
    pub embed_progress: Option<&'a (dyn Fn(usize, usize) + Sync)>,
}

/// What a sync did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SyncReport {
    /// The profile synced.
    pub profile: String,
    /// Skills indexed for the first time.
    pub added: usize,
    /// Skills whose SKILL.md changed.
    pub updated: usize,
    /// Skills gone from disk.
    pub removed: usize,
    /// Skills left as they were.
    pub unchanged: usize,
    /// Files and folders that could not be indexed, with the reason.
    pub skipped: Vec<Problem>,
    /// Skills indexed through a fallback (e.g. invalid YAML read as `key: value` lines),
    /// or flagged as a possible prompt injection.
    pub warnings: Vec<Problem>,
    /// Skills indexed but not offered (disabled, other OS, shadowed).
    pub inactive: usize,
    /// Skills offered.
    pub active: usize,
    /// Files whose bytes were read and hashed.
    pub hashed: usize,
    /// Files parsed and tokenized.
    pub parsed: usize,
    /// Folders listed (the others were walked from the folder cache).
    pub listed: usize,
    /// Whether a transaction was committed.
    pub committed: bool,
    /// Whether every file was read again because the index was made by other reading rules
    /// (its documents all rewritten: the file holds their old pages until compacted).
    pub read_again: bool,
    /// Whether another sync committed while this one observed, so it planned again
    /// against that commit.
    pub replanned: bool,
    /// The profile's generation after the sync.
    pub generation: u64,
    /// How long the write lock was waited for (opening the file for writing and beginning
    /// the write transaction), in milliseconds.
    pub lock_wait_ms: f64,
    /// Wall time, in milliseconds.
    pub elapsed_ms: f64,
    /// Where the time went, in milliseconds, by phase.
    pub phases_ms: Vec<(&'static str, f64)>,
    /// Skills embedded by the semantic model (a changed skill, or one without a vector).
    #[cfg(feature = "semantic")]
    pub embedded: usize,
}

impl SyncReport {
    fn phase(&mut self, name: &'static str, since: &mut Instant) {
        self.phases_ms
            .push((name, since.elapsed().as_secs_f64() * 1e3));
        *since = Instant::now();
    }

    /// Counts the files hashed and the files parsed.
    fn count_observed(&mut self, observed: &[observe::Observed]) {
        self.hashed = observed
            .iter()
            .filter(|o| o.observation.hash().is_some())
            .count();
        self.parsed = observed
            .iter()
            .filter(|o| matches!(o.observation, observe::Observation::Changed { .. }))
            .count();
    }

    fn take_tally(&mut self, tally: plan::Tally) {
        self.added = tally.added;
        self.updated = tally.updated;
        self.removed = tally.removed;
        self.unchanged = tally.unchanged;
        self.skipped.extend(tally.skipped);
        self.warnings.extend(tally.warnings);
        self.skipped.sort_by(|a, b| a.path.cmp(&b.path));
        self.warnings.sort_by(|a, b| a.path.cmp(&b.path));
    }
}

/// Why a sync failed as a whole (single files never fail a sync).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

fn fail_point(store: &Store, name: &str) -> Result<(), StoreError> {
    failpoint::point(name).map_err(|source| StoreError::Io {
        path: store.path().to_owned(),
        source,
    })
}

/// How many times a sync looks again when `config.yaml` changed between its look and its
/// write lock; the last try writes what it saw.
const LOOKS: usize = 3;

/// Syncs `profile` into `store`: look (no lock), then, unless nothing changed, write (one
/// transaction). A `config.yaml` that changed since the look (another sync may already have
/// committed what the new one says) sends the sync back to look again.
pub fn sync_profile(
    store: &Store,
    profile: &Profile,
    opts: &SyncOptions<'_>,
) -> Result<SyncReport, SyncError> {
    let started = Instant::now();
    for attempt in 1..=LOOKS {
        let mut report = SyncReport {
            profile: profile.name.clone(),
            ..Default::default()
        };
        check_home(store, profile)?;
        let look = look(store, profile, opts, &mut report)?;
        if look.unchanged(opts.rebuild) {
            report.take_tally(look.planned.tally);
            report.generation = look.base.stats.generation;
            (report.active, report.inactive) = look.base.offered_counts();
        } else if !write(store, profile, opts, look, attempt == LOOKS, &mut report)? {
            continue;
        }
        report.elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
        return Ok(report);
    }
    unreachable!("the last look always writes")
}

/// What a sync learnt before taking the write lock: the base it read, what it found on
/// disk, and the plan (with the vectors to store) against that base.
struct Look {
    now: i64,
    os: String,
    tables: ProfileTables,
    base: Committed,
    /// The release whose rules apply, and the configuration as the look read it.
    hermes: HermesVersion,
    config: HermesConfig,
    snapshot: ConfigSnapshot,
    /// The reading rules the documents are made by.
    reading: u64,
    observed: Vec<observe::Observed>,
    planned: plan::Plan,
    /// The folder cache as committed, and the rows to write into it.
    dir_cache: FxHashMap<String, scan::DirListing>,
    dirs: DirUpdate,
    /// Whether the folder cache is stale enough to be worth a commit of its own.
    dirs_worth_writing: bool,
    /// The walk's problems, when they differ from those committed.
    problems: Option<Vec<Problem>>,
    #[cfg(feature = "semantic")]
    vectors: Option<embed::Prepared>,
    /// When the phase being timed began.
    mark: Instant,
}

impl Look {
    /// Whether the sync has nothing to write.
    fn unchanged(&self, rebuild: bool) -> bool {
        !rebuild
            && self.planned.is_empty()
            && !self.dirs_worth_writing
            && !self.vectors_dirty()
            && self.problems.is_none()
    }

    /// Whether the vectors table needs writing.
    fn vectors_dirty(&self) -> bool {
        #[cfg(feature = "semantic")]
        return self.vectors.as_ref().is_some_and(embed::Prepared::dirty);
        #[cfg(not(feature = "semantic"))]
        false
    }
}

/// The first step, with no lock: the base, the walk, the observations of every SKILL.md,
/// the plan against the base and the embeddings it needs.
fn look(
    store: &Store,
    profile: &Profile,
    opts: &SyncOptions<'_>,
    report: &mut SyncReport,
) -> Result<Look, SyncError> {
    let now = now_ns();
    let os = opts
        .os
        .clone()
        .unwrap_or_else(|| skill::current_os().to_owned());
    let tables = ProfileTables::new(&profile.name);
    let mut mark = Instant::now();
    let (mut base, dir_cache, base_problems, rules) = if opts.rebuild {
        Default::default()
    } else {
        read_base(store, &tables)?
    };
    let (hermes, config, roots) = sources(profile, opts, rules, report);
    let snapshot = ConfigSnapshot::of(&config);
    let reading = reading_rules(hermes);
    if !base.manifest.is_empty() && rules != Some(reading) {
        read_again(store, &mut base, hermes, report);
    }
    report.phase("read base", &mut mark);
    fail_point(store, failpoint::names::SYNC_AFTER_BASE)?;

    let mut found = scan::scan(&roots, &dir_cache, now);
    crate::quarantine::screen(&mut found, &profile.home);
    report.phase("scan", &mut mark);
    // What the walk could not use is kept for `stats`, written when it changes.
    let problems = (found.problems != base_problems).then(|| found.problems.clone());
    report.skipped.extend(found.problems);
    report.warnings.extend(found.notices);
    report.listed = found.listed;
    fail_point(store, failpoint::names::SYNC_AFTER_SCAN)?;
    let observed = observe::observe(found.found, &base.manifest, opts.progress, hermes);
    report.phase("hash and parse", &mut mark);
    report.count_observed(&observed);

    let dirs = DirUpdate::diff(&dir_cache, found.listings);
    // Refreshing the folder cache is worth a write of its own only when much of it is
    // missing or stale (a first sync after an upgrade); otherwise it rides along with the
    // next commit, and the few folders it lacks are listed meanwhile.
    let dirs_worth_writing = dirs.len() > 32.max(dir_cache.len() / 100);
    let no_conflicts = FxHashMap::default();
    let planned = plan::plan(&base, &base, &observed, &no_conflicts, &snapshot, &os, now);
    report.phase("plan", &mut mark);
    #[cfg(feature = "semantic")]
    let vectors = match opts.semantic {
        Some(model) => {
            let p = embed::prepare(
                store,
                &profile.name,
                model,
                &base,
                &observed,
                opts.embed_progress,
            )?;
            report.embedded = p.embedded();
            report.phase("embed", &mut mark);
            Some(p)
        }
        None => None,
    };
    Ok(Look {
        now,
        os,
        tables,
        base,
        hermes,
        config,
        snapshot,
        reading,
        observed,
        planned,
        dir_cache,
        dirs,
        dirs_worth_writing,
        problems,
        #[cfg(feature = "semantic")]
        vectors,
        mark,
    })
}

/// The second step, in one write transaction: re-plan if another sync committed since the
/// base was read, write the plan, the folder cache, the vectors and the walk's problems,
/// and commit once. Unless it is the `last_try`, nothing is written and `false` returned
/// when `config.yaml` no longer says what the look read.
fn write(
    store: &Store,
    profile: &Profile,
    opts: &SyncOptions<'_>,
    mut look: Look,
    last_try: bool,
    report: &mut SyncReport,
) -> Result<bool, SyncError> {
    fail_point(store, failpoint::names::SYNC_BEFORE_WRITE)?;
    let wait = Instant::now();
    // A handle opened here for writing is closed right after the commit (below).
    let mut writer: Option<Store> = None;
    let store: &Store = if store.is_writable() {
        store
    } else {
        writer.insert(Store::open_write(store.path())?)
    };
    let txn = store.write()?;
    report.lock_wait_ms = wait.elapsed().as_secs_f64() * 1e3;
    report.phase("lock", &mut look.mark);
    fail_point(store, failpoint::names::SYNC_IN_WRITE)?;
    store.check_schema_in(&txn)?;
    if !last_try && config_moved(profile, &look) {
        txn.abort().map_err(|e| store.err(e))?;
        return Ok(false);
    }
    store.claim_root_home(&txn, &profile.root)?;

    let written = write_in(store, &txn, profile, opts, &mut look, report)?;
    report.phase("apply", &mut look.mark);
    if written {
        fail_point(store, failpoint::names::SYNC_BEFORE_COMMIT)?;
        store.commit(txn)?;
        report.phase("commit", &mut look.mark);
        report.committed = true;
    } else {
        txn.abort().map_err(|e| store.err(e))?;
    }
    if let Some(writer) = writer.take() {
        // Closing costs redb one more durable commit (it records the allocator state and
        // the clean shutdown that lets readers open the file without a live writer): done
        // here, timed, and before the sync's large structures are freed.
        drop(writer);
        report.phase("close", &mut look.mark);
    }
    Ok(true)
}

/// Whether the profile's `config.yaml` says something else now than when `look` read it:
/// a plan decided on the older one (what is disabled, which roots) must not overwrite a
/// commit that another sync made from the newer one.
fn config_moved(profile: &Profile, look: &Look) -> bool {
    profile.agent.is_none()
        && load_config(profile, look.hermes, &mut SyncReport::default()) != look.config
}

/// Everything [`write`] writes inside `txn`; whether there was anything to commit.
fn write_in(
    store: &Store,
    txn: &WriteTransaction,
    profile: &Profile,
    opts: &SyncOptions<'_>,
    look: &mut Look,
    report: &mut SyncReport,
) -> Result<bool, SyncError> {
    // The committed state the plan is applied to: the base itself when no other sync
    // committed since it was read (`None`: borrowing it, since a copy of a hub-sized
    // manifest costs tens of milliseconds to make and to free), else what is committed now.
    let moved = committed_now(store, txn, &look.tables, &look.base, opts.rebuild)?;
    report.replanned = moved.is_some() && !opts.rebuild;
    let current = moved.as_ref().unwrap_or(&look.base);
    let mut planned = std::mem::take(&mut look.planned);
    if moved.is_some() {
        // The file as it is now decides between our look and the other sync's.
        let fresh = restat(plan::conflicts(&look.base, current));
        let (obs, snap) = (&look.observed, &look.snapshot);
        planned = plan::plan(&look.base, current, obs, &fresh, snap, &look.os, look.now);
    }
    let changed = opts.rebuild || !planned.is_empty();
    report.take_tally(std::mem::take(&mut planned.tally));
    if changed || look.dirs_worth_writing {
        write_dirs(store, txn, &look.tables, &mut look.dirs)?;
    }
    // Nothing below reads the folder listings: a full build's apply holds every document,
    // and this gives it back the 90k folders' worth first.
    drop((
        std::mem::take(&mut look.dirs),
        std::mem::take(&mut look.dir_cache),
    ));
    if changed {
        let stats = current.stats.clone();
        apply_plan(store, txn, profile, look, planned, stats, report)?;
    } else {
        report.generation = current.stats.generation;
        (report.active, report.inactive) = current.offered_counts();
    }
    #[cfg(feature = "semantic")]
    if let Some(vectors) = &look.vectors {
        embed::write(store, txn, &profile.name, vectors, report.generation)?;
    }
    if let Some(problems) = &look.problems {
        store::put_walk_problems(store, txn, &look.tables, problems)?;
    }
    Ok(changed || look.dirs_worth_writing || look.vectors_dirty() || look.problems.is_some())
}

/// Applies `planned` to the committed `stats` with the observations (taken from `look`),
/// and records the profile's home.
fn apply_plan(
    store: &Store,
    txn: &WriteTransaction,
    profile: &Profile,
    look: &mut Look,
    planned: plan::Plan,
    stats: CorpusStats,
    report: &mut SyncReport,
) -> Result<(), SyncError> {
    let to = apply::Target {
        store,
        tables: &look.tables,
        txn,
    };
    let ctx = apply::Context {
        config: &look.snapshot,
        os: &look.os,
        now_ns: look.now,
        reading_rules: look.reading,
    };
    let observed = std::mem::take(&mut look.observed);
    let applied = apply::apply(&to, planned, observed, stats, &ctx)?;
    report.generation = applied.generation;
    report.active = applied.active;
    report.inactive = applied.inactive;
    let mut profiles = txn.open_table(PROFILES).map_err(|e| store.err(e))?;
    let info = ProfileInfo {
        home: profile.home.to_string_lossy().into_owned(),
    };
    profiles
        .insert(profile.name.as_str(), encode(&info).as_slice())
        .map_err(|e| store.err(e))?;
    Ok(())
}

/// Refuses a file that records another root home than the profile's.
fn check_home(store: &Store, profile: &Profile) -> Result<(), SyncError> {
    match store.root_home()? {
        Some(recorded) if recorded != profile.root => Err(StoreError::OtherHome {
            path: store.path().to_owned(),
            recorded,
            requested: profile.root.clone(),
        }
        .into()),
        _ => Ok(()),
    }
}

/// The Hermes release whose rules the profile follows, its configuration and its skill
/// roots. Another agent's profile has no `config.yaml` and follows the newest release's
/// reading of a SKILL.md (the folder name stands for an empty `name`, as those agents read it).
fn sources(
    profile: &Profile,
    opts: &SyncOptions<'_>,
    rules: Option<u64>,
    report: &mut SyncReport,
) -> (HermesVersion, HermesConfig, Vec<scan::SkillRoot>) {
    if let Some(dirs) = &profile.agent {
        let config = HermesConfig::default();
        return (HermesVersion::NEWEST, config, scan::agent_roots(dirs));
    }
    let hermes =
        HermesVersion::resolve(opts.hermes, rules.and_then(HermesVersion::of_reading_rules));
    let config = load_config(profile, hermes, report);
    let project = profile.project_dirs(&config);
    let roots = scan::skill_roots(&profile.home, &config, hermes, &project);
    (hermes, config, roots)
}

/// The profile's `config.yaml` as Hermes `hermes` reads it. A file that cannot be read is
/// reported and read as empty, and one that is not YAML here as disabling every skill.
fn load_config(profile: &Profile, hermes: HermesVersion, report: &mut SyncReport) -> HermesConfig {
    match HermesConfig::load(&profile.home, hermes) {
        Ok(c) => c,
        Err(e) => {
            let unreadable = matches!(e, crate::config::ConfigError::Yaml { .. });
            report.warnings.push(Problem {
                path: profile.home.join("config.yaml"),
                reason: e.to_string(),
            });
            HermesConfig {
                unreadable,
                ..HermesConfig::default()
            }
        }
    }
}

/// Marks every entry of `base` for re-reading (an impossible hash, an untrusted stat), as
/// a migration marks them: the documents were made by other reading rules, or for another
/// Hermes release, and are all made again.
fn read_again(store: &Store, base: &mut Committed, hermes: HermesVersion, report: &mut SyncReport) {
    report.read_again = true;
    for entry in base.manifest.values_mut() {
        entry.hash = [0; 32];
        entry.verified_at_ns = 0;
    }
    report.warnings.push(Problem {
        path: store.path().to_owned(),
        reason: format!(
            "the index was made by another version of skillidx's reading rules or for \
             another Hermes release (now {hermes}); every skill is read again"
        ),
    });
}

/// What is committed now, read inside the write transaction, when the plan cannot be
/// applied to `base` as made: another sync committed since it was read, or a rebuild
/// (which deletes the profile's tables, keeping only the generation). `None` when `base` is
/// still what is committed.
fn committed_now(
    store: &Store,
    txn: &redb::WriteTransaction,
    tables: &ProfileTables,
    base: &Committed,
    rebuild: bool,
) -> Result<Option<Committed>, StoreError> {
    let generation = read_stats(store, txn, tables)?.generation;
    if rebuild {
        store::delete_profile_tables(store, txn, tables)?;
        return Ok(Some(Committed {
            stats: CorpusStats {
                generation,
                ..Default::default()
            },
            ..Default::default()
        }));
    }
    if generation == base.stats.generation {
        return Ok(None);
    }
    read_committed(store, txn, tables).map(Some)
}

/// The stat of each file in `keys` now, taken as the scan takes it: through links, regular
/// files only.
fn restat(keys: Vec<String>) -> FxHashMap<String, Option<scan::FileStat>> {
    keys.into_iter()
        .map(|key| {
            let stat = std::fs::metadata(&key)
                .ok()
                .filter(std::fs::Metadata::is_file)
                .map(|m| scan::FileStat::of(&m));
            (key, stat)
        })
        .collect()
}

/// Reads the base of a sync in one read transaction: the committed state and the folder
/// cache. One transaction matters: a manifest and statistics from two different commits
/// would make the apply step trust a manifest that is not the one its generation names.
fn read_base(
    store: &Store,
    tables: &ProfileTables,
) -> Result<(Committed, scan::DirCache, Vec<scan::Problem>, Option<u64>), StoreError> {
    let txn = store.read()?;
    let mut base = Committed::default();
    let mut dirs = scan::DirCache::default();
    let mut problems = Vec::new();
    let mut rules = None;
    if let Some(manifest) = store::open_or_none(store, &txn, tables.manifest())? {
        base.manifest = read_manifest(store, &manifest)?;
    }
    if let Some(state) = store::open_or_none(store, &txn, tables.state())? {
        (base.stats, base.config) = read_state(store, &state)?;
        problems = store::get_lenient(store, &state, store::WALK_PROBLEMS)?.unwrap_or_default();
        rules = store::get_lenient(store, &state, RULES_VERSION_KEY)?;
    }
    if let Some(table) = store::open_or_none(store, &txn, tables.dirs())? {
        for row in table.iter().map_err(|e| store.err(e))? {
            let (k, v) = row.map_err(|e| store.err(e))?;
            dirs.insert(
                k.value().to_owned(),
                decode(store, v.value(), "folder listing")?,
            );
        }
    }
    Ok((base, dirs, problems, rules))
}

/// Reads the committed state inside the sync's write transaction.
fn read_committed(
    store: &Store,
    txn: &WriteTransaction,
    tables: &ProfileTables,
) -> Result<Committed, StoreError> {
    let manifest = txn
        .open_table(tables.manifest())
        .map_err(|e| store.err(e))?;
    let state = txn.open_table(tables.state()).map_err(|e| store.err(e))?;
    let (stats, config) = read_state(store, &state)?;
    Ok(Committed {
        manifest: read_manifest(store, &manifest)?,
        stats,
        config,
    })
}

fn read_stats(
    store: &Store,
    txn: &WriteTransaction,
    tables: &ProfileTables,
) -> Result<CorpusStats, StoreError> {
    let state = txn.open_table(tables.state()).map_err(|e| store.err(e))?;
    Ok(read_state(store, &state)?.0)
}

fn read_manifest(
    store: &Store,
    table: &impl ReadableTable<&'static str, &'static [u8]>,
) -> Result<FxHashMap<String, ManifestEntry>, StoreError> {
    let mut out = FxHashMap::default();
    for row in table.iter().map_err(|e| store.err(e))? {
        let (k, v) = row.map_err(|e| store.err(e))?;
        out.insert(
            k.value().to_owned(),
            decode(store, v.value(), "manifest entry")?,
        );
    }
    Ok(out)
}

fn read_state(
    store: &Store,
    table: &impl ReadableTable<&'static str, &'static [u8]>,
) -> Result<(CorpusStats, Option<ConfigSnapshot>), StoreError> {
    let stats = match table.get("stats").map_err(|e| store.err(e))? {
        Some(v) => decode(store, v.value(), "corpus stats")?,
        None => CorpusStats::default(),
    };
    let config = match table.get("config").map_err(|e| store.err(e))? {
        Some(v) => Some(decode(store, v.value(), "config snapshot")?),
        None => None,
    };
    Ok((stats, config))
}

/// The folder-cache rows a commit writes and deletes.
#[derive(Default)]
struct DirUpdate {
    puts: Vec<(String, scan::DirListing)>,
    dels: Vec<String>,
}

impl DirUpdate {
    fn diff(old: &scan::DirCache, listings: Vec<(String, scan::DirListing)>) -> DirUpdate {
        let mut seen = FxHashSet::default();
        let mut update = DirUpdate::default();
        for (key, listing) in listings {
            if old.get(&key) != Some(&listing) {
                update.puts.push((key.clone(), listing));
            }
            seen.insert(key);
        }
        update.dels = old.keys().filter(|k| !seen.contains(*k)).cloned().collect();
        update
    }

    fn len(&self) -> usize {
        self.puts.len() + self.dels.len()
    }
}

fn write_dirs(
    store: &Store,
    txn: &WriteTransaction,
    tables: &ProfileTables,
    update: &mut DirUpdate,
) -> Result<(), StoreError> {
    let mut table = txn.open_table(tables.dirs()).map_err(|e| store.err(e))?;
    update.puts.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let rows = update
        .puts
        .iter()
        .map(|(key, listing)| (key.as_str(), encode(listing)));
    crate::store::insert_sorted(&mut table, rows).map_err(|e| store.err(e))?;
    for key in &update.dels {
        table.remove(key.as_str()).map_err(|e| store.err(e))?;
    }
    Ok(())
}
