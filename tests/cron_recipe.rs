//! The cron recipe in `examples/cron/skillidx.cron` works as written: its command, run by a
//! shell the way cron runs it, makes a skill installed the way Hermes' hub installer does
//! it searchable, in every profile, and logs nothing when all is well.

mod common;
use common::*;

/// The command of the recipe's one schedule line, with the five time fields removed.
fn recipe_command() -> String {
    let text = std::fs::read_to_string(repo().join("examples/cron/skillidx.cron")).unwrap();
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .expect("a schedule line");
    line.split_whitespace()
        .skip(5)
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn the_cron_line_reindexes_every_profile_after_a_hub_install() {
    let user = tempfile::tempdir().unwrap();
    let home = user.path().join(".hermes");
    for profile_home in [home.clone(), home.join("profiles/work")] {
        let q = profile_home.join("skills/.hub/quarantine/moth-survey");
        std::fs::create_dir_all(&q).unwrap();
        std::fs::write(
            q.join("SKILL.md"),
            "---\nname: moth-survey\ndescription: count the night moths\n---\n",
        )
        .unwrap();
        std::fs::create_dir_all(profile_home.join("skills/field")).unwrap();
        std::fs::rename(&q, profile_home.join("skills/field/moth-survey")).unwrap();
    }
    let bin_dir = std::path::Path::new(env!("CARGO_BIN_EXE_skillidx"))
        .parent()
        .unwrap()
        .to_owned();
    let path = format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for _ in 0..2 {
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(recipe_command())
            .env("HOME", user.path())
            .env("PATH", &path)
            .env_remove("HERMES_HOME")
            .output()
            .unwrap();
        assert!(out.status.success());
    }
    let log = std::fs::read_to_string(home.join("skillidx-sync.log")).unwrap_or_default();
    assert!(log.is_empty(), "{log}");
    for profile in ["default", "work"] {
        let out = bin()
            .args([
                "search",
                "night moths",
                "--json",
                "--profile",
                profile,
                "--home",
            ])
            .arg(&home)
            .output()
            .unwrap();
        let hits: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(hits[0]["id"], "moth-survey", "{profile}");
    }
}
