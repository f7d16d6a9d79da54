//! Selection, the step between a ranking and a prompt: which of the ranked hits are shown.
//!
//! A ranking orders skills; a prompt has room for a few. [`select`] keeps, in order:
//!
//! 1. hits whose id can be shown ([`safety::id_problem`]): one that cannot neither takes a
//!    place nor sets the floor;
//! 2. hits scoring at least `min_score_ratio` of the best (the best always stays);
//! 3. one entry per capability: a hit that is a copy of a better one ([`copies`]: the same
//!    name once generic words are set aside, or a near-identical description) is folded
//!    into that entry as one of its [`Hit::alternatives`] instead of taking a place. A
//!    hub-synced home holds the same converter from several hubs, and six slots should
//!    carry six capabilities;
//!
//! then the first `k` entries. The plugin, `skillidx eval` and the reranker's candidates
//! all select with this one function, so what is measured is what is injected.

use crate::safety;
use crate::search::{Alternative, Hit};
use crate::tokenize::analyze_with;
use rustc_hash::FxHashSet;

/// How many alternatives an entry names at most: enough to offer a choice, few enough to
/// keep the block short.
pub const MAX_ALTERNATIVES: usize = 3;

/// The share of description terms two skills must have in common (Jaccard) to count as
/// copies of each other.
pub const SAME_DESCRIPTION: f64 = 0.7;

/// Hits fetched per entry to be shown: enough that entries remain after copies fold.
pub const FETCH_PER_ENTRY: usize = 4;

/// Descriptions with fewer distinct terms than this are not compared: two short ones share
/// most of their words by chance.
const MIN_DESCRIPTION_TERMS: usize = 5;

/// Name words that say what kind of thing a skill is, not what it does: left out when two
/// names are compared (`PDF Markdown Converter` and `pdf-to-markdown` are one capability),
/// in analysed form. Hub suffixes (`-clawhub`) are among them.
const GENERIC_NAME_WORDS: &[&str] = &[
    "a", "an", "the", "to", "and", "for", "of", "with", "via", "use", "skill", "tool", "convert",
    "helper", "assist", "agent", "pro", "plus", "lite", "mcp", "api", "cli", "bot", "app",
    "offici", "clawhub", "lobehub", "skillssh", "hub", "v",
];

/// Options of [`select`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Selection {
    /// Entries shown at most.
    pub k: usize,
    /// The share of the best score a hit needs (≤ 0: every hit qualifies).
    pub min_score_ratio: f64,
    /// Whether copies fold into one entry.
    pub fold_copies: bool,
}

/// What an injection shows for `query` from the live index: the floored search, fetched
/// [`FETCH_PER_ENTRY`] deep per entry, then [`select`]ed to `k` entries within
/// `min_score_ratio` of the best, copies folded. The MCP server and the agent hooks answer
/// with it (the Hermes plugin adds its session's allow-list in between).
pub fn injected(
    live: &crate::refresh::LiveIndex,
    query: &str,
    k: usize,
    min_score_ratio: f64,
) -> Result<Vec<Hit>, crate::Error> {
    let opts = crate::search::SearchOptions {
        k: k.saturating_mul(FETCH_PER_ENTRY),
        floor: true,
        ..Default::default()
    };
    let selection = Selection {
        k,
        min_score_ratio,
        fold_copies: true,
    };
    Ok(select(live.search(query, &opts)?, &selection))
}

/// The hits to show, best first: see the module documentation.
pub fn select(hits: Vec<Hit>, opts: &Selection) -> Vec<Hit> {
    let mut hits: Vec<Hit> = hits
        .into_iter()
        .filter(|h| safety::id_problem(&h.id).is_none())
        .collect();
    if let Some(best) = hits.first().map(|h| h.score) {
        if opts.min_score_ratio > 0.0 {
            let floor = best * opts.min_score_ratio;
            hits.retain(|h| h.score >= floor);
        }
    }
    if !opts.fold_copies {
        hits.truncate(opts.k);
        return hits;
    }
    let mut entries: Vec<(Hit, Likeness)> = Vec::with_capacity(opts.k);
    for hit in hits {
        let likeness = Likeness::of(&hit);
        match entries.iter().position(|(_, l)| copies(l, &likeness)) {
            Some(i) => {
                let named = &mut entries[i].0.alternatives;
                if named.len() < MAX_ALTERNATIVES {
                    named.push(Alternative::of(&hit));
                }
            }
            // A later hit may still be a copy of a kept entry, and is then named by it.
            None if entries.len() < opts.k => entries.push((hit, likeness)),
            None => {}
        }
    }
    entries.into_iter().map(|(h, _)| h).collect()
}

/// What two skills are compared by to tell a copy.
#[derive(Debug)]
pub struct Likeness {
    /// The name's analysed words, in order, generic words and numbers left out.
    name: Vec<String>,
    /// The description's distinct analysed words.
    description: FxHashSet<String>,
}

impl Likeness {
    /// The likeness of `hit`: its name (the folder name when it has none) and description.
    pub fn of(hit: &Hit) -> Likeness {
        let mut name = Vec::new();
        let source = if hit.name.trim().is_empty() {
            hit.path.rsplit('/').nth(1).unwrap_or_default()
        } else {
            hit.name.as_str()
        };
        analyze_with(source, |t| {
            let generic = GENERIC_NAME_WORDS.contains(&t)
                || t.bytes().all(|b| b.is_ascii_digit() || b == b'.')
                || (t.starts_with('v') && t[1..].bytes().all(|b| b.is_ascii_digit()));
            if !generic {
                name.push(t.to_owned());
            }
        });
        let mut description = FxHashSet::default();
        analyze_with(&hit.description, |t| {
            description.insert(t.to_owned());
        });
        Likeness { name, description }
    }
}

/// Whether two skills are copies of one capability: the same name once generic words are
/// set aside (`pdf-to-markdown`, `PDF to Markdown Converter`; the order counts, so
/// `markdown-to-pdf` is another), or descriptions sharing [`SAME_DESCRIPTION`] of their
/// terms.
pub fn copies(a: &Likeness, b: &Likeness) -> bool {
    if !a.name.is_empty() && a.name == b.name {
        return true;
    }
    let (x, y) = (&a.description, &b.description);
    if x.len() < MIN_DESCRIPTION_TERMS || y.len() < MIN_DESCRIPTION_TERMS {
        return false;
    }
    let shared = x.intersection(y).count();
    let union = x.len() + y.len() - shared;
    shared as f64 >= SAME_DESCRIPTION * union as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hit(name: &str, desc: &str, score: f64) -> Hit {
        Hit {
            id: name.to_owned(),
            name: name.to_owned(),
            category: "other".to_owned(),
            description: desc.to_owned(),
            score,
            path: format!("/h/skills/other/{name}/SKILL.md"),
            alternatives: Vec::new(),
        }
    }

    fn opts(k: usize) -> Selection {
        Selection {
            k,
            min_score_ratio: 0.25,
            fold_copies: true,
        }
    }

    #[test]
    fn copies_fold_into_the_better_entry() {
        let hits = vec![
            hit(
                "PDF to markdown converter",
                "Convert PDF documents to Markdown via a CLI.",
                9.0,
            ),
            hit(
                "Markdown to PDF",
                "Render Markdown files as styled PDF documents.",
                8.0,
            ),
            hit(
                "pdf-to-markdown-clawhub-2",
                "OCR scanned pages into Markdown text.",
                7.0,
            ),
            hit(
                "Pdf To Markdown",
                "Extract tables from PDF files into Markdown.",
                6.0,
            ),
            hit(
                "csv-tools",
                "Clean, merge and reshape CSV files from the command line.",
                5.0,
            ),
            hit(
                "csv-wrangler",
                "clean, merge and reshape CSV files from the command line!",
                4.0,
            ),
        ];
        let shown = select(hits, &opts(6));
        let names: Vec<&str> = shown.iter().map(|h| h.name.as_str()).collect();
        // The direction of a conversion is part of the capability.
        assert_eq!(
            names,
            ["PDF to markdown converter", "Markdown to PDF", "csv-tools"]
        );
        let alts: Vec<&str> = shown[0]
            .alternatives
            .iter()
            .map(|a| a.id.as_str())
            .collect();
        assert_eq!(alts, ["pdf-to-markdown-clawhub-2", "Pdf To Markdown"]);
        assert_eq!(shown[2].alternatives[0].id, "csv-wrangler");
    }

    #[test]
    fn k_counts_entries_and_later_copies_are_still_named() {
        let hits = vec![
            hit("alpha", "one", 9.0),
            hit("beta", "two", 8.0),
            hit("gamma", "three", 7.0),
            hit("alpha-skill", "four", 6.0),
        ];
        let shown = select(hits, &opts(2));
        assert_eq!(shown.len(), 2);
        assert_eq!(shown[0].alternatives[0].id, "alpha-skill");
    }

    #[test]
    fn the_floor_and_unshowable_ids_come_first() {
        let hits = vec![
            hit("bad*id", "x", 100.0),
            hit("alpha", "one", 9.0),
            hit("beta", "two", 2.0),
        ];
        let shown = select(hits, &opts(6));
        assert_eq!(
            shown.len(),
            1,
            "the bad id sets no floor; beta is under 0.25 × 9"
        );
        let unfolded = Selection {
            fold_copies: false,
            ..opts(1)
        };
        let two = vec![hit("alpha", "x", 2.0), hit("alpha", "x", 1.0)];
        assert_eq!(select(two, &unfolded).len(), 1);
    }
}
