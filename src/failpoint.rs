//! Fail points: named places in multi-step protocols where a test can stop a process,
//! make it fail, or make it panic, to force one interleaving with another process.
//!
//! Racing real processes finds some bugs; only a forced interleaving proves a protocol
//! right for that order of events. Each step of a protocol that another process can
//! interleave with (a sync between reading its base and taking the write lock, a migration
//! between reading the version and committing, a file replaced while a reader holds it)
//! calls [`point`] with a name from [`names`]. Without the `failpoints` feature [`point`]
//! is an empty inline function: release builds carry no trace of them.
//!
//! With the feature, the actions come from [`set`] (threads in one test process) or from
//! the `SKILLIDX_FAILPOINTS` environment variable (child processes), a `;`-separated list
//! of `name=action`:
//!
//! - `pause(DIR)`: create `DIR/<name>.reached`, then wait until `DIR/<name>.go` exists
//!   (at most 60 s). A test learns that the process has reached the point and decides
//!   when it goes on.
//! - `sleep(MS)`: sleep that many milliseconds.
//! - `panic`: panic with the message `fail point <name>`.
//! - `abort`: end the process at once, as a kill would (no destructors, no flush).
//! - `error`: make [`point`] return `Err`, for callers that turn it into an I/O error.

/// The names of every fail point, so tests and code cannot drift apart.
pub mod names {
    /// A sync has read its base (one read transaction) and not yet taken the write lock.
    pub const SYNC_AFTER_BASE: &str = "sync-after-base";
    /// A sync has walked the skill roots (every SKILL.md found and judged) and read none.
    pub const SYNC_AFTER_SCAN: &str = "sync-after-scan";
    /// A sync has opened a SKILL.md for reading and not yet checked that it is the file the
    /// walk found.
    pub const SYNC_READ_OPENED: &str = "sync-read-opened";
    /// A sync has observed every file and planned, and not yet taken the write lock.
    pub const SYNC_BEFORE_WRITE: &str = "sync-before-write";
    /// A sync holds the write transaction and has not planned against it yet.
    pub const SYNC_IN_WRITE: &str = "sync-in-write";
    /// A sync has applied its changes and is about to commit.
    pub const SYNC_BEFORE_COMMIT: &str = "sync-before-commit";
    /// A file is about to be parsed (a panic here stands for a parser bug).
    pub const PARSE: &str = "parse";
    /// A migration has read the schema version and not yet taken the write lock.
    pub const MIGRATE_BEFORE_WRITE: &str = "migrate-before-write";
    /// A migration step is about to commit.
    pub const MIGRATE_BEFORE_COMMIT: &str = "migrate-before-commit";
    /// `sync --rebuild` is about to move a damaged file aside.
    pub const REBUILD_BEFORE_RENAME: &str = "rebuild-before-rename";
    /// An atomic file replacement has written and synced the temporary file and not yet
    /// renamed it over the original.
    pub const REPLACE_BEFORE_RENAME: &str = "replace-before-rename";
    /// A search has opened its read transaction.
    pub const SEARCH_IN_READ: &str = "search-in-read";
    /// An open for reading found the file needing a write first (a repair after a killed
    /// writer, a schema upgrade) and is about to open it for writing.
    pub const READER_WRITES: &str = "reader-writes";
    /// `skillidx sync` has synced a profile and is about to print its report, with the
    /// index open.
    pub const SYNC_BEFORE_REPORT: &str = "sync-before-report";
}

/// Reached fail point `name`: does what the test asked for it, if anything.
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub fn point(_name: &str) -> Result<(), std::io::Error> {
    Ok(())
}

/// Reached fail point `name`: does what the test asked for it, if anything.
#[cfg(feature = "failpoints")]
pub fn point(name: &str) -> Result<(), std::io::Error> {
    match imp::action(name) {
        None => Ok(()),
        Some(action) => imp::run(name, &action),
    }
}

/// Sets the action of `name` for this process (`None` clears it); the syntax is the one
/// of `SKILLIDX_FAILPOINTS`. Actions set here take precedence over the environment.
#[cfg(feature = "failpoints")]
pub fn set(name: &str, action: Option<&str>) {
    imp::set(name, action)
}

#[cfg(feature = "failpoints")]
mod imp {
    use std::collections::HashMap;
    use std::path::PathBuf;
    use std::sync::{Mutex, OnceLock};
    use std::time::{Duration, Instant};

    fn local() -> &'static Mutex<HashMap<String, String>> {
        static LOCAL: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
        LOCAL.get_or_init(Default::default)
    }

    pub fn set(name: &str, action: Option<&str>) {
        let mut map = local().lock().unwrap_or_else(|p| p.into_inner());
        match action {
            Some(a) => map.insert(name.to_owned(), a.to_owned()),
            None => map.remove(name),
        };
    }

    pub fn action(name: &str) -> Option<String> {
        if let Some(a) = local().lock().unwrap_or_else(|p| p.into_inner()).get(name) {
            return Some(a.clone());
        }
        let spec = std::env::var("SKILLIDX_FAILPOINTS").ok()?;
        spec.split(';').find_map(|item| {
            let (n, a) = item.split_once('=')?;
            (n.trim() == name).then(|| a.trim().to_owned())
        })
    }

    pub fn run(name: &str, action: &str) -> Result<(), std::io::Error> {
        let arg = |prefix: &str| {
            action
                .strip_prefix(prefix)
                .and_then(|r| r.strip_suffix(')'))
                .map(str::to_owned)
        };
        if let Some(dir) = arg("pause(") {
            let dir = PathBuf::from(dir);
            std::fs::write(
                dir.join(format!("{name}.reached")),
                std::process::id().to_string(),
            )?;
            let go = dir.join(format!("{name}.go"));
            let until = Instant::now() + Duration::from_secs(60);
            while !go.exists() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(2));
            }
            return Ok(());
        }
        if let Some(ms) = arg("sleep(") {
            let ms: u64 = ms.parse().unwrap_or(0);
            std::thread::sleep(Duration::from_millis(ms));
            return Ok(());
        }
        match action {
            "panic" => panic!("fail point {name}"),
            "abort" => std::process::abort(),
            "error" => Err(std::io::Error::other(format!("fail point {name}"))),
            _ => Ok(()),
        }
    }
}
