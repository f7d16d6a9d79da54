//! The per-turn freshness check: a cheap stat signature of a profile's skill roots.
//!
//! A long-running agent process (the Hermes plugin, through [`crate::refresh::LiveIndex`])
//! asks once per turn whether the index may be behind the files, and starts a background
//! sync when it may be. A full sync stats every SKILL.md, which is too much for every turn
//! on a big home, so [`Freshness`] stats only what changes when skills are added, removed,
//! renamed or moved, or when the configuration changes:
//!
//! - `config.yaml` and the `plugins/` folder of the profile home;
//! - every skill root ([`crate::scan::skill_roots`]: local, `skills.external_dirs`, plugin
//!   `skills/` folders), each of its immediate child folders (the categories, or bare skill
//!   folders) and the `SKILL.md` directly inside each child.
//!
//! A change to any of these marks the index stale. An edit inside a nested
//! `category/skill/SKILL.md` changes none of them, so the check also goes stale when
//! [`DEFAULT_TTL`] (30 s) has passed since the last sync started: the incremental sync that
//! follows stats every file and picks such edits up, so they are seen within 30 s (plus the
//! sync's own time).
//!
//! The roots are derived from `config.yaml` again only when its stat changes or the TTL
//! expires, so a turn with nothing changed costs a few dozen `stat` calls and no parsing.

use crate::config::HermesConfig;
use crate::home::Profile;
use crate::scan::{skill_roots, FileStat, SKILL_FILE};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long an index may go unsynced before a full incremental sync runs anyway.
pub const DEFAULT_TTL: Duration = Duration::from_secs(30);

/// What [`Freshness::check`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Due {
    /// The stat signature now.
    pub signature: u64,
    /// Whether a sync is due.
    pub stale: bool,
}

/// Tracks whether a profile's index may be behind its files.
#[derive(Debug, Clone)]
pub struct Freshness {
    home: PathBuf,
    /// Another agent's folders, which are the roots instead of the home's.
    agent: Option<crate::agent::AgentDirs>,
    /// The trusted project whose folders come first, and whose scan verdicts count.
    project: Option<crate::project::Project>,
    ttl: Duration,
    /// The roots, and the config stat and time they were derived at.
    roots: Option<(Option<FileStat>, Instant, Vec<PathBuf>)>,
    /// The signature and time of the last sync.
    synced: Option<(u64, Instant)>,
    /// The signature seen by the last [`Freshness::is_stale`].
    pending: Option<u64>,
}

impl Freshness {
    /// A check for `profile`'s home with the default 30 s TTL; stale until the first
    /// [`Freshness::mark_synced`].
    pub fn new(profile: &Profile) -> Freshness {
        Self::of_profile(profile, DEFAULT_TTL)
    }

    /// A check for `profile` (a Hermes home's, or another agent's folders) with `ttl`.
    pub fn of_profile(profile: &Profile, ttl: Duration) -> Freshness {
        Freshness {
            agent: profile.agent.clone(),
            project: profile.project.clone(),
            ..Self::with_ttl(&profile.home, ttl)
        }
    }

    /// A check for the profile home `home` with the given TTL.
    pub fn with_ttl(home: &Path, ttl: Duration) -> Freshness {
        Freshness {
            home: home.to_path_buf(),
            agent: None,
            project: None,
            ttl,
            roots: None,
            synced: None,
            pending: None,
        }
    }

    /// The TTL.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Whether a sync is due: never synced, the signature changed since the last sync, or
    /// the TTL has passed. Remembers the signature it saw, for [`Freshness::mark_synced`].
    pub fn is_stale(&mut self) -> bool {
        let due = self.check();
        self.pending = Some(due.signature);
        due.stale
    }

    /// The stat signature now, and whether a sync is due. Unlike [`Freshness::is_stale`]
    /// this remembers nothing: a caller that syncs elsewhere (a background thread) keeps
    /// the signature and hands it back to [`Freshness::mark_synced_as`].
    pub fn check(&mut self) -> Due {
        let signature = self.signature();
        let stale = match self.synced {
            None => true,
            Some((last, at)) => last != signature || at.elapsed() >= self.ttl,
        };
        Due { signature, stale }
    }

    /// Records that a sync has just succeeded. The signature stored is the one the last
    /// [`Freshness::is_stale`] saw (taken *before* the sync), so a change made while the
    /// sync ran still counts as a change next time.
    pub fn mark_synced(&mut self) {
        let sig = match self.pending.take() {
            Some(s) => s,
            None => self.signature(),
        };
        self.synced = Some((sig, Instant::now()));
    }

    /// Records that a sync which started at `started`, after [`Freshness::check`] saw
    /// `signature`, has succeeded. The TTL counts from `started`: what the sync saw is as
    /// old as that. A later sync's record is never replaced by an earlier one's.
    pub fn mark_synced_as(&mut self, signature: u64, started: Instant) {
        if self.synced.is_some_and(|(_, at)| at > started) {
            return;
        }
        self.synced = Some((signature, started));
    }

    /// Forgets the last sync: the next [`Freshness::is_stale`] returns `true`.
    pub fn invalidate(&mut self) {
        self.synced = None;
    }

    /// The stat signature of the profile's roots, their children and `config.yaml`.
    pub fn signature(&mut self) -> u64 {
        let config = stat(&self.home.join("config.yaml"));
        let fresh_roots = match &self.roots {
            Some((c, at, _)) => *c == config && at.elapsed() < self.ttl,
            None => false,
        };
        if !fresh_roots {
            // The newest release's roots (with `skills.create_dir`): watching one root
            // more than the profile's Hermes reads costs at most a needless sync.
            let newest = crate::version::HermesVersion::NEWEST;
            let roots = match &self.agent {
                Some(dirs) => crate::scan::agent_roots(dirs),
                None => {
                    let cfg = HermesConfig::load(&self.home, newest).unwrap_or_default();
                    let project =
                        crate::project::current_dirs(self.project.as_ref(), &self.home, &cfg);
                    skill_roots(&self.home, &cfg, newest, &project)
                }
            };
            let roots = roots.into_iter().map(|r| r.path).collect();
            self.roots = Some((config, Instant::now(), roots));
        }
        let mut h = DefaultHasher::new();
        hash_stat(config, &mut h);
        hash_stat(stat(&self.home.join("plugins")), &mut h);
        if self.project.is_some() {
            // A verdict Hermes has just recorded can let a project skill in.
            hash_stat(stat(&crate::quarantine::cache_dir(&self.home)), &mut h);
        }
        if let Some((_, _, roots)) = &self.roots {
            for root in roots {
                root.hash(&mut h);
                hash_stat(stat(root), &mut h);
                let mut children: Vec<(std::ffi::OsString, PathBuf)> = std::fs::read_dir(root)
                    .into_iter()
                    .flatten()
                    .filter_map(Result::ok)
                    .map(|e| (e.file_name(), e.path()))
                    .filter(|(_, p)| p.is_dir())
                    .collect();
                children.sort();
                for (name, path) in children {
                    name.hash(&mut h);
                    hash_stat(stat(&path), &mut h);
                    hash_stat(stat(&path.join(SKILL_FILE)), &mut h);
                }
            }
        }
        h.finish()
    }
}

fn stat(path: &Path) -> Option<FileStat> {
    std::fs::metadata(path).ok().map(|m| FileStat::of(&m))
}

/// Feeds a stat (or its absence) to the hasher.
fn hash_stat<H: Hasher>(s: Option<FileStat>, h: &mut H) {
    match s {
        None => 0u8.hash(h),
        Some(s) => (1u8, s.mtime_ns, s.ctime_ns, s.size, s.ino).hash(h),
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

    fn home() -> tempfile::TempDir {
        let t = tempfile::tempdir().expect("tempdir");
        write(
            &t.path().join("skills/devops/docker/SKILL.md"),
            "---\nname: docker\ndescription: d\n---\n",
        );
        t
    }

    fn synced(h: &Path, ttl: Duration) -> Freshness {
        let mut f = Freshness::with_ttl(h, ttl);
        assert!(f.is_stale(), "never synced");
        f.mark_synced();
        assert!(!f.is_stale(), "nothing changed");
        f
    }

    #[test]
    fn new_category_or_skill_folder_is_seen() {
        let t = home();
        let mut f = synced(t.path(), Duration::from_secs(3600));
        write(
            &t.path().join("skills/devops/k8s/SKILL.md"),
            "---\nname: k8s\n---\n",
        );
        assert!(f.is_stale(), "new skill folder in a category");
        f.mark_synced();
        assert!(!f.is_stale());
        write(
            &t.path().join("skills/research/arxiv/SKILL.md"),
            "---\nname: a\n---\n",
        );
        assert!(f.is_stale(), "new category");
    }

    #[test]
    fn removal_and_config_changes_are_seen() {
        let t = home();
        let mut f = synced(t.path(), Duration::from_secs(3600));
        fs::remove_dir_all(t.path().join("skills/devops/docker")).expect("rm");
        assert!(f.is_stale(), "removed skill");
        f.mark_synced();
        write(&t.path().join("config.yaml"), "skills:\n  disabled: [x]\n");
        assert!(f.is_stale(), "config written");
    }

    #[test]
    fn external_dirs_are_watched() {
        let t = home();
        let ext = tempfile::tempdir().expect("tempdir");
        write(
            &t.path().join("config.yaml"),
            &format!("skills:\n  external_dirs: [{}]\n", ext.path().display()),
        );
        let mut f = synced(t.path(), Duration::from_secs(3600));
        write(
            &ext.path().join("travel/trip/SKILL.md"),
            "---\nname: t\n---\n",
        );
        assert!(f.is_stale(), "new skill in an external root");
    }

    #[test]
    fn in_place_edit_of_a_bare_skill_is_seen() {
        let t = home();
        write(
            &t.path().join("skills/bare/SKILL.md"),
            "---\nname: bare\n---\n",
        );
        let mut f = synced(t.path(), Duration::from_secs(3600));
        write(
            &t.path().join("skills/bare/SKILL.md"),
            "---\nname: bare\ndescription: longer now\n---\n",
        );
        assert!(f.is_stale());
    }

    #[test]
    fn nested_in_place_edits_wait_for_the_ttl() {
        let t = home();
        let mut f = synced(t.path(), Duration::from_millis(200));
        write(
            &t.path().join("skills/devops/docker/SKILL.md"),
            "---\nname: docker\ndescription: edited in place, same folder\n---\n",
        );
        // Nothing the cheap check watches changed...
        assert!(!f.is_stale());
        // ...but the TTL forces a sync.
        std::thread::sleep(Duration::from_millis(250));
        assert!(f.is_stale());
        f.mark_synced();
        assert!(!f.is_stale());
    }

    #[test]
    fn invalidate_forces_a_sync_and_missing_home_is_fine() {
        let t = home();
        let mut f = synced(t.path(), Duration::from_secs(3600));
        f.invalidate();
        assert!(f.is_stale());
        let mut g = Freshness::with_ttl(&t.path().join("nope"), DEFAULT_TTL);
        assert!(g.is_stale());
        g.mark_synced();
        assert!(!g.is_stale());
    }
}
