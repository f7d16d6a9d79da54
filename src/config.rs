//! The parts of a Hermes `config.yaml` that decide which skills exist and which are offered.

use serde_yaml::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The skill settings of one profile's `config.yaml`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HermesConfig {
    /// `skills.disabled`: names (frontmatter or folder) hidden everywhere.
    pub disabled: BTreeSet<String>,
    /// `skills.platform_disabled`: messaging platform → names hidden there.
    pub platform_disabled: BTreeMap<String, BTreeSet<String>>,
    /// `skills.external_dirs`, as written.
    pub external_dirs: Vec<String>,
    /// The file is there but is not YAML that can be read here: Hermes (PyYAML) may read
    /// settings in it that hide skills, so every skill is treated as disabled (fail closed).
    pub unreadable: bool,
}

/// What went wrong reading `config.yaml`; the sync goes on with an empty configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file exists but could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not YAML.
    #[error("{path} is not valid YAML here ({source}); Hermes may read skill settings in it that skillidx cannot, so every skill is treated as disabled until it parses")]
    Yaml {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: serde_yaml::Error,
    },
}

impl HermesConfig {
    /// Reads `<home>/config.yaml`; a missing file is an empty configuration.
    pub fn load(home: &Path) -> Result<HermesConfig, ConfigError> {
        let path = home.join("config.yaml");
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        // Hermes reads it with PyYAML: a repeated key keeps its last value, merge keys apply.
        let value: Value =
            crate::yaml::parse(&text).map_err(|source| ConfigError::Yaml { path, source })?;
        Ok(Self::from_value(&value))
    }

    /// Reads the skill settings out of a parsed `config.yaml`.
    pub fn from_value(value: &Value) -> HermesConfig {
        let Some(skills) = value.get("skills").filter(|v| v.is_mapping()) else {
            return Self::default();
        };
        let platform_disabled = skills
            .get("platform_disabled")
            .and_then(Value::as_mapping)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.as_str()?.to_owned(), name_set(Some(v)))))
                    .collect()
            })
            .unwrap_or_default();
        HermesConfig {
            disabled: name_set(skills.get("disabled")),
            platform_disabled,
            external_dirs: name_list(skills.get("external_dirs")),
            unreadable: false,
        }
    }

    /// Whether a skill with this frontmatter name or folder name is disabled everywhere.
    pub fn is_disabled(&self, name: &str, dir_name: &str) -> bool {
        self.unreadable || self.disabled.contains(name) || self.disabled.contains(dir_name)
    }

    /// Resolves `skills.external_dirs` as Hermes does: `~` and `${VAR}` expanded, relative
    /// paths against the home, only existing directories, no duplicates, never the local
    /// skills directory itself.
    pub fn external_roots(&self, home: &Path) -> Vec<PathBuf> {
        let local = canonical(&home.join("skills"));
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for entry in &self.external_dirs {
            let expanded = expand_user(&expand_vars(entry.trim()));
            if expanded.as_os_str().is_empty() {
                continue;
            }
            let p = if expanded.is_absolute() {
                expanded
            } else {
                home.join(expanded)
            };
            let p = canonical(&p);
            if p == local || !p.is_dir() || !seen.insert(p.clone()) {
                continue;
            }
            out.push(p);
        }
        out
    }
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// A list of names as Hermes reads `disabled`, `platform_disabled.<p>` and `external_dirs`
/// (`_normalize_string_set`, `get_external_skills_dirs`): a string is one item (never a
/// JSON array), a list gives its items, a mapping its keys; each item is `str(item).strip()`,
/// empty ones dropped.
fn name_list(v: Option<&Value>) -> Vec<String> {
    let items: Vec<&Value> = match v {
        Some(Value::Sequence(s)) => s.iter().collect(),
        Some(Value::Mapping(m)) => m.keys().collect(),
        Some(s @ Value::String(_)) => vec![s],
        _ => Vec::new(),
    };
    items
        .into_iter()
        .map(|v| crate::skill::py_str(v).trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

fn name_set(v: Option<&Value>) -> BTreeSet<String> {
    name_list(v).into_iter().collect()
}

fn expand_user(s: &str) -> PathBuf {
    if s == "~" || s.starts_with("~/") {
        if let Some(home) = std::env::var_os("HOME") {
            return PathBuf::from(home).join(s.trim_start_matches('~').trim_start_matches('/'));
        }
    }
    PathBuf::from(s)
}

/// `os.path.expandvars`: `$VAR` and `${VAR}` replaced when set, left alone otherwise.
fn expand_vars(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        let (name, consumed) = if let Some(inner) = after.strip_prefix('{') {
            match inner.find('}') {
                Some(end) => (&inner[..end], end + 2),
                None => ("", 0),
            }
        } else {
            let end = after
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(after.len());
            (&after[..end], end)
        };
        match (name.is_empty(), std::env::var(name)) {
            (false, Ok(value)) => out.push_str(&value),
            _ => out.push_str(&rest[i..i + 1 + consumed]),
        }
        rest = &after[consumed..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_lists_in_every_form() {
        let v: Value = serde_yaml::from_str(
            "skills:\n  disabled: '[\"a\", \"b\"]'\n  platform_disabled:\n    telegram: c\n  external_dirs: [x, '']\n",
        )
        .unwrap();
        let c = HermesConfig::from_value(&v);
        // A string is one item, JSON-looking or not.
        assert_eq!(c.disabled, ["[\"a\", \"b\"]"].map(String::from).into());
        let v: Value = serde_yaml::from_str("skills:\n  disabled: [a, 1, true, ' b ']\n").unwrap();
        let c2 = HermesConfig::from_value(&v);
        assert_eq!(
            c2.disabled,
            ["1", "True", "a", "b"].map(String::from).into()
        );
        assert_eq!(
            c.platform_disabled["telegram"],
            ["c"].map(String::from).into()
        );
        assert_eq!(c.external_dirs, ["x"]);
        assert!(c2.is_disabled("zzz", "a"));
    }

    #[test]
    fn a_config_without_skills_is_empty() {
        let v: Value = serde_yaml::from_str("model: {provider: x}").unwrap();
        assert_eq!(HermesConfig::from_value(&v), HermesConfig::default());
        let v: Value = serde_yaml::from_str("skills: [1, 2]").unwrap();
        assert_eq!(HermesConfig::from_value(&v), HermesConfig::default());
    }

    #[test]
    fn expands_variables_like_python() {
        std::env::set_var("SKILLIDX_TEST_VAR", "v");
        assert_eq!(
            expand_vars("a/${SKILLIDX_TEST_VAR}/$SKILLIDX_TEST_VAR/b"),
            "a/v/v/b"
        );
        assert_eq!(
            expand_vars("$NOPE_SKILLIDX_UNSET/x"),
            "$NOPE_SKILLIDX_UNSET/x"
        );
        assert_eq!(expand_vars("${unclosed"), "${unclosed");
    }
}
