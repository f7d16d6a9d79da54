//! `skillidx hook <agent>`: per-prompt skill injection through an agent's command hook.
//!
//! Claude Code runs a `UserPromptSubmit` command hook with the event as JSON on stdin
//! (`session_id`, `transcript_path`, `cwd`, `hook_event_name`, `prompt`) and adds what the
//! hook prints on exit 0 to the model's context; the JSON form
//! `{"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": …}}`
//! says so explicitly. Codex's `UserPromptSubmit` hook takes the same shape (docs/agents.md).
//! The hook answers from the index as it is (a hook process is gone before a background
//! sync could finish; `skillidx watch`, cron or the MCP server keep the index fresh), with
//! the plugin's floor and small-talk gate. Whatever goes wrong, it exits 0 and prints
//! nothing: a hook must never block the prompt.

use super::args::Common;
use crate::agent::Agent;
use crate::refresh::{LiveIndex, LiveOptions};
use clap::{Args, ValueEnum};
use serde_json::{json, Value};
use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

/// What reaches the model whole: Claude Code keeps hook output up to 10,000 characters.
pub const MAX_CONTEXT_CHARS: usize = 9_500;
/// The hook event this answers.
const PROMPT_EVENT: &str = "UserPromptSubmit";
/// Skills injected per prompt, as the plugin's default.
const INJECT_K: usize = 6;
/// The most stdin read: a prompt is text a person typed or pasted.
const MAX_INPUT_BYTES: u64 = 4 << 20;

/// The agents whose hook protocol this speaks.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookAgent {
    /// Claude Code's `UserPromptSubmit` command hook.
    ClaudeCode,
    /// Codex's `UserPromptSubmit` command hook.
    Codex,
}

impl HookAgent {
    /// The agent whose skills the hook serves first.
    fn agent(self) -> Agent {
        match self {
            HookAgent::ClaudeCode => Agent::ClaudeCode,
            HookAgent::Codex => Agent::Codex,
        }
    }
}

/// `skillidx hook`'s options.
#[derive(Args, Debug)]
pub struct HookArgs {
    /// The agent running the hook.
    #[arg(id = "hook_agent", value_name = "AGENT")]
    agent: HookAgent,
    #[command(flatten)]
    common: Common,
}

/// Reads the event, prints the context to add (or nothing), exits 0.
pub fn run(args: HookArgs) -> anyhow::Result<ExitCode> {
    let mut input = String::new();
    let read = std::io::stdin()
        .take(MAX_INPUT_BYTES)
        .read_to_string(&mut input);
    if read.is_ok() {
        if let Some(out) = respond(&args.common, args.agent.agent(), &input) {
            super::output::outln!("{out}")?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The hook's stdout for the event `input`, or `None` to add nothing.
pub fn respond(common: &Common, agent: Agent, input: &str) -> Option<String> {
    let event: Value = serde_json::from_str(input).ok()?;
    // Only the event this hook is for: another one registered by mistake adds nothing.
    let event_name = event
        .get("hook_event_name")
        .map_or(Some(PROMPT_EVENT), Value::as_str);
    if event_name != Some(PROMPT_EVENT) {
        return None;
    }
    let prompt = event.get("prompt")?.as_str()?;
    if crate::hermes::is_chit_chat(prompt) {
        return None;
    }
    let cwd = event.get("cwd").and_then(Value::as_str).map(PathBuf::from);
    let live = live_for(common, agent, cwd)?;
    let context = context_for(&live, prompt)?;
    Some(
        json!({"hookSpecificOutput": {"hookEventName": PROMPT_EVENT, "additionalContext": context}})
            .to_string(),
    )
}

/// The index the hook answers from: the agent's own skills when `skillidx sync --agent`
/// indexed them (its project's, for the event's working directory, when indexed), else the
/// Hermes profile.
fn live_for(common: &Common, agent: Agent, cwd: Option<PathBuf>) -> Option<LiveIndex> {
    let opts = LiveOptions {
        readonly: true,
        ..LiveOptions::default()
    };
    let mine = Common {
        agent: Some(agent.name().to_owned()),
        cwd: cwd.or_else(|| common.cwd.clone()),
        ..common.clone()
    };
    if let Ok(place) = mine.place() {
        let profile = crate::Index::open(&place.db)
            .ok()
            .and_then(|index| mine.query_profile(&place, &index).ok());
        if let Some(profile) = profile {
            return LiveIndex::new(profile, place.db, opts).ok();
        }
    }
    LiveIndex::locate(
        common.home.as_deref(),
        common.profile.as_deref(),
        common.db.as_deref(),
        mine.cwd.as_deref(),
        opts,
    )
    .ok()
}

/// The skills block for `prompt`: the plugin's choice, each entry with its SKILL.md path,
/// within [`MAX_CONTEXT_CHARS`]; `None` when nothing passes the floor.
pub fn context_for(live: &LiveIndex, prompt: &str) -> Option<String> {
    let hits = crate::select::injected(
        live,
        prompt,
        INJECT_K,
        crate::hermes::DEFAULT_MIN_SCORE_RATIO,
    )
    .ok()?;
    let mut out = String::from(
        "## Installed skills that match this request (skillidx)\n\
         Read a skill's SKILL.md (path below its entry) before following it:\n",
    );
    let mut shown = 0;
    for hit in &hits {
        let mut entry = crate::hermes::entries(std::slice::from_ref(hit)).join("\n");
        if entry.is_empty() {
            continue;
        }
        entry.push_str(&format!("\n  {}", crate::safety::inline(&hit.path)));
        if out.chars().count() + entry.chars().count() + 1 > MAX_CONTEXT_CHARS {
            break;
        }
        out.push('\n');
        out.push_str(&entry);
        shown += 1;
    }
    (shown > 0).then_some(out)
}
