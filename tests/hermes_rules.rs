//! Hermes 0.19.0's offer rules, applied per session: each rule hides what Hermes hides; a
//! clash is decided after the session's filters (a local skill hidden in this session lets
//! the external one through); and a hidden skill is out of the results and out of N, df and
//! the average lengths, so a search equals one over an index built without it.
//! (`tests/python/test_hermes_parity.py` checks the same against Hermes' own code.)

mod common;
use common::*;
use skillidx::offer::{Environments, Session};
use skillidx::search::{Ranking, SearchOptions};
use std::collections::BTreeSet;

fn set(xs: &[&str]) -> Option<BTreeSet<String>> {
    Some(xs.iter().map(|s| s.to_string()).collect())
}

fn offered(h: &Home, s: &Session) -> Vec<(String, String)> {
    skillidx::Index::open(&h.db())
        .unwrap()
        .offered("default", s)
        .unwrap()
        .into_iter()
        .map(|o| (o.category, o.name))
        .collect()
}

fn names(h: &Home, s: &Session) -> Vec<String> {
    offered(h, s).into_iter().map(|(_, n)| n).collect()
}

/// A session with no environment, no platform and no tool information.
fn bare() -> Session {
    Session::default()
}

const HERMES: &str = "metadata:\n  hermes:\n";

fn fm(name: &str, extra: &str) -> String {
    format!("---\nname: {name}\ndescription: about {name} lamps\n{extra}---\nBody about lamps.\n")
}

#[test]
fn environments_are_decided_by_the_session() {
    let h = Home::new();
    h.write("e/k", &fm("k", "environments: [kanban]\n"));
    h.write("e/ds", &fm("ds", "environments: [docker, s6]\n"));
    h.write("e/mars", &fm("mars", "environments: [mars]\n"));
    h.write("e/never", &fm("never", "environments: ['']\n"));
    h.write("e/str", &fm("str", "environments: Docker\n"));
    h.sync();
    assert_eq!(names(&h, &bare()), ["mars"]);
    let s = Session {
        environments: Environments {
            docker: true,
            ..Default::default()
        },
        ..bare()
    };
    assert_eq!(names(&h, &s), ["ds", "mars", "str"]);
    let s = Session {
        environments: Environments::parse("kanban,s6").unwrap(),
        ..bare()
    };
    assert_eq!(names(&h, &s), ["ds", "k", "mars"]);
    // `['']` is never offered: it is not even in the postings.
    let list = skillidx::Index::open(&h.db())
        .unwrap()
        .list("default")
        .unwrap();
    let never = list.iter().find(|e| e.id == "never").unwrap();
    assert!(never.inactive.as_deref().unwrap().contains("environments"));
}

#[test]
fn tool_conditions_follow_hermes_including_none() {
    let h = Home::new();
    h.write(
        "t/rt",
        &fm("rt", &format!("{HERMES}    requires_tools: [terminal]\n")),
    );
    h.write(
        "t/rs",
        &fm("rs", &format!("{HERMES}    requires_toolsets: [web]\n")),
    );
    h.write(
        "t/ft",
        &fm(
            "ft",
            &format!("{HERMES}    fallback_for_tools: [browser]\n"),
        ),
    );
    h.write(
        "t/fs",
        &fm("fs", &format!("{HERMES}    fallback_for_toolsets: [web]\n")),
    );
    h.write(
        "t/str",
        &fm("str", &format!("{HERMES}    requires_tools: terminal\n")),
    );
    h.sync();
    // No tool information: nothing is hidden.
    assert_eq!(names(&h, &bare()), ["fs", "ft", "rs", "rt", "str"]);
    // Empty sets are information: every requirement fails.
    let s = Session {
        tools: set(&[]),
        toolsets: set(&[]),
        ..bare()
    };
    assert_eq!(names(&h, &s), ["fs", "ft"]);
    let s = Session {
        tools: set(&["terminal", "browser"]),
        toolsets: set(&["web"]),
        ..bare()
    };
    assert_eq!(names(&h, &s), ["rs", "rt"]);
    // One given, the other None: the None one is empty.
    let s = Session {
        tools: set(&["terminal"]),
        ..bare()
    };
    assert_eq!(names(&h, &s), ["fs", "ft", "rt"]);
    // A string condition is its characters: "t", "e", "r", ….
    let s = Session {
        tools: set(&["t", "e", "r", "m", "i", "n", "a", "l"]),
        ..bare()
    };
    assert!(names(&h, &s).contains(&"str".to_owned()));
}

#[test]
fn disabled_and_platform_disabled_on_two_platforms() {
    let h = Home::new();
    h.write("d/a", &fm("by-name", ""));
    h.write("d/folder-b", &fm("b", ""));
    h.write("d/tg", &fm("tg", ""));
    h.write("d/dc-folder", &fm("dc", ""));
    h.config(
        "skills:\n  disabled: [by-name]\n  platform_disabled:\n    telegram: [tg]\n    discord: [dc-folder, folder-b]\n",
    );
    h.sync();
    assert_eq!(names(&h, &bare()), ["b", "dc", "tg"]);
    let on = |p: &str| Session {
        platform: Some(p.into()),
        ..bare()
    };
    assert_eq!(names(&h, &on("telegram")), ["b", "dc"]);
    assert_eq!(names(&h, &on("discord")), ["tg"]);
    assert_eq!(names(&h, &on("cli")), ["b", "dc", "tg"]);
}

#[test]
fn clashes_are_decided_after_the_session_filters() {
    let h = Home::new();
    let ext = h.path().join("ext");
    let put = |root: &std::path::Path, rel: &str, text: &str| {
        let d = root.join(rel);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("SKILL.md"), text).unwrap();
    };
    // Same name in two local categories: both offered.
    h.write("one/twin", &fm("twin", ""));
    h.write("two/twin", &fm("twin", ""));
    // Same name twice in one category: listed once, the first by path that is shown.
    h.write(
        "same/a",
        &fm("same", &format!("{HERMES}    requires_tools: [x]\n")),
    );
    h.write("same/b", &fm("same", ""));
    // A local hidden by tools, by environment or on a platform lets the external through.
    h.write(
        "loc/hx",
        &fm("hx", &format!("{HERMES}    requires_tools: [browser]\n")),
    );
    put(&ext, "extcat/hx", &fm("hx", ""));
    h.write("loc/kx", &fm("kx", "environments: [kanban]\n"));
    put(&ext, "extcat/kx", &fm("kx", ""));
    h.write("loc/tgfolder", &fm("tg2", ""));
    put(&ext, "extcat/tg2", &fm("tg2", ""));
    // Always shadowed: decided by the sync, not in the postings.
    h.write("loc/plain", &fm("plain", ""));
    put(&ext, "extcat/plain", &fm("plain", ""));
    h.config("skills:\n  external_dirs: [ext]\n  platform_disabled:\n    telegram: [tgfolder]\n");
    h.sync();
    let pairs = |s: &Session| offered(&h, s);
    let has =
        |s: &Session, cat: &str, name: &str| pairs(s).contains(&(cat.to_owned(), name.to_owned()));
    let base = bare();
    assert!(has(&base, "one", "twin") && has(&base, "two", "twin"));
    assert_eq!(
        pairs(&base)
            .iter()
            .filter(|(c, n)| c == "same" && n == "same")
            .count(),
        1
    );
    // No tool info: locals shown, externals not; kanban off hides the local kx.
    assert!(has(&base, "loc", "hx") && !has(&base, "extcat", "hx"));
    assert!(!has(&base, "loc", "kx") && has(&base, "extcat", "kx"));
    assert!(has(&base, "loc", "tg2") && !has(&base, "extcat", "tg2"));
    assert!(has(&base, "loc", "plain") && !has(&base, "extcat", "plain"));
    let tools = Session {
        tools: set(&["terminal"]),
        toolsets: set(&[]),
        environments: Environments {
            kanban: true,
            ..Default::default()
        },
        platform: Some("telegram".into()),
        ..bare()
    };
    assert!(!has(&tools, "loc", "hx") && has(&tools, "extcat", "hx"));
    assert!(has(&tools, "loc", "kx") && !has(&tools, "extcat", "kx"));
    assert!(!has(&tools, "loc", "tg2") && has(&tools, "extcat", "tg2"));
    let list = skillidx::Index::open(&h.db())
        .unwrap()
        .list("default")
        .unwrap();
    let plain_ext = list
        .iter()
        .find(|e| e.path.contains("extcat/plain"))
        .unwrap();
    assert!(plain_ext.inactive.as_deref().unwrap().contains("shadowed"));
    // Names carried by two SKILL.md files are loaded by folder path, as skill_view needs.
    let ids: Vec<String> = skillidx::Index::open(&h.db())
        .unwrap()
        .offered("default", &base)
        .unwrap()
        .into_iter()
        .map(|o| o.id)
        .collect();
    assert!(ids.contains(&"one/twin".to_owned()) && ids.contains(&"loc/hx".to_owned()));
}

/// Every hit with its score, under both rankings.
fn all_scores(h: &Home, query: &str, session: &Session) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for ranking in [Ranking::Seed, Ranking::Default] {
        let opts = SearchOptions {
            k: 50,
            ranking,
            session: Some(session.clone()),
            ..Default::default()
        };
        out.push((format!("-- {ranking:?} --"), 0.0));
        out.extend(h.search_with(query, &opts));
    }
    out
}

#[test]
fn a_session_search_equals_an_index_built_without_the_hidden_skills() {
    let lamps = |h: &Home, with_hidden: bool, ext: &std::path::Path| {
        h.skill(
            "home/hue",
            "hue-lamps",
            "Turn smart lamps on and off with the Hue bridge",
        );
        h.skill(
            "home/scenes",
            "lamp-scenes",
            "Set lamp scenes and schedules",
        );
        h.skill(
            "home/plug",
            "smart-plug",
            "Switch a smart plug and its lamp",
        );
        std::fs::create_dir_all(ext.join("c/hx")).unwrap();
        // The external hx is offered only where the local one is hidden.
        std::fs::write(
            ext.join("c/hx/SKILL.md"),
            "---\nname: hx\ndescription: External lamp helper for bridges\n---\nLamps.\n",
        )
        .unwrap();
        if with_hidden {
            h.write("home/k", &fm("kanban-lamps", "environments: [kanban]\n"));
            h.write(
                "home/hx",
                "---\nname: hx\ndescription: Local lamp helper for smart bridges\nmetadata:\n  hermes:\n    requires_tools: [browser]\n---\nLamps lamps.\n",
            );
            h.write(
                "home/fb",
                &fm(
                    "fallback-lamps",
                    &format!("{HERMES}    fallback_for_toolsets: [web]\n"),
                ),
            );
        }
        h.config("skills:\n  external_dirs: [ext]\n");
    };
    let with = Home::new();
    lamps(&with, true, &with.path().join("ext"));
    with.sync();
    let without = Home::new();
    lamps(&without, false, &without.path().join("ext"));
    without.sync();
    let session = Session {
        tools: set(&["terminal"]),
        toolsets: set(&["web"]),
        ..bare()
    };
    let same_answers = |round: &str| {
        for q in [
            "smart lamps",
            "lamp helper bridge",
            "kanban lamps",
            "fallback",
        ] {
            let a = all_scores(&with, q, &session);
            let b = all_scores(&without, q, &session);
            // Ids may differ where a name is carried twice in one home only.
            let strip = |v: Vec<(String, f64)>| -> Vec<(String, f64)> {
                v.into_iter()
                    .map(|(id, s)| (id.rsplit('/').next().unwrap().to_owned(), s))
                    .collect()
            };
            assert_eq!(strip(a), strip(b), "query {q}, {round}");
        }
    };
    // The first round counts each term's documents in the session by walking its list;
    // the second reads the counts the first kept for this index state.
    same_answers("counted");
    same_answers("remembered");
    // A commit moves the state: counts kept for the last one must not be used.
    for h in [&with, &without] {
        h.skill(
            "home/more",
            "more-lamps",
            "Smart lamps, lamp helpers and kanban lamps for every bridge",
        );
        h.sync();
    }
    same_answers("after a commit");
    // In another session the hidden skills are there.
    let hits = all_scores(
        &with,
        "kanban lamps",
        &Session {
            environments: Environments::parse("kanban").unwrap(),
            ..bare()
        },
    );
    assert!(hits.iter().any(|(id, _)| id == "kanban-lamps"));
}

#[test]
fn kanban_is_detected_from_the_profile_toolsets() {
    if std::env::var_os("HERMES_KANBAN_TASK").is_some()
        || std::env::var_os("HERMES_KANBAN_BOARD").is_some()
    {
        return;
    }
    let h = Home::new();
    assert!(!Environments::detect(h.path()).kanban);
    h.config("toolsets: [hermes-cli, kanban]\n");
    assert!(Environments::detect(h.path()).kanban);
    h.config("toolsets: [hermes-cli]\nskills: {}\n");
    assert!(!Environments::detect(h.path()).kanban);
}

#[test]
fn frontmatter_whose_conditions_cannot_be_read_is_hidden_only_where_hermes_may_read_them() {
    let h = Home::new();
    // A syntax error PyYAML shares: Hermes falls back to `key: value` lines and sees no
    // condition, so the skill is offered everywhere, as by Hermes.
    h.write(
        "y/broken",
        "---\nname: broken\ntags: [\"open\nmetadata:\n  hermes:\n    requires_toolsets: [web]\n---\n",
    );
    // An integer PyYAML reads and serde_yaml cannot hold: Hermes sees the condition.
    h.write(
        "y/wide",
        &fm(
            "wide",
            &format!("build: 99999999999999999999\n{HERMES}    requires_toolsets: [web]\n"),
        ),
    );
    // A frontmatter that closes only after the first MiB: Hermes reads it whole.
    let long = format!(
        "---\nname: long\n{HERMES}    requires_toolsets: [web]\nnotes: |\n{}---\nbody\n",
        "  padding line of the frontmatter\n".repeat(40_000)
    );
    h.write("y/long", &long);
    h.sync();
    assert_eq!(names(&h, &bare()), ["broken", "long", "wide"]);
    let with_tools = Session {
        tools: set(&["terminal"]),
        toolsets: set(&["web"]),
        ..bare()
    };
    assert_eq!(names(&h, &with_tools), ["broken"]);
}
