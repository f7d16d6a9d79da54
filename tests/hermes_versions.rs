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
