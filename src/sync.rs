//! Sync: bring one profile's index in line with the skills on disk.
//!
//! The work is split so the write lock is held briefly:
//! 1. *Observe*, with no lock: read the profile's config, walk its roots, stat every
//!    SKILL.md, and against the last committed manifest hash only files whose stat changed
//!    and parse only files whose hash changed (in parallel).
//! 2. *Apply*, in one write transaction: merge the observations with whatever is
//!    committed now (another process may have synced meanwhile), decide which skills are
//!    offered, update postings, and commit; or write nothing when nothing changed.

use crate::analyze::{analyze, Analyzed};
use crate::config::HermesConfig;
use crate::fields::FIELD_COUNT;
use crate::home::Profile;
use crate::postings::{self, Posting};
use crate::scan::{self, Candidate, Problem};
use crate::skill::{self, Origin, Skill};
use crate::store::records::*;
use crate::store::{self, decode, decode_head, encode, ProfileTables, Store, StoreError, PROFILES};
use rayon::prelude::*;
use redb::{ReadableTable, ReadableTableMetadata, WriteTransaction};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::Read;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Files larger than this are skipped: no real SKILL.md comes near it.
pub const MAX_FILE_BYTES: u64 = 1 << 20;

/// How a sync should run.
#[derive(Default)]
pub struct SyncOptions<'a> {
    /// Forget the profile's index and build it again from the files.
    pub rebuild: bool,
    /// Called with (files examined, files to examine) while files are read.
    pub progress: Option<&'a (dyn Fn(usize, usize) + Sync)>,
    /// The OS to decide `platforms` for; the running one when `None`.
    pub os: Option<String>,
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
    /// Skills indexed through a fallback (e.g. invalid YAML read as `key: value` lines).
    pub warnings: Vec<Problem>,
    /// Skills indexed but not offered (disabled, other OS, shadowed), with the reason.
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
    /// The profile's generation after the sync.
    pub generation: u64,
    /// How long the write lock was waited for, in milliseconds.
    pub lock_wait_ms: f64,
    /// Wall time, in milliseconds.
    pub elapsed_ms: f64,
    /// Where the time went, in milliseconds, by phase (scan, observe, apply, commit).
    pub phases_ms: Vec<(&'static str, f64)>,
}

impl SyncReport {
    fn phase(&mut self, name: &'static str, since: &mut Instant) {
        self.phases_ms
            .push((name, since.elapsed().as_secs_f64() * 1e3));
        *since = Instant::now();
    }
}

/// Why a sync failed as a whole (single files never fail a sync).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A parsed, tokenized skill.
#[derive(Debug)]
struct Parsed {
    skill: Skill,
    analyzed: Analyzed,
}

/// What the observe phase concluded about one file.
#[derive(Debug)]
enum Observation {
    /// Stat equals the committed one: bytes assumed unchanged.
    StatUnchanged,
    /// Bytes hashed and equal to the committed ones.
    SameBytes { hash: [u8; 32] },
    /// New or changed bytes, parsed.
    Changed { hash: [u8; 32], parsed: Box<Parsed> },
    /// New or changed bytes that cannot be a skill.
    Rejected { hash: [u8; 32], reason: String },
    /// The file disappeared between the walk and the read.
    Vanished,
}

struct Observed {
    candidate: Candidate,
    observation: Observation,
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// Syncs `profile` into `store`.
pub fn sync_profile(
    store: &Store,
    profile: &Profile,
    opts: &SyncOptions<'_>,
) -> Result<SyncReport, SyncError> {
    let started = Instant::now();
    let started_ns = now_ns();
    let os = opts
        .os
        .clone()
        .unwrap_or_else(|| skill::current_os().to_owned());
    let tables = ProfileTables::new(&profile.name);
    let mut report = SyncReport {
        profile: profile.name.clone(),
        ..Default::default()
    };

    let config = match HermesConfig::load(&profile.home) {
        Ok(c) => c,
        Err(e) => {
            report.warnings.push(Problem {
                path: profile.home.join("config.yaml"),
                reason: e.to_string(),
            });
            HermesConfig::default()
        }
    };
    let roots = scan::skill_roots(&profile.home, &config);
    let mut mark = Instant::now();
    let base = if opts.rebuild {
        Base::default()
    } else {
        Base::read(store, &tables)?
    };
    report.phase("read manifest", &mut mark);
    let scan::Scan {
        found: candidates,
        problems,
        notices,
        listings,
        listed,
    } = scan::scan(&roots, &base.dirs, started_ns);
    report.phase("scan", &mut mark);
    report.skipped.extend(problems);
    report.warnings.extend(notices);
    report.listed = listed;

    let observed = observe(candidates, &base.manifest, opts.progress);
    report.phase("hash and parse", &mut mark);
    report.hashed = observed
        .iter()
        .filter(|o| !matches!(o.observation, Observation::StatUnchanged))
        .count();
    report.parsed = observed
        .iter()
        .filter(|o| matches!(o.observation, Observation::Changed { .. }))
        .count();
    let snapshot = ConfigSnapshot::of(&config);
    let dirs = DirUpdate::diff(&base.dirs, listings);
    // Refreshing the folder cache is worth a write of its own only when much of it is
    // missing or stale (a first sync after an upgrade); otherwise it rides along with the
    // next commit, and the few folders it lacks are listed meanwhile.
    let dirs_worth_writing = dirs.len() > 32.max(base.dirs.len() / 100);
    if !opts.rebuild
        && !dirs_worth_writing
        && base.is_current(&observed, &snapshot, &os, started_ns)
    {
        // Nothing to write: do not even open the file for writing.
        base.report_unchanged(&observed, &mut report);
        report.generation = base.stats.generation;
        report.elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
        return Ok(report);
    }

    let writer;
    let store = if store.is_writable() {
        store
    } else {
        writer = Store::open_write(store.path())?;
        &writer
    };
    let wait = Instant::now();
    let txn = store.write()?;
    report.lock_wait_ms = wait.elapsed().as_secs_f64() * 1e3;
    crate::failpoint::point(crate::failpoint::names::SYNC_IN_WRITE).map_err(|source| {
        StoreError::Io {
            path: store.path().to_owned(),
            source,
        }
    })?;
    let mut apply = Apply::new(store, &tables, &txn, os, started_ns);
    if opts.rebuild {
        apply.clear()?;
    }
    report.phase("lock", &mut mark);
    apply.run(
        &base.manifest,
        base.stats.generation,
        observed,
        &snapshot,
        &mut report,
    )?;
    if apply.changed || dirs_worth_writing || opts.rebuild {
        apply.write_dirs(&dirs)?;
        apply.changed = true;
    }
    report.phase("apply", &mut mark);
    let changed = apply.changed;
    let generation = apply.stats.generation;
    drop(apply);
    if changed {
        {
            let mut profiles = txn.open_table(PROFILES).map_err(|e| store.err(e))?;
            let info = ProfileInfo {
                home: profile.home.to_string_lossy().into_owned(),
            };
            profiles
                .insert(profile.name.as_str(), encode(&info).as_slice())
                .map_err(|e| store.err(e))?;
        }
        store.commit(txn)?;
        report.phase("commit", &mut mark);
        report.committed = true;
    } else {
        txn.abort().map_err(|e| store.err(e))?;
    }
    report.generation = generation;
    report.skipped.sort_by(|a, b| a.path.cmp(&b.path));
    report.warnings.sort_by(|a, b| a.path.cmp(&b.path));
    report.elapsed_ms = started.elapsed().as_secs_f64() * 1e3;
    Ok(report)
}

/// What the last commit says about a profile, read before any lock is taken.
#[derive(Default)]
struct Base {
    manifest: FxHashMap<String, ManifestEntry>,
    dirs: scan::DirCache,
    snapshot: Option<ConfigSnapshot>,
    stats: CorpusStats,
    docs: u64,
}

impl Base {
    fn read(store: &Store, tables: &ProfileTables) -> Result<Base, StoreError> {
        let manifest = read_manifest(store, tables)?;
        let txn = store.read()?;
        let mut base = Base {
            manifest,
            ..Default::default()
        };
        if let Some(state) = store::open_or_none(store, &txn, tables.state())? {
            if let Some(v) = state.get("stats").map_err(|e| store.err(e))? {
                base.stats = decode(store, v.value(), "corpus stats")?;
            }
            if let Some(v) = state.get("config").map_err(|e| store.err(e))? {
                base.snapshot = Some(decode(store, v.value(), "config snapshot")?);
            }
        }
        if let Some(docs) = store::open_or_none(store, &txn, tables.docs())? {
            base.docs = store::row_count(store, &docs)?;
        }
        if let Some(dirs) = store::open_or_none(store, &txn, tables.dirs())? {
            for row in dirs.iter().map_err(|e| store.err(e))? {
                let (k, v) = row.map_err(|e| store.err(e))?;
                base.dirs.insert(
                    k.value().to_owned(),
                    decode(store, v.value(), "folder listing")?,
                );
            }
        }
        Ok(base)
    }

    /// Whether the observations and the configuration match the last commit exactly, so
    /// that a sync has nothing to write.
    fn is_current(
        &self,
        observed: &[Observed],
        snapshot: &ConfigSnapshot,
        os: &str,
        started_ns: i64,
    ) -> bool {
        if self.snapshot.as_ref() != Some(snapshot)
            || self.stats.os != os
            || observed.len() != self.manifest.len()
        {
            return false;
        }
        observed.iter().all(|o| {
            let Some(entry) = self.manifest.get(&o.candidate.key()) else {
                return false;
            };
            match &o.observation {
                Observation::StatUnchanged => true,
                Observation::SameBytes { hash } => {
                    entry.hash == *hash && !needs_restat(entry, &o.candidate, started_ns)
                }
                _ => false,
            }
        })
    }

    fn report_unchanged(&self, observed: &[Observed], report: &mut SyncReport) {
        for o in observed {
            match self.manifest.get(&o.candidate.key()).map(|e| &e.state) {
                Some(EntryState::Skipped(reason)) => report.skipped.push(Problem {
                    path: o.candidate.path.clone(),
                    reason: reason.clone(),
                }),
                Some(EntryState::Indexed(_)) => report.unchanged += 1,
                None => {}
            }
        }
        report.skipped.sort_by(|a, b| a.path.cmp(&b.path));
        report.active = self.stats.docs as usize;
        report.inactive = (self.docs as usize).saturating_sub(report.active);
    }
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

/// Whether a file whose bytes are unchanged still needs its manifest entry rewritten: its
/// stat changed, or it was racily clean and has now settled, so later syncs can trust the
/// stat again.
fn needs_restat(entry: &ManifestEntry, candidate: &Candidate, started_ns: i64) -> bool {
    let fresh = ManifestEntry {
        stat: candidate.stat,
        verified_at_ns: started_ns,
        ..entry.clone()
    };
    entry.stat != candidate.stat || (!entry.stat_is_trustworthy() && fresh.stat_is_trustworthy())
}

fn read_manifest(
    store: &Store,
    tables: &ProfileTables,
) -> Result<FxHashMap<String, ManifestEntry>, StoreError> {
    let txn = store.read()?;
    let Some(table) = store::open_or_none(store, &txn, tables.manifest())? else {
        return Ok(FxHashMap::default());
    };
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

fn observe(
    candidates: Vec<Candidate>,
    base: &FxHashMap<String, ManifestEntry>,
    progress: Option<&(dyn Fn(usize, usize) + Sync)>,
) -> Vec<Observed> {
    let total = candidates.len();
    let done = AtomicUsize::new(0);
    candidates
        .into_par_iter()
        .map(|candidate| {
            let prior = base.get(&candidate.key());
            let observation = match prior {
                Some(p) if p.stat == candidate.stat && p.stat_is_trustworthy() => {
                    Observation::StatUnchanged
                }
                _ => read_and_parse(&candidate, prior),
            };
            if let Some(report) = progress {
                report(done.fetch_add(1, Ordering::Relaxed) + 1, total);
            }
            Observed {
                candidate,
                observation,
            }
        })
        .collect()
}

fn read_and_parse(candidate: &Candidate, prior: Option<&ManifestEntry>) -> Observation {
    let bytes = match read_limited(&candidate.path) {
        Ok(b) => b,
        Err(ReadFailure::Vanished) => return Observation::Vanished,
        Err(ReadFailure::Other(reason)) => {
            return Observation::Rejected {
                hash: [0; 32],
                reason,
            };
        }
    };
    let hash = *blake3::hash(&bytes).as_bytes();
    if prior.is_some_and(|p| p.hash == hash) {
        return Observation::SameBytes { hash };
    }
    match skill::parse(&bytes, &candidate.location) {
        Ok(skill) => {
            let analyzed = analyze(&skill);
            Observation::Changed {
                hash,
                parsed: Box::new(Parsed { skill, analyzed }),
            }
        }
        Err(rejection) => Observation::Rejected {
            hash,
            reason: rejection.to_string(),
        },
    }
}

enum ReadFailure {
    Vanished,
    Other(String),
}

fn read_limited(path: &std::path::Path) -> Result<Vec<u8>, ReadFailure> {
    let fail = |e: std::io::Error| match e.kind() {
        std::io::ErrorKind::NotFound => ReadFailure::Vanished,
        _ => ReadFailure::Other(format!("cannot read: {e}")),
    };
    // Check the type before opening: opening a FIFO for reading would block.
    let meta = std::fs::metadata(path).map_err(fail)?;
    if !meta.is_file() {
        return Err(ReadFailure::Other("not a regular file".into()));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(ReadFailure::Other(format!(
            "file is {} bytes, over the {} byte limit",
            meta.len(),
            MAX_FILE_BYTES
        )));
    }
    let file = std::fs::File::open(path).map_err(fail)?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(fail)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(ReadFailure::Other(format!(
            "file grew past the {MAX_FILE_BYTES} byte limit while read"
        )));
    }
    Ok(bytes)
}

/// The apply phase: everything done inside the write transaction.
struct Apply<'t> {
    store: &'t Store,
    tables: &'t ProfileTables,
    txn: &'t WriteTransaction,
    os: String,
    started_ns: i64,
    stats: CorpusStats,
    changed: bool,
    /// Postings to take out, per term.
    remove: FxHashMap<String, FxHashSet<u32>>,
    /// Postings to put in, per term.
    add: FxHashMap<String, Vec<Posting>>,
}

/// A document that the apply phase adds.
struct NewDoc {
    key: String,
    head: DocHead,
    body: DocBody,
    terms: Vec<TermEntry>,
}

impl<'t> Apply<'t> {
    fn new(
        store: &'t Store,
        tables: &'t ProfileTables,
        txn: &'t WriteTransaction,
        os: String,
        started_ns: i64,
    ) -> Self {
        Apply {
            store,
            tables,
            txn,
            os,
            started_ns,
            stats: CorpusStats::default(),
            changed: false,
            remove: FxHashMap::default(),
            add: FxHashMap::default(),
        }
    }

    fn err(&self, e: impl std::fmt::Display) -> StoreError {
        self.store.err(e)
    }

    fn clear(&mut self) -> Result<(), StoreError> {
        self.txn
            .delete_table(self.tables.manifest())
            .map_err(|e| self.err(e))?;
        self.txn
            .delete_table(self.tables.docs())
            .map_err(|e| self.err(e))?;
        self.txn
            .delete_table(self.tables.terms())
            .map_err(|e| self.err(e))?;
        self.txn
            .delete_table(self.tables.postings())
            .map_err(|e| self.err(e))?;
        self.txn
            .delete_table(self.tables.dirs())
            .map_err(|e| self.err(e))?;
        let generation = self.read_stats()?.generation;
        self.txn
            .delete_table(self.tables.state())
            .map_err(|e| self.err(e))?;
        // Keep generations increasing across a rebuild so readers never see one repeat.
        self.stats.generation = generation;
        self.changed = true;
        Ok(())
    }

    fn write_dirs(&self, update: &DirUpdate) -> Result<(), StoreError> {
        let mut table = self
            .txn
            .open_table(self.tables.dirs())
            .map_err(|e| self.err(e))?;
        for (key, listing) in &update.puts {
            table
                .insert(key.as_str(), encode(listing).as_slice())
                .map_err(|e| self.err(e))?;
        }
        for key in &update.dels {
            table.remove(key.as_str()).map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    fn read_stats(&self) -> Result<CorpusStats, StoreError> {
        let state = self
            .txn
            .open_table(self.tables.state())
            .map_err(|e| self.err(e))?;
        let stats = match state.get("stats").map_err(|e| self.err(e))? {
            Some(v) => decode(self.store, v.value(), "corpus stats")?,
            None => CorpusStats::default(),
        };
        Ok(stats)
    }

    fn run(
        &mut self,
        base: &FxHashMap<String, ManifestEntry>,
        base_generation: u64,
        observed: Vec<Observed>,
        snapshot: &ConfigSnapshot,
        report: &mut SyncReport,
    ) -> Result<(), StoreError> {
        let generation_floor = self.stats.generation;
        self.stats = self.read_stats()?;
        let unchanged_since_base = self.stats.generation == base_generation && !self.changed;
        self.stats.generation = self.stats.generation.max(generation_floor);
        let mut manifest = self
            .txn
            .open_table(self.tables.manifest())
            .map_err(|e| self.err(e))?;
        // What is committed now: the base itself when no other sync has committed since it
        // was read (the common case), else read again.
        let fresh;
        let current: &FxHashMap<String, ManifestEntry> = if unchanged_since_base {
            base
        } else {
            let mut read = FxHashMap::default();
            for row in manifest.iter().map_err(|e| self.err(e))? {
                let (k, v) = row.map_err(|e| self.err(e))?;
                read.insert(
                    k.value().to_owned(),
                    decode(self.store, v.value(), "manifest entry")?,
                );
            }
            fresh = read;
            &fresh
        };

        let mut seen: FxHashSet<String> = FxHashSet::default();
        let mut gone_docs: Vec<u32> = Vec::new();
        let mut new_docs: Vec<NewDoc> = Vec::new();
        let mut manifest_puts: Vec<(String, ManifestEntry)> = Vec::new();
        let mut manifest_dels: Vec<String> = Vec::new();

        for Observed {
            candidate,
            observation,
        } in observed
        {
            let key = candidate.key();
            let cur = current.get(&key);
            let cur_doc = cur.and_then(|c| match c.state {
                EntryState::Indexed(d) => Some(d),
                EntryState::Skipped(_) => None,
            });
            let entry = |hash: [u8; 32], state: EntryState| ManifestEntry {
                stat: candidate.stat,
                hash,
                verified_at_ns: self.started_ns,
                state,
            };
            // Another sync committed a newer look at this file than ours: keep theirs.
            let theirs_is_newer = |cur: Option<&ManifestEntry>| {
                cur.is_some_and(|c| {
                    base.get(&key) != Some(c) && c.stat.mtime_ns > candidate.stat.mtime_ns
                })
            };
            match observation {
                Observation::Vanished => {
                    report.skipped.push(Problem {
                        path: candidate.path,
                        reason: "deleted while the sync ran".into(),
                    });
                    continue;
                }
                Observation::StatUnchanged => {
                    seen.insert(key.clone());
                    if let Some(c) = cur {
                        if let EntryState::Skipped(reason) = &c.state {
                            report.skipped.push(Problem {
                                path: candidate.path,
                                reason: reason.clone(),
                            });
                        } else {
                            report.unchanged += 1;
                        }
                    }
                    // Gone from the committed manifest means another sync saw it removed
                    // after our snapshot; without its bytes we leave that to the next sync.
                }
                Observation::SameBytes { hash } => {
                    seen.insert(key.clone());
                    match cur {
                        Some(c) if c.hash == hash => {
                            if let EntryState::Skipped(reason) = &c.state {
                                report.skipped.push(Problem {
                                    path: candidate.path.clone(),
                                    reason: reason.clone(),
                                });
                            } else {
                                report.unchanged += 1;
                            }
                            if needs_restat(c, &candidate, self.started_ns) {
                                manifest_puts.push((key, entry(hash, c.state.clone())));
                            }
                        }
                        _ => {}
                    }
                }
                Observation::Rejected { hash, reason } => {
                    seen.insert(key.clone());
                    if theirs_is_newer(cur) {
                        continue;
                    }
                    if let Some(d) = cur_doc {
                        gone_docs.push(d);
                        report.removed += 1;
                    }
                    report.skipped.push(Problem {
                        path: candidate.path.clone(),
                        reason: reason.clone(),
                    });
                    manifest_puts.push((key, entry(hash, EntryState::Skipped(reason))));
                }
                Observation::Changed { hash, parsed } => {
                    seen.insert(key.clone());
                    if theirs_is_newer(cur) {
                        report.unchanged += 1;
                        continue;
                    }
                    if let Some(d) = cur_doc {
                        gone_docs.push(d);
                        report.updated += 1;
                    } else {
                        report.added += 1;
                    }
                    for note in &parsed.skill.notes {
                        report.warnings.push(Problem {
                            path: candidate.path.clone(),
                            reason: note.clone(),
                        });
                    }
                    let id = self.stats.next_doc;
                    self.stats.next_doc += 1;
                    new_docs.push(self.new_doc(&candidate, *parsed));
                    manifest_puts.push((key, entry(hash, EntryState::Indexed(id))));
                }
            }
        }
        for (key, c) in current {
            if seen.contains(key) {
                continue;
            }
            // Added by another sync after our snapshot: it may be newer than our walk.
            if !base.contains_key(key) {
                continue;
            }
            if let EntryState::Indexed(d) = c.state {
                gone_docs.push(d);
                report.removed += 1;
            }
            manifest_dels.push(key.clone());
        }

        let mut state = self
            .txn
            .open_table(self.tables.state())
            .map_err(|e| self.err(e))?;
        let old_snapshot: ConfigSnapshot = match state.get("config").map_err(|e| self.err(e))? {
            Some(v) => decode(self.store, v.value(), "config snapshot")?,
            None => ConfigSnapshot::default(),
        };
        let docs_changed = !gone_docs.is_empty() || !new_docs.is_empty();
        let config_changed = old_snapshot != *snapshot || self.stats.os != self.os;
        if !docs_changed
            && !config_changed
            && manifest_puts.is_empty()
            && manifest_dels.is_empty()
            && !self.changed
        {
            self.count_activity(report)?;
            return Ok(());
        }
        self.changed = true;

        for (key, e) in &manifest_puts {
            manifest
                .insert(key.as_str(), encode(e).as_slice())
                .map_err(|e| self.err(e))?;
        }
        for key in &manifest_dels {
            manifest.remove(key.as_str()).map_err(|e| self.err(e))?;
        }
        drop(manifest);

        if docs_changed || config_changed {
            self.apply_docs(gone_docs, new_docs, snapshot, &mut state)?;
        }
        self.stats.generation += 1;
        self.stats.synced_at_ns = self.started_ns;
        self.stats.os = self.os.clone();
        state
            .insert("stats", encode(&self.stats).as_slice())
            .map_err(|e| self.err(e))?;
        state
            .insert("config", encode(&snapshot).as_slice())
            .map_err(|e| self.err(e))?;
        drop(state);
        self.count_activity(report)?;
        Ok(())
    }

    fn new_doc(&self, candidate: &Candidate, parsed: Parsed) -> NewDoc {
        let Parsed { skill, analyzed } = parsed;
        let rank = match &candidate.location.origin {
            Origin::Local => 0,
            Origin::External(i) => 1 + i,
            Origin::Plugin(_) => u32::MAX,
        };
        NewDoc {
            key: candidate.key(),
            head: DocHead {
                id: skill.id.clone(),
                name: skill.name.clone(),
                dir_name: skill.dir_name.clone(),
                rank,
                key: candidate.key(),
                platforms: skill.platforms.clone(),
                lens: analyzed.lens,
                inactive: Some(String::new()),
            },
            body: DocBody {
                category: skill.category,
                description: skill.description,
                origin: candidate.location.origin.clone(),
                platforms: skill.platforms,
                triggers: skill.triggers,
                tags: skill.tags,
                conditions: skill.conditions,
                notes: skill.notes,
            },
            terms: analyzed.terms,
        }
    }

    /// Removes gone documents, inserts new ones, decides which documents are offered and
    /// updates the postings and statistics to match.
    fn apply_docs(
        &mut self,
        gone: Vec<u32>,
        new: Vec<NewDoc>,
        snapshot: &ConfigSnapshot,
        state: &mut redb::Table<&'static str, &'static [u8]>,
    ) -> Result<(), StoreError> {
        let mut docs = self
            .txn
            .open_table(self.tables.docs())
            .map_err(|e| self.err(e))?;
        let mut terms = self
            .txn
            .open_table(self.tables.terms())
            .map_err(|e| self.err(e))?;

        let mut heads: BTreeMap<u32, DocHead> = BTreeMap::new();
        for row in docs.iter().map_err(|e| self.err(e))? {
            let (k, v) = row.map_err(|e| self.err(e))?;
            heads.insert(k.value(), decode_head(self.store, v.value())?);
        }
        for d in gone {
            if let Some(head) = heads.remove(&d) {
                if head.inactive.is_none() {
                    let t = store::read_terms(self.store, &terms, d)?;
                    self.queue_remove(d, &t);
                }
            }
            docs.remove(d).map_err(|e| self.err(e))?;
            terms.remove(d).map_err(|e| self.err(e))?;
        }
        // New documents got consecutive ids from `next_doc` in order.
        let first_new = self.stats.next_doc - new.len() as u32;
        let mut new_by_id: FxHashMap<u32, NewDoc> = FxHashMap::default();
        for (i, doc) in new.into_iter().enumerate() {
            let id = first_new + i as u32;
            debug_assert_eq!(doc.key, doc.head.key);
            heads.insert(id, doc.head.clone());
            new_by_id.insert(id, doc);
        }

        let decided = decide_activity(&heads, snapshot, &self.os);
        let mut stats_docs = 0u32;
        let mut sum_lens = [0u64; FIELD_COUNT];
        for (id, head) in heads.iter_mut() {
            let now = decided.get(id).cloned().flatten();
            if now.is_none() {
                stats_docs += 1;
                for (sum, len) in sum_lens.iter_mut().zip(head.lens) {
                    *sum += u64::from(len);
                }
            }
            if let Some(doc) = new_by_id.remove(id) {
                head.inactive = now;
                if head.inactive.is_none() {
                    self.queue_add(*id, &doc.terms);
                }
                docs.insert(*id, encode(&(&*head, &doc.body)).as_slice())
                    .map_err(|e| self.err(e))?;
                terms
                    .insert(*id, encode(&doc.terms).as_slice())
                    .map_err(|e| self.err(e))?;
                continue;
            }
            if head.inactive == now {
                continue;
            }
            let t = store::read_terms(self.store, &terms, *id)?;
            match (&head.inactive, &now) {
                (None, Some(_)) => self.queue_remove(*id, &t),
                (Some(_), None) => self.queue_add(*id, &t),
                _ => {}
            }
            head.inactive = now;
            let bytes = docs
                .get(*id)
                .map_err(|e| self.err(e))?
                .map(|v| v.value().to_vec());
            if let Some(bytes) = bytes {
                let (_, rest) = postcard::take_from_bytes::<DocHead>(&bytes)
                    .map_err(|e| self.store.bad_record(format!("document {id}: {e}")))?;
                let body: DocBody = decode(self.store, rest, "document body")?;
                docs.insert(*id, encode(&(&*head, &body)).as_slice())
                    .map_err(|e| self.err(e))?;
            }
        }
        self.stats.docs = stats_docs;
        self.stats.sum_lens = sum_lens;

        let mut hidden: PlatformHidden = BTreeMap::new();
        for (platform, names) in &snapshot.platform_disabled {
            let ids: Vec<u32> = heads
                .iter()
                .filter(|(_, h)| {
                    h.inactive.is_none() && (names.contains(&h.name) || names.contains(&h.dir_name))
                })
                .map(|(id, _)| *id)
                .collect();
            hidden.insert(platform.clone(), ids);
        }
        state
            .insert("platform_hidden", encode(&hidden).as_slice())
            .map_err(|e| self.err(e))?;
        drop(docs);
        drop(terms);
        self.flush_postings()
    }

    fn queue_remove(&mut self, doc: u32, terms: &[TermEntry]) {
        for (t, _) in terms {
            match self.remove.get_mut(t.as_str()) {
                Some(docs) => {
                    docs.insert(doc);
                }
                None => {
                    self.remove.insert(t.clone(), FxHashSet::from_iter([doc]));
                }
            }
        }
    }

    fn queue_add(&mut self, doc: u32, terms: &[TermEntry]) {
        for (t, stats) in terms {
            let posting = Posting { doc, stats: *stats };
            match self.add.get_mut(t.as_str()) {
                Some(list) => list.push(posting),
                None => {
                    self.add.insert(t.clone(), vec![posting]);
                }
            }
        }
    }

    fn flush_postings(&mut self) -> Result<(), StoreError> {
        let mut table = self
            .txn
            .open_table(self.tables.postings())
            .map_err(|e| self.err(e))?;
        let mut touched: Vec<String> = self.remove.keys().chain(self.add.keys()).cloned().collect();
        touched.sort_unstable();
        touched.dedup();
        for term in touched {
            let mut list = match table.get(term.as_str()).map_err(|e| self.err(e))? {
                Some(v) => postings::decode(v.value())
                    .map_err(|e| self.store.bad_record(format!("postings of {term:?}: {e}")))?,
                None => Vec::new(),
            };
            if let Some(gone) = self.remove.get(&term) {
                list.retain(|p| !gone.contains(&p.doc));
            }
            if let Some(new) = self.add.remove(&term) {
                list.extend(new);
                list.sort_unstable_by_key(|p| p.doc);
                list.dedup_by_key(|p| p.doc);
            }
            if list.is_empty() {
                table.remove(term.as_str()).map_err(|e| self.err(e))?;
            } else {
                table
                    .insert(term.as_str(), postings::encode(&list).as_slice())
                    .map_err(|e| self.err(e))?;
            }
        }
        self.remove.clear();
        Ok(())
    }

    fn count_activity(&self, report: &mut SyncReport) -> Result<(), StoreError> {
        let docs = self
            .txn
            .open_table(self.tables.docs())
            .map_err(|e| self.err(e))?;
        let total = docs.len().map_err(|e| self.err(e))? as usize;
        report.active = self.stats.docs as usize;
        report.inactive = total.saturating_sub(report.active);
        Ok(())
    }
}
/// Decides, for every document, whether it is offered (`None`) or why not.
///
/// Hermes' rules: a skill whose `platforms` exclude this OS is hidden; a skill whose name
/// or folder name is in `skills.disabled` is hidden; of several skills with one id, the
/// first by precedence (local, external dirs in order, plugins) and then by path wins.
fn decide_activity(
    heads: &BTreeMap<u32, DocHead>,
    snapshot: &ConfigSnapshot,
    os: &str,
) -> FxHashMap<u32, Option<String>> {
    let mut winners: FxHashMap<&str, (u32, &str, u32)> = FxHashMap::default();
    for (id, h) in heads {
        if !skill::runs_on(&h.platforms, os)
            || snapshot.disabled.contains(&h.name)
            || snapshot.disabled.contains(&h.dir_name)
        {
            continue;
        }
        let cand = (h.rank, h.key.as_str(), *id);
        winners
            .entry(h.id.as_str())
            .and_modify(|w| {
                if (cand.0, cand.1) < (w.0, w.1) {
                    *w = cand;
                }
            })
            .or_insert(cand);
    }
    heads
        .iter()
        .map(|(id, h)| {
            let why = if !skill::runs_on(&h.platforms, os) {
                Some(format!("its platforms exclude {os}"))
            } else if snapshot.disabled.contains(&h.name) || snapshot.disabled.contains(&h.dir_name)
            {
                Some("disabled in config.yaml (skills.disabled)".to_owned())
            } else {
                match winners.get(h.id.as_str()) {
                    Some(&(_, key, wid)) if wid != *id => {
                        Some(format!("shadowed by {key}, which has the same id"))
                    }
                    _ => None,
                }
            };
            (*id, why)
        })
        .collect()
}
