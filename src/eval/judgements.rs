//! What each skill is worth for each query.
//!
//! Three sources, the first that knows a (query, skill) pair wins:
//!
//! 1. the graded pool (`tests/eval/graded.jsonl`): skills a reader judged for a query, blind
//!    to which ranking change brought them, `2` should be loaded, `1` a useful alternative,
//!    `0` not useful. At hub scale the labels miss most good hits; the pool grows whenever a
//!    change brings ungraded hits into the top 6 ([`Ungraded`]);
//! 2. the query's labels (`relevant`): grade 2;
//! 3. their same-name copies: a skill carrying the name of a labelled skill (a hub copy of
//!    it) is grade 2 too.
//!
//! A skill none of them knows is ungraded: it counts as 0, and the evaluation reports how
//! many such hits each ranking shows, so that they can be graded.

use super::queries::{json_lines, EvalError, Query};
use crate::search::Offered;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// How useful a skill is for a query: 2 should be loaded, 1 a useful alternative, 0 not.
pub type Grade = u8;

/// The grade that makes a hit a success (S@k, MRR).
pub const RELEVANT: Grade = 2;

/// One line of the graded pool.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Judged {
    /// The query id.
    pub query: String,
    /// The skill folder, relative to `skills/`.
    pub skill: String,
    /// Its grade.
    pub grade: Grade,
}

/// A top-6 hit no source grades, for a reader to grade.
#[derive(Debug, Clone, Serialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ungraded {
    /// The query id.
    pub query: String,
    /// The request.
    pub text: String,
    /// The skill folder, relative to `skills/`.
    pub skill: String,
    /// The skill's name.
    pub name: String,
    /// Its description.
    pub description: String,
}

/// Grades per query.
#[derive(Debug, Clone, Default)]
pub struct Judgements {
    by_query: FxHashMap<String, FxHashMap<String, Grade>>,
}

/// Reads a graded pool file.
pub fn load_pool(path: &Path) -> Result<Vec<Judged>, EvalError> {
    json_lines(path)
}

impl Judgements {
    /// The grades of `queries`: the `pool`, the labels, and the labels' same-name copies
    /// among `offered` (every skill, with its path under `skills_root`).
    pub fn new(
        queries: &[Query],
        pool: &[Judged],
        offered: &[Offered],
        skills_root: &Path,
    ) -> Judgements {
        let mut by_name: FxHashMap<&str, Vec<String>> = FxHashMap::default();
        let mut name_of: FxHashMap<String, &str> = FxHashMap::default();
        for o in offered {
            let folder = folder_of(&o.path, skills_root);
            by_name.entry(&o.name).or_default().push(folder.clone());
            name_of.insert(folder, &o.name);
        }
        let mut by_query: FxHashMap<String, FxHashMap<String, Grade>> = FxHashMap::default();
        for q in queries {
            let grades = by_query.entry(q.id.clone()).or_default();
            for label in q.relevant.iter().map(|r| r.trim_end_matches('/')) {
                let copies = name_of
                    .get(label)
                    .and_then(|n| by_name.get(n))
                    .into_iter()
                    .flatten();
                for folder in copies {
                    grades.insert(folder.clone(), RELEVANT);
                }
                grades.insert(label.to_owned(), RELEVANT);
            }
        }
        for j in pool {
            by_query
                .entry(j.query.clone())
                .or_default()
                .insert(j.skill.trim_end_matches('/').to_owned(), j.grade);
        }
        Judgements { by_query }
    }

    /// The grade of `folder` for `query`, `None` when nothing grades it.
    pub fn grade(&self, query: &str, folder: &str) -> Option<Grade> {
        self.by_query.get(query)?.get(folder).copied()
    }

    /// Whether the query has a skill of grade 2 (else it should inject nothing).
    pub fn labelled(&self, q: &Query) -> bool {
        !q.relevant.is_empty()
    }

    /// The best grades a ranking could show for `query`, best first, among the folders
    /// `offered` holds.
    pub fn ideal(&self, query: &str, offered: &dyn Fn(&str) -> bool) -> Vec<Grade> {
        let mut grades: Vec<Grade> = self
            .by_query
            .get(query)
            .into_iter()
            .flatten()
            .filter(|(f, &g)| g > 0 && offered(f))
            .map(|(_, &g)| g)
            .collect();
        grades.sort_unstable_by(|a, b| b.cmp(a));
        grades
    }
}

/// A SKILL.md path as a skill folder relative to `skills_root`.
pub fn folder_of(path: &str, skills_root: &Path) -> String {
    let p = Path::new(path);
    let folder = p.parent().unwrap_or(p);
    folder
        .strip_prefix(skills_root)
        .unwrap_or(folder)
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offered(path: &str, name: &str) -> Offered {
        Offered {
            category: String::new(),
            name: name.into(),
            id: name.into(),
            path: format!("/h/skills/{path}/SKILL.md"),
            description: String::new(),
            doc: 0,
        }
    }

    #[test]
    fn the_pool_wins_then_labels_then_their_copies() {
        let q = Query {
            id: "q1".into(),
            kind: "direct".into(),
            lang: "en".into(),
            query: "pdf to markdown".into(),
            relevant: vec!["corpus/pdf".into()],
        };
        let all = [
            offered("corpus/pdf", "pdf-to-md"),
            offered("other/pdf-to-md", "pdf-to-md"),
            offered("other/pdf-to-md-2", "pdf-to-md"),
            offered("other/unrelated", "weather"),
        ];
        let pool = [Judged {
            query: "q1".into(),
            skill: "other/pdf-to-md-2".into(),
            grade: 1,
        }];
        let j = Judgements::new(&[q], &pool, &all, Path::new("/h/skills"));
        assert_eq!(j.grade("q1", "corpus/pdf"), Some(2));
        assert_eq!(j.grade("q1", "other/pdf-to-md"), Some(2));
        assert_eq!(j.grade("q1", "other/pdf-to-md-2"), Some(1));
        assert_eq!(j.grade("q1", "other/unrelated"), None);
        assert_eq!(j.ideal("q1", &|_| true), vec![2, 2, 1]);
        assert_eq!(j.ideal("q1", &|f| f != "corpus/pdf"), vec![2, 1]);
    }
}
