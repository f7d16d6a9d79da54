//! Finding SKILL.md files the way Hermes does, and stat-ing them.
//!
//! Hermes walks each skill root with symlinks followed, prunes VCS, cache and virtualenv
//! folders anywhere, and does not descend into the support folders (`references/`,
//! `templates/`, `assets/`, `scripts/`) of a folder that holds a SKILL.md. We walk the same
//! way, but a symlink loop, an unreadable folder or a SKILL.md that is not a regular file
//! becomes a [`Problem`] naming the path instead of an endless walk or a silent gap.

use crate::agent::{AgentDirs, Scope};
use crate::config::HermesConfig;
use crate::skill::{Location, Origin, ORG_DIR};
use crate::version::HermesVersion;
use std::path::{Path, PathBuf};

/// Folder names Hermes never descends into.
pub const EXCLUDED_DIRS: [&str; 14] = [
    ".git",
    ".github",
    ".hub",
    ".archive",
    ".venv",
    "venv",
    "node_modules",
    "site-packages",
    "__pycache__",
    ".tox",
    ".nox",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
];

/// Folders inside a skill folder that hold support files, not skills.
pub const SUPPORT_DIRS: [&str; 4] = ["references", "templates", "assets", "scripts"];

/// The file name of a skill.
pub const SKILL_FILE: &str = "SKILL.md";

/// The file in [`ORG_DIR`] naming the one org whose mirror Hermes reads.
pub const ACTIVE_ORG_FILE: &str = ".active_org";

/// A directory that skills are found under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillRoot {
    /// The directory.
    pub path: PathBuf,
    /// What kind of root it is.
    pub origin: Origin,
    /// How its `_org` folder is read.
    pub org: OrgMirrors,
    /// Folder names its Hermes release also never walks ([`also_excluded`]).
    pub also_excluded: &'static [&'static str],
}

/// The folder names Hermes `version` never walks besides [`EXCLUDED_DIRS`]: 0.21 adds the
/// curator's `.curator_backups` (`agent/skill_utils.EXCLUDED_SKILL_DIRS`). Kept apart so that
/// a cached folder listing, which leaves out only [`EXCLUDED_DIRS`], serves every release.
pub fn also_excluded(version: HermesVersion) -> &'static [&'static str] {
    if version >= HermesVersion::V0_21 {
        &[".curator_backups"]
    } else {
        &[]
    }
}

/// How a root reads its [`ORG_DIR`] folder: Hermes' org mirrors, from 0.20 on
/// (`agent/skill_utils.iter_skill_index_files`: "TOKEN-GATED resolution").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum OrgMirrors {
    /// An ordinary folder: 0.19, and every root but the local one.
    #[default]
    Plain,
    /// Only `_org/<id>/` of the org named in `_org/.active_org` is walked; no mirror
    /// without one.
    Gated(Option<String>),
}

impl SkillRoot {
    /// Whether `dir` is an org mirror this root does not walk: `<root>/_org/<id>` of an org
    /// that is not the active one.
    fn gated_out(&self, dir: &Path) -> bool {
        let OrgMirrors::Gated(active) = &self.org else {
            return false;
        };
        let Ok(rel) = dir.strip_prefix(&self.path) else {
            return false;
        };
        let mut parts = rel.iter();
        match (parts.next(), parts.next(), parts.next()) {
            (Some(org), Some(id), None) if org == ORG_DIR => {
                active.as_deref().map(std::ffi::OsStr::new) != Some(id)
            }
            _ => false,
        }
    }
}

/// The org id `skills/_org/.active_org` names, as Hermes reads it (`read_active_org_id`:
/// the text stripped; empty, missing or unreadable is none).
pub fn active_org(local_root: &Path) -> Option<String> {
    use std::io::Read;
    let file = std::fs::File::open(local_root.join(ORG_DIR).join(ACTIVE_ORG_FILE)).ok()?;
    let mut text = String::new();
    // An id is short: a huge marker is read only as far as an id could go.
    file.take(64 * 1024).read_to_string(&mut text).ok()?;
    let id = text.trim();
    (!id.is_empty()).then(|| id.to_owned())
}

/// The skill roots of a profile home as Hermes `version` reads them, in its precedence
/// order: a trusted project's skill folders (`project`, 0.21), the local skills, then
/// `skills.create_dir` and `skills.external_dirs` in config order, then each plugin's
/// `skills/` by name.
pub fn skill_roots(
    home: &Path,
    config: &HermesConfig,
    version: HermesVersion,
    project: &[PathBuf],
) -> Vec<SkillRoot> {
    let local = home.join("skills");
    let org = if version >= HermesVersion::V0_20 {
        OrgMirrors::Gated(active_org(&local))
    } else {
        OrgMirrors::Plain
    };
    let also_excluded = also_excluded(version);
    let mut roots: Vec<SkillRoot> = project
        .iter()
        .enumerate()
        .map(|(i, path)| SkillRoot {
            path: path.clone(),
            origin: Origin::Project(i as u32),
            org: OrgMirrors::Plain,
            also_excluded,
        })
        .collect();
    roots.push(SkillRoot {
        path: local,
        origin: Origin::Local,
        org,
        also_excluded,
    });
    for (i, path) in config.external_roots(home).into_iter().enumerate() {
        roots.push(SkillRoot {
            path,
            origin: Origin::External(i as u32),
            org: OrgMirrors::Plain,
            also_excluded,
        });
    }
    roots.extend(plugin_roots(&home.join("plugins"), also_excluded));
    roots
}

/// Each `<dir>/<plugin>/skills` folder, by plugin name: a root whose skills are named
/// `<plugin>:<name>`.
fn plugin_roots(dir: &Path, also_excluded: &'static [&'static str]) -> Vec<SkillRoot> {
    let mut plugins: Vec<(String, PathBuf)> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| {
            let skills = e.path().join("skills");
            let name = e.file_name().into_string().ok()?;
            skills.is_dir().then_some((name, skills))
        })
        .collect();
    plugins.sort();
    plugins
        .into_iter()
        .map(|(name, path)| SkillRoot {
            path,
            origin: Origin::Plugin(name),
            org: OrgMirrors::Plain,
            also_excluded,
        })
        .collect()
}

/// The skill roots of another agent's folders, winner first: the first folder plays
/// Hermes' local root (its skills shadow the others'), the rest its external dirs in order,
/// and a plugins folder one root per plugin.
pub fn agent_roots(dirs: &AgentDirs) -> Vec<SkillRoot> {
    let also_excluded = also_excluded(HermesVersion::NEWEST);
    let mut roots = Vec::new();
    let mut plain = 0u32;
    for root in &dirs.roots {
        if root.scope == Scope::Plugins {
            roots.extend(plugin_roots(&root.path, also_excluded));
            continue;
        }
        let origin = match plain {
            0 => Origin::Local,
            n => Origin::External(n - 1),
        };
        plain += 1;
        roots.push(SkillRoot {
            path: root.path.clone(),
            origin,
            org: OrgMirrors::Plain,
            also_excluded,
        });
    }
    roots
}

/// How close to the moment it was looked at a modification time makes a stat untrustworthy:
/// a file or folder changed again within the same clock tick would keep its stat.
pub const RACY_WINDOW_NS: i64 = 2_000_000_000;

/// A folder as a sync listed it: enough to walk it again without listing it while its stat
/// is unchanged. Adding, removing or renaming an entry always changes a folder's mtime, so a
/// listing checked against the folder's current stat can be trusted however old it is.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DirListing {
    /// The folder's stat when it was listed.
    pub stat: FileStat,
    /// When (ns since the epoch) it was listed.
    pub listed_at_ns: i64,
    /// The sub-folders to walk (excluded and support folders already left out), sorted.
    pub subdirs: Vec<String>,
    /// Whether it holds a regular file named SKILL.md.
    pub skill: bool,
}

impl DirListing {
    /// Whether the listing may stand in for listing the folder, given its stat now.
    pub fn still_valid(&self, stat: &FileStat) -> bool {
        self.stat == *stat
            && self.stat.mtime_ns.max(self.stat.ctime_ns) < self.listed_at_ns - RACY_WINDOW_NS
    }
}

/// Folder path → its last listing.
pub type DirCache = rustc_hash::FxHashMap<String, DirListing>;

/// What a stat says about a file; a change in any part means the file may have changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FileStat {
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// Status-change time, nanoseconds since the epoch (0 where unknown).
    pub ctime_ns: i64,
    /// Size in bytes.
    pub size: u64,
    /// Inode number (0 where unknown).
    pub ino: u64,
}

impl FileStat {
    /// The stat of `meta`.
    pub fn of(meta: &std::fs::Metadata) -> FileStat {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            FileStat {
                mtime_ns: meta
                    .mtime()
                    .saturating_mul(1_000_000_000)
                    .saturating_add(meta.mtime_nsec()),
                ctime_ns: meta
                    .ctime()
                    .saturating_mul(1_000_000_000)
                    .saturating_add(meta.ctime_nsec()),
                size: meta.len(),
                ino: meta.ino(),
            }
        }
        #[cfg(not(unix))]
        {
            let mtime_ns = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as i64);
            FileStat {
                mtime_ns,
                ctime_ns: 0,
                size: meta.len(),
                ino: 0,
            }
        }
    }
}

/// A SKILL.md found by the walk.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The path as reached from its root (never canonicalised, so it stays inside the root).
    pub path: PathBuf,
    /// Root kind and path components.
    pub location: Location,
    /// Its stat, taken during the walk.
    pub stat: FileStat,
    /// When the SKILL.md is a symlink (judged to lead inside the skill roots), where it may
    /// lead: checked again when it is read.
    pub link_bounds: Option<std::sync::Arc<LinkBounds>>,
}

impl Candidate {
    /// The manifest key: the path as a string.
    pub fn key(&self) -> String {
        self.path.to_string_lossy().into_owned()
    }
}

/// Something the walk could not use, with the path it concerns.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Problem {
    /// The file or folder.
    pub path: PathBuf,
    /// Why it was skipped.
    pub reason: String,
}

/// What a scan found.
#[derive(Debug, Default)]
pub struct Scan {
    /// The SKILL.md files, sorted by path within each root.
    pub found: Vec<Candidate>,
    /// What could not be used, with the reason.
    pub problems: Vec<Problem>,
    /// What was used but deserves a word: folders reached through a symlink that leads
    /// outside the skill root (Hermes warns about these when it loads them).
    pub notices: Vec<Problem>,
    /// The listing of every plain folder walked (reused from the cache or made now), for the
    /// next scan.
    pub listings: Vec<(String, DirListing)>,
    /// How many folders had to be listed because the cache had nothing valid for them.
    pub listed: usize,
}

/// Walks every root, listing only folders whose stat no longer matches `cache`.
pub fn scan(roots: &[SkillRoot], cache: &DirCache, now_ns: i64) -> Scan {
    let mut out = Scan::default();
    for root in roots {
        walk_root(root, cache, now_ns, &mut out);
    }
    out
}

fn walk_root(root: &SkillRoot, cache: &DirCache, now_ns: i64, out: &mut Scan) {
    let Ok(meta) = std::fs::metadata(&root.path) else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let mut w = Walked::default();
    let bounds = LinkBounds {
        root: std::fs::canonicalize(&root.path).ok(),
    };
    let mut ctx = Cached {
        root,
        bounds: &bounds,
        cache,
        now_ns,
        listings: &mut out.listings,
        listed: &mut out.listed,
    };
    walk_cached(&mut ctx, &root.path, FileStat::of(&meta), &mut w);
    out.problems.append(&mut w.problems);
    out.notices.append(&mut w.notices);
    // Hermes sorts the matched paths as strings, which orders `a-b/` before `a/`.
    w.found
        .sort_by(|a, b| a.path.as_os_str().cmp(b.path.as_os_str()));
    out.found.append(&mut w.found);
}

struct Cached<'a> {
    root: &'a SkillRoot,
    bounds: &'a LinkBounds,
    cache: &'a DirCache,
    now_ns: i64,
    listings: &'a mut Vec<(String, DirListing)>,
    listed: &'a mut usize,
}

/// Walks the plain folder `dir` (not a symlink), using its cached listing while the folder's
/// stat matches. Folders holding anything unusual (symlinks, a SKILL.md that is not a
/// regular file, names that are not UTF-8) are listed every time and walked as before.
fn walk_cached(ctx: &mut Cached<'_>, dir: &Path, stat: FileStat, out: &mut Walked) {
    let key = dir.to_string_lossy().into_owned();
    let (listing, cacheable) = match ctx.cache.get(&key).filter(|l| l.still_valid(&stat)) {
        Some(l) => (l.clone(), true),
        None => {
            *ctx.listed += 1;
            match list_dir(ctx, dir, stat, out) {
                Some(listed) => listed,
                None => return,
            }
        }
    };
    if listing.skill {
        skill_file(ctx.root, ctx.bounds, dir.join(SKILL_FILE), out);
    }
    for name in &listing.subdirs {
        let sub = dir.join(name);
        if ctx.root.gated_out(&sub) || ctx.root.also_excluded.contains(&name.as_str()) {
            continue;
        }
        match std::fs::symlink_metadata(&sub) {
            Ok(meta) if meta.is_dir() => walk_cached(ctx, &sub, FileStat::of(&meta), out),
            Ok(_) => {}
            Err(e) => out.problems.push(Problem {
                path: sub,
                reason: format!("cannot read: {e}"),
            }),
        }
    }
    if cacheable {
        ctx.listings.push((key, listing));
    }
}

/// Lists `dir`, walks what a listing cannot describe (symlinks, odd entries) right away, and
/// returns the listing of the rest with whether the folder may be cached (it may not when it
/// held anything odd); `None` when it cannot be read.
fn list_dir(
    ctx: &mut Cached<'_>,
    dir: &Path,
    stat: FileStat,
    out: &mut Walked,
) -> Option<(DirListing, bool)> {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            out.problems.push(Problem {
                path: dir.to_path_buf(),
                reason: format!("cannot read: {e}"),
            });
            return None;
        }
    };
    let mut subdirs = Vec::new();
    let mut skill = false;
    let mut plain = true;
    let mut odd: Vec<PathBuf> = Vec::new();
    for entry in entries {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                out.problems.push(Problem {
                    path: dir.to_path_buf(),
                    reason: format!("cannot read: {e}"),
                });
                plain = false;
                continue;
            }
        };
        let ft = match entry.file_type() {
            Ok(t) => t,
            Err(e) => {
                out.problems.push(Problem {
                    path: entry.path(),
                    reason: format!("cannot stat: {e}"),
                });
                plain = false;
                continue;
            }
        };
        let name = entry.file_name();
        if name == SKILL_FILE && ft.is_file() {
            skill = true;
        } else if ft.is_dir() && name != SKILL_FILE {
            match name.into_string() {
                Ok(n) => subdirs.push(n),
                Err(_) => {
                    plain = false;
                    odd.push(entry.path());
                }
            }
        } else if ft.is_symlink() || name == SKILL_FILE {
            plain = false;
            odd.push(entry.path());
        }
    }
    // Hermes prunes support folders next to any SKILL.md that is not a folder: a link, a
    // dangling link or a FIFO count as much as a file.
    let skill_entry = skill
        || odd
            .iter()
            .any(|p| p.file_name().is_some_and(|n| n == SKILL_FILE) && is_skill_entry(p));
    subdirs.retain(|n| !pruned(n, skill_entry));
    subdirs.sort();
    odd.sort();
    // Links and odd entries go through the general walk, one at a time.
    for path in odd {
        let is_skill = path.file_name().is_some_and(|n| n == SKILL_FILE);
        if is_skill {
            if is_skill_entry(&path) {
                skill_file(ctx.root, ctx.bounds, path, out);
            } else {
                out.problems.push(Problem {
                    path,
                    reason: "a directory named SKILL.md, not a file".into(),
                });
            }
            continue;
        }
        let is_link = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
        if path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| pruned(n, skill_entry) || ctx.root.also_excluded.contains(&n))
        {
            continue;
        }
        if is_link {
            if std::fs::metadata(&path).is_ok_and(|m| m.is_dir()) {
                symlinked_dir(ctx.root, ctx.bounds, &path, out);
            }
        } else if let Ok(meta) = std::fs::symlink_metadata(&path) {
            walk_cached(ctx, &path, FileStat::of(&meta), out);
        }
    }
    let listing = DirListing {
        stat,
        listed_at_ns: ctx.now_ns,
        subdirs,
        skill,
    };
    Some((listing, plain))
}

/// Where the text of a SKILL.md that is itself a symlink may come from: inside the skill
/// root it was found under, nowhere else. (Folder links are followed, as Hermes follows
/// them, with a notice when they lead outside the root: linking a whole skill collection is
/// deliberate, and what is read there are files named SKILL.md. A file link can name any
/// file: `ln -s ~/.env skills/x/SKILL.md`, or a link reached through a folder link to `/`.)
/// The check is made by the walk and again when the file is read
/// ([`LinkBounds::check_open`]), so a link switched in between is caught too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkBounds {
    /// The skill root, canonical (`None` when it cannot be resolved: no link is read).
    root: Option<PathBuf>,
}

impl LinkBounds {
    /// Why a link leading to `target` (resolved) must not be read, if it must not.
    fn refuse_target(&self, target: &Path) -> Option<String> {
        let inside = self.root.as_ref().is_some_and(|r| target.starts_with(r));
        (!inside).then(|| {
            format!(
                "a symlink to {}, outside the skill root: not read, so that no file outside the skill roots reaches a prompt",
                target.display()
            )
        })
    }

    /// Why the SKILL.md link `path` must not be read, if it must not: it leads outside the
    /// skill root, or to a file whose real path cannot be worked out (a chain of links
    /// longer than the system resolves, which `open` may still follow). A dangling link is
    /// judged by where it points.
    pub fn refusal(&self, path: &Path) -> Option<String> {
        let target = match std::fs::canonicalize(path) {
            Ok(t) => t,
            Err(e) if std::fs::metadata(path).is_ok() => {
                return Some(format!(
                    "a symlink whose target cannot be resolved ({e}): not read"
                ))
            }
            Err(_) => {
                let to = std::fs::read_link(path).ok()?;
                let parent = std::fs::canonicalize(path.parent()?).ok()?;
                lexically_normal(&parent.join(to))
            }
        };
        self.refuse_target(&target)
    }

    /// Checks, after `path` was opened as `opened_file`, that the file opened is the one the
    /// walk found: `path` names it without a link, or through a link (when the walk saw one:
    /// `bounds`) to a file inside the skill root. For a link, the file opened is asked where
    /// it is (the kernel's name for it), so neither a switched link nor a folder switched
    /// on the way can answer for it.
    #[cfg(unix)]
    pub fn check_open(
        bounds: Option<&LinkBounds>,
        path: &Path,
        opened_file: &std::fs::File,
    ) -> Result<(), OpenMismatch> {
        use std::os::unix::fs::MetadataExt;
        let id = |m: &std::fs::Metadata| (m.dev(), m.ino());
        let opened = opened_file.metadata().map_err(|_| OpenMismatch::Changed)?;
        let here = std::fs::symlink_metadata(path).map_err(|_| OpenMismatch::Changed)?;
        if !here.file_type().is_symlink() {
            return if id(&here) == id(&opened) {
                Ok(())
            } else {
                Err(OpenMismatch::Changed)
            };
        }
        let Some(bounds) = bounds else {
            return Err(OpenMismatch::Refused(
                "became a symlink after the walk: not read (the next sync judges it)".into(),
            ));
        };
        // Where the opened file really is, as the kernel names it: any lookup of the path
        // after the open (canonicalize, stat) can be answered by a folder switched in
        // between, so the file itself is asked.
        let Some(real) = opened_path(opened_file) else {
            return Self::check_by_lookup(bounds, path, &opened);
        };
        match bounds.refuse_target(&real) {
            Some(why) => Err(OpenMismatch::Refused(why)),
            None => Ok(()),
        }
    }

    /// [`LinkBounds::check_open`] where the system cannot name an open file: the link is
    /// resolved once, and that file must be the one opened.
    #[cfg(unix)]
    fn check_by_lookup(
        bounds: &LinkBounds,
        path: &Path,
        opened: &std::fs::Metadata,
    ) -> Result<(), OpenMismatch> {
        use std::os::unix::fs::MetadataExt;
        let target = std::fs::canonicalize(path).map_err(|_| OpenMismatch::Changed)?;
        if let Some(why) = bounds.refuse_target(&target) {
            return Err(OpenMismatch::Refused(why));
        }
        match std::fs::metadata(&target) {
            Ok(m) if (m.dev(), m.ino()) == (opened.dev(), opened.ino()) => Ok(()),
            _ => Err(OpenMismatch::Changed),
        }
    }

    /// Without unix identities, the walk's check is the only one.
    #[cfg(not(unix))]
    pub fn check_open(
        _: Option<&LinkBounds>,
        _: &Path,
        _: &std::fs::File,
    ) -> Result<(), OpenMismatch> {
        Ok(())
    }
}

/// The path of the open file `file` as the kernel knows it (`/proc/self/fd` on Linux,
/// `F_GETPATH` on macOS): the file reached, whatever links and folders led there, with no
/// further lookup that a switch could answer. `None` where the system cannot say, or when
/// the file was deleted since.
#[cfg(target_os = "linux")]
fn opened_path(file: &std::fs::File) -> Option<PathBuf> {
    use std::os::unix::io::AsRawFd;
    let real = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok()?;
    (real.is_absolute() && !real.to_string_lossy().ends_with(" (deleted)")).then_some(real)
}

#[cfg(target_os = "macos")]
fn opened_path(file: &std::fs::File) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::io::AsRawFd;
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: F_GETPATH writes at most PATH_MAX bytes, NUL-terminated, into `buf`.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETPATH, buf.as_mut_ptr()) };
    if rc == -1 {
        return None;
    }
    let len = buf.iter().position(|&b| b == 0)?;
    Some(PathBuf::from(std::ffi::OsStr::from_bytes(&buf[..len])))
}

#[cfg(all(unix, not(any(target_os = "linux", target_os = "macos"))))]
fn opened_path(_: &std::fs::File) -> Option<PathBuf> {
    None
}

/// Whether `target` (resolved) is in a file system of the kernel's (`/proc`, `/sys`,
/// `/dev`), which a skill folder link must not lead into: `/proc/self` holds the syncing
/// process's environment and, through `root` and `cwd`, every file of the machine.
fn kernel_fs(target: &Path) -> bool {
    ["/proc", "/sys", "/dev"]
        .iter()
        .any(|fs| target.starts_with(fs))
}

/// Why a file opened for reading is not the one the walk found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenMismatch {
    /// It must not be read, for this reason.
    Refused(String),
    /// The path changed between the open and the check (a file replaced by a rename): open
    /// it again.
    Changed,
}

/// `path` with `.` and `..` resolved by name (for a link whose target does not exist).
fn lexically_normal(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Records the SKILL.md at `path` as a candidate, or as a problem when it leads to something
/// that is not a regular file, or when it is a link to a file outside `bounds`. A dangling
/// link inside them is a candidate: Hermes offers a SKILL.md it cannot read under its folder
/// name.
fn skill_file(root: &SkillRoot, bounds: &LinkBounds, path: PathBuf, out: &mut Walked) {
    let is_link = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink());
    if let Some(reason) = is_link.then(|| bounds.refusal(&path)).flatten() {
        out.problems.push(Problem { path, reason });
        return;
    }
    let meta = match std::fs::metadata(&path) {
        Ok(m) => m,
        Err(e) => match std::fs::symlink_metadata(&path) {
            Ok(link) => link,
            Err(_) => {
                out.problems.push(Problem {
                    path,
                    reason: format!("cannot stat: {e}"),
                });
                return;
            }
        },
    };
    if !meta.is_file() && !meta.file_type().is_symlink() {
        out.problems.push(Problem {
            path,
            reason: format!("not a regular file ({})", file_kind(&meta)),
        });
        return;
    }
    let Ok(rel) = path.strip_prefix(&root.path) else {
        return;
    };
    let rel = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    out.found.push(Candidate {
        location: Location {
            origin: root.origin.clone(),
            rel,
        },
        stat: FileStat::of(&meta),
        path,
        link_bounds: is_link.then(|| std::sync::Arc::new(bounds.clone())),
    });
}

/// What a walk found: SKILL.md files and problems.
#[derive(Default)]
struct Walked {
    found: Vec<Candidate>,
    problems: Vec<Problem>,
    notices: Vec<Problem>,
}

/// Walks the symlinked folder `start` with links followed. Symlinks are followed, as Hermes
/// follows them, but only where there is one: a walk that follows links must open every
/// folder a second time to detect loops, which doubles the cost of a hub-sized tree. So the
/// main walk does not follow links, and each symlinked folder gets a walk of its own that
/// does, with loop detection.
fn walk(root: &SkillRoot, bounds: &LinkBounds, start: &Path, out: &mut Walked) {
    // A folder link met inside the followed walk is followed by it, but not into the
    // kernel's file systems (see `kernel_fs`).
    let walker = walkdir::WalkDir::new(start)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| {
            !e.file_type().is_dir()
                || e.depth() == 0
                || (keep_dir(root, e.path())
                    && !root.gated_out(e.path())
                    && !(e.path_is_symlink()
                        && std::fs::canonicalize(e.path()).is_ok_and(|t| kernel_fs(&t))))
        });
    for entry in walker {
        let entry = match entry {
            Ok(e) => e,
            Err(err) => {
                out.problems.push(walk_problem(start, err));
                continue;
            }
        };
        let is_skill = entry.file_name() == SKILL_FILE;
        if entry.file_type().is_symlink() {
            let target = std::fs::metadata(entry.path());
            match target {
                Ok(meta) if meta.is_dir() && !is_skill => {
                    if keep_dir(root, entry.path()) {
                        symlinked_dir(root, bounds, entry.path(), out);
                    }
                    continue;
                }
                Err(_) if is_skill => {
                    skill_file(root, bounds, entry.into_path(), out);
                    continue;
                }
                Err(_) => continue,
                Ok(_) => {}
            }
        }
        if !is_skill {
            continue;
        }
        if entry.file_type().is_dir() {
            out.problems.push(Problem {
                path: entry.into_path(),
                reason: "a directory named SKILL.md, not a file".into(),
            });
            continue;
        }
        // Through a link, the target's type and stat are what count.
        skill_file(root, bounds, entry.into_path(), out);
    }
}

/// Walks a symlinked folder (already vetted by name) with links followed: a link back to an
/// ancestor is a loop, reported; a link outside the skill root is walked and noted.
fn symlinked_dir(root: &SkillRoot, bounds: &LinkBounds, link: &Path, out: &mut Walked) {
    if root.gated_out(link) {
        return;
    }
    if let Some(ancestor) = loops_back(link) {
        out.problems.push(Problem {
            path: link.to_path_buf(),
            reason: format!("symlink loop: leads back to {}", ancestor.display()),
        });
        return;
    }
    if let Ok(target) = std::fs::canonicalize(link) {
        if kernel_fs(&target) {
            out.problems.push(Problem {
                path: link.to_path_buf(),
                reason: format!(
                    "a symlink into {}, a file system of the kernel's: not walked",
                    target.display()
                ),
            });
            return;
        }
    }
    if let Some(target) = outside(&root.path, link) {
        out.notices.push(Problem {
            path: link.to_path_buf(),
            reason: format!(
                "a symlink to {}, outside the skill root; its skills are indexed under this path, as Hermes lists them",
                target.display()
            ),
        });
    }
    walk(root, bounds, link, out);
}

/// Where a symlinked folder really is, when that is outside the skill root.
fn outside(root: &Path, link: &Path) -> Option<PathBuf> {
    let target = std::fs::canonicalize(link).ok()?;
    let root = std::fs::canonicalize(root).ok()?;
    (!target.starts_with(&root)).then_some(target)
}

/// The folder a symlinked folder points back to, when it is one of its own ancestors.
fn loops_back(link: &Path) -> Option<PathBuf> {
    let target = std::fs::canonicalize(link).ok()?;
    let parent = std::fs::canonicalize(link.parent()?).ok()?;
    parent.ancestors().any(|a| a == target).then_some(target)
}

/// Hermes' pruning rule: a folder named in [`EXCLUDED_DIRS`] is never walked, and a support
/// folder is not walked inside a folder that holds a SKILL.md (`in_skill_dir`).
fn pruned(name: &str, in_skill_dir: bool) -> bool {
    EXCLUDED_DIRS.contains(&name) || (in_skill_dir && SUPPORT_DIRS.contains(&name))
}

fn keep_dir(root: &SkillRoot, path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return true;
    };
    if root.also_excluded.contains(&name) {
        return false;
    }
    // Stat the parent's SKILL.md only for the few names where it matters.
    let in_skill_dir = SUPPORT_DIRS.contains(&name)
        && path
            .parent()
            .is_some_and(|p| is_skill_entry(&p.join(SKILL_FILE)));
    !pruned(name, in_skill_dir)
}

/// Whether `path` is an entry Hermes' `os.walk` lists among a folder's files: anything
/// there that is not (and does not lead to) a folder, dangling links included.
fn is_skill_entry(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok() && !std::fs::metadata(path).is_ok_and(|m| m.is_dir())
}

fn walk_problem(root: &Path, err: walkdir::Error) -> Problem {
    let path = err
        .path()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| root.to_path_buf());
    let reason = match (err.loop_ancestor(), err.io_error()) {
        (Some(ancestor), _) => format!("symlink loop: leads back to {}", ancestor.display()),
        (None, Some(io)) => format!("cannot read: {io}"),
        (None, None) => err.to_string(),
    };
    Problem { path, reason }
}

fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_block_device() || t.is_char_device() {
            return "a device";
        }
    }
    if meta.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}
