//! The tokenizer: text → lowercase terms, with CJK runs split into bigrams.
//!
//! It follows the seed plugin's rules so that its users get the same terms:
//! NFKC, lowercase, anything that is not a letter, digit or `_` separates, and inside a
//! token every run of CJK characters (unified ideographs with extensions A and B, kana in
//! full and half width, Hangul syllables) is split from the rest. A CJK run of three or
//! more characters becomes its overlapping bigrams; a shorter run stays whole. The
//! non-CJK part of a mixed token survives, so `用python写` yields `用`, `python`, `写`.
//!
//! [`analyze_with`] is the default ranking's analyzer on top of that: identifiers are split
//! (`camelCase`, `snake_case`, `HTTPServer`) and English words are stemmed (Snowball), so
//! `deploying` meets `deployment` and `pdfToMarkdown` meets `pdf to markdown`.

use rust_stemmers::{Algorithm, Stemmer};
use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::OnceLock;
use unicode_normalization::UnicodeNormalization;

/// Is `c` one of the CJK characters whose runs are split into bigrams?
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x309F        // Hiragana
        | 0x30A0..=0x30FF      // Katakana
        | 0x31F0..=0x31FF      // Katakana phonetic extensions
        | 0xFF65..=0xFF9F      // Half-width katakana
        | 0x3400..=0x4DBF      // CJK unified ideographs extension A
        | 0x4E00..=0x9FFF      // CJK unified ideographs
        | 0x20000..=0x2A6DF    // CJK unified ideographs extension B
        | 0xAC00..=0xD7A3      // Hangul syllables
    )
}

fn is_token_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `text` in NFKC, borrowed when it already is (most text is, and the check is cheap).
fn nfkc(text: &str) -> Cow<'_, str> {
    if text.is_ascii()
        || unicode_normalization::is_nfkc_quick(text.chars())
            == unicode_normalization::IsNormalized::Yes
    {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(text.nfkc().collect())
    }
}

/// `text` in NFKC, as the tokenizer and analyzer see it (case kept, for the analyzer's
/// identifier splitting).
pub fn normalize(text: &str) -> String {
    nfkc(text).into_owned()
}

/// Tokenizes `text`, calling `emit` for every term in order.
///
/// Emitting through a callback lets the caller count terms without collecting them.
pub fn tokenize_with(text: &str, mut emit: impl FnMut(&str)) {
    let normalized: String = if text.is_ascii() {
        text.to_ascii_lowercase()
    } else {
        nfkc(text).chars().flat_map(char::to_lowercase).collect()
    };
    let mut run = String::new();
    let mut run_is_cjk = false;
    let mut bigram = String::new();
    let mut flush = |run: &mut String, cjk: bool, emit: &mut dyn FnMut(&str)| {
        if run.is_empty() {
            return;
        }
        if cjk && run.chars().nth(2).is_some() {
            let chars: Vec<char> = run.chars().collect();
            for pair in chars.windows(2) {
                bigram.clear();
                bigram.extend(pair);
                emit(&bigram);
            }
        } else {
            emit(run);
        }
        run.clear();
    };
    for c in normalized.chars() {
        if !is_token_char(c) {
            flush(&mut run, run_is_cjk, &mut emit);
            continue;
        }
        let cjk = is_cjk(c);
        if cjk != run_is_cjk {
            flush(&mut run, run_is_cjk, &mut emit);
            run_is_cjk = cjk;
        }
        run.push(c);
    }
    flush(&mut run, run_is_cjk, &mut emit);
}

fn stemmer() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

/// Splits an identifier at `_` and at case changes (`getHTTPResponse` → `get`, `HTTP`,
/// `Response`), calling `emit` for each part. Digits stay with the letters before them.
fn split_identifier(token: &str, mut emit: impl FnMut(&str)) {
    // Most tokens are plain lowercase words: nothing to split, and this runs for every
    // word of every skill indexed and of every candidate proximity reads back.
    if token
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        emit(token);
        return;
    }
    let mut start = 0usize;
    let mut prev: Option<char> = None;
    let mut chars = token.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let before = prev.replace(c);
        if c == '_' {
            if at > start {
                emit(&token[start..at]);
            }
            start = at + c.len_utf8();
            continue;
        }
        let Some(before) = before.filter(|_| at != start) else {
            continue;
        };
        let next_lower = chars.peek().is_some_and(|&(_, n)| n.is_lowercase());
        // aB → a|B, and ABc → A|Bc (the last capital of a run starts the next word).
        if (before.is_lowercase() && c.is_uppercase())
            || (before.is_uppercase() && c.is_uppercase() && next_lower)
        {
            emit(&token[start..at]);
            start = at;
        }
    }
    if start < token.len() {
        emit(&token[start..]);
    }
}

/// The default ranking's analyzer: [`tokenize_with`]'s terms with identifiers split and
/// ASCII words stemmed. CJK bigrams pass through unchanged.
pub fn analyze_with(text: &str, emit: impl FnMut(&str)) {
    analyze_where(text, |_| true, emit)
}

/// [`analyze_with`], except that a word `stem_if` rejects is emitted as it is, unstemmed.
///
/// The stemmer keeps a word's first letter and never lengthens it
/// (`stems_keep_the_first_letter`), so a caller that looks for a few terms can reject every
/// word whose first letter none of them has, or that is shorter than each that has it:
/// stemmed or not, such a word is none of its terms. In a new process, with no stem
/// cached yet, stemming is most of what analysing a description costs.
pub fn analyze_where(text: &str, stem_if: impl Fn(&str) -> bool, mut emit: impl FnMut(&str)) {
    let normalized = nfkc(text);
    let mut lower = String::new();
    let mut emit_part = |part: &str| {
        if part.is_ascii() {
            // The common case, without tokenize_with's normalisation and allocation.
            lower.clear();
            lower.push_str(part);
            lower.make_ascii_lowercase();
            if lower.len() > 2 && lower.bytes().all(|b| b.is_ascii_lowercase()) && stem_if(&lower) {
                with_stem(&lower, &mut emit);
            } else {
                emit(&lower);
            }
        } else {
            tokenize_with(part, |t| {
                if t.len() > 2 && t.bytes().all(|b| b.is_ascii_lowercase()) && stem_if(t) {
                    with_stem(t, &mut emit);
                } else {
                    emit(t);
                }
            });
        }
    };
    let mut start = None;
    for (i, c) in normalized.char_indices() {
        match (is_token_char(c), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                split_identifier(&normalized[s..i], &mut emit_part);
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        split_identifier(&normalized[s..], &mut emit_part);
    }
}

/// Calls `emit` with the stem of the lowercase ASCII word `word`. Stems are cached per
/// thread: a collection's vocabulary is small next to the number of words stemmed.
fn with_stem(word: &str, emit: &mut dyn FnMut(&str)) {
    thread_local! {
        static STEMS: RefCell<rustc_hash::FxHashMap<Box<str>, Box<str>>> = RefCell::new(Default::default());
    }
    STEMS.with(|cache| {
        let mut cache = cache.borrow_mut();
        if let Some(stem) = cache.get(word) {
            emit(stem);
            return;
        }
        let stem: Box<str> = stemmer().stem(word).into();
        emit(&stem);
        // Bounded so that a process fed endless distinct words does not grow forever.
        if cache.len() < 1 << 18 {
            cache.insert(word.into(), stem);
        }
    });
}

/// Analyzes `text` with [`analyze_with`] into a vector of terms.
pub fn analyze(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    analyze_with(text, |t| out.push(t.to_owned()));
    out
}

/// Tokenizes `text` into a vector of terms.
pub fn tokenize(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    tokenize_with(text, |t| out.push(t.to_owned()));
    out
}

/// The CJK runs of `text`, in order, joined by single spaces, cut to at most `max_chars`
/// characters.
///
/// The seed indexes these from the start of a skill's body so that a Chinese, Japanese
/// or Korean request matches a skill whose metadata is written in English.
pub fn cjk_runs(text: &str, max_chars: usize) -> String {
    let mut out = String::new();
    let mut count = 0usize;
    let mut in_run = false;
    for c in text.chars() {
        if count >= max_chars {
            break;
        }
        if is_cjk(c) {
            if !in_run && !out.is_empty() {
                out.push(' ');
                count += 1;
                if count >= max_chars {
                    break;
                }
            }
            out.push(c);
            count += 1;
            in_run = true;
        } else {
            in_run = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn punctuation_separates_and_case_folds() {
        assert_eq!(
            tokenize("Hello, World! foo-bar"),
            ["hello", "world", "foo", "bar"]
        );
        assert_eq!(tokenize("snake_case stays"), ["snake_case", "stays"]);
    }

    #[test]
    fn nfkc_folds_full_width_forms() {
        assert_eq!(tokenize("ＰＤＦ２ＭＤ"), ["pdf2md"]);
        // Half-width katakana become full width before the run is split.
        assert_eq!(tokenize("ｶﾀｶﾅ"), ["カタ", "タカ", "カナ"]);
    }

    #[test]
    fn cjk_runs_of_three_or_more_become_bigrams() {
        assert_eq!(tokenize("数据分析"), ["数据", "据分", "分析"]);
        assert_eq!(tokenize("分析"), ["分析"]);
        assert_eq!(tokenize("맞춤법 검사기"), ["맞춤", "춤법", "검사", "사기"]);
        assert_eq!(
            tokenize("議事録を作成"),
            ["議事", "事録", "録を", "を作", "作成"]
        );
    }

    #[test]
    fn the_latin_part_of_a_mixed_token_survives() {
        assert_eq!(tokenize("用python写"), ["用", "python", "写"]);
        assert_eq!(tokenize("用python写脚本"), ["用", "python", "写脚", "脚本"]);
    }

    #[test]
    fn extension_b_ideographs_are_cjk() {
        assert!(is_cjk('\u{20000}'));
        assert!(is_cjk('한'));
        assert!(!is_cjk('a'));
    }

    #[test]
    fn identifiers_are_split_and_words_stemmed() {
        assert_eq!(analyze("pdfToMarkdown"), ["pdf", "to", "markdown"]);
        assert_eq!(analyze("snake_case_name"), ["snake", "case", "name"]);
        assert_eq!(
            analyze("HTTPServer getHTTPResponse"),
            ["http", "server", "get", "http", "respons"]
        );
        assert_eq!(analyze("Deploying deployments"), ["deploy", "deploy"]);
        assert_eq!(analyze("serving-llms-vllm"), ["serv", "llms", "vllm"]);
        assert_eq!(analyze("用python写脚本"), ["用", "python", "写脚", "脚本"]);
        assert_eq!(analyze("k8s s3 gpt4"), ["k8s", "s3", "gpt4"]);
    }

    /// What `analyze_where` relies on: no stem starts with another letter than its word,
    /// and none is longer. Snowball's English rules rewrite suffixes only, each into one no
    /// longer (step 1b adds an `e` only after removing `ed` or `ing`); its exceptions
    /// (`dying` → `die`, `skies` → `sky`) and its `y` handling keep the first letter too.
    /// Checked on those and on every combination of a first letter, a short core and a
    /// suffix the rules know.
    #[test]
    fn stems_keep_the_first_letter() {
        let exceptions = [
            "skis",
            "skies",
            "dying",
            "lying",
            "tying",
            "idly",
            "gently",
            "ugly",
            "early",
            "only",
            "singly",
            "sky",
            "news",
            "howe",
            "atlas",
            "cosmos",
            "bias",
            "andes",
            "inning",
            "outing",
            "canning",
            "herring",
            "earring",
            "proceed",
            "exceed",
            "succeed",
            "generate",
            "communicate",
            "arsenal",
            "yes",
            "yelling",
            "ies",
            "ied",
        ];
        let cores = [
            "", "a", "y", "e", "i", "o", "u", "b", "ab", "yi", "ey", "oy", "nd", "st",
        ];
        let suffixes = [
            "", "s", "ss", "us", "sses", "ies", "ied", "ed", "edly", "eed", "eedly", "ing",
            "ingly", "y", "e", "l", "ly", "li", "al", "ational", "tional", "enci", "anci", "izer",
            "bli", "alli", "entli", "eli", "ousli", "ization", "ation", "ator", "alism", "aliti",
            "iviti", "biliti", "logi", "fulli", "lessli", "fulness", "ousness", "iveness", "ness",
            "ful", "ment", "ement", "ent", "ism", "ate", "iti", "ous", "ive", "ize", "ance",
            "ence", "er", "ic", "able", "ible", "ant", "ion", "sion", "tion", "alize", "icate",
            "iciti", "ical", "ative", "ogi", "abli",
        ];
        let mut words: Vec<String> = exceptions.iter().map(|w| w.to_string()).collect();
        for first in 'a'..='z' {
            for core in cores {
                for suffix in suffixes {
                    words.push(format!("{first}{core}{suffix}"));
                    words.push(format!("{first}{core}{core}{suffix}"));
                }
            }
        }
        for w in words.iter().filter(|w| w.len() > 2) {
            let stem = stemmer().stem(w);
            assert_eq!(stem.chars().next(), w.chars().next(), "{w} -> {stem}");
            assert!(stem.len() <= w.len(), "{w} -> {stem} is longer");
        }
    }

    #[test]
    fn a_rejected_word_is_left_unstemmed() {
        let mut out = Vec::new();
        analyze_where(
            "Deploying running pdfToMarkdown",
            |w| w.starts_with('r'),
            |t| out.push(t.to_owned()),
        );
        assert_eq!(out, ["deploying", "run", "pdf", "to", "markdown"]);
    }

    #[test]
    fn cjk_runs_are_joined_and_capped() {
        assert_eq!(cjk_runs("use 数据 and 分析 now", 200), "数据 分析");
        assert_eq!(cjk_runs("数据分析", 2), "数据");
        assert_eq!(cjk_runs("no cjk here", 200), "");
    }
}
