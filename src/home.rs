//! Hermes homes and profiles: which directories hold whose skills.
//!
//! The root home (`~/.hermes`, or `HERMES_HOME`) is the profile `default`; each
//! `<root>/profiles/<name>/` is a complete home of its own. When `HERMES_HOME` itself
//! points at `…/profiles/<name>`, the root is its grandparent.

use std::path::{Path, PathBuf};

/// The name of the root home's profile.
pub const DEFAULT_PROFILE: &str = "default";

/// Whether `name` is a valid Hermes profile name: `^[a-z0-9][a-z0-9_-]{0,63}$`.
pub fn is_valid_profile_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
        && b.iter()
            .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_' || c == b'-')
}

/// A Hermes root home and the profiles in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root {
    /// The root directory.
    pub path: PathBuf,
    /// The profile `HERMES_HOME` pointed at, when it pointed inside `profiles/`.
    pub selected: Option<String>,
}

/// One profile: a name and its home directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// The profile name (`default` for the root home).
    pub name: String,
    /// The profile's home directory (holding `config.yaml`, `skills/`, `plugins/`).
    pub home: PathBuf,
    /// The root home it belongs to (the index records it, to refuse another home).
    pub root: PathBuf,
    /// For another agent's skills (not a Hermes profile), that agent's folders: they are
    /// the profile's roots, and no `config.yaml` is read.
    pub agent: Option<crate::agent::AgentDirs>,
    /// For a Hermes session inside a trusted project, that project: its skill folders come
    /// before the profile's own roots (`crate::project`).
    pub project: Option<crate::project::Project>,
}

impl Profile {
    /// This profile as a session inside `project` sees it: a profile of its own,
    /// `<name>@<root>`.
    pub fn in_project(self, project: crate::project::Project) -> Profile {
        Profile {
            name: crate::project::profile_name(&self.name, &project.root),
            project: Some(project),
            ..self
        }
    }

    /// This profile as a Hermes `version` session whose working directory is `cwd` sees it:
    /// inside a trusted project (0.21 on), the project's profile `<name>@<root>`; else itself.
    /// The second value is a project with skills that the profile does not trust, for a
    /// notice (Hermes names it too).
    pub fn for_session(
        self,
        cwd: &Path,
        version: crate::version::HermesVersion,
    ) -> (Profile, Option<crate::project::Project>) {
        use crate::project::Standing;
        if version < crate::version::HermesVersion::V0_21 || self.agent.is_some() {
            return (self, None);
        }
        let config = crate::config::HermesConfig::load(&self.home, version).unwrap_or_default();
        match crate::project::standing(cwd, &self.home, &config) {
            Standing::Trusted(project) => (self.in_project(project), None),
            Standing::Untrusted(project) => (self, Some(project)),
            Standing::None => (self, None),
        }
    }

    /// The project skill folders to read with `config`, winner first: checked again at each
    /// use, so a project whose trust was withdrawn adds nothing.
    pub fn project_dirs(&self, config: &crate::config::HermesConfig) -> Vec<PathBuf> {
        crate::project::current_dirs(self.project.as_ref(), &self.home, config)
    }

    /// The profile of another agent's skill folders, indexed in the store of `root`.
    pub fn of_agent(root: &Root, dirs: crate::agent::AgentDirs, user_home: PathBuf) -> Profile {
        Profile {
            name: dirs.profile_name(),
            home: user_home,
            root: root.path.clone(),
            agent: Some(dirs),
            project: None,
        }
    }
}

/// A Hermes home that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum HomeError {
    /// Nothing at that path.
    #[error("no Hermes home at {0}: the folder does not exist (give --home, or set HERMES_HOME)")]
    Missing(PathBuf),
    /// A folder, but not a Hermes home.
    #[error("{0} is not a Hermes home: it has neither a skills/ folder nor a config.yaml")]
    NotAHome(PathBuf),
    /// The path could not be resolved.
    #[error("cannot use the Hermes home {path}: {source}")]
    Io {
        /// The home.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

/// A profile that does not exist or cannot exist.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The name breaks Hermes' profile name rule.
    #[error("invalid profile name {0:?}: profile names match ^[a-z0-9][a-z0-9_-]{{0,63}}$")]
    InvalidName(String),
    /// No such profile in the home.
    #[error("no profile {name:?} in {root} (profiles: {})", known.join(", "))]
    Unknown {
        /// The profile name.
        name: String,
        /// The root home.
        root: PathBuf,
        /// The profiles that exist.
        known: Vec<String>,
    },
}

impl Root {
    /// The root for an explicit `--home`, or else `HERMES_HOME`, or else `~/.hermes`,
    /// resolved as [`Root::open`] does.
    pub fn locate(explicit: Option<&Path>) -> Result<Root, HomeError> {
        let home = explicit.map(Path::to_path_buf).or_else(|| {
            std::env::var_os("HERMES_HOME")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        });
        let home = home.unwrap_or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_default()
                .join(".hermes")
        });
        Self::open(&home)
    }

    /// The root of the existing Hermes home `home`, in canonical form (absolute, links
    /// resolved), so that `~/.hermes` and `.hermes` from `~` are one home with one set of
    /// stored paths. Refuses a path that does not exist or is not a Hermes home (neither
    /// `skills/` nor `config.yaml`); nothing is created.
    pub fn open(home: &Path) -> Result<Root, HomeError> {
        let canonical = std::fs::canonicalize(home).map_err(|source| {
            if source.kind() == std::io::ErrorKind::NotFound {
                HomeError::Missing(home.to_owned())
            } else {
                HomeError::Io {
                    path: home.to_owned(),
                    source,
                }
            }
        })?;
        if !canonical.join("skills").is_dir() && !canonical.join("config.yaml").is_file() {
            return Err(HomeError::NotAHome(canonical));
        }
        Ok(Self::from_home(&canonical))
    }

    /// The root that `home` belongs to: itself, or its grandparent for `…/profiles/<name>`.
    /// Takes the path as given; [`Root::open`] resolves it first.
    pub fn from_home(home: &Path) -> Root {
        let parent = home.parent();
        let in_profiles = parent
            .and_then(Path::file_name)
            .is_some_and(|n| n == "profiles");
        let name = home.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if in_profiles && is_valid_profile_name(name) {
            if let Some(root) = parent.and_then(Path::parent) {
                return Root {
                    path: root.to_path_buf(),
                    selected: Some(name.to_owned()),
                };
            }
        }
        Root {
            path: home.to_path_buf(),
            selected: None,
        }
    }

    /// The profile the located home itself is: `<name>` for `…/profiles/<name>`, else
    /// `default`. Never `<root>/active_profile`: by the time Hermes runs (and loads a plugin)
    /// its launcher has already turned the sticky profile into `HERMES_HOME`.
    pub fn home_profile_name(&self) -> &str {
        self.selected.as_deref().unwrap_or(DEFAULT_PROFILE)
    }

    /// The active profile: the one `HERMES_HOME` selected, else `<root>/active_profile`,
    /// else `default`.
    pub fn active_profile_name(&self) -> String {
        if let Some(s) = &self.selected {
            return s.clone();
        }
        std::fs::read_to_string(self.path.join("active_profile"))
            .ok()
            .map(|s| s.trim().to_owned())
            .filter(|s| is_valid_profile_name(s) && self.profile_home(s).is_dir())
            .unwrap_or_else(|| DEFAULT_PROFILE.to_owned())
    }

    fn profile_home(&self, name: &str) -> PathBuf {
        if name == DEFAULT_PROFILE {
            self.path.clone()
        } else {
            self.path.join("profiles").join(name)
        }
    }

    /// The named profile.
    pub fn profile(&self, name: &str) -> Result<Profile, ProfileError> {
        if !is_valid_profile_name(name) {
            return Err(ProfileError::InvalidName(name.to_owned()));
        }
        let home = self.profile_home(name);
        if name != DEFAULT_PROFILE && !home.is_dir() {
            return Err(ProfileError::Unknown {
                name: name.to_owned(),
                root: self.path.clone(),
                known: self.profiles().into_iter().map(|p| p.name).collect(),
            });
        }
        Ok(Profile {
            name: name.to_owned(),
            home,
            root: self.path.clone(),
            agent: None,
            project: None,
        })
    }

    /// Every profile: `default` first, then `profiles/*` in name order.
    pub fn profiles(&self) -> Vec<Profile> {
        let mut out = vec![Profile {
            name: DEFAULT_PROFILE.to_owned(),
            home: self.path.clone(),
            root: self.path.clone(),
            agent: None,
            project: None,
        }];
        let mut names: Vec<String> = std::fs::read_dir(self.path.join("profiles"))
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .filter(|e| e.path().is_dir())
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| is_valid_profile_name(n) && n != DEFAULT_PROFILE)
            .collect();
        names.sort();
        out.extend(names.into_iter().map(|name| Profile {
            home: self.profile_home(&name),
            root: self.path.clone(),
            agent: None,
            project: None,
            name,
        }));
        out
    }

    /// Where the index lives unless `--db` says otherwise.
    pub fn default_db_path(&self) -> PathBuf {
        self.path.join("skillidx.redb")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_names_follow_hermes() {
        assert!(is_valid_profile_name("work"));
        assert!(is_valid_profile_name("a1_b-c"));
        assert!(!is_valid_profile_name("Work"));
        assert!(!is_valid_profile_name("-x"));
        assert!(!is_valid_profile_name(""));
        assert!(!is_valid_profile_name(&"a".repeat(65)));
    }

    #[test]
    fn a_profile_home_points_back_to_its_root() {
        let r = Root::from_home(Path::new("/h/.hermes/profiles/work"));
        assert_eq!(r.path, Path::new("/h/.hermes"));
        assert_eq!(r.selected.as_deref(), Some("work"));
        let r = Root::from_home(Path::new("/h/.hermes"));
        assert_eq!(r.selected, None);
    }
}
