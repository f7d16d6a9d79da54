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
    {
        let db = redb::Database::create(h.db()).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let def: redb::TableDefinition<&str, &[u8]> =
                redb::TableDefinition::new("skillidx.meta");
            txn.open_table(def)
                .unwrap()
                .insert("schema_version", 99u64.to_le_bytes().as_slice())
                .unwrap();
        }
        txn.commit().unwrap();
    }
    let out = cli(&h, &["search", "green tea"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("schema version 99"),
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
