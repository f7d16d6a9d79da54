//! Helpers shared by the integration tests: temporary Hermes homes and the CLI binary.
#![allow(dead_code)]

use skillidx::home::Root;
use skillidx::search::SearchOptions;
use skillidx::sync::{SyncOptions, SyncReport};
use skillidx::Index;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A temporary Hermes home with its own index file.
pub struct Home {
    pub dir: tempfile::TempDir,
}

impl Home {
    pub fn new() -> Home {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("skills")).unwrap();
        Home { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn db(&self) -> PathBuf {
        self.dir.path().join("skillidx.redb")
    }

    /// Writes `skills/<rel>/SKILL.md` with a name and description.
    pub fn skill(&self, rel: &str, name: &str, description: &str) -> PathBuf {
        self.write(
            rel,
            &format!("---\nname: {name}\ndescription: {description}\n---\n# {name}\n\nBody.\n"),
        )
    }

    /// Writes `skills/<rel>/SKILL.md` with the given text.
    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        self.write_bytes(rel, text.as_bytes())
    }

    pub fn write_bytes(&self, rel: &str, bytes: &[u8]) -> PathBuf {
        let dir = self.dir.path().join("skills").join(rel);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("SKILL.md");
        // Write then rename, as editors and installers do, so that no reader ever sees a
        // half-written file.
        let tmp = dir.join(".SKILL.md.tmp");
        std::fs::write(&tmp, bytes).unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        path
    }

    pub fn config(&self, yaml: &str) {
        std::fs::write(self.dir.path().join("config.yaml"), yaml).unwrap();
    }

    pub fn sync(&self) -> SyncReport {
        self.sync_with(&SyncOptions::default())
    }

    pub fn sync_with(&self, opts: &SyncOptions<'_>) -> SyncReport {
        let index = Index::open_for_sync(&self.db()).expect("open index");
        let profile = Root::from_home(self.path()).profile("default").unwrap();
        index.sync(&profile, opts).expect("sync")
    }

    pub fn search(&self, query: &str) -> Vec<String> {
        self.search_with(query, &SearchOptions::default())
            .into_iter()
            .map(|h| h.0)
            .collect()
    }

    pub fn search_with(&self, query: &str, opts: &SearchOptions) -> Vec<(String, f64)> {
        let index = Index::open(&self.db()).expect("open index");
        index
            .search("default", query, opts)
            .expect("search")
            .into_iter()
            .map(|h| (h.id, h.score))
            .collect()
    }
}

/// The `skillidx` binary built for these tests.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_skillidx"))
}

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The shared corpus of real SKILL.md files, when this checkout has it beside it.
pub fn corpus() -> Option<PathBuf> {
    let p = repo().join("../shared/corpus");
    p.join("skills").is_dir().then_some(p)
}

/// Copies a directory tree (files and folders only).
pub fn copy_tree(from: &Path, to: &Path) {
    for entry in walkdir::WalkDir::new(from) {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(from).unwrap();
        let dest = to.join(rel);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else if entry.file_type().is_file() {
            std::fs::copy(entry.path(), &dest).unwrap();
        }
    }
}

/// A digest of every table of the index, for comparing two indexes' logical content:
/// documents by path (ids differ between builds), postings by term with paths for docs.
pub fn digest(db: &Path, profile: &str) -> String {
    let index = Index::open(db).unwrap();
    let list = index.list(profile).unwrap();
    let stats = index.stats(profile).unwrap();
    let mut out = format!(
        "active={} inactive={} terms={}\n",
        stats.active, stats.inactive, stats.terms
    );
    for s in list {
        out.push_str(&format!("{:?}\n", s));
    }
    out
}
