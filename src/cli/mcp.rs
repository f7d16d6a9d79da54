//! `skillidx mcp`: serve the index to MCP clients over stdio (see `crate::mcp`).

use super::args::Common;
use super::output::errln;
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
    let live = open(&args.common)?;
    crate::mcp::serve(&live, std::io::stdin().lock(), std::io::stdout().lock())
        .context("serving MCP on stdio")?;
    Ok(ExitCode::SUCCESS)
}

/// The profile's live index (`--home`, `--profile`, `--db`), built when missing.
pub fn open(common: &Common) -> Result<LiveIndex> {
    let opts = LiveOptions {
        hermes: common.hermes()?,
        ..LiveOptions::default()
    };
    let live = LiveIndex::locate(
        common.home.as_deref(),
        common.profile.as_deref(),
        common.db.as_deref(),
        opts,
    )
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
