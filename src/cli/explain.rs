//! `skillidx explain`: each term's and field's contribution to one skill's score.

use super::args::{with_semantic, Bm25Args, Common, SemanticArgs, SessionArgs};
use super::output::{cut, outln};
use crate::search::SearchOptions;
use anyhow::{bail, Result};
use clap::Args;
use std::process::ExitCode;

/// `skillidx explain`'s options.
#[derive(Args, Debug)]
pub struct ExplainArgs {
    /// The request.
    query: String,
    /// The skill id or name.
    skill: String,
    #[command(flatten)]
    session: SessionArgs,
    #[command(flatten)]
    bm25: Bm25Args,
    #[command(flatten)]
    semantic: SemanticArgs,
    #[command(flatten)]
    common: Common,
}

/// Explains the skill's score for the request.
pub fn run(args: ExplainArgs) -> Result<ExitCode> {
    let (_, index, profile) = args.common.open_query()?;
    let opts = SearchOptions {
        k: 6,
        session: Some(args.session.session(&profile)?),
        params: args.bm25.params(),
        ranking: args.bm25.ranking,
        floor: args.bm25.floor,
        ..Default::default()
    };
    let opts = with_semantic(opts, &args.semantic.load());
    let Some(ex) = index.explain(&profile.name, &args.query, &args.skill, &opts)? else {
        bail!("no skill {:?} in profile {}", args.skill, profile.name);
    };
    if args.common.json {
        outln!("{}", serde_json::to_string_pretty(&ex)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!("{}  ({})", ex.id, ex.path)?;
    if let Some(why) = &ex.inactive {
        outln!("not offered: {why}")?;
    }
    match ex.rank {
        Some(r) => outln!("rank {r}, score {:.4}", ex.score)?,
        None => outln!("not a hit (score 0)")?,
    }
    outln!("{:?} ranking over {} offered skills", ex.ranking, ex.docs)?;
    outln!(
        "the turn {} ({})",
        if ex.intent.needs_skill {
            "asks for something a skill could do"
        } else {
            "asks for nothing a skill does: with the floor, no skill is injected"
        },
        ex.intent.why
    )?;
    if !ex.dropped.is_empty() {
        outln!("query words not scored: {}", ex.dropped.join(", "))?;
    }
    outln!(
        "{:<22} {:>6} {:>7} {:>8}  per field (tf/length → score)",
        "term",
        "df",
        "idf",
        "score"
    )?;
    for t in &ex.terms {
        let fields: Vec<String> = t
            .fields
            .iter()
            .map(|f| format!("{} {}/{} → {:.3}", f.field, f.tf, f.length, f.score))
            .collect();
        let term = match &t.typo_of {
            Some(word) => format!("{} (for {word})", t.term),
            None => t.term.clone(),
        };
        outln!(
            "{:<22} {:>6} {:>7.3} {:>8.4}  {}",
            cut(&term, 22),
            t.df,
            t.idf,
            t.score,
            fields.join("; ")
        )?;
    }
    #[cfg(feature = "semantic")]
    if let Some(s) = &ex.semantic {
        outln!(
            "semantic stage: {:.4} = w {:.2} × lexical {:.4}/best ({:.4}) + (1 − w) × cosine {} ({:.4}){}",
            s.score,
            s.w,
            s.lexical,
            s.lexical_normalised,
            s.cosine.map_or_else(|| "none (no vector)".to_owned(), |c| format!("{c:.4}")),
            s.semantic_share,
            if s.dense { "; a dense candidate (nearest by cosine)" } else { "" }
        )?;
    }
    Ok(ExitCode::SUCCESS)
}
