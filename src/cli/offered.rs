//! `skillidx offered`: what Hermes' `<available_skills>` lists in a session.

use super::args::{Common, SessionArgs};
use super::output::outln;
use anyhow::Result;
use clap::Args;
use std::process::ExitCode;

/// `skillidx offered`'s options.
#[derive(Args, Debug)]
pub struct OfferedArgs {
    #[command(flatten)]
    session: SessionArgs,
    #[command(flatten)]
    common: Common,
}

/// Lists the (category, name) pairs offered, by category.
pub fn run(args: OfferedArgs) -> Result<ExitCode> {
    let (_, index, profile) = args.common.open_query()?;
    let session = args.session.session(&profile)?;
    let offered = index.offered(&profile.name, &session)?;
    if args.common.json {
        outln!("{}", serde_json::to_string_pretty(&offered)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    let mut last = None;
    for o in &offered {
        if last != Some(&o.category) {
            outln!("{}:", o.category)?;
            last = Some(&o.category);
        }
        if o.id == o.name {
            outln!("  - {}", o.name)?;
        } else {
            outln!("  - {}  (load as {})", o.name, o.id)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
