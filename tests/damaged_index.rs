//! A corrupt, foreign or too-new index file gives a clear error that says what to do, never
//! a panic and never a silently empty answer; `--rebuild` recovers.

mod common;
use common::*;

fn cli(h: &Home, args: &[&str]) -> std::process::Output {
    bin()
        .args(args)
        .arg("--home")
        .arg(h.path())
        .output()
        .unwrap()
}

#[test]
fn a_file_that_is_not_an_index_is_refused_with_advice() {
    let h = Home::new();
    h.skill("a/x", "x-skill", "something useful");
    std::fs::write(h.db(), b"this is not a database at all, just some text").unwrap();
    let out = cli(&h, &["search", "useful"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not a skillidx index") && err.contains("--rebuild"),
        "{err}"
    );
    let out = cli(&h, &["sync"]);
    assert!(!out.status.success());
    let out = cli(&h, &["sync", "--rebuild"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("moved it to"));
    let out = cli(&h, &["search", "useful"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("x-skill"));
}

#[test]
fn a_damaged_index_errors_instead_of_panicking() {
    let h = Home::new();
    for i in 0..50 {
        h.skill(
            &format!("c/s{i}"),
            &format!("s{i}"),
            &format!("skill number {i} about topic{i}"),
        );
    }
    let out = cli(&h, &["sync"]);
    assert!(out.status.success());
    let mut bytes = std::fs::read(h.db()).unwrap();
    // Scribble over everything after the header region.
    let len = bytes.len();
    for (i, b) in bytes[4096..len].iter_mut().enumerate() {
        *b = (i * 31 % 251) as u8;
    }
    std::fs::write(h.db(), &bytes).unwrap();
    for args in [&["search", "topic7"][..], &["stats"], &["sync"]] {
        let out = cli(&h, args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        if out.status.success() {
            // Whatever is answered must not be a silently empty result.
            assert!(
                !String::from_utf8_lossy(&out.stdout).contains("no skill matches"),
                "{args:?}"
            );
        } else {
            assert!(
                err.contains("--rebuild") || err.contains("damaged"),
                "{args:?}: {err}"
            );
        }
    }
    let out = cli(&h, &["sync", "--rebuild"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = cli(&h, &["search", "topic7"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("s7"),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A truncated index (a copy cut short, a full disk during a backup) is damage like any
/// other: every command says so and names `sync --rebuild`, which replaces it.
#[test]
fn a_truncated_index_is_damage_with_advice() {
    let h = Home::new();
    for i in 0..300 {
        h.skill(
            &format!("c/s{i}"),
            &format!("s{i}"),
            &format!("skill about topic{i}"),
        );
    }
    assert!(cli(&h, &["sync"]).status.success());
    let full = std::fs::read(h.db()).unwrap();
    for cut in [full.len() / 2, full.len() / 8, 20_000] {
        std::fs::write(h.db(), &full[..cut]).unwrap();
        for args in [&["search", "topic7"][..], &["list"], &["sync"]] {
            let out = cli(&h, args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                !out.status.success(),
                "{cut} {args:?}: answered from a truncated file"
            );
            assert!(
                err.contains("is damaged") && err.contains("`skillidx sync --rebuild`"),
                "{cut} {args:?}: {err}"
            );
        }
    }
    let out = cli(&h, &["sync", "--rebuild"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = cli(&h, &["search", "topic7"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("s7"));
}

/// Cut anywhere, an index never gets a sync that says all is well while queries say it is
/// damaged: a sync that succeeds on a truncated file leaves one that answers (a repair
/// verifies every page, so a file cut on a boundary is not "repaired" into one that points
/// at missing pages).
#[test]
fn a_sync_that_succeeds_on_a_cut_file_leaves_one_that_answers() {
    for skills in [2, 300] {
        cut_everywhere(skills);
    }
}

fn cut_everywhere(skills: usize) {
    let h = Home::new();
    for i in 0..skills {
        h.skill(
            &format!("c/s{i}"),
            &format!("s{i}"),
            &format!("skill about topic{i}"),
        );
    }
    assert!(cli(&h, &["sync"]).status.success());
    std::thread::sleep(std::time::Duration::from_millis(2100));
    assert!(cli(&h, &["sync"]).status.success());
    let full = std::fs::read(h.db()).unwrap();
    let mut cuts: Vec<usize> = (1..full.len() / 4096).map(|i| i * 4096).collect();
    cuts.extend([full.len() / 2, full.len() / 2 + 512, full.len() - 1]);
    for cut in cuts {
        std::fs::write(h.db(), &full[..cut]).unwrap();
        let sync = cli(&h, &["sync"]);
        let err = String::from_utf8_lossy(&sync.stderr).into_owned();
        if !sync.status.success() {
            assert!(
                err.contains("--rebuild") || err.contains("run `skillidx sync`"),
                "{cut}: {err}"
            );
            continue;
        }
        for args in [&["search", "topic1"][..], &["list"]] {
            let out = cli(&h, args);
            assert!(
                out.status.success(),
                "cut at {cut} of {}: sync succeeded, but {args:?} says: {}",
                full.len(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

#[test]
fn a_foreign_redb_file_is_refused() {
    let h = Home::new();
    {
        let db = redb::Database::create(h.db()).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let def: redb::TableDefinition<&str, u64> = redb::TableDefinition::new("someone-else");
            txn.open_table(def).unwrap().insert("k", 1).unwrap();
        }
        txn.commit().unwrap();
    }
    let out = cli(&h, &["search", "x"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("not a skillidx index"),
        "{err}"
    );
}

#[test]
fn a_newer_schema_is_refused() {
    let h = Home::new();
    h.skill("a/x", "x-skill", "brew green tea");
    assert!(cli(&h, &["sync"]).status.success());
    set_schema_version(&h.db(), 99);
    let out = cli(&h, &["search", "green tea"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("schema version 99"),
        "{err}"
    );
}

/// A process that holds the index open for writing (`watch`, the Python module) checked its
/// schema when it opened the file; a newer build may migrate the file since. Its next sync
/// must refuse to write today's layout into it.
#[test]
fn a_sync_through_a_long_open_handle_refuses_a_schema_migrated_since() {
    let h = Home::new();
    h.skill("a/x", "x-skill", "brew green tea");
    let index = skillidx::Index::open_writable(&h.db()).unwrap();
    let profile = skillidx::home::Root::from_home(h.path())
        .profile("default")
        .unwrap();
    index.sync(&profile, &Default::default()).unwrap();
    let newer = skillidx::store::SCHEMA_VERSION + 1;
    set_schema_version(&h.db(), newer);
    h.skill("a/y", "y-skill", "steep black tea");
    let err = index.sync(&profile, &Default::default()).unwrap_err();
    assert!(
        err.to_string().contains(&format!("schema version {newer}")),
        "{err}"
    );
}

#[test]
#[cfg(unix)]
fn the_index_is_readable_by_its_owner_only() {
    use std::os::unix::fs::PermissionsExt;
    let h = Home::new();
    h.skill("a/x", "x-skill", "brew green tea");
    assert!(cli(&h, &["sync"]).status.success());
    let mode = std::fs::metadata(h.db()).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
}

#[test]
fn a_missing_index_says_to_sync() {
    let h = Home::new();
    let out = cli(&h, &["search", "x"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("run `skillidx sync` first"),
        "{err}"
    );
}

#[test]
fn a_document_without_its_word_order_is_analysed_instead() {
    let h = Home::new();
    h.skill(
        "a/md-to-pdf",
        "md-to-pdf",
        "Converts Markdown documents into PDF files",
    );
    h.skill(
        "a/pdf-to-md",
        "pdf-to-md",
        "Converts PDF documents into Markdown files",
    );
    assert!(cli(&h, &["sync"]).status.success());
    let search = || {
        let out = cli(&h, &["search", "convert a PDF to Markdown", "--json"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let before = search();
    // Only the proximity bonus (from the stored word order) puts the PDF → Markdown skill
    // first; without it the two tie and the id orders `md-to-pdf` first.
    let first = before.find("\"pdf-to-md\"").expect("pdf-to-md found");
    let second = before.find("\"md-to-pdf\"").expect("md-to-pdf found");
    assert!(first < second, "{before}");
    {
        use redb::ReadableTable;
        let db = redb::Database::create(h.db()).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let def: redb::TableDefinition<u32, &[u8]> =
                redb::TableDefinition::new("profile.default.words");
            let mut table = txn.open_table(def).unwrap();
            let docs: Vec<u32> = table
                .iter()
                .unwrap()
                .map(|row| row.unwrap().0.value())
                .collect();
            assert_eq!(docs.len(), 2);
            for d in docs {
                table.remove(d).unwrap();
            }
        }
        txn.commit().unwrap();
    }
    // Analysed from the records instead: the same answer, scores included.
    assert_eq!(search(), before);
}

/// A file cut short after its last commit: a sync with nothing to change reads too little to
/// notice, so the first query that reads a missing page says the file is damaged; a
/// long-running index (the plugin's) then rebuilds it in the background, keeping the
/// damaged file aside, and answers from the new one.
#[test]
fn a_long_running_index_rebuilds_a_file_a_query_found_damaged() {
    use skillidx::refresh::{LiveIndex, LiveOptions};
    let h = Home::new();
    h.skill(
        "devops/docker",
        "docker-cleanup",
        "Remove dangling docker images",
    );
    h.skill(
        "web/browse",
        "browse-site",
        "Browse a website with the browser",
    );
    assert!(cli(&h, &["sync"]).status.success());
    std::thread::sleep(std::time::Duration::from_millis(2100));
    assert!(cli(&h, &["sync"]).status.success());
    let len = std::fs::metadata(h.db()).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(h.db())
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    let live = LiveIndex::locate(Some(h.path()), None, None, None, LiveOptions::default()).unwrap();
    let opts = skillidx::search::SearchOptions::default();
    let e = live.search("docker images", &opts).expect_err("a cut file");
    assert!(e.to_string().contains("sync --rebuild"), "{e}");
    assert!(live.refresh(), "the damage schedules a rebuild");
    assert!(live.wait(Some(std::time::Duration::from_secs(60))));
    assert_eq!(live.status().sync_error, None);
    let hits = live.search("docker images", &opts).unwrap();
    assert_eq!(hits[0].id, "docker-cleanup");
    let aside: Vec<_> = std::fs::read_dir(h.path())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().contains(".broken-"))
        .collect();
    assert_eq!(aside.len(), 1, "the damaged file is kept aside");
}

/// A file cut on its last page: queries still answer, but every sync fails ("truncated below
/// stored layout"). The failing background sync makes the next one a rebuild, so a
/// long-running index heals, and a skill added meanwhile gets indexed.
#[test]
fn a_long_running_index_rebuilds_a_file_its_syncs_find_damaged() {
    use skillidx::refresh::{LiveIndex, LiveOptions};
    use std::time::Duration;
    let h = Home::new();
    for i in 0..200 {
        h.skill(
            &format!("c/s{i}"),
            &format!("s{i}"),
            &format!("skill about topic{i}"),
        );
    }
    assert!(cli(&h, &["sync"]).status.success());
    let len = std::fs::metadata(h.db()).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(h.db())
        .unwrap()
        .set_len(len - 4096)
        .unwrap();
    h.skill(
        "z/zebra",
        "zebra-new",
        "a zebra telescope added after the cut",
    );
    let opts = LiveOptions {
        ttl: Duration::ZERO,
        ..LiveOptions::default()
    };
    let live = LiveIndex::locate(Some(h.path()), None, None, None, opts).unwrap();
    let query = skillidx::search::SearchOptions::default();
    for _ in 0..4 {
        live.refresh();
        assert!(live.wait(Some(Duration::from_secs(60))));
        std::thread::sleep(FAILURE_PAUSE);
        if live
            .search("zebra telescope", &query)
            .is_ok_and(|h| h.first().is_some_and(|h| h.id == "zebra-new"))
        {
            return;
        }
    }
    panic!("never healed: {:?}", live.status());
}

/// Longer than the retry delay after a failed background sync.
const FAILURE_PAUSE: std::time::Duration = std::time::Duration::from_millis(50);

/// The third hostile review's case: a file cut to nothing in place (the same inode, as
/// `: > file` does) under a long-running index that has read it. Its handle then fails for
/// good; the rebuild moves the empty file aside instead of filling the same inode, so the
/// index follows the new file, by itself and after `sync --rebuild`.
#[test]
fn a_long_running_index_recovers_from_a_file_cut_to_nothing_in_place() {
    use skillidx::refresh::{LiveIndex, LiveOptions};
    use std::time::Duration;
    let h = Home::new();
    for i in 0..2000 {
        h.skill(
            &format!("c/s{i}"),
            &format!("s{i}"),
            &format!("skill about topic{i} and word{}", i % 97),
        );
    }
    assert!(cli(&h, &["sync"]).status.success());
    let opts = LiveOptions {
        ttl: Duration::ZERO,
        ..LiveOptions::default()
    };
    let live = LiveIndex::locate(Some(h.path()), None, None, None, opts).unwrap();
    let query = skillidx::search::SearchOptions::default();
    assert_eq!(live.search("topic7", &query).unwrap()[0].id, "s7");
    std::fs::OpenOptions::new()
        .write(true)
        .open(h.db())
        .unwrap()
        .set_len(0)
        .unwrap();
    // Queries that read pages the handle has not cached find the damage, and from then on
    // the handle fails every read.
    assert!(
        (0..2000).any(|i| live
            .search(&format!("topic{i} word{}", i % 13), &query)
            .is_err()),
        "the cut was never noticed"
    );
    // Every command names the remedy.
    let out = cli(&h, &["search", "topic7"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--rebuild"),
        "{out:?}"
    );
    for _ in 0..6 {
        let _ = live.search("topic7", &query);
        live.refresh();
        assert!(live.wait(Some(Duration::from_secs(60))));
        std::thread::sleep(FAILURE_PAUSE);
        if live
            .search("topic1234 word7", &query)
            .is_ok_and(|h| h.first().is_some_and(|h| h.id == "s1234"))
        {
            return;
        }
    }
    panic!("never healed: {:?}", live.status());
}

/// A FIFO put at the index path (fourth hostile review): opening it for reading would block
/// forever. Every command answers at once with the remedy, and `sync --rebuild` moves it
/// aside and builds a new index.
#[test]
fn a_fifo_at_the_index_path_never_blocks_a_reader() {
    use std::time::{Duration, Instant};
    let h = Home::new();
    h.skill("c/alpha", "alpha", "about the alpha wombat");
    assert!(cli(&h, &["sync"]).status.success());
    std::fs::remove_file(h.db()).unwrap();
    let path = std::ffi::CString::new(h.db().to_str().unwrap()).unwrap();
    // SAFETY: mkfifo with a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    let mut child = bin()
        .args(["search", "wombat", "--home"])
        .arg(h.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let until = Instant::now() + Duration::from_secs(30);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > until {
            let _ = child.kill();
            panic!("search blocked on a FIFO");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not a regular file"),
        "{out:?}"
    );
    assert!(cli(&h, &["sync", "--rebuild"]).status.success());
    let out = cli(&h, &["search", "wombat"]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("alpha"),
        "{out:?}"
    );
}
