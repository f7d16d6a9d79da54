//! Cross-validation: tunable weights chosen on the other folds, every figure out of fold.

use super::metrics::{summarise, Metrics, Outcome, Report};
use serde::Serialize;
use std::collections::BTreeMap;

/// What cross-validation maximises on the training folds to choose a grid point.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Objective {
    /// MRR@10 over the labelled queries.
    Mrr,
    /// nDCG@10 over the labelled queries.
    Ndcg,
    /// MRR@10 over the labelled queries less this much per skill injected per chit-chat
    /// turn: with 0.05, injecting one skill into every chit-chat turn costs as much as
    /// 0.05 of MRR.
    MrrLessInjected(f64),
    /// [`Objective::MrrLessInjected`], among the grid points that leave no kind and no
    /// language of the training folds worse on S@1, S@6, MRR@10 or nDCG@10 than the first
    /// grid point (the ingredients' neutral values) does; the first point when none does.
    Guarded(f64),
    /// [`Objective::Guarded`], but a group may be worse by up to one of its queries' worth
    /// (`1/n` on each metric), never on chit-chat: the semantic stage's objective, as a
    /// reordering moves single queries both ways, and a strict guard then keeps only the
    /// neutral point.
    Tolerant(f64),
}

impl Default for Objective {
    fn default() -> Self {
        Objective::Guarded(0.05)
    }
}

impl Objective {
    /// The objective over `outcomes`.
    pub fn value<'o>(&self, outcomes: impl IntoIterator<Item = &'o Outcome>) -> f64 {
        let (mut labelled, mut mrr, mut ndcg, mut empty, mut injected) =
            (0usize, 0.0, 0.0, 0usize, 0.0);
        for o in outcomes {
            if o.labelled {
                labelled += 1;
                mrr += o.first_relevant.map_or(0.0, |r| 1.0 / r as f64);
                ndcg += o.ndcg_at_10;
            } else {
                empty += 1;
                injected += o.injected as f64;
            }
        }
        let l = labelled.max(1) as f64;
        match *self {
            Objective::Mrr => mrr / l,
            Objective::Ndcg => ndcg / l,
            Objective::MrrLessInjected(penalty)
            | Objective::Guarded(penalty)
            | Objective::Tolerant(penalty) => mrr / l - penalty * injected / empty.max(1) as f64,
        }
    }
}

/// The fold (of `folds`) of the query `id`: a hash of the id (64-bit FNV-1a), so a query
/// keeps its fold when others are added, and the assignment is the same on every machine.
pub fn fold_of(id: &str, folds: usize) -> usize {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in id.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    (h % folds.max(1) as u64) as usize
}

/// Every point of the grid (the cartesian product of the values), in order: the first
/// parameter's values vary slowest. An empty grid has one point, with no values.
pub fn grid_points(grid: &[(String, Vec<f64>)]) -> Vec<Vec<f64>> {
    let mut points = vec![Vec::new()];
    for (_, values) in grid {
        points = points
            .into_iter()
            .flat_map(|p| {
                values.iter().map(move |&v| {
                    let mut q = p.clone();
                    q.push(v);
                    q
                })
            })
            .collect();
    }
    points
}

/// The result of a cross-validation.
#[derive(Debug, Clone, Serialize)]
pub struct CrossValidation {
    /// How many folds.
    pub folds: usize,
    /// What was maximised on the training folds.
    pub objective: Objective,
    /// The tuned parameters' names.
    pub names: Vec<String>,
    /// Per fold, the values chosen on the other folds.
    pub chosen: Vec<Vec<f64>>,
    /// Per fold, how many queries it holds.
    pub fold_sizes: Vec<usize>,
    /// The out-of-fold report: every query scored with the values chosen without it.
    pub report: Report,
}

/// K-fold cross-validation of the parameters in `grid`. `run` evaluates every query with
/// one grid point (values in `grid` order); then for each fold the point that maximises
/// `objective` on the other folds is chosen (ties: the earliest point), and the fold's
/// queries are scored with it. The report is over those out-of-fold outcomes only, so no
/// query is judged with values tuned on it.
pub fn cross_validate<E>(
    folds: usize,
    grid: &[(String, Vec<f64>)],
    objective: Objective,
    mut run: impl FnMut(&[f64]) -> Result<Report, E>,
) -> Result<CrossValidation, E> {
    let folds = folds.max(2);
    let points = grid_points(grid);
    let reports = points
        .iter()
        .map(|p| run(p))
        .collect::<Result<Vec<_>, E>>()?;
    let first = &reports[0];
    let fold: Vec<usize> = first
        .outcomes
        .iter()
        .map(|o| fold_of(&o.id, folds))
        .collect();
    let mut chosen = Vec::new();
    let mut fold_sizes = Vec::new();
    let mut oof: Vec<Option<Outcome>> = vec![None; first.outcomes.len()];
    let training = |r: &Report, f: usize| -> Vec<Outcome> {
        r.outcomes
            .iter()
            .zip(&fold)
            .filter(|(_, &k)| k != f)
            .map(|(o, _)| o.clone())
            .collect()
    };
    for f in 0..folds {
        let mut best = (f64::NEG_INFINITY, 0usize);
        let base = summarise(first.ranking, first.ingredients, training(first, f));
        for (i, r) in reports.iter().enumerate() {
            let train = training(r, f);
            if matches!(objective, Objective::Guarded(_) | Objective::Tolerant(_)) && i > 0 {
                let cand = summarise(r.ranking, r.ingredients, train.clone());
                let slack = matches!(objective, Objective::Tolerant(_));
                if !no_group_worse_than(&base, &cand, slack) {
                    continue;
                }
            }
            let v = objective.value(&train);
            if v > best.0 + 1e-12 {
                best = (v, i);
            }
        }
        chosen.push(points[best.1].clone());
        fold_sizes.push(fold.iter().filter(|&&k| k == f).count());
        for (i, o) in reports[best.1].outcomes.iter().enumerate() {
            if fold[i] == f {
                oof[i] = Some(o.clone());
            }
        }
    }
    let report = summarise(
        first.ranking,
        first.ingredients,
        oof.into_iter().flatten().collect(),
    );
    Ok(CrossValidation {
        folds,
        objective,
        names: grid.iter().map(|(n, _)| n.clone()).collect(),
        chosen,
        fold_sizes,
        report,
    })
}

/// Whether no kind and no language of `cand` is worse than in `base` on S@1, S@6, MRR@10
/// or nDCG@10 (nor injects more skills per chit-chat turn).
pub fn no_group_worse(base: &Report, cand: &Report) -> bool {
    no_group_worse_than(base, cand, false)
}

/// [`no_group_worse`]; with `one_query`, a group may lose up to one of its queries' worth
/// (`1/n`) on each of S@1, S@6, MRR@10 and nDCG@10 (never more injected chit-chat).
pub fn no_group_worse_than(base: &Report, cand: &Report, one_query: bool) -> bool {
    let worse = |b: &Metrics, c: &Metrics| {
        let slack = if one_query && b.queries > 0 {
            1.0 / b.queries as f64
        } else {
            0.0
        } + 1e-9;
        c.success_at_1 < b.success_at_1 - slack
            || c.success_at_6 < b.success_at_6 - slack
            || c.mrr_at_10 < b.mrr_at_10 - slack
            || c.ndcg_at_10 < b.ndcg_at_10 - slack
            || c.injected_when_empty > b.injected_when_empty + 1e-9
    };
    let groups = |r: &Report| -> Vec<(String, Metrics)> {
        r.by_kind
            .iter()
            .map(|(k, m)| (format!("kind {k}"), m.clone()))
            .chain(
                r.by_lang
                    .iter()
                    .map(|(k, m)| (format!("lang {k}"), m.clone())),
            )
            .collect()
    };
    let c: BTreeMap<String, Metrics> = groups(cand).into_iter().collect();
    groups(base)
        .iter()
        .all(|(g, b)| c.get(g).is_none_or(|m| !worse(b, m)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::{Ingredients, Ranking};

    fn outcome(id: &str, first: Option<usize>, injected: usize) -> Outcome {
        Outcome {
            id: id.into(),
            kind: "k".into(),
            lang: "en".into(),
            labelled: injected == 0,
            ndcg_at_10: first.map_or(0.0, |r| 1.0 / r as f64),
            ndcg_at_6: first.map_or(0.0, |r| 1.0 / r as f64),
            injected,
            named: 0,
            helpful: 0,
            ungraded: 0,
            first_relevant: first,
            found: first.is_some_and(|r| r <= injected),
            top: Vec::new(),
            scores: Vec::new(),
            grades: Vec::new(),
        }
    }

    #[test]
    fn folds_are_deterministic_and_spread() {
        assert_eq!(fold_of("q001", 5), fold_of("q001", 5));
        let mut counts = [0usize; 5];
        for i in 0..500 {
            counts[fold_of(&format!("q{i:03}"), 5)] += 1;
        }
        assert!(counts.iter().all(|&c| c > 60), "{counts:?}");
    }

    #[test]
    fn grid_is_a_cartesian_product() {
        let g = vec![
            ("a".to_owned(), vec![0.0, 1.0]),
            ("b".to_owned(), vec![2.0, 3.0, 4.0]),
        ];
        let p = grid_points(&g);
        assert_eq!(p.len(), 6);
        assert_eq!(p[0], vec![0.0, 2.0]);
        assert_eq!(p[5], vec![1.0, 4.0]);
        assert_eq!(grid_points(&[]), vec![Vec::<f64>::new()]);
    }

    #[test]
    fn objective_penalises_injection() {
        let o = [
            outcome("a", Some(1), 0),
            outcome("b", Some(2), 0),
            outcome("c", None, 6),
        ];
        assert!((Objective::Mrr.value(&o) - 0.75).abs() < 1e-12);
        assert!((Objective::MrrLessInjected(0.05).value(&o) - 0.45).abs() < 1e-12);
    }

    #[test]
    fn the_tolerant_guard_allows_one_query_per_group_and_no_more() {
        let ids: Vec<String> = (0..10).map(|i| format!("q{i}")).collect();
        let report = |firsts: &[Option<usize>]| {
            summarise(
                Ranking::Default,
                Ingredients::default(),
                ids.iter()
                    .zip(firsts)
                    .map(|(id, f)| outcome(id, *f, 0))
                    .collect(),
            )
        };
        let base = report(&[Some(1); 10]);
        let mut one = [Some(1); 10];
        one[0] = Some(2);
        let mut two = one;
        two[1] = Some(2);
        assert!(!no_group_worse(&base, &report(&one)));
        assert!(no_group_worse_than(&base, &report(&one), true));
        assert!(!no_group_worse_than(&base, &report(&two), true));
    }

    #[test]
    fn each_fold_is_scored_with_values_chosen_without_it() {
        // A parameter that helps every query: it is chosen in every fold, and the report is
        // that of the good point. The ids cover every fold.
        let ids: Vec<String> = (0..50).map(|i| format!("q{i:03}")).collect();
        let grid = vec![("w".to_owned(), vec![0.0, 1.0])];
        let cv = cross_validate::<()>(5, &grid, Objective::Mrr, |p| {
            let first = if p[0] > 0.5 { Some(1) } else { Some(2) };
            Ok(summarise(
                Ranking::Default,
                Ingredients::default(),
                ids.iter().map(|id| outcome(id, first, 0)).collect(),
            ))
        })
        .unwrap();
        assert_eq!(cv.chosen, vec![vec![1.0]; 5]);
        assert_eq!(cv.fold_sizes.iter().sum::<usize>(), 50);
        assert!((cv.report.overall.mrr_at_10 - 1.0).abs() < 1e-12);
        assert_eq!(cv.report.outcomes.len(), 50);
    }
}
