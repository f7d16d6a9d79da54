//! The English word list of the typo step (`src/search/english_stems.txt`): sorted, without
//! repeats, each line an analysed term (what `search::english::is_word` is asked about).
//!
//! `SKILLIDX_WRITE_WORDS=/usr/share/dict/american-english cargo test --test english_words`
//! writes it from that word list (Debian's `wamerican`): every word of ASCII letters only,
//! analysed by the default analyzer, where that gives one term.

use std::collections::BTreeSet;

const LIST: &str = "src/search/english_stems.txt";

#[test]
fn the_list_is_sorted_analysed_terms() {
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    if let Ok(source) = std::env::var("SKILLIDX_WRITE_WORDS") {
        let text = std::fs::read_to_string(&source).unwrap();
        let mut stems = BTreeSet::new();
        for word in text.lines().map(str::trim) {
            if word.is_empty() || !word.bytes().all(|b| b.is_ascii_alphabetic()) {
                continue;
            }
            if let [term] = skillidx::tokenize::analyze(&word.to_ascii_lowercase()).as_slice() {
                stems.insert(term.clone());
            }
        }
        let mut out = String::new();
        for s in &stems {
            out.push_str(s);
            out.push('\n');
        }
        std::fs::write(repo.join(LIST), out).unwrap();
    }
    let text = std::fs::read_to_string(repo.join(LIST)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() > 30_000, "{} words", lines.len());
    assert!(lines.windows(2).all(|w| w[0] < w[1]), "sorted, no repeats");
    for line in &lines {
        assert!(line.bytes().all(|b| b.is_ascii_lowercase()), "{line:?}");
    }
}
