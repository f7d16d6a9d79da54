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

/// Where a skill was found, which decides its id and its rank in a name clash.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Origin {
    /// `<home>/skills`.
    Local,
    /// The n-th entry of `skills.external_dirs`.
    External(u32),
    /// `<home>/plugins/<name>/skills`.
    Plugin(String),
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
}

impl Conditions {
    /// Whether there is no condition at all.
    pub fn is_empty(&self) -> bool {
        self.requires_toolsets.is_empty()
            && self.requires_tools.is_empty()
            && self.fallback_for_toolsets.is_empty()
            && self.fallback_for_tools.is_empty()
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
    /// Hermes `environments` the skill is limited to (`metadata.hermes.environments`);
    /// empty means every environment.
    pub environments: Vec<String>,
    /// Fallbacks taken while parsing, worth telling the user about.
    pub notes: Vec<String>,
    /// Possible prompt injections in the name or description.
    pub flags: Vec<String>,
}

/// Why a SKILL.md could not be turned into a skill at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, Deserialize)]
pub enum Rejection {
    /// The bytes are not UTF-8 (Hermes skips these too).
    #[error("not valid UTF-8 (first bad byte at offset {0})")]
    NotUtf8(usize),
    /// The file holds NUL bytes: a binary file, not Markdown.
    #[error("binary file (NUL byte at offset {0})")]
    Binary(usize),
}

/// Parses the bytes of a SKILL.md found at `location`.
pub fn parse(bytes: &[u8], location: &Location) -> Result<Skill, Rejection> {
    if let Some(at) = bytes.iter().position(|&b| b == 0) {
        return Err(Rejection::Binary(at));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| Rejection::NotUtf8(e.valid_up_to()))?;
    Ok(parse_text(text, location))
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
        let ws = after.len() - after.trim_start().len();
        // `\s*\n` backtracks to the last newline inside the whitespace run.
        if let Some(nl) = after[..ws].rfind('\n') {
            let end = start + 4 + nl + 1;
            return (Some(&rest[..start]), &rest[end..]);
        }
        from = start + 1;
    }
    (None, content)
}

/// Parses SKILL.md text found at `location`.
pub fn parse_text(content: &str, location: &Location) -> Skill {
    let mut notes = Vec::new();
    let (yaml, body) = split_frontmatter(content);
    let front: Vec<(String, Value)> = match yaml {
        None => {
            notes.push(
                "no YAML frontmatter; name and description come from the folder and body".into(),
            );
            Vec::new()
        }
        Some(yaml) => {
            match serde_yaml::from_str::<Value>(yaml) {
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
                    naive_key_values(yaml)
                }
            }
        }
    };
    let get = |key: &str| front.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v);

    let dir_name = location.dir_name().to_owned();
    let mut name = get("name")
        .and_then(scalar_string)
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    if name.is_empty() {
        name = dir_name.clone();
    }
    if name.chars().count() > MAX_NAME_CHARS {
        notes.push(format!(
            "name longer than {MAX_NAME_CHARS} characters was cut"
        ));
        name = name.chars().take(MAX_NAME_CHARS).collect();
    }

    let mut description = get("description")
        .and_then(scalar_string)
        .map(|s| trim_quotes(s.trim()).to_owned())
        .unwrap_or_default();
    if description.is_empty() {
        description = body
            .lines()
            .map(str::trim)
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
    let conditions = Conditions {
        requires_toolsets: string_list(hermes.and_then(|h| h.get("requires_toolsets"))),
        requires_tools: string_list(hermes.and_then(|h| h.get("requires_tools"))),
        fallback_for_toolsets: string_list(hermes.and_then(|h| h.get("fallback_for_toolsets"))),
        fallback_for_tools: string_list(hermes.and_then(|h| h.get("fallback_for_tools"))),
    };

    let mut flags = Vec::new();
    for (field, text) in [("name", &name), ("description", &description)] {
        for flag in crate::safety::flags(text) {
            flags.push(format!("{field}: {flag}; neutralised in what is injected"));
        }
    }
    let environments = string_list(hermes.and_then(|h| h.get("environments")));

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
        platforms: string_list(get("platforms")),
        triggers: string_list(get("triggers")),
        tags,
        conditions,
        when_to_use: get("when_to_use")
            .or_else(|| get("when-to-use"))
            .and_then(scalar_string)
            .map(|s| s.trim().to_owned())
            .unwrap_or_default(),
        body: body.chars().take(BODY_CHARS).collect(),
        environments,
        notes,
        flags,
    }
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

/// Whether a skill limited to `platforms` may be offered on `os` (see [`Skill::runs_on`]).
pub fn runs_on(platforms: &[String], os: &str) -> bool {
    let current = python_platform(os);
    platforms.is_empty()
        || platforms.iter().any(|p| {
            let p = p.trim().to_lowercase();
            current.starts_with(python_platform(&p))
        })
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
    yaml.trim()
        .split('\n')
        .filter_map(|line| {
            let (k, v) = line.split_once(':')?;
            Some((k.trim().to_owned(), Value::String(v.trim().to_owned())))
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
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect(),
        Some(other) => {
            let Some(s) = scalar_string(other) else {
                return Vec::new();
            };
            let s = s.trim();
            let s = s
                .strip_prefix('[')
                .and_then(|s| s.strip_suffix(']'))
                .unwrap_or(s);
            s.split(',')
                .map(|t| trim_quotes(t.trim()).to_owned())
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
        )
        .unwrap();
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
        let s = parse(md.as_bytes(), &loc(&["x", "broken", "SKILL.md"])).unwrap();
        assert_eq!(s.name, "broken");
        assert_eq!(s.description, "unclosed");
        assert!(s.notes[0].contains("not valid YAML"));
    }

    #[test]
    fn defaults_come_from_folder_and_body() {
        let md = "# Title\n\nFirst real line.\nSecond.";
        let s = parse(md.as_bytes(), &loc(&["tools", "my-tool", "SKILL.md"])).unwrap();
        assert_eq!(s.name, "my-tool");
        assert_eq!(s.description, "First real line.");
        let list = "---\n- a\n- b\n---\nText\n";
        let s = parse(list.as_bytes(), &loc(&["my-tool", "SKILL.md"])).unwrap();
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
    }

    #[test]
    fn tag_strings_are_split_like_hermes() {
        let md = "---\ntags: \"[a, 'b', c]\"\n---\n";
        let s = parse(md.as_bytes(), &loc(&["k", "SKILL.md"])).unwrap();
        assert_eq!(s.tags, ["a", "b", "c"]);
    }

    #[test]
    fn platforms_match_like_hermes() {
        let mut s = parse(b"---\nplatforms: [macos]\n---\n", &loc(&["a", "SKILL.md"])).unwrap();
        assert!(s.runs_on("macos"));
        assert!(!s.runs_on("linux"));
        s.platforms = vec!["Linux".into()];
        assert!(s.runs_on("linux"));
        s.platforms.clear();
        assert!(s.runs_on("windows"));
    }

    #[test]
    fn binary_and_non_utf8_are_rejected() {
        assert_eq!(
            parse(b"ab\0cd", &loc(&["a", "SKILL.md"])),
            Err(Rejection::Binary(2))
        );
        assert_eq!(
            parse(b"ab\xffcd", &loc(&["a", "SKILL.md"])),
            Err(Rejection::NotUtf8(2))
        );
    }
}
