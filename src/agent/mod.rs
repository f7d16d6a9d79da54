//! Other agents as sources: where Claude Code, Codex, Copilot and OpenCode keep their skills,
//! in each agent's precedence order.
//!
//! Each agent reads SKILL.md folders from a user scope and, inside a project, from project
//! folders. skillidx indexes each agent as a profile of its own (`agent:<name>`), and each
//! project root as another (`agent:<name>@<root>`: the project's folders and the user's, as
//! that agent sees them there). The roots are listed winner first: on a name shared by two
//! roots, the first one's skill is the one offered (`offer::resolve`, as Hermes' local root
//! shadows its external dirs). The sources of each order are in docs/agents.md.

pub mod install;
mod json_text;
mod toml_text;

use std::path::{Path, PathBuf};

/// The prefix of every agent profile's name. Hermes profile names cannot hold `:`, so an
/// agent profile never collides with one.
pub const PROFILE_PREFIX: &str = "agent:";

/// An agent whose skill folders skillidx indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Agent {
    /// Anthropic's Claude Code.
    ClaudeCode,
    /// OpenAI's Codex.
    Codex,
    /// GitHub Copilot in VS Code.
    Copilot,
    /// OpenCode.
    OpenCode,
}

/// Whose skills a root holds, for the agent's precedence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// A project's folder.
    Project,
    /// The user's folder.
    User,
    /// Installed by an administrator, or bundled with the agent.
    System,
    /// A folder of plugins, each `<plugin>/skills` a root whose skills are named
    /// `<plugin>:<name>` (Claude Code's plugin skills).
    Plugins,
}

/// One folder an agent reads skills from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentRoot {
    /// The folder.
    pub path: PathBuf,
    /// Whose skills it holds.
    pub scope: Scope,
}

/// An agent's skill folders as seen from one place: the profile they are indexed as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDirs {
    /// The agent.
    pub agent: Agent,
    /// The project root the folders were found from, if any.
    pub project: Option<PathBuf>,
    /// The folders, winner first.
    pub roots: Vec<AgentRoot>,
}

impl Agent {
    /// Every agent, in the order `--agent all` syncs them.
    pub const ALL: [Agent; 4] = [
        Agent::ClaudeCode,
        Agent::Codex,
        Agent::Copilot,
        Agent::OpenCode,
    ];

    /// The agent's name on the command line and in profile names.
    pub fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Copilot => "copilot",
            Agent::OpenCode => "opencode",
        }
    }

    /// The agent called `name`.
    pub fn parse(name: &str) -> Option<Agent> {
        Agent::ALL.into_iter().find(|a| a.name() == name)
    }

    /// The agent's folders for a user whose home is `home`, in `project` (a project root)
    /// when given, winner first. `env` reads the environment (`CODEX_HOME`,
    /// `XDG_CONFIG_HOME`).
    pub fn dirs(
        self,
        home: &Path,
        project: Option<&Path>,
        env: impl Fn(&str) -> Option<PathBuf>,
    ) -> AgentDirs {
        let mut roots = Vec::new();
        let mut add = |path: PathBuf, scope| roots.push(AgentRoot { path, scope });
        let in_project = |add: &mut dyn FnMut(PathBuf, Scope), dirs: &[&str]| {
            if let Some(p) = project {
                for d in dirs {
                    add(p.join(d), Scope::Project);
                }
            }
        };
        match self {
            // enterprise > personal > project; plugin skills are namespaced.
            Agent::ClaudeCode => {
                add(home.join(".claude/skills"), Scope::User);
                in_project(&mut add, &[".claude/skills"]);
                add(home.join(".claude/plugins"), Scope::Plugins);
            }
            // Codex keeps every copy (repo, user, system, admin order); the first is the one
            // a prompt can name unambiguously, so it is the one offered here.
            Agent::Codex => {
                let codex_home = env("CODEX_HOME").unwrap_or_else(|| home.join(".codex"));
                in_project(&mut add, &[".agents/skills", ".codex/skills"]);
                add(home.join(".agents/skills"), Scope::User);
                add(codex_home.join("skills"), Scope::User);
                add(PathBuf::from("/etc/codex/skills"), Scope::System);
            }
            // The first found wins: workspace, then personal.
            Agent::Copilot => {
                in_project(
                    &mut add,
                    &[".github/skills", ".agents/skills", ".claude/skills"],
                );
                add(home.join(".copilot/skills"), Scope::User);
                add(home.join(".agents/skills"), Scope::User);
                add(home.join(".claude/skills"), Scope::User);
            }
            // The last loaded wins: its load order reversed.
            Agent::OpenCode => {
                let config = env("XDG_CONFIG_HOME").unwrap_or_else(|| home.join(".config"));
                in_project(&mut add, &[".opencode/skills", ".opencode/skill"]);
                add(config.join("opencode/skills"), Scope::User);
                add(config.join("opencode/skill"), Scope::User);
                in_project(&mut add, &[".agents/skills", ".claude/skills"]);
                add(home.join(".agents/skills"), Scope::User);
                add(home.join(".claude/skills"), Scope::User);
            }
        }
        AgentDirs {
            agent: self,
            project: project.map(Path::to_path_buf),
            roots,
        }
    }
}

impl AgentDirs {
    /// The name of the profile these folders are indexed as.
    pub fn profile_name(&self) -> String {
        profile_name(self.agent, self.project.as_deref())
    }

    /// Whether the project (if any) has a skill folder of this agent: without one, its
    /// profile would only repeat the user's.
    pub fn project_has_skills(&self) -> bool {
        self.roots
            .iter()
            .any(|r| r.scope == Scope::Project && r.path.is_dir())
    }
}

/// The profile name of `agent`'s skills, in `project` when given.
pub fn profile_name(agent: Agent, project: Option<&Path>) -> String {
    match project {
        Some(p) => format!("{PROFILE_PREFIX}{}@{}", agent.name(), p.display()),
        None => format!("{PROFILE_PREFIX}{}", agent.name()),
    }
}

/// Whether a stored profile is an agent's (not a Hermes profile).
pub fn is_agent_profile(name: &str) -> bool {
    name.starts_with(PROFILE_PREFIX)
}

/// The project root of a working directory: the nearest folder at or above it holding
/// `.git` (a folder, or a worktree's file), as the agents find it; none outside a repository.
pub fn project_root(cwd: &Path) -> Option<PathBuf> {
    let cwd = std::fs::canonicalize(cwd).ok()?;
    cwd.ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

/// The user's home folder (`HOME`).
pub fn user_home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<PathBuf> {
        None
    }

    fn paths(d: &AgentDirs) -> Vec<String> {
        d.roots
            .iter()
            .map(|r| r.path.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn claude_code_puts_personal_skills_before_the_projects() {
        let d = Agent::ClaudeCode.dirs(Path::new("/h"), Some(Path::new("/p")), no_env);
        assert_eq!(
            paths(&d),
            [
                "/h/.claude/skills",
                "/p/.claude/skills",
                "/h/.claude/plugins"
            ]
        );
        assert_eq!(d.profile_name(), "agent:claude-code@/p");
    }

    #[test]
    fn copilot_and_codex_put_the_project_first() {
        let d = Agent::Copilot.dirs(Path::new("/h"), Some(Path::new("/p")), no_env);
        assert_eq!(paths(&d)[0], "/p/.github/skills");
        assert_eq!(paths(&d)[3], "/h/.copilot/skills");
        let env = |k: &str| (k == "CODEX_HOME").then(|| PathBuf::from("/ch"));
        let d = Agent::Codex.dirs(Path::new("/h"), Some(Path::new("/p")), env);
        assert_eq!(
            paths(&d),
            [
                "/p/.agents/skills",
                "/p/.codex/skills",
                "/h/.agents/skills",
                "/ch/skills",
                "/etc/codex/skills"
            ]
        );
    }

    #[test]
    fn opencode_reverses_its_load_order_and_without_a_project_lists_the_user_only() {
        let d = Agent::OpenCode.dirs(Path::new("/h"), None, no_env);
        assert!(d.roots.iter().all(|r| r.scope == Scope::User));
        assert_eq!(paths(&d)[0], "/h/.config/opencode/skills");
        assert_eq!(paths(&d).last().unwrap(), "/h/.claude/skills");
        assert_eq!(d.profile_name(), "agent:opencode");
        assert!(is_agent_profile(&d.profile_name()));
        assert!(!crate::home::is_valid_profile_name(&d.profile_name()));
    }
}
