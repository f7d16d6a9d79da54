//! `skillidx mcp`: the skill index as a Model Context Protocol server over stdio, for any
//! agent that speaks MCP (Claude Code, Codex, VS Code Copilot, OpenCode).
//!
//! Written to the protocol ([`protocol`]: newline-delimited JSON-RPC 2.0) rather than with
//! the official Rust SDK, `rmcp`: a tool server needs four methods, and rmcp brings an
//! async runtime and a JSON-schema generator to a build that CI makes from scratch on two
//! cores (measured in docs/mcp.md). Tools ([`tools`]): `search_skills` and `read_skill`.
//!
//! Requests are answered one at a time, in order, from the plugin's read path
//! ([`LiveIndex`]): a search never waits for a sync; a sync that is due starts in the
//! background. A malformed line gets a JSON-RPC error and the server keeps serving; it
//! stops when the client closes its input.

pub mod protocol;
pub mod served;
pub mod tools;

use protocol::{code, Incoming};
use serde_json::{json, Value};
pub use served::Served;
use std::io::{BufRead, Read, Write};

/// The longest message read: a request is a tool call of a few words; a longer line is
/// answered with an error and skipped, never held in memory whole.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Serves requests read from `input` until it ends, writing responses to `output`.
pub fn serve(
    live: &Served,
    mut input: impl BufRead,
    mut output: impl Write,
) -> std::io::Result<()> {
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let read = (&mut input)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf)?;
        if read == 0 {
            return Ok(());
        }
        let reply = if buf.len() > MAX_LINE_BYTES && buf.last() != Some(&b'\n') {
            skip_line(&mut input)?;
            Some(protocol::error(
                &Value::Null,
                code::INVALID_REQUEST,
                "message longer than 1 MiB",
            ))
        } else {
            match std::str::from_utf8(&buf) {
                Ok(line) if line.trim().is_empty() => None,
                Ok(line) => answer(live, protocol::read(line)),
                Err(_) => Some(protocol::error(
                    &Value::Null,
                    code::PARSE_ERROR,
                    "not UTF-8",
                )),
            }
        };
        if let Some(reply) = reply {
            writeln!(output, "{reply}")?;
            output.flush()?;
        }
    }
}

/// Reads and drops the rest of the current line.
fn skip_line(input: &mut impl BufRead) -> std::io::Result<()> {
    loop {
        let chunk = input.fill_buf()?;
        if chunk.is_empty() {
            return Ok(());
        }
        match chunk.iter().position(|&b| b == b'\n') {
            Some(at) => {
                input.consume(at + 1);
                return Ok(());
            }
            None => {
                let n = chunk.len();
                input.consume(n);
            }
        }
    }
}

/// The response to one message (`None` for a notification).
pub fn answer(live: &Served, message: Incoming) -> Option<Value> {
    let (id, method, params) = match message {
        Incoming::Notification { .. } | Incoming::Response => return None,
        Incoming::Invalid { id, code, message } => {
            return Some(protocol::error(&id, code, &message))
        }
        Incoming::Request { id, method, params } => (id, method, params),
    };
    // A bug of ours on one request must not end the server.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        dispatch(live, &method, &params)
    }));
    Some(match outcome {
        Ok(Ok(result)) => protocol::result(&id, result),
        Ok(Err((code, message))) => protocol::error(&id, code, &message),
        Err(_) => protocol::error(&id, code::INTERNAL_ERROR, "internal error in skillidx"),
    })
}

fn dispatch(live: &Served, method: &str, params: &Value) -> Result<Value, (i64, String)> {
    match method {
        "initialize" => {
            let asked = params.get("protocolVersion").and_then(Value::as_str);
            Ok(json!({
                "protocolVersion": protocol::negotiate(asked),
                "capabilities": {"tools": {"listChanged": false}},
                "serverInfo": {"name": "skillidx", "version": env!("CARGO_PKG_VERSION")},
                "instructions": "Use search_skills to find an installed skill for the task \
                    at hand, then read_skill to read it before following it."
            }))
        }
        "ping" => Ok(json!({})),
        "tools/list" => Ok(tools::list()),
        "tools/call" => {
            let name = params.get("name").and_then(Value::as_str).ok_or((
                code::INVALID_PARAMS,
                "tools/call needs a tool name".to_owned(),
            ))?;
            let args = params.get("arguments").cloned().unwrap_or(json!({}));
            if !args.is_object() {
                return Err((code::INVALID_PARAMS, "arguments must be an object".into()));
            }
            tools::call(live, name, &args).map_err(|e| (code::INVALID_PARAMS, e.0))
        }
        other => Err((
            code::METHOD_NOT_FOUND,
            format!("method {other:?} is not served"),
        )),
    }
}
