//! `skillidx agents install|uninstall claude-code|codex`: the MCP server entry and the
//! `UserPromptSubmit` hook written into copies of realistic settings files (a Codex
//! config.toml with comments included), every other byte kept, `uninstall` giving each file
//! back byte for byte, a second install changing nothing, and a malformed file refused with
//! nothing written. The installed hook command is then run as the agent would run it. Real
//! binary, a temporary `HOME` and `CODEX_HOME`.

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// Claude Code's user settings as people keep them: a schema, permissions, their own hooks.
const CLAUDE_SETTINGS: &str = r#"{
  "$schema": "https://json.schemastore.org/claude-code-settings.json",
  "model": "opus",
  "permissions": {
    "allow": ["Bash(npm run lint)", "Read(~/.zshrc)"],
    "deny": ["Read(./.env)"]
  },
  "env": {"CLAUDE_CODE_ENABLE_TELEMETRY": "0"},
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Bash",
        "hooks": [{"type": "command", "command": "~/.claude/hooks/check-bash.sh"}]
      }
    ],
    "UserPromptSubmit": [
      {"hooks": [{"type": "command", "command": "python3 ~/.claude/hooks/log_prompt.py"}]}
    ]
  },
  "statusLine": {"type": "command", "command": "~/.claude/statusline.sh"}
}
"#;

/// `~/.claude.json`: Claude Code's own state, written compactly, with a user MCP server.
const CLAUDE_STATE: &str = r#"{"numStartups":42,"theme":"dark","mcpServers":{"github":{"type":"stdio","command":"npx","args":["-y","@modelcontextprotocol/server-github"],"env":{}}},"projects":{"/home/me/src/app":{"allowedTools":[],"mcpServers":{}}}}"#;

/// Codex's config.toml, with comments, an MCP server of the user's and profiles after it.
const CODEX_CONFIG: &str = r#"# ~/.codex/config.toml
model = "gpt-5-codex"          # default model
approval_policy = "on-request"

[features]
# hooks are on by default in current builds
codex_hooks = true

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]   # the docs server
env = { "DOCS_TOKEN" = "xyz" }

# Profiles: `codex --profile fast`
[profiles.fast]
model = "o4-mini"

[projects."/home/me/src/app"]
trust_level = "trusted"
"#;

struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let w = World {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(w.project().join(".git")).unwrap();
        let skill = w.home().join(".claude/skills/pdf-to-markdown");
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: pdf-to-markdown\ndescription: Convert PDF documents into clean markdown text.\n---\nSteps.\n",
        )
        .unwrap();
        let skill = w.home().join(".agents/skills/changelog-writer");
        std::fs::create_dir_all(&skill).unwrap();
        std::fs::write(
            skill.join("SKILL.md"),
            "---\nname: changelog-writer\ndescription: Write a changelog entry from git commits.\n---\nSteps.\n",
        )
        .unwrap();
        w
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn codex_home(&self) -> PathBuf {
        self.dir.path().join("codex-home")
    }

    fn project(&self) -> PathBuf {
        self.dir.path().join("proj")
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_skillidx"));
        c.args(args)
            .env("HOME", self.home())
            .env("CODEX_HOME", self.codex_home())
            .env_remove("HERMES_HOME")
            .env_remove("XDG_CONFIG_HOME")
            .current_dir(self.dir.path());
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        let out = self.cmd(args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    fn write(&self, path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&read(path)).unwrap()
}

/// The command of skillidx's hook group in a hooks file.
fn our_hook_command(hooks: &Value) -> String {
    let groups = hooks["hooks"]["UserPromptSubmit"].as_array().unwrap();
    let ours: Vec<&Value> = groups
        .iter()
        .filter(|g| g.to_string().contains(" hook "))
        .collect();
    assert_eq!(ours.len(), 1, "one skillidx hook group: {groups:?}");
    assert_eq!(ours[0]["hooks"][0]["type"], "command");
    assert_eq!(ours[0]["hooks"][0]["timeout"], 10);
    ours[0]["hooks"][0]["command"].as_str().unwrap().to_owned()
}

/// Runs an installed hook command through the shell, as the agent does, with a prompt event.
fn run_hook(w: &World, command: &str, prompt: &str) -> Value {
    let event = serde_json::json!({
        "session_id": "s1", "transcript_path": "/tmp/t.jsonl", "cwd": w.project(),
        "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": prompt,
    });
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .env("HOME", w.home())
        .env("CODEX_HOME", w.codex_home())
        .env_remove("HERMES_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(event.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

#[test]
fn claude_code_user_install_adds_two_entries_and_uninstall_gives_the_files_back() {
    let w = World::new();
    let settings = w.home().join(".claude/settings.json");
    let state = w.home().join(".claude.json");
    w.write(&settings, CLAUDE_SETTINGS);
    w.write(&state, CLAUDE_STATE);

    w.run(&["agents", "install", "claude-code"]);
    let s = json(&settings);
    let before: Value = serde_json::from_str(CLAUDE_SETTINGS).unwrap();
    for key in ["$schema", "model", "permissions", "env", "statusLine"] {
        assert_eq!(s[key], before[key], "{key} kept");
    }
    assert_eq!(s["hooks"]["PreToolUse"], before["hooks"]["PreToolUse"]);
    assert_eq!(
        s["hooks"]["UserPromptSubmit"][0], before["hooks"]["UserPromptSubmit"][0],
        "the user's own prompt hook stays first"
    );
    let command = our_hook_command(&s);
    assert!(command.ends_with(" hook claude-code"), "{command}");
    let st = json(&state);
    assert_eq!(st["mcpServers"]["github"]["command"], "npx");
    assert_eq!(
        st["projects"],
        serde_json::from_str::<Value>(CLAUDE_STATE).unwrap()["projects"]
    );
    let server = &st["mcpServers"]["skillidx"];
    assert_eq!(server["command"], env!("CARGO_BIN_EXE_skillidx"));
    assert_eq!(
        server["args"],
        serde_json::json!(["mcp", "--agent", "claude-code"])
    );

    // The install indexed Claude Code's skills, so the hook answers at once.
    let answer = run_hook(&w, &command, "turn this PDF document into markdown");
    let context = answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(context.contains("pdf-to-markdown"), "{context}");
    assert_eq!(
        run_hook(&w, &command, "thanks, have a nice weekend!"),
        Value::Null
    );

    let installed = (read(&settings), read(&state));
    w.run(&["agents", "install", "claude-code"]);
    assert_eq!(
        (read(&settings), read(&state)),
        installed,
        "a second install changes nothing"
    );

    w.run(&["agents", "uninstall", "claude-code"]);
    assert_eq!(read(&settings), CLAUDE_SETTINGS);
    assert_eq!(read(&state), CLAUDE_STATE);
    let out = w.run(&["agents", "uninstall", "claude-code"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("found no"));
}

/// Starts an installed MCP server entry as the agent does and returns its answer to
/// `initialize`.
fn start_server(w: &World, server: &Value) -> Value {
    let args: Vec<&str> = server["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let mut child = Command::new(server["command"].as_str().unwrap())
        .args(&args)
        .env("HOME", w.home())
        .env_remove("HERMES_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let init = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"}}});
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{init}").unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(first.lines().next().unwrap_or("null")).unwrap()
}

#[test]
fn with_a_hermes_home_the_installed_commands_name_it_and_run() {
    // A machine with a Hermes home: install writes `--home` into both entries, after the
    // subcommand (the program itself takes no option), and both commands start.
    let w = World::new();
    let hermes = w.home().join(".hermes");
    w.write(
        &hermes.join("skills/productivity/pdf-tools/SKILL.md"),
        "---\nname: pdf-tools\ndescription: Merge and split PDF files.\n---\nSteps.\n",
    );
    w.write(&hermes.join("config.yaml"), "skills: {}\n");
    w.run(&["agents", "install", "claude-code"]);
    let server = &json(&w.home().join(".claude.json"))["mcpServers"]["skillidx"];
    let home = std::fs::canonicalize(&hermes).unwrap();
    assert_eq!(
        server["args"],
        serde_json::json!(["mcp", "--agent", "claude-code", "--home", home])
    );
    let answer = start_server(&w, server);
    assert_eq!(answer["id"], 1);
    assert!(answer["result"]["serverInfo"].is_object(), "{answer}");

    let command = our_hook_command(&json(&w.home().join(".claude/settings.json")));
    assert!(command.contains(" hook claude-code --home "), "{command}");
    let answer = run_hook(&w, &command, "turn this PDF document into markdown");
    let context = answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(context.contains("pdf-to-markdown"), "{context}");
}

#[test]
fn claude_code_project_install_creates_its_files_and_uninstall_removes_them() {
    let w = World::new();
    let project = w.project();
    let p = project.to_str().unwrap();
    w.run(&["agents", "install", "claude-code", "--project", p]);
    let mcp = json(&project.join(".mcp.json"));
    assert_eq!(mcp["mcpServers"]["skillidx"]["args"][2], "claude-code");
    our_hook_command(&json(&project.join(".claude/settings.json")));
    assert!(
        !w.home().join(".claude.json").exists(),
        "the user's files are not touched"
    );

    w.run(&["agents", "uninstall", "claude-code", "--project", p]);
    assert!(!project.join(".mcp.json").exists());
    assert!(!project.join(".claude/settings.json").exists());
}

#[test]
fn codex_install_keeps_the_comments_of_config_toml() {
    let w = World::new();
    let config = w.codex_home().join("config.toml");
    let hooks = w.codex_home().join("hooks.json");
    w.write(&config, CODEX_CONFIG);

    w.run(&["agents", "install", "codex"]);
    let text = read(&config);
    let doc: toml_edit::DocumentMut = text.parse().unwrap();
    assert_eq!(
        doc["mcp_servers"]["skillidx"]["command"].as_str(),
        Some(env!("CARGO_BIN_EXE_skillidx"))
    );
    let args: Vec<&str> = doc["mcp_servers"]["skillidx"]["args"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert_eq!(args, ["mcp", "--agent", "codex"]);
    for line in CODEX_CONFIG.lines() {
        assert!(text.contains(line), "kept: {line}");
    }
    let command = our_hook_command(&json(&hooks));
    assert!(command.ends_with(" hook codex"), "{command}");
    let answer = run_hook(&w, &command, "write the changelog entry for these commits");
    let context = answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(context.contains("changelog-writer"), "{context}");

    let installed = (read(&config), read(&hooks));
    w.run(&["agents", "install", "codex"]);
    assert_eq!((read(&config), read(&hooks)), installed);

    w.run(&["agents", "uninstall", "codex"]);
    assert_eq!(read(&config), CODEX_CONFIG);
    assert!(!hooks.exists(), "the hooks file install made is gone again");
}

#[test]
fn a_moved_binary_replaces_its_entries_instead_of_adding_more() {
    let w = World::new();
    let hooks = w.codex_home().join("hooks.json");
    let old = r#"{
  "hooks": {
    "UserPromptSubmit": [
      {"hooks": [{"type": "command", "command": "/old/place/skillidx hook codex", "timeout": 10}]}
    ]
  }
}
"#;
    w.write(&hooks, old);
    w.write(
        &w.codex_home().join("config.toml"),
        "[mcp_servers.skillidx]\ncommand = \"/old/place/skillidx\"\nargs = [\"mcp\"]\n",
    );
    w.run(&["agents", "install", "codex"]);
    let command = our_hook_command(&json(&hooks));
    assert!(
        command.starts_with(env!("CARGO_BIN_EXE_skillidx")),
        "{command}"
    );
    let doc: toml_edit::DocumentMut = read(&w.codex_home().join("config.toml")).parse().unwrap();
    assert_eq!(
        doc["mcp_servers"]["skillidx"]["command"].as_str(),
        Some(env!("CARGO_BIN_EXE_skillidx"))
    );
}

#[test]
fn a_malformed_settings_file_is_refused_and_nothing_is_written() {
    let w = World::new();
    let settings = w.home().join(".claude/settings.json");
    let broken = "{\n  \"model\": \"opus\",\n  // comments are not JSON\n}\n";
    w.write(&settings, broken);
    let out = w
        .cmd(&["agents", "install", "claude-code"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(settings.to_str().unwrap()) && err.contains("not valid JSON"),
        "{err}"
    );
    assert_eq!(read(&settings), broken);
    assert!(
        !w.home().join(".claude.json").exists(),
        "checked before anything is written"
    );

    let config = w.codex_home().join("config.toml");
    w.write(&config, "[mcp_servers\ncommand = 1\n");
    let out = w.cmd(&["agents", "install", "codex"]).output().unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not valid TOML"));
    assert!(!w.codex_home().join("hooks.json").exists());

    w.write(&settings, "{\"hooks\": [1, 2]}");
    let out = w
        .cmd(&["agents", "install", "claude-code"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("`hooks` is not an object"));
}
