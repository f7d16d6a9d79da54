//! The budgeted `<available_skills>` block: a listing of fixed size at any skill count.
//!
//! Names-only compaction ([`super::listing::Block::names_only`]) still grows with every
//! skill: about 64,000 characters at 2,800 skills and 1.76M at 90,000. With a budget, the
//! outgoing request's block is instead built to fit a number of tokens that does not depend
//! on how many skills there are (progressive disclosure's first layer; the per-turn
//! injection and the `skills_search` tool are the other two):
//!
//! 1. a line with how many skills there are, and the categories with how many each holds,
//!    largest first, cut to at most a third of the budget;
//! 2. as many names as fit, in their categories (Hermes' order), chosen most useful first:
//!    the pinned skills (the plugin's `SKILL_RETRIEVAL_PINNED` and Hermes' own `pinned`
//!    records in `skills/.usage.json`), then the skills Hermes recorded most activity for
//!    (views, uses and patches in `.usage.json`), then one skill of each category in turn,
//!    largest categories first, so every category is represented before any gets a second;
//! 3. a closing line saying how many skills are not listed and how to reach them.
//!
//! A block whose names-only form fits the budget is that form, unchanged. What is listed is
//! only ever what Hermes' own block lists in the session (the reading of it), so no rule of
//! Hermes is bypassed. The block depends only on the reading, the usage file as read with
//! it and the settings: the plugin keeps it per reading, which is per index state, block
//! and session shape, so it is byte-identical from turn to turn while they hold (prompt
//! caching).

use super::listing::Block;
use crate::compact::shown;
use rustc_hash::{FxHashMap, FxHashSet};
use std::path::Path;

/// The plugin's default budget, in tokens.
pub const DEFAULT_TOKENS: usize = 1500;

/// How the listing is budgeted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Budget {
    /// The budget in tokens ([`estimate_tokens`]); 0: the names-only block.
    pub tokens: usize,
    /// Names listed before any other, in this order, when the session lists them.
    pub pinned: Vec<String>,
    /// The name of the search tool the closing line points to, when one is registered.
    pub search_tool: Option<String>,
    /// The loader the closing line points to ([`super::load::loader`]; empty:
    /// `skill_view`).
    pub loader: String,
}

/// What Hermes recorded of each skill's use (`<profile home>/skills/.usage.json`, written by
/// `tools/skill_usage.py`: `view_count`, `use_count`, `patch_count`, `pinned` per name).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Usage {
    activity: FxHashMap<String, u64>,
    pinned: FxHashSet<String>,
}

impl Usage {
    /// The usage recorded under `home` (empty when there is none or it does not parse:
    /// it only orders the listing).
    pub fn read(home: &Path) -> Usage {
        let path = home.join("skills").join(".usage.json");
        std::fs::read(&path)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .map(|v| Usage::of(&v))
            .unwrap_or_default()
    }

    /// The usage held by the JSON value of a `.usage.json`.
    pub fn of(value: &serde_json::Value) -> Usage {
        let mut out = Usage::default();
        let Some(map) = value.as_object() else {
            return out;
        };
        for (name, record) in map {
            let count = |key: &str| record.get(key).and_then(serde_json::Value::as_u64);
            let activity: u64 = ["view_count", "use_count", "patch_count"]
                .iter()
                .filter_map(|k| count(k))
                .fold(0u64, u64::saturating_add);
            if activity > 0 {
                out.activity.insert(name.clone(), activity);
            }
            if record.get("pinned").and_then(serde_json::Value::as_bool) == Some(true) {
                out.pinned.insert(name.clone());
            }
        }
        out
    }
}

/// An estimate of `text`'s length in tokens, on the safe side for BPE tokenizers: a token
/// per 3.5 ASCII characters (cl100k_base measured 3.9 on names-only lines) and one per
/// other character (a CJK character is one or more).
pub fn estimate_tokens(text: &str) -> usize {
    let (ascii, other) = text.chars().fold((0usize, 0usize), |(a, o), c| {
        if c.is_ascii() {
            (a + 1, o)
        } else {
            (a, o + 1)
        }
    });
    (ascii * 2).div_ceil(7) + other
}

/// The inside of `block` (between the tags, with Hermes' newlines) fitted to `budget`
/// (see the module documentation).
pub fn budgeted(block: &Block, usage: &Usage, budget: &Budget) -> String {
    let names_only = block.names_only();
    if budget.tokens == 0 || estimate_tokens(&names_only) <= budget.tokens {
        return names_only;
    }
    let total: usize = block.groups.iter().map(|g| g.names.len()).sum();
    let summary = summary_line(block, total, budget.tokens / 3);
    let closing_reserve = estimate_tokens(&closing_line(total, budget)) + 2;
    let mut left = budget
        .tokens
        .saturating_sub(estimate_tokens(&summary) + closing_reserve + 1);
    let mut chosen: FxHashSet<(usize, usize)> = FxHashSet::default();
    let mut opened: FxHashSet<usize> = FxHashSet::default();
    for (g, n) in useful_order(block, usage, budget) {
        let group = &block.groups[g];
        let mut cost = estimate_tokens(&group.entry(n)) + 1;
        if !opened.contains(&g) {
            cost += estimate_tokens(&shown(&group.category, ": ")) + 2;
        }
        if cost > left {
            // A long name may not fit where a short one still does.
            continue;
        }
        left -= cost;
        opened.insert(g);
        chosen.insert((g, n));
    }
    let mut out = format!("\n{summary}\n");
    for (g, group) in block.groups.iter().enumerate() {
        let mut names = (0..group.names.len())
            .filter(|n| chosen.contains(&(g, *n)))
            .peekable();
        if names.peek().is_some() {
            out.push_str(&group.line(names));
        }
    }
    out.push_str(&closing_line(total - chosen.len(), budget));
    out.push('\n');
    out
}

/// `2,775 skills in 19 categories: devops 120, mlops 40, …`, the categories largest first,
/// as many as fit in `tokens`.
fn summary_line(block: &Block, total: usize, tokens: usize) -> String {
    let mut sizes: Vec<(&str, usize)> = Vec::new();
    for g in &block.groups {
        match sizes.iter_mut().find(|(c, _)| *c == g.category) {
            Some((_, n)) => *n += g.names.len(),
            None => sizes.push((&g.category, g.names.len())),
        }
    }
    sizes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let mut line = format!(
        "{} skills in {} categories:",
        thousands(total),
        thousands(sizes.len())
    );
    let mut listed = 0;
    for (category, n) in &sizes {
        let item = format!(" {} {},", shown(category, ", "), thousands(*n));
        // Room is kept for the `… and N more` that may follow.
        if estimate_tokens(&line) + estimate_tokens(&item) + 8 > tokens {
            break;
        }
        line.push_str(&item);
        listed += 1;
    }
    if listed == 0 {
        line.pop();
        return line;
    }
    line.pop();
    if listed < sizes.len() {
        line.push_str(&format!(" and {} more", thousands(sizes.len() - listed)));
    }
    line
}

/// What the listing leaves out, and how to reach it.
fn closing_line(not_listed: usize, budget: &Budget) -> String {
    let find = match &budget.search_tool {
        Some(tool) => format!("call {tool}(query) with what the task needs to find one, then "),
        None => String::new(),
    };
    let loader = match budget.loader.as_str() {
        "" => super::load::SKILL_VIEW,
        named => named,
    };
    format!(
        "{} more skills are not listed here: {find}load it with {loader}(name), using the \
         category/folder path shown for it when a name is ambiguous.",
        thousands(not_listed)
    )
}

/// Every (group, name) of `block`, most useful first: pinned, then by recorded activity,
/// then a round over the categories, largest first, one name of each per round.
fn useful_order(block: &Block, usage: &Usage, budget: &Budget) -> Vec<(usize, usize)> {
    let all: Vec<(usize, usize)> = block
        .groups
        .iter()
        .enumerate()
        .flat_map(|(g, group)| (0..group.names.len()).map(move |n| (g, n)))
        .collect();
    let name = |&(g, n): &(usize, usize)| block.groups[g].names[n].as_str();
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(all.len());
    let mut taken: FxHashSet<(usize, usize)> = FxHashSet::default();
    let mut take = |p: (usize, usize), out: &mut Vec<(usize, usize)>| {
        if taken.insert(p) {
            out.push(p);
        }
    };
    for pin in &budget.pinned {
        for p in all.iter().filter(|p| name(p) == pin) {
            take(*p, &mut out);
        }
    }
    for p in all.iter().filter(|p| usage.pinned.contains(name(p))) {
        take(*p, &mut out);
    }
    let mut active: Vec<(u64, (usize, usize))> = all
        .iter()
        .filter_map(|p| usage.activity.get(name(p)).map(|a| (*a, *p)))
        .collect();
    active.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for (_, p) in active {
        take(p, &mut out);
    }
    let mut groups: Vec<usize> = (0..block.groups.len()).collect();
    groups.sort_by(|a, b| {
        let len = |g: &usize| block.groups[*g].names.len();
        len(b).cmp(&len(a)).then(a.cmp(b))
    });
    let longest = groups.first().map_or(0, |g| block.groups[*g].names.len());
    for round in 0..longest {
        for &g in &groups {
            if round < block.groups[g].names.len() {
                take((g, round), &mut out);
            }
        }
    }
    out
}

/// `85519` as `85,519`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hermes::listing::Group;

    fn block(sizes: &[(&str, usize)]) -> Block {
        Block {
            groups: sizes
                .iter()
                .map(|(c, n)| Group {
                    category: (*c).to_owned(),
                    demoted: false,
                    names: (0..*n).map(|i| format!("{c}-skill-{i:05}")).collect(),
                    labels: Vec::new(),
                })
                .collect(),
            unexplained: 0,
        }
    }

    fn budget(tokens: usize) -> Budget {
        Budget {
            tokens,
            pinned: Vec::new(),
            search_tool: Some("skills_search".into()),
            loader: String::new(),
        }
    }

    #[test]
    fn the_block_holds_its_budget_at_any_size() {
        for skills in [10, 300, 3_000, 90_000] {
            let b = block(&[
                ("devops", skills / 2),
                ("data", skills / 3),
                ("writing", skills - skills / 2 - skills / 3),
            ]);
            for tokens in [500, 1_500, 4_000] {
                let text = budgeted(&b, &Usage::default(), &budget(tokens));
                assert!(
                    estimate_tokens(&text) <= tokens,
                    "{skills} {tokens}: {text}"
                );
                if estimate_tokens(&b.names_only()) > tokens {
                    assert!(text.contains("more skills are not listed here"), "{text}");
                    assert!(text.contains("skills_search(query)"), "{text}");
                    assert!(text.contains(&format!("{} skills in 3 categories", thousands(skills))));
                } else {
                    assert_eq!(text, b.names_only());
                }
            }
        }
    }

    #[test]
    fn budget_zero_is_the_names_only_block() {
        let b = block(&[("devops", 5_000)]);
        assert_eq!(budgeted(&b, &Usage::default(), &budget(0)), b.names_only());
    }

    #[test]
    fn pinned_then_used_then_every_category_comes_first() {
        let b = block(&[("big", 5_000), ("small", 3), ("tiny", 1)]);
        let usage = Usage::of(&serde_json::json!({
            "big-skill-04000": {"view_count": 9, "use_count": 1},
            "big-skill-03000": {"view_count": 2},
            "big-skill-02000": {"pinned": true},
            "unknown": {"view_count": 100},
            "odd": "not a record",
        }));
        let mut settings = budget(200);
        settings.pinned = vec!["big-skill-01000".into(), "absent".into()];
        let order = useful_order(&b, &usage, &settings);
        let names: Vec<&str> = order
            .iter()
            .take(7)
            .map(|&(g, n)| b.groups[g].names[n].as_str())
            .collect();
        assert_eq!(
            names,
            [
                "big-skill-01000",
                "big-skill-02000",
                "big-skill-04000",
                "big-skill-03000",
                "big-skill-00000",
                "small-skill-00000",
                "tiny-skill-00000"
            ]
        );
        let text = budgeted(&b, &usage, &settings);
        assert!(
            text.contains("big-skill-01000") && text.contains("tiny-skill-00000"),
            "{text}"
        );
    }

    #[test]
    fn categories_are_cut_to_a_third_of_the_budget() {
        let sizes: Vec<(String, usize)> = (0..400).map(|i| (format!("cat{i:03}"), 250)).collect();
        let refs: Vec<(&str, usize)> = sizes.iter().map(|(c, n)| (c.as_str(), *n)).collect();
        let text = budgeted(&block(&refs), &Usage::default(), &budget(1_500));
        let summary = text.lines().nth(1).unwrap();
        assert!(
            summary.starts_with("100,000 skills in 400 categories: "),
            "{summary}"
        );
        assert!(summary.contains(" more"), "{summary}");
        assert!(estimate_tokens(summary) <= 500, "{summary}");
        assert!(estimate_tokens(&text) <= 1_500);
    }

    #[test]
    fn the_same_reading_gives_the_same_bytes() {
        let b = block(&[("devops", 4_000), ("data", 900)]);
        let usage = Usage::of(&serde_json::json!({"data-skill-00007": {"use_count": 3}}));
        assert_eq!(
            budgeted(&b, &usage, &budget(1_500)),
            budgeted(&b.clone(), &usage.clone(), &budget(1_500))
        );
    }
}
