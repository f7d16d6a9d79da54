//! The parts of a Hermes `config.yaml` that decide which skills exist and which are offered.

use crate::version::HermesVersion;
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
    /// `skills.create_dir`, as written (read from 0.21 on): a skill root listed after the
    /// local one, before the external dirs.
    pub create_dir: Option<String>,
    /// `skills.trusted_project_dirs`, as written (read from 0.21 on): the project roots whose
    /// `.hermes/skills` and `.agents/skills` Hermes reads (`crate::project`).
    pub trusted_project_dirs: Vec<String>,
    /// `skills.project_discovery` is the literal `false` (0.21): no project skills at all.
    pub no_project_discovery: bool,
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
    /// Reads `<home>/config.yaml` as Hermes `version` does; a missing file is an empty
    /// configuration.
    pub fn load(home: &Path, version: HermesVersion) -> Result<HermesConfig, ConfigError> {
        let path = home.join("config.yaml");
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        // Hermes reads it with PyYAML: a repeated key keeps its last value, merge keys apply.
        let value: Value =
            crate::yaml::parse(&text).map_err(|source| ConfigError::Yaml { path, source })?;
        Ok(Self::from_value(&value, version))
    }

    /// Reads the skill settings out of a parsed `config.yaml`, as Hermes `version` does.
    pub fn from_value(value: &Value, version: HermesVersion) -> HermesConfig {
        let Some(skills) = value.get("skills").filter(|v| v.is_mapping()) else {
            return Self::default();
        };
        // 0.20 parses a list written as a string (`parse_config_string_list`); 0.21 never
        // disables `hermes-agent` (`ESSENTIAL_SKILLS`).
        let names = |v: Option<&Value>| -> BTreeSet<String> {
            let mut set: BTreeSet<String> = if version >= HermesVersion::V0_20 {
                config_string_list(v).into_iter().collect()
            } else {
                name_set(v)
            };
            if version >= HermesVersion::V0_21 {
                set.remove(ESSENTIAL_SKILL);
            }
            set
        };
        let platform_disabled = skills
            .get("platform_disabled")
            .and_then(Value::as_mapping)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.as_str()?.to_owned(), names(Some(v)))))
                    .collect()
            })
            .unwrap_or_default();
        let create_dir = skills
            .get("create_dir")
            .and_then(Value::as_str)
            .filter(|_| version >= HermesVersion::V0_21)
            .map(str::to_owned);
        let v21 = version >= HermesVersion::V0_21;
        HermesConfig {
            disabled: names(skills.get("disabled")),
            platform_disabled,
            external_dirs: name_list(skills.get("external_dirs")),
            create_dir,
            trusted_project_dirs: if v21 {
                trust_list(skills.get("trusted_project_dirs"))
            } else {
                Vec::new()
            },
            no_project_discovery: v21
                && skills.get("project_discovery") == Some(&Value::Bool(false)),
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
    /// `skills.create_dir` (0.21) comes first, resolved the same way.
    pub fn external_roots(&self, home: &Path) -> Vec<PathBuf> {
        let local = canonical(&home.join("skills"));
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for entry in self.create_dir.iter().chain(&self.external_dirs) {
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

/// `skills.trusted_project_dirs` as 0.21 reads it (`_project_trusted_dirs_from_config`): a
/// string is one entry, a list its items (`str(entry).strip()`, empty ones dropped), anything
/// else nothing.
fn trust_list(v: Option<&Value>) -> Vec<String> {
    let items: Vec<&Value> = match v {
        Some(Value::Sequence(s)) => s.iter().collect(),
        Some(s @ Value::String(_)) => vec![s],
        _ => Vec::new(),
    };
    items
        .into_iter()
        .map(|v| crate::skill::py_str(v).trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// A configured path as Hermes expands it: `${VAR}` then `~`.
pub(crate) fn expand_path(entry: &str) -> PathBuf {
    expand_user(&expand_vars(entry))
}

fn name_set(v: Option<&Value>) -> BTreeSet<String> {
    name_list(v).into_iter().collect()
}

/// The skill Hermes 0.21 never disables (`ESSENTIAL_SKILLS`).
pub const ESSENTIAL_SKILL: &str = "hermes-agent";

/// A list of names as Hermes 0.20+ reads `disabled` and `platform_disabled.<p>`
/// (`parse_config_string_list`, then `_normalize_string_set`): a string that starts with `[`
/// is read as a Python list literal (`ast.literal_eval`), else it is one name; a list gives
/// its items; anything else nothing. Each item `str(item).strip()`, empty ones dropped.
fn config_string_list(v: Option<&Value>) -> Vec<String> {
    let items: Vec<String> = match v {
        Some(Value::Sequence(s)) => s.iter().map(crate::skill::py_str).collect(),
        Some(Value::String(s)) if s.trim().starts_with('[') => {
            python_list_literal(s.trim()).unwrap_or_else(|| vec![s.clone()])
        }
        Some(Value::String(s)) => vec![s.clone()],
        _ => Vec::new(),
    };
    items
        .into_iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The items of a Python list literal of strings, numbers, booleans and `None`, each as
/// `str()` gives it; `None` when the text is not such a literal (`ast.literal_eval` would
/// raise, or give something else). Strings follow Python's rules: `'` or `"`, `r`/`u`
/// prefixes, escapes, adjacent literals joined; `#` comments; integers in any base with `_`
/// and signs; floats shown as Python's `repr`.
fn python_list_literal(text: &str) -> Option<Vec<String>> {
    let mut p = Literal { rest: text };
    p.skip();
    p.rest = p.rest.strip_prefix('[')?;
    let mut out = Vec::new();
    loop {
        p.skip();
        if let Some(r) = p.rest.strip_prefix(']') {
            p.rest = r;
            break;
        }
        out.push(p.item()?);
        p.skip();
        if let Some(r) = p.rest.strip_prefix(',') {
            p.rest = r;
        } else if let Some(r) = p.rest.strip_prefix(']') {
            p.rest = r;
            break;
        } else {
            return None;
        }
    }
    p.skip();
    p.rest.is_empty().then_some(out)
}

/// A reader of one Python literal expression.
struct Literal<'a> {
    rest: &'a str,
}

impl Literal<'_> {
    /// Skips whitespace and `#` comments.
    fn skip(&mut self) {
        loop {
            self.rest = self.rest.trim_start();
            match self.rest.strip_prefix('#') {
                Some(r) => self.rest = r.split_once('\n').map_or("", |(_, after)| after),
                None => return,
            }
        }
    }

    /// One list item, as `str()` shows it.
    fn item(&mut self) -> Option<String> {
        let mut joined: Option<String> = None;
        while let Some(s) = self.string() {
            joined.get_or_insert_with(String::new).push_str(&s?);
            self.skip();
        }
        if joined.is_some() {
            return joined;
        }
        let end = self
            .rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || "+-._".contains(c)))
            .unwrap_or(self.rest.len());
        let (word, rest) = self.rest.split_at(end);
        self.rest = rest;
        match word {
            "True" | "False" | "None" => Some(word.to_owned()),
            _ => python_number(word),
        }
    }

    /// A string literal at the start, if one starts there (`Some(None)`: it starts but is
    /// not valid).
    fn string(&mut self) -> Option<Option<String>> {
        let prefix = self.rest.find(['\'', '"'])?;
        let (flags, after) = self.rest.split_at(prefix);
        if !matches!(flags.to_ascii_lowercase().as_str(), "" | "r" | "u") {
            return None;
        }
        let raw = flags.eq_ignore_ascii_case("r");
        let quote = after.chars().next()?;
        let body = &after[1..];
        if body.starts_with(quote) && body[1..].starts_with(quote) {
            return Some(None); // triple-quoted: not read here
        }
        let mut out = String::new();
        let mut chars = body.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' if raw => {
                    out.push('\\');
                    out.extend(chars.next().map(|(_, n)| n));
                }
                '\\' => match unescape(&mut chars) {
                    Some(text) => out.push_str(&text),
                    None => return Some(None),
                },
                '\n' => return Some(None),
                c if c == quote => {
                    self.rest = &body[i + 1..];
                    return Some(Some(out));
                }
                c => out.push(c),
            }
        }
        Some(None)
    }
}

/// What a backslash escape stands for (empty: a line continuation); the backslash is kept
/// for an escape Python does not know (`'\d'` is `\d`). `None`: not valid.
fn unescape(chars: &mut std::str::CharIndices<'_>) -> Option<String> {
    let (_, c) = chars.next()?;
    let hex = |chars: &mut std::str::CharIndices<'_>, n: usize| -> Option<char> {
        let digits: String = chars.take(n).map(|(_, d)| d).collect();
        let v = (digits.len() == n).then(|| u32::from_str_radix(&digits, 16).ok())??;
        char::from_u32(v)
    };
    Some(String::from(match c {
        '\n' => return Some(String::new()),
        '\\' | '\'' | '"' => c,
        'a' => '\u{7}',
        'b' => '\u{8}',
        'f' => '\u{c}',
        'n' => '\n',
        'r' => '\r',
        't' => '\t',
        'v' => '\u{b}',
        'x' => hex(chars, 2)?,
        'u' => hex(chars, 4)?,
        'U' => hex(chars, 8)?,
        'N' => return None,
        '0'..='7' => {
            let mut v = c.to_digit(8)?;
            for _ in 0..2 {
                match chars.clone().next() {
                    Some((_, d @ '0'..='7')) => {
                        chars.next();
                        v = v * 8 + d.to_digit(8)?;
                    }
                    _ => break,
                }
            }
            char::from_u32(v)?
        }
        other => return Some(format!("\\{other}")),
    }))
}

/// A number literal with optional signs, as `str()` shows it; `None` when Python would not
/// read it as one (`01`, `inf`, `1__0`).
fn python_number(word: &str) -> Option<String> {
    let digits = word.trim_start_matches(['+', '-']);
    let negative = word[..word.len() - digits.len()].matches('-').count() % 2 == 1;
    let clean = |s: &str| -> Option<String> {
        let ok = !s.is_empty() && !s.starts_with('_') && !s.ends_with('_') && !s.contains("__");
        ok.then(|| s.replace('_', ""))
    };
    let int = |text: &str, radix: u32| -> Option<String> {
        let v = i128::from_str_radix(&clean(text)?, radix).ok()?;
        Some(if negative { -v } else { v }.to_string())
    };
    let lower = digits.to_ascii_lowercase();
    if let Some(h) = lower.strip_prefix("0x") {
        return int(h, 16);
    }
    if let Some(o) = lower.strip_prefix("0o") {
        return int(o, 8);
    }
    if let Some(b) = lower.strip_prefix("0b") {
        return int(b, 2);
    }
    if digits.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
        let plain = clean(digits)?;
        if plain.len() > 1 && plain.starts_with('0') && plain.bytes().any(|b| b != b'0') {
            return None;
        }
        return int(digits, 10);
    }
    let has_digit = digits.bytes().any(|b| b.is_ascii_digit());
    let float_chars = digits
        .bytes()
        .all(|b| b.is_ascii_digit() || b"._eE+-".contains(&b));
    if !(has_digit && float_chars) {
        return None;
    }
    let v: f64 = clean(digits)?.parse().ok()?;
    Some(python_float_repr(if negative { -v } else { v }))
}

/// Python's `repr` of a float: the shortest text that reads back, positional from 1e-4 to
/// 1e16 (as Rust's `{:?}`), else `1e+16` / `1.5e-05` form.
fn python_float_repr(v: f64) -> String {
    if v.is_infinite() {
        return if v > 0.0 { "inf" } else { "-inf" }.into();
    }
    let text = format!("{v:?}");
    match text.split_once('e') {
        Some((mantissa, exp)) => {
            let (sign, digits) = match exp.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', exp),
            };
            format!("{mantissa}e{sign}{digits:0>2}")
        }
        None => text,
    }
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
        let c = HermesConfig::from_value(&v, HermesVersion::V0_19);
        // A string is one item, JSON-looking or not (0.19).
        assert_eq!(c.disabled, ["[\"a\", \"b\"]"].map(String::from).into());
        let v: Value = serde_yaml::from_str("skills:\n  disabled: [a, 1, true, ' b ']\n").unwrap();
        let c2 = HermesConfig::from_value(&v, HermesVersion::V0_19);
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
        assert_eq!(
            HermesConfig::from_value(&v, HermesVersion::NEWEST),
            HermesConfig::default()
        );
        let v: Value = serde_yaml::from_str("skills: [1, 2]").unwrap();
        assert_eq!(
            HermesConfig::from_value(&v, HermesVersion::NEWEST),
            HermesConfig::default()
        );
    }

    #[test]
    fn newer_hermes_reads_lists_written_as_strings_and_keeps_the_essential_skill() {
        use HermesVersion::*;
        let yaml = "skills:\n  disabled: \"['a', \\\"b\\\", 1, hermes-agent]\"\n  platform_disabled:\n    telegram: \"['hermes-agent', 'c']\"\n  create_dir: made\n";
        let v: Value = serde_yaml::from_str(yaml).unwrap();
        // Not a literal (a bare word inside): one name, as ast.literal_eval raises.
        assert_eq!(HermesConfig::from_value(&v, V0_20).disabled.len(), 1);
        let yaml = yaml.replace("hermes-agent]", "'hermes-agent']");
        let v: Value = serde_yaml::from_str(&yaml).unwrap();
        let set = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<BTreeSet<_>>();
        let v20 = HermesConfig::from_value(&v, V0_20);
        assert_eq!(v20.disabled, set(&["1", "a", "b", "hermes-agent"]));
        assert_eq!(
            v20.platform_disabled["telegram"],
            set(&["c", "hermes-agent"])
        );
        assert_eq!(v20.create_dir, None);
        let v21 = HermesConfig::from_value(&v, V0_21);
        assert_eq!(v21.disabled, set(&["1", "a", "b"]));
        assert_eq!(v21.platform_disabled["telegram"], set(&["c"]));
        assert_eq!(v21.create_dir.as_deref(), Some("made"));
        assert_eq!(HermesConfig::from_value(&v, V0_19).disabled.len(), 1);
        assert_eq!(python_list_literal("[]"), Some(vec![]));
        assert_eq!(python_list_literal("['x',]"), Some(vec!["x".into()]));
        assert_eq!(python_list_literal("['x' 'y']"), Some(vec!["xy".into()]));
        assert_eq!(
            python_list_literal("[True, None, 2.5]"),
            Some(vec!["True".into(), "None".into(), "2.5".into()])
        );
    }

    #[test]
    fn list_literals_read_as_python_reads_them() {
        // Expected values from Python 3.11's ast.literal_eval, then str() of each item.
        let text = r"['caf\u00e9', 'ab' 'cd', '\x41', 1e3, 0x10, +1, '\d', r'\n', -0o17, 1_000, 2.5e-7] # c";
        assert_eq!(
            python_list_literal(text).unwrap(),
            ["café", "abcd", "A", "1000.0", "16", "1", r"\d", r"\n", "-15", "1000", "2.5e-07"]
        );
        assert_eq!(python_list_literal("[\"é\", 1e400]").unwrap(), ["é", "inf"]);
        for bad in [
            "[01]",
            "[inf]",
            "['a',,]",
            "['a'",
            "['a'] x",
            "[1__0]",
            "['''a''']",
        ] {
            assert_eq!(python_list_literal(bad), None, "{bad}");
        }
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
