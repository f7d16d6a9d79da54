//! `skillidx search`: the skills a request needs, one request or a batch of JSON lines.

use super::args::{with_semantic, Bm25Args, Common, SemanticArgs, SessionArgs};
use super::output::{self, cut, outln};
use crate::offer::Session;
use crate::refresh::Followed;
use crate::search::{Ranking, SearchOptions};
use anyhow::{bail, Context, Result};
use clap::Args;
use std::io::BufRead;
use std::process::ExitCode;

/// `skillidx search`'s options.
#[derive(Args, Debug)]
pub struct SearchArgs {
    /// The request (omit with --batch).
    query: Option<String>,
    /// How many skills.
    #[arg(short, default_value_t = 6)]
    k: usize,
    #[command(flatten)]
    session: SessionArgs,
    /// Read JSON lines `{"query": …, "k": …, "platform": …, "profile": …}` from stdin and
    /// answer each with a JSON line, on one open index.
    #[arg(long, conflicts_with = "query")]
    batch: bool,
    #[command(flatten)]
    bm25: Bm25Args,
    #[command(flatten)]
    semantic: SemanticArgs,
    #[command(flatten)]
    common: Common,
}

/// Answers one request, or every line of a batch.
pub fn run(args: SearchArgs) -> Result<ExitCode> {
    let (place, index, profile) = args.common.open_query()?;
    let session = args.session.session(&profile)?;
    let model = args.semantic.load();
    if args.batch {
        let template = SearchOptions {
            scoring: args.bm25.scoring,
            ..Default::default()
        };
        let template = with_semantic(template, &model);
        return batch(Batch {
            index: Followed::new(place.db, index),
            default_profile: &profile.name,
            told: args.common.hermes()?,
            bm25: args.bm25,
            session: &session,
            template: &template,
        });
    }
    let Some(query) = args.query else {
        bail!("give a QUERY, or --batch")
    };
    let opts = SearchOptions {
        k: args.k,
        session: Some(session),
        params: args.bm25.params(),
        ranking: args.bm25.ranking,
        floor: args.bm25.floor,
        scoring: args.bm25.scoring,
        ..Default::default()
    };
    let opts = with_semantic(opts, &model);
    let hits = index.search(&profile.name, &query, &opts)?;
    if args.common.json {
        outln!("{}", serde_json::to_string_pretty(&hits)?)?;
    } else if hits.is_empty() {
        outln!("no skill matches")?;
    } else {
        for (i, h) in hits.iter().enumerate() {
            outln!("{:>2}. {:>7.3}  {}  ({})", i + 1, h.score, h.id, h.category)?;
            outln!("             {}", cut(&h.description, 110))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// One request of a batch.
#[derive(serde::Deserialize)]
struct Request {
    #[serde(default)]
    id: Option<serde_json::Value>,
    query: String,
    #[serde(default)]
    k: Option<usize>,
    #[serde(default)]
    platform: Option<String>,
    #[serde(default)]
    profile: Option<String>,
    #[serde(default)]
    ranking: Option<Ranking>,
    #[serde(default)]
    floor: Option<bool>,
}

/// A batch: the index it answers from and what every request starts from.
struct Batch<'a> {
    index: Followed,
    default_profile: &'a str,
    /// The Hermes release the command asked for (`--hermes-version`), checked against each
    /// profile a line names.
    told: Option<crate::version::HermesVersion>,
    bm25: Bm25Args,
    session: &'a Session,
    template: &'a SearchOptions,
}

/// Answers each line of stdin with one JSON line, `{"hits": …}` or `{"error": …}`: a line
/// that is blank, not UTF-8 or not a request gets an error of its own and the batch goes on.
/// The index follows its path (a file replaced by `sync --rebuild` is opened again), so a
/// long-running batch recovers from a damaged file once it is rebuilt.
fn batch(mut b: Batch<'_>) -> Result<ExitCode> {
    let mut stdin = std::io::stdin().lock();
    let mut line = Vec::new();
    let mut n = 0;
    loop {
        line.clear();
        let Some(whole) = read_line(&mut stdin, &mut line).context("reading stdin")? else {
            break;
        };
        n += 1;
        let answer = match std::str::from_utf8(&line) {
            _ if !whole => serde_json::json!({
                "error": format!("line {n}: longer than {MAX_LINE_BYTES} bytes, not read")
            }),
            // One answer per line, a blank one included: a client that waits for each
            // answer must not wait forever.
            Ok(text) if text.trim().is_empty() => {
                serde_json::json!({ "error": format!("line {n}: no request on it") })
            }
            Ok(text) => b.answer(text, n),
            Err(e) => serde_json::json!({
                "error": format!("line {n}: not valid UTF-8 (first bad byte at offset {})", e.valid_up_to())
            }),
        };
        outln!("{answer}")?;
        output::flush()?;
        if output::closed() {
            break;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The longest request line a batch reads: a request is a query and a few options, and a
/// line of many megabytes would be held, parsed and analysed whole.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// Reads one line of `input` into `line` (at most [`MAX_LINE_BYTES`] of it; the rest of a
/// longer line is skipped without being kept). `None` at the end of the input, else whether
/// the line was read whole.
fn read_line(input: &mut impl BufRead, line: &mut Vec<u8>) -> std::io::Result<Option<bool>> {
    let mut seen = false;
    let mut whole = true;
    loop {
        let buf = match input.fill_buf() {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if buf.is_empty() {
            return Ok(seen.then_some(whole));
        }
        seen = true;
        let (part, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..=i], true),
            None => (buf, false),
        };
        let room = MAX_LINE_BYTES.saturating_sub(line.len());
        if part.len() > room {
            whole = false;
        }
        line.extend_from_slice(&part[..part.len().min(room)]);
        let used = part.len();
        input.consume(used);
        if done {
            return Ok(Some(whole));
        }
    }
}

impl Batch<'_> {
    /// The answer to `line`, line `n` of the batch.
    fn answer(&mut self, line: &str, n: usize) -> serde_json::Value {
        let mut answer = match serde_json::from_str::<Request>(line) {
            Ok(req) => {
                let opts = SearchOptions {
                    k: req.k.unwrap_or(6),
                    session: Some(self.session.clone()),
                    platform: req.platform,
                    params: self.bm25.params(),
                    ranking: req.ranking.unwrap_or(self.bm25.ranking),
                    floor: req.floor.unwrap_or(self.bm25.floor),
                    ..self.template.clone()
                };
                let profile = req.profile.as_deref().unwrap_or(self.default_profile);
                let told = self.told;
                let hits = self.index.with(|index| {
                    index.ensure_profile(profile)?;
                    Ok(match super::args::check_release(index, profile, told) {
                        Ok(()) => Ok(index.search(profile, &req.query, &opts)?),
                        Err(refused) => Err(refused),
                    })
                });
                let mut answer = match hits {
                    Ok(Ok(hits)) => serde_json::json!({ "hits": hits }),
                    Ok(Err(refused)) => serde_json::json!({ "error": format!("{refused:#}") }),
                    Err(e) => serde_json::json!({ "error": e.to_string() }),
                };
                if let Some(id) = req.id {
                    answer["id"] = id;
                }
                answer
            }
            Err(e) => serde_json::json!({ "error": format!("line {n}: {e}") }),
        };
        // A request that did not parse may still carry an id worth echoing.
        if answer.get("id").is_none() {
            if let Some(id) = serde_json::from_str::<serde_json::Value>(line)
                .ok()
                .and_then(|v| v.get("id").cloned())
            {
                answer["id"] = id;
            }
        }
        answer
    }
}
