//! The Hermes release whose offer rules a sync follows.
//!
//! Hermes changed which skills it lists between releases (docs/offer-rules.md, "By
//! version"). A sync reads a home the way the Hermes that runs on it would: the release it is
//! told (the plugin says the one it runs in; the CLI takes `--hermes-version`), else the one
//! installed on `PATH`, else the one the profile's index already follows, else the newest
//! supported ([`HermesVersion::resolve`]). The release is part of the reading rules a
//! profile's documents were made by: a sync under another one reads every file again.

use std::path::{Path, PathBuf};

/// A supported Hermes release line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HermesVersion {
    /// 0.19.x: the rules the differential tests check against hermes-agent 0.19.0.
    V0_19,
    /// 0.20.x: a `disabled` list written as a string is parsed; `name: ""` lists the folder.
    V0_20,
    /// 0.21.x: also `hermes-agent` is never disabled (`ESSENTIAL_SKILLS`) and
    /// `skills.create_dir` is a skill root.
    V0_21,
}

impl HermesVersion {
    /// The newest supported release, assumed when none is known.
    pub const NEWEST: HermesVersion = HermesVersion::V0_21;

    /// The release line of a version string (`0.21.3`, `v0.20.1.2`, `0.19.0rc1`): its major
    /// and minor numbers. A release before 0.19 reads as 0.19; one after the newest as the
    /// newest. `None` when it is not a version.
    pub fn parse(text: &str) -> Option<HermesVersion> {
        let text = text.trim().trim_start_matches('v');
        if !text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b))
        {
            return None;
        }
        let (major, rest) = text.split_once('.')?;
        let major: u32 = major.parse().ok()?;
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let minor: u32 = rest[..digits].parse().ok()?;
        // After the minor number: nothing, another component, or a PEP 440 pre-, post- or
        // dev-release or local part (`0.19.0rc1`, `0.21.dev3`, `0.21+local`).
        let after = &rest[digits..];
        let tagged = ["a", "b", "c", "rc", "post", "dev"].iter().any(|tag| {
            after
                .strip_prefix(tag)
                .is_some_and(|n| n.is_empty() || n.starts_with(|c: char| c.is_ascii_digit()))
        });
        if !(after.is_empty() || after.starts_with(['.', '+', '-']) || tagged) {
            return None;
        }
        Some(match (major, minor) {
            (0, ..=19) => HermesVersion::V0_19,
            (0, 20) => HermesVersion::V0_20,
            _ => HermesVersion::NEWEST,
        })
    }

    /// Its number in the stored reading rules (`19`, `20`, `21`).
    pub fn code(self) -> u64 {
        match self {
            HermesVersion::V0_19 => 19,
            HermesVersion::V0_20 => 20,
            HermesVersion::V0_21 => 21,
        }
    }

    /// The release of a [`crate::sync::reading_rules`] value (`None` for rules stored
    /// before skillidx told releases apart).
    pub fn of_reading_rules(rules: u64) -> Option<HermesVersion> {
        match rules % 100 {
            _ if rules < 100 => None,
            19 => Some(HermesVersion::V0_19),
            20 => Some(HermesVersion::V0_20),
            21 => Some(HermesVersion::V0_21),
            _ => None,
        }
    }

    /// The version the Hermes install found from `PATH` says it is
    /// ([`installed_hermes_version`]).
    pub fn installed() -> Option<HermesVersion> {
        installed_hermes_version()
            .as_deref()
            .and_then(HermesVersion::parse)
    }

    /// The release a sync follows: the one it was told, else the installed one, else the
    /// one the profile's index already follows (`stored`: a cron job whose `PATH` lacks
    /// Hermes must not flip the rules the plugin's syncs follow, each flip reading every
    /// file again), else the newest.
    pub fn resolve(told: Option<HermesVersion>, stored: Option<HermesVersion>) -> HermesVersion {
        choose(
            told,
            told.is_none().then(HermesVersion::installed).flatten(),
            stored,
        )
    }
}

impl std::fmt::Display for HermesVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "0.{}", self.code())
    }
}

/// [`HermesVersion::resolve`] with the installed release given.
fn choose(
    told: Option<HermesVersion>,
    installed: Option<HermesVersion>,
    stored: Option<HermesVersion>,
) -> HermesVersion {
    told.or(installed)
        .or(stored)
        .unwrap_or(HermesVersion::NEWEST)
}

/// The version of the `hermes-agent` package beside the `hermes` command on `PATH`: the
/// `hermes_agent-<version>.dist-info` folder of the Python environment it was installed
/// into (`<env>/bin/hermes`, `<env>/lib/python3.X/site-packages`). Read from the file
/// system: no Python is started.
pub fn installed_hermes_version() -> Option<String> {
    let path = std::env::var_os("PATH")?;
    let bin = std::env::split_paths(&path)
        .map(|d| d.join("hermes"))
        .find(|p| p.is_file())?;
    let env = std::fs::canonicalize(&bin)
        .ok()?
        .parent()?
        .parent()?
        .to_owned();
    dist_info_version(&env)
}

/// The `hermes-agent` version installed in the Python environment at `env`.
fn dist_info_version(env: &Path) -> Option<String> {
    let lib: Vec<PathBuf> = std::fs::read_dir(env.join("lib"))
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path().join("site-packages"))
        .filter(|p| p.is_dir())
        .collect();
    lib.iter().find_map(|site| {
        std::fs::read_dir(site)
            .ok()?
            .filter_map(Result::ok)
            .filter_map(|e| e.file_name().into_string().ok())
            .find_map(|n| {
                n.strip_prefix("hermes_agent-")?
                    .strip_suffix(".dist-info")
                    .map(str::to_owned)
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_as_their_release_line() {
        use HermesVersion::*;
        for (text, want) in [
            ("0.19.0", Some(V0_19)),
            ("0.18.2", Some(V0_19)),
            ("v0.20.1.2", Some(V0_20)),
            ("0.21.3", Some(V0_21)),
            ("0.22.0", Some(V0_21)),
            ("1.0", Some(V0_21)),
            ("0.21rc1", Some(V0_21)),
            ("0.20.dev3", Some(V0_20)),
            ("0.21+local", Some(V0_21)),
            ("latest", None),
            ("", None),
            ("0.21junk", None),
            ("0.21.3; rm -rf /", None),
            ("0", None),
            ("0.x", None),
        ] {
            assert_eq!(HermesVersion::parse(text), want, "{text}");
        }
        assert_eq!(V0_20.to_string(), "0.20");
    }

    #[test]
    fn a_sync_follows_what_it_is_told_then_the_install_then_the_index() {
        use HermesVersion::*;
        assert_eq!(choose(Some(V0_20), Some(V0_19), Some(V0_21)), V0_20);
        assert_eq!(choose(None, Some(V0_19), Some(V0_21)), V0_19);
        // A cron job without Hermes on PATH keeps what the plugin's syncs follow.
        assert_eq!(choose(None, None, Some(V0_19)), V0_19);
        assert_eq!(choose(None, None, None), HermesVersion::NEWEST);
        assert_eq!(
            HermesVersion::of_reading_rules(crate::sync::reading_rules(V0_20)),
            Some(V0_20)
        );
        assert_eq!(HermesVersion::of_reading_rules(3), None);
    }

    #[test]
    fn the_installed_version_is_read_from_the_environment_of_the_command() {
        let env = tempfile::tempdir().unwrap();
        let site = env.path().join("lib/python3.11/site-packages");
        std::fs::create_dir_all(site.join("hermes_agent-0.20.1.dist-info")).unwrap();
        std::fs::create_dir_all(site.join("other-1.0.dist-info")).unwrap();
        assert_eq!(dist_info_version(env.path()).as_deref(), Some("0.20.1"));
        assert_eq!(dist_info_version(&env.path().join("missing")), None);
    }
}
