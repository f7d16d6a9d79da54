//! English words, for the typo step: a query word that is a real word is not a typo.
//!
//! Typo matching corrects a query word that no skill contains to a vocabulary term an
//! edit or two away. A real word that the skills happen not to use ("annotate the sonnet's
//! volta") is not a misspelling of the nearest one that they do (`voltage`), so the plan
//! asks this list first. The list is SCOWL's American English word list as Debian ships it
//! (`wamerican` 2020.12.07, `/usr/share/dict/american-english`; licence in
//! `english_stems.LICENSE`), each word of ASCII letters put through the default analyzer
//! (so that it compares with analysed query terms), sorted, one per line.
//! `SKILLIDX_WRITE_WORDS=/usr/share/dict/american-english cargo test --test english_words`
//! writes it again.
//!
//! Kept as sorted text compiled into the binary and searched in place: no parsing, no
//! allocation, nothing to load when a process answers its one query.

/// The analysed English words, sorted, one per line.
pub const STEMS: &str = include_str!("english_stems.txt");

/// Whether the analysed term `term` is an English word.
pub fn is_word(term: &str) -> bool {
    let bytes = STEMS.as_bytes();
    let (mut lo, mut hi) = (0, bytes.len());
    // Binary search over byte offsets, each probe moved back to the start of its line.
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        let start = bytes[lo..mid]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(lo, |i| lo + i + 1);
        let end = bytes[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |i| start + i);
        match STEMS[start..end].cmp(term) {
            std::cmp::Ordering::Equal => return true,
            std::cmp::Ordering::Less => lo = end + 1,
            std::cmp::Ordering::Greater => hi = start,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_listed_word_and_no_misspelling() {
        for line in STEMS.lines().step_by(97) {
            assert!(is_word(line), "{line}");
        }
        let first = STEMS.lines().next().unwrap();
        let last = STEMS.lines().last().unwrap();
        assert!(is_word(first) && is_word(last));
        for t in ["volta", "sonnet", "annot", "deploy", "kubernet"] {
            assert_eq!(is_word(t), t != "kubernet", "{t}");
        }
        for t in ["kuberent", "dcoker", "wirte", "", "zzzzzz", "aaaa"] {
            assert!(!is_word(t), "{t}");
        }
    }
}
