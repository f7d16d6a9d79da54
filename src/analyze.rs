//! Turning a parsed skill into per-field term statistics: the document the store indexes.

use crate::fields::{Field, FieldStats, FIELD_COUNT};
use crate::skill::Skill;
use crate::tokenize::{analyze_with, tokenize_with};
use rustc_hash::FxHashMap;

/// A skill's terms, ready for the postings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Analyzed {
    /// Per field, its length in terms.
    pub lens: [u32; FIELD_COUNT],
    /// Every distinct term with its per-field (frequency, field length), sorted by term.
    pub terms: Vec<(String, FieldStats)>,
}

/// The text of each field of `skill`.
pub fn field_texts(skill: &Skill) -> [(Field, String); FIELD_COUNT] {
    let keywords = skill
        .triggers
        .iter()
        .chain(&skill.tags)
        .cloned()
        .collect::<Vec<_>>()
        .join(" ");
    [
        (Field::Name, skill.name.clone()),
        (Field::Description, indexed_description(skill).to_owned()),
        (Field::Keywords, keywords),
        (Field::Category, skill.category.clone()),
        (Field::Body, indexed_body(skill).to_owned()),
        (Field::Seed, skill.seed_text()),
    ]
}

/// Whether a description says only where the skill was listed, not what it does: a hub's
/// stand-in (`Indexed by skills.sh from owner/repo`, 19,761 of the 90,711 hub records) or a
/// bare `owner/repo` path (714 more). Its words (`skills`, `code`, `templates`, the owner's
/// name) match requests that have nothing to do with the skill, so such a description is
/// not indexed for the default ranking; the skill is found by its name, tags and body. The
/// seed field keeps it: the seed ranking reproduces the seed plugin.
pub fn is_provenance_only(description: &str) -> bool {
    let d = description.trim();
    let rest = match d.strip_prefix("Indexed by ") {
        Some(r) => match r.split_once(" from ") {
            Some((by, source)) if !by.contains(char::is_whitespace) => source.trim(),
            _ => return false,
        },
        None => d,
    };
    // A path or address: ASCII, no spaces (a Chinese or Japanese sentence has no spaces
    // either, and may hold a `/`).
    rest.contains('/') && rest.chars().all(|c| c.is_ascii_graphic())
}

/// The description as the default ranking indexes it: empty when it is provenance only.
pub fn indexed_description(skill: &Skill) -> &str {
    if is_provenance_only(&skill.description) {
        ""
    } else {
        &skill.description
    }
}

/// The body as the default ranking indexes it: without a first heading that only repeats
/// the skill's name (`# NeverBounce` under `name: NeverBounce`). Such a heading is the name
/// again, not text about the skill; a hub entry whose body is nothing else has no body, so
/// that it does not count towards the bodies' average length (`CorpusStats::field_docs`),
/// nor match its name's words a second time.
pub fn indexed_body(skill: &Skill) -> &str {
    let Some((heading, rest)) = first_heading(&skill.body) else {
        return &skill.body;
    };
    let mut name = rustc_hash::FxHashSet::default();
    analyze_with(&skill.name, |t| {
        name.insert(t.to_owned());
    });
    let mut repeats = true;
    let mut any = false;
    analyze_with(heading, |t| {
        any = true;
        repeats &= name.contains(t);
    });
    if any && repeats {
        rest
    } else {
        &skill.body
    }
}

/// The text of `body`'s first line when it is a Markdown heading (CommonMark: `#` to `######`
/// then a space or the line's end, or a line underlined by `=` or `-`), and the body after
/// it.
fn first_heading(body: &str) -> Option<(&str, &str)> {
    let body = body.trim_start();
    let (first, rest) = body.split_once('\n').unwrap_or((body, ""));
    let hashes = first.bytes().take_while(|&b| b == b'#').count();
    if (1..=6).contains(&hashes) {
        let text = &first[hashes..];
        return (text.is_empty() || text.starts_with([' ', '\t', '\r'])).then_some((text, rest));
    }
    let (under, after) = rest.split_once('\n').unwrap_or((rest, ""));
    let under = under.trim();
    let setext =
        !under.is_empty() && (under.bytes().all(|b| b == b'=') || under.bytes().all(|b| b == b'-'));
    (setext && hashes == 0).then_some((first, after))
}

/// A tokenizer or analyzer, calling back with each term.
type Analyzer = fn(&str, &mut dyn FnMut(&str));

/// Tokenizes every field of `skill`: the seed field with the plain tokenizer (so the seed
/// ranking sees exactly the seed plugin's terms), the others with the default analyzer.
pub fn analyze(skill: &Skill) -> Analyzed {
    let mut lens = [0u32; FIELD_COUNT];
    let mut tfs: FxHashMap<String, [u32; FIELD_COUNT]> = FxHashMap::default();
    for (field, text) in field_texts(skill) {
        let f = field as usize;
        let analyzer: Analyzer = if field == Field::Seed {
            |text, emit| tokenize_with(text, emit)
        } else {
            |text, emit| analyze_with(text, emit)
        };
        analyzer(&text, &mut |t: &str| {
            lens[f] += 1;
            match tfs.get_mut(t) {
                Some(counts) => counts[f] += 1,
                None => {
                    let mut counts = [0u32; FIELD_COUNT];
                    counts[f] = 1;
                    tfs.insert(t.to_owned(), counts);
                }
            }
        });
    }
    let mut terms: Vec<(String, FieldStats)> = tfs
        .into_iter()
        .map(|(term, counts)| {
            let mut stats = [(0, 0); FIELD_COUNT];
            for f in 0..FIELD_COUNT {
                if counts[f] > 0 {
                    stats[f] = (counts[f], lens[f]);
                }
            }
            (term, stats)
        })
        .collect();
    terms.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Analyzed { lens, terms }
}

/// A name and a description as the default analyzer sees them: their terms in order (one
/// per occurrence), each field's joined by single spaces (no term holds a space). Stored per
/// document, so that proximity learns word order without analysing the text again; it
/// finds there exactly the terms it would find by analysing.
pub fn word_order(name: &str, description: &str) -> (String, String) {
    let joined = |text: &str| {
        let mut out = String::new();
        analyze_with(text, |t| {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(t);
        });
        out
    };
    (joined(name), joined(description))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::skill::{parse_text, Location, Origin};

    #[test]
    fn word_order_is_the_analysed_terms_in_order() {
        let (name, description) = word_order("pdf-to-markdown", "Converts PDF (.pdf) files");
        assert_eq!(name, "pdf to markdown");
        assert_eq!(description, "convert pdf pdf file");
        assert_eq!(word_order("", "用python写脚本").1, "用 python 写脚 脚本");
    }

    #[test]
    fn a_description_that_only_names_its_source_is_not_indexed() {
        for d in [
            "Indexed by skills.sh from davila7/claude-code-templates",
            " acme/skills ",
            "Indexed by hub.example from https://github.com/a/b",
        ] {
            assert!(is_provenance_only(d), "{d}");
        }
        for d in [
            "",
            "Indexed by skills.sh",
            "Convert a/b test results",
            "Indexed by the team from a/b",
            "Indexed by skills.sh from a/b: converts PDFs",
            "n/a",
        ] {
            assert_eq!(is_provenance_only(d), d == "n/a", "{d}");
        }
        let loc = Location {
            origin: Origin::Local,
            rel: vec!["x".into(), "y".into(), "SKILL.md".into()],
        };
        let s = parse_text(
            "---\nname: code-review\ndescription: Indexed by skills.sh from o/claude-code\n---\n",
            &loc,
        );
        let a = analyze(&s);
        assert_eq!(a.lens[Field::Description as usize], 0);
        assert!(
            a.lens[Field::Seed as usize] > 2,
            "the seed document keeps it"
        );
    }

    #[test]
    fn a_first_heading_that_repeats_the_name_is_not_body_text() {
        let loc = Location {
            origin: Origin::Local,
            rel: vec!["other".into(), "neverbounce".into(), "SKILL.md".into()],
        };
        let body = |md: &str| indexed_body(&parse_text(md, &loc)).to_owned();
        let head = "---\nname: NeverBounce\ndescription: Verify e-mail addresses\n---\n";
        assert_eq!(body(&format!("{head}\n# NeverBounce\n")), "");
        assert_eq!(
            body(&format!("{head}## NeverBounce\nUse the API.\n")),
            "Use the API.\n"
        );
        // A heading that says more than the name, or text first, is body text.
        let more = format!("{head}# NeverBounce e-mail checks\nUse the API.\n");
        assert_eq!(body(&more), parse_text(&more, &loc).body);
        let text = format!("{head}Use the API.\n# NeverBounce\n");
        assert_eq!(body(&text), parse_text(&text, &loc).body);
        // An underlined heading is one too; `#NeverBounce` (no space) is not one.
        assert_eq!(
            body(&format!("{head}NeverBounce\n===\nUse it.\n")),
            "Use it.\n"
        );
        let glued = format!("{head}#NeverBounce\nUse it.\n");
        assert_eq!(body(&glued), parse_text(&glued, &loc).body);
        let hub = parse_text(&format!("{head}\n# NeverBounce\n"), &loc);
        assert_eq!(analyze(&hub).lens[Field::Body as usize], 0);
    }

    #[test]
    fn counts_terms_per_field_with_lengths() {
        let loc = Location {
            origin: Origin::Local,
            rel: vec!["dev".into(), "git".into(), "SKILL.md".into()],
        };
        let s = parse_text(
            "---\nname: git-helper\ndescription: Git commit helper for git\n---\nUse git.",
            &loc,
        );
        let a = analyze(&s);
        assert_eq!(a.lens[Field::Name as usize], 2);
        assert_eq!(a.lens[Field::Description as usize], 5);
        // The seed document is `git-helper: Git commit helper for git`.
        assert_eq!(a.lens[Field::Seed as usize], 7);
        let git = &a.terms.iter().find(|(t, _)| t == "git").unwrap().1;
        assert_eq!(git[Field::Name as usize], (1, 2));
        assert_eq!(git[Field::Description as usize], (2, 5));
        assert_eq!(git[Field::Body as usize], (1, 2));
        assert_eq!(git[Field::Seed as usize], (3, 7));
        assert_eq!(git[Field::Category as usize], (0, 0));
    }
}
