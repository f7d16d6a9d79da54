//! The command line: `skillidx sync | search | explain | eval | offered | stats | list |
//! watch | rerank-report | mcp | hook | agents install|uninstall | hermes install|uninstall|status`,
//! one file per command.
//!
//! Lives in the library so the Python package's `skillidx` command runs the very same code.
//! Every command prints through [`output`], so a reader that goes away (`skillidx list |
//! head -1`) ends the output, not the command.

mod agents;
mod args;
mod eval;
mod explain;
mod hermes;
mod hook;
mod list;
mod mcp;
mod offered;
mod output;
mod rerank_report;
mod search;
mod stats;
mod sync;
mod watch;

use anyhow::Result;
use clap::{Parser, Subcommand};
use output::errln;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::OnceLock;

/// The program name the command line was started with (`agents install` writes it).
static PROGRAM_NAME: OnceLock<PathBuf> = OnceLock::new();

/// The program name the command line was started with, when one was given.
fn program_name() -> Option<PathBuf> {
    PROGRAM_NAME.get().cloned()
}

#[derive(Parser, Debug)]
#[command(
    name = "skillidx",
    version,
    about = "A persistent BM25 index of Hermes Agent skills"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Bring the index in line with the skills on disk.
    Sync(sync::SyncArgs),
    /// Find the skills that match a request.
    Search(search::SearchArgs),
    /// Show each term's contribution to a skill's score.
    Explain(explain::ExplainArgs),
    /// Measure ranking quality on a labelled query file (see `tests/eval/README.md`).
    Eval(eval::EvalArgs),
    /// List what Hermes' `<available_skills>` offers in a session: (category, name) pairs.
    Offered(offered::OfferedArgs),
    /// Show the index's figures and skipped files.
    Stats(stats::StatsArgs),
    /// List indexed skills.
    List(list::ListArgs),
    /// Keep the index in step with the skills while running: sync every profile, then sync
    /// a profile again whenever its skills or config change (inotify, debounced).
    Watch(watch::WatchArgs),
    /// Summarise the plugin's reranker log (SKILL_RETRIEVAL_RERANK=1): turns, how often the
    /// reranker changed the top-3, its latency percentiles, its failures, unknown names.
    RerankReport(rerank_report::RerankReportArgs),
    /// Serve the index to MCP clients (Claude Code, Codex, Copilot, OpenCode) over stdio:
    /// tools `search_skills` and `read_skill`.
    Mcp(mcp::McpArgs),
    /// Run as an agent's per-prompt hook: read the event JSON on stdin, print the matching
    /// skills as context to add (nothing for small talk or bad input; always exit 0).
    Hook(hook::HookArgs),
    /// Add skillidx (MCP server and per-prompt hook) to Claude Code's or Codex's settings, or
    /// take it out again.
    Agents {
        #[command(subcommand)]
        action: agents::AgentsAction,
    },
    /// Install or remove the `skill-retrieval` Hermes plugin in a profile.
    Hermes {
        #[command(subcommand)]
        action: hermes::HermesAction,
    },
}

/// Runs the command line with `args` (program name first) and returns the exit code.
pub fn main(args: impl IntoIterator<Item = impl Into<OsString> + Clone>) -> ExitCode {
    output::keep_standard_fds_open();
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    if let Some(first) = args.first() {
        let _ = PROGRAM_NAME.set(PathBuf::from(first));
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match run(cli.command) {
        Ok(code) => code,
        Err(e) => {
            errln!("skillidx: {}", error_chain(&e));
            ExitCode::FAILURE
        }
    }
}

fn run(command: Command) -> Result<ExitCode> {
    match command {
        Command::Sync(a) => sync::run(a),
        Command::Search(a) => search::run(a),
        Command::Explain(a) => explain::run(a),
        Command::Eval(a) => eval::run(a),
        Command::Offered(a) => offered::run(a),
        Command::Stats(a) => stats::run(a),
        Command::List(a) => list::run(a),
        Command::Watch(a) => watch::run(a),
        Command::RerankReport(a) => rerank_report::run(a),
        Command::Mcp(a) => mcp::run(a),
        Command::Hook(a) => hook::run(a),
        Command::Agents { action } => agents::run(action),
        Command::Hermes { action } => hermes::run(action),
    }
}

/// The error and its causes, joined with `: `, leaving out a cause whose text the message
/// before it already holds (the library's errors name their cause in their own message).
fn error_chain(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !out.contains(&text) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&text);
        }
    }
    out
}
