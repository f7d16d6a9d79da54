//! `skillidx stats`: figures per profile, and every skipped file with its reason.

use super::args::Common;
use super::output::outln;
use crate::Index;
use anyhow::Result;
use clap::Args;
use std::process::ExitCode;

/// `skillidx stats`'s options.
#[derive(Args, Debug)]
pub struct StatsArgs {
    #[command(flatten)]
    common: Common,
}

/// Shows the figures of the profile asked for, else of every profile in the index.
pub fn run(args: StatsArgs) -> Result<ExitCode> {
    let common = args.common;
    let place = common.place()?;
    let index = Index::open(&place.db)?;
    index.ensure_home(&place.root.path)?;
    let names = match &common.profile {
        Some(p) => {
            place.root.profile(p)?;
            index.ensure_profile(p)?;
            vec![p.clone()]
        }
        None => index.profiles()?,
    };
    let all: Vec<_> = names
        .iter()
        .map(|p| index.stats(p))
        .collect::<Result<_, _>>()?;
    if common.json {
        outln!("{}", serde_json::to_string_pretty(&all)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!("index {}", place.db.display())?;
    for s in all {
        outln!(
            "profile {}: {} skills offered, {} not offered, {} skipped, {} terms, avg length {:.1}, generation {}",
            s.profile, s.active, s.inactive, s.skipped.len(), s.terms, s.avg_length, s.generation
        )?;
        for p in &s.skipped {
            outln!("  skipped {}: {}", p.path.display(), p.reason)?;
        }
        for p in &s.flagged {
            outln!("  flagged {}: {}", p.path.display(), p.reason)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
