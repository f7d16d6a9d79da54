//! Disabled, platform-hidden, other-OS and shadowed skills never appear, and do not count in
//! N, df or the average length: results equal those of an index built without them.

mod common;
use common::*;
use skillidx::search::{Ranking, SearchOptions};
use skillidx::sync::SyncOptions;

fn corpus(h: &Home) {
    h.skill(
        "media/hue",
        "control-hue",
        "Turn smart lights on and off with the Hue bridge",
    );
    h.skill(
        "media/lights",
        "light-scenes",
        "Set light scenes and schedules for smart lights",
    );
    h.skill(
        "media/video",
        "download-video",
        "Download a video from a site with yt-dlp",
    );
    h.skill(
        "dev/git",
        "git-helper",
        "Commit, rebase and resolve conflicts in git",
    );
    h.skill(
        "dev/lights-debug",
        "lights-debug",
        "Debug smart home lights that do not respond",
    );
}

/// Every hit with its score, under both rankings (the seed ranking's first, then a marker,
/// then the default ranking's), so that equalities hold for both.
fn all_scores(h: &Home, query: &str, platform: Option<&str>) -> Vec<(String, f64)> {
    let mut out = Vec::new();
    for ranking in [Ranking::Seed, Ranking::Default] {
        let opts = SearchOptions {
            k: 50,
            platform: platform.map(str::to_owned),
            ranking,
            ..Default::default()
        };
        if ranking == Ranking::Default {
            out.push(("-- default ranking --".to_owned(), 0.0));
        }
        out.extend(h.search_with(query, &opts));
    }
    out
}

#[test]
fn platform_disabled_equals_an_index_without_the_skill() {
    let with = Home::new();
    corpus(&with);
    with.config("skills:\n  platform_disabled:\n    telegram: [control-hue]\n");
    with.sync();
    let without = Home::new();
    corpus(&without);
    std::fs::remove_dir_all(without.path().join("skills/media/hue")).unwrap();
    without.sync();
    for q in [
        "smart lights",
        "turn on the lights",
        "video",
        "git conflicts",
    ] {
        assert_eq!(
            all_scores(&with, q, Some("telegram")),
            all_scores(&without, q, None),
            "query {q}"
        );
    }
    // On other platforms the skill is there.
    assert_eq!(
        all_scores(&with, "hue bridge", Some("cli"))[0].0,
        "control-hue"
    );
    assert_eq!(all_scores(&with, "hue bridge", None)[0].0, "control-hue");
}

#[test]
fn disabled_by_name_or_folder_equals_an_index_without_them() {
    let with = Home::new();
    corpus(&with);
    // One by frontmatter name, one by folder name.
    with.config("skills:\n  disabled: [download-video, hue]\n");
    with.sync();
    let without = Home::new();
    corpus(&without);
    std::fs::remove_dir_all(without.path().join("skills/media/hue")).unwrap();
    std::fs::remove_dir_all(without.path().join("skills/media/video")).unwrap();
    without.sync();
    for q in ["smart lights", "download a video", "git"] {
        assert_eq!(
            all_scores(&with, q, None),
            all_scores(&without, q, None),
            "query {q}"
        );
    }
    // Re-enabling takes effect at the next sync, with no file changed: the skills go back
    // into the postings from their stored forward index, with the statistics (field
    // lengths included) a fresh build gives them.
    with.config("skills:\n  disabled: []\n");
    let r = with.sync();
    assert!(r.committed);
    assert_eq!(all_scores(&with, "yt-dlp", None)[0].0, "download-video");
    let fresh = Home::new();
    corpus(&fresh);
    fresh.sync();
    for q in [
        "smart lights",
        "download a video",
        "yt-dlp",
        "git",
        "hue bridge",
    ] {
        assert_eq!(
            all_scores(&with, q, None),
            all_scores(&fresh, q, None),
            "query {q}"
        );
    }
}

/// A config.yaml that PyYAML reads but skillidx cannot (an integer wider than 64 bits)
/// may disable skills Hermes hides: every skill is treated as disabled until it parses
/// (fourth hostile review), and the sync says why; once it parses, they come back.
#[test]
fn an_unreadable_config_disables_every_skill_until_it_parses() {
    let h = Home::new();
    corpus(&h);
    h.config("build: 99999999999999999999\nskills:\n  disabled: [hue]\n");
    let r = h.sync();
    assert!(
        r.warnings
            .iter()
            .any(|w| w.reason.contains("every skill is treated as disabled")),
        "{r:?}"
    );
    assert!(h.search("git").is_empty());
    h.config("skills:\n  disabled: [hue]\n");
    assert!(h.sync().committed);
    assert!(!h.search("git").is_empty());
}

#[test]
fn skills_for_another_os_are_not_offered() {
    let h = Home::new();
    corpus(&h);
    h.write("apple/notes", "---\nname: apple-notes\ndescription: Manage Apple Notes smart lights\nplatforms: [macos]\n---\n");
    let r = h.sync_with(&SyncOptions {
        os: Some("linux".into()),
        ..Default::default()
    });
    assert_eq!((r.active, r.inactive), (5, 1));
    let linux = all_scores(&h, "smart lights", None);
    assert!(linux.iter().all(|(id, _)| id != "apple-notes"));
    let r = h.sync_with(&SyncOptions {
        os: Some("macos".into()),
        ..Default::default()
    });
    assert!(
        r.committed,
        "a change of OS re-decides which skills are offered"
    );
    assert!(all_scores(&h, "apple notes", None)
        .iter()
        .any(|(id, _)| id == "apple-notes"));
}

#[test]
fn local_skills_shadow_external_ones_with_the_same_name() {
    let h = Home::new();
    h.skill("dev/git", "git-helper", "Local git helper");
    let ext = h.path().join("ext/dev/git2");
    std::fs::create_dir_all(&ext).unwrap();
    std::fs::write(
        ext.join("SKILL.md"),
        "---\nname: git-helper\ndescription: External git helper\n---\n",
    )
    .unwrap();
    let ext2 = h.path().join("ext/dev/other");
    std::fs::create_dir_all(&ext2).unwrap();
    std::fs::write(
        ext2.join("SKILL.md"),
        "---\nname: other-tool\ndescription: External other git tool\n---\n",
    )
    .unwrap();
    h.config("skills:\n  external_dirs: [ext]\n");
    let r = h.sync();
    assert_eq!((r.active, r.inactive), (2, 1));
    let hits = h.search_with(
        "git helper",
        &SearchOptions {
            k: 10,
            ..Default::default()
        },
    );
    // Two SKILL.md files carry the name, so `skill_view("git-helper")` would refuse it: the
    // offered one is loaded by its folder path.
    assert_eq!(hits.iter().filter(|(id, _)| id == "dev/git").count(), 1);
    assert!(!hits.iter().any(|(id, _)| id == "git-helper"));
    let index = skillidx::Index::open(&h.db()).unwrap();
    let list = index.list("default").unwrap();
    let shadowed = list.iter().find(|s| s.path.contains("git2")).unwrap();
    assert!(shadowed.inactive.as_deref().unwrap().contains("shadowed"));
    // Removing the local skill lets the external one take over.
    std::fs::remove_dir_all(h.path().join("skills/dev/git")).unwrap();
    h.sync();
    let list = index.list("default").unwrap();
    assert!(list
        .iter()
        .find(|s| s.path.contains("git2"))
        .unwrap()
        .inactive
        .is_none());
}

#[test]
fn plugin_skills_are_namespaced_and_offered_only_when_asked() {
    let h = Home::new();
    let dir = h.path().join("plugins/kanban/skills/board");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        "---\nname: kanban-board\ndescription: Move cards on a kanban board\n---\n",
    )
    .unwrap();
    h.sync();
    // Hermes 0.19.0 never lists plugin skills in <available_skills>.
    assert!(h.search("kanban cards").is_empty());
    let hits = h.search_with(
        "kanban cards",
        &SearchOptions {
            session: Some(skillidx::offer::Session {
                plugins: true,
                ..Default::default()
            }),
            ..Default::default()
        },
    );
    let ids: Vec<&str> = hits.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids, ["kanban:kanban-board"]);
}

#[test]
fn profiles_are_kept_apart() {
    let h = Home::new();
    h.skill(
        "dev/git",
        "git-helper",
        "git helper for the default profile",
    );
    let work = h.path().join("profiles/work/skills/pm/jira");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(
        work.join("SKILL.md"),
        "---\nname: jira-issues\ndescription: Search jira issues\n---\n",
    )
    .unwrap();
    let out = bin()
        .args(["sync", "--all-profiles", "--json", "--home"])
        .arg(h.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let index = skillidx::Index::open(&h.db()).unwrap();
    let opts = SearchOptions::default();
    assert!(index.search("default", "jira", &opts).unwrap().is_empty());
    assert_eq!(
        index.search("work", "jira", &opts).unwrap()[0].id,
        "jira-issues"
    );
    assert!(index
        .search("work", "git helper", &opts)
        .unwrap()
        .is_empty());
    let mut profiles = index.profiles().unwrap();
    profiles.sort();
    assert_eq!(profiles, ["default", "work"]);
}

/// A query process keeps its index open while a sync changes what a platform hides: its
/// next answer follows the new rules (the decoded rules are shared between queries only
/// while their stored bytes stay the same).
#[test]
fn an_open_index_answers_with_the_rules_of_the_last_sync() {
    let h = Home::new();
    corpus(&h);
    h.config("skills:\n  platform_disabled:\n    telegram: [control-hue]\n");
    h.sync();
    let index = skillidx::Index::open(&h.db()).unwrap();
    let on_telegram = || {
        let opts = SearchOptions {
            k: 50,
            platform: Some("telegram".to_owned()),
            ..Default::default()
        };
        let hits = index.search("default", "smart lights", &opts).unwrap();
        hits.into_iter().map(|hit| hit.id).collect::<Vec<_>>()
    };
    let before = on_telegram();
    assert!(!before.contains(&"control-hue".to_owned()), "{before:?}");
    assert!(before.contains(&"light-scenes".to_owned()), "{before:?}");
    assert_eq!(on_telegram(), before);
    h.config("skills:\n  platform_disabled:\n    telegram: [light-scenes]\n");
    h.sync();
    let after = on_telegram();
    assert!(after.contains(&"control-hue".to_owned()), "{after:?}");
    assert!(!after.contains(&"light-scenes".to_owned()), "{after:?}");
}
