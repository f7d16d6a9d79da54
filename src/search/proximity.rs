//! Ordered proximity: word order and direction.
//!
//! A bag of words cannot tell "convert this PDF to Markdown" from "convert Markdown to PDF".
//! This signal can: for each pair of query terms in query order, at most [`QUERY_SPAN`]
//! positions apart with a word of direction between them (`to`, `into`, `as`, `转成`), a candidate whose name or description has the first term followed by the
//! second at most [`WINDOW`] positions later scores the pair. The pairs weigh
//! `min(idf, idf)`, and a candidate's proximity is the share of the pair weight it scores,
//! in `[0, 1]`. The top [`CANDIDATES`] hits then gain `weight × best score × proximity`, so
//! the bonus is on the scale of the query's scores whatever their size; `weight`
//! ([`DEFAULT_PROXIMITY`]) is chosen by cross-validation (`skillidx eval --folds 5`).
//!
//! Positions are not in the postings: the sync stores each document's name and description
//! analysed, in word order (the `words` table, `analyze::word_order`), and the few candidates'
//! are read from there (a document without that row is analysed from its record, with the
//! same analyzer). Only the Latin-script query terms count (CJK bigrams overlap, so their
//! order says little), and only for short requests: a long turn (more than [`MAX_TERMS`]
//! terms) is not a phrase.

use super::plan::Plan;
use super::query::Query;
use super::score::{by_score, Watch};
use super::{Ranking, SearchOptions, Snapshot};
use crate::fields::Field;
use crate::store::{open_or_none, StoreError};
use crate::tokenize::analyze_where;
use crate::varint::Reader;
use rustc_hash::FxHashMap;

/// How many of the best hits are considered.
pub const CANDIDATES: usize = 30;
/// How far apart (in analysed terms, stop words included) the two terms of a pair may be
/// in a name or description: `Converts PDF (.pdf) documents into Markdown` has `markdown`
/// three terms after the last `pdf`.
pub const WINDOW: usize = 4;
/// How far apart (in analysed terms, stop words and CJK terms included) two query terms
/// may be to form a pair: `turn spec.md into a .docx` pairs `md` with `docx`, and
/// `Markdown README as a standalone HTML` pairs `readme` with `html`.
pub const QUERY_SPAN: usize = 4;
/// Queries with more scored Latin terms than this get no proximity signal.
pub const MAX_TERMS: usize = 12;
/// Words of direction between two query terms (analysed forms).
pub const DIRECTION_WORDS: [&str; 4] = ["to", "into", "as", "toward"];
/// Characters of direction in a CJK term between two query terms: Chinese `成` (`转成`,
/// `做成`), `为` (`转换为`), `到` (`发布到`), Japanese `に`, `へ`.
pub const DIRECTION_MARKS: [char; 5] = ['成', '为', '到', 'に', 'へ'];
/// The default weight (a share of the best score); cross-validation chooses it.
pub const DEFAULT_PROXIMITY: f64 = 0.3;
/// The values cross-validation chooses the weight from.
pub const PROXIMITY_GRID: [f64; 7] = [0.0, 0.05, 0.1, 0.2, 0.3, 0.45, 0.6];

/// The query's ordered term pairs (see the module), set up before scoring so that the
/// scoring walk notes where their terms occur and no list is decoded twice.
pub(super) struct Pairs {
    /// The pairs' terms, sorted; a pair is two indices into them.
    terms: Vec<String>,
    /// (first, second, weight) of each pair.
    pairs: Vec<(u8, u8, f64)>,
    /// For each planned term, its index in `terms` when it is one.
    watched: Vec<Option<u8>>,
    /// For each of `terms`, the postings (document, name/description bits) of the planned
    /// terms that are it, in list order, left out where neither bit is set.
    seen: Vec<Vec<(u32, u32)>>,
}

impl Pairs {
    /// The pairs of `query`, or `None` when [`boost`] would change nothing whatever the
    /// scores: the seed ranking, proximity switched off, or fewer than two Latin terms in
    /// a pair.
    pub(super) fn new(query: &Query<'_>, plan: &Plan, opts: &SearchOptions) -> Option<Pairs> {
        if opts.ranking != Ranking::Default
            || !opts.ingredients.proximity
            || opts.ingredients.weights.proximity <= 0.0
        {
            return None;
        }
        let named = query_pairs(query, plan);
        if named.is_empty() {
            return None;
        }
        let mut terms: Vec<String> = named
            .iter()
            .flat_map(|(a, b, _)| [a.clone(), b.clone()])
            .collect();
        terms.sort_unstable();
        terms.dedup();
        let index = |term: &str| {
            terms
                .binary_search_by(|t| t.as_str().cmp(term))
                .ok()
                .map(|i| i as u8)
        };
        let pairs = named
            .iter()
            .map(|(a, b, w)| (index(a).unwrap_or(0), index(b).unwrap_or(0), *w))
            .collect();
        let watched = plan.terms.iter().map(|t| index(&t.term)).collect();
        let seen = vec![Vec::new(); terms.len()];
        Some(Pairs {
            terms,
            pairs,
            watched,
            seen,
        })
    }
}

impl Watch for Pairs {
    /// Where the scoring walk of planned term `i` notes its postings, if it is a pair term.
    fn watching(&mut self, i: usize) -> Option<&mut Vec<(u32, u32)>> {
        let j = self.watched.get(i).copied().flatten()?;
        self.seen.get_mut(usize::from(j))
    }

    /// Notes a posting of a pair term, with `mask` its fields.
    #[inline]
    fn note(seen: &mut Vec<(u32, u32)>, doc: u32, mask: u32) {
        if mask & NAME_OR_DESCRIPTION != 0 {
            seen.push((doc, mask & NAME_OR_DESCRIPTION));
        }
    }
}

/// Adds the proximity bonus to the best [`CANDIDATES`] of `scores` (see the module), for
/// the `pairs` that scoring noted. No pairs (the seed ranking, a query with fewer than two
/// Latin terms), or fewer than two scores, leave the scores as they are.
pub(super) fn boost(
    snap: &Snapshot,
    pairs: Option<Pairs>,
    opts: &SearchOptions,
    mut scores: Vec<(u32, f64)>,
) -> Result<Vec<(u32, f64)>, StoreError> {
    let Some(pairs) = pairs else {
        return Ok(scores);
    };
    if scores.len() < 2 {
        return Ok(scores);
    }
    let weight = opts.ingredients.weights.proximity;
    let total: f64 = pairs.pairs.iter().map(|p| p.2).sum();
    let terms: Vec<&str> = pairs.terms.iter().map(String::as_str).collect();
    // The best CANDIDATES, selected (in no particular order) rather than sorting every
    // match: the bonus each gets does not depend on the order they are visited in.
    if scores.len() > CANDIDATES {
        scores.select_nth_unstable_by(CANDIDATES - 1, by_score);
    }
    let n = CANDIDATES.min(scores.len());
    let candidates = &mut scores[..n];
    let best = candidates
        .iter()
        .map(|&(_, s)| s)
        .max_by(f64::total_cmp)
        .unwrap_or(0.0);
    let docs: Vec<u32> = candidates.iter().map(|&(d, _)| d).collect();
    let possible = pairs_possible(&pairs, &docs);
    let word_order = open_or_none(snap.store, snap.txn, snap.tables.words())?;
    for ((doc, score), possible) in candidates.iter_mut().zip(possible) {
        if possible == 0 {
            // No pair can be in order there: it gains nothing (`+= 0.0` would leave the
            // score as it is), so nothing of it is read.
            continue;
        }
        let stored = match &word_order {
            Some(table) => table.get(*doc).map_err(|e| snap.store.err(e))?,
            None => None,
        };
        // A field that holds both terms of no pair has no pair in order: left unread (as
        // no terms), it changes nothing.
        let wanted = |field: Field| possible & 1 << field as u32 != 0;
        let fields = match &stored {
            Some(row) => {
                let texts = word_rows(row.value()).ok_or_else(|| {
                    snap.store
                        .bad_record(format!("word order of {doc}: malformed row"))
                })?;
                [(Field::Name, texts.0), (Field::Description, texts.1)].map(|(field, text)| {
                    match wanted(field) {
                        true => stored_ids(text, &terms),
                        false => Vec::new(),
                    }
                })
            }
            // A document without its word order (a damaged file) is analysed here, with
            // the same analyzer: slower, the same bonus.
            None => {
                let Some((head, body)) = snap.doc(*doc)? else {
                    continue;
                };
                [
                    (Field::Name, head.name),
                    (Field::Description, body.description),
                ]
                .map(|(field, text)| match wanted(field) {
                    true => term_ids(&text, &terms),
                    false => Vec::new(),
                })
            }
        };
        let got: f64 = pairs
            .pairs
            .iter()
            .filter(|&&(a, b, _)| fields.iter().any(|f| ordered(f, a, b)))
            .map(|p| p.2)
            .sum();
        *score += weight * best * got / total;
    }
    Ok(scores)
}

/// The name and description fields, as a mask.
const NAME_OR_DESCRIPTION: u32 = 1 << Field::Name as u32 | 1 << Field::Description as u32;

/// For each of `docs`, the fields among the name and the description (as a mask) that hold
/// both terms of some pair, as the postings' field masks (noted while scoring) say. Those
/// fields are indexed with the analyzer whose word order [`boost`] reads, so a pair in order
/// in a field needs both of its terms in that field's postings: a field this leaves out has
/// no pair in order, and reading it (or anything of the document, for an empty mask) can be
/// skipped without changing any score.
fn pairs_possible(pairs: &Pairs, docs: &[u32]) -> Vec<u32> {
    let terms = pairs.terms.len();
    let mut sorted: Vec<(u32, usize)> = docs.iter().enumerate().map(|(i, &d)| (d, i)).collect();
    sorted.sort_unstable();
    // masks[candidate * terms + term]: the name/description bits of the term's postings.
    let mut masks = vec![0u32; docs.len() * terms];
    for (j, seen) in pairs.seen.iter().enumerate() {
        for &(doc, mask) in seen {
            if let Ok(s) = sorted.binary_search_by_key(&doc, |&(d, _)| d) {
                masks[sorted[s].1 * terms + j] |= mask;
            }
        }
    }
    (0..docs.len())
        .map(|i| {
            let row = &masks[i * terms..(i + 1) * terms];
            pairs
                .pairs
                .iter()
                .fold(0, |m, &(a, b, _)| m | row[a as usize] & row[b as usize])
        })
        .collect()
}

/// The query's ordered term pairs with their weights: two scored Latin terms (a typo as
/// the term it was matched to) at most [`QUERY_SPAN`] positions apart in the analysed query
/// (stop words and CJK terms counted, so that words in different clauses do not pair),
/// with a word of direction between them ([`DIRECTION_WORDS`]: `PDF to Markdown`,
/// `spec.md into a .docx`; [`DIRECTION_MARKS`] in a CJK term between them, `PDF转换成
/// Markdown`, or `に`/`へ` right after the second, `Word文書をMarkdownに`). Without one,
/// two words side by side are mostly a compound (`review PR`, `Cloud SQL`), whose order
/// skills do not keep.
fn query_pairs(query: &Query<'_>, plan: &Plan) -> Vec<(String, String, f64)> {
    let planned: FxHashMap<&str, (&str, f64)> = plan
        .terms
        .iter()
        .filter(|t| !t.cjk)
        .map(|t| {
            (
                t.typo_of.as_deref().unwrap_or(&t.term),
                (t.term.as_str(), t.idf),
            )
        })
        .collect();
    if planned.len() < 2 || planned.len() > MAX_TERMS {
        return Vec::new();
    }
    let words = &query.words;
    let seq: Vec<Option<(&str, f64)>> = words
        .iter()
        .map(|w| planned.get(w.as_str()).copied())
        .collect();
    let mut pairs: Vec<(String, String, f64)> = Vec::new();
    for (p, a) in seq.iter().enumerate() {
        let Some((a, ia)) = a else { continue };
        for q in p + 1..seq.len().min(p + 1 + QUERY_SPAN) {
            let Some((b, ib)) = seq[q] else { continue };
            if *a == b || pairs.iter().any(|(x, y, _)| x == a && y == b) {
                continue;
            }
            let between = &words[p + 1..q];
            let marked = between.iter().any(|w| {
                DIRECTION_WORDS.contains(&w.as_str())
                    || w.chars().any(|c| DIRECTION_MARKS.contains(&c))
            }) || words
                .get(q + 1)
                .is_some_and(|w| w.starts_with(['に', 'へ']));
            if marked {
                pairs.push(((*a).to_owned(), b.to_owned(), ia.min(ib)));
            }
        }
    }
    pairs
}

/// Marks a term of `text` that is none of the pair terms (see [`term_ids`]).
const OTHER: u8 = u8::MAX;

/// `text` analysed, each term as its index in `terms` (at most 254 of them), or [`OTHER`]:
/// the order of the pair terms and the distances between them, without a string per term.
fn term_ids(text: &str, terms: &[&str]) -> Vec<u8> {
    let firsts: Vec<(u8, usize)> = terms
        .iter()
        .filter_map(|t| Some((t.bytes().next()?, t.len())))
        .collect();
    let mut ids = Vec::new();
    // A word that has another first letter than every term, or is shorter than each term
    // with its first letter, is none of them, stemmed or not (see `analyze_where`), so it
    // is not stemmed.
    let stem_if = |w: &str| {
        w.bytes()
            .next()
            .is_some_and(|b| firsts.iter().any(|&(f, len)| f == b && w.len() >= len))
    };
    analyze_where(text, stem_if, |t| ids.push(id_of(t.as_bytes(), terms)));
    ids
}

/// `term`'s index in `terms`, or [`OTHER`]; compared as bytes, so a stored word needs no
/// UTF-8 check.
fn id_of(term: &[u8], terms: &[&str]) -> u8 {
    terms
        .iter()
        .position(|t| t.as_bytes() == term)
        .map_or(OTHER, |i| i as u8)
}

/// The name's and the description's stored word order from a `words` row: postcard's
/// `(String, String)`, each a varint length and its bytes. They stay bytes: [`id_of`] only
/// tests their words for equality with the terms.
fn word_rows(row: &[u8]) -> Option<(&[u8], &[u8])> {
    let mut r = Reader::new(row);
    let mut text = || {
        let len = usize::try_from(r.next_u64()?).ok()?;
        r.take(len)
    };
    Some((text()?, text()?))
}

/// [`term_ids`] of a field from its stored word order (`analyze::word_order`: the analysed
/// terms joined by single spaces), without analysing it again.
fn stored_ids(words: &[u8], terms: &[&str]) -> Vec<u8> {
    if words.is_empty() {
        return Vec::new();
    }
    words
        .split(|&b| b == b' ')
        .map(|w| id_of(w, terms))
        .collect()
}

/// Whether term `a` is followed by term `b` at most [`WINDOW`] positions later in `ids`.
fn ordered(ids: &[u8], a: u8, b: u8) -> bool {
    ids.iter()
        .enumerate()
        .any(|(p, &t)| t == a && ids[p + 1..].iter().take(WINDOW).any(|&u| u == b))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `a` comes before `b` (at most [`WINDOW`] later) in the analysed `text`.
    fn in_order(text: &str, a: &str, b: &str) -> bool {
        let ids = term_ids(text, &[a, b]);
        ordered(&ids, 0, u8::from(a != b))
    }

    #[test]
    fn order_and_distance_count() {
        let d = "Converts PDF (.pdf) documents into Markdown so they can be read";
        assert!(in_order(d, "pdf", "markdown"));
        assert!(!in_order(d, "markdown", "pdf"));
        assert!(in_order("markdown-to-pdf", "markdown", "pdf"));
        assert!(!in_order("markdown-to-pdf", "pdf", "markdown"));
        // Too far apart.
        assert!(!in_order(
            "pdf one two three four five markdown",
            "pdf",
            "markdown"
        ));
        assert!(in_order("pdf one two three markdown", "pdf", "markdown"));
    }

    #[test]
    fn stored_word_order_gives_the_ids_analysis_gives() {
        let texts = [
            "Converts PDF (.pdf) documents into Markdown so they can be read",
            "pdfToMarkdown: running the converter, 用python写脚本",
            "",
            "Deploying deployments to Kubernetes (k8s) clusters",
        ];
        let terms = ["convert", "deploy", "k8s", "markdown", "pdf"];
        for text in texts {
            // A row as the sync writes it, with the text as the name and the description.
            let row = postcard::to_allocvec(&crate::analyze::word_order(text, text)).unwrap();
            let (name, description) = word_rows(&row).unwrap();
            for stored in [name, description] {
                assert_eq!(stored_ids(stored, &terms), term_ids(text, &terms), "{text}");
            }
        }
        assert_eq!(word_rows(&[3, b'a']), None, "a length past the row's end");
    }

    #[test]
    fn a_term_is_not_its_own_pair() {
        assert!(in_order("pdf pdf", "pdf", "pdf"));
        assert!(!in_order("pdf", "pdf", "pdf"));
    }
}
