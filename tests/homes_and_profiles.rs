//! One home has one spelling, one index belongs to one home, and a profile that does not
//! exist is an error that says which ones do: through the `skillidx` command, as users
//! meet them.

mod common;
use common::*;
use redb::ReadableDatabase;
use std::path::Path;
use std::process::Output;

fn run(cwd: &Path, args: &[&str]) -> Output {
    bin().current_dir(cwd).args(args).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `cmd` followed by `tail` in `cwd`, checks that it fails as an error (exit 1), and
/// gives its stderr.
fn refused(cwd: &Path, cmd: &[&str], tail: &[&str]) -> String {
    let args: Vec<&str> = cmd.iter().chain(tail).copied().collect();
    let out = run(cwd, &args);
    assert_eq!(out.status.code(), Some(1), "{cmd:?}");
    stderr(&out)
}

fn home_with(names: &[&str]) -> Home {
    let h = Home::new();
    for n in names {
        h.skill(&format!("c/{n}"), n, &format!("about {n} things"));
    }
    h
}

#[test]
fn relative_and_absolute_spellings_of_a_home_are_one_home() {
    let h = home_with(&["alpha", "beta"]);
    let home = h.path().to_str().unwrap();
    let out = run(Path::new("/"), &["sync", "--json", "--home", home]);
    assert!(out.status.success(), "{}", stderr(&out));
    // The same home, spelt relative to its parent, with a trailing `/.`.
    let parent = h.path().parent().unwrap();
    let rel = format!("{}/.", h.path().file_name().unwrap().to_str().unwrap());
    let db = h.db();
    let out = run(
        parent,
        &[
            "sync",
            "--json",
            "--home",
            &rel,
            "--db",
            db.to_str().unwrap(),
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report[0]["committed"], false, "{report}");
    assert_eq!(report[0]["unchanged"], 2, "{report}");
    // Paths found from anywhere exist.
    let out = run(
        Path::new("/"),
        &["search", "alpha things", "--json", "--home", home],
    );
    let hits: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!hits.is_empty());
    for hit in hits {
        let path = hit["path"].as_str().unwrap();
        assert!(
            Path::new(path).is_absolute() && Path::new(path).is_file(),
            "{path}"
        );
    }
}

#[test]
fn a_home_that_does_not_exist_is_an_error_and_nothing_is_created() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no/such/home");
    let out = run(dir.path(), &["sync", "--home", missing.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(missing.to_str().unwrap()),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("no").exists());

    // A folder that is not a Hermes home is refused the same way.
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = run(dir.path(), &["sync", "--home", empty.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("not a Hermes home"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read_dir(&empty).unwrap().count(), 0);
}

#[test]
fn unknown_and_malformed_profiles_fail_and_name_the_profiles_that_exist() {
    let h = home_with(&["alpha"]);
    std::fs::create_dir_all(h.path().join("profiles/work/skills")).unwrap();
    let home = h.path().to_str().unwrap();
    assert!(run(h.path(), &["sync", "--all-profiles", "--home", home])
        .status
        .success());
    for cmd in [
        &["search", "alpha", "--profile", "nosuch"][..],
        &["stats", "--profile", "nosuch"],
        &["list", "--profile", "nosuch"],
        &["sync", "--profile", "nosuch"],
    ] {
        let err = refused(h.path(), cmd, &["--home", home]);
        assert!(
            err.contains("nosuch") && err.contains("default") && err.contains("work"),
            "{cmd:?}: {err}"
        );
    }
    let out = run(
        h.path(),
        &["search", "alpha", "--profile", "Bad!", "--home", home],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("[a-z0-9]"), "{}", stderr(&out));
}

#[test]
fn a_profile_that_exists_but_was_never_synced_says_so() {
    let h = home_with(&["alpha"]);
    std::fs::create_dir_all(h.path().join("profiles/work/skills")).unwrap();
    let home = h.path().to_str().unwrap();
    assert!(run(h.path(), &["sync", "--home", home]).status.success());
    let out = run(
        h.path(),
        &["search", "alpha", "--profile", "work", "--home", home],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("skillidx sync --profile work"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn two_homes_on_one_index_file_are_refused_naming_both() {
    let a = home_with(&["alpha"]);
    let b = home_with(&["beta"]);
    let shared = a.db();
    let db = shared.to_str().unwrap();
    let home_a = std::fs::canonicalize(a.path()).unwrap();
    let home_b = std::fs::canonicalize(b.path()).unwrap();
    assert!(run(
        a.path(),
        &["sync", "--home", home_a.to_str().unwrap(), "--db", db]
    )
    .status
    .success());
    for cmd in [&["sync"][..], &["search", "beta"], &["stats"]] {
        let err = refused(
            b.path(),
            cmd,
            &["--home", home_b.to_str().unwrap(), "--db", db],
        );
        assert!(
            err.contains(home_a.to_str().unwrap()) && err.contains(home_b.to_str().unwrap()),
            "{cmd:?}: {err}"
        );
    }
    // A's index is untouched and still answers.
    let out = run(
        a.path(),
        &[
            "search",
            "alpha",
            "--json",
            "--home",
            home_a.to_str().unwrap(),
            "--db",
            db,
        ],
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("alpha"));
}

#[test]
fn a_home_moved_with_its_index_is_refused_until_a_rebuild_which_keeps_the_old_index() {
    // A home restored or mounted elsewhere carries its index (`<home>/skillidx.redb`), whose
    // claim and paths name the old place.
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old-home");
    let h = home_with(&["alpha"]);
    copy_tree(h.path(), &old);
    let out = run(dir.path(), &["sync", "--home", old.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let new = dir.path().join("new-home");
    std::fs::rename(&old, &new).unwrap();
    let old = std::fs::canonicalize(dir.path()).unwrap().join("old-home");
    let new = std::fs::canonicalize(&new).unwrap();
    let home = new.to_str().unwrap();
    let db = new.join("skillidx.redb");

    for cmd in [&["sync"][..], &["search", "alpha"], &["stats"]] {
        let err = refused(dir.path(), cmd, &["--home", home]);
        assert!(
            err.contains(old.to_str().unwrap()) && err.contains(home) && err.contains("--rebuild"),
            "{cmd:?}: {err}"
        );
    }

    let out = run(dir.path(), &["sync", "--rebuild", "--home", home]);
    assert!(out.status.success(), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("kept it as"), "{err}");
    let asides = other_home_asides(&new);
    assert_eq!(asides.len(), 1, "{asides:?}");
    // The old index is kept as it was: its claim and its skill under the old path.
    let kept = skillidx::Index::open(&asides[0]).unwrap();
    assert_eq!(kept.store().root_home().unwrap(), Some(old.clone()));
    let listed = kept.list("default").unwrap();
    assert_eq!(
        Path::new(&listed[0].path),
        old.join("skills/c/alpha/SKILL.md")
    );
    // The rebuilt one belongs to the new place and answers from it.
    let fresh = skillidx::Index::open(&db).unwrap();
    assert_eq!(fresh.store().root_home().unwrap(), Some(new.clone()));
    let out = run(
        dir.path(),
        &["search", "alpha things", "--json", "--home", home],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let hits: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(hits[0]["name"], "alpha");
    assert_eq!(
        Path::new(hits[0]["path"].as_str().unwrap()),
        new.join("skills/c/alpha/SKILL.md")
    );
}

#[test]
fn sync_all_profiles_drops_the_tables_of_a_removed_profile() {
    let h = home_with(&["alpha"]);
    let work = h.path().join("profiles/work/skills/c/omega");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(
        work.join("SKILL.md"),
        "---\nname: omega\ndescription: about omega\n---\n",
    )
    .unwrap();
    let home = h.path().to_str().unwrap();
    assert!(run(h.path(), &["sync", "--all-profiles", "--home", home])
        .status
        .success());
    let tables = || -> Vec<String> {
        let db = redb::Database::builder()
            .set_concurrency_mode(redb::ConcurrencyMode::MultiWriter)
            .open_read_only(h.db())
            .unwrap();
        let txn = db.begin_read().unwrap();
        txn.list_tables()
            .unwrap()
            .map(|t| redb::TableHandle::name(&t).to_owned())
            .collect()
    };
    assert!(tables().iter().any(|t| t.starts_with("profile.work.")));
    std::fs::remove_dir_all(h.path().join("profiles/work")).unwrap();
    let out = run(h.path(), &["sync", "--all-profiles", "--home", home]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stderr(&out).contains("profile work"), "{}", stderr(&out));
    assert!(
        !tables().iter().any(|t| t.starts_with("profile.work.")),
        "{:?}",
        tables()
    );
    let out = run(h.path(), &["stats", "--json", "--home", home]);
    let stats: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats.len(), 1);
    assert_eq!(stats[0]["profile"], "default");
}
