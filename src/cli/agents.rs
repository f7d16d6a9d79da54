//! `skillidx agents install|uninstall claude-code|codex`: the MCP server and the per-prompt
//! hook in the agent's own settings (`agent::install`), and a first sync of its skills.

use super::args::Common;
use super::output::outln;
use crate::agent::install::{Change, Commands, Target};
use crate::agent::Agent;
use anyhow::{Context, Result};
use clap::{Subcommand, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// What to do with an agent's settings.
#[derive(Subcommand, Debug)]
pub enum AgentsAction {
    /// Add the skillidx MCP server and the UserPromptSubmit hook to the agent's settings,
    /// then index the agent's skills.
    Install {
        /// The agent whose settings to edit.
        #[arg(id = "install_agent", value_name = "AGENT")]
        agent: Host,
        /// A project's settings (`<DIR>/.mcp.json` and `<DIR>/.claude/settings.json`, or
        /// `<DIR>/.codex/`) instead of the user's.
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// Take skillidx's MCP server and hook out of the agent's settings again.
    Uninstall {
        /// The agent whose settings to edit.
        #[arg(id = "install_agent", value_name = "AGENT")]
        agent: Host,
        /// A project's settings instead of the user's.
        #[arg(long, value_name = "DIR")]
        project: Option<PathBuf>,
        #[command(flatten)]
        common: Common,
    },
}

/// The agents whose settings skillidx writes.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Host {
    /// Claude Code.
    ClaudeCode,
    /// OpenAI Codex.
    Codex,
}

impl Host {
    fn agent(self) -> Agent {
        match self {
            Host::ClaudeCode => Agent::ClaudeCode,
            Host::Codex => Agent::Codex,
        }
    }
}

/// Runs `action`.
pub fn run(action: AgentsAction) -> Result<ExitCode> {
    let (host, project, common, installing) = match action {
        AgentsAction::Install {
            agent,
            project,
            common,
        } => (agent, project, common, true),
        AgentsAction::Uninstall {
            agent,
            project,
            common,
        } => (agent, project, common, false),
    };
    let agent = host.agent();
    let project = project
        .map(|d| std::fs::canonicalize(&d).with_context(|| format!("project {}", d.display())))
        .transpose()?;
    let target = target(agent, project.clone())?;
    let changes = if installing {
        crate::agent::install::install(&target, &commands(&common)?)?
    } else {
        crate::agent::install::uninstall(&target)?
    };
    if common.json {
        outln!("{}", serde_json::to_string_pretty(&changes)?)?;
    } else {
        print(agent, &changes, installing)?;
    }
    if installing {
        // The hook answers from the index as it is: build it now.
        let common = Common {
            agent: Some(agent.name().into()),
            cwd: project.or(common.cwd.clone()),
            ..common
        };
        return super::sync::run(super::sync::SyncArgs::of(common));
    }
    Ok(ExitCode::SUCCESS)
}

fn target(agent: Agent, project: Option<PathBuf>) -> Result<Target> {
    let user_home = crate::agent::user_home().context("HOME is not set")?;
    let codex_home = std::env::var_os("CODEX_HOME")
        .filter(|v| !v.is_empty())
        .map_or_else(|| user_home.join(".codex"), PathBuf::from);
    Ok(Target {
        agent,
        project,
        user_home,
        codex_home,
    })
}

/// What the entries run: this program, with the Hermes home, profile and index file it
/// finds now, so that the agent (whose environment may lack `HERMES_HOME`) reads the same.
fn commands(common: &Common) -> Result<Commands> {
    let mut options = Vec::new();
    if let Ok(root) = crate::home::Root::locate(common.home.as_deref()) {
        options.extend(["--home".into(), root.path.to_string_lossy().into_owned()]);
    }
    if let Some(p) = &common.profile {
        options.extend(["--profile".into(), p.clone()]);
    }
    if let Some(db) = &common.db {
        let db = std::path::absolute(db).with_context(|| format!("index {}", db.display()))?;
        options.extend(["--db".into(), db.to_string_lossy().into_owned()]);
    }
    Ok(Commands {
        program: program()?,
        options,
    })
}

/// The skillidx program: this executable, or, when the Python package runs this code, the
/// `skillidx` script Python was started with.
fn program() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    if is_skillidx(&exe) {
        return Ok(exe);
    }
    let argv0 = super::program_name().context("cannot find the skillidx program's path")?;
    let path = if argv0.components().count() > 1 {
        std::path::absolute(&argv0)?
    } else {
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
            .map(|dir| dir.join(&argv0))
            .find(|p| p.is_file())
            .with_context(|| format!("{} is not on PATH", argv0.display()))?
    };
    anyhow::ensure!(
        is_skillidx(&path),
        "cannot tell which skillidx program the agent should run (this one is {})",
        exe.display()
    );
    Ok(path)
}

fn is_skillidx(path: &Path) -> bool {
    path.file_stem()
        .is_some_and(|n| n.to_string_lossy().starts_with("skillidx"))
}

fn print(agent: Agent, changes: &[Change], installing: bool) -> Result<()> {
    for c in changes {
        let what = match (installing, c.changed) {
            (true, true) => "wrote the",
            (true, false) => "kept the",
            (false, true) => "removed the",
            (false, false) => "found no",
        };
        outln!(
            "{}: {what} {} in {}",
            agent.name(),
            c.entry,
            c.path.display()
        )?;
    }
    if installing {
        match agent {
            Agent::Codex => outln!(
                "codex: Codex runs a new hook once you trust it: open /hooks in Codex (older builds also need [features] codex_hooks = true)"
            )?,
            _ => outln!(
                "claude-code: restart Claude Code; a project's .mcp.json server is approved on first use"
            )?,
        }
    }
    Ok(())
}
