//! Forced interleavings of real processes on one index. Each test stops one `skillidx`
//! process at a fail point (`SKILLIDX_FAILPOINTS=<point>=pause(DIR)`, see
//! `src/failpoint.rs`), runs another process to completion in that window, lets the first
//! go on, and checks that the index ends exactly as a clean build of the files on disk:
//! no duplicate or ghost document, no stale answer, nothing lost. Racing processes
//! (tests/races.rs) finds some bugs; these prove the protocol for one order of events each.
//!
//! Needs the `failpoints` feature (the README's test command turns it on).
#![cfg(feature = "failpoints")]

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A process stopped at a fail point until [`Paused::go`].
struct Paused {
    dir: tempfile::TempDir,
    point: &'static str,
    child: Child,
}

impl Paused {
    /// Starts `cmd` with `point` set to pause, and waits until it is there.
    fn start(mut cmd: Command, point: &'static str) -> Paused {
        let dir = tempfile::tempdir().unwrap();
        cmd.env(
            "SKILLIDX_FAILPOINTS",
            format!("{point}=pause({})", dir.path().display()),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let reached = dir.path().join(format!("{point}.reached"));
        let until = Instant::now() + Duration::from_secs(60);
        while !reached.exists() {
            if let Ok(Some(status)) = child.try_wait() {
                let out = child.wait_with_output().unwrap();
                panic!(
                    "exited ({status}) before reaching {point}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            assert!(Instant::now() < until, "never reached {point}");
            std::thread::sleep(Duration::from_millis(5));
        }
        Paused { dir, point, child }
    }

    /// Lets it go on and waits for it.
    fn go(self) -> Output {
        std::fs::write(self.dir.path().join(format!("{}.go", self.point)), "").unwrap();
        self.child.wait_with_output().unwrap()
    }
}

fn sync(home: &Path) -> Command {
    let mut c = bin();
    c.args(["sync", "--json", "--home"]).arg(home);
    c
}

fn ok(out: Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v[0].clone()
}

fn search(home: &Path, query: &str) -> Vec<(String, String)> {
    let out = bin()
        .args(["search", query, "--json", "-k", "50", "--home"])
        .arg(home)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hits: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    hits.iter()
        .map(|h| {
            (
                h["id"].as_str().unwrap().to_owned(),
                h["description"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn assert_clean(h: &Home) {
    let scratch = tempfile::tempdir().unwrap();
    assert_eq!(
        full_digest(&h.db(), "default"),
        clean_digest(h.path(), &scratch.path().join("clean.redb")),
        "the index differs from a clean build of the files on disk"
    );
}

fn home_with_skills() -> Home {
    let h = Home::new();
    for i in 0..12 {
        h.skill(
            &format!("c/s{i}"),
            &format!("s{i}"),
            &format!("skill number {i} about topic{i}"),
        );
    }
    ok(sync(h.path()).output().unwrap());
    h
}

#[test]
fn a_skill_added_and_indexed_by_another_sync_after_the_base_read_is_not_indexed_twice() {
    let h = home_with_skills();
    let a = Paused::start(sync(h.path()), "sync-after-base");
    h.skill("c/x", "xenolith", "about the zanzibar quokka");
    ok(sync(h.path()).output().unwrap());
    let report = ok(a.go());
    assert_eq!(report["replanned"], true, "{report}");
    assert_eq!(report["added"], 0, "{report}");
    assert_eq!(search(h.path(), "zanzibar quokka").len(), 1);
    assert_clean(&h);
    // No ghost: an edit shows the new text, a delete removes it.
    h.skill("c/x", "xenolith", "about the zanzibar quokka, edited");
    ok(sync(h.path()).output().unwrap());
    assert_eq!(
        search(h.path(), "zanzibar quokka"),
        vec![(
            "xenolith".to_owned(),
            "about the zanzibar quokka, edited".to_owned()
        )]
    );
    std::fs::remove_dir_all(h.path().join("skills/c/x")).unwrap();
    ok(sync(h.path()).output().unwrap());
    assert!(search(h.path(), "zanzibar quokka").is_empty());
    assert_clean(&h);
}

#[test]
fn a_sync_refuses_a_file_brought_to_a_newer_schema_while_it_scanned() {
    // A opened the file at today's schema and stops before its write lock; meanwhile a newer
    // build migrates it. A must not write today's layout into the newer file. (The command
    // opens its writer there, which checks the schema; a handle held open for writing is
    // checked inside the write transaction: `damaged_index.rs`.)
    let h = home_with_skills();
    h.skill("c/s3", "s3", "an edit about the wombat");
    let a = Paused::start(sync(h.path()), "sync-before-write");
    let newer = skillidx::store::SCHEMA_VERSION + 1;
    set_schema_version(&h.db(), newer);
    // The profile's statistics and the version, read as any build could read them.
    let committed = || -> (Vec<u8>, Vec<u8>) {
        use redb::ReadableDatabase;
        let db = redb::Builder::new()
            .set_concurrency_mode(redb::ConcurrencyMode::MultiWriter)
            .open_read_only(h.db())
            .unwrap();
        let txn = db.begin_read().unwrap();
        let t = skillidx::store::ProfileTables::new("default");
        let state = txn.open_table(t.state()).unwrap();
        let meta = txn
            .open_table(redb::TableDefinition::<&str, &[u8]>::new("skillidx.meta"))
            .unwrap();
        let stats = state.get("stats").unwrap().unwrap().value().to_vec();
        let version = meta
            .get("schema_version")
            .unwrap()
            .unwrap()
            .value()
            .to_vec();
        (stats, version)
    };
    let before = committed();
    let out = a.go();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("schema version {newer}")),
        "{stderr}"
    );
    assert_eq!(committed(), before, "nothing was committed");
    assert_eq!(before.1, newer.to_le_bytes());
}

#[test]
fn an_older_look_never_overwrites_a_newer_commit() {
    let h = home_with_skills();
    // A reads s3 as it is now, then stops before taking the write lock.
    h.skill("c/s3", "s3", "first edit about the wombat");
    let a = Paused::start(sync(h.path()), "sync-before-write");
    // s3 changes again and B commits the newer text.
    h.skill("c/s3", "s3", "second edit about the wombat");
    ok(sync(h.path()).output().unwrap());
    let report = ok(a.go());
    assert_eq!(report["replanned"], true, "{report}");
    // A's older look must not win: the newest text is what is found, with no further sync.
    assert_eq!(
        search(h.path(), "wombat"),
        vec![("s3".to_owned(), "second edit about the wombat".to_owned())]
    );
    assert_clean(&h);
}

#[test]
fn a_configuration_changed_while_a_sync_waits_is_not_undone() {
    let h = home_with_skills();
    // A has a change to write (s3), reads config.yaml as it is, and stops before the lock.
    h.skill("c/s3", "s3", "first edit about the wombat");
    let a = Paused::start(sync(h.path()), "sync-before-write");
    // s5 is disabled, and B commits that.
    h.config("skills:\n  disabled: [s5]\n");
    ok(sync(h.path()).output().unwrap());
    ok(a.go());
    // A's plan was made on the older config.yaml: it must not offer s5 again.
    assert!(search(h.path(), "topic5").is_empty());
    assert_clean(&h);
}

#[test]
fn a_skill_deleted_while_a_sync_waits_is_not_brought_back() {
    let h = home_with_skills();
    h.skill("c/s4", "s4", "an edit about the axolotl");
    let a = Paused::start(sync(h.path()), "sync-before-write");
    std::fs::remove_dir_all(h.path().join("skills/c/s4")).unwrap();
    ok(sync(h.path()).output().unwrap());
    ok(a.go());
    assert!(search(h.path(), "axolotl").is_empty());
    assert_clean(&h);
}

#[test]
fn a_rebuild_committed_while_a_sync_waits_is_planned_against() {
    let h = home_with_skills();
    h.skill("c/s5", "s5", "an edit about the pangolin");
    h.skill("c/new", "newcomer", "about the okapi");
    let a = Paused::start(sync(h.path()), "sync-before-write");
    let mut rebuild = sync(h.path());
    rebuild.arg("--rebuild");
    ok(rebuild.output().unwrap());
    let report = ok(a.go());
    assert_eq!(report["replanned"], true, "{report}");
    assert_eq!(search(h.path(), "okapi").len(), 1);
    assert_eq!(search(h.path(), "pangolin").len(), 1);
    assert_clean(&h);
}

#[test]
fn a_search_holding_its_read_transaction_neither_waits_for_nor_blocks_a_sync() {
    let h = home_with_skills();
    let mut cmd = bin();
    cmd.args(["search", "topic7", "--json", "--home"])
        .arg(h.path());
    let reader = Paused::start(cmd, "search-in-read");
    // The reader holds a snapshot; a sync changes s7 and commits without waiting for it.
    h.skill("c/s7", "s7", "skill number 7 about topic7, rewritten");
    let started = Instant::now();
    let report = ok(sync(h.path()).output().unwrap());
    assert_eq!(report["committed"], true);
    assert!(started.elapsed() < Duration::from_secs(20));
    // The reader answers from the snapshot it began with.
    let out = reader.go();
    assert!(out.status.success());
    let hits: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(hits[0]["description"], "skill number 7 about topic7");
    assert_eq!(
        search(h.path(), "topic7")[0].1,
        "skill number 7 about topic7, rewritten"
    );
}

#[test]
fn lock_wait_ms_counts_the_wait_for_a_sync_holding_the_write_transaction() {
    let h = home_with_skills();
    h.skill("c/s1", "s1", "changed so that A writes");
    let a = Paused::start(sync(h.path()), "sync-in-write");
    h.skill("c/s2", "s2", "changed so that B writes");
    let b = sync(h.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let held = Duration::from_millis(1500);
    std::thread::sleep(held);
    let report_a = ok(a.go());
    let report_b = ok(b.wait_with_output().unwrap());
    let waited = report_b["lock_wait_ms"].as_f64().unwrap();
    assert!(
        waited >= held.as_secs_f64() * 1e3 - 100.0,
        "B waited {waited} ms behind a write transaction held {held:?}: {report_b}"
    );
    assert!(report_a["lock_wait_ms"].as_f64().unwrap() < 1000.0);
    assert_clean(&h);
}

#[test]
fn a_panic_in_the_parser_is_an_internal_error_on_that_file_and_the_sync_goes_on() {
    let h = Home::new();
    // Enough files that rayon's worker threads parse some of them, not only the caller.
    for i in 0..40 {
        h.skill(&format!("c/a{i}"), &format!("a{i}"), "about apples");
    }
    let out = sync(h.path())
        .env("SKILLIDX_FAILPOINTS", "parse=panic")
        .output()
        .unwrap();
    // Reported once, in the file's skip reason: not also as a raw panic on stderr.
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!err.contains("panicked at"), "{err}");
    let report = ok(out);
    let reason = report["skipped"][0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("internal error") && reason.contains("please report"),
        "{reason}"
    );
    assert!(!reason.contains("damaged"), "{reason}");
}

#[test]
fn a_panic_outside_the_parser_is_reported_as_an_internal_error_not_damage() {
    let h = home_with_skills();
    let before = full_digest(&h.db(), "default");
    h.skill("c/s0", "s0", "an edit that will not be committed");
    let out = sync(h.path())
        .env("SKILLIDX_FAILPOINTS", "sync-before-commit=panic")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("internal error") && err.contains("please report"),
        "{err}"
    );
    assert!(
        !err.contains("damaged") && !err.contains("--rebuild"),
        "{err}"
    );
    assert!(!err.contains("panicked at"), "{err}");
    assert_eq!(full_digest(&h.db(), "default"), before);
}

fn stats(db: &Path) -> Command {
    let mut c = bin();
    c.args(["stats", "--json", "--home"])
        .arg(repo().join("examples/hermes-home"))
        .arg("--db")
        .arg(db);
    c
}

#[test]
fn two_processes_opening_an_old_file_migrate_it_once() {
    // From the first schema (every step) and from the last (one step). The step to 7 run
    // twice would leave the same digest; for it, this shows that the paused process neither
    // fails nor undoes the other's work.
    for version in [1, 6] {
        // Migrated once, alone.
        let alone = tempfile::tempdir().unwrap();
        let once = fixture_copy(version, alone.path());
        ok(stats(&once).output().unwrap());

        // A reads the version and stops before its write lock; B migrates the file through
        // every step; A then finds nothing left to migrate.
        let raced = tempfile::tempdir().unwrap();
        let db = fixture_copy(version, raced.path());
        let a = Paused::start(stats(&db), "migrate-before-write");
        let b = stats(&db).output().unwrap();
        assert!(b.status.success(), "{}", String::from_utf8_lossy(&b.stderr));
        let a = a.go();
        assert!(a.status.success(), "{}", String::from_utf8_lossy(&a.stderr));
        for profile in ["default", "work"] {
            assert_eq!(
                full_digest(&db, profile),
                full_digest(&once, profile),
                "schema {version}, {profile}"
            );
        }
    }
}

#[test]
fn old_files_opened_by_several_processes_at_once_end_as_one_migration() {
    for version in [1, 2, 6] {
        let alone = tempfile::tempdir().unwrap();
        let once = fixture_copy(version, alone.path());
        ok(stats(&once).output().unwrap());
        let raced = tempfile::tempdir().unwrap();
        let db = fixture_copy(version, raced.path());
        let children: Vec<Child> = (0..4)
            .map(|_| {
                stats(&db)
                    .stdout(Stdio::null())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for c in children {
            let out = c.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "schema {version}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert_eq!(
            full_digest(&db, "default"),
            full_digest(&once, "default"),
            "schema {version}"
        );
    }
}

#[test]
fn two_rebuilds_of_a_moved_home_keep_its_old_index() {
    // The home moves with its index inside it: the file names the old place.
    let old = home_with_skills();
    let h = Home::new();
    std::fs::remove_dir(h.path().join("skills")).unwrap();
    std::fs::rename(old.path().join("skills"), h.path().join("skills")).unwrap();
    std::fs::rename(old.db(), h.db()).unwrap();
    // A finds another home's index and stops before moving it aside; B moves it aside and
    // rebuilds; A then moves B's index aside in turn and rebuilds.
    let mut a = sync(h.path());
    a.arg("--rebuild");
    let a = Paused::start(a, "rebuild-before-rename");
    let mut b = sync(h.path());
    b.arg("--rebuild");
    ok(b.output().unwrap());
    ok(a.go());
    // Neither rename dropped the old home's index.
    let old_root = std::fs::canonicalize(old.path()).unwrap();
    let kept = other_home_asides(h.path());
    assert!(
        kept.iter().any(|p| {
            let index = skillidx::Index::open(p).unwrap();
            index.store().root_home().unwrap() == Some(old_root.clone())
        }),
        "{kept:?}"
    );
    assert_clean(&h);
}

#[test]
fn a_rebuild_replaces_a_damaged_file_that_a_reader_holds() {
    let h = home_with_skills();
    // A long-lived reader opens the healthy file and answers.
    let mut reader = bin()
        .args(["search", "--batch", "--json", "--home"])
        .arg(h.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut ask = {
        use std::io::{BufRead, BufReader, Write};
        let mut stdin = reader.stdin.take().unwrap();
        let mut lines = BufReader::new(reader.stdout.take().unwrap()).lines();
        move |q: &str| -> serde_json::Value {
            writeln!(stdin, "{}", serde_json::json!({ "query": q })).unwrap();
            stdin.flush().unwrap();
            serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap()
        }
    };
    assert_eq!(ask("topic7")["hits"][0]["id"], "s7");
    // The file becomes foreign under it, and a rebuild stops just before moving it aside.
    let mut bytes = std::fs::read(h.db()).unwrap();
    bytes[..16].copy_from_slice(b"not an index....");
    let tmp = h.path().join("garbage");
    std::fs::write(&tmp, &bytes).unwrap();
    std::fs::rename(&tmp, h.db()).unwrap();
    let mut rebuild = sync(h.path());
    rebuild.arg("--rebuild");
    let paused = Paused::start(rebuild, "rebuild-before-rename");
    // The reader still answers from the file it opened.
    assert_eq!(ask("topic7")["hits"][0]["id"], "s7");
    let out = paused.go();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("moved it to"));
    // New processes answer from the new file; the old reader keeps answering.
    assert_eq!(search(h.path(), "topic7")[0].0, "s7");
    assert_eq!(ask("topic3")["hits"][0]["id"], "s3");
    assert_clean(&h);
    drop(ask);
    let _ = reader.wait();
}

/// A SKILL.md that the walk found to be a link inside the skill root (or a plain file) is
/// switched to a link to a secret outside it between the walk and the read: the read checks
/// again, so the secret is never read, and the file is reported instead.
#[test]
fn a_skill_file_switched_to_a_link_after_the_walk_is_not_read() {
    let h = home_with_skills();
    let secret = h.path().parent().unwrap().join(format!(
        "{}-secret.txt",
        h.path().file_name().unwrap().to_string_lossy()
    ));
    std::fs::write(&secret, "OPENAI_API_KEY=sk-live-zanzibar\n").unwrap();
    let linked = h.path().join("skills/devops/linked");
    std::fs::create_dir_all(&linked).unwrap();
    std::fs::write(
        linked.join("real.md"),
        "---\nname: linked\ndescription: a linked skill\n---\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("real.md", linked.join("SKILL.md")).unwrap();
    let plain = h.skill("devops/plain", "plain", "a plain skill");
    let paused = Paused::start(sync(h.path()), "sync-after-scan");
    for skill in [linked.join("SKILL.md"), plain] {
        let tmp = skill.with_extension("tmp");
        std::os::unix::fs::symlink(&secret, &tmp).unwrap();
        std::fs::rename(&tmp, &skill).unwrap();
    }
    let report = ok(paused.go());
    let _ = std::fs::remove_file(&secret);
    assert!(search(h.path(), "zanzibar openai key").is_empty());
    let skipped = report["skipped"].to_string();
    assert!(
        skipped.contains("devops/linked/SKILL.md") && skipped.contains("outside the skill root"),
        "{skipped}"
    );
    assert!(
        skipped.contains("devops/plain/SKILL.md") && skipped.contains("became a symlink"),
        "{skipped}"
    );
}

/// Runs a sync of `home` paused after its walk and after it opens a SKILL.md: `scanned`
/// runs in the first pause, `opened` in the second. Returns the sync's report.
fn sync_around_the_open(
    home: &Path,
    scanned: impl FnOnce(),
    opened: impl FnOnce(),
) -> serde_json::Value {
    let gate = tempfile::tempdir().unwrap();
    let g = gate.path().display();
    let child = sync(home)
        .env(
            "SKILLIDX_FAILPOINTS",
            format!("sync-after-scan=pause({g});sync-read-opened=pause({g})"),
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let wait_for = |name: &str| {
        let reached = gate.path().join(format!("{name}.reached"));
        let until = Instant::now() + Duration::from_secs(60);
        while !reached.exists() {
            assert!(Instant::now() < until, "never reached {name}");
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    wait_for("sync-after-scan");
    scanned();
    std::fs::write(gate.path().join("sync-after-scan.go"), "").unwrap();
    wait_for("sync-read-opened");
    opened();
    std::fs::write(gate.path().join("sync-read-opened.go"), "").unwrap();
    ok(child.wait_with_output().unwrap())
}

/// A secret beside the home (outside every skill root), holding `words`.
fn secret_beside(home: &Path, tag: &str, words: &str) -> PathBuf {
    let secret = home.parent().unwrap().join(format!(
        "{}-{tag}",
        home.file_name().unwrap().to_string_lossy()
    ));
    std::fs::create_dir_all(&secret).unwrap();
    std::fs::write(
        secret.join("f"),
        format!("---\nname: flip\ndescription: {words}\n---\n"),
    )
    .unwrap();
    secret
}

/// Switches the symlink `link` to lead to `to`, atomically.
fn point(link: &Path, to: &Path) {
    let tmp = link.with_extension("lnk-tmp");
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(to, &tmp).unwrap();
    std::fs::rename(&tmp, link).unwrap();
}

/// The interleaving the second hostile review raced: the walk sees a SKILL.md link inside the
/// root; before the read it is switched to a secret, which the read opens; before the check
/// it is switched back. The file opened is asked where it is: outside the root, so it is not
/// read, whatever the link says by then.
#[test]
fn a_link_switched_around_the_open_never_lets_a_secret_through() {
    // The only skill, so that the pause after an open is at its open.
    let h = Home::new();
    let secret = secret_beside(h.path(), "secret2", "OPENAI zanzibar leak");
    let dir = h.path().join("skills/devops/flip");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("real.md"),
        "---\nname: flip\ndescription: the quokka inside the root\n---\n",
    )
    .unwrap();
    let link = dir.join("SKILL.md");
    point(&link, Path::new("real.md"));
    let report = sync_around_the_open(
        h.path(),
        || point(&link, &secret.join("f")),
        || point(&link, Path::new("real.md")),
    );
    let _ = std::fs::remove_dir_all(&secret);
    assert!(search(h.path(), "zanzibar openai leak").is_empty());
    let skipped = report["skipped"].to_string();
    assert!(skipped.contains("outside the skill root"), "{skipped}");
    // The next sync reads the link as it is now.
    ok(sync(h.path()).output().unwrap());
    assert_eq!(search(h.path(), "quokka inside")[0].0, "flip");
}

/// The third hostile review's race: the link itself never changes (`../../box/d/f`, inside
/// the root), but a folder on its way is switched to a link to a secret folder for the open
/// and back before the check. A check that looks the path up again is answered by the
/// folder as it is then; the file opened is outside, and it is not read.
#[test]
fn a_folder_switched_on_the_way_never_lets_a_secret_through() {
    // The only skill, so that the pause after an open is at its open.
    let h = Home::new();
    let secret = secret_beside(h.path(), "secret3", "OPENAI marmoset leak");
    let skills = h.path().join("skills");
    let inside = skills.join("box/d-real");
    std::fs::create_dir_all(&inside).unwrap();
    std::fs::write(
        inside.join("f"),
        "---\nname: flip\ndescription: the wombat inside the root\n---\n",
    )
    .unwrap();
    let d = skills.join("box/d");
    point(&d, Path::new("d-real"));
    let dir = skills.join("devops/flip");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink("../../box/d/f", dir.join("SKILL.md")).unwrap();
    let report = sync_around_the_open(
        h.path(),
        || point(&d, &secret),
        || point(&d, Path::new("d-real")),
    );
    let _ = std::fs::remove_dir_all(&secret);
    assert!(search(h.path(), "marmoset openai leak").is_empty());
    let skipped = report["skipped"].to_string();
    assert!(skipped.contains("outside the skill root"), "{skipped}");
}
