//! `skillidx mcp`: serve the index to MCP clients over stdio (see `crate::mcp`).

use super::args::Common;
use super::output::errln;
use crate::agent::Agent;
use crate::mcp::Served;
use crate::refresh::{LiveIndex, LiveOptions};
use anyhow::{Context, Result};
use clap::Args;
use std::process::ExitCode;

/// `skillidx mcp`'s options.
#[derive(Args, Debug)]
pub struct McpArgs {
    #[command(flatten)]
    common: Common,
}

/// Opens the profile's index as the plugin does (building it first when there is none),
/// then answers requests on stdin until it closes. Everything but the protocol goes to
/// stderr: stdout is the transport.
pub fn run(args: McpArgs) -> Result<ExitCode> {
    let common = args.common;
    let agent = common.other_agent()?;
    let first = open(&common)?;
    let name = agent.map_or(crate::mcp::tools::AGENT, Agent::name);
    let served = Served::one(name, first).with_opener(Box::new(move |asked| {
        open_agent(&common, asked).map_err(|e| format!("{e:#}"))
    }));
    crate::mcp::serve(&served, std::io::stdin().lock(), std::io::stdout().lock())
        .context("serving MCP on stdio")?;
    Ok(ExitCode::SUCCESS)
}

/// The index of the agent a call asked for: `hermes` (the Hermes profile), or another
/// agent's skills as seen from the server's working directory.
fn open_agent(common: &Common, asked: &str) -> Result<LiveIndex> {
    if asked != crate::mcp::tools::AGENT && Agent::parse(asked).is_none() {
        anyhow::bail!(
            "Unknown agent {:?}: one of claude-code, codex, copilot, opencode, hermes.",
            crate::safety::inline(asked)
        );
    }
    open(&Common {
        agent: Some(asked.to_owned()),
        ..common.clone()
    })
}

/// Opens the index `common` names as the plugin does (a `LiveIndex`: read-only handle,
/// background syncs), building it first when the file or the profile is not there yet.
/// For another agent, the profile is its project's when the working directory is in a
/// project with its skill folders, else its user's.
pub fn open(common: &Common) -> Result<LiveIndex> {
    let opts = LiveOptions {
        hermes: common.hermes()?,
        ..LiveOptions::default()
    };
    let live = match common.other_agent()? {
        Some(agent) => {
            let place = common.place()?;
            let mut profiles = common.agent_profiles(&place, agent)?;
            let profile = profiles.pop().context("no profile")?;
            LiveIndex::new(profile, place.db, opts)
        }
        None => {
            let cwd = common.cwd.clone().or_else(|| std::env::current_dir().ok());
            LiveIndex::locate(
                common.home.as_deref(),
                common.profile.as_deref(),
                common.db.as_deref(),
                cwd.as_deref(),
                opts,
            )
        }
    }
    .context("opening the skill index")?;
    if let Some(report) = live.prepare().context("building the skill index")? {
        errln!(
            "skillidx: built the index of profile {} ({} skills)",
            report.profile,
            report.active
        );
    }
    Ok(live)
}
