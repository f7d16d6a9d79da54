//! `skillidx rerank-report`: what the plugin's optional reranker did.

use super::args::Common;
use super::output::{out, outln};
use anyhow::{Context, Result};
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// `skillidx rerank-report`'s options.
#[derive(Args, Debug)]
pub struct RerankReportArgs {
    /// The log (default: $SKILL_RETRIEVAL_RERANK_LOG, else
    /// <profile home>/logs/skillidx-rerank.jsonl); its rotated `.1` file is read too.
    #[arg(long)]
    log: Option<PathBuf>,
    #[command(flatten)]
    common: Common,
}

/// Summarises the reranker's log.
pub fn run(args: RerankReportArgs) -> Result<ExitCode> {
    let common = args.common;
    let path = match args.log {
        Some(p) => p,
        None => {
            let profile =
                crate::hermes::resolve_profile(common.home.as_deref(), common.profile.as_deref())?;
            crate::rerank::log_path(&profile.home)
        }
    };
    let report = crate::rerank::report(&path)
        .context("no rerank report (the plugin writes the log when SKILL_RETRIEVAL_RERANK=1)")?;
    if common.json {
        outln!("{}", serde_json::to_string_pretty(&report)?)?;
    } else {
        out!("{report}")?;
    }
    Ok(ExitCode::SUCCESS)
}
