//! Planning: a query → the terms to score, each with its postings list, IDF and weight.
//!
//! Everything that depends on the query but not on a document happens here, once: analysis,
//! dropping stop words, matching unknown words to a vocabulary term (typo tolerance), reading
//! and counting each term's postings list, and cutting a long turn to its most informative
//! terms. Scoring then only walks the lists this step read.

use super::english::is_word;
use super::query::Query;
use super::stopwords::is_stop_word;
use super::{Ingredients, Ranking, SearchOptions, Snapshot, View};
use crate::fields::{Field, FieldStats, FIELD_COUNT};
use crate::postings;
use crate::store::StoreError;
use std::collections::HashSet;

/// Most distinct terms the default ranking scores; a longer turn (a pasted log) keeps its
/// most informative (highest-IDF) terms. Set high: on the evaluation set every long turn
/// scores best with all its terms, and the cap only bounds the work.
pub const MAX_QUERY_TERMS: usize = 128;
/// Queries with more distinct terms than this (long turns) get no typo matching.
pub const TYPO_MAX_QUERY_TERMS: usize = 12;
/// How much a typo-corrected term counts, against 1 for a term found as written.
pub const TYPO_WEIGHT: f64 = 0.7;

/// The default ranking's per-field weight for a Latin-script term, in [`Field`] order. The
/// body is scored apart from the others, with its own IDF (see `default_idf` in `plan`).
pub const FIELD_WEIGHTS: [f64; FIELD_COUNT] = [3.0, 1.5, 1.5, 0.5, 1.0, 1.0];
/// The weights for a CJK term: the body's CJK text is mostly the same few particles and
/// connectives, so a CJK bigram is matched against the seed document alone (name,
/// description, tags and the first 200 characters of the body's CJK runs), as in the seed
/// plugin, which the evaluation shows is hard to beat for CJK.
pub const CJK_FIELD_WEIGHTS: [f64; FIELD_COUNT] = [0.0, 0.0, 0.0, 0.0, 0.0, 1.0];
/// Lucene's IDF: `ln(1 + (n − df + 0.5) / (df + 0.5))`, positive for every df ≤ n.
pub fn idf(n: f64, df: f64) -> f64 {
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// The default ranking's field weights for a term, with the ingredients switched off left
/// out.
pub(super) fn field_weights(ingredients: &Ingredients, cjk: bool) -> [f64; FIELD_COUNT] {
    let mut w = if cjk && ingredients.cjk_on_seed {
        CJK_FIELD_WEIGHTS
    } else {
        FIELD_WEIGHTS
    };
    if !ingredients.body {
        w[Field::Body as usize] = 0.0;
    }
    w
}

/// The terms to score for one query, and the words left out.
#[derive(Default)]
pub(super) struct Plan {
    pub(super) terms: Vec<PlannedTerm>,
    pub(super) dropped: Vec<String>,
}

/// One term to score, with everything about it that does not depend on the document.
pub(super) struct PlannedTerm {
    /// The term as scored (for a typo, the vocabulary term it was matched to).
    pub(super) term: String,
    /// Whether it is a CJK term, for the floor's mix of Latin and CJK.
    pub(super) cjk: bool,
    /// The query word it came from, when it was matched as a typo.
    pub(super) typo_of: Option<String>,
    /// Its weight in the query (1, less for a typo match).
    pub(super) weight: f64,
    /// The IDF of its metadata fields (the default ranking) or of the seed document.
    pub(super) idf: f64,
    /// The IDF over every field, for the body's part of its score.
    pub(super) body_idf: f64,
    /// Its postings list.
    pub(super) list: TermList,
}

impl PlannedTerm {
    fn new(
        term: String,
        typo_of: Option<String>,
        weight: f64,
        idf: f64,
        n: u32,
        list: TermList,
    ) -> Self {
        PlannedTerm {
            cjk: is_cjk_term(&term),
            body_idf: idf_all(n, &list),
            term,
            typo_of,
            weight,
            idf,
            list,
        }
    }
}

/// One term's postings list, as read from the store, and what counts in it.
pub(super) struct TermList {
    term: String,
    /// The stored list, read in place from its page (no copy): what scoring walks unless
    /// `decoded` holds its counted postings.
    page: Option<redb::AccessGuard<'static, &'static [u8]>>,
    /// The fields (as a mask) that count for the ranking and kind of term.
    fields: u32,
    /// The default ranking's field weights for this term.
    pub(super) weights: [f64; crate::fields::FIELD_COUNT],
    /// Documents counted: offered, not hidden, with the term in a counted field.
    pub(super) df: u32,
    /// Of those, the documents with the term in a metadata field.
    meta_df: u32,
    /// When the session hides documents, the counted postings, decoded while counting
    /// them so that scoring does not decode the list a second time: per posting, the
    /// document, its field mask, then (frequency, length) for each counted field in it.
    decoded: Option<Vec<u32>>,
}

impl TermList {
    /// The list's bytes as stored, unless they were decoded while counting a session's
    /// hidden documents.
    pub(super) fn stored(&self) -> Option<&[u8]> {
        self.decoded.is_none().then(|| self.bytes())
    }

    /// The stored list's bytes; none for a term with no list.
    fn bytes(&self) -> &[u8] {
        self.page.as_ref().map_or(&[], |g| g.value())
    }

    /// The fields (as a mask) that count.
    pub(super) fn fields(&self) -> u32 {
        self.fields
    }

    /// Calls `f` with every counted posting: (doc, field mask, statistics).
    // Always inlined, with the decoding loop, so that the caller's closure is compiled into
    // the walk: left to the compiler, it was a call per posting after unrelated changes
    // (+4 % of a short query's instructions).
    #[inline(always)]
    pub(super) fn visit(
        &self,
        view: &View,
        mut f: impl FnMut(u32, u32, &FieldStats),
    ) -> Result<(), String> {
        if let Some(flat) = &self.decoded {
            visit_decoded(flat, self.fields, f);
            return Ok(());
        }
        if self.bytes().is_empty() {
            return Ok(());
        }
        postings::decode_masked(self.bytes(), |doc, mask, stats| {
            if mask & self.fields != 0 && !view.is_hidden(doc) {
                f(doc, mask, stats);
            }
        })
        .map_err(|e| format!("postings of {:?}: {e}", self.term))
    }
}

/// Calls `f` with every posting of `flat`, as [`postings_of`] decodes it: the statistics
/// of the fields outside `fields` are zero there, as nothing reads them.
fn visit_decoded(flat: &[u32], fields: u32, mut f: impl FnMut(u32, u32, &FieldStats)) {
    let mut i = 0;
    while let [doc, mask, ..] = flat[i..] {
        i += 2;
        let mut stats: FieldStats = [(0, 0); crate::fields::FIELD_COUNT];
        let mut bits = mask & fields;
        while bits != 0 {
            let field = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            if let [tf, len, ..] = flat[i..] {
                stats[field] = (tf, len);
            }
            i += 2;
        }
        f(doc, mask, &stats);
    }
}

/// Turns a query into the terms to score, each with its postings, IDF and weight.
pub(super) fn plan(
    snap: &Snapshot,
    query: &Query<'_>,
    opts: &SearchOptions,
    view: &View,
) -> Result<Plan, StoreError> {
    let mut plan = Plan::default();
    if opts.ranking == Ranking::Seed {
        for term in &query.seed_terms {
            let postings = postings_of(snap, term, Ranking::Seed, &opts.ingredients, view)?;
            let idf = idf(f64::from(view.n), f64::from(postings.df));
            plan.terms.push(PlannedTerm::new(
                term.clone(),
                None,
                1.0,
                idf,
                view.n,
                postings,
            ));
        }
        return Ok(plan);
    }
    // The terms scored or dropped so far, a typo's correction included.
    let mut seen: HashSet<String> = HashSet::new();
    for term in query.distinct_words() {
        let term = term.to_owned();
        if !seen.insert(term.clone()) {
            continue;
        }
        if opts.ingredients.stop_words && is_stop_word(&term) {
            plan.dropped.push(term);
            continue;
        }
        let postings = postings_of(snap, &term, Ranking::Default, &opts.ingredients, view)?;
        if postings.df > 0 {
            let idf = default_idf(&term, view.n, &postings, &opts.ingredients);
            plan.terms
                .push(PlannedTerm::new(term, None, 1.0, idf, view.n, postings));
            continue;
        }
        // Long turns skip typo matching: their unknown words are mostly log and code
        // tokens, and each would cost a scan of part of the vocabulary.
        let typo = if opts.ingredients.typos && seen.len() <= TYPO_MAX_QUERY_TERMS {
            typo_match(snap, &term, &opts.ingredients, view)?
        } else {
            None
        };
        match typo {
            Some((fixed, postings)) if seen.insert(fixed.clone()) => {
                let idf = default_idf(&fixed, view.n, &postings, &opts.ingredients);
                plan.terms.push(PlannedTerm::new(
                    fixed,
                    Some(term),
                    TYPO_WEIGHT,
                    idf,
                    view.n,
                    postings,
                ));
            }
            _ => plan.dropped.push(term),
        }
    }
    if plan.terms.len() > MAX_QUERY_TERMS {
        // A long turn (a pasted log, code): its common words would drown the few that
        // say what is wanted, so keep only the most informative terms.
        plan.terms.sort_by(|a, b| b.idf.total_cmp(&a.idf));
        for t in plan.terms.drain(MAX_QUERY_TERMS..) {
            plan.dropped.push(t.term);
        }
    }
    Ok(plan)
}

/// Set in the fields a session's counts are remembered under when they were counted on a
/// seed projection (beyond every field's bit).
const PROJECTED: u32 = 1 << 31;

/// The postings of `term` that count for `ranking`, with their document frequency in the
/// session (hidden documents left out): from the list's header when nothing is hidden, from
/// the counts an earlier query in the same index state kept (`counts`), or else by walking
/// the list, whose decoded entries scoring then reuses. The seed ranking reads the term's
/// seed projection (the `seed` table), the default ranking the whole list.
fn postings_of(
    snap: &Snapshot,
    term: &str,
    ranking: Ranking,
    ingredients: &Ingredients,
    view: &View,
) -> Result<TermList, StoreError> {
    let weights = field_weights(ingredients, is_cjk_term(term));
    let fields = match ranking {
        Ranking::Seed => 1 << Field::Seed as u32,
        Ranking::Default => Field::ALL
            .iter()
            .filter(|&&f| weights[f as usize] > 0.0)
            .fold(0, |m, &f| m | 1 << f as u32),
    };
    let mut list = TermList {
        term: term.to_owned(),
        page: None,
        fields,
        weights,
        df: 0,
        meta_df: 0,
        decoded: None,
    };
    let (table, projected) = snap.lists(ranking)?;
    let Some(table) = table else {
        return Ok(list);
    };
    let Some(guard) = table.get(term).map_err(|e| snap.store.err(e))? else {
        return Ok(list);
    };
    let bytes = guard.value();
    let bad = |e: postings::CodecError| snap.store.bad_record(format!("postings of {term:?}: {e}"));
    let meta_fields = [
        Field::Name,
        Field::Description,
        Field::Keywords,
        Field::Category,
    ]
    .iter()
    .fold(0u32, |m, &f| m | 1 << f as u32);
    let header = postings::Header::read(bytes).map_err(bad)?;
    let (mut df, mut meta_df) = (0u32, 0u32);
    // The session's counts are remembered per list read: a seed projection has the same
    // df as its list, but no metadata field to count.
    let counted = if projected {
        fields | PROJECTED
    } else {
        fields
    };
    let known = match &view.counted_in {
        None => Some((header.count(fields), header.count_both(fields, meta_fields))),
        Some(state) => super::counts::get(state, term, counted),
    };
    if let Some(counts) = known {
        // Nothing hidden, and the header counts the list; or the session's counts are
        // known from an earlier query in this index state. Scoring skips hidden postings.
        (df, meta_df) = counts;
        list.page = Some(guard);
    } else {
        // Some documents hidden: count by walking the list (straight from the stored
        // bytes, not a copy), and keep what the walk decodes for scoring. Every counted
        // posting takes at least four numbers.
        let mut flat = Vec::with_capacity(header.count(fields) as usize * 4);
        postings::decode_masked(bytes, |doc, mask, stats| {
            if mask & fields == 0 || view.is_hidden(doc) {
                return;
            }
            df += 1;
            meta_df += u32::from(mask & meta_fields != 0);
            flat.push(doc);
            flat.push(mask);
            let mut bits = mask & fields;
            while bits != 0 {
                let (tf, len) = stats[bits.trailing_zeros() as usize];
                bits &= bits - 1;
                flat.push(tf);
                flat.push(len);
            }
        })
        .map_err(bad)?;
        list.decoded = Some(flat);
        if let Some(state) = &view.counted_in {
            super::counts::put(state, term, counted, df, meta_df);
        }
    }
    list.df = df;
    list.meta_df = meta_df;
    Ok(list)
}

/// For a query word (five letters or more) found nowhere and not an English word, the
/// vocabulary term (same first letter) within one edit (two for words of eight letters or
/// more) that the most skills contain.
fn typo_match(
    snap: &Snapshot,
    word: &str,
    ingredients: &Ingredients,
    view: &View,
) -> Result<Option<(String, TermList)>, StoreError> {
    let chars: Vec<char> = word.chars().collect();
    // A real word is not a misspelling of a vocabulary term: "volta" is not "voltage".
    if chars.len() < 5 || !word.bytes().all(|b| b.is_ascii_lowercase()) || is_word(word) {
        return Ok(None);
    }
    let Some(table) = &snap.postings else {
        return Ok(None);
    };
    let max = if chars.len() >= 8 { 2 } else { 1 };
    let first = &word[..1];
    let next = ((first.as_bytes()[0]) + 1) as char;
    let upper = next.to_string();
    let mut best: Option<(usize, usize, String)> = None;
    let range = table
        .range::<&str>(first..upper.as_str())
        .map_err(|e| snap.store.err(e))?;
    for row in range {
        let (k, v) = row.map_err(|e| snap.store.err(e))?;
        let cand = k.value();
        if cand.len().abs_diff(word.len()) > max {
            continue;
        }
        let d = edit_distance(&chars, cand, max);
        if d == 0 || d > max {
            continue;
        }
        // Prefer the closest, then the most common (postings list length, header left
        // out, as a proxy).
        let bytes = v.value();
        let size = bytes.len() - postings::Header::read(bytes).map(|h| h.body).unwrap_or(0);
        if best
            .as_ref()
            .is_none_or(|(bd, bs, _)| (d, std::cmp::Reverse(size)) < (*bd, std::cmp::Reverse(*bs)))
        {
            best = Some((d, size, cand.to_owned()));
        }
    }
    let Some((_, _, fixed)) = best else {
        return Ok(None);
    };
    let postings = postings_of(snap, &fixed, Ranking::Default, ingredients, view)?;
    Ok((postings.df > 0).then_some((fixed, postings)))
}

/// The default ranking's IDF for the metadata fields. A word in the body of a third of all
/// skills may still be rare in names and descriptions, which is where it says what a skill
/// is for, so document frequency is counted over the metadata fields when the term occurs
/// there, and over every field only for a term found in bodies alone. CJK terms, scored
/// on the seed document, use its document frequency.
fn default_idf(term: &str, n: u32, list: &TermList, ingredients: &Ingredients) -> f64 {
    if is_cjk_term(term) && ingredients.cjk_on_seed {
        return idf(f64::from(n), f64::from(list.df));
    }
    let df = if list.meta_df > 0 {
        list.meta_df
    } else {
        list.df
    };
    idf(f64::from(n), f64::from(df))
}

/// The IDF over every field, for the body's part of a term's score.
fn idf_all(n: u32, list: &TermList) -> f64 {
    idf(f64::from(n), f64::from(list.df))
}

/// Whether `term` is a CJK term (a bigram or short run).
fn is_cjk_term(term: &str) -> bool {
    term.chars().next().is_some_and(crate::tokenize::is_cjk)
}

/// Damerau–Levenshtein (optimal string alignment) distance between `a` and `b`, giving up
/// (returning `max + 1`) once it must exceed `max`.
pub fn edit_distance(a: &[char], b: &str, max: usize) -> usize {
    let b: Vec<char> = b.chars().collect();
    let (n, m) = (a.len(), b.len());
    if n.abs_diff(m) > max {
        return max + 1;
    }
    let mut prev2 = vec![0usize; m + 1];
    let mut prev: Vec<usize> = (0..=m).collect();
    let mut cur = vec![0usize; m + 1];
    for i in 1..=n {
        cur[0] = i;
        let mut row_min = cur[0];
        for j in 1..=m {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(prev2[j - 2] + 1);
            }
            cur[j] = v;
            row_min = row_min.min(v);
        }
        if row_min > max {
            return max + 1;
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[m]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idf_is_lucenes_and_positive() {
        assert!((idf(10.0, 10.0) - (1.0f64 + 0.5 / 10.5).ln()).abs() < 1e-12);
        assert!(idf(1.0, 1.0) > 0.0);
        assert!(idf(100.0, 1.0) > idf(100.0, 50.0));
    }

    #[test]
    fn edit_distance_counts_transpositions_and_gives_up_early() {
        let d = |a: &str, b: &str, max| edit_distance(&a.chars().collect::<Vec<_>>(), b, max);
        assert_eq!(d("docker", "docker", 2), 0);
        assert_eq!(d("dcoker", "docker", 2), 1);
        assert_eq!(d("dockr", "docker", 2), 1);
        assert_eq!(d("kuberentes", "kubernetes", 2), 1);
        assert_eq!(d("abcdef", "uvwxyz", 2), 3);
    }
}
