//! Parsing one SKILL.md the way Hermes does, into a [`Skill`].
//!
//! Hermes (`agent/skill_utils.parse_frontmatter`, `tools/skills_tool._find_all_skills`,
//! `agent/prompt_builder`) strips one leading BOM, reads YAML between a first line `---`
//! and the next `\n---` line, and when that YAML does not parse falls back to naive
//! `key: value` lines rather than dropping the skill. A frontmatter that parses to
//! something other than a mapping counts as empty. The name defaults to the directory
//! name, the description to the first non-heading line of the body. We follow all of
//! that, and record every fallback we take as a note so that `sync` can report it.

use crate::tokenize;
use serde::{Deserialize, Serialize};
use serde_yaml::Value;

/// Hermes' limit on a skill name, in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// Hermes' limit on a description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// How much of the body is indexed, in characters.
pub const BODY_CHARS: usize = 3000;
/// How many characters of CJK runs from the body join the seed document.
pub const CJK_RUN_CHARS: usize = 200;

/// The folder of the local root that holds org mirrors (`_org/<org id>/…`), from Hermes 0.20
/// on.
pub const ORG_DIR: &str = "_org";

/// Where a skill was found, which decides its id and its rank in a name clash.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Origin {
    /// `<home>/skills`.
    Local,
    /// The n-th entry of `skills.external_dirs`.
    External(u32),
    /// `<home>/plugins/<name>/skills`.
    Plugin(String),
    /// The n-th skill folder of a trusted project (Hermes 0.21: `.hermes/skills`, then
    /// `.agents/skills`), which comes before every other root.
    Project(u32),
}

/// What the scanner knows about a SKILL.md before reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// Which root the file is under.
    pub origin: Origin,
    /// The path components from the root to the file, the file name included.
    pub rel: Vec<String>,
}

impl Location {
    /// The skill's directory name (Hermes' fallback name).
    pub fn dir_name(&self) -> &str {
        match self.rel.len() {
            0 | 1 => "",
            n => &self.rel[n - 2],
        }
    }

    /// The folder's path from its root, which `skill_view` accepts for an ambiguous name
    /// (`category/folder`; the folder alone directly under the root).
    pub fn folder(&self) -> String {
        match self.rel.len() {
            0 | 1 => String::new(),
            n => self.rel[..n - 1].join("/"),
        }
    }

    /// The category, as `agent/prompt_builder` renders it: the directories between the
    /// root and the skill directory joined with `/`; the skill directory itself for a
    /// skill directly under the root; `general` for a SKILL.md at the root.
    pub fn category(&self) -> String {
        match self.rel.len() {
            0 | 1 => "general".to_owned(),
            2 => self.rel[0].clone(),
            n => self.rel[..n - 2].join("/"),
        }
    }
}

/// The conditions under `metadata.hermes` that decide whether Hermes offers a skill,
/// stored so the plugin can filter on the tools of the session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Conditions {
    /// Hide unless all of these toolsets are available.
    pub requires_toolsets: Vec<String>,
    /// Hide unless all of these tools are available.
    pub requires_tools: Vec<String>,
    /// Hide when any of these toolsets is available.
    pub fallback_for_toolsets: Vec<String>,
    /// Hide when any of these tools is available.
    pub fallback_for_tools: Vec<String>,
    /// Hide whenever the session's tools are known: a condition Hermes cannot evaluate.
    pub never_with_tools: bool,
    /// `metadata.hermes.session_platforms` (read from Hermes 0.21 on), each item stripped and
    /// lower-cased: hide when the session's messaging platform is known and not one of them.
    pub session_platforms: Vec<String>,
}

impl Conditions {
    /// Whether there is no condition at all.
    pub fn is_empty(&self) -> bool {
        self.requires_toolsets.is_empty()
            && self.requires_tools.is_empty()
            && self.fallback_for_toolsets.is_empty()
            && self.fallback_for_tools.is_empty()
            && !self.never_with_tools
            && self.session_platforms.is_empty()
    }
}

/// A parsed skill: what is stored and what is indexed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Skill {
    /// The id the agent loads it by: the name, or `<plugin>:<name>` for a plugin skill.
    pub id: String,
    /// The frontmatter name (or the directory name).
    pub name: String,
    /// The skill's directory name.
    pub dir_name: String,
    /// The category path.
    pub category: String,
    /// The description (or the body's first non-heading line).
    pub description: String,
    /// Operating systems the skill is limited to; empty means all.
    pub platforms: Vec<String>,
    /// Trigger phrases.
    pub triggers: Vec<String>,
    /// Tags from `tags`, `metadata.tags` and `metadata.hermes.tags`.
    pub tags: Vec<String>,
    /// Offer-time conditions.
    pub conditions: Conditions,
    /// `when_to_use` (or `when-to-use`): when the skill applies, in the author's words.
    pub when_to_use: String,
    /// The start of the Markdown body, at most [`BODY_CHARS`] characters.
    pub body: String,
    /// Hermes' top-level `environments` items, `str(e).lower().strip()` each.
    pub environments: Vec<String>,
    /// Whether there is an `environments` list (a falsy value is none).
    pub has_environments: bool,
    /// Fallbacks taken while parsing, worth telling the user about.
    pub notes: Vec<String>,
    /// Possible prompt injections in the name or description.
    pub flags: Vec<String>,
}

/// What Hermes `version` lists differently from the file as [`parse`] reads it (which is
/// 0.19's reading), from 0.20 on: a local skill whose name is empty is listed under its
/// folder name (`_entry_name`: `frontmatter_name or skill_name`), and a skill of an org
/// mirror (`_org/<id>/…`, walked only for the active org) under the category `org:<id>`
/// (`prompt_builder._build_snapshot_entry` and its org labelling). Before 0.21,
/// `metadata.hermes.session_platforms` is not read.
pub fn as_listed_by(
    skill: &mut Skill,
    location: &Location,
    version: crate::version::HermesVersion,
) {
    if version < crate::version::HermesVersion::V0_21 {
        skill.conditions.session_platforms.clear();
    }
    if version < crate::version::HermesVersion::V0_20 || location.origin != Origin::Local {
        return;
    }
    if let [org, id, _, ..] = location.rel.as_slice() {
        if org == ORG_DIR {
            skill.category = format!("org:{id}");
        }
    }
    if skill.name.is_empty() {
        if skill.id.is_empty() {
            skill.id = skill.dir_name.clone();
        }
        skill.name = skill.dir_name.clone();
        skill.notes.retain(|n| !n.starts_with("name \"\" is empty"));
    }
}

/// Parses the bytes of a SKILL.md found at `location`. Bytes that are not UTF-8 give the
/// skill Hermes offers for them ([`unreadable`]); NUL bytes are text to Hermes, and so to us.
pub fn parse(bytes: &[u8], location: &Location) -> Skill {
    match std::str::from_utf8(bytes) {
        Ok(text) => parse_text(text, location),
        Err(e) => unreadable(
            location,
            &format!(
                "not valid UTF-8 (first bad byte at offset {})",
                e.valid_up_to()
            ),
            &String::from_utf8_lossy(bytes),
        ),
    }
}

/// Splits `content` into (YAML text, body) exactly as Hermes does; `None` when there is
/// no frontmatter.
pub fn split_frontmatter(content: &str) -> (Option<&str>, &str) {
    let content = content.strip_prefix('\u{feff}').unwrap_or(content);
    if !content.starts_with("---") {
        return (None, content);
    }
    let rest = &content[3..];
    // Hermes: re.search(r"\n---\s*\n", content[3:]).
    let mut from = 0;
    while let Some(pos) = rest[from..].find("\n---") {
        let start = from + pos;
        let after = &rest[start + 4..];
        let ws = after.len() - after.trim_start_matches(py_space).len();
        // `\s*\n` backtracks to the last newline inside the whitespace run.
        if let Some(nl) = after[..ws].rfind('\n') {
            let end = start + 4 + nl + 1;
            return (Some(&rest[..start]), &rest[end..]);
        }
        from = start + 1;
    }
    (None, content)
}

/// `text` with its line endings as Python's universal newlines read them (Hermes reads a
/// SKILL.md with `read_text()`): `\r\n` and a lone `\r` become `\n`. A file with bare CR
/// endings has frontmatter for Hermes, so it must have it here too.
pub fn universal_newlines(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('\r') {
        return std::borrow::Cow::Borrowed(text);
    }
    std::borrow::Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"))
}

/// Whether Python's `str.isspace` (and so `\s` in Hermes' regular expressions) holds for
/// `c`: Unicode white space, and the separators U+001C–U+001F, which Rust's does not count.
pub fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Whether frontmatter text names an offer-time condition (tools, toolsets, platforms,
/// environments) anywhere: YAML that cannot be read here is then not guessed at.
pub fn mentions_conditions(yaml: &str) -> bool {
    [
        "requires_tools",
        "requires_toolsets",
        "fallback_for_tools",
        "fallback_for_toolsets",
        "platforms",
        "environments",
    ]
    .iter()
    .any(|k| yaml.contains(k))
}

/// Whether `text` opens a frontmatter it does not close.
pub fn frontmatter_unclosed(text: &str) -> bool {
    let text = universal_newlines(text);
    split_frontmatter(&text).0.is_none() && text.trim_start_matches('\u{feff}').starts_with("---")
}

/// Parses SKILL.md text found at `location`.
pub fn parse_text(content: &str, location: &Location) -> Skill {
    let content = universal_newlines(content);
    let content = content.as_ref();
    let mut notes = Vec::new();
    // A document PyYAML reads but serde_yaml gives up on: its conditions are unknown here.
    let mut beyond_limits = false;
    let (yaml, body) = split_frontmatter(content);
    let front: Vec<(String, Value)> = match yaml {
        None => {
            notes.push(
                "no YAML frontmatter; name and description come from the folder and body".into(),
            );
            Vec::new()
        }
        Some(yaml) => {
            match crate::yaml::parse(yaml) {
                Ok(Value::Mapping(map)) => map
                    .into_iter()
                    .filter_map(|(k, v)| scalar_string(&k).map(|k| (k, v)))
                    .collect(),
                Ok(Value::Null) => Vec::new(),
                Ok(other) => {
                    notes.push(format!(
                        "frontmatter is a YAML {}, not a mapping; it was ignored",
                        yaml_kind(&other)
                    ));
                    Vec::new()
                }
                Err(e) => {
                    notes.push(format!("frontmatter is not valid YAML ({e}); read with Hermes' `key: value` fallback"));
                    // PyYAML may read what serde_yaml refuses (a very large integer, a
                    // limit): then Hermes sees conditions the fallback cannot.
                    beyond_limits = crate::yaml::beyond_limits(&e)
                        || (!crate::yaml::refused_by_pyyaml_too(&e) && mentions_conditions(yaml));
                    naive_key_values(yaml)
                }
            }
        }
    };
    let get = |key: &str| front.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v);

    let dir_name = location.dir_name().to_owned();
    // Hermes lists `str(frontmatter.get("name", folder))`: not trimmed, not cut; `null` is
    // `None`, a list its repr.
    let name = match get("name") {
        Some(v) => py_str(v),
        None => dir_name.clone(),
    };
    if name.chars().count() > MAX_NAME_CHARS {
        notes.push(format!(
            "name longer than {MAX_NAME_CHARS} characters (Hermes lists it whole)"
        ));
    }
    if name != name.trim_matches(py_space) || name.is_empty() {
        notes.push(format!(
            "name {name:?} is empty or has surrounding spaces; Hermes lists it as it is"
        ));
    }

    let mut description = get("description")
        .and_then(scalar_string)
        .map(|s| trim_quotes(s.trim_matches(py_space)).to_owned())
        .unwrap_or_default();
    if description.is_empty() {
        description = body
            .lines()
            .map(|l| l.trim_matches(py_space))
            .find(|l| !l.is_empty() && !l.starts_with('#'))
            .unwrap_or("")
            .to_owned();
        if description.is_empty() {
            notes.push("no description and no body text to take one from".into());
        }
    }
    if description.chars().count() > MAX_DESCRIPTION_CHARS {
        notes.push(format!(
            "description longer than {MAX_DESCRIPTION_CHARS} characters was cut"
        ));
        description = description
            .chars()
            .take(MAX_DESCRIPTION_CHARS - 3)
            .collect::<String>()
            + "...";
    }

    let metadata = get("metadata").and_then(Value::as_mapping);
    let hermes = metadata
        .and_then(|m| m.get("hermes"))
        .and_then(Value::as_mapping);
    let mut tags = string_list(get("tags"));
    tags.extend(string_list(metadata.and_then(|m| m.get("tags"))));
    tags.extend(string_list(hermes.and_then(|h| h.get("tags"))));
    dedup_keep_order(&mut tags);
    let mut conditions = Conditions::of(hermes_map(get("metadata")));
    if beyond_limits {
        // Hermes may see tool conditions in it: hidden wherever tools are known, as a
        // condition that cannot be read is (fail closed).
        conditions.never_with_tools = true;
    }
    if conditions.never_with_tools {
        notes.push("a tool condition is not a list of names (Hermes fails on it once the session's tools are known); the skill is hidden whenever they are".into());
    }
    let mut flags = Vec::new();
    for (field, text) in [("name", &name), ("description", &description)] {
        for flag in crate::safety::flags(text) {
            flags.push(format!("{field}: {flag}; neutralised in what is injected"));
        }
    }
    let (environments, has_environments) = match hermes_list(get("environments")) {
        Some(items) => (items, true),
        None => (Vec::new(), false),
    };

    let id = match &location.origin {
        Origin::Plugin(plugin) => format!("{plugin}:{name}"),
        _ => name.clone(),
    };
    Skill {
        id,
        name,
        dir_name,
        category: location.category(),
        description,
        platforms: hermes_list(get("platforms")).unwrap_or_default(),
        triggers: string_list(get("triggers")),
        tags,
        conditions,
        when_to_use: get("when_to_use")
            .or_else(|| get("when-to-use"))
            .and_then(scalar_string)
            .map(|s| s.trim_matches(py_space).to_owned())
            .unwrap_or_default(),
        body: body.chars().take(BODY_CHARS).collect(),
        environments,
        has_environments,
        notes,
        flags,
    }
}

/// The skill Hermes offers for a SKILL.md it cannot read or decode: its folder name, no
/// description, no frontmatter (`_parse_skill_file` returns `(True, {}, "")`). `body` is
/// what could be read, indexed so the skill can still be found.
pub fn unreadable(location: &Location, reason: &str, body: &str) -> Skill {
    let dir_name = location.dir_name().to_owned();
    let name = dir_name.clone();
    Skill {
        id: match &location.origin {
            Origin::Plugin(plugin) => format!("{plugin}:{name}"),
            _ => name.clone(),
        },
        name,
        dir_name,
        category: location.category(),
        description: String::new(),
        platforms: Vec::new(),
        triggers: Vec::new(),
        tags: Vec::new(),
        conditions: Conditions::default(),
        when_to_use: String::new(),
        body: body.chars().take(BODY_CHARS).collect(),
        environments: Vec::new(),
        has_environments: false,
        notes: vec![format!(
            "{reason}: Hermes offers it under its folder name with no description"
        )],
        flags: Vec::new(),
    }
}

/// `str(v)` of a value PyYAML loaded.
pub fn py_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => py_repr(other),
    }
}

/// `repr(v)` of a value PyYAML loaded (close enough for lists, maps and numbers).
fn py_repr(v: &Value) -> String {
    match v {
        Value::Null => "None".into(),
        Value::Bool(b) => if *b { "True" } else { "False" }.into(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.to_string()
            } else if let Some(u) = n.as_u64() {
                u.to_string()
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                if f.is_nan() {
                    "nan".into()
                } else if f.is_infinite() {
                    if f > 0.0 { "inf" } else { "-inf" }.into()
                } else if f == f.trunc() && f.abs() < 1e16 {
                    format!("{f:.1}")
                } else {
                    let d = format!("{f:?}");
                    match d.split_once('e') {
                        Some((m, e)) => {
                            let (sign, digits) = match e.strip_prefix('-') {
                                Some(d) => ('-', d),
                                None => ('+', e),
                            };
                            format!("{m}e{sign}{digits:0>2}")
                        }
                        None => d,
                    }
                }
            }
        }
        Value::String(s) => {
            if s.contains('\'') && !s.contains('"') {
                format!("\"{s}\"")
            } else {
                format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
            }
        }
        Value::Sequence(items) => format!(
            "[{}]",
            items.iter().map(py_repr).collect::<Vec<_>>().join(", ")
        ),
        Value::Mapping(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| format!("{}: {}", py_repr(k), py_repr(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Tagged(t) => py_repr(&t.value),
    }
}

/// Python truthiness of a loaded value.
fn py_falsy(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Sequence(s) => s.is_empty(),
        Value::Mapping(m) => m.is_empty(),
        Value::Tagged(t) => py_falsy(&t.value),
    }
}

/// A list field as Hermes reads `platforms` and `environments`: `None` when missing or
/// falsy; a value that is not a list is one item; each item is `str(item).lower().strip()`.
/// So the string `"[macos]"` is one item, `[macos]`, which matches no OS.
fn hermes_list(v: Option<&Value>) -> Option<Vec<String>> {
    let v = v.filter(|v| !py_falsy(v))?;
    let items = match v {
        Value::Sequence(items) => items.iter().collect(),
        Value::Tagged(t) => return hermes_list(Some(&t.value)),
        other => vec![other],
    };
    Some(
        items
            .into_iter()
            .map(|i| py_str(i).to_lowercase().trim_matches(py_space).to_owned())
            .collect(),
    )
}

/// `metadata.hermes` when both are mappings (`extract_skill_conditions`).
fn hermes_map(metadata: Option<&Value>) -> Option<&serde_yaml::Mapping> {
    let hermes = metadata?.as_mapping()?.get("hermes")?;
    hermes.as_mapping()
}

impl Conditions {
    /// The tool conditions of `metadata.hermes`, as `_skill_should_show` iterates them: a
    /// list's string items; a string's characters; a mapping's keys. A value it cannot
    /// iterate (null, a number) or a list item that is not a string makes the skill hidden
    /// whenever the session's tools are known ([`Conditions::never_with_tools`]).
    pub fn of(hermes: Option<&serde_yaml::Mapping>) -> Conditions {
        let mut c = Conditions::default();
        let Some(hermes) = hermes else {
            return c;
        };
        let mut never = false;
        let mut read = |key: &str, requires: bool| -> Vec<String> {
            let Some(v) = hermes.get(key) else {
                return Vec::new();
            };
            let v = match v {
                Value::Tagged(t) => &t.value,
                v => v,
            };
            match v {
                Value::Sequence(items) => items
                    .iter()
                    .filter_map(|i| match i {
                        Value::String(s) => Some(s.clone()),
                        // An unhashable item makes `in set` raise; another item never
                        // equals a tool name, so a requirement of it is never met.
                        Value::Sequence(_) | Value::Mapping(_) => {
                            never = true;
                            None
                        }
                        _ => {
                            never |= requires;
                            None
                        }
                    })
                    .collect(),
                Value::String(s) => s.chars().map(String::from).collect(),
                Value::Mapping(m) => m
                    .keys()
                    .filter_map(|k| match k {
                        Value::String(s) => Some(s.clone()),
                        _ => {
                            never |= requires;
                            None
                        }
                    })
                    .collect(),
                _ => {
                    never = true;
                    Vec::new()
                }
            }
        };
        c.fallback_for_toolsets = read("fallback_for_toolsets", false);
        c.requires_toolsets = read("requires_toolsets", true);
        c.fallback_for_tools = read("fallback_for_tools", false);
        c.requires_tools = read("requires_tools", true);
        c.never_with_tools = never;
        c.session_platforms = session_platforms(hermes.get("session_platforms"));
        c
    }
}

/// `metadata.hermes.session_platforms` as 0.21's `_skill_should_show` reads it:
/// `[str(p).strip().lower() for p in (value or []) if str(p).strip()]`: a list's items and
/// a mapping's keys as Python prints them ([`py_str`]), a string's characters. A number cannot be iterated: Hermes' prompt build fails on it, and here it is no
/// condition.
fn session_platforms(value: Option<&Value>) -> Vec<String> {
    let value = match value {
        Some(Value::Tagged(t)) => &t.value,
        Some(v) => v,
        None => return Vec::new(),
    };
    let items: Vec<String> = match value {
        Value::Sequence(items) => items.iter().map(py_str).collect(),
        Value::String(s) => s.chars().map(String::from).collect(),
        Value::Mapping(m) => m.keys().map(py_str).collect(),
        _ => Vec::new(),
    };
    items
        .iter()
        .map(|p| p.trim_matches(py_space).to_lowercase())
        .filter(|p| !p.is_empty())
        .collect()
}

impl Skill {
    /// The seed plugin's document: `name: description`, the triggers, the tags and the
    /// CJK runs of the body's start.
    pub fn seed_text(&self) -> String {
        let mut text = format!("{}: {}", self.name, self.description);
        for part in self.triggers.iter().chain(&self.tags) {
            text.push(' ');
            text.push_str(part);
        }
        let runs = tokenize::cjk_runs(&self.body, CJK_RUN_CHARS);
        if !runs.is_empty() {
            text.push(' ');
            text.push_str(&runs);
        }
        text
    }

    /// Whether the skill may be offered on the operating system `os` (`linux`, `macos`,
    /// `windows`), by Hermes' rule: no list means everywhere, and an entry matches when
    /// the OS's Python name (`linux`, `darwin`, `win32`) starts with it.
    pub fn runs_on(&self, os: &str) -> bool {
        runs_on(&self.platforms, os)
    }
}

/// Whether a skill limited to `platforms` (items normalised as Hermes does) may be offered on
/// `os`: no list means everywhere, and an item matches when the OS's Python name (`linux`,
/// `darwin`, `win32`) starts with it, after `macos`, `linux`, `windows` are mapped to those.
pub fn runs_on(platforms: &[String], os: &str) -> bool {
    let current = python_platform(os);
    platforms.is_empty()
        || platforms
            .iter()
            .any(|p| current.starts_with(python_platform(p)))
}

/// Maps Hermes' OS names to Python's `sys.platform`, leaving others as they are.
fn python_platform(os: &str) -> &str {
    match os {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    }
}

/// The operating system this process runs on, in Hermes' words.
pub fn current_os() -> &'static str {
    match std::env::consts::OS {
        "macos" => "macos",
        "windows" => "windows",
        "linux" | "android" => "linux",
        other => other,
    }
}

fn naive_key_values(yaml: &str) -> Vec<(String, Value)> {
    yaml.trim_matches(py_space)
        .split('\n')
        .filter_map(|line| {
            let (k, v) = line.split_once(':')?;
            Some((
                k.trim_matches(py_space).to_owned(),
                Value::String(v.trim_matches(py_space).to_owned()),
            ))
        })
        .collect()
}

fn scalar_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(if *b { "True" } else { "False" }.to_owned()),
        Value::Tagged(t) => scalar_string(&t.value),
        _ => None,
    }
}

/// A list field as Hermes' `_parse_tags` reads it: a YAML list, or a string that is
/// comma-separated and maybe wrapped in brackets.
fn string_list(v: Option<&Value>) -> Vec<String> {
    match v {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Sequence(items)) => items
            .iter()
            .filter_map(scalar_string)
            .map(|s| s.trim_matches(py_space).to_owned())
            .filter(|s| !s.is_empty())
            .collect(),
        Some(other) => {
            let Some(s) = scalar_string(other) else {
                return Vec::new();
            };
            let s = s.trim_matches(py_space);
            let s = s
                .strip_prefix('[')
                .and_then(|s| s.strip_suffix(']'))
                .unwrap_or(s);
            s.split(',')
                .map(|t| trim_quotes(t.trim_matches(py_space)).to_owned())
                .filter(|t| !t.is_empty())
                .collect()
        }
    }
}

fn trim_quotes(s: &str) -> &str {
    s.trim_matches(|c| c == '\'' || c == '"')
}

fn dedup_keep_order(items: &mut Vec<String>) {
    let mut seen = std::collections::HashSet::new();
    items.retain(|t| seen.insert(t.to_lowercase()));
}

fn yaml_kind(v: &Value) -> &'static str {
    match v {
        Value::Sequence(_) => "list",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "boolean",
        _ => "value",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loc(parts: &[&str]) -> Location {
        Location {
            origin: Origin::Local,
            rel: parts.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn reads_frontmatter_fields() {
        let md = "\u{feff}---\nname: serving-llms-vllm\ndescription: >\n  Serve LLMs\n  with vLLM.\ntriggers: [serve model]\ntags: [llm]\nplatforms: [linux]\nmetadata:\n  tags: [gpu]\n  hermes:\n    tags: [inference, llm]\n    requires_toolsets: [terminal]\n---\n# vLLM\nBody text 中文内容\n";
        let s = parse(
            md.as_bytes(),
            &loc(&["mlops", "inference", "vllm", "SKILL.md"]),
        );
        assert_eq!(s.id, "serving-llms-vllm");
        assert_eq!(s.dir_name, "vllm");
        assert_eq!(s.category, "mlops/inference");
        assert_eq!(s.description, "Serve LLMs with vLLM.");
        assert_eq!(s.tags, ["llm", "gpu", "inference"]);
        assert_eq!(s.triggers, ["serve model"]);
        assert_eq!(s.conditions.requires_toolsets, ["terminal"]);
        assert!(s.notes.is_empty());
        assert!(s.body.starts_with("# vLLM"));
        assert_eq!(
            s.seed_text(),
            "serving-llms-vllm: Serve LLMs with vLLM. serve model llm gpu inference 中文内容"
        );
    }

    #[test]
    fn invalid_yaml_uses_the_naive_fallback() {
        let md = "---\nname: broken\ndescription: \"unclosed\n  bad: [indent\n---\nbody\n";
        let s = parse(md.as_bytes(), &loc(&["x", "broken", "SKILL.md"]));
        assert_eq!(s.name, "broken");
        assert_eq!(s.description, "unclosed");
        assert!(s.notes[0].contains("not valid YAML"));
    }

    #[test]
    fn defaults_come_from_folder_and_body() {
        let md = "# Title\n\nFirst real line.\nSecond.";
        let s = parse(md.as_bytes(), &loc(&["tools", "my-tool", "SKILL.md"]));
        assert_eq!(s.name, "my-tool");
        assert_eq!(s.description, "First real line.");
        let list = "---\n- a\n- b\n---\nText\n";
        let s = parse(list.as_bytes(), &loc(&["my-tool", "SKILL.md"]));
        assert_eq!(s.category, "my-tool");
        assert!(s.notes[0].contains("not a mapping"));
    }

    #[test]
    fn fences_follow_hermes_regex() {
        assert_eq!(
            split_frontmatter("---\na: 1\n---\nbody"),
            (Some("\na: 1"), "body")
        );
        assert_eq!(
            split_frontmatter("---\na: 1\n---  \n\nbody"),
            (Some("\na: 1"), "body")
        );
        // No newline after the closing fence: Hermes sees no frontmatter.
        assert_eq!(split_frontmatter("---\na: 1\n---").0, None);
        assert_eq!(
            split_frontmatter("---\r\na: 1\r\n---\r\nbody"),
            (Some("\r\na: 1\r"), "body")
        );
        // `\s` is Python's: U+001C–U+001F are white space to it.
        assert_eq!(
            split_frontmatter("---\na: 1\n---\u{1c}\nbody"),
            (Some("\na: 1"), "body")
        );
    }

    #[test]
    fn line_endings_are_read_as_hermes_reads_them() {
        // Bare CR and CRLF endings are newlines to Hermes' read_text(): the conditions in
        // the frontmatter apply, as they do in Hermes.
        let fm = "---\nname: cr\ndescription: d\nmetadata:\n  hermes:\n    requires_toolsets: [browser]\n---\nbody\n";
        for text in [
            fm.replace('\n', "\r"),
            fm.replace('\n', "\r\n"),
            fm.replace("\n---\nbody", "\r---\nbody"),
        ] {
            let s = parse(text.as_bytes(), &loc(&["web", "cr", "SKILL.md"]));
            assert_eq!(
                (s.name.as_str(), s.description.as_str()),
                ("cr", "d"),
                "{text:?}"
            );
            assert_eq!(s.conditions.requires_toolsets, ["browser"], "{text:?}");
        }
    }

    #[test]
    fn tag_strings_are_split_like_hermes() {
        let md = "---\ntags: \"[a, 'b', c]\"\n---\n";
        let s = parse(md.as_bytes(), &loc(&["k", "SKILL.md"]));
        assert_eq!(s.tags, ["a", "b", "c"]);
    }

    #[test]
    fn platforms_match_like_hermes() {
        let mut s = parse(b"---\nplatforms: [macos]\n---\n", &loc(&["a", "SKILL.md"]));
        assert!(s.runs_on("macos"));
        assert!(!s.runs_on("linux"));
        s.platforms = vec!["linux".into()];
        assert!(s.runs_on("linux"));
        s.platforms.clear();
        assert!(s.runs_on("windows"));
    }

    #[test]
    fn undecodable_files_are_offered_under_their_folder_name() {
        let s = parse(
            b"---\nname: x\n---\nab\xffcd",
            &loc(&["c", "a", "SKILL.md"]),
        );
        assert_eq!((s.name.as_str(), s.description.as_str()), ("a", ""));
        assert!(s.notes[0].contains("not valid UTF-8"));
        // NUL is text to Hermes.
        let s = parse(b"---\nname: x\n---\nab\0cd", &loc(&["c", "a", "SKILL.md"]));
        assert_eq!(s.name, "x");
    }

    #[test]
    fn names_and_lists_are_read_as_hermes_reads_them() {
        let p = |md: &str| parse(md.as_bytes(), &loc(&["c", "dir", "SKILL.md"]));
        assert_eq!(p("---\nname: ' spaced '\n---\n").name, " spaced ");
        assert_eq!(p("---\nname:\n---\n").name, "None");
        assert_eq!(p("---\nname: ''\n---\n").name, "");
        assert_eq!(p("---\nname: [a, 1]\n---\n").name, "['a', 1]");
        assert_eq!(p("---\nname: 1.0\n---\n").name, "1.0");
        assert_eq!(p("---\ndescription: x\n---\n").name, "dir");
        // A string is one item: "[macos]" matches no OS.
        let s = p("---\nplatforms: \"[macos]\"\n---\n");
        assert_eq!(s.platforms, ["[macos]"]);
        assert!(!s.runs_on("macos") && !s.runs_on("linux"));
        assert!(p("---\nplatforms: Linux\n---\n").runs_on("linux"));
        assert!(!p("---\nplatforms: [null]\n---\n").runs_on("linux"));
        assert!(p("---\nplatforms: ['']\n---\n").runs_on("windows"));
        let s = p("---\nenvironments: [Kanban, '']\n---\n");
        assert_eq!(
            (s.environments.as_slice(), s.has_environments),
            (&["kanban".to_string(), String::new()][..], true)
        );
        assert!(!p("---\nenvironments: []\n---\n").has_environments);
        // Conditions: a string iterates its characters; null cannot be iterated.
        let s = p("---\nmetadata:\n  hermes:\n    requires_tools: ab\n    fallback_for_toolsets: [web, 3]\n---\n");
        assert_eq!(s.conditions.requires_tools, ["a", "b"]);
        assert_eq!(s.conditions.fallback_for_toolsets, ["web"]);
        assert!(!s.conditions.never_with_tools);
        let s = p("---\nmetadata:\n  hermes:\n    requires_tools:\n---\n");
        assert!(s.conditions.never_with_tools);
        // YAML serde_yaml refuses but PyYAML reads (an integer wider than 64 bits): its
        // conditions are unknown here, so the skill is hidden wherever tools are known.
        let s = p("---\nname: x\nbuild: 99999999999999999999\nmetadata:\n  hermes:\n    requires_toolsets: [browser]\n---\n");
        assert!(s.conditions.never_with_tools, "{:?}", s.notes);
        // Invalid YAML without conditions is offered through the fallback, as by Hermes;
        // so is YAML both parsers refuse, conditions or not (Hermes' fallback reads none).
        let s = p("---\nname: x\ndescription: a: b: c\n---\n");
        assert!(!s.conditions.never_with_tools);
        let s = p(
            "---\nname: x\ntags: [\"open\nmetadata:\n  hermes:\n    requires_toolsets: [t]\n---\n",
        );
        assert!(!s.conditions.never_with_tools, "{:?}", s.notes);
    }
}
