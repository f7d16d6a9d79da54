//! `skillidx agents install|uninstall`: the MCP server entry and the per-prompt hook, written
//! into Claude Code's or Codex's own settings files.
//!
//! | agent | scope | MCP server | `UserPromptSubmit` hook |
//! |---|---|---|---|
//! | Claude Code | user | `~/.claude.json`, `mcpServers.skillidx` | `~/.claude/settings.json` |
//! | Claude Code | project | `<dir>/.mcp.json`, `mcpServers.skillidx` | `<dir>/.claude/settings.json` |
//! | Codex | user | `$CODEX_HOME/config.toml`, `[mcp_servers.skillidx]` | `$CODEX_HOME/hooks.json` |
//! | Codex | project | `<dir>/.codex/config.toml` | `<dir>/.codex/hooks.json` |
//!
//! These files belong to the agent and to the user, so every edit is surgical: the entry is
//! added or removed as text (`json_text`, `toml_edit`) and every other byte stays where it
//! was, so `uninstall` after `install` gives the file back byte for byte (a file that install
//! created is removed again). A file that does not parse is refused and left untouched, and
//! all files are checked before the first is written. Each file is replaced atomically
//! (`replace::replace_file`). Installing again changes nothing, or only the entry
//! when its command moved.

use super::json_text::{self, Node};
use super::Agent;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// The name of the MCP server entry.
pub const SERVER_NAME: &str = "skillidx";
/// Seconds the agent waits for the hook (it answers in milliseconds; the default of both
/// agents is a minute, too long to hold up a prompt).
pub const HOOK_TIMEOUT_S: u64 = 10;
/// What a JSON settings file that install creates starts as, and what uninstall's removal
/// leaves of it.
const EMPTY_JSON: &str = "{}\n";

/// Why an install could not be made.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    /// The agent has no settings this writes.
    #[error("skillidx installs into claude-code and codex, not {0}")]
    Unsupported(&'static str),
    /// A settings file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A settings file is not what its agent reads; it is left as it is.
    #[error("{} is not valid {format}, so it was left untouched: {reason}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// `JSON` or `TOML`.
        format: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// A settings file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// Whose settings: the user's, or one project's.
#[derive(Debug, Clone)]
pub struct Target {
    /// `ClaudeCode` or `Codex`.
    pub agent: Agent,
    /// The project folder, for a project install; `None`: the user's settings.
    pub project: Option<PathBuf>,
    /// The user's home folder (`~`).
    pub user_home: PathBuf,
    /// Codex's home (`$CODEX_HOME`, default `~/.codex`).
    pub codex_home: PathBuf,
}

/// What the entries run: `<program> mcp --agent <agent> <options…>` and
/// `<program> hook <agent> <options…>` (the options belong to the subcommand: the program
/// itself takes none).
#[derive(Debug, Clone)]
pub struct Commands {
    /// The skillidx program, as an absolute path (the agent's PATH may not hold it).
    pub program: PathBuf,
    /// Options both commands take, e.g. `--home /home/you/.hermes`.
    pub options: Vec<String>,
}

/// One entry in one settings file, and whether the command changed the file.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Change {
    /// The settings file.
    pub path: PathBuf,
    /// `mcp server` or `hook`.
    pub entry: &'static str,
    /// Whether the file was written (or removed).
    pub changed: bool,
}

/// The kinds of entry, each in its own file format.
#[derive(Debug, Clone, Copy)]
enum Entry {
    /// `mcpServers.skillidx` in a JSON file.
    JsonServer,
    /// A `hooks.UserPromptSubmit` group in a JSON file.
    JsonHook,
    /// `[mcp_servers.skillidx]` in a TOML file.
    TomlServer,
}

impl Entry {
    fn label(self) -> &'static str {
        match self {
            Entry::JsonServer | Entry::TomlServer => "mcp server",
            Entry::JsonHook => "hook",
        }
    }

    fn format(self) -> &'static str {
        match self {
            Entry::JsonServer | Entry::JsonHook => "JSON",
            Entry::TomlServer => "TOML",
        }
    }
}

/// The files of `target` and the entry each holds.
fn files(target: &Target) -> Result<Vec<(PathBuf, Entry)>, InstallError> {
    let project = target.project.as_deref();
    Ok(match target.agent {
        Agent::ClaudeCode => {
            let (server, settings) = match project {
                Some(dir) => (dir.join(".mcp.json"), dir.join(".claude")),
                None => (
                    target.user_home.join(".claude.json"),
                    target.user_home.join(".claude"),
                ),
            };
            vec![
                (server, Entry::JsonServer),
                (settings.join("settings.json"), Entry::JsonHook),
            ]
        }
        Agent::Codex => {
            let dir = project.map_or_else(|| target.codex_home.clone(), |d| d.join(".codex"));
            vec![
                (dir.join("config.toml"), Entry::TomlServer),
                (dir.join("hooks.json"), Entry::JsonHook),
            ]
        }
        other => return Err(InstallError::Unsupported(other.name())),
    })
}

/// Writes the MCP server entry and the hook into `target`'s settings.
pub fn install(target: &Target, commands: &Commands) -> Result<Vec<Change>, InstallError> {
    edit_all(target, |entry, text| {
        put(entry, text.unwrap_or(""), target.agent, commands)
    })
}

/// Takes skillidx's MCP server entry and hooks out of `target`'s settings.
pub fn uninstall(target: &Target) -> Result<Vec<Change>, InstallError> {
    edit_all(target, |entry, text| match text {
        Some(text) => take(entry, text),
        None => Ok(None),
    })
}

/// Reads every file and computes its new text (`None`: the file should not exist) before
/// writing any, so that a malformed file stops the command with nothing changed.
fn edit_all(
    target: &Target,
    edit: impl Fn(Entry, Option<&str>) -> Result<Option<String>, String>,
) -> Result<Vec<Change>, InstallError> {
    let mut plans = Vec::new();
    for (path, entry) in files(target)? {
        let old = read(&path)?;
        let new = edit(entry, old.as_deref()).map_err(|reason| InstallError::Malformed {
            path: path.clone(),
            format: entry.format(),
            reason,
        })?;
        plans.push((path, entry, old, new));
    }
    plans
        .into_iter()
        .map(|(path, entry, old, new)| {
            let changed = old != new;
            if changed {
                write(&path, new.as_deref())?;
            }
            Ok(Change {
                path,
                entry: entry.label(),
                changed,
            })
        })
        .collect()
}

fn read(path: &Path) -> Result<Option<String>, InstallError> {
    match std::fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| InstallError::Malformed {
                path: path.to_path_buf(),
                format: "UTF-8 text",
                reason: "it holds bytes that are not UTF-8".into(),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(InstallError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

fn write(path: &Path, text: Option<&str>) -> Result<(), InstallError> {
    let result = match text {
        Some(text) => path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| crate::replace::replace_file(path, text.as_bytes())),
        None => std::fs::remove_file(path),
    };
    result.map_err(|source| InstallError::Write {
        path: path.to_path_buf(),
        source,
    })
}

/// `text` with skillidx's entry in it.
fn put(
    entry: Entry,
    text: &str,
    agent: Agent,
    commands: &Commands,
) -> Result<Option<String>, String> {
    let program = commands.program.to_string_lossy().into_owned();
    let mut server_args: Vec<String> = vec!["mcp".into(), "--agent".into(), agent.name().into()];
    server_args.extend(commands.options.iter().cloned());
    let new = match entry {
        Entry::JsonServer => {
            let server = json!({"type": "stdio", "command": program, "args": server_args});
            json_put(
                or_empty(text),
                &["mcpServers"],
                Slot::Member(SERVER_NAME),
                &server,
            )?
        }
        Entry::JsonHook => {
            let mut words = vec![program, "hook".into(), agent.name().into()];
            words.extend(commands.options.iter().cloned());
            let line = words.iter().map(|w| shell_word(w)).collect::<Vec<_>>();
            let group = json!({"hooks": [{
                "type": "command",
                "command": line.join(" "),
                "timeout": HOOK_TIMEOUT_S,
            }]});
            json_put(or_empty(text), HOOK_PATH, Slot::Item(is_our_hook), &group)?
        }
        Entry::TomlServer => {
            super::toml_text::put_server(text, SERVER_NAME, &program, &server_args)?
        }
    };
    Ok(Some(new))
}

/// `text` without skillidx's entry; an emptied file that install would have created is gone.
fn take(entry: Entry, text: &str) -> Result<Option<String>, String> {
    let new = match entry {
        Entry::JsonServer => json_take(text, &["mcpServers"], Slot::Member(SERVER_NAME))?,
        Entry::JsonHook => json_take(text, HOOK_PATH, Slot::Item(is_our_hook))?,
        Entry::TomlServer => super::toml_text::take_server(text, SERVER_NAME)?,
    };
    let emptied = match entry {
        Entry::TomlServer => new.is_empty() && !text.is_empty(),
        _ => new == EMPTY_JSON && text != EMPTY_JSON,
    };
    Ok((!emptied).then_some(new))
}

fn or_empty(text: &str) -> &str {
    if text.trim().is_empty() {
        EMPTY_JSON
    } else {
        text
    }
}

/// Where both agents keep the prompt hooks.
const HOOK_PATH: &[&str] = &["hooks", "UserPromptSubmit"];

/// The entry of a container: an object's member, or the array items a test picks out.
#[derive(Clone, Copy)]
enum Slot<'a> {
    Member(&'a str),
    Item(fn(&Value) -> bool),
}

/// A hook group skillidx wrote: one whose commands run `skillidx hook …` (from any path, so
/// a moved binary's entry is still found and replaced).
fn is_our_hook(group: &Value) -> bool {
    let runs_ours = |h: &Value| {
        let words = shell_words(h.get("command").and_then(Value::as_str).unwrap_or(""));
        words.len() >= 2
            && Path::new(&words[0])
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("skillidx"))
            && words.iter().any(|w| w == "hook")
    };
    group
        .get("hooks")
        .and_then(Value::as_array)
        .is_some_and(|hooks| !hooks.is_empty() && hooks.iter().all(runs_ours))
}

/// The container at `path` (objects all the way), or the depth where the path stops and the
/// object there.
fn walk<'n>(root: &'n Node, path: &[&str]) -> Result<(usize, &'n Node), String> {
    let mut node = root;
    for (depth, key) in path.iter().enumerate() {
        if node.members().is_none() {
            return Err(format!("`{}` is not an object", dotted(&path[..depth])));
        }
        match node.member(key) {
            Some((_, m)) => node = &m.value,
            None => return Ok((depth, node)),
        }
    }
    Ok((path.len(), node))
}

fn dotted(path: &[&str]) -> String {
    if path.is_empty() {
        "the document".into()
    } else {
        path.join(".")
    }
}

/// Checks that `text` is JSON and gives its spans.
fn parse_json(text: &str) -> Result<Node, String> {
    serde_json::from_str::<Value>(text).map_err(|e| e.to_string())?;
    json_text::parse(text).ok_or_else(|| "not one JSON value".to_string())
}

/// `text` with `value` at `slot` of the container at `path`, made when missing.
fn json_put(text: &str, path: &[&str], slot: Slot, value: &Value) -> Result<String, String> {
    let root = parse_json(text)?;
    let (depth, node) = walk(&root, path)?;
    if depth < path.len() {
        let mut nested = match slot {
            Slot::Member(key) => json!({ key: value }),
            Slot::Item(_) => json!([value]),
        };
        for key in path[depth + 1..].iter().rev() {
            nested = json!({ *key: nested });
        }
        return json_text::insert_member(text, node, path[depth], &nested)
            .ok_or_else(|| format!("`{}` is not an object", dotted(&path[..depth])));
    }
    let found = find(text, node, slot, path)?;
    Ok(match found.first() {
        Some(&(_, start, end)) if value_at(text, start, end).as_ref() == Some(value) => {
            text.to_owned()
        }
        Some(&(idx, _, _)) => {
            let old = entry_node(node, slot, idx).ok_or("entry vanished")?;
            json_text::replace_value(text, old, value)
        }
        None => match slot {
            Slot::Member(key) => json_text::insert_member(text, node, key, value),
            Slot::Item(_) => json_text::append_item(text, node, value),
        }
        .ok_or_else(|| format!("`{}` is not the container expected", dotted(path)))?,
    })
}

/// `text` without skillidx's entries at `slot` of the container at `path`, and without the
/// containers that leaves empty.
fn json_take(text: &str, path: &[&str], slot: Slot) -> Result<String, String> {
    let mut text = text.to_owned();
    loop {
        let root = parse_json(&text)?;
        let (depth, node) = walk(&root, path)?;
        if depth < path.len() {
            return Ok(text);
        }
        let Some(&(idx, _, _)) = find(&text, node, slot, path)?.first() else {
            break;
        };
        text = match slot {
            Slot::Member(_) => json_text::remove_member(&text, node, idx),
            Slot::Item(_) => json_text::remove_item(&text, node, idx),
        }
        .ok_or("entry vanished")?;
    }
    for depth in (1..=path.len()).rev() {
        let root = parse_json(&text)?;
        let (_, node) = walk(&root, &path[..depth])?;
        let empty = node.members().map(<[_]>::is_empty).unwrap_or(false)
            || node.items().map(<[_]>::is_empty).unwrap_or(false);
        if !empty {
            break;
        }
        let (_, parent) = walk(&root, &path[..depth - 1])?;
        let (idx, _) = parent.member(path[depth - 1]).ok_or("container vanished")?;
        text = json_text::remove_member(&text, parent, idx).ok_or("container vanished")?;
    }
    Ok(text)
}

/// The entries of `node` that `slot` picks: (index, start, end).
fn find(
    text: &str,
    node: &Node,
    slot: Slot,
    path: &[&str],
) -> Result<Vec<(usize, usize, usize)>, String> {
    match slot {
        Slot::Member(key) => {
            let members = node
                .members()
                .ok_or_else(|| format!("`{}` is not an object", dotted(path)))?;
            Ok(members
                .iter()
                .enumerate()
                .rev()
                .filter(|(_, m)| m.key == key)
                .take(1)
                .map(|(i, m)| (i, m.value.start, m.value.end))
                .collect())
        }
        Slot::Item(ours) => {
            let items = node
                .items()
                .ok_or_else(|| format!("`{}` is not an array", dotted(path)))?;
            Ok(items
                .iter()
                .enumerate()
                .filter(|(_, n)| value_at(text, n.start, n.end).is_some_and(|v| ours(&v)))
                .map(|(i, n)| (i, n.start, n.end))
                .collect())
        }
    }
}

fn entry_node<'n>(node: &'n Node, slot: Slot, idx: usize) -> Option<&'n Node> {
    match slot {
        Slot::Member(_) => node.members()?.get(idx).map(|m| &m.value),
        Slot::Item(_) => node.items()?.get(idx),
    }
}

fn value_at(text: &str, start: usize, end: usize) -> Option<Value> {
    serde_json::from_str(text.get(start..end)?).ok()
}

/// `word` as one word for the shell the agents run hook commands with.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The words of a command line as [`shell_word`] writes them (plain or single-quoted).
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quoted = false;
    let mut any = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            '\\' if !quoted => {
                if let Some(n) = chars.next() {
                    word.push(n);
                }
            }
            c if c.is_whitespace() && !quoted => {
                if any || !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                    any = false;
                }
            }
            c => word.push(c),
        }
    }
    if any || !word.is_empty() {
        words.push(word);
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shell_words_read_back_what_shell_word_writes() {
        let words = [
            "/opt/my tools/skillidx",
            "--home",
            "/h/it's",
            "hook",
            "codex",
        ];
        let line: Vec<String> = words.iter().map(|w| shell_word(w)).collect();
        assert_eq!(shell_words(&line.join(" ")), words);
    }

    #[test]
    fn a_hook_group_is_ours_only_when_it_runs_skillidx_hook() {
        let ours = json!({"hooks": [{"type": "command", "command": "/x/skillidx hook codex"}]});
        let theirs = json!({"hooks": [{"type": "command", "command": "./check.sh hook"}]});
        let mixed = json!({"hooks": [
            {"type": "command", "command": "skillidx hook codex"},
            {"type": "command", "command": "lint"}
        ]});
        assert!(is_our_hook(&ours));
        assert!(!is_our_hook(&theirs));
        assert!(
            !is_our_hook(&mixed),
            "a group holding the user's hooks is theirs"
        );
    }

    #[test]
    fn put_then_take_restores_nested_json() {
        let text = "{\n  \"hooks\": {\n    \"Stop\": []\n  },\n  \"model\": \"x\"\n}\n";
        let group = json!({"hooks": [{"type": "command", "command": "skillidx hook codex"}]});
        let added = json_put(text, HOOK_PATH, Slot::Item(is_our_hook), &group).unwrap();
        let v: Value = serde_json::from_str(&added).unwrap();
        assert_eq!(v["hooks"]["UserPromptSubmit"][0], group);
        assert_eq!(v["hooks"]["Stop"], json!([]));
        assert_eq!(
            json_put(&added, HOOK_PATH, Slot::Item(is_our_hook), &group).unwrap(),
            added,
            "installing twice changes nothing"
        );
        assert_eq!(
            json_take(&added, HOOK_PATH, Slot::Item(is_our_hook)).unwrap(),
            text
        );
    }

    #[test]
    fn a_container_of_the_wrong_type_is_refused() {
        let err = json_put(
            "{\"hooks\": 3}",
            HOOK_PATH,
            Slot::Item(is_our_hook),
            &json!({}),
        );
        assert!(err.unwrap_err().contains("`hooks` is not an object"));
    }
}
