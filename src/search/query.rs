//! Analysis, the first step: a query → what every later step reads of it, made once.
//!
//! The default ranking analyses the text with its CJK pleasantries cut out (when that
//! ingredient is on); the plan takes its distinct terms, proximity its order, the CJK
//! coverage rule the positions of its CJK terms. The seed ranking takes the plain
//! tokenizer's distinct terms. The small-talk verdict comes from the same cut.

use super::{chitchat, intent};
use super::{Ranking, SearchOptions};
use crate::tokenize::{analyze, tokenize};
use std::collections::HashSet;

/// A query, analysed once.
pub(super) struct Query<'q> {
    /// The request as written (what the semantic stage embeds).
    #[cfg_attr(not(feature = "semantic"), allow(dead_code))]
    pub(super) text: &'q str,
    /// The default ranking's terms, in query order, one per occurrence.
    pub(super) words: Vec<String>,
    /// The seed ranking's distinct terms, in order of first occurrence (empty under the
    /// default ranking).
    pub(super) seed_terms: Vec<String>,
    /// Whether the message is small talk that no skill serves: a CJK message of
    /// pleasantries and fillers only ([`chitchat::is_cjk_chit_chat`]).
    #[cfg_attr(not(feature = "semantic"), allow(dead_code))]
    pub(super) small_talk: bool,
    /// Whether it asks for something a skill could do ([`intent::verdict`]).
    pub(super) intent: intent::Verdict,
}

impl<'q> Query<'q> {
    /// Analyses `text` for the ranking and ingredients of `opts`.
    pub(super) fn new(text: &'q str, opts: &SearchOptions) -> Query<'q> {
        let (stripped, small_talk) = chitchat::cut(text);
        let strip = opts.ingredients.stop_words && opts.ingredients.cjk_pleasantries;
        let analysed = match (&stripped, strip) {
            (Some(s), true) => s.as_str(),
            _ => text,
        };
        Query {
            text,
            words: match opts.ranking {
                Ranking::Default => analyze(analysed),
                Ranking::Seed => Vec::new(),
            },
            seed_terms: match opts.ranking {
                Ranking::Seed => query_terms(text),
                Ranking::Default => Vec::new(),
            },
            small_talk,
            intent: match opts.ranking {
                Ranking::Default => intent::verdict(text),
                Ranking::Seed => intent::Verdict {
                    needs_skill: true,
                    why: "seed ranking",
                },
            },
        }
    }

    /// The default ranking's distinct terms, in order of first occurrence.
    pub(super) fn distinct_words(&self) -> Vec<&str> {
        let mut seen = HashSet::new();
        self.words
            .iter()
            .map(String::as_str)
            .filter(|w| seen.insert(*w))
            .collect()
    }

    /// The position of `term`'s first occurrence among [`Query::words`].
    pub(super) fn position(&self, term: &str) -> Option<usize> {
        self.words.iter().position(|w| w == term)
    }
}

/// The distinct terms of `query` for the seed ranking, in order of first occurrence.
pub fn query_terms(query: &str) -> Vec<String> {
    let mut seen = HashSet::new();
    tokenize(query)
        .into_iter()
        .filter(|t| seen.insert(t.clone()))
        .collect()
}
