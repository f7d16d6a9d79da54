//! Hermes 0.21's trusted project skills: which project a session is in, whether the user
//! trusts it, and which of its folders hold skills.
//!
//! A project is the nearest folder at or above the session's working directory that holds
//! `.git` (a folder, or a worktree's file), never the user's home itself. Its skills live in
//! `<root>/.hermes/skills` and `<root>/.agents/skills`, and Hermes reads them only when the
//! repository is listed in `skills.trusted_project_dirs` and `skills.project_discovery` is not
//! `false`. Trust belongs to the repository, not the checkout: every worktree of a trusted
//! repository is trusted. The functions follow `agent/skill_utils.py` of Hermes 0.21.3
//! (`find_project_root`, `canonical_project_identity`, `is_project_root_trusted`,
//! `_candidate_project_skills_dirs`, `get_project_skills_dirs`).
//!
//! Each trusted project is indexed as a profile of its own, `<profile>@<root>`: the
//! project's folders, then the profile's own roots (Hermes profile names cannot hold `@`).

use crate::config::HermesConfig;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The project folders Hermes reads skills from, winner first (`PROJECT_SKILLS_SUBDIRS`).
pub const PROJECT_SKILL_DIRS: [&str; 2] = [".hermes/skills", ".agents/skills"];

/// How many folders up from the working directory Hermes looks for `.git`.
const MAX_DEPTH: usize = 64;

/// How long the `git worktree list` probe may take before trust falls back to the path.
const GIT_TIMEOUT: Duration = Duration::from_secs(2);

/// The separator between a profile's name and its project root in a project profile's name.
pub const PROFILE_SEPARATOR: char = '@';

/// A trusted project whose skills a session reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// The project root (resolved).
    pub root: PathBuf,
    /// Its skill folders that exist, resolved, winner first.
    pub dirs: Vec<PathBuf>,
}

/// What the working directory's project is to a profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Not inside a project, or discovery is off.
    None,
    /// A trusted project with skill folders.
    Trusted(Project),
    /// A project with skill folders that the profile does not trust: Hermes reads none of
    /// them (and tells the user how to trust it).
    Untrusted(Project),
}

/// The name of the profile that indexes `profile`'s skills inside `project`.
pub fn profile_name(profile: &str, project: &Path) -> String {
    format!("{profile}{PROFILE_SEPARATOR}{}", project.display())
}

/// The project a session whose working directory is `cwd` reads skills from, for the
/// profile at `home` with `config`.
pub fn standing(cwd: &Path, home: &Path, config: &HermesConfig) -> Standing {
    if config.no_project_discovery {
        return Standing::None;
    }
    let Some(root) = find_root(cwd) else {
        return Standing::None;
    };
    let dirs = skill_dirs(&root, &home.join("skills"));
    if dirs.is_empty() {
        return Standing::None;
    }
    let project = Project { root, dirs };
    if is_trusted(&project.root, &config.trusted_project_dirs) {
        Standing::Trusted(project)
    } else {
        Standing::Untrusted(project)
    }
}

/// The skill folders of `project` to read now for the profile at `home` with `config`,
/// winner first: checked again at each use, so a project whose trust was withdrawn (or whose
/// folders are gone) adds nothing.
pub fn current_dirs(project: Option<&Project>, home: &Path, config: &HermesConfig) -> Vec<PathBuf> {
    match project.map(|p| standing(&p.root, home, config)) {
        Some(Standing::Trusted(now)) => now.dirs,
        _ => Vec::new(),
    }
}

/// The nearest folder at or above `start` holding `.git`, within [`MAX_DEPTH`] levels;
/// none when that folder is the user's home (a dotfiles checkout is not a project).
pub fn find_root(start: &Path) -> Option<PathBuf> {
    let mut cur = resolve(start);
    let home = crate::agent::user_home().map(|h| resolve(&h));
    for _ in 0..MAX_DEPTH {
        if cur.join(".git").exists() {
            return (Some(&cur) != home.as_ref()).then_some(cur);
        }
        if !cur.pop() {
            return None;
        }
    }
    None
}

/// The existing skill folders of the project at `root`, resolved; never the profile's own
/// skills folder `local` (a Hermes home kept inside a checkout).
fn skill_dirs(root: &Path, local: &Path) -> Vec<PathBuf> {
    let local = resolve(local);
    PROJECT_SKILL_DIRS
        .iter()
        .map(|sub| root.join(sub))
        .filter(|d| d.is_dir())
        .map(|d| resolve(&d))
        .filter(|d| *d != local)
        .collect()
}

/// Whether the repository of `root` is one of `trusted` (entries with `${VAR}` and `~`
/// expanded, relative ones against the working directory), compared by repository identity.
fn is_trusted(root: &Path, trusted: &[String]) -> bool {
    let target = identity(root);
    trusted
        .iter()
        .map(|e| resolve(&crate::config::expand_path(e)))
        .any(|t| identity(&t) == target)
}

/// The repository identity of a checkout: the main worktree of the repository, when `root`
/// is one of the worktrees git lists for it; else `root` itself. A forged `.git` file cannot
/// borrow another repository's trust, since the path must be among git's own worktrees.
fn identity(root: &Path) -> PathBuf {
    let fallback = resolve(root);
    let worktrees = git_worktrees(&fallback).unwrap_or_default();
    if worktrees.contains(&fallback) {
        worktrees.into_iter().next().unwrap_or(fallback)
    } else {
        fallback
    }
}

/// `git worktree list --porcelain -z` in `dir`, with git's repository-selecting
/// environment removed, the main worktree first; `None` when git fails or is too slow.
fn git_worktrees(dir: &Path) -> Option<Vec<PathBuf>> {
    let mut cmd = std::process::Command::new("git");
    cmd.arg("-C")
        .arg(dir)
        .args(["worktree", "list", "--porcelain", "-z"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("GIT_") {
            cmd.env_remove(key);
        }
    }
    let mut child = cmd.spawn().ok()?;
    let started = Instant::now();
    loop {
        match child.try_wait().ok()? {
            Some(status) if status.success() => break,
            Some(_) => return None,
            None if started.elapsed() > GIT_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            None => std::thread::sleep(Duration::from_millis(2)),
        }
    }
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut child.stdout.take()?, &mut out).ok()?;
    Some(
        out.split(|&b| b == 0)
            .filter_map(|field| field.strip_prefix(b"worktree "))
            .map(|p| resolve(Path::new(&*String::from_utf8_lossy(p))))
            .collect(),
    )
}

/// A path made absolute with its links resolved as far as it exists, as Python's
/// `Path.resolve()` does.
fn resolve(p: &Path) -> PathBuf {
    if let Ok(c) = std::fs::canonicalize(p) {
        return c;
    }
    let abs = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    match (abs.parent(), abs.file_name()) {
        (Some(parent), Some(name)) if parent != abs => resolve(parent).join(name),
        _ => abs,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(trusted: &[&str]) -> HermesConfig {
        HermesConfig {
            trusted_project_dirs: trusted.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn a_trusted_repository_is_found_from_any_folder_inside_it() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join(".agents/skills")).unwrap();
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        let home = t.path().join("hermes");
        let repo_str = repo.to_str().unwrap();
        let Standing::Trusted(p) = standing(&repo.join("src/deep"), &home, &config(&[repo_str]))
        else {
            panic!("not trusted");
        };
        assert_eq!(p.root, resolve(&repo));
        assert_eq!(p.dirs, [resolve(&repo.join(".agents/skills"))]);
        assert!(matches!(
            standing(&repo, &home, &config(&[])),
            Standing::Untrusted(_)
        ));
        let off = HermesConfig {
            no_project_discovery: true,
            ..config(&[repo_str])
        };
        assert_eq!(standing(&repo, &home, &off), Standing::None);
        assert_eq!(
            standing(t.path(), &home, &config(&[repo_str])),
            Standing::None
        );
    }

    #[test]
    fn the_home_skills_folder_inside_a_checkout_is_not_a_project_folder() {
        let t = tempfile::tempdir().unwrap();
        let repo = t.path();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join(".hermes/skills")).unwrap();
        let home = repo.join(".hermes");
        let trusted = config(&[repo.to_str().unwrap()]);
        assert_eq!(standing(repo, &home, &trusted), Standing::None);
    }

    #[test]
    fn resolve_keeps_a_missing_tail() {
        let t = tempfile::tempdir().unwrap();
        let got = resolve(&t.path().join("missing/x"));
        assert_eq!(got, resolve(t.path()).join("missing/x"));
    }
}
