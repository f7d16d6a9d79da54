//! BM25 search, answered from a read transaction on the store.
//!
//! Two rankings ([`Ranking`]). The **default** is BM25F over the analysed fields (name,
//! description, keywords, category, body), each with its own weight and length
//! normalisation, with stop words and pleasantries dropped from the query, long turns cut to
//! their most informative terms, and unknown query words matched to a vocabulary term one or
//! two edits away. The **seed** ranking reproduces the seed plugin.
//!
//! The seed ranking is Okapi BM25 over the seed document ([`Field::Seed`]) with Lucene's
//! always-positive IDF, `ln(1 + (N − df + 0.5) / (df + 0.5))`. A query term counts once
//! however often it is repeated, as in the seed plugin. Skills hidden on
//! the query's messaging platform are left out of N, df and the average length as well as
//! the results, so the answer equals that of an index built without them.

use crate::fields::{Field, FieldStats};
use crate::postings;
use crate::store::records::{CorpusStats, DocBody, DocHead, PlatformHidden};
use crate::store::{decode, open_or_none, ProfileTables, Store, StoreError};
use crate::tokenize::{analyze, tokenize};
use redb::{ReadOnlyTable, ReadTransaction, ReadableTable};
use rustc_hash::FxHashSet;
use serde::Serialize;
use std::collections::HashSet;

/// BM25's free parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Params {
    /// Term-frequency saturation.
    pub k1: f64,
    /// Length normalisation.
    pub b: f64,
}

impl Default for Params {
    fn default() -> Self {
        Params { k1: 1.5, b: 0.75 }
    }
}

/// Which ranking answers a query.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Ranking {
    /// BM25F over the analysed fields, with query cleanup and typo tolerance.
    #[default]
    Default,
    /// The seed plugin's Okapi BM25 over its single document, for users who want the
    /// plugin they came from exactly.
    Seed,
}

impl std::str::FromStr for Ranking {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "default" => Ok(Ranking::Default),
            "seed" => Ok(Ranking::Seed),
            other => Err(format!("unknown ranking {other:?} (default, seed)")),
        }
    }
}

/// The default ranking's per-field weight for a Latin-script term, in [`Field`] order. The
/// body is scored apart from the others, with its own IDF (see [`default_idf`]).
pub const FIELD_WEIGHTS: [f64; crate::fields::FIELD_COUNT] = [3.0, 1.5, 1.5, 0.5, 1.0, 1.0];
/// The weights for a CJK term: the body's CJK text is mostly the same few particles and
/// connectives, so a CJK bigram is matched against the seed document alone (name,
/// description, tags and the first 200 characters of the body's CJK runs), as in the seed
/// plugin, which the evaluation shows is hard to beat for CJK.
pub const CJK_FIELD_WEIGHTS: [f64; crate::fields::FIELD_COUNT] = [0.0, 0.0, 0.0, 0.0, 0.0, 1.0];
/// The default ranking's per-field length normalisation.
pub const FIELD_B: [f64; crate::fields::FIELD_COUNT] = [0.3, 0.75, 0.6, 0.3, 0.75, 0.75];
/// Most distinct terms the default ranking scores; a longer turn (a pasted log) keeps its
/// most informative (highest-IDF) terms. Set high: on the evaluation set every long turn
/// scores best with all its terms, and the cap only bounds the work.
pub const MAX_QUERY_TERMS: usize = 128;
/// The relevance floor, in units of `ln(1 + N)`: a hit of the default ranking must score at
/// least this much for a query of Latin-script terms ([`FLOOR_LATIN`]) or of CJK terms
/// ([`FLOOR_CJK`], lower because bigrams are scored on the short seed document), mixed in
/// proportion for a mixed query. Below it a hit is a coincidence, like `can you hear me?`
/// finding a hearing skill, and is not returned.
pub const FLOOR_LATIN: f64 = 2.5;
/// See [`FLOOR_LATIN`].
pub const FLOOR_CJK: f64 = 0.45;
/// Queries with more distinct terms than this (long turns) get no typo matching.
pub const TYPO_MAX_QUERY_TERMS: usize = 12;
/// How much a typo-corrected term counts, against 1 for a term found as written.
pub const TYPO_WEIGHT: f64 = 0.7;

/// Query words the default ranking ignores: function words, and the pleasantries of chat
/// (so `thanks, ok!` retrieves nothing), all in analysed (stemmed) form.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "abov",
    "after",
    "again",
    "all",
    "also",
    "am",
    "an",
    "and",
    "ani",
    "are",
    "as",
    "at",
    "be",
    "been",
    "befor",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "doe",
    "done",
    "down",
    "dure",
    "each",
    "few",
    "for",
    "from",
    "further",
    "get",
    "got",
    "had",
    "has",
    "have",
    "he",
    "her",
    "here",
    "him",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "let",
    "like",
    "me",
    "mani",
    "more",
    "most",
    "much",
    "must",
    "my",
    "need",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "onc",
    "one",
    "onli",
    "or",
    "other",
    "our",
    "out",
    "over",
    "own",
    "pleas",
    "same",
    "shall",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "them",
    "then",
    "there",
    "these",
    "they",
    "thi",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "us",
    "veri",
    "via",
    "wa",
    "want",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "whi",
    "why",
    "will",
    "with",
    "would",
    "yet",
    "you",
    "your",
    "yourself",
    "i'm",
    "it'",
    "im",
    "ll",
    "ve",
    "re",
    "s",
    "t",
    "d",
    "m",
    "ok",
    "okay",
    "thank",
    "thanks",
    "thx",
    "ty",
    "hi",
    "hello",
    "hey",
    "yes",
    "yeah",
    "yep",
    "nope",
    "cool",
    "nice",
    "great",
    "good",
    "awesom",
    "perfect",
    "sure",
    "lol",
    "haha",
    "hah",
    "morn",
    "morning",
    "afternoon",
    "even",
    "night",
    "bye",
    "goodby",
    "sorri",
    "welcom",
    "wow",
    "someth",
    "anyth",
    "thing",
    "stuff",
    "help",
    "make",
    "new",
    "go",
    "know",
    "think",
    // CJK: the bigrams of polite verb endings and greetings (ます, です, ください,
    // おはようございます, こんにちは, ありがとう; 谢谢, 你好, 辛苦了; 감사합니다,
    // 고마워, 안녕하세요), which say nothing about the task.
    "ます",
    "です",
    "くだ",
    "ださ",
    "ござ",
    "ざい",
    "おは",
    "はよ",
    "こん",
    "んに",
    "にち",
    "ちは",
    "あり",
    "りが",
    "がと",
    "谢谢",
    "你好",
    "您好",
    "辛苦",
    "苦了",
    "감사",
    "사합",
    "합니",
    "니다",
    "고마",
    "마워",
    "안녕",
    "녕하",
    "하세",
    "세요",
];

/// Lucene's IDF: `ln(1 + (n − df + 0.5) / (df + 0.5))`, positive for every df ≤ n.
pub fn idf(n: f64, df: f64) -> f64 {
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// One term's BM25 weight in one document.
pub fn term_weight(idf: f64, tf: f64, dl: f64, avgdl: f64, p: Params) -> f64 {
    idf * (tf * (p.k1 + 1.0)) / (tf + p.k1 * (1.0 - p.b + p.b * dl / avgdl))
}

/// The ingredients of the default ranking, each of which can be switched off to measure
/// what it adds (`skillidx eval --without …`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Ingredients {
    /// Drop stop words and pleasantries from the query.
    pub stop_words: bool,
    /// Match unknown query words to a vocabulary term an edit or two away.
    pub typos: bool,
    /// Return nothing below the relevance floor.
    pub floor: bool,
    /// Score the body at all.
    pub body: bool,
    /// Score the body apart from the metadata fields, with its own IDF.
    pub body_apart: bool,
    /// Score CJK terms on the seed document instead of the analysed fields.
    pub cjk_on_seed: bool,
}

impl Default for Ingredients {
    fn default() -> Self {
        Ingredients {
            stop_words: true,
            typos: true,
            floor: true,
            body: true,
            body_apart: true,
            cjk_on_seed: true,
        }
    }
}

impl Ingredients {
    /// Switches off the ingredient named `name` (as in [`Ingredients::NAMES`]).
    pub fn without(mut self, name: &str) -> Result<Self, String> {
        match name {
            "stop-words" => self.stop_words = false,
            "typos" => self.typos = false,
            "floor" => self.floor = false,
            "body" => self.body = false,
            "body-apart" => self.body_apart = false,
            "cjk-on-seed" => self.cjk_on_seed = false,
            other => {
                return Err(format!(
                    "unknown ingredient {other:?} (one of {})",
                    Self::NAMES.join(", ")
                ))
            }
        }
        Ok(self)
    }

    /// The ingredients' names.
    pub const NAMES: [&'static str; 6] = [
        "stop-words",
        "typos",
        "floor",
        "body",
        "body-apart",
        "cjk-on-seed",
    ];

    /// The field weights for a term.
    fn weights(&self, cjk: bool) -> [f64; crate::fields::FIELD_COUNT] {
        let mut w = if cjk && self.cjk_on_seed {
            CJK_FIELD_WEIGHTS
        } else {
            FIELD_WEIGHTS
        };
        if !self.body {
            w[Field::Body as usize] = 0.0;
        }
        w
    }
}

/// What to search for.
#[derive(Debug, Clone)]
pub struct SearchOptions {
    /// How many hits at most.
    pub k: usize,
    /// The messaging platform (`cli`, `telegram`, …) whose disabled skills are left out.
    pub platform: Option<String>,
    /// BM25 parameters.
    pub params: Params,
    /// Which ranking.
    pub ranking: Ranking,
    /// The default ranking's ingredients.
    pub ingredients: Ingredients,
    /// Apply the default ranking's relevance floor: return nothing that only grazes the
    /// query. On for what is injected into a turn (the plugin, `eval`); off for an explicit
    /// search, where a weak match on a rare word (`zanzibar`) is still an answer.
    pub floor: bool,
}

impl Default for SearchOptions {
    fn default() -> Self {
        SearchOptions {
            k: 6,
            platform: None,
            params: Params::default(),
            ranking: Ranking::default(),
            ingredients: Ingredients::default(),
            floor: false,
        }
    }
}

/// A skill found by a search.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    /// The id to load it by (`skill_view(id)`).
    pub id: String,
    /// The frontmatter name.
    pub name: String,
    /// The category path.
    pub category: String,
    /// The description.
    pub description: String,
    /// The BM25 score.
    pub score: f64,
    /// The SKILL.md path.
    pub path: String,
}

/// One field's part in a term's contribution.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FieldContribution {
    /// The field.
    pub field: &'static str,
    /// The term's frequency in it.
    pub tf: u32,
    /// The field's length in the skill.
    pub length: u32,
    /// The share of the term's score this field brings.
    pub score: f64,
}

/// One query term's part in a skill's score.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TermContribution {
    /// The term as scored (analysed; for a typo, the vocabulary term it was matched to).
    pub term: String,
    /// The query word it came from, when it was matched as a typo.
    pub typo_of: Option<String>,
    /// Offered skills containing it.
    pub df: u32,
    /// Its IDF.
    pub idf: f64,
    /// Its weight in the query (1, less for a typo match).
    pub weight: f64,
    /// Per field where the skill contains it.
    pub fields: Vec<FieldContribution>,
    /// What it adds to the score.
    pub score: f64,
}

/// Why a skill scored what it did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Explanation {
    /// The skill.
    pub id: String,
    /// The SKILL.md path.
    pub path: String,
    /// The ranking explained.
    pub ranking: Ranking,
    /// Its rank among all hits (1-based), if it is a hit at all.
    pub rank: Option<usize>,
    /// Its total score.
    pub score: f64,
    /// Offered skills counted.
    pub docs: u32,
    /// Why it is not offered, if it is not.
    pub inactive: Option<String>,
    /// Query words dropped before scoring (stop words, words beyond the long-turn cut,
    /// words matching nothing).
    pub dropped: Vec<String>,
    /// Per query term scored.
    pub terms: Vec<TermContribution>,
}

/// A read snapshot of one profile, open for queries.
pub struct Snapshot<'s> {
    store: &'s Store,
    postings: Option<ReadOnlyTable<&'static str, &'static [u8]>>,
    docs: Option<ReadOnlyTable<u32, &'static [u8]>>,
    stats: CorpusStats,
    hidden: PlatformHidden,
}

impl<'s> Snapshot<'s> {
    /// Opens the tables of `profile` in `txn`.
    pub fn open(
        store: &'s Store,
        txn: &ReadTransaction,
        profile: &str,
    ) -> Result<Self, StoreError> {
        let tables = ProfileTables::new(profile);
        let postings = open_or_none(store, txn, tables.postings())?;
        let docs = open_or_none(store, txn, tables.docs())?;
        let (mut stats, mut hidden) = (CorpusStats::default(), PlatformHidden::new());
        if let Some(state) = open_or_none(store, txn, tables.state())? {
            if let Some(v) = state.get("stats").map_err(|e| store.err(e))? {
                stats = decode(store, v.value(), "corpus stats")?;
            }
            if let Some(v) = state.get("platform_hidden").map_err(|e| store.err(e))? {
                hidden = decode(store, v.value(), "platform hidden list")?;
            }
        }
        Ok(Snapshot {
            store,
            postings,
            docs,
            stats,
            hidden,
        })
    }

    /// The profile's corpus statistics.
    pub fn stats(&self) -> &CorpusStats {
        &self.stats
    }

    /// Reads the head and body of document `doc`.
    pub fn doc(&self, doc: u32) -> Result<Option<(DocHead, DocBody)>, StoreError> {
        let Some(docs) = &self.docs else {
            return Ok(None);
        };
        match docs.get(doc).map_err(|e| self.store.err(e))? {
            Some(v) => Ok(Some(decode(self.store, v.value(), "document")?)),
            None => Ok(None),
        }
    }

    /// Every document, in id order.
    pub fn all_docs(&self) -> Result<Vec<(u32, DocHead, DocBody)>, StoreError> {
        let Some(docs) = &self.docs else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for row in docs.iter().map_err(|e| self.store.err(e))? {
            let (k, v) = row.map_err(|e| self.store.err(e))?;
            let (h, b): (DocHead, DocBody) = decode(self.store, v.value(), "document")?;
            out.push((k.value(), h, b));
        }
        Ok(out)
    }

    /// The collection statistics with the documents hidden on `platform` left out.
    fn view(&self, platform: Option<&str>) -> Result<View, StoreError> {
        let hidden: FxHashSet<u32> = platform
            .and_then(|p| self.hidden.get(p))
            .map(|ids| ids.iter().copied().collect())
            .unwrap_or_default();
        let mut n = self.stats.docs;
        let mut sums = self.stats.sum_lens;
        for &d in &hidden {
            if let Some((h, _)) = self.doc(d)? {
                n -= 1;
                for (sum, len) in sums.iter_mut().zip(h.lens) {
                    *sum -= u64::from(len);
                }
            }
        }
        let avg = sums.map(|s| if n == 0 { 0.0 } else { s as f64 / f64::from(n) });
        Ok(View { hidden, n, avg })
    }

    /// The postings of `term` that count for `ranking`, counted (hidden documents left out)
    /// but not kept decoded: scoring decodes them again, which is cheaper than holding a
    /// long list of per-field statistics.
    fn postings_of(
        &self,
        term: &str,
        ranking: Ranking,
        ingredients: &Ingredients,
        view: &View,
    ) -> Result<TermList, StoreError> {
        let weights = ingredients.weights(is_cjk_term(term));
        let fields = match ranking {
            Ranking::Seed => 1 << Field::Seed as u32,
            Ranking::Default => Field::ALL
                .iter()
                .filter(|&&f| weights[f as usize] > 0.0)
                .fold(0, |m, &f| m | 1 << f as u32),
        };
        let mut list = TermList {
            term: term.to_owned(),
            bytes: Vec::new(),
            fields,
            weights,
            df: 0,
            meta_df: 0,
        };
        let Some(table) = &self.postings else {
            return Ok(list);
        };
        let Some(bytes) = table.get(term).map_err(|e| self.store.err(e))? else {
            return Ok(list);
        };
        list.bytes = bytes.value().to_vec();
        let meta_fields = [
            Field::Name,
            Field::Description,
            Field::Keywords,
            Field::Category,
        ]
        .iter()
        .fold(0u32, |m, &f| m | 1 << f as u32);
        let (mut df, mut meta_df) = (0u32, 0u32);
        list.visit(view, |_, mask, _| {
            df += 1;
            meta_df += u32::from(mask & meta_fields != 0);
        })
        .map_err(|e| self.store.bad_record(e))?;
        list.df = df;
        list.meta_df = meta_df;
        Ok(list)
    }

    /// Turns a query into the terms to score, each with its postings, IDF and weight.
    fn plan(&self, query: &str, opts: &SearchOptions, view: &View) -> Result<Plan, StoreError> {
        let mut plan = Plan::default();
        if opts.ranking == Ranking::Seed {
            for term in query_terms(query) {
                let postings = self.postings_of(&term, Ranking::Seed, &opts.ingredients, view)?;
                let idf = idf(f64::from(view.n), f64::from(postings.df));
                plan.terms
                    .push(PlannedTerm::new(term, None, 1.0, idf, view.n, postings));
            }
            return Ok(plan);
        }
        let mut seen = HashSet::new();
        for term in analyze(query) {
            if !seen.insert(term.clone()) {
                continue;
            }
            if opts.ingredients.stop_words && STOP_WORDS.contains(&term.as_str()) {
                plan.dropped.push(term);
                continue;
            }
            let postings = self.postings_of(&term, Ranking::Default, &opts.ingredients, view)?;
            if postings.df > 0 {
                let idf = default_idf(&term, view.n, &postings, &opts.ingredients);
                plan.terms
                    .push(PlannedTerm::new(term, None, 1.0, idf, view.n, postings));
                continue;
            }
            // Long turns skip typo matching: their unknown words are mostly log and code
            // tokens, and each would cost a scan of part of the vocabulary.
            let typo = if opts.ingredients.typos && seen.len() <= TYPO_MAX_QUERY_TERMS {
                self.typo_match(&term, &opts.ingredients, view)?
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

    /// For a query word (five letters or more) found nowhere, the vocabulary term (same
    /// first letter) within one edit (two for words of eight letters or more) that the most
    /// skills contain.
    fn typo_match(
        &self,
        word: &str,
        ingredients: &Ingredients,
        view: &View,
    ) -> Result<Option<(String, TermList)>, StoreError> {
        let chars: Vec<char> = word.chars().collect();
        if chars.len() < 5 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
            return Ok(None);
        }
        let Some(table) = &self.postings else {
            return Ok(None);
        };
        let max = if chars.len() >= 8 { 2 } else { 1 };
        let first = &word[..1];
        let next = ((first.as_bytes()[0]) + 1) as char;
        let upper = next.to_string();
        let mut best: Option<(usize, usize, String)> = None;
        let range = table
            .range::<&str>(first..upper.as_str())
            .map_err(|e| self.store.err(e))?;
        for row in range {
            let (k, v) = row.map_err(|e| self.store.err(e))?;
            let cand = k.value();
            if cand.len().abs_diff(word.len()) > max {
                continue;
            }
            let d = edit_distance(&chars, cand, max);
            if d == 0 || d > max {
                continue;
            }
            // Prefer the closest, then the most common (postings list length as a proxy).
            let size = v.value().len();
            if best.as_ref().is_none_or(|(bd, bs, _)| {
                (d, std::cmp::Reverse(size)) < (*bd, std::cmp::Reverse(*bs))
            }) {
                best = Some((d, size, cand.to_owned()));
            }
        }
        let Some((_, _, fixed)) = best else {
            return Ok(None);
        };
        let postings = self.postings_of(&fixed, Ranking::Default, ingredients, view)?;
        Ok((postings.df > 0).then_some((fixed, postings)))
    }

    /// Scores every matching document.
    fn score_all(&self, query: &str, opts: &SearchOptions) -> Result<Scored, StoreError> {
        let view = self.view(opts.platform.as_deref())?;
        if view.n == 0 {
            return Ok((Vec::new(), Plan::default(), view));
        }
        let plan = self.plan(query, opts, &view)?;
        // A dense accumulator indexed by document, kept per thread and reset entry by entry,
        // so a query pays only for the documents it touches.
        thread_local! {
            static ACC: std::cell::RefCell<Vec<f64>> = const { std::cell::RefCell::new(Vec::new()) };
        }
        let mut acc = ACC.with(|a| std::mem::take(&mut *a.borrow_mut()));
        if acc.len() < self.stats.next_doc as usize {
            acc.resize(self.stats.next_doc as usize, 0.0);
        }
        let mut touched: Vec<u32> = Vec::new();
        for t in &plan.terms {
            t.list
                .visit(&view, |doc, mask, stats| {
                    let i = doc as usize;
                    if i >= acc.len() {
                        acc.resize(i + 1, 0.0);
                    }
                    if acc[i] == 0.0 {
                        touched.push(doc);
                    }
                    acc[i] += term_score(t, stats, mask, &view, opts);
                })
                .map_err(|e| self.store.bad_record(e))?;
        }
        let floor = if opts.ranking == Ranking::Default && opts.floor && opts.ingredients.floor {
            plan.floor(view.n)
        } else {
            0.0
        };
        let scores = touched
            .into_iter()
            .map(|d| (d, std::mem::take(&mut acc[d as usize])))
            .filter(|&(_, s)| s > 0.0 && s >= floor)
            .collect();
        ACC.with(|a| *a.borrow_mut() = acc);
        Ok((scores, plan, view))
    }

    /// The top `opts.k` skills for `query`, best first; ties ordered by id, then path.
    pub fn search(&self, query: &str, opts: &SearchOptions) -> Result<Vec<Hit>, StoreError> {
        let (scores, _, _) = self.score_all(query, opts)?;
        let ranked = self.rank(scores, opts.k)?;
        Ok(ranked.into_iter().map(|(_, hit)| hit).collect())
    }

    fn rank(&self, mut scored: Vec<(u32, f64)>, k: usize) -> Result<Vec<(u32, Hit)>, StoreError> {
        if k == 0 || scored.is_empty() {
            return Ok(Vec::new());
        }
        scored.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        // Keep every document tied with the k-th, then break ties by id, which is stable
        // across rebuilds, unlike document numbers.
        let cutoff = scored[k.min(scored.len()) - 1].1;
        scored.retain(|&(_, s)| s >= cutoff);
        let mut hits = Vec::with_capacity(scored.len());
        for (doc, score) in scored {
            if let Some((h, b)) = self.doc(doc)? {
                hits.push((
                    doc,
                    Hit {
                        id: h.id,
                        name: h.name,
                        category: b.category,
                        description: b.description,
                        score,
                        path: h.key,
                    },
                ));
            }
        }
        hits.sort_by(|a, b| {
            b.1.score
                .total_cmp(&a.1.score)
                .then_with(|| a.1.id.cmp(&b.1.id))
                .then_with(|| a.1.path.cmp(&b.1.path))
        });
        hits.truncate(k);
        Ok(hits)
    }

    /// Explains the score of the skill `id` (or name) for `query`.
    pub fn explain(
        &self,
        query: &str,
        id: &str,
        opts: &SearchOptions,
    ) -> Result<Option<Explanation>, StoreError> {
        let docs = self.all_docs()?;
        let Some((doc, head, _)) = docs
            .iter()
            .filter(|(_, h, _)| h.id == id || h.name == id)
            .min_by_key(|(_, h, _)| h.inactive.is_some())
        else {
            return Ok(None);
        };
        let (scores, plan, view) = self.score_all(query, opts)?;
        let total = scores
            .iter()
            .find(|(d, _)| d == doc)
            .map_or(0.0, |&(_, s)| s);
        let rank = (total > 0.0).then(|| 1 + scores.iter().filter(|&&(_, s)| s > total).count());
        let mut terms = Vec::new();
        for t in &plan.terms {
            let mut stats = None;
            t.list
                .visit(&view, |d, mask, s| {
                    if d == *doc {
                        stats = Some((*s, mask));
                    }
                })
                .map_err(|e| self.store.bad_record(e))?;
            let score = stats.map_or(0.0, |(s, mask)| term_score(t, &s, mask, &view, opts));
            let fields = stats
                .map(|(s, mask)| field_shares(&t.list, &s, mask, score, &view, opts))
                .unwrap_or_default();
            terms.push(TermContribution {
                term: t.term.clone(),
                typo_of: t.typo_of.clone(),
                df: t.list.df,
                idf: t.idf,
                weight: t.weight,
                fields,
                score,
            });
        }
        Ok(Some(Explanation {
            id: head.id.clone(),
            path: head.key.clone(),
            ranking: opts.ranking,
            rank,
            score: total,
            docs: view.n,
            inactive: head.inactive.as_ref().map(ToString::to_string),
            dropped: plan.dropped,
            terms,
        }))
    }
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

/// The default ranking's pseudo term frequency: each field's frequency, weighted and
/// normalised by that field's length against its average (BM25F).
fn bm25f_tf(
    stats: &FieldStats,
    mask: u32,
    view: &View,
    w: &[f64; crate::fields::FIELD_COUNT],
) -> [f64; crate::fields::FIELD_COUNT] {
    let mut parts = [0.0; crate::fields::FIELD_COUNT];
    let mut bits = mask;
    while bits != 0 {
        let i = bits.trailing_zeros() as usize;
        bits &= bits - 1;
        let (tf, len) = stats[i];
        if tf == 0 || w[i] == 0.0 {
            continue;
        }
        let avg = if view.avg[i] > 0.0 { view.avg[i] } else { 1.0 };
        let norm = 1.0 - FIELD_B[i] + FIELD_B[i] * f64::from(len) / avg;
        parts[i] = w[i] * f64::from(tf) / norm;
    }
    parts
}

fn term_score(
    t: &PlannedTerm,
    stats: &FieldStats,
    mask: u32,
    view: &View,
    opts: &SearchOptions,
) -> f64 {
    let p = opts.params;
    match opts.ranking {
        Ranking::Seed => {
            let (tf, dl) = stats[Field::Seed as usize];
            term_weight(
                t.idf,
                f64::from(tf),
                f64::from(dl),
                view.avg[Field::Seed as usize],
                p,
            )
        }
        Ranking::Default => {
            // Metadata fields and the body saturate separately, each with its own IDF: a
            // word common in bodies (`name`, `run`) but rare in descriptions counts fully
            // where it says what a skill is for, and only as much as it is rare in bodies
            // where it merely occurs in an example.
            let parts = bm25f_tf(stats, mask, view, &t.list.weights);
            let sat = |x: f64| x * (p.k1 + 1.0) / (x + p.k1);
            if !opts.ingredients.body_apart {
                return t.weight * t.idf * sat(parts.iter().sum());
            }
            let body = parts[Field::Body as usize];
            let meta: f64 = parts.iter().sum::<f64>() - body;
            t.weight * (t.idf * sat(meta) + t.body_idf * sat(body))
        }
    }
}

fn field_shares(
    list: &TermList,
    stats: &FieldStats,
    mask: u32,
    score: f64,
    view: &View,
    opts: &SearchOptions,
) -> Vec<FieldContribution> {
    let parts = match opts.ranking {
        Ranking::Seed => {
            let mut parts = [0.0; crate::fields::FIELD_COUNT];
            parts[Field::Seed as usize] = 1.0;
            parts
        }
        Ranking::Default => bm25f_tf(stats, mask, view, &list.weights),
    };
    let total: f64 = parts.iter().sum();
    Field::ALL
        .iter()
        .filter(|&&f| parts[f as usize] > 0.0)
        .map(|&f| FieldContribution {
            field: f.as_str(),
            tf: stats[f as usize].0,
            length: stats[f as usize].1,
            score: score * parts[f as usize] / total,
        })
        .collect()
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

/// The distinct terms of `query` for the seed ranking, in order of first occurrence.
pub fn query_terms(query: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    tokenize(query)
        .into_iter()
        .filter(|t| seen.insert(t.clone()))
        .collect()
}

struct View {
    hidden: FxHashSet<u32>,
    n: u32,
    avg: [f64; crate::fields::FIELD_COUNT],
}

#[derive(Default)]
struct Plan {
    terms: Vec<PlannedTerm>,
    dropped: Vec<String>,
}

impl Plan {
    /// The relevance floor for this query over `n` offered skills (see [`FLOOR_LATIN`]).
    fn floor(&self, n: u32) -> f64 {
        if self.terms.is_empty() {
            return f64::INFINITY;
        }
        let cjk = self.terms.iter().filter(|t| t.cjk).count() as f64 / self.terms.len() as f64;
        // IDF tells rare words from common ones only in a collection of some size: in a
        // home of a dozen skills every word is "rare". The floor fades in between 20 and
        // 500 skills.
        let fade = ((f64::from(n) - 20.0) / 480.0).clamp(0.0, 1.0);
        fade * (1.0 + f64::from(n)).ln() * (FLOOR_LATIN * (1.0 - cjk) + FLOOR_CJK * cjk)
    }
}

struct PlannedTerm {
    term: String,
    cjk: bool,
    typo_of: Option<String>,
    weight: f64,
    idf: f64,
    body_idf: f64,
    list: TermList,
}

/// Every document's score (above the floor), the plan that produced them, and the view.
type Scored = (Vec<(u32, f64)>, Plan, View);

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
struct TermList {
    term: String,
    bytes: Vec<u8>,
    /// The fields (as a mask) that count for the ranking and kind of term.
    fields: u32,
    /// The default ranking's field weights for this term.
    weights: [f64; crate::fields::FIELD_COUNT],
    /// Documents counted: offered, not hidden, with the term in a counted field.
    df: u32,
    /// Of those, the documents with the term in a metadata field.
    meta_df: u32,
}

impl TermList {
    /// Calls `f` with every counted posting: (doc, field mask, statistics).
    fn visit(&self, view: &View, mut f: impl FnMut(u32, u32, &FieldStats)) -> Result<(), String> {
        if self.bytes.is_empty() {
            return Ok(());
        }
        postings::decode_masked(&self.bytes, |doc, mask, stats| {
            if mask & self.fields != 0 && (view.hidden.is_empty() || !view.hidden.contains(&doc)) {
                f(doc, mask, stats);
            }
        })
        .map_err(|e| format!("postings of {:?}: {e}", self.term))
    }
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

    #[test]
    fn longer_documents_weigh_less() {
        let p = Params::default();
        assert!(term_weight(1.0, 1.0, 5.0, 10.0, p) > term_weight(1.0, 1.0, 20.0, 10.0, p));
        // b = 0 ignores length entirely.
        let flat = Params { k1: 1.5, b: 0.0 };
        assert_eq!(
            term_weight(1.0, 2.0, 5.0, 10.0, flat),
            term_weight(1.0, 2.0, 50.0, 10.0, flat)
        );
    }
}
