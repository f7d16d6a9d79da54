//! `skillidx watch` keeps the index in step with the skills of a running host: a skill
//! installed the way Hermes' hub installer does it (written into `skills/.hub/quarantine/`,
//! then one rename of its folder into `skills/<category>/`) is searchable within the
//! debounce delay plus one sync, and only the profile that changed is synced.

mod common;
use common::*;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

struct Watch {
    child: Child,
    lines: mpsc::Receiver<serde_json::Value>,
}

impl Watch {
    fn start(home: &Path) -> Watch {
        let mut child = bin()
            .args(["watch", "--json", "--debounce-ms", "200", "--home"])
            .arg(home)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                if let Ok(v) = serde_json::from_str(&line) {
                    let _ = tx.send(v);
                }
            }
        });
        let w = Watch { child, lines };
        loop {
            if w.next()["ready"] == true {
                return w;
            }
        }
    }

    fn next(&self) -> serde_json::Value {
        self.lines
            .recv_timeout(Duration::from_secs(20))
            .expect("the watch reported nothing within 20 s")
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Installs a skill as `hermes skills install` does: quarantine, then one rename.
fn hub_install(home: &Path, category: &str, name: &str, description: &str) {
    let q = home.join("skills/.hub/quarantine").join(name);
    std::fs::create_dir_all(&q).unwrap();
    std::fs::write(
        q.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\n# {name}\n"),
    )
    .unwrap();
    std::fs::create_dir_all(home.join("skills").join(category)).unwrap();
    std::fs::rename(&q, home.join("skills").join(category).join(name)).unwrap();
}

fn found(home: &Path, query: &str) -> Vec<String> {
    let out = bin()
        .args(["search", query, "--json", "--home"])
        .arg(home)
        .output()
        .unwrap();
    let hits: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap_or_default();
    hits.iter()
        .map(|h| h["id"].as_str().unwrap_or("").to_owned())
        .collect()
}

#[test]
fn a_hub_installed_skill_is_searchable_after_one_debounced_sync_of_its_profile_only() {
    let h = Home::new();
    h.skill("c/base", "base", "about the base skill");
    std::fs::create_dir_all(h.path().join("profiles/work/skills")).unwrap();
    let w = Watch::start(h.path());

    hub_install(
        h.path(),
        "research",
        "quokka-census",
        "count the zanzibar quokkas",
    );
    let r = w.next();
    assert_eq!(r["profile"], "default", "{r}");
    assert_eq!(r["added"], 1, "{r}");
    assert_eq!(found(h.path(), "zanzibar quokkas"), ["quokka-census"]);

    // A change in another profile syncs that profile alone.
    hub_install(
        &h.path().join("profiles/work"),
        "ops",
        "pager-rota",
        "who carries the pager",
    );
    let r = w.next();
    assert_eq!(r["profile"], "work", "{r}");
    assert_eq!(r["added"], 1, "{r}");
    assert!(
        w.lines.recv_timeout(Duration::from_millis(800)).is_err(),
        "a second sync for one change"
    );

    // A removal, and an in-place edit deep in a category.
    std::fs::remove_dir_all(h.path().join("skills/research/quokka-census")).unwrap();
    let r = w.next();
    assert_eq!(
        (r["profile"].as_str(), r["removed"].as_u64()),
        (Some("default"), Some(1))
    );
    h.skill("c/base", "base", "about the base skill, now with wombats");
    let r = w.next();
    assert_eq!(r["updated"], 1, "{r}");
    assert_eq!(found(h.path(), "wombats"), ["base"]);
}

#[test]
fn a_new_profile_is_watched_and_a_removed_one_dropped() {
    let h = Home::new();
    h.skill("c/base", "base", "about the base skill");
    let w = Watch::start(h.path());
    let work = h.path().join("profiles/late");
    std::fs::create_dir_all(work.join("skills")).unwrap();
    let r = w.next();
    assert_eq!(r["profile"], "late", "{r}");
    hub_install(&work, "ops", "night-shift", "who works the night shift");
    let r = w.next();
    assert_eq!(
        (r["profile"].as_str(), r["added"].as_u64()),
        (Some("late"), Some(1))
    );
    std::fs::remove_dir_all(&work).unwrap();
    let r = w.next();
    assert_eq!(r["dropped"], "late", "{r}");
}
