//! `skillidx list`: every indexed skill, and why it is not offered when it is not.

use super::args::Common;
use super::output::outln;
use anyhow::Result;
use clap::Args;
use std::process::ExitCode;

/// `skillidx list`'s options.
#[derive(Args, Debug)]
pub struct ListArgs {
    #[command(flatten)]
    common: Common,
}

/// Lists the profile's indexed skills.
pub fn run(args: ListArgs) -> Result<ExitCode> {
    let (_, index, profile) = args.common.open_query()?;
    let list = index.list(&profile.name)?;
    if args.common.json {
        outln!("{}", serde_json::to_string_pretty(&list)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    for s in list {
        let state = s
            .inactive
            .as_deref()
            .map(|w| format!("  [not offered: {w}]"))
            .unwrap_or_default();
        outln!("{}  ({}){}", s.id, s.category, state)?;
    }
    Ok(ExitCode::SUCCESS)
}
