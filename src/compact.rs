//! Names-only compaction of the `<available_skills>` block of a system prompt.
//!
//! Hermes (`agent/prompt_builder.build_skills_system_prompt`, 0.19.0) renders every offered
//! skill with a description cut to 60 characters:
//!
//! ```text
//! <available_skills>
//!   devops: Build, deploy and operate infrastructure
//!     - docker-cleanup: Remove dangling Docker images, stopped containers and unu...
//!     - terraform-plan
//!   mlops [names only]: axolotl, serving-llms-vllm
//! </available_skills>
//! ```
//!
//! [`compact_available_skills`] rewrites each such block to names only, **one line per
//! category** (the same shape Hermes itself uses for its demoted `[names only]` categories):
//!
//! ```text
//! <available_skills>
//!   devops: docker-cleanup, terraform-plan
//!   mlops [names only]: axolotl, serving-llms-vllm
//! </available_skills>
//! ```
//!
//! Why one line per category rather than keeping `    - name` lines: each skill line costs
//! an indent, a dash and a newline (about two tokens more per skill than `, `). Measured with
//! cl100k_base on Hermes 0.19.0's own block: for the 171 Hermes skills of the shared corpus
//! the block goes from 3,314 tokens to 1,108 with `    - name` lines and to 782 with one
//! line per category; for all ~2,800 skills from 73,716 to 21,977 and to 16,427 (a further
//! 25-30 %). The category description is dropped along with the skill descriptions: the
//! plugin injects the relevant descriptions per turn. See `docs/hermes-plugin.md`.
//!
//! Rules (every line of the block's inside is classified):
//! - `    - name: desc` (four spaces, dash): a skill; its name is the text up to the first
//!   `": "`, so `plugin:skill`, `[project] name` and names with a bare `:` stay whole.
//! - `  category …` (two spaces, then a non-space) starts a category; its name is the text up
//!   to the first `": "`, or the line without its trailing `:`. A category line carrying
//!   `[names only]`, and a category line followed by no skill line (already compact, or a
//!   shape this code does not know), is kept verbatim: this is what makes the rewrite
//!   idempotent.
//! - The labels Hermes 0.20 and 0.21 put before a description (`[project]`, `[org-shared: by
//!   X]`, `[name collision — …; load via category path]`) follow the name
//!   (`orgskill [org-shared: by X]`): they tell the model where a skill comes from and how to
//!   load it. A name holding `" ["` is quoted, so the names read back whole.
//! - Any other line (the column-0 continuation of a multi-line `|` description, or anything
//!   unrecognised inside a category) belongs to the previous description and is dropped;
//!   such lines before the first category are kept.
//!
//! Text outside the blocks is returned byte for byte; a prompt without a (closed) block is
//! returned unchanged.

/// The opening tag of the block.
pub const OPEN_TAG: &str = "<available_skills>";
/// The closing tag of the block.
pub const CLOSE_TAG: &str = "</available_skills>";

/// Rewrites every `<available_skills>…</available_skills>` block in `text` to names only,
/// one line per category (see the module documentation); everything else is untouched.
pub fn compact_available_skills(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in block_insides(text) {
        out.push_str(&text[at..start]);
        out.push_str(&compact_inner(&text[start..end]));
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// The byte ranges of the insides of the (closed) `<available_skills>` blocks of `text`,
/// in order.
pub fn block_insides(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(open) = text[at..].find(OPEN_TAG) {
        let start = at + open + OPEN_TAG.len();
        let Some(close) = text[start..].find(CLOSE_TAG) else {
            break;
        };
        out.push((start, start + close));
        at = start + close + CLOSE_TAG.len();
    }
    out
}

/// The (category, name) pairs that the `<available_skills>` blocks of `text` list: what
/// Hermes offers in this session, already filtered by its own rules (tools, platform,
/// environments, disabled, clashes). Reads Hermes' full form (`    - name: description`), its
/// demoted `  category [names only]: a, b` lines, and the names-only form
/// [`compact_available_skills`] writes, so it gives the same pairs before and after
/// compaction. The plugin uses them as the session's allow-list.
pub fn listed_skills(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (start, end) in block_insides(text) {
        let mut current: Option<Listed<'_>> = None;
        for line in text[start..end].split('\n') {
            if let Some(entry) = line.strip_prefix("    - ") {
                if let Some(c) = current.as_mut() {
                    c.skills.push(label(entry));
                }
            } else if is_category_line(line) {
                if let Some(c) = current.take() {
                    c.emit(&mut out);
                }
                current = Some(Listed::header(&line[2..]));
            }
        }
        if let Some(c) = current.take() {
            c.emit(&mut out);
        }
    }
    out
}

/// One category of a block being read by [`listed_skills`].
struct Listed<'a> {
    category: String,
    /// The header's text after `": "`: a description when skill lines follow, the names
    /// when none do (a names-only line).
    tail: Option<&'a str>,
    skills: Vec<&'a str>,
}

impl<'a> Listed<'a> {
    /// A category header (the line after its two spaces): Hermes' `name: description`,
    /// `name [names only]: a, b`, or a names-only line whose category may be quoted.
    fn header(body: &'a str) -> Listed<'a> {
        let (category, rest) = match quoted_prefix(body) {
            Some((name, len)) => (name, &body[len..]),
            None => {
                let end = body.find(": ").unwrap_or(body.len());
                (body[..end].to_owned(), &body[end..])
            }
        };
        let rest = rest.strip_prefix(" [names only]").unwrap_or(rest);
        let category = match category.strip_suffix(" [names only]") {
            Some(c) => c.to_owned(),
            None => category,
        };
        let (category, tail) = match rest.strip_prefix(": ") {
            Some(tail) => (category, Some(tail)),
            None if rest.is_empty() => match category.strip_suffix(':') {
                Some(c) => (c.to_owned(), None),
                None => (category, None),
            },
            None => (category, None),
        };
        Listed {
            category,
            tail,
            skills: Vec::new(),
        }
    }

    fn emit(self, out: &mut Vec<(String, String)>) {
        let names: Vec<String> = if self.skills.is_empty() {
            self.tail.map(split_names).unwrap_or_default()
        } else {
            self.skills.into_iter().map(str::to_owned).collect()
        };
        out.extend(names.into_iter().map(|n| (self.category.clone(), n)));
    }
}

/// The names of a names-only line's tail (`a, "b, c", d [project]`): split at `", "`, a
/// quoted name read as the JSON string it is, the labels after a name left out (a bare name
/// never holds `" ["`: [`shown`] quotes it).
fn split_names(mut tail: &str) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let (name, len) = quoted_prefix(tail).unwrap_or_else(|| {
            let end = tail.find(", ").unwrap_or(tail.len());
            let name = &tail[..end];
            (name.split(" [").next().unwrap_or(name).to_owned(), end)
        });
        out.push(name);
        // The labels after a name hold no `", "` (`shown_labels`).
        let len = len + tail[len..].find(", ").unwrap_or(tail.len() - len);
        match tail[len..].strip_prefix(", ") {
            Some(rest) => tail = rest,
            None => return out,
        }
    }
}

/// The JSON string `text` starts with, and its length in bytes.
fn quoted_prefix(text: &str) -> Option<(String, usize)> {
    if !text.starts_with('"') {
        return None;
    }
    let mut values = serde_json::Deserializer::from_str(text).into_iter::<String>();
    let value = values.next()?.ok()?;
    Some((value, values.byte_offset()))
}

/// A name or category as a names-only line shows it: as it is, or quoted as a JSON string
/// when it could be misread there (it holds the line's separator `", "`, or `": "` for a
/// category, or `" ["`, which starts a label, starts with a quote, holds a line break or another control character, or has
/// space at either end), so that `a, b` is one name and not two, and a name with a line
/// break neither breaks the line nor vanishes. `org:acme`, `plugin:x` and `a,b` stay bare.
pub fn shown(name: &str, separator: &str) -> String {
    let odd = name.contains(separator)
        || name.contains(", ")
        || name.contains(" [")
        || name.starts_with('"')
        || name
            .chars()
            .any(|c| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{85}'))
        || name.trim() != name;
    if odd {
        serde_json::to_string(name).unwrap_or_default()
    } else {
        name.to_owned()
    }
}

/// Whether `text` holds an `<available_skills>` block that compaction would change.
pub fn has_available_skills(text: &str) -> bool {
    text.contains(OPEN_TAG) && text.contains(CLOSE_TAG)
}

/// The labels Hermes (0.20 on) puts before a description to say where a skill comes from and
/// how to load it (`agent/prompt_builder`: `[project] `, `[org-shared: by X] `,
/// `[name collision — …; load via category path] `); compaction keeps them after the name.
const LABEL_STARTS: [&str; 4] = [
    "[project]",
    "[org-shared]",
    "[org-shared:",
    "[name collision",
];

/// The labels a description starts with, in order, and the description after them.
pub(crate) fn split_labels(mut desc: &str) -> (Vec<&str>, &str) {
    let mut labels = Vec::new();
    while LABEL_STARTS.iter().any(|l| desc.starts_with(l)) {
        let Some(end) = desc.find(']') else { break };
        labels.push(&desc[..=end]);
        desc = desc[end + 1..].trim_start_matches(' ');
    }
    (labels, desc)
}

/// The labels as a names-only line shows them after a name (` [project] [org-shared: by
/// X]`). One holding `", "` (an org author's name can) is left out, so that the line still
/// splits into names at `", "`.
pub(crate) fn shown_labels<'a>(labels: impl IntoIterator<Item = &'a str>) -> String {
    let mut out = String::new();
    for l in labels.into_iter().filter(|l| !l.contains(", ")) {
        out.push(' ');
        out.push_str(l);
    }
    out
}

/// A skill entry of a category: its name and the labels of its description.
struct Entry<'a> {
    name: &'a str,
    labels: Vec<&'a str>,
}

impl Entry<'_> {
    fn parse(entry: &str) -> Entry<'_> {
        let name = label(entry);
        let desc = entry[name.len()..].strip_prefix(": ").unwrap_or("");
        Entry {
            name,
            labels: split_labels(desc).0,
        }
    }

    fn shown(&self) -> String {
        shown(self.name, ", ") + &shown_labels(self.labels.iter().copied())
    }
}

/// One category being collected.
struct Category<'a> {
    /// The header line as written.
    header: &'a str,
    /// The category name, when the header is a plain (not demoted) one.
    name: Option<&'a str>,
    /// Skills in order.
    skills: Vec<Entry<'a>>,
}

impl Category<'_> {
    fn render(&self, out: &mut Vec<String>) {
        match self.name {
            Some(name) if !self.skills.is_empty() => {
                let names: Vec<String> = self.skills.iter().map(Entry::shown).collect();
                out.push(format!("  {}: {}", shown(name, ": "), names.join(", ")));
            }
            _ => out.push(self.header.to_owned()),
        }
    }
}

/// Compacts the inside of one block (the text between the tags, newlines included).
fn compact_inner(inner: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    let mut current: Option<Category<'_>> = None;
    let parts: Vec<&str> = inner.split('\n').collect();
    let last = parts.len().saturating_sub(1);
    for (i, line) in parts.iter().copied().enumerate() {
        // The empty pieces around the tags' own newlines are kept as they are.
        if line.is_empty() && (i == 0 || i == last) {
            if let Some(c) = current.take() {
                c.render(&mut lines);
            }
            lines.push(String::new());
            continue;
        }
        if let Some(entry) = line.strip_prefix("    - ") {
            match current.as_mut() {
                Some(c) => c.skills.push(Entry::parse(entry)),
                None => lines.push(line.to_owned()),
            }
        } else if is_category_line(line) {
            if let Some(c) = current.take() {
                c.render(&mut lines);
            }
            current = Some(Category {
                header: line,
                name: category_name(line),
                skills: Vec::new(),
            });
        } else if current.is_none() {
            lines.push(line.to_owned());
        }
        // Else: a description's continuation line, dropped with the description.
    }
    if let Some(c) = current.take() {
        c.render(&mut lines);
    }
    lines.join("\n")
}

/// `  x…`: exactly two spaces, then a non-space.
fn is_category_line(line: &str) -> bool {
    line.strip_prefix("  ")
        .and_then(|r| r.chars().next())
        .is_some_and(|c| !c.is_whitespace())
}

/// The name of a plain category header, or `None` for a demoted (`[names only]`) one.
fn category_name(line: &str) -> Option<&str> {
    let body = &line[2..];
    if body.contains("[names only]") {
        return None;
    }
    Some(match body.find(": ") {
        Some(i) => &body[..i],
        None => body.strip_suffix(':').unwrap_or(body),
    })
}

/// The name part of `name: description`.
fn label(entry: &str) -> &str {
    match entry.find(": ") {
        Some(i) => &entry[..i],
        None => entry.trim_end(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/prompts")
            .join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("fixture {}: {e}", path.display()))
    }

    /// The block of `text`, tags included.
    fn block(text: &str) -> &str {
        let i = text.find(OPEN_TAG).expect("open tag");
        let j = text.find(CLOSE_TAG).expect("close tag") + CLOSE_TAG.len();
        &text[i..j]
    }

    fn outside(text: &str) -> (String, String) {
        let i = text.find(OPEN_TAG).expect("open tag");
        let j = text.rfind(CLOSE_TAG).expect("close tag") + CLOSE_TAG.len();
        (text[..i].to_owned(), text[j..].to_owned())
    }

    #[test]
    fn listed_skills_are_the_same_before_and_after_compaction() {
        for name in ["typical.txt", "system_prompt.txt"] {
            let text = fixture(name);
            let before = listed_skills(&text);
            assert!(!before.is_empty(), "{name}");
            assert_eq!(
                listed_skills(&compact_available_skills(&text)),
                before,
                "{name}"
            );
        }
        let text = fixture("typical.txt");
        let listed = listed_skills(&text);
        assert!(listed.contains(&("devops".to_owned(), "terraform-plan".to_owned())));
        assert!(listed.contains(&("mlops".to_owned(), "axolotl".to_owned())));
        let demoted = "<available_skills>\n  a/b [names only]: x, y\n  c: about c\n    - z: zed\n</available_skills>";
        assert_eq!(
            listed_skills(demoted),
            [("a/b", "x"), ("a/b", "y"), ("c", "z")]
                .map(|(c, n)| (c.to_owned(), n.to_owned()))
                .to_vec()
        );
        assert!(listed_skills("no block here").is_empty());
    }

    #[test]
    fn typical_block_becomes_one_line_per_category() {
        let text = fixture("typical.txt");
        let out = compact_available_skills(&text);
        assert_eq!(
            block(&out),
            "<available_skills>\n  devops: docker-cleanup, kubernetes-debugging, terraform-plan\n  mlops: axolotl, serving-llms-vllm\n</available_skills>"
        );
        assert_eq!(outside(&out), outside(&text));
        assert!(out.len() < text.len());
    }

    #[test]
    fn demoted_categories_are_kept_verbatim() {
        let text = fixture("demoted.txt");
        let out = compact_available_skills(&text);
        assert_eq!(
            block(&out),
            "<available_skills>\n  devops: docker-cleanup, kubernetes-debugging, terraform-plan\n  mlops [names only]: axolotl, serving-llms-vllm\n</available_skills>"
        );
        // The footnote after the block survives byte for byte.
        assert_eq!(outside(&out), outside(&text));
        assert!(out.contains("(Categories marked [names only] are outside"));
    }

    #[test]
    fn layout_block_keeps_nested_categories() {
        let out = compact_available_skills(&fixture("layout.txt"));
        assert_eq!(
            block(&out),
            "<available_skills>\n  creative: ascii-art\n  devops: docker-cleanup\n  general: root-skill\n  note-taker: note-taker\n  research/papers: arxiv-search\n</available_skills>"
        );
    }

    #[test]
    fn odd_frontmatter_drops_continuation_lines() {
        let out = compact_available_skills(&fixture("odd_frontmatter.txt"));
        assert_eq!(
            block(&out),
            "<available_skills>\n  misc: bom-skill, broken-yaml, exactly-60, literal-desc, nihongo, nofront, quoted, sixty-one\n</available_skills>"
        );
    }

    #[test]
    fn names_holding_the_separators_are_quoted_and_read_back_whole() {
        let text = "<available_skills>\n  a, b: cat\n    - x, y: two words\n    - \"q\": quoted\n    - plain: p\n  org:acme: org\n    - z: zed\n</available_skills>";
        let out = compact_available_skills(text);
        assert!(
            out.contains("  \"a, b\": \"x, y\", \"\\\"q\\\"\", plain\n"),
            "{out}"
        );
        assert!(out.contains("  org:acme: z\n"), "{out}");
        assert_eq!(listed_skills(&out), listed_skills(text));
        assert_eq!(compact_available_skills(&out), out);
    }

    #[test]
    fn quirky_names_are_kept() {
        let out = compact_available_skills(&fixture("quirks.txt"));
        assert!(block(&out).contains("  z: 123, None, Zeta-Upper, alpha-lower, same-name\n"));
    }

    #[test]
    fn whole_request_prompt_only_the_block_changes() {
        let text = fixture("system_prompt.txt");
        let out = compact_available_skills(&text);
        assert_eq!(outside(&out), outside(&text));
        assert_ne!(block(&out), block(&text));
        assert!(!block(&out).contains("    - "));
    }

    #[test]
    fn the_labels_hermes_0_21_puts_before_a_description_are_kept() {
        let text = "<available_skills>\n  cat2:\n    - orgskill: [name collision \u{2014} also exists in your org; load via category path] Personal copy\n  org:acme:\n    - deploy: [org-shared: by alice-laptop] Deploy the app\n    - orgskill: [name collision \u{2014} also exists personally; load via category path] [org-shared: by bob] Org copy\n    - x: [org-shared: by Smith, John] Comma author\n  tools:\n    - lint: [project] Lint the repo\n    - odd [x]: [project]\n    - wip: [WIP] not a label\n</available_skills>";
        let out = compact_available_skills(text);
        assert_eq!(
            out,
            "<available_skills>\n  cat2: orgskill [name collision \u{2014} also exists in your org; load via category path]\n  org:acme: deploy [org-shared: by alice-laptop], orgskill [name collision \u{2014} also exists personally; load via category path] [org-shared: by bob], x\n  tools: lint [project], \"odd [x]\" [project], wip\n</available_skills>"
        );
        assert_eq!(listed_skills(&out), listed_skills(text));
        assert_eq!(compact_available_skills(&out), out);
        let names: Vec<String> = listed_skills(text).into_iter().map(|(_, n)| n).collect();
        assert_eq!(
            names,
            ["orgskill", "deploy", "orgskill", "x", "lint", "odd [x]", "wip"]
        );
    }

    #[test]
    fn newer_forms_stay_whole() {
        let text = "<available_skills>\n  org:acme/devops: Org skills\n    - plugin:kanban-board: Manage a board\n    - [project] deploy-app: Deploy it\n    - a:b\n  [project] tools:\n    - lint\n</available_skills>";
        assert_eq!(
            compact_available_skills(text),
            "<available_skills>\n  org:acme/devops: plugin:kanban-board, [project] deploy-app, a:b\n  [project] tools: lint\n</available_skills>"
        );
    }

    #[test]
    fn idempotent_on_every_fixture() {
        for f in [
            "typical.txt",
            "demoted.txt",
            "layout.txt",
            "odd_frontmatter.txt",
            "quirks.txt",
            "system_prompt.txt",
        ] {
            let once = compact_available_skills(&fixture(f));
            assert_eq!(compact_available_skills(&once), once, "{f}");
        }
        // The line-per-name form other compactors produce is accepted too.
        let seedish = "<available_skills>\n  devops:\n    - docker-cleanup\n</available_skills>";
        let once = compact_available_skills(seedish);
        assert_eq!(
            once,
            "<available_skills>\n  devops: docker-cleanup\n</available_skills>"
        );
        assert_eq!(compact_available_skills(&once), once);
    }

    #[test]
    fn text_without_a_block_is_unchanged() {
        for t in [
            "",
            "no block here",
            "<available_skills> but never closed\n    - a: b",
            "</available_skills> before <available_skills>",
            "tabs\tand\r\nCRLF\u{feff}",
        ] {
            assert_eq!(compact_available_skills(t), t);
        }
    }

    #[test]
    fn every_block_is_rewritten() {
        let one = "<available_skills>\n  a:\n    - x: y\n</available_skills>";
        let text = format!("pre {one} mid {one} post");
        assert_eq!(
            compact_available_skills(&text),
            "pre <available_skills>\n  a: x\n</available_skills> mid <available_skills>\n  a: x\n</available_skills> post"
        );
    }

    #[test]
    fn empty_block_is_unchanged() {
        let t = "x<available_skills>\n</available_skills>y";
        assert_eq!(compact_available_skills(t), t);
        let t = "x<available_skills></available_skills>y";
        assert_eq!(compact_available_skills(t), t);
    }
}
