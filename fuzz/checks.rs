//! The properties every fuzz target checks, shared with `tests/fuzz_regressions.rs`, which
//! replays every input saved under `fuzz/regressions/<target>/` through the same function in
//! the normal test suite. Each function panics when a property fails.

#![allow(dead_code)]

use skillidx::compact::{compact_available_skills, CLOSE_TAG, OPEN_TAG};
use skillidx::fields::FIELD_COUNT;
use skillidx::postings::{self, Posting};
use skillidx::safety;
use skillidx::skill::{self, Location, Origin};
use skillidx::tokenize;

/// The SKILL.md parser on arbitrary bytes: never panics, and every limit Hermes sets holds
/// for whatever it returns.
pub fn parse_frontmatter(data: &[u8]) {
    let loc = Location {
        origin: Origin::Plugin("p".into()),
        rel: vec!["cat".into(), "sub".into(), "dir".into(), "SKILL.md".into()],
    };
    // Never rejected: bytes that are not UTF-8 give the skill Hermes offers for them (the
    // folder name, no description). Names are not cut (Hermes lists them whole).
    let s = skill::parse(data, &loc);
    assert!(s.description.chars().count() <= skill::MAX_DESCRIPTION_CHARS);
    assert!(s.body.chars().count() <= skill::BODY_CHARS);
    assert_eq!(s.id, format!("p:{}", s.name));
    assert_eq!(s.category, "cat/sub");
    assert_eq!(s.dir_name, "dir");
    let _ = s.seed_text();
    let Ok(text) = std::str::from_utf8(data) else {
        assert_eq!((s.name.as_str(), s.description.as_str()), ("dir", ""));
        return;
    };
    // The split is a pure function of the text, and the body is a suffix of it.
    let (yaml, body) = skill::split_frontmatter(text);
    assert!(text.ends_with(body));
    if let Some(y) = yaml {
        assert!(text.contains(y));
    }
}

/// The tokenizer and analyzer on arbitrary text: never panic, emit no empty or
/// separator-holding term, and tokenizing is deterministic.
pub fn tokenize(text: &str) {
    let terms = tokenize::tokenize(text);
    for t in &terms {
        assert!(!t.is_empty(), "empty term from {text:?}");
        assert!(
            t.chars().all(|c| c.is_alphanumeric() || c == '_'),
            "term {t:?} holds a separator (from {text:?})"
        );
    }
    let mut again = Vec::new();
    tokenize::tokenize_with(text, |t| again.push(t.to_owned()));
    assert_eq!(terms, again);
    // Tokenizing the terms joined by spaces loses none of them.
    let joined = terms.join(" ");
    assert!(tokenize::tokenize(&joined).len() >= terms.len());
    for t in tokenize::analyze(text) {
        assert!(!t.is_empty(), "empty analyzed term from {text:?}");
    }
    assert!(tokenize::cjk_runs(text, 200).chars().count() <= 201);
}

/// Reads little-endian `u32`s off the front of `data`.
struct Words<'a>(&'a [u8]);

impl Words<'_> {
    fn next(&mut self) -> Option<u32> {
        let (head, rest) = self.0.split_first_chunk::<4>()?;
        self.0 = rest;
        Some(u32::from_le_bytes(*head))
    }
}

/// The postings codec. First byte even: `decode` and a `Cursor` (walking, seeking, reading
/// block bounds) on arbitrary bytes never panic, and whatever `decode` accepts is ascending,
/// has no empty posting, and round-trips. Odd: a valid list built from the rest (gaps and
/// statistics as little-endian `u32`s) survives `encode` → `decode` and `decode_with`
/// exactly, and a cursor walks and seeks it as `decode` reads it.
pub fn postings(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        let _ = cursor_walk(rest, u32::from(mode >> 1));
        if let Ok(list) = postings::decode(rest) {
            for w in list.windows(2) {
                assert!(w[0].doc < w[1].doc, "decoded list not ascending");
            }
            for p in &list {
                assert!(p.stats.iter().any(|&(tf, _)| tf > 0), "empty posting");
            }
            assert_eq!(postings::decode(&postings::encode(&list)).unwrap(), list);
        }
        return;
    }
    let mut words = Words(rest);
    let mut list = Vec::new();
    let mut doc: Option<u32> = None;
    'entries: while let Some(gap) = words.next() {
        let mut stats = [(0u32, 0u32); FIELD_COUNT];
        // Small frequencies most of the time, so that fields are often absent.
        for s in stats.iter_mut() {
            let (Some(tf), Some(len)) = (words.next(), words.next()) else {
                break 'entries;
            };
            let tf = if tf & 0x8000_0000 != 0 { tf } else { tf % 3 };
            *s = if tf == 0 { (0, 0) } else { (tf, len) };
        }
        if stats.iter().all(|&(tf, _)| tf == 0) {
            stats[0] = (1, 1);
        }
        let next = match doc {
            None => gap,
            Some(d) => match d.checked_add(gap.max(1)) {
                Some(n) => n,
                None => break,
            },
        };
        doc = Some(next);
        list.push(Posting { doc: next, stats });
    }
    let bytes = postings::encode(&list);
    let back = postings::decode(&bytes).expect("a list we encoded decodes");
    assert_eq!(back, list);
    let mut visited = 0;
    postings::decode_with(&bytes, |d, s| {
        assert_eq!((d, *s), (list[visited].doc, list[visited].stats));
        visited += 1;
    })
    .unwrap();
    assert_eq!(visited, list.len());
    // Walked one entry at a time, and seeking by steps of every size: the decoded entries.
    for step in [0u32, 1, 7, 1 << 12, u32::MAX] {
        let walked = cursor_walk(&bytes, step).expect("a list we encoded walks");
        let want: Vec<u32> = match step {
            0 => list.iter().map(|p| p.doc).collect(),
            _ => seeks(&list, step),
        };
        assert_eq!(walked, want, "step {step}");
    }
}

/// The documents a cursor stops at: every entry when `step` is 0, else the first entry at or
/// after 0, `step`, `2 step`… (after asking each target's block bound).
fn cursor_walk(bytes: &[u8], step: u32) -> Result<Vec<u32>, postings::CodecError> {
    let mut c = postings::Cursor::new(bytes)?;
    let mut out = Vec::new();
    if step == 0 {
        while let Some(doc) = c.doc() {
            out.push(doc);
            c.advance()?;
        }
        return Ok(out);
    }
    let mut target = 0u32;
    loop {
        if c.doc().is_some_and(|d| d < target) {
            let _ = c.block_for(target);
        }
        c.seek(target)?;
        match c.doc() {
            Some(doc) => {
                if out.last() != Some(&doc) {
                    out.push(doc);
                }
            }
            None => return Ok(out),
        }
        match target.checked_add(step) {
            Some(t) => target = t,
            None => return Ok(out),
        }
    }
}

/// What [`cursor_walk`] finds in `list` seeking by `step`.
fn seeks(list: &[Posting], step: u32) -> Vec<u32> {
    let mut out: Vec<u32> = Vec::new();
    let mut target = 0u32;
    loop {
        match list.iter().find(|p| p.doc >= target) {
            Some(p) if out.last() != Some(&p.doc) => out.push(p.doc),
            Some(_) => {}
            None => return out,
        }
        match target.checked_add(step) {
            Some(t) => target = t,
            None => return out,
        }
    }
}

/// The `<available_skills>` compactor on arbitrary text: never panics, is idempotent,
/// leaves text outside the blocks untouched, never grows a prompt, never creates a tag.
pub fn compact(text: &str) {
    let once = compact_available_skills(text);
    let twice = compact_available_skills(&once);
    assert_eq!(twice, once, "not idempotent on {text:?}");
    assert!(once.len() <= text.len(), "grew {text:?}");
    match text.find(OPEN_TAG) {
        None => assert_eq!(once, text),
        Some(open) => {
            assert_eq!(&once[..open.min(once.len())], &text[..open]);
            if !text[open..].contains(CLOSE_TAG) {
                assert_eq!(once, text);
            } else {
                let tail = &text[text.rfind(CLOSE_TAG).unwrap() + CLOSE_TAG.len()..];
                assert!(once.ends_with(tail), "tail changed in {text:?}");
            }
        }
    }
    assert!(once.matches(OPEN_TAG).count() <= text.matches(OPEN_TAG).count());
    assert!(once.matches(CLOSE_TAG).count() <= text.matches(CLOSE_TAG).count());
}

/// What reaches the prompt: whatever a skill holds, `safety::inline` gives one line with no
/// tag, no markup that ends the item, no injection pattern, and is idempotent; ids and labels
/// are judged without panicking and labels never hold a `..` component.
pub fn safety(text: &str) {
    let _ = safety::flags(text);
    let out = safety::inline(text);
    assert!(
        !out.contains(['\n', '\r', '<', '>']),
        "{out:?} from {text:?}"
    );
    assert!(!out.contains("**"), "{out:?} from {text:?}");
    assert!(
        !out.starts_with(['#', '-', '*', '+', ' ']),
        "{out:?} from {text:?}"
    );
    assert!(out.chars().all(|c| !c.is_control()), "{out:?}");
    assert!(
        safety::flags(&out).is_empty(),
        "{out:?} still flagged: {:?}",
        safety::flags(&out)
    );
    assert_eq!(safety::inline(&out), out, "not idempotent on {text:?}");
    let label = safety::label(text);
    assert!(
        !label.split('/').any(|p| p == ".." || p == "."),
        "{label:?}"
    );
    assert!(!label.contains(['\n', '<', '>', '(', ')']), "{label:?}");
    if safety::id_problem(text).is_none() {
        assert!(!text.contains(['\n', '*', '<', '>', '\\']), "{text:?}");
        assert!(!text.starts_with('/'), "{text:?}");
        assert!(
            !text.split([':', '/']).any(|p| p == ".." || p == "."),
            "{text:?}"
        );
    }
}
