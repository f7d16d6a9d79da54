//! Installing the plugin into a profile home, and the edits of its `config.yaml`.

use super::{PLUGIN_FILES, PLUGIN_NAME};
use crate::home::{Profile, ProfileError, Root};
use crate::replace::replace_file;
use serde_yaml::Value;
use std::path::{Path, PathBuf};

/// What went wrong installing or removing the plugin.
#[derive(Debug, thiserror::Error)]
pub enum HermesError {
    /// The profile.
    #[error(transparent)]
    Profile(#[from] ProfileError),
    /// The Hermes home.
    #[error(transparent)]
    Home(#[from] crate::home::HomeError),
    /// A file could not be read or written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The index could not be read.
    #[error(transparent)]
    Index(Box<crate::Error>),
    /// The plugin folder, or a file in it, is a symbolic link.
    #[error("{path} leads to {target}: skillidx writes the plugin only into a folder of its own under the profile home, never through a link (which could lead into another user's files); remove the link, or install the plugin there by hand")]
    Linked {
        /// The link.
        path: PathBuf,
        /// Where it leads.
        target: PathBuf,
    },
    /// `config.yaml` has a shape this tool does not edit by hand.
    #[error(
        "cannot edit {path} safely ({detail}); run `hermes plugins {verb} {PLUGIN_NAME}` instead"
    )]
    Config {
        /// The file.
        path: PathBuf,
        /// Why.
        detail: String,
        /// `enable` or `disable`.
        verb: &'static str,
    },
}

/// What [`install`] or [`uninstall`] did.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct InstallReport {
    /// The profile.
    pub profile: String,
    /// The plugin folder.
    pub plugin_dir: PathBuf,
    /// The profile's config.yaml.
    pub config: PathBuf,
    /// Whether config.yaml was changed.
    pub config_changed: bool,
    /// Whether plugin files were written (install) or removed (uninstall).
    pub files_changed: bool,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> HermesError + '_ {
    move |source| HermesError::Io {
        path: path.to_owned(),
        source,
    }
}

/// The profile `name` (or the active one) of the root home `home` (or the default one).
pub fn resolve_profile(home: Option<&Path>, name: Option<&str>) -> Result<Profile, HermesError> {
    let root = Root::locate(home)?;
    let name = name.map_or_else(|| root.active_profile_name(), str::to_owned);
    Ok(root.profile(&name)?)
}

/// The file in the plugin folder that remembers what `install` did to config.yaml, so that
/// `uninstall` can put the file back byte for byte.
pub const INSTALL_RECORD: &str = "install-record.json";

/// What [`install`] changed in config.yaml.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct InstallRecord {
    /// config.yaml before the install; `None` when there was no such file.
    config_before: Option<String>,
    /// blake3 of config.yaml as the install left it.
    config_after_blake3: String,
}

fn read_config(config: &Path) -> Result<Option<String>, HermesError> {
    match std::fs::read_to_string(config) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(config)(e)),
    }
}

/// Places the plugin into `<profile home>/plugins/skill-retrieval/` and adds it to
/// `plugins.enabled` in the profile's config.yaml, keeping the rest of the file (comments
/// included) as it was. Every file is written whole or not at all ([`replace_file`]),
/// config.yaml keeps its mode and owner, and what it held before is recorded for
/// [`uninstall`].
pub fn install(profile: &Profile) -> Result<InstallReport, HermesError> {
    let _user = AsOwner::of(&profile.root)?;
    let dir = profile.home.join("plugins").join(PLUGIN_NAME);
    // Checked before anything is made: a linked `plugins/` must not get a folder either.
    if let Some(plugins) = dir.parent().filter(|p| p.exists()) {
        own_folder(&profile.home, plugins, &["plugins"])?;
    }
    std::fs::create_dir_all(&dir).map_err(io(&dir))?;
    own_folder(&profile.home, &dir, &["plugins", PLUGIN_NAME])?;
    let config = profile.home.join("config.yaml");
    same_owner(&profile.home, &config)?;
    for name in PLUGIN_FILES
        .map(|(name, _)| name)
        .into_iter()
        .chain([INSTALL_RECORD])
    {
        let path = dir.join(name);
        if let Ok(target) = std::fs::read_link(&path) {
            return Err(HermesError::Linked { path, target });
        }
    }
    let mut files_changed = false;
    for (name, text) in PLUGIN_FILES {
        let path = dir.join(name);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text) {
            replace_file(&path, text.as_bytes()).map_err(io(&path))?;
            files_changed = true;
        }
    }
    let before = read_config(&config)?;
    let edited =
        enable_in_config(before.as_deref().unwrap_or(""), PLUGIN_NAME).map_err(|detail| {
            HermesError::Config {
                path: config.clone(),
                detail,
                verb: "enable",
            }
        })?;
    let config_changed = edited.is_some();
    if let Some(new) = edited {
        replace_file(&config, new.as_bytes()).map_err(io(&config))?;
        // After the config: a crash in between leaves no record, and uninstall then
        // removes the entry by editing the text.
        let record = InstallRecord {
            config_before: before,
            config_after_blake3: blake3::hash(new.as_bytes()).to_hex().to_string(),
        };
        let path = dir.join(INSTALL_RECORD);
        let json = serde_json::to_vec_pretty(&record).unwrap_or_default();
        replace_file(&path, &json).map_err(io(&path))?;
    }
    Ok(InstallReport {
        profile: profile.name.clone(),
        plugin_dir: dir,
        config,
        config_changed,
        files_changed,
    })
}

/// While alive, the process acts as the owner of a home it does not own: root installing
/// into a user's home writes with that user's rights (effective user and group, and no
/// supplementary groups), so that whatever a link in the home leads to, or whatever the user
/// swaps in while the install runs, nothing is written that the user could not write
/// themselves. The checks above are for the plain case; this holds in every interleaving.
struct AsOwner {
    #[cfg(unix)]
    restore: Option<(Vec<libc::gid_t>, libc::gid_t)>,
}

impl AsOwner {
    /// Acts as the owner of the root home `root`: the folder itself, or the link itself when
    /// it is one (never what a link leads to, which a user can point at a folder of root's:
    /// a profile linked to `/root/…` is then written with the user's rights, and refused).
    #[cfg(unix)]
    fn of(root: &Path) -> Result<AsOwner, HermesError> {
        use std::os::unix::fs::MetadataExt;
        let home = root;
        let meta = std::fs::symlink_metadata(root).map_err(io(root))?;
        // SAFETY: geteuid has no preconditions.
        let euid = unsafe { libc::geteuid() };
        if euid != 0 || meta.uid() == 0 {
            return Ok(AsOwner { restore: None });
        }
        let failed = |what: &str| HermesError::Io {
            path: home.to_owned(),
            source: std::io::Error::other(format!(
                "cannot act as the home's owner ({what}): {}",
                std::io::Error::last_os_error()
            )),
        };
        // SAFETY: plain system calls on values owned here; the groups buffer is sized by
        // the first call.
        unsafe {
            let n = libc::getgroups(0, std::ptr::null_mut());
            let mut groups = vec![0; n.max(0) as usize];
            if libc::getgroups(n, groups.as_mut_ptr()) < 0 {
                return Err(failed("getgroups"));
            }
            let egid = libc::getegid();
            let gid = meta.gid();
            if libc::setgroups(1, &gid) != 0 || libc::setegid(gid) != 0 {
                return Err(failed("setegid"));
            }
            if libc::seteuid(meta.uid()) != 0 {
                libc::setegid(egid);
                libc::setgroups(groups.len(), groups.as_ptr());
                return Err(failed("seteuid"));
            }
            Ok(AsOwner {
                restore: Some((groups, egid)),
            })
        }
    }

    #[cfg(not(unix))]
    fn of(_: &Path) -> Result<AsOwner, HermesError> {
        Ok(AsOwner {})
    }
}

#[cfg(unix)]
impl Drop for AsOwner {
    fn drop(&mut self) {
        if let Some((groups, egid)) = self.restore.take() {
            // SAFETY: back to root, which the process was when it made this guard.
            unsafe {
                libc::seteuid(0);
                libc::setegid(egid);
                libc::setgroups(groups.len(), groups.as_ptr());
            }
        }
    }
}

/// Refuses a folder that is not where it seems: `dir`, `home` joined with `parts`, must be
/// that folder of the home, not reached through a link (`ln -s /elsewhere
/// plugins/skill-retrieval`), so that an install, perhaps run by root for another user's
/// home, never writes through one.
fn own_folder(home: &Path, dir: &Path, parts: &[&str]) -> Result<(), HermesError> {
    let real = std::fs::canonicalize(dir).map_err(io(dir))?;
    let expected = parts
        .iter()
        .fold(std::fs::canonicalize(home).map_err(io(home))?, |p, part| {
            p.join(part)
        });
    if real == expected {
        Ok(())
    } else {
        Err(HermesError::Linked {
            path: dir.to_owned(),
            target: real,
        })
    }
}

/// Refuses a `config.yaml` that is a link to a file of another owner than the profile home's
/// (a dotfiles link of the home's own user is followed, as before; a link to a file another
/// user owns, `/etc/…` for root, is not written through).
#[cfg(unix)]
fn same_owner(home: &Path, config: &Path) -> Result<(), HermesError> {
    use std::os::unix::fs::MetadataExt;
    let Ok(target) = std::fs::read_link(config) else {
        return Ok(());
    };
    let owner = |p: &Path| std::fs::metadata(p).map(|m| m.uid());
    match (owner(home), owner(config)) {
        (Ok(a), Ok(b)) if a != b => Err(HermesError::Linked {
            path: config.to_owned(),
            target,
        }),
        _ => Ok(()),
    }
}

#[cfg(not(unix))]
fn same_owner(_: &Path, _: &Path) -> Result<(), HermesError> {
    Ok(())
}

/// Removes the plugin from `plugins.enabled` and deletes its folder. When config.yaml is
/// still exactly as [`install`] left it, it is put back byte for byte as it was before the
/// install (removed, if install created it); otherwise only the `plugins.enabled` entry is
/// removed from the text.
pub fn uninstall(profile: &Profile) -> Result<InstallReport, HermesError> {
    let _user = AsOwner::of(&profile.root)?;
    let config = profile.home.join("config.yaml");
    let dir = profile.home.join("plugins").join(PLUGIN_NAME);
    let record: Option<InstallRecord> = std::fs::read(dir.join(INSTALL_RECORD))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    let mut config_changed = false;
    let current = read_config(&config)?;
    let restore = match (&record, &current) {
        (Some(r), Some(now)) => (blake3::hash(now.as_bytes()).to_hex().as_str()
            == r.config_after_blake3)
            .then_some(&r.config_before),
        _ => None,
    };
    match (restore, current) {
        (Some(Some(before)), _) => {
            replace_file(&config, before.as_bytes()).map_err(io(&config))?;
            config_changed = true;
        }
        (Some(None), _) => {
            std::fs::remove_file(&config).map_err(io(&config))?;
            config_changed = true;
        }
        (None, Some(text)) => {
            let edited =
                disable_in_config(&text, PLUGIN_NAME).map_err(|detail| HermesError::Config {
                    path: config.clone(),
                    detail,
                    verb: "disable",
                })?;
            if let Some(new) = edited {
                replace_file(&config, new.as_bytes()).map_err(io(&config))?;
                config_changed = true;
            }
        }
        (None, None) => {}
    }
    // A linked folder loses its link only: what it leads to is not ours to delete.
    let files_changed = std::fs::symlink_metadata(&dir).is_ok();
    if files_changed {
        match std::fs::read_link(&dir) {
            Ok(_) => std::fs::remove_file(&dir).map_err(io(&dir))?,
            Err(_) => std::fs::remove_dir_all(&dir).map_err(io(&dir))?,
        }
    }
    Ok(InstallReport {
        profile: profile.name.clone(),
        plugin_dir: dir,
        config,
        config_changed,
        files_changed,
    })
}

/// The `plugins.enabled` names of a parsed config, if it is a list.
pub(crate) fn enabled_names(v: &Value) -> Option<Vec<String>> {
    let list = v.get("plugins")?.get("enabled")?.as_sequence()?;
    Some(
        list.iter()
            .map(|x| match x {
                Value::String(s) => s.clone(),
                other => serde_yaml::to_string(other)
                    .unwrap_or_default()
                    .trim()
                    .to_owned(),
            })
            .collect(),
    )
}

/// The parsed config with `plugins.enabled` taken out, for comparing the rest.
fn without_enabled(mut v: Value) -> Value {
    if let Some(p) = v.get_mut("plugins").and_then(Value::as_mapping_mut) {
        p.remove("enabled");
        if p.is_empty() {
            if let Some(m) = v.as_mapping_mut() {
                m.remove("plugins");
            }
        }
    }
    v
}

fn parse(text: &str) -> Result<Value, String> {
    if text.trim().is_empty() {
        return Ok(Value::Null);
    }
    serde_yaml::from_str(text).map_err(|e| format!("not valid YAML: {e}"))
}

/// Checks that `new` differs from `old` only in `plugins.enabled`, and that `name` is (or
/// is not) in it.
fn verify(old: &str, new: &str, name: &str, present: bool) -> Result<(), String> {
    let (o, n) = (parse(old)?, parse(new)?);
    let names = enabled_names(&n).unwrap_or_default();
    if names.iter().any(|x| x == name) != present {
        return Err("the edit did not take effect".into());
    }
    let strip = |v: Value| match v {
        Value::Null => Value::Mapping(Default::default()),
        v => without_enabled(v),
    };
    if strip(o) != strip(n) {
        return Err("the edit would change other settings".into());
    }
    Ok(())
}

/// A top-level key line: `key:` at column 0.
fn top_key(line: &str) -> Option<&str> {
    if line.starts_with([' ', '\t', '#', '-']) || line.trim().is_empty() {
        return None;
    }
    line.split_once(':').map(|(k, _)| k.trim())
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn is_blank_or_comment(line: &str) -> bool {
    let t = line.trim_start();
    t.is_empty() || t.starts_with('#')
}

/// Splits `value  # comment` into the value and the comment part (with its spaces).
fn split_comment(s: &str) -> (&str, &str) {
    match s.find(" #") {
        Some(i) => {
            let value = s[..i].trim_end();
            (value, &s[value.len()..])
        }
        None => (s.trim_end(), ""),
    }
}

fn unquote(s: &str) -> &str {
    let s = s.trim();
    s.strip_prefix('"')
        .and_then(|r| r.strip_suffix('"'))
        .or_else(|| s.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')))
        .unwrap_or(s)
}

/// Where `plugins.enabled` sits in the text.
enum Enabled {
    /// No top-level `plugins:` key.
    NoPlugins,
    /// `plugins:` at this line, without `enabled:`; children indented by this much.
    MissingKey { plugins_line: usize, child: usize },
    /// `enabled:` at this line with a one-line flow list `[…]` or nothing after it, and
    /// its block items `- x` on these lines.
    At {
        line: usize,
        items: Vec<usize>,
        item_indent: Option<usize>,
    },
}

fn locate_enabled(lines: &[&str]) -> Result<Enabled, String> {
    let Some(p) = lines.iter().position(|l| top_key(l) == Some("plugins")) else {
        return Ok(Enabled::NoPlugins);
    };
    let (after, _) = split_comment(lines[p].split_once(':').map_or("", |(_, r)| r).trim());
    if !after.is_empty() {
        return Err(format!("`plugins:` is written inline ({after})"));
    }
    let end = (p + 1..lines.len())
        .find(|&i| !is_blank_or_comment(lines[i]) && indent(lines[i]) == 0)
        .unwrap_or(lines.len());
    let child = (p + 1..end)
        .find(|&i| !is_blank_or_comment(lines[i]))
        .map_or(2, |i| indent(lines[i]));
    if child == 0 {
        return Err("`plugins:` has no indented children".into());
    }
    let Some(e) = (p + 1..end).find(|&i| {
        indent(lines[i]) == child
            && lines[i].trim_start().split_once(':').map(|(k, _)| k.trim()) == Some("enabled")
    }) else {
        return Ok(Enabled::MissingKey {
            plugins_line: p,
            child,
        });
    };
    let mut items = Vec::new();
    let mut item_indent = None;
    for (i, line) in lines.iter().enumerate().take(end).skip(e + 1) {
        if is_blank_or_comment(line) {
            continue;
        }
        let ind = indent(line);
        let t = line.trim_start();
        if ind >= child && (t.starts_with("- ") || t == "-") {
            items.push(i);
            item_indent.get_or_insert(ind);
        } else {
            break;
        }
    }
    Ok(Enabled::At {
        line: e,
        items,
        item_indent,
    })
}

/// `text` with `name` added to `plugins.enabled`; `None` if it is already there. `Err`
/// when the file's shape is not one this edits by hand (the caller then changes nothing).
pub fn enable_in_config(text: &str, name: &str) -> Result<Option<String>, String> {
    let parsed = parse(text)?;
    if enabled_names(&parsed).is_some_and(|n| n.iter().any(|x| x == name)) {
        return Ok(None);
    }
    let nl = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let refs: Vec<&str> = text.lines().collect();
    match locate_enabled(&refs)? {
        Enabled::NoPlugins => {
            while lines.last().is_some_and(|l| l.trim().is_empty()) {
                lines.pop();
            }
            if !lines.is_empty() {
                lines.push(String::new());
            }
            lines.push("plugins:".into());
            lines.push("  enabled:".into());
            lines.push(format!("    - {name}"));
        }
        Enabled::MissingKey {
            plugins_line,
            child,
        } => {
            let pad = " ".repeat(child);
            lines.insert(plugins_line + 1, format!("{pad}enabled:"));
            lines.insert(plugins_line + 2, format!("{pad}  - {name}"));
        }
        Enabled::At {
            line,
            items,
            item_indent,
        } => {
            if let (Some(&last), Some(ind)) = (items.last(), item_indent) {
                lines.insert(last + 1, format!("{}- {name}", " ".repeat(ind)));
            } else {
                let l = &refs[line];
                let (key, rest) = l.split_once(':').unwrap_or((l, ""));
                let (value, comment) = split_comment(rest.trim_start());
                let new_value = if value.is_empty() || value == "null" || value == "~" {
                    format!("[{name}]")
                } else if let Some(inner) =
                    value.strip_prefix('[').and_then(|v| v.strip_suffix(']'))
                {
                    if inner.trim().is_empty() {
                        format!("[{name}]")
                    } else {
                        format!("[{}, {name}]", inner.trim_end())
                    }
                } else {
                    return Err(format!("`plugins.enabled` is not a list ({value})"));
                };
                lines[line] = format!("{key}: {new_value}{comment}");
            }
        }
    }
    let mut out = lines.join(nl);
    out.push_str(nl);
    verify(text, &out, name, true)?;
    Ok(Some(out))
}

/// `text` with `name` removed from `plugins.enabled`; `None` if it is not there.
pub fn disable_in_config(text: &str, name: &str) -> Result<Option<String>, String> {
    let parsed = parse(text)?;
    if !enabled_names(&parsed).is_some_and(|n| n.iter().any(|x| x == name)) {
        return Ok(None);
    }
    let nl = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let refs: Vec<&str> = text.lines().collect();
    let Enabled::At { line, items, .. } = locate_enabled(&refs)? else {
        return Err("`plugins.enabled` not found where expected".into());
    };
    let item_of = |i: usize| {
        let (v, _) = split_comment(refs[i].trim_start().trim_start_matches('-').trim_start());
        unquote(v) == name
    };
    if let Some(&i) = items.iter().find(|&&i| item_of(i)) {
        lines.remove(i);
        if items.len() == 1 {
            // The list is now empty: say so explicitly rather than leave `enabled:` null.
            let l = &refs[line];
            let (key, rest) = l.split_once(':').unwrap_or((l, ""));
            let (_, comment) = split_comment(rest.trim_start());
            lines[line] = format!("{key}: []{comment}");
        }
    } else {
        let l = &refs[line];
        let (key, rest) = l.split_once(':').unwrap_or((l, ""));
        let (value, comment) = split_comment(rest.trim_start());
        let Some(inner) = value.strip_prefix('[').and_then(|v| v.strip_suffix(']')) else {
            return Err(format!("`plugins.enabled` is not a list ({value})"));
        };
        let kept: Vec<&str> = inner
            .split(',')
            .map(str::trim)
            .filter(|x| !x.is_empty() && unquote(x) != name)
            .collect();
        lines[line] = format!("{key}: [{}]{comment}", kept.join(", "));
    }
    let mut out = lines.join(nl);
    out.push_str(nl);
    verify(text, &out, name, false)?;
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMMENTED: &str = "# Hermes config\nmodel:\n  provider: custom  # local\n  default: stub\n\nplugins:\n  # user plugins are opt-in\n  enabled: []  # none yet\n  disabled: [x]\n\n# trailing comment\nskills:\n  disabled: [a]\n";

    #[test]
    fn the_plugin_requires_the_oldest_hermes_whose_rules_it_reproduces() {
        let yaml: serde_yaml::Value =
            serde_yaml::from_str(crate::hermes::PLUGIN_FILES[0].1).expect("plugin.yaml parses");
        let required = yaml["requires_hermes"].as_str().expect("requires_hermes");
        let oldest = required.strip_prefix(">=").expect("a lower bound");
        assert_eq!(
            crate::version::HermesVersion::parse(oldest),
            Some(crate::version::HermesVersion::V0_19)
        );
        assert_eq!(yaml["name"].as_str(), Some(PLUGIN_NAME));
    }

    #[test]
    fn enable_keeps_comments_and_other_content() {
        let out = enable_in_config(COMMENTED, PLUGIN_NAME)
            .expect("ok")
            .expect("changed");
        assert_eq!(
            out,
            COMMENTED.replace(
                "enabled: []  # none yet",
                "enabled: [skill-retrieval]  # none yet"
            )
        );
        assert_eq!(
            enable_in_config(&out, PLUGIN_NAME).expect("ok"),
            None,
            "idempotent"
        );
        let back = disable_in_config(&out, PLUGIN_NAME)
            .expect("ok")
            .expect("changed");
        assert_eq!(back, COMMENTED);
        assert_eq!(disable_in_config(&back, PLUGIN_NAME).expect("ok"), None);
    }

    #[test]
    fn enable_in_every_shape() {
        let cases = [
            ("", "plugins:\n  enabled:\n    - skill-retrieval\n"),
            (
                "model:\n  default: x\n",
                "model:\n  default: x\n\nplugins:\n  enabled:\n    - skill-retrieval\n",
            ),
            (
                "plugins:\n    disabled: []\n# c\n",
                "plugins:\n    enabled:\n      - skill-retrieval\n    disabled: []\n# c\n",
            ),
            (
                "plugins:\n  enabled:\n  - a  # first\n  - 'b'\nother: 1\n",
                "plugins:\n  enabled:\n  - a  # first\n  - 'b'\n  - skill-retrieval\nother: 1\n",
            ),
            (
                "plugins:\n  enabled:\n    - a\n\n    # gap\n    - b\n",
                "plugins:\n  enabled:\n    - a\n\n    # gap\n    - b\n    - skill-retrieval\n",
            ),
            (
                "plugins:\n  enabled: [a, \"b\"]\n",
                "plugins:\n  enabled: [a, \"b\", skill-retrieval]\n",
            ),
            (
                "plugins:\n  enabled:\n",
                "plugins:\n  enabled: [skill-retrieval]\n",
            ),
        ];
        for (input, want) in cases {
            let got = enable_in_config(input, PLUGIN_NAME)
                .expect("ok")
                .expect("changed");
            assert_eq!(got, want, "input {input:?}");
            let back = disable_in_config(&got, PLUGIN_NAME)
                .expect("ok")
                .expect("changed");
            assert!(
                !enabled_names(&parse(&back).expect("yaml"))
                    .unwrap_or_default()
                    .iter()
                    .any(|n| n == PLUGIN_NAME),
                "{back:?}"
            );
        }
    }

    #[test]
    fn odd_shapes_are_refused_not_mangled() {
        assert!(enable_in_config("plugins: {enabled: [a]}\n", PLUGIN_NAME).is_err());
        assert!(enable_in_config("plugins:\n  enabled: nope\n", PLUGIN_NAME).is_err());
        assert!(enable_in_config("plugins: [\n", PLUGIN_NAME).is_err());
        assert_eq!(
            enable_in_config("plugins: {enabled: [skill-retrieval]}\n", PLUGIN_NAME).expect("ok"),
            None
        );
    }

    #[test]
    fn install_and_uninstall_a_profile() {
        let t = tempfile::tempdir().expect("tempdir");
        std::fs::write(t.path().join("config.yaml"), COMMENTED).expect("write");
        let p = resolve_profile(Some(t.path()), None).expect("profile");
        let r = install(&p).expect("install");
        assert!(r.config_changed && r.files_changed);
        let dir = t.path().join("plugins/skill-retrieval");
        assert!(dir.join("plugin.yaml").is_file() && dir.join("__init__.py").is_file());
        let yaml = std::fs::read_to_string(dir.join("plugin.yaml")).expect("read");
        assert!(yaml.contains("name: skill-retrieval"));
        let again = install(&p).expect("install");
        assert!(!again.config_changed && !again.files_changed);
        let r = uninstall(&p).expect("uninstall");
        assert!(r.config_changed && r.files_changed && !dir.exists());
        assert_eq!(
            std::fs::read_to_string(t.path().join("config.yaml")).expect("read"),
            COMMENTED
        );
        assert!(matches!(
            resolve_profile(Some(t.path()), Some("nope")),
            Err(HermesError::Profile(_))
        ));
    }

    #[test]
    fn uninstall_puts_config_back_byte_for_byte() {
        let shapes: [Option<&str>; 6] = [
            None,
            Some(""),
            Some("model:\n  default: x\n\n\n"),
            Some("plugins:\n  enabled:\n# nothing yet\n"),
            Some("plugins:\r\n  disabled: []\r\n"),
            Some("plugins:\n  enabled: [a,\"b\"]   # mine\n"),
        ];
        for shape in shapes {
            let t = tempfile::tempdir().expect("tempdir");
            std::fs::create_dir(t.path().join("skills")).expect("mkdir");
            let config = t.path().join("config.yaml");
            if let Some(text) = shape {
                std::fs::write(&config, text).expect("write");
            }
            let p = resolve_profile(Some(t.path()), None).expect("profile");
            assert!(install(&p).expect("install").config_changed, "{shape:?}");
            let enabled = std::fs::read_to_string(&config).expect("read");
            assert!(enabled.contains(PLUGIN_NAME), "{shape:?}");
            assert!(uninstall(&p).expect("uninstall").config_changed);
            assert_eq!(std::fs::read_to_string(&config).ok().as_deref(), shape);
        }
    }

    #[test]
    fn a_config_edited_after_install_loses_only_the_entry() {
        let t = tempfile::tempdir().expect("tempdir");
        let config = t.path().join("config.yaml");
        std::fs::write(&config, "model:\n  default: x\n").expect("write");
        let p = resolve_profile(Some(t.path()), None).expect("profile");
        install(&p).expect("install");
        let mut text = std::fs::read_to_string(&config).expect("read");
        text.push_str("# edited by hand\n");
        std::fs::write(&config, &text).expect("write");
        uninstall(&p).expect("uninstall");
        let after = std::fs::read_to_string(&config).expect("read");
        assert!(!after.contains(PLUGIN_NAME) && after.contains("# edited by hand"));
    }

    #[cfg(unix)]
    #[test]
    fn install_never_writes_through_a_linked_plugin_folder() {
        let t = tempfile::tempdir().expect("tempdir");
        let home = t.path().join("home");
        std::fs::create_dir_all(home.join("skills")).expect("mkdir");
        std::fs::create_dir_all(home.join("plugins")).expect("mkdir");
        let elsewhere = t.path().join("someone-elses");
        std::fs::create_dir_all(&elsewhere).expect("mkdir");
        std::fs::write(elsewhere.join("__init__.py"), "theirs").expect("write");
        let link = home.join("plugins").join(PLUGIN_NAME);
        std::os::unix::fs::symlink(&elsewhere, &link).expect("symlink");
        let profile = Root::locate(Some(&home))
            .expect("root")
            .profile("default")
            .expect("profile");
        let e = install(&profile).expect_err("a linked folder is refused");
        assert!(matches!(e, HermesError::Linked { .. }), "{e}");
        assert!(e.to_string().contains("never through a link"), "{e}");
        assert_eq!(
            std::fs::read_to_string(elsewhere.join("__init__.py")).expect("read"),
            "theirs"
        );
        assert!(!home.join("config.yaml").exists());
        // Uninstall removes the link, not what it leads to.
        uninstall(&profile).expect("uninstall");
        assert!(std::fs::symlink_metadata(&link).is_err());
        assert!(elsewhere.join("__init__.py").exists());
        // A linked file in a real folder is refused too.
        std::fs::create_dir_all(&link).expect("mkdir");
        std::os::unix::fs::symlink(elsewhere.join("__init__.py"), link.join("__init__.py"))
            .expect("symlink");
        assert!(matches!(install(&profile), Err(HermesError::Linked { .. })));
        assert_eq!(
            std::fs::read_to_string(elsewhere.join("__init__.py")).expect("read"),
            "theirs"
        );
        // A linked `plugins/` gets nothing made in its target.
        std::fs::remove_dir_all(home.join("plugins")).expect("rm");
        let other = t.path().join("other-plugins");
        std::fs::create_dir_all(&other).expect("mkdir");
        std::os::unix::fs::symlink(&other, home.join("plugins")).expect("symlink");
        assert!(matches!(install(&profile), Err(HermesError::Linked { .. })));
        assert_eq!(std::fs::read_dir(&other).expect("ls").count(), 0);
    }

    #[test]
    fn install_never_writes_through_a_config_link_to_another_users_file() {
        let t = tempfile::tempdir().expect("tempdir");
        let home = t.path().join("home");
        std::fs::create_dir_all(home.join("skills")).expect("mkdir");
        let theirs = t.path().join("their-config.yaml");
        std::fs::write(&theirs, "model: x\n").expect("write");
        if std::os::unix::fs::chown(&theirs, Some(12345), None).is_err() {
            eprintln!("SKIPPED: not root, cannot give a file to another user");
            return;
        }
        std::os::unix::fs::symlink(&theirs, home.join("config.yaml")).expect("symlink");
        let profile = Root::locate(Some(&home))
            .expect("root")
            .profile("default")
            .expect("profile");
        assert!(matches!(install(&profile), Err(HermesError::Linked { .. })));
        assert_eq!(
            std::fs::read_to_string(&theirs).expect("read"),
            "model: x\n"
        );
        // The home's own user's link (dotfiles) is followed.
        std::os::unix::fs::chown(&theirs, Some(0), None).expect("chown");
        install(&profile).expect("install");
        assert!(std::fs::read_to_string(&theirs)
            .expect("read")
            .contains("skill-retrieval"));
    }
}
