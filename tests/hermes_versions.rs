//! The offer rules of each supported Hermes release (docs/offer-rules.md, "By version"):
//! one home, synced as 0.19, 0.20 and 0.21 would list it, and a sync under another release
//! reading every file again.

mod common;
use common::*;
use skillidx::offer::Session;
use skillidx::sync::SyncOptions;
use skillidx::version::HermesVersion::{self, *};

fn offered_as(h: &Home, version: HermesVersion) -> Vec<(String, String)> {
    h.sync_with(&SyncOptions {
        hermes: Some(version),
        ..SyncOptions::default()
    });
    skillidx::Index::open(&h.db())
        .unwrap()
        .offered("default", &Session::default())
        .unwrap()
        .into_iter()
        .map(|o| (o.category, o.name))
        .collect()
}

fn home() -> Home {
    let h = Home::new();
    h.skill("tools/plain", "plain", "always there");
    h.skill(
        "tools/gone",
        "gone",
        "disabled through a list written as a string",
    );
    h.skill("ops/hermes-agent", "hermes-agent", "Hermes' own skill");
    h.write(
        "tools/no-name",
        "---\nname: ''\ndescription: an empty name\n---\n",
    );
    let made = h.path().join("made/general/created-skill");
    std::fs::create_dir_all(&made).unwrap();
    std::fs::write(
        made.join("SKILL.md"),
        "---\nname: created-skill\ndescription: written by skill_manage\n---\n",
    )
    .unwrap();
    h.config("skills:\n  disabled: \"['gone', 'hermes-agent']\"\n  create_dir: made\n");
    h
}

fn pair(c: &str, n: &str) -> (String, String) {
    (c.to_owned(), n.to_owned())
}

#[test]
fn each_release_lists_the_home_its_own_way() {
    let h = home();
    // 0.19: the string is one name (nothing disabled), the empty name is listed as it is,
    // create_dir is not read.
    assert_eq!(
        offered_as(&h, V0_19),
        [
            pair("ops", "hermes-agent"),
            pair("tools", ""),
            pair("tools", "gone"),
            pair("tools", "plain")
        ]
    );
    // 0.20: the string is a list; the empty name becomes the folder's.
    assert_eq!(
        offered_as(&h, V0_20),
        [pair("tools", "no-name"), pair("tools", "plain")]
    );
    // 0.21: hermes-agent cannot be disabled; create_dir is a skill root.
    assert_eq!(
        offered_as(&h, V0_21),
        [
            pair("general", "created-skill"),
            pair("ops", "hermes-agent"),
            pair("tools", "no-name"),
            pair("tools", "plain")
        ]
    );
}

#[test]
fn a_sync_under_another_release_reads_every_file_again() {
    let h = home();
    offered_as(&h, V0_19);
    let again = h.sync_with(&SyncOptions {
        hermes: Some(V0_19),
        ..SyncOptions::default()
    });
    assert_eq!((again.parsed, again.warnings.len()), (0, 0), "{again:?}");
    let other = h.sync_with(&SyncOptions {
        hermes: Some(V0_20),
        ..SyncOptions::default()
    });
    assert!(other.parsed >= 4, "{other:?}");
    let stats = skillidx::Index::open(&h.db())
        .unwrap()
        .stats("default")
        .unwrap();
    assert_eq!(stats.hermes_version.as_deref(), Some("0.20"));
    assert!(
        other
            .warnings
            .iter()
            .any(|w| w.reason.contains("another Hermes release (now 0.20)")),
        "{:?}",
        other.warnings
    );
}

/// A home with org mirrors (`skills/_org/<id>/…`): the active org's, a stale org's, and a
/// personal skill sharing a name with an org one.
fn org_home() -> Home {
    let h = Home::new();
    h.skill("cat2/orgskill", "orgskill", "personal copy");
    h.skill("_org/acme/tools/orgskill", "orgskill", "org thing");
    h.skill("_org/acme/tools/deploy", "deploy", "the org's deploy");
    h.skill("_org/old/tools/stale", "stale", "from an org left behind");
    h
}

fn set_active_org(h: &Home, id: Option<&str>) {
    let marker = h.path().join("skills/_org/.active_org");
    match id {
        Some(id) => std::fs::write(marker, format!("{id}\n")).unwrap(),
        None => std::fs::remove_file(marker).unwrap(),
    }
}

#[test]
fn org_mirrors_are_read_for_the_active_org_only_from_0_20_on() {
    let h = org_home();
    set_active_org(&h, Some("acme"));
    // 0.19: `_org` is a plain folder, every mirror a category.
    assert_eq!(
        offered_as(&h, V0_19),
        [
            pair("_org/acme/tools", "deploy"),
            pair("_org/acme/tools", "orgskill"),
            pair("_org/old/tools", "stale"),
            pair("cat2", "orgskill"),
        ]
    );
    // 0.20 and 0.21 (`iter_skill_index_files`, `_label_visible_entries`): only the active
    // org's mirror, under `org:<id>`; the personal skill of the same name is kept.
    let acme = [
        pair("cat2", "orgskill"),
        pair("org:acme", "deploy"),
        pair("org:acme", "orgskill"),
    ];
    assert_eq!(offered_as(&h, V0_20), acme);
    assert_eq!(offered_as(&h, V0_21), acme);

    // Another org becomes the active one: its mirror replaces the first.
    set_active_org(&h, Some("old"));
    assert_eq!(
        offered_as(&h, V0_21),
        [pair("cat2", "orgskill"), pair("org:old", "stale")]
    );
    // No marker: no org skill at all.
    set_active_org(&h, None);
    assert_eq!(offered_as(&h, V0_21), [pair("cat2", "orgskill")]);
    // An empty marker is none either (`read_active_org_id`: the text stripped).
    set_active_org(&h, Some("  "));
    assert_eq!(offered_as(&h, V0_21), [pair("cat2", "orgskill")]);
}

#[test]
fn an_org_skill_is_loaded_by_its_mirror_path_when_its_name_is_shared() {
    let h = org_home();
    set_active_org(&h, Some("acme"));
    h.sync_with(&SyncOptions {
        hermes: Some(V0_21),
        ..SyncOptions::default()
    });
    let mut ids: Vec<String> = skillidx::Index::open(&h.db())
        .unwrap()
        .offered("default", &Session::default())
        .unwrap()
        .into_iter()
        .map(|o| o.id)
        .collect();
    ids.sort();
    // `skill_view` refuses the shared bare name; the folder paths load each one.
    assert_eq!(ids, ["_org/acme/tools/orgskill", "cat2/orgskill", "deploy"]);
}

/// What the index offers for `platform` after a sync as `version`.
fn offered_on(h: &Home, version: HermesVersion, platform: Option<&str>) -> Vec<String> {
    h.sync_with(&SyncOptions {
        hermes: Some(version),
        ..SyncOptions::default()
    });
    let session = Session {
        platform: platform.map(str::to_owned),
        ..Session::default()
    };
    skillidx::Index::open(&h.db())
        .unwrap()
        .offered("default", &session)
        .unwrap()
        .into_iter()
        .map(|o| o.name)
        .collect()
}

/// Hermes 0.21.3 (NousResearch/hermes-agent at 00067189): `skill_utils.extract_skill_conditions`
/// reads `metadata.hermes.session_platforms`, and `prompt_builder._skill_should_show` hides a
/// skill when `[str(p).strip().lower() for p in (value or []) if str(p).strip()]` is not
/// empty, the session platform (`_current_session_platform_hint`: `HERMES_PLATFORM`, else
/// `HERMES_SESSION_PLATFORM`) is known, and `platform.strip().lower()` is not in it. 0.19.0
/// and 0.20.1.2 have neither (checked in their wheels).
#[test]
fn session_platforms_hide_a_skill_on_other_platforms_from_0_21_on() {
    let h = Home::new();
    h.skill("chat/plain", "plain", "everywhere");
    h.write(
        "chat/tg-only",
        "---\nname: tg-only\ndescription: d\nmetadata:\n  hermes:\n    session_platforms: [' Telegram ', Discord]\n---\n",
    );
    // A string is iterated per character: only one-letter platforms match.
    h.write(
        "chat/chars",
        "---\nname: chars\ndescription: d\nmetadata:\n  hermes:\n    session_platforms: telegram\n---\n",
    );
    // Nothing but blanks: no condition.
    h.write(
        "chat/blank",
        "---\nname: blank\ndescription: d\nmetadata:\n  hermes:\n    session_platforms: ['', '  ']\n---\n",
    );
    let all = ["blank", "chars", "plain", "tg-only"];
    // No platform known (the CLI, cron): fail open.
    assert_eq!(offered_on(&h, V0_21, None), all);
    assert_eq!(offered_on(&h, V0_21, Some("")), all);
    // Case and blanks do not matter.
    assert_eq!(
        offered_on(&h, V0_21, Some("TELEGRAM")),
        ["blank", "plain", "tg-only"]
    );
    assert_eq!(
        offered_on(&h, V0_21, Some("discord")),
        ["blank", "plain", "tg-only"]
    );
    assert_eq!(offered_on(&h, V0_21, Some("slack")), ["blank", "plain"]);
    assert_eq!(
        offered_on(&h, V0_21, Some("t")),
        ["blank", "chars", "plain"]
    );
    // 0.20 and 0.19 do not read the key.
    assert_eq!(offered_on(&h, V0_20, Some("slack")), all);
    assert_eq!(offered_on(&h, V0_19, Some("slack")), all);
}

#[test]
fn the_curators_backups_are_walked_before_0_21_only() {
    let h = Home::new();
    h.skill("tools/live", "live", "the skill in use");
    // 0.21's curator keeps old copies here (`EXCLUDED_SKILL_DIRS` gains `.curator_backups`).
    h.skill(
        ".curator_backups/tools/live-old",
        "live-old",
        "a backed-up copy",
    );
    let all = [
        pair(".curator_backups/tools", "live-old"),
        pair("tools", "live"),
    ];
    // Folders older than the racy window, so that later syncs walk their cached listings.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    for e in walkdir::WalkDir::new(h.path().join("skills")) {
        let e = e.unwrap();
        if e.file_type().is_dir() {
            let dir = std::fs::File::open(e.path()).unwrap();
            dir.set_modified(old).unwrap();
        }
    }
    assert_eq!(offered_as(&h, V0_19), all);
    assert_eq!(offered_as(&h, V0_21), [pair("tools", "live")]);
    // Syncs as 0.21 and 0.20 from the cached listings: out, and back in.
    assert_eq!(offered_as(&h, V0_21), [pair("tools", "live")]);
    assert_eq!(offered_as(&h, V0_20), all);
}

#[test]
fn a_query_for_another_release_than_the_index_follows_is_refused() {
    // `offered`, `list` and `search` answer with the offer rules of the last sync: asked
    // for another release, they say so instead of answering with the wrong rules.
    let h = home();
    let run = |args: &[&str]| {
        bin()
            .args(args)
            .arg("--home")
            .arg(h.path())
            .arg("--db")
            .arg(h.db())
            .output()
            .unwrap()
    };
    assert!(run(&["sync", "--hermes-version", "0.19.0"])
        .status
        .success());
    for command in [&["offered"][..], &["list"], &["search", "plain"]] {
        let asked = |version: &str| {
            let mut args = command.to_vec();
            args.extend(["--hermes-version", version]);
            run(&args)
        };
        let same = asked("0.19.0");
        assert!(same.status.success(), "{command:?}: {same:?}");
        let other = asked("0.21.3");
        assert_eq!(other.status.code(), Some(1), "{command:?}: {other:?}");
        let why = String::from_utf8_lossy(&other.stderr);
        assert!(
            why.contains("Hermes 0.19") && why.contains("--hermes-version 0.21"),
            "{command:?}: {why}"
        );
    }
    // A batch checks the profile each line names: `work` follows 0.21, `default` 0.19.
    let work = h.path().join("profiles/work/skills/tools/plain");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(
        work.join("SKILL.md"),
        "---\nname: plain\ndescription: d\n---\n",
    )
    .unwrap();
    let synced = run(&["sync", "-p", "work", "--hermes-version", "0.21.3"]);
    assert!(synced.status.success(), "{synced:?}");
    let mut batch = bin()
        .args(["search", "--batch", "--hermes-version", "0.19.0", "--home"])
        .arg(h.path())
        .arg("--db")
        .arg(h.db())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let lines = "{\"query\": \"plain\"}\n{\"query\": \"plain\", \"profile\": \"work\"}\n";
    use std::io::Write;
    let mut stdin = batch.stdin.take().unwrap();
    stdin.write_all(lines.as_bytes()).unwrap();
    drop(stdin);
    let out = batch.wait_with_output().unwrap();
    let answers: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(answers[0]["hits"].is_array(), "{answers:?}");
    let refused = answers[1]["error"].as_str().unwrap_or_default();
    assert!(refused.contains("profile work"), "{answers:?}");
    assert!(run(&["sync", "--hermes-version", "0.21.3"])
        .status
        .success());
    assert!(run(&["offered", "--hermes-version", "0.21.3"])
        .status
        .success());
}
