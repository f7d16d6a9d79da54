//! A hostile environment: the disk fills up or the filesystem turns read-only during a sync.
//! Each time the sync fails with a clear error naming the index, the previous index stays
//! intact and keeps answering, and once the disk is back the next sync ends where a clean
//! build does.
//!
//! What each test really exercises:
//! - `disk_full_on_a_small_tmpfs`: the index lives on a 16 MiB tmpfs mounted for the test,
//!   filled to the last byte before a big sync, so redb's writes fail with `ENOSPC`. Needs
//!   `mount` (root in a sandbox that allows it); skipped with a message otherwise.
//! - `read_only_filesystem_during_a_sync`: the same tmpfs remounted read-only
//!   (`mount -o remount,ro`) between the scan and the next sync, so opening the index for
//!   writing fails with `EROFS`; a sync that finds nothing changed still succeeds, since it
//!   writes nothing. Needs `mount`; skipped otherwise.
//! - `file_size_limit_as_a_full_disk`: needs no privilege. The sync runs under
//!   `RLIMIT_FSIZE` (`prlimit --fsize`) just above the index's size, with `SIGXFSZ` ignored,
//!   so growing the file fails with `EFBIG` ("File too large") as a full disk would fail it
//!   with `ENOSPC`; writes inside the file's current length still succeed, which is the
//!   difference from a real full disk.
//! - `the_index_is_private_whatever_the_umask`: the file is created 0600 even under umask
//!   000, and a replacement made by `--rebuild` is too.
//! - `a_reader_that_goes_away_ends_the_output_not_the_sync`: `skillidx sync | head -1`,
//!   forced with a fail point: the sync is held after its first profile, with the index
//!   open for writing, while the pipe's reader closes; then it prints. It must finish every
//!   profile, exit 0 and leave the file clean (a read-only open needs no repair).
//! - `a_reader_that_cannot_repair_says_so_and_names_the_remedy`: a file left unclean by a
//!   killed sync, opened by readers that cannot write (fail point `reader-writes=error`
//!   standing for a read-only file system; the real one under a tmpfs in
//!   `read_only_filesystem_during_a_sync`).

mod common;
use common::*;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A tmpfs mounted for one test, unmounted when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().ok()?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            return None;
        }
        Some(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn remount(&self, mode: &str) {
        let st = Command::new("mount")
            .args(["-o", &format!("remount,{mode}")])
            .arg(self.path())
            .status()
            .unwrap();
        assert!(st.success(), "remount {mode}");
    }

    /// Fills the filesystem to the last byte with a file that [`Tmpfs::free`] removes.
    fn fill(&self) {
        use std::io::Write;
        let mut f = std::fs::File::create(self.path().join("filler")).unwrap();
        let chunk = vec![0xA5u8; 4096];
        while f.write_all(&chunk).is_ok() {}
        // Any last partial block.
        while f.write_all(&[0xA5]).is_ok() {}
        let _ = f.sync_all();
    }

    fn free(&self) {
        std::fs::remove_file(self.path().join("filler")).unwrap();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("mount")
            .args(["-o", "remount,rw"])
            .arg(self.path())
            .stderr(std::process::Stdio::null())
            .status();
        let _ = Command::new("umount").arg(self.path()).status();
    }
}

fn sync(home: &Path, db: &Path) -> Output {
    bin()
        .args(["sync", "--home"])
        .arg(home)
        .arg("--db")
        .arg(db)
        .output()
        .unwrap()
}

fn search(home: &Path, db: &Path, q: &str) -> Output {
    bin()
        .args(["search", q, "--json", "--home"])
        .arg(home)
        .arg("--db")
        .arg(db)
        .output()
        .unwrap()
}

fn first_id(out: &Output) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
    v.get(0)?["id"].as_str().map(str::to_owned)
}

fn add_many(h: &Home, from: usize, n: usize) {
    for i in from..from + n {
        h.skill(
            &format!("bulk{}/s{i}", i % 17),
            &format!("bulk-{i}"),
            &format!(
                "Bulk skill {i} about topic{} with words {} and more words {}",
                i % 97,
                "lorem ipsum dolor ".repeat(i % 5 + 1),
                i * 7919
            ),
        );
    }
}

/// The previous index is intact and answers as before.
fn assert_previous_index_answers(h: &Home, db: &Path, digest_before: &str) {
    let out = search(h.path(), db, "zanzibar quokka");
    assert!(
        out.status.success(),
        "search after the failure: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(first_id(&out).as_deref(), Some("sentinel"));
    assert_eq!(common::digest(db, "default"), digest_before);
}

fn sentinel(h: &Home) {
    h.skill(
        "keep/sentinel",
        "sentinel",
        "Zanzibar quokka that is always there",
    );
}

fn assert_clear_error(out: &Output, db: &Path, any: &[&str]) {
    assert!(!out.status.success(), "the sync should have failed");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        any.iter().any(|s| err.contains(s)),
        "error should say {any:?}: {err}"
    );
    assert!(
        err.contains(&*db.to_string_lossy()),
        "error should name the index {}: {err}",
        db.display()
    );
    eprintln!("  the error: {}", err.trim());
}

#[test]
fn disk_full_on_a_small_tmpfs() {
    let Some(fs) = Tmpfs::mount("16m") else {
        eprintln!("SKIPPED: cannot mount a tmpfs here (not root, or the sandbox forbids it); file_size_limit_as_a_full_disk covers the full-disk case");
        return;
    };
    let h = Home::new();
    sentinel(&h);
    add_many(&h, 0, 20);
    let db = fs.path().join("skillidx.redb");
    assert!(sync(h.path(), &db).status.success());
    let before = common::digest(&db, "default");
    add_many(&h, 20, 1500);
    fs.fill();
    let out = sync(h.path(), &db);
    assert_clear_error(&out, &db, &["No space left on device", "os error 28"]);
    assert_previous_index_answers(&h, &db, &before);
    // A second attempt on the still-full disk fails the same way and harms nothing.
    let out = sync(h.path(), &db);
    assert!(!out.status.success());
    assert_previous_index_answers(&h, &db, &before);
    fs.free();
    let out = sync(h.path(), &db);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let clean = h.path().join("clean.redb");
    assert!(bin()
        .args(["sync", "--rebuild", "--home"])
        .arg(h.path())
        .arg("--db")
        .arg(&clean)
        .status()
        .unwrap()
        .success());
    assert_eq!(
        common::digest(&db, "default").replace(&*db.to_string_lossy(), ""),
        common::digest(&clean, "default").replace(&*clean.to_string_lossy(), "")
    );
}

#[test]
fn read_only_filesystem_during_a_sync() {
    let Some(fs) = Tmpfs::mount("16m") else {
        eprintln!("SKIPPED: cannot mount a tmpfs here (not root, or the sandbox forbids it)");
        return;
    };
    let h = Home::new();
    sentinel(&h);
    add_many(&h, 0, 30);
    let db = fs.path().join("skillidx.redb");
    assert!(sync(h.path(), &db).status.success());
    // Let the files age past the racy window so an unchanged sync writes nothing.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    assert!(sync(h.path(), &db).status.success());
    let before = common::digest(&db, "default");
    // A file left unclean by a killed sync (the writer aborted with the file open for
    // writing) cannot be repaired on a read-only file system: every reader says so, and
    // names the remedy.
    let unclean = fs.path().join("unclean.redb");
    let out = sync(h.path(), &unclean);
    assert!(out.status.success());
    add_many(&h, 100, 1);
    let out = bin()
        .env("SKILLIDX_FAILPOINTS", "sync-before-commit=abort")
        .args(["sync", "--home"])
        .arg(h.path())
        .arg("--db")
        .arg(&unclean)
        .output()
        .unwrap();
    assert!(!out.status.success());
    std::fs::remove_dir_all(h.path().join("skills/bulk15/s100")).unwrap();
    fs.remount("ro");
    for args in [&["search", "quokka"][..], &["list"], &["sync"]] {
        let out = bin()
            .args(args)
            .arg("--home")
            .arg(h.path())
            .arg("--db")
            .arg(&unclean)
            .output()
            .unwrap();
        assert_clear_error(&out, &unclean, &["was left unclean"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("Read-only file system") && err.contains("run `skillidx sync`"),
            "{err}"
        );
    }
    // Nothing changed: a sync writes nothing, so it succeeds on a read-only filesystem.
    let out = sync(h.path(), &db);
    assert!(
        out.status.success(),
        "an unchanged sync on a read-only fs: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_previous_index_answers(&h, &db, &before);
    // Something changed: the sync must write, and cannot.
    add_many(&h, 30, 50);
    let out = sync(h.path(), &db);
    assert_clear_error(&out, &db, &["Read-only file system", "os error 30"]);
    assert_previous_index_answers(&h, &db, &before);
    fs.remount("rw");
    let out = sync(h.path(), &db);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = search(h.path(), &db, "bulk skill topic3");
    assert!(String::from_utf8_lossy(&out.stdout).contains("bulk-"));
}

/// Runs `skillidx sync` with `RLIMIT_FSIZE` at `limit` bytes and `SIGXFSZ` ignored (an
/// ignored signal stays ignored across exec), so writes past the limit fail with `EFBIG`.
fn sync_with_fsize(home: &Path, db: &Path, limit: u64) -> Output {
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_skillidx"));
    Command::new("bash")
        .arg("-c")
        .arg(format!(
            "trap '' XFSZ; exec prlimit --fsize={limit} -- \"$0\" sync --home \"$1\" --db \"$2\""
        ))
        .arg(&exe)
        .arg(home)
        .arg(db)
        .output()
        .unwrap()
}

#[test]
fn file_size_limit_as_a_full_disk() {
    if Command::new("prlimit").arg("--version").output().is_err() {
        eprintln!("SKIPPED: prlimit is not installed");
        return;
    }
    let h = Home::new();
    sentinel(&h);
    add_many(&h, 0, 20);
    let db = h.db();
    assert!(sync(h.path(), &db).status.success());
    let before = common::digest(&db, "default");
    let size = std::fs::metadata(&db).unwrap().len();
    add_many(&h, 20, 1500);
    let out = sync_with_fsize(h.path(), &db, size);
    assert_clear_error(&out, &db, &["File too large", "os error 27"]);
    assert_previous_index_answers(&h, &db, &before);
    let out = sync(h.path(), &db);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // With room again, the index ends where a clean build does.
    let clean = h.path().join("clean.redb");
    assert!(bin()
        .args(["sync", "--rebuild", "--home"])
        .arg(h.path())
        .arg("--db")
        .arg(&clean)
        .status()
        .unwrap()
        .success());
    assert_eq!(
        common::digest(&db, "default"),
        common::digest(&clean, "default")
    );
}

#[test]
fn the_index_is_private_whatever_the_umask() {
    use std::os::unix::fs::PermissionsExt;
    let h = Home::new();
    sentinel(&h);
    let exe = PathBuf::from(env!("CARGO_BIN_EXE_skillidx"));
    let run = |extra: &str| {
        let st = Command::new("bash")
            .arg("-c")
            .arg(format!("umask 000; exec \"$0\" sync --home \"$1\" {extra}"))
            .arg(&exe)
            .arg(h.path())
            .status()
            .unwrap();
        assert!(st.success());
    };
    run("");
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&h.db()), 0o600);
    // A file that is not an index is moved aside by --rebuild; the new one is private too.
    std::fs::remove_file(h.db()).unwrap();
    std::fs::write(h.db(), "not an index").unwrap();
    run("--rebuild");
    assert_eq!(mode(&h.db()), 0o600);
}

#[test]
fn an_io_error_is_said_once() {
    let h = Home::new();
    sentinel(&h);
    // The index path lies under a regular file: opening it fails at the I/O level.
    let blocker = h.path().join("not-a-dir");
    std::fs::write(&blocker, "x").unwrap();
    let db = blocker.join("skillidx.redb");
    let out = sync(h.path(), &db);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&*db.to_string_lossy()), "{err}");
    assert_eq!(err.matches("os error 20").count(), 1, "{err}");
}

#[test]
fn a_unique_word_is_found_among_many_skills() {
    let h = Home::new();
    sentinel(&h);
    add_many(&h, 0, 400);
    let db = h.db();
    assert!(sync(h.path(), &db).status.success());
    let out = search(h.path(), &db, "zanzibar");
    assert_eq!(
        first_id(&out).as_deref(),
        Some("sentinel"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn a_closed_stdout_is_not_a_panic() {
    let h = Home::new();
    sentinel(&h);
    add_many(&h, 0, 50);
    let db = h.db();
    assert!(sync(h.path(), &db).status.success());
    let mut child = bin()
        .args(["list", "--home"])
        .arg(h.path())
        .arg("--db")
        .arg(&db)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes away before the writer is done, as `| head -1` does.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
}

/// `skillidx sync --all-profiles | head -1`, the interleaving forced: the sync has synced
/// its first profile, with the index open for writing, when the pipe's reader goes away;
/// then it prints its report. It must not be killed by SIGPIPE: it syncs every profile,
/// exits 0, and closes the file cleanly, so that a reader opens it without a repair.
#[test]
fn a_reader_that_goes_away_ends_the_output_not_the_sync() {
    use std::process::Stdio;
    let h = Home::new();
    sentinel(&h);
    add_many(&h, 0, 10);
    let work = h.path().join("profiles/work/skills/misc/other");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(
        work.join("SKILL.md"),
        "---\nname: other\ndescription: Another profile's skill\n---\n",
    )
    .unwrap();
    let gate = tempfile::tempdir().unwrap();
    let mut child = bin()
        .env(
            "SKILLIDX_FAILPOINTS",
            format!("sync-before-report=pause({})", gate.path().display()),
        )
        .args(["sync", "--all-profiles", "--home"])
        .arg(h.path())
        .arg("--db")
        .arg(h.db())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let reached = gate.path().join("sync-before-report.reached");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !reached.exists() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(reached.exists(), "the sync never reached its report");
    drop(child.stdout.take()); // `head -1` is gone
    std::fs::write(gate.path().join("sync-before-report.go"), "").unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "not a quiet end: {:?} {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    // Clean: a read-only open needs no repair.
    let clean = redb::Builder::new()
        .set_concurrency_mode(redb::ConcurrencyMode::MultiWriter)
        .open_read_only(h.db());
    assert!(clean.is_ok(), "the file needs repair: {:?}", clean.err());
    drop(clean);
    let index = skillidx::Index::open(&h.db()).unwrap();
    assert_eq!(index.profiles().unwrap(), ["default", "work"]);
}

/// A file left unclean by a killed sync, opened by a reader that cannot write: the error
/// says why the reader had to write and what to do, and the next reader that can write
/// repairs it and answers.
#[test]
fn a_reader_that_cannot_repair_says_so_and_names_the_remedy() {
    let h = Home::new();
    sentinel(&h);
    add_many(&h, 0, 10);
    let db = h.db();
    assert!(sync(h.path(), &db).status.success());
    add_many(&h, 10, 1);
    let out = bin()
        .env("SKILLIDX_FAILPOINTS", "sync-before-commit=abort")
        .args(["sync", "--home"])
        .arg(h.path())
        .arg("--db")
        .arg(&db)
        .output()
        .unwrap();
    assert!(!out.status.success());
    for args in [&["search", "quokka"][..], &["list"], &["stats"]] {
        let out = bin()
            .env("SKILLIDX_FAILPOINTS", "reader-writes=error")
            .args(args)
            .arg("--home")
            .arg(h.path())
            .arg("--db")
            .arg(&db)
            .output()
            .unwrap();
        assert_clear_error(
            &out,
            &db,
            &["was left unclean by a process that ended while writing it"],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("needs write access") && err.contains("run `skillidx sync`"),
            "{err}"
        );
    }
    let out = search(h.path(), &db, "zanzibar quokka");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(first_id(&out).as_deref(), Some("sentinel"));
}
