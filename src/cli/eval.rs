//! `skillidx eval`: ranking quality on a labelled query file (`tests/eval/README.md`), on
//! one home or two side by side (the corpus alone, and inside the hub).

#[cfg(feature = "semantic")]
use super::args::{with_semantic, Model};
use super::args::{Common, SemanticArgs, SessionArgs};
use super::output::{cut, out, outln};
use crate::eval::{CrossValidation, Judged, Judgements, Query, Report, Setup, Ungraded};
#[cfg(feature = "semantic")]
use crate::search::SearchOptions;
use crate::search::{Ingredients, Ranking};
use anyhow::{Context, Result};
use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `skillidx eval`'s options.
#[derive(Args, Debug)]
pub struct EvalArgs {
    /// The query file (JSON lines with `query`, `kind`, `lang`, `relevant`).
    queries: PathBuf,
    /// The graded pool (JSON lines `{"query", "skill", "grade"}`; default: `graded.jsonl`
    /// beside the query file, when there is one).
    #[arg(long)]
    graded: Option<PathBuf>,
    /// Write the injected hits that nothing grades to this file (JSON lines), to be graded.
    #[arg(long)]
    ungraded: Option<PathBuf>,
    /// Evaluate on this second Hermes home too, side by side (e.g. the corpus inside the
    /// hub, `benches/make_scale_home.py`); its index is `--compare-db`, else its default.
    #[arg(long)]
    compare_home: Option<PathBuf>,
    /// The second home's index file.
    #[arg(long, requires = "compare_home")]
    compare_db: Option<PathBuf>,
    /// Rankings to compare, comma-separated.
    #[arg(long, default_value = "seed,default", value_delimiter = ',')]
    ranking: Vec<Ranking>,
    /// Inject copies of one capability as separate entries (as before selection folded
    /// them), to measure what folding does.
    #[arg(long)]
    no_fold: bool,
    /// The share of the best score an injected hit needs (the plugin's
    /// SKILL_RETRIEVAL_MIN_SCORE_RATIO).
    #[arg(long, default_value_t = crate::hermes::DEFAULT_MIN_SCORE_RATIO)]
    min_score_ratio: f64,
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
}

/// `name=value` for `eval --weights`.
fn parse_weight(s: &str) -> Result<(String, f64), String> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected name=value"))?;
    let value = value.trim().parse().map_err(|e| format!("{s:?}: {e}"))?;
    Ok((name.trim().to_owned(), value))
}

/// What one home's evaluation produced.
struct Evaluated {
    reports: Vec<Report>,
    cvs: Vec<CrossValidation>,
    ungraded: Vec<Ungraded>,
}

/// Evaluates each ranking (out of fold with `--folds`), and the hybrid one with
/// `--semantic`, on the home (and the second one), and prints the table.
pub fn run(args: EvalArgs) -> Result<ExitCode> {
    let mut ingredients = Ingredients::default();
    for name in &args.without {
        ingredients = ingredients.without(name).map_err(anyhow::Error::msg)?;
    }
    for (name, value) in &args.weights {
        ingredients
            .weights
            .set(name, *value)
            .map_err(anyhow::Error::msg)?;
    }
    let queries = crate::eval::load(&args.queries)?;
    let pool_path = args
        .graded
        .clone()
        .or_else(|| Some(args.queries.with_file_name("graded.jsonl")).filter(|p| p.is_file()));
    let pool = match &pool_path {
        Some(p) => crate::eval::load_pool(p)?,
        None => Vec::new(),
    };
    let model = args.semantic.load();
    let mut homes = vec![args.common.clone()];
    if let Some(home) = &args.compare_home {
        let mut other = args.common.clone();
        other.home = Some(home.clone());
        other.db = args.compare_db.clone();
        homes.push(other);
    }
    let several = homes.len() > 1;
    let mut all = Evaluated {
        reports: Vec::new(),
        cvs: Vec::new(),
        ungraded: Vec::new(),
    };
    for common in &homes {
        let e = evaluate_home(&args, common, &queries, &pool, ingredients, &model, several)?;
        all.reports.extend(e.reports);
        all.cvs.extend(e.cvs);
        all.ungraded.extend(e.ungraded);
    }
    if let Some(path) = &args.ungraded {
        write_ungraded(path, &mut all.ungraded)?;
    }
    if args.common.json {
        if args.folds > 0 {
            outln!("{}", serde_json::to_string_pretty(&all.cvs)?)?;
        } else {
            outln!("{}", serde_json::to_string_pretty(&all.reports)?)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    print(&queries, &all.reports, &all.cvs, args.misses)?;
    Ok(ExitCode::SUCCESS)
}

/// Every report of one home: the lexical rankings and, with the model, the hybrid one.
fn evaluate_home(
    args: &EvalArgs,
    common: &Common,
    queries: &[Query],
    pool: &[Judged],
    ingredients: Ingredients,
    #[cfg_attr(not(feature = "semantic"), allow(unused_variables))] model: &super::args::Model,
    several: bool,
) -> Result<Evaluated> {
    let (_, index, profile) = common.open_query()?;
    let session = args.session.session(&profile)?;
    let skills = profile.home.join("skills");
    let offered = index.offered(&profile.name, &session)?;
    let judgements = Judgements::new(queries, pool, &offered, &skills);
    let setup = Setup {
        index: &index,
        profile: &profile.name,
        skills_root: &skills,
        queries,
        judgements: &judgements,
        session: &session,
        selection: crate::select::Selection {
            fold_copies: !args.no_fold,
            min_score_ratio: args.min_score_ratio,
            ..crate::eval::plugin_selection()
        },
    };
    let mut e = Evaluated {
        reports: Vec::new(),
        cvs: Vec::new(),
        ungraded: Vec::new(),
    };
    lexical(&setup, &args.ranking, ingredients, args.folds, &mut e)?;
    #[cfg(feature = "semantic")]
    if ingredients.semantic && args.ranking.contains(&Ranking::Default) {
        hybrid(&setup, model, ingredients, args.folds, &mut e)?;
    }
    if several {
        let label = format!("{:.1}k", offered.len() as f64 / 1000.0);
        for r in &mut e.reports {
            r.home = label.clone();
        }
        for cv in &mut e.cvs {
            cv.report.home = label.clone();
        }
    }
    Ok(e)
}

/// One report per ranking; with folds, the weights of the ingredients that are on chosen
/// out of fold.
fn lexical(
    setup: &Setup<'_>,
    rankings: &[Ranking],
    ingredients: Ingredients,
    folds: usize,
    e: &mut Evaluated,
) -> Result<()> {
    for r in rankings {
        if folds == 0 {
            let (report, ungraded) = crate::eval::evaluate(setup, *r, ingredients)?;
            e.reports.push(report);
            e.ungraded.extend(ungraded);
            continue;
        }
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
                let (report, ungraded) = crate::eval::evaluate(setup, *r, ing)?;
                e.ungraded.extend(ungraded);
                Ok::<_, anyhow::Error>(report)
            },
        )?;
        e.reports.push(cv.report.clone());
        e.cvs.push(cv);
    }
    Ok(())
}

/// The hybrid ranking's report, when the model is loaded: the A/B in one run, its
/// semantic weights chosen out of fold over the shipped lexical weights.
#[cfg(feature = "semantic")]
fn hybrid(
    setup: &Setup<'_>,
    model: &Model,
    ingredients: Ingredients,
    folds: usize,
    e: &mut Evaluated,
) -> Result<()> {
    if model.is_none() {
        return Ok(());
    }
    let opts = with_semantic(
        SearchOptions {
            ranking: Ranking::Default,
            ingredients,
            ..Default::default()
        },
        model,
    );
    if folds == 0 {
        let (mut r, ungraded) = crate::eval::evaluate_with(setup, &opts)?;
        r.hybrid = true;
        e.reports.push(r);
        e.ungraded.extend(ungraded);
        return Ok(());
    }
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
            let (report, ungraded) = crate::eval::evaluate_with(setup, &o)?;
            e.ungraded.extend(ungraded);
            Ok::<_, anyhow::Error>(report)
        },
    )?;
    cv.report.hybrid = true;
    e.reports.push(cv.report.clone());
    e.cvs.push(cv);
    Ok(())
}

/// Writes the ungraded hits, sorted and without repeats, as JSON lines.
fn write_ungraded(path: &Path, ungraded: &mut Vec<Ungraded>) -> Result<()> {
    ungraded.sort();
    ungraded.dedup_by(|a, b| a.query == b.query && a.skill == b.skill);
    let mut text = String::new();
    for u in ungraded.iter() {
        text.push_str(&serde_json::to_string(u)?);
        text.push('\n');
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// The table, the chit-chat line, the weights chosen per fold and, with `--misses`, the
/// labelled queries whose relevant skill is not in the top 6.
fn print(
    queries: &[Query],
    reports: &[Report],
    cvs: &[CrossValidation],
    misses: bool,
) -> std::io::Result<()> {
    outln!("{} queries\n", queries.len())?;
    out!("{}", crate::eval::table(reports))?;
    out!("\n{}", crate::eval::chitchat_line(reports))?;
    for cv in cvs {
        outln!(
            "{}: {} folds (sizes {:?}), objective {:?}; chosen per fold {}: {:?}",
            crate::eval::column_name(&cv.report),
            cv.folds,
            cv.fold_sizes,
            cv.objective,
            cv.names.join(", "),
            cv.chosen
        )?;
    }
    if !misses {
        return Ok(());
    }
    for r in reports {
        outln!(
            "\n{}: relevant skill not in the top 6",
            crate::eval::column_name(r)
        )?;
        for o in r
            .outcomes
            .iter()
            .filter(|o| o.labelled && o.first_relevant.is_none_or(|f| f > 6))
        {
            let q = queries
                .iter()
                .find(|q| q.id == o.id)
                .map_or("", |q| q.query.as_str());
            outln!(
                "  {} [{}] {:?} → {:?}",
                o.id,
                o.kind,
                cut(q, 70),
                &o.top[..o.top.len().min(3)]
            )?;
        }
    }
    Ok(())
}
