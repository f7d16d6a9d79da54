//! `skillidx eval`: ranking quality on a labelled query file (`tests/eval/README.md`).

#[cfg(feature = "semantic")]
use super::args::{with_semantic, Model};
use super::args::{Common, SemanticArgs, SessionArgs};
use super::output::{cut, out, outln};
use crate::eval::{CrossValidation, Query, Report};
use crate::offer::Session;
#[cfg(feature = "semantic")]
use crate::search::SearchOptions;
use crate::search::{Ingredients, Ranking};
use crate::Index;
use anyhow::Result;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

/// `skillidx eval`'s options.
#[derive(Args, Debug)]
pub struct EvalArgs {
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
}

/// `name=value` for `eval --weights`.
fn parse_weight(s: &str) -> Result<(String, f64), String> {
    let (name, value) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected name=value"))?;
    let value = value.trim().parse().map_err(|e| format!("{s:?}: {e}"))?;
    Ok((name.trim().to_owned(), value))
}

/// What every evaluation of one run shares.
struct Run<'a> {
    index: &'a Index,
    profile: &'a str,
    skills: PathBuf,
    queries: &'a [Query],
    session: &'a Session,
}

impl Run<'_> {
    fn evaluate(&self, r: Ranking, ingredients: Ingredients) -> Result<Report> {
        Ok(crate::eval::evaluate(
            self.index,
            self.profile,
            &self.skills,
            self.queries,
            r,
            ingredients,
            self.session,
        )?)
    }

    #[cfg(feature = "semantic")]
    fn evaluate_with(&self, opts: &SearchOptions) -> Result<Report> {
        Ok(crate::eval::evaluate_with(
            self.index,
            self.profile,
            &self.skills,
            self.queries,
            opts,
            self.session,
        )?)
    }
}

/// Evaluates each ranking (out of fold with `--folds`), and the hybrid one with
/// `--semantic`, and prints the table.
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
    let (_, index, profile) = args.common.open_query()?;
    let session = args.session.session(&profile)?;
    let queries = crate::eval::load(&args.queries)?;
    let run = Run {
        index: &index,
        profile: &profile.name,
        skills: profile.home.join("skills"),
        queries: &queries,
        session: &session,
    };
    let mut cvs = Vec::new();
    #[cfg_attr(not(feature = "semantic"), allow(unused_mut))]
    let mut reports = lexical(&run, &args.ranking, ingredients, args.folds, &mut cvs)?;
    let model = args.semantic.load();
    #[cfg(feature = "semantic")]
    if ingredients.semantic && args.ranking.contains(&Ranking::Default) {
        if let Some(r) = hybrid(&run, &model, ingredients, args.folds, &mut cvs)? {
            reports.push(r);
        }
    }
    #[cfg(not(feature = "semantic"))]
    let _ = model;
    if args.common.json {
        if args.folds > 0 {
            outln!("{}", serde_json::to_string_pretty(&cvs)?)?;
        } else {
            outln!("{}", serde_json::to_string_pretty(&reports)?)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    print(&run, &reports, &cvs, args.misses)?;
    Ok(ExitCode::SUCCESS)
}

/// One report per ranking; with folds, the weights of the ingredients that are on chosen
/// out of fold.
fn lexical(
    run: &Run<'_>,
    rankings: &[Ranking],
    ingredients: Ingredients,
    folds: usize,
    cvs: &mut Vec<CrossValidation>,
) -> Result<Vec<Report>> {
    if folds == 0 {
        return rankings
            .iter()
            .map(|r| run.evaluate(*r, ingredients))
            .collect();
    }
    let mut reports = Vec::new();
    for r in rankings {
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
                run.evaluate(*r, ing)
            },
        )?;
        reports.push(cv.report.clone());
        cvs.push(cv);
    }
    Ok(reports)
}

/// The hybrid ranking's report, when the model is loaded: the A/B in one run, its
/// semantic weights chosen out of fold over the shipped lexical weights.
#[cfg(feature = "semantic")]
fn hybrid(
    run: &Run<'_>,
    model: &Model,
    ingredients: Ingredients,
    folds: usize,
    cvs: &mut Vec<CrossValidation>,
) -> Result<Option<Report>> {
    if model.is_none() {
        return Ok(None);
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
        let mut r = run.evaluate_with(&opts)?;
        r.hybrid = true;
        return Ok(Some(r));
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
            run.evaluate_with(&o)
        },
    )?;
    cv.report.hybrid = true;
    let report = cv.report.clone();
    cvs.push(cv);
    Ok(Some(report))
}

/// The table, the chit-chat line, the weights chosen per fold and, with `--misses`, the
/// labelled queries whose relevant skill is not in the top 6.
fn print(
    run: &Run<'_>,
    reports: &[Report],
    cvs: &[CrossValidation],
    misses: bool,
) -> std::io::Result<()> {
    outln!("{} queries, profile {}\n", run.queries.len(), run.profile)?;
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
        outln!("\n{:?}: relevant skill not in the top 6", r.ranking)?;
        for o in r
            .outcomes
            .iter()
            .filter(|o| o.first_relevant.is_none_or(|f| f > 6))
        {
            let Some(q) = run
                .queries
                .iter()
                .find(|q| q.id == o.id && !q.relevant.is_empty())
            else {
                continue;
            };
            outln!(
                "  {} [{}] {:?} → {:?}",
                o.id,
                o.kind,
                cut(&q.query, 70),
                &o.top[..o.top.len().min(3)]
            )?;
        }
    }
    Ok(())
}
