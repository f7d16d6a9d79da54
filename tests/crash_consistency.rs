//! Crash safety: a `skillidx sync` killed with SIGKILL at a random moment never costs the
//! index. After every kill the index opens, answers from the last committed state (a known
//! skill is found; every table equals either the state before the sync or the state the
//! sync was building), and the next complete sync ends in exactly the state of a clean build
//! (a digest of every table, doc ids replaced by paths).
//!
//! Runs on a copy of a few hundred real SKILL.md files of the shared corpus (skipped when
//! `../shared/corpus` is absent), with skills added, modified and deleted between kills.
//! `SKILLIDX_CRASH_KILLS` sets the number of kills (default 25; the long mode is 200+).

mod common;
use common::rand_lite::Rng;
use common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

/// Picks `n` SKILL.md files of the corpus, spread over it, deterministically.
fn corpus_sample(corpus: &Path, n: usize) -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = walkdir::WalkDir::new(corpus.join("skills"))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_name() == "SKILL.md" && e.file_type().is_file())
        .map(|e| e.into_path())
        .collect();
    all.sort();
    let step = (all.len() / n).max(1);
    all.into_iter().step_by(step).take(n).collect()
}

const SENTINEL: &str = "---\nname: crash-sentinel\ndescription: Zanzibar quokka sentinel that every committed state holds\n---\n# Sentinel\n\nNever edited.\n";

struct World {
    home: Home,
    pool: Vec<PathBuf>,
    /// Relative folder of each skill present, with the pool file it came from.
    present: BTreeMap<String, usize>,
    next: usize,
    rng: Rng,
}

impl World {
    fn add(&mut self) {
        let i = self.next % self.pool.len();
        self.next += 1;
        let rel = format!("c{}/s{}", i % 13, self.next);
        let bytes = std::fs::read(&self.pool[i]).unwrap();
        self.home.write_bytes(&rel, &bytes);
        self.present.insert(rel, i);
    }

    fn pick(&mut self) -> Option<String> {
        if self.present.is_empty() {
            return None;
        }
        let k = self.rng.below(self.present.len() as u64) as usize;
        self.present.keys().nth(k).cloned()
    }

    /// A batch of random edits: modify, add and delete skills.
    fn edit(&mut self) {
        let (m, a, d) = (1 + self.rng.below(12), self.rng.below(8), self.rng.below(8));
        for _ in 0..m {
            if let Some(rel) = self.pick() {
                let path = self.home.path().join("skills").join(&rel).join("SKILL.md");
                let mut text = std::fs::read(&path).unwrap();
                text.extend_from_slice(
                    format!("\nEdited {} times.\n", self.rng.below(1000)).as_bytes(),
                );
                if self.rng.chance(3) {
                    // Rewrite in place (not by rename): a torn write is what a crash of an
                    // editor leaves too, and the sync must take it as it is.
                    std::fs::write(&path, &text).unwrap();
                } else {
                    self.home.write_bytes(&rel, &text);
                }
            }
        }
        for _ in 0..a {
            self.add();
        }
        for _ in 0..d {
            if let Some(rel) = self.pick() {
                std::fs::remove_dir_all(self.home.path().join("skills").join(&rel)).unwrap();
                self.present.remove(&rel);
            }
        }
    }
}

fn sync_cli(home: &Path) -> std::process::Command {
    let mut c = bin();
    c.arg("sync")
        .arg("--home")
        .arg(home)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    c
}

fn sentinel_found(home: &Path) -> Result<(), String> {
    let out = bin()
        .args(["search", "zanzibar quokka", "--json", "--home"])
        .arg(home)
        .output()
        .unwrap();
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let hits: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    match hits.get(0).and_then(|h| h["id"].as_str()) {
        Some("crash-sentinel") => Ok(()),
        _ => Err(format!("sentinel not first: {hits}")),
    }
}

#[test]
fn sigkilled_syncs_never_cost_the_index() {
    let Some(corpus) = corpus() else {
        eprintln!("SKIPPED: ../shared/corpus is absent");
        return;
    };
    let kills: usize = std::env::var("SKILLIDX_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(25);
    let seed: u64 = std::env::var("SKILLIDX_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed_c0de);
    let mut w = World {
        home: Home::new(),
        pool: corpus_sample(&corpus, 400),
        present: BTreeMap::new(),
        next: 0,
        rng: Rng::new(seed),
    };
    for _ in 0..300 {
        w.add();
    }
    w.home.write("zz/sentinel", SENTINEL);
    let scratch = w.home.path().join("clean.redb");
    let db = w.home.db();

    let out = sync_cli(w.home.path()).output().unwrap();
    assert!(out.status.success());
    let mut committed = full_digest(&db, "default");
    assert_eq!(committed, clean_digest(w.home.path(), &scratch));

    // Calibrate: how long a sync of one batch of edits takes as a process.
    let mut longest = Duration::from_millis(50);
    for _ in 0..3 {
        w.edit();
        let t = Instant::now();
        assert!(sync_cli(w.home.path()).status().unwrap().success());
        longest = longest.max(t.elapsed());
    }
    committed = full_digest(&db, "default");
    let window_us = (longest.as_micros() as u64) * 13 / 10;
    eprintln!("seed {seed}: kill window 0..{window_us} µs, {kills} kills");

    let (mut survived, mut before_commit, mut after_commit, mut rebuilds) = (0, 0, 0, 0);
    let started = Instant::now();
    while survived < kills {
        w.edit();
        let target = clean_digest(w.home.path(), &scratch);
        // One or two killed syncs on the same files, sometimes a killed rebuild.
        let attempts = if w.rng.chance(3) { 2 } else { 1 };
        for _ in 0..attempts {
            let rebuild = w.rng.chance(6);
            let mut cmd = sync_cli(w.home.path());
            if rebuild {
                cmd.arg("--rebuild");
                rebuilds += 1;
            }
            let mut child = cmd.spawn().unwrap();
            std::thread::sleep(Duration::from_micros(w.rng.below(window_us)));
            let _ = child.kill(); // SIGKILL
            let status = child.wait().unwrap();
            // Every time: the index opens and answers from the last committed state.
            if let Err(e) = sentinel_found(w.home.path()) {
                panic!("after kill {survived} ({status:?}): {e}");
            }
            let now = full_digest(&db, "default");
            if now == committed {
                before_commit += 1;
            } else if now == target {
                after_commit += 1;
                committed = now;
            } else {
                std::fs::write("/tmp/skillidx-crash-now.txt", &now).ok();
                std::fs::write("/tmp/skillidx-crash-committed.txt", &committed).ok();
                std::fs::write("/tmp/skillidx-crash-target.txt", &target).ok();
                panic!(
                    "after kill {survived} (seed {seed}, rebuild {rebuild}): the index is neither \
                     the last commit nor the sync's result; digests in /tmp/skillidx-crash-*.txt"
                );
            }
            survived += 1;
        }
        // The next complete sync ends in exactly the state of a clean build.
        let out = sync_cli(w.home.path()).output().unwrap();
        assert!(
            out.status.success(),
            "sync after kill {survived}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let after = full_digest(&db, "default");
        if after != target {
            std::fs::write("/tmp/skillidx-crash-after.txt", &after).ok();
            std::fs::write("/tmp/skillidx-crash-target.txt", &target).ok();
            panic!("after kill {survived} (seed {seed}) a complete sync differs from a clean build; see /tmp/skillidx-crash-*.txt");
        }
        committed = after;
    }
    eprintln!(
        "kills survived: {survived} ({before_commit} before the commit, {after_commit} after it, \
         {rebuilds} of them rebuilds) in {:.1} s; {} skills at the end",
        started.elapsed().as_secs_f64(),
        w.present.len() + 1
    );
}

#[test]
fn the_digest_sees_every_table() {
    // The digest is only worth comparing if a change to any table shows in it.
    let h = Home::new();
    h.skill("a/one", "one", "alpha words");
    h.skill("a/two", "two", "beta words");
    h.config("skills:\n  platform_disabled:\n    telegram: [two]\n");
    h.sync();
    let d = full_digest(&h.db(), "default");
    for table in [
        "== docs",
        "== manifest",
        "== terms",
        "== words",
        "== postings",
        "== seed",
        "== state",
    ] {
        let section = d.split(table).nth(1).unwrap_or("");
        let section = section.split("\n==").next().unwrap_or("");
        assert!(section.trim().len() > 10, "{table} is empty:\n{d}");
    }
    assert!(d.contains("offer_rules [\""), "{d}");
    assert!(d.contains("platform_disabled: [\\\"telegram\\\"]"), "{d}");
    // A rebuild (new doc ids) has the same digest.
    h.sync_with(&skillidx::sync::SyncOptions {
        rebuild: true,
        ..Default::default()
    });
    assert_eq!(full_digest(&h.db(), "default"), d);
    h.skill("a/two", "two", "gamma words");
    h.sync();
    assert_ne!(full_digest(&h.db(), "default"), d);
}
