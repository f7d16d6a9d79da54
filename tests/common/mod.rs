//! Helpers shared by the integration tests: temporary Hermes homes and the CLI binary.
#![allow(dead_code)]

use redb::{ReadableDatabase, ReadableTable, TableDefinition};
use skillidx::home::Root;
use skillidx::search::SearchOptions;
use skillidx::store::records::*;
use skillidx::store::{decode, ProfileTables, Store};
use skillidx::sync::{SyncOptions, SyncReport};
use skillidx::Index;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A temporary Hermes home with its own index file.
pub struct Home {
    pub dir: tempfile::TempDir,
}

/// A home of two unrelated skills (not synced): `docker-cleanup` in `devops/docker` and
/// `shapefile-tools` in `geo/shp`, for tests of what reaches an agent.
pub fn docker_and_shapefile_home() -> Home {
    let h = Home::new();
    h.skill(
        "devops/docker",
        "docker-cleanup",
        "Remove dangling docker images and stopped containers",
    );
    h.skill(
        "geo/shp",
        "shapefile-tools",
        "Read and reproject shapefiles with GDAL",
    );
    h
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

/// Runs `skillidx ARGS` on `home` as Hermes 0.21.3 in a session whose working directory is
/// `cwd`, and checks that it succeeded.
pub fn run_as_0_21(home: &Home, args: &[&str], cwd: &Path) -> std::process::Output {
    let out = bin()
        .args(args)
        .arg("--home")
        .arg(home.path())
        .arg("--db")
        .arg(home.db())
        .args(["--hermes-version", "0.21.3", "--cwd"])
        .arg(cwd)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The sorted `(category, name)` pairs `skillidx offered --json` gives as Hermes 0.21.3 after
/// a sync, in the session at `cwd` on `platform` (`""`: none). A list, not a set: Hermes'
/// block never lists one pair twice, and neither may skillidx.
pub fn offered_as_0_21(home: &Home, cwd: &Path, platform: &str) -> Vec<(String, String)> {
    run_as_0_21(home, &["sync"], cwd);
    let out = run_as_0_21(home, &["offered", "--json", "--platform", platform], cwd);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut got: Vec<(String, String)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let field = |k: &str| o[k].as_str().unwrap().to_owned();
            (field("category"), field("name"))
        })
        .collect();
    got.sort();
    got
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

/// A new home holding a copy of `h`'s skills, synced: what a clean build of them answers.
pub fn clean_copy(h: &Home) -> Home {
    let clean = Home::new();
    copy_tree(&h.path().join("skills"), &clean.path().join("skills"));
    clean.sync();
    clean
}

/// The store's table of file-wide records (schema version, root home), as the store names it.
const META: TableDefinition<&str, &[u8]> = TableDefinition::new("skillidx.meta");

/// A copy of `tests/fixtures/schema-v{version}.redb` in `dir`, claimed for this checkout's
/// example home. From schema 6 on an index records the absolute path of the home it was
/// built for (`root_home`), and a command given another home refuses the file; the fixtures
/// were written in another checkout, so the copy records this one's. The claim is rewritten
/// with redb alone, which leaves the file at its schema.
pub fn fixture_copy(version: u32, dir: &Path) -> PathBuf {
    let db = dir.join("index.redb");
    std::fs::copy(
        repo().join(format!("tests/fixtures/schema-v{version}.redb")),
        &db,
    )
    .unwrap();
    let file = redb::Database::open(&db).unwrap();
    let claimed = match file.begin_read().unwrap().open_table(META) {
        Ok(table) => table.get("root_home").unwrap().is_some(),
        Err(redb::TableError::TableDoesNotExist(_)) => false,
        Err(e) => panic!("{e}"),
    };
    if claimed {
        let home = repo().join("examples/hermes-home");
        let txn = file.begin_write().unwrap();
        txn.open_table(META)
            .unwrap()
            .insert("root_home", home.to_string_lossy().as_bytes())
            .unwrap();
        txn.commit().unwrap();
    }
    db
}

/// The files in `dir` that `sync --rebuild` kept aside as another home's index
/// (`skillidx.redb.other-home-<time>-<pid>`).
pub fn other_home_asides(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains("skillidx.redb.other-home-"))
        .collect()
}

/// Records `version` as the schema of the index at `db`, as a build of that version
/// migrating the file would.
pub fn set_schema_version(db: &Path, version: u64) {
    let store = Store::open_write(db).unwrap();
    let txn = store.write().unwrap();
    txn.open_table(META)
        .unwrap()
        .insert("schema_version", version.to_le_bytes().as_slice())
        .unwrap();
    store.commit(txn).unwrap();
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

/// Syncs the default profile of `home` into the index at `db` through the library, which
/// does not compact (the CLI does), as a program embedding skillidx would.
pub fn library_sync(home: &Path, db: &Path) -> (Index, SyncReport) {
    let index = Index::open_writable(db).unwrap();
    let profile = Root::from_home(home).profile("default").unwrap();
    let report = index.sync(&profile, &Default::default()).unwrap();
    (index, report)
}

/// A tiny deterministic PRNG (xorshift), so a failing run can be replayed from its seed.
pub mod rand_lite {
    pub struct Rng(u64);
    impl Rng {
        pub fn new(seed: u64) -> Rng {
            Rng(seed.max(1))
        }
        pub fn next(&mut self) -> u64 {
            let mut x = self.0;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            self.0 = x;
            x
        }
        pub fn below(&mut self, n: u64) -> u64 {
            self.next() % n.max(1)
        }
        pub fn chance(&mut self, one_in: u64) -> bool {
            self.below(one_in) == 0
        }
    }
}

/// Every table of one profile, read through redb, with doc ids replaced by the SKILL.md
/// path that owns them and the fields that legitimately differ between two builds of the
/// same files (generation, commit time, next free id, when a file was verified) left out.
pub fn full_digest(db: &Path, profile: &str) -> String {
    let index = skillidx::Index::open(db).expect("open index");
    let store: &Store = index.store();
    let txn = store.read().expect("read txn");
    let t = ProfileTables::new(profile);
    let mut out = String::new();

    // Doc id → path, from the docs table.
    let mut path_of: BTreeMap<u32, String> = BTreeMap::new();
    let mut lens_of = BTreeMap::new();
    let mut docs: BTreeMap<String, String> = BTreeMap::new();
    if let Ok(table) = txn.open_table(t.docs()) {
        for row in table.iter().unwrap() {
            let (k, v) = row.unwrap();
            let (head, body): (DocHead, DocBody) = decode(store, v.value(), "doc").unwrap();
            path_of.insert(k.value(), head.key.clone());
            lens_of.insert(k.value(), head.lens);
            let key = head.key.clone();
            assert!(
                docs.insert(key.clone(), format!("{head:?} {body:?}"))
                    .is_none(),
                "two documents for {key}"
            );
        }
    }
    let p = |d: u32| {
        path_of
            .get(&d)
            .cloned()
            .unwrap_or_else(|| panic!("doc id {d} has no document row"))
    };
    out.push_str("== docs\n");
    for (k, v) in &docs {
        out.push_str(&format!("{k} {v}\n"));
    }

    out.push_str("== manifest\n");
    if let Ok(table) = txn.open_table(t.manifest()) {
        for row in table.iter().unwrap() {
            let (k, v) = row.unwrap();
            let e: ManifestEntry = decode(store, v.value(), "manifest").unwrap();
            let state = match &e.state {
                EntryState::Indexed(d) => {
                    let path = p(*d);
                    assert_eq!(path, k.value(), "manifest entry points at another doc");
                    "indexed".to_owned()
                }
                EntryState::Skipped(r) => format!("skipped {r}"),
            };
            out.push_str(&format!(
                "{} {:?} {} {}\n",
                k.value(),
                e.stat,
                hex(&e.hash),
                state
            ));
        }
    }

    out.push_str("== terms\n");
    let mut forward: BTreeMap<String, Vec<TermEntry>> = BTreeMap::new();
    if let Ok(table) = txn.open_table(t.terms()) {
        for row in table.iter().unwrap() {
            let (k, v) = row.unwrap();
            let lens = lens_of
                .get(&k.value())
                .expect("a forward index without a document");
            let mut terms: Vec<TermEntry> = skillidx::forward::decode(v.value(), lens).unwrap();
            terms.sort();
            forward.insert(p(k.value()), terms);
        }
    }
    for (k, v) in &forward {
        out.push_str(&format!("{k} {v:?}\n"));
    }

    out.push_str("== words\n");
    let mut words: BTreeMap<String, (String, String)> = BTreeMap::new();
    if let Ok(table) = txn.open_table(t.words()) {
        for row in table.iter().unwrap() {
            let (k, v) = row.unwrap();
            let order: (String, String) = decode(store, v.value(), "word order").unwrap();
            words.insert(p(k.value()), order);
        }
    }
    for (k, v) in &words {
        out.push_str(&format!("{k} {v:?}\n"));
    }

    // A list as a line: its term, then its entries by path (doc ids differ between builds).
    let list_line = |term: &str, bytes: &[u8], what: &str| {
        let list = skillidx::postings::decode(bytes).expect(what);
        let mut by_path: Vec<(String, String)> = list
            .iter()
            .map(|x| (p(x.doc), format!("{:?}", x.stats)))
            .collect();
        by_path.sort();
        format!("{term} {by_path:?}\n")
    };
    out.push_str("== postings\n");
    // Each list's seed projection, as the `seed` table must hold it.
    let mut projections: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    if let Ok(table) = txn.open_table(t.postings()) {
        for row in table.iter().unwrap() {
            let (k, v) = row.unwrap();
            let projection =
                skillidx::postings::Projection::of_bytes(skillidx::fields::Field::Seed, v.value())
                    .expect("postings decode");
            if let Some(projection) = projection {
                projections.insert(k.value().to_owned(), projection);
            }
            out.push_str(&list_line(k.value(), v.value(), "postings decode"));
        }
    }

    out.push_str("== seed\n");
    let mut seed: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    if let Ok(table) = txn.open_table(t.seed()) {
        for row in table.iter().unwrap() {
            let (k, v) = row.unwrap();
            seed.insert(k.value().to_owned(), v.value().to_vec());
        }
    }
    let stale: Vec<&String> = seed
        .keys()
        .chain(projections.keys())
        .filter(|term| seed.get(*term) != projections.get(*term))
        .collect();
    assert!(
        stale.is_empty(),
        "the seed table is not the projection of the postings onto the seed field: {stale:?}"
    );
    // Equal to the projections: the digest shows them by path, like the lists.
    for (term, bytes) in &seed {
        out.push_str(&list_line(term, bytes, "seed list decode"));
    }

    out.push_str("== state\n");
    if let Ok(table) = txn.open_table(t.state()) {
        for row in table.iter().unwrap() {
            let (k, v) = row.unwrap();
            match k.value() {
                "stats" => {
                    let s: CorpusStats = decode(store, v.value(), "stats").unwrap();
                    assert!(
                        path_of.keys().all(|&d| d < s.next_doc),
                        "next_doc {} not above every doc id",
                        s.next_doc
                    );
                    out.push_str(&format!("stats {} {:?} {}\n", s.docs, s.sum_lens, s.os));
                }
                "config" => {
                    let c: ConfigSnapshot = decode(store, v.value(), "config").unwrap();
                    out.push_str(&format!("config {c:?}\n"));
                }
                "offer_rules" => {
                    let r: OfferRules = decode(store, v.value(), "offer rules").unwrap();
                    let mut docs: Vec<String> = r
                        .docs
                        .into_iter()
                        .map(|d| {
                            let path = p(d.doc);
                            format!("{path} {:?}", skillidx::offer::DocRule { doc: 0, ..d })
                        })
                        .collect();
                    docs.sort();
                    let mut clashes: Vec<Vec<(String, Option<String>)>> = r
                        .clashes
                        .into_iter()
                        .map(|g| {
                            g.into_iter()
                                .map(|m| (p(m.doc), m.local_category))
                                .collect()
                        })
                        .collect();
                    clashes.sort();
                    out.push_str(&format!("offer_rules {docs:?} {clashes:?}\n"));
                }
                "seed_generation" => {
                    // The stamp is a generation, which a rebuild does not keep: what counts is
                    // that this build's syncs leave it in step with the lists.
                    let stamp: u64 = decode(store, v.value(), "seed stamp").unwrap();
                    let stats: CorpusStats = decode(
                        store,
                        table.get("stats").unwrap().expect("stats").value(),
                        "stats",
                    )
                    .unwrap();
                    assert_eq!(stamp, stats.generation, "the seed projections are behind");
                    out.push_str("seed_generation in step\n");
                }
                other => out.push_str(&format!("{other} {:?}\n", v.value())),
            }
        }
    }
    out.push_str("== profiles\n");
    for (name, info) in store.profiles().unwrap() {
        out.push_str(&format!("{name} {info:?}\n"));
    }
    out
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The digest a clean build of the home's current files produces.
pub fn clean_digest(home: &Path, scratch: &Path) -> String {
    let _ = std::fs::remove_file(scratch);
    let out = bin()
        .args(["sync", "--rebuild", "--home"])
        .arg(home)
        .arg("--db")
        .arg(scratch)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "clean build: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    full_digest(scratch, "default")
}

/// Records, in `home`'s scan cache, the attestation Hermes' `tools/skills_guard.py::
/// scan_skill_cached` leaves for the project skill folder `dir` (the cache dir of
/// `skill_utils._project_scan_cache_dir`, source `project-local`): file
/// `<_content_digest>-<sha256("project-local\0")[:16]>.json`, the digest being SHA-256 over each
/// file's relative path, a NUL and its bytes, in path order.
///
/// skillidx does not scan; it reads this verdict (src/quarantine.rs). Hermes scans the folder
/// itself whenever the attestation is not current for its scanner, and the verdicts written
/// here are the ones its scan gives these files: "safe" for plain text (no finding,
/// `_determine_verdict`), "dangerous" for a folder holding a `.exe` (`_check_structure`:
/// `binary_file`, critical).
pub fn record_verdict(home: &Path, dir: &Path, verdict: &str) {
    use sha2::{Digest, Sha256};
    let mut files: Vec<(String, PathBuf)> = walkdir::WalkDir::new(dir)
        .min_depth(1)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let rel = e.path().strip_prefix(dir).unwrap();
            (rel.to_string_lossy().into_owned(), e.path().to_path_buf())
        })
        .collect();
    files.sort();
    let mut h = Sha256::new();
    for (rel, path) in files {
        h.update(rel.as_bytes());
        h.update([0]);
        h.update(std::fs::read(path).unwrap());
    }
    let digest = hex(&h.finalize());
    let source = hex(&Sha256::digest(b"project-local\0"))[..16].to_owned();
    let json = serde_json::json!({
        "bundle_hash": format!("sha256:{digest}"),
        "scanner_version": "skills-guard-v4",
        "source": "project-local",
        "source_url": "",
        "verdict": verdict,
        "trust_level": "community",
        "findings": [],
        "scanned_at": "2026-09-14T00:00:00+00:00",
        "summary": format!("{verdict} (recorded by the test)"),
    });
    let file = home.join(format!("cache/project_skill_scans/{digest}-{source}.json"));
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, json.to_string()).unwrap();
}
