//! Watch: keep a home's index in step with its skills for as long as a host runs.
//!
//! Hermes has no hook after `hermes skills install` or a hub sync, so a long-running host
//! (a gateway, a desktop session) can run `skillidx watch` instead of a cron job. It syncs
//! every profile once, then waits on inotify (through the `notify` crate) for changes under
//! each profile's skill roots, its `config.yaml` and `plugins/`, and the root's `profiles/`
//! folder. Changes are debounced: once no event has arrived for the debounce delay, only the
//! profiles they concern are synced. The hub installer moves a finished skill folder into
//! place with one rename, which the watch sees as one event in the category folder.
//!
//! Events for what the watch itself touches are ignored: reads (a sync reads every changed
//! SKILL.md), the index file, and Hermes' own `.skills_prompt_snapshot.json`.

use crate::config::HermesConfig;
use crate::home::{Profile, Root};
use crate::scan::skill_roots;
use crate::sync::{SyncOptions, SyncReport};
use crate::Index;
use notify::event::{AccessKind, AccessMode, EventKind};
use notify::{RecursiveMode, Watcher};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long after the last event a watch waits before it syncs.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(500);

/// What the watch reports: a sync of one profile, or that it is watching.
#[derive(Debug)]
pub enum WatchEvent {
    /// Every profile has been synced once and the watches are in place.
    Ready {
        /// The folders watched.
        watched: usize,
    },
    /// A profile was synced.
    Synced(Result<SyncReport, crate::Error>),
    /// A profile's folder is gone: it was dropped from the index.
    Dropped(String),
}

/// Why a watch could not run.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The index could not be used.
    #[error(transparent)]
    Index(#[from] crate::Error),
    /// The operating system refused a watch.
    #[error("cannot watch {path}: {source} (on Linux, raise fs.inotify.max_user_watches, or run `skillidx sync --all-profiles` from cron instead)")]
    Watch {
        /// The folder.
        path: PathBuf,
        /// The cause.
        source: notify::Error,
    },
}

/// The folders a profile's index depends on, and how to watch each.
fn targets(profile: &Profile) -> Vec<(PathBuf, RecursiveMode)> {
    // The newest release's roots: one root more than needed costs at most a needless sync.
    let config = HermesConfig::load(&profile.home, crate::version::HermesVersion::NEWEST)
        .unwrap_or_default();
    let mut out = vec![
        (profile.home.clone(), RecursiveMode::NonRecursive),
        (profile.home.join("plugins"), RecursiveMode::NonRecursive),
    ];
    out.extend(
        skill_roots(
            &profile.home,
            &config,
            crate::version::HermesVersion::NEWEST,
            &profile.project_dirs(&config),
        )
        .into_iter()
        .map(|r| (r.path, RecursiveMode::Recursive)),
    );
    out
}

/// Which profiles an event at `path` concerns (none: an event the watch ignores).
fn concerned<'p>(
    profiles: &'p [(Profile, Vec<PathBuf>)],
    db: &Path,
    path: &Path,
) -> Vec<&'p Profile> {
    if path == db
        || path.file_name().is_some_and(|n| {
            let n = n.to_string_lossy();
            n.starts_with(
                db.file_name()
                    .map_or("".into(), |d| d.to_string_lossy())
                    .as_ref(),
            ) || n == ".skills_prompt_snapshot.json"
        })
    {
        return Vec::new();
    }
    profiles
        .iter()
        .filter(|(p, roots)| {
            roots.iter().any(|r| path.starts_with(r))
                || path.parent() == Some(p.home.join("plugins").as_path())
                || path.parent() == Some(p.home.as_path())
                    && path
                        .file_name()
                        .is_some_and(|n| n == "config.yaml" || n == "plugins")
        })
        .map(|(p, _)| p)
        .collect()
}

/// Runs the watch until `stop` returns true (checked at least every `debounce`), calling
/// `report` for every sync.
pub fn watch(
    root: &Root,
    db: &Path,
    hermes: Option<crate::version::HermesVersion>,
    debounce: Duration,
    mut report: impl FnMut(WatchEvent),
    stop: impl Fn() -> bool,
) -> Result<(), WatchError> {
    let index = Index::open_for_sync(db)?;
    // Events name absolute, resolved paths; so must the index file they are checked against.
    let db = &std::fs::canonicalize(db).unwrap_or_else(|_| db.to_owned());
    let opts = SyncOptions {
        hermes,
        ..SyncOptions::default()
    };
    let sync_one = |profile: &Profile| index.sync(profile, &opts);
    let (tx, rx) = mpsc::channel();
    let watcher = notify::recommended_watcher(move |e| {
        let _ = tx.send(e);
    })
    .map_err(|source| WatchError::Watch {
        path: root.path.clone(),
        source,
    })?;

    let mut w = Watches {
        watcher,
        watched: BTreeSet::new(),
        profiles: Vec::new(),
    };
    w.arm(root)?;
    for (p, _) in &w.profiles {
        report(WatchEvent::Synced(sync_one(p)));
    }
    report(WatchEvent::Ready {
        watched: w.watched.len(),
    });

    let mut pending: BTreeSet<String> = BTreeSet::new();
    let mut rearm = false;
    let mut last_event = Instant::now();
    while !stop() {
        match rx.recv_timeout(debounce) {
            Ok(Ok(event)) => {
                if matches!(
                    event.kind,
                    EventKind::Access(a) if a != AccessKind::Close(AccessMode::Write)
                ) {
                    continue;
                }
                for path in &event.paths {
                    let profiles_dir = root.path.join("profiles");
                    if path == &profiles_dir || path.parent() == Some(profiles_dir.as_path()) {
                        rearm = true;
                    }
                    for p in concerned(&w.profiles, db, path) {
                        pending.insert(p.name.clone());
                        // New roots: external dirs from config.yaml, or a plugin's skills.
                        if path
                            .file_name()
                            .is_some_and(|n| n == "config.yaml" || n == "plugins")
                            || path.parent() == Some(p.home.join("plugins").as_path())
                        {
                            rearm = true;
                        }
                    }
                }
                last_event = Instant::now();
            }
            Ok(Err(_)) | Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if (pending.is_empty() && !rearm) || last_event.elapsed() < debounce {
            continue;
        }
        if rearm {
            let before: BTreeSet<String> = w.profiles.iter().map(|(p, _)| p.name.clone()).collect();
            w.arm(root)?;
            for (p, _) in &w.profiles {
                if !before.contains(&p.name) {
                    pending.insert(p.name.clone());
                }
            }
            for gone in before
                .iter()
                .filter(|n| w.profiles.iter().all(|(p, _)| &p.name != *n))
            {
                if index.profiles()?.contains(gone) {
                    index.drop_profile(gone)?;
                    report(WatchEvent::Dropped(gone.clone()));
                }
                pending.remove(gone);
            }
            rearm = false;
        }
        for name in std::mem::take(&mut pending) {
            if let Some((p, _)) = w.profiles.iter().find(|(p, _)| p.name == name) {
                report(WatchEvent::Synced(sync_one(p)));
            }
        }
    }
    Ok(())
}

/// The watches in place and the profiles they serve.
struct Watches {
    watcher: notify::RecommendedWatcher,
    watched: BTreeSet<PathBuf>,
    /// Each profile, with its skill roots.
    profiles: Vec<(Profile, Vec<PathBuf>)>,
}

impl Watches {
    /// Watches every profile's folders (again, after a profile or a `config.yaml` changed).
    fn arm(&mut self, root: &Root) -> Result<(), WatchError> {
        self.profiles.clear();
        let mut wanted = vec![(root.path.join("profiles"), RecursiveMode::NonRecursive)];
        for p in root.profiles() {
            let t = targets(&p);
            let roots = t
                .iter()
                .filter(|(_, m)| *m == RecursiveMode::Recursive)
                .map(|(r, _)| r.clone())
                .collect();
            wanted.extend(t);
            self.profiles.push((p, roots));
        }
        // A folder that was removed lost its watch with it; forget it, so that a folder
        // made again at that path is watched again.
        self.watched.retain(|p| p.is_dir());
        for (path, mode) in wanted {
            // A root that does not exist yet (no plugins/, an external dir to come) is
            // noticed through its parent's events instead.
            if !path.is_dir() || !self.watched.insert(path.clone()) {
                continue;
            }
            self.watcher
                .watch(&path, mode)
                .map_err(|source| WatchError::Watch { path, source })?;
        }
        Ok(())
    }
}
