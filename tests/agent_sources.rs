//! Other agents' skill folders as profiles of the index (`skillidx sync --agent`): each
//! agent's user scope, and each project root, indexed with that agent's precedence for a
//! shared name; read by `search`/`list --agent`, the agent hook (the event's `cwd` picks the
//! project) and the MCP server's `search_skills(agent)`. Real binary, real folders, a
//! temporary `HOME`.

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A user's home with skills of several agents, and a git project with its own.
struct World {
    dir: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let w = World {
            dir: tempfile::tempdir().unwrap(),
        };
        std::fs::create_dir_all(w.project().join(".git")).unwrap();
        std::fs::create_dir_all(w.project().join("src/deep")).unwrap();
        w
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn project(&self) -> PathBuf {
        self.dir.path().join("proj")
    }

    fn skill(&self, dir: &Path, name: &str, description: &str) {
        let d = dir.join(name);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: {description}\n---\nSteps.\n"),
        )
        .unwrap();
    }

    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_skillidx"));
        c.args(args)
            .env("HOME", self.home())
            .env_remove("HERMES_HOME")
            .env_remove("CODEX_HOME")
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

    fn stdout(&self, args: &[&str]) -> String {
        String::from_utf8(self.run(args).stdout).unwrap()
    }

    /// `list --json` for an agent, from `cwd`: each skill's (id, path, offered).
    fn listed(&self, agent: &str, cwd: &Path) -> Vec<(String, String, bool)> {
        let cwd = cwd.to_str().unwrap();
        let out = self.stdout(&["list", "--agent", agent, "--cwd", cwd, "--json"]);
        let v: Value = serde_json::from_str(&out).unwrap();
        v.as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["id"].as_str().unwrap().to_owned(),
                    s["path"].as_str().unwrap().to_owned(),
                    s["inactive"].is_null(),
                )
            })
            .collect()
    }

    /// The offered skill called `id`'s path.
    fn offered_path(&self, agent: &str, cwd: &Path, id: &str) -> Option<String> {
        self.listed(agent, cwd)
            .into_iter()
            .find(|(i, _, offered)| i == id && *offered)
            .map(|(_, p, _)| p)
    }
}

fn claude_world() -> World {
    let w = World::new();
    let personal = w.home().join(".claude/skills");
    let project = w.project().join(".claude/skills");
    w.skill(
        &personal,
        "pdf-tools",
        "Merge and split PDF files (personal copy)",
    );
    w.skill(
        &project,
        "pdf-tools",
        "Merge and split PDF files (project copy)",
    );
    w.skill(
        &project,
        "deploy",
        "Deploy the service to kubernetes with helm",
    );
    w.skill(
        &w.home().join(".claude/plugins/acme/skills"),
        "lint",
        "Lint python code with ruff",
    );
    w
}

#[test]
fn claude_code_personal_skills_win_over_the_projects_and_plugins_are_namespaced() {
    let w = claude_world();
    let proj = w.project().to_str().unwrap().to_owned();
    w.run(&["sync", "--agent", "claude-code", "--cwd", &proj]);
    let inside = w.project().join("src/deep");
    let pdf = w.offered_path("claude-code", &inside, "pdf-tools").unwrap();
    assert!(pdf.contains("/home/.claude/skills/"), "{pdf}");
    assert!(w.offered_path("claude-code", &inside, "deploy").is_some());
    assert!(w
        .offered_path("claude-code", &inside, "acme:lint")
        .is_some());
    // Outside the project: the user's skills only.
    let outside = w.dir.path();
    assert!(w.offered_path("claude-code", outside, "deploy").is_none());
    assert!(w
        .offered_path("claude-code", outside, "pdf-tools")
        .is_some());
}

#[test]
fn copilot_and_codex_put_project_skills_first() {
    let w = World::new();
    w.skill(
        &w.home().join(".copilot/skills"),
        "pdf-tools",
        "PDF tools (personal)",
    );
    w.skill(
        &w.project().join(".github/skills"),
        "pdf-tools",
        "PDF tools (workspace)",
    );
    w.skill(
        &w.home().join(".agents/skills"),
        "review",
        "Review a pull request (user)",
    );
    w.skill(
        &w.project().join(".agents/skills"),
        "review",
        "Review a pull request (repo)",
    );
    let proj = w.project().to_str().unwrap().to_owned();
    w.run(&["sync", "--agent", "copilot", "--cwd", &proj]);
    w.run(&["sync", "--agent", "codex", "--cwd", &proj]);
    let p = w.project();
    let pdf = w.offered_path("copilot", &p, "pdf-tools").unwrap();
    assert!(pdf.contains("/proj/.github/skills/"), "{pdf}");
    let review = w.offered_path("codex", &p, "review").unwrap();
    assert!(review.contains("/proj/.agents/skills/"), "{review}");
    // Copilot also reads ~/.agents/skills; Codex does not read ~/.copilot.
    assert!(w.offered_path("copilot", &p, "review").is_some());
    assert!(w.offered_path("codex", &p, "pdf-tools").is_none());
}

#[test]
fn an_unchanged_agent_sync_writes_nothing_and_all_profiles_keeps_agent_profiles() {
    let w = claude_world();
    // A Hermes home next to the agents: `--agent all` indexes it too, in its own file.
    let hermes = w.dir.path().join("hermes");
    w.skill(
        &hermes.join("skills/devops"),
        "terraform",
        "Plan and apply terraform",
    );
    let h = hermes.to_str().unwrap().to_owned();
    let proj = w.project().to_str().unwrap().to_owned();
    let json = |args: &[&str]| -> Vec<Value> { serde_json::from_str(&w.stdout(args)).unwrap() };
    let first = json(&[
        "sync", "--agent", "all", "--home", &h, "--cwd", &proj, "--json",
    ]);
    let names: Vec<&str> = first
        .iter()
        .map(|r| r["profile"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"default"), "{names:?}");
    assert!(names.contains(&"agent:claude-code"), "{names:?}");
    assert!(
        names.iter().any(|n| n.starts_with("agent:claude-code@")),
        "{names:?}"
    );
    assert!(names.contains(&"agent:opencode"), "{names:?}");
    let again = json(&[
        "sync", "--agent", "all", "--home", &h, "--cwd", &proj, "--json",
    ]);
    assert!(again.iter().all(|r| r["committed"] == false), "{again:?}");
    assert!(again.iter().all(|r| r["parsed"] == 0), "{again:?}");
    // A Hermes `--all-profiles` sync leaves the agents' profiles alone.
    w.run(&["sync", "--all-profiles", "--home", &h]);
    let out = w.stdout(&[
        "search",
        "--agent",
        "claude-code",
        "--home",
        &h,
        "--cwd",
        &proj,
        "deploy to kubernetes",
    ]);
    assert!(out.contains("deploy"), "{out}");
}

#[test]
fn the_hook_answers_from_the_agents_project_profile_by_the_events_cwd() {
    let w = claude_world();
    let proj = w.project().to_str().unwrap().to_owned();
    w.run(&["sync", "--agent", "claude-code", "--cwd", &proj]);
    let ask = |cwd: &Path| -> String {
        let mut child = w
            .cmd(&["hook", "claude-code"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let event = serde_json::json!({
            "session_id": "s", "transcript_path": "/t.jsonl", "cwd": cwd,
            "hook_event_name": "UserPromptSubmit",
            "prompt": "deploy the service to kubernetes with helm",
        });
        child
            .stdin
            .take()
            .unwrap()
            .write_all(event.to_string().as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let inside = ask(&w.project().join("src"));
    let v: Value = serde_json::from_str(&inside).unwrap();
    let context = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        context.contains("/proj/.claude/skills/deploy/SKILL.md"),
        "{context}"
    );
    // Outside the project no skill of its is known: nothing is injected.
    assert_eq!(ask(w.dir.path()), "");
}

#[test]
fn the_mcp_server_searches_the_agent_a_call_names() {
    let w = claude_world();
    w.skill(
        &w.home().join(".agents/skills"),
        "changelog",
        "Write a changelog entry",
    );
    let lines = [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_skills","arguments":{"query":"deploy the service to kubernetes"}}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_skills","arguments":{"query":"write a changelog entry","agent":"codex"}}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_skills","arguments":{"query":"write a changelog entry","agent":"nobody"}}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_skill","arguments":{"name":"acme:lint"}}}"#,
    ];
    let mut child = w
        .cmd(&["mcp", "--agent", "claude-code"])
        .current_dir(w.project())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let input = lines.join("\n") + "\n";
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let replies: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let text = |i: usize| {
        replies[i]["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    let error = |i: usize| replies[i]["result"]["isError"].as_bool().unwrap();
    assert!(
        text(0).contains("/proj/.claude/skills/deploy/SKILL.md"),
        "{}",
        text(0)
    );
    assert!(text(1).contains("changelog"), "{}", text(1));
    assert!(!error(1));
    assert!(error(2), "{}", text(2));
    assert!(text(3).contains("Lint python code"), "{}", text(3));
}
