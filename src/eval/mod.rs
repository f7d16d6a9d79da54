//! The evaluation harness: run a labelled query file against an index and measure ranking.
//!
//! A query file has one JSON object per line:
//! `{"id", "kind", "lang", "query", "relevant": ["<collection>/<category>/<skill-dir>", …]}`,
//! where each relevant entry is a skill folder relative to the home's `skills/`. A query with
//! no relevant skill (chit-chat, off-topic, general knowledge) should retrieve nothing; for
//! those the harness counts how many skills would be injected.
//!
//! Every hit is graded ([`judgements`]): labels, their same-name copies (hub copies of a
//! labelled skill) and a pool of hits graded by reading them, which a hub-sized home needs
//! since its labels miss most good hits. The steps, one file each: [`queries`] (the files),
//! [`judgements`], [`metrics`] (per query, per group), [`cv`] (cross-validation) and
//! [`table`].

pub mod cv;
pub mod judgements;
pub mod metrics;
pub mod queries;
pub mod table;

pub use cv::{
    cross_validate, fold_of, grid_points, no_group_worse, no_group_worse_than, CrossValidation,
    Objective,
};
pub use judgements::{load_pool, Grade, Judged, Judgements, Ungraded};
pub use metrics::{summarise, Metrics, Outcome, Report, INJECTED};
pub use queries::{load, EvalError, Query};
pub use table::{chitchat_line, column_name, table};

use crate::search::{Ingredients, Ranking, SearchOptions};
use crate::select::{select, Selection};
use crate::Index;
use std::collections::HashSet;
use std::path::Path;

/// What an evaluation runs against: a profile of an index, its skills folder, the queries,
/// their grades and the session.
pub struct Setup<'a> {
    /// The index.
    pub index: &'a Index,
    /// The profile.
    pub profile: &'a str,
    /// The profile's `skills/`, which query labels are relative to.
    pub skills_root: &'a Path,
    /// The queries.
    pub queries: &'a [Query],
    /// Their grades.
    pub judgements: &'a Judgements,
    /// The session the answers are for.
    pub session: &'a crate::offer::Session,
    /// How the injected hits are chosen from the ranking ([`plugin_selection`]).
    pub selection: Selection,
}

/// The plugin's default selection: six entries at most, each at least a quarter of the best
/// score, copies folded.
pub fn plugin_selection() -> Selection {
    Selection {
        k: INJECTED,
        min_score_ratio: crate::hermes::DEFAULT_MIN_SCORE_RATIO,
        fold_copies: true,
    }
}

/// Runs the queries with `ranking` and `ingredients`.
pub fn evaluate(
    setup: &Setup<'_>,
    ranking: Ranking,
    ingredients: Ingredients,
) -> Result<(Report, Vec<Ungraded>), EvalError> {
    let opts = SearchOptions {
        ranking,
        ingredients,
        ..Default::default()
    };
    evaluate_with(setup, &opts)
}

/// [`evaluate`] with the ranking, ingredients (and, with the `semantic` feature, the
/// semantic stage) of `base`; `k`, the floor and the session are set as the plugin would.
/// Returns the report and the injected hits nothing grades, for a reader to grade.
pub fn evaluate_with(
    setup: &Setup<'_>,
    base: &SearchOptions,
) -> Result<(Report, Vec<Ungraded>), EvalError> {
    let (ranking, ingredients) = (base.ranking, base.ingredients);
    // Skills that the session is not offered (a duplicate in the same category, a skill for
    // another environment) cannot be retrieved; the ideal ranking is computed without them.
    let offered: HashSet<String> = setup
        .index
        .offered(setup.profile, setup.session)?
        .into_iter()
        .map(|s| judgements::folder_of(&s.path, setup.skills_root))
        .collect();
    let mut outcomes = Vec::new();
    let mut ungraded = Vec::new();
    for q in setup.queries {
        let opts = SearchOptions {
            k: 10.max(INJECTED * crate::select::FETCH_PER_ENTRY),
            // What the plugin would inject, floor included.
            floor: true,
            session: Some(setup.session.clone()),
            ..base.clone()
        };
        let hits = setup.index.search(setup.profile, &q.query, &opts)?;
        let folders: Vec<String> = hits
            .iter()
            .map(|h| judgements::folder_of(&h.path, setup.skills_root))
            .collect();
        let grades: Vec<Option<Grade>> = folders
            .iter()
            .map(|f| setup.judgements.grade(&q.id, f))
            .collect();
        // As injected: the plugin's selection (its default ratio to the best, six at most).
        let shown_hits = select(hits.clone(), &setup.selection);
        let mut shown = Vec::with_capacity(shown_hits.len());
        for h in &shown_hits {
            let folder = judgements::folder_of(&h.path, setup.skills_root);
            let grade = setup.judgements.grade(&q.id, &folder);
            if grade.is_none() {
                ungraded.push(Ungraded {
                    query: q.id.clone(),
                    text: q.query.clone(),
                    skill: folder,
                    name: h.name.clone(),
                    description: h.description.clone(),
                });
            }
            shown.push(grade);
        }
        let injected = shown.len();
        let named = shown_hits.iter().map(|h| h.alternatives.len()).sum();
        let ideal = setup
            .judgements
            .ideal(&q.id, &|f: &str| offered.contains(f));
        let s = Outcome::score(&grades, &shown, &ideal);
        outcomes.push(Outcome {
            id: q.id.clone(),
            kind: q.kind.clone(),
            lang: q.lang.clone(),
            labelled: setup.judgements.labelled(q),
            ndcg_at_10: s.ndcg_at_10,
            ndcg_at_6: s.ndcg_at_6,
            injected,
            named,
            helpful: s.helpful,
            ungraded: s.ungraded,
            first_relevant: s.first_relevant,
            found: s.found,
            scores: hits.iter().map(|h| h.score).collect(),
            top: hits.into_iter().map(|h| h.id).collect(),
            grades,
        });
    }
    Ok((summarise(ranking, ingredients, outcomes), ungraded))
}
