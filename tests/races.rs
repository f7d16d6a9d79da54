//! Races between real processes on one home, for a bounded time: several
//! `skillidx search --batch` processes answer while one sync runs in a loop and a second sync
//! is started at the same moment as each of its runs (now and then a `--rebuild`), and files
//! change under them. Zero errors, no answer from a half-applied sync, and the longest wait
//! any process saw is printed.
//!
//! How a half-applied sync would show: skills come in *groups* of [`GROUP`] that appear
//! atomically — a group version is written complete in a staging folder outside the skill
//! root and renamed into it in one step, and an old version is renamed out (then deleted)
//! only when two newer ones exist. Every sync therefore sees every group version it finds
//! whole, so every commit holds, for each group, its newest version with all of its
//! members. An answer in which the newest version of a group is short of members, holds a
//! member twice, or is older than one this searcher saw before, came from a torn or
//! out-of-order commit. Besides the groups, "churn" skills are rewritten in place, deleted
//! and recreated all the time; for those every hit must carry the marker it was found by.
//!
//! `SKILLIDX_RACE_SECS` sets the duration (default 10, at most 60).

mod common;
use common::*;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const GROUPS: usize = 8;
const GROUP: usize = 5;
const CHURN: usize = 10;
const SEARCHERS: usize = 3;

fn group_dir(skills: &Path, g: usize, v: usize) -> PathBuf {
    skills.join(format!("grp{g}-v{v}"))
}

fn member_text(g: usize, v: usize, m: usize) -> String {
    format!(
        "---\nname: grp{g}-v{v}-m{m}\ndescription: racemarker grp{g}marker g{g}v{v} member m{m} of group {g} version {v}\n---\n# Group {g}\n\nBody of version {v}.\n"
    )
}

/// Writes version `v` of group `g` into `staging`, then renames it into the root.
fn publish_group(staging: &Path, skills: &Path, g: usize, v: usize) {
    let tmp = staging.join(format!("grp{g}-v{v}"));
    for m in 0..GROUP {
        let d = tmp.join(format!("m{m}"));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("SKILL.md"), member_text(g, v, m)).unwrap();
    }
    std::fs::rename(&tmp, group_dir(skills, g, v)).unwrap();
}

/// Renames version `v` of group `g` out of the root (atomic disappearance), then deletes it.
fn retire_group(trash: &Path, skills: &Path, g: usize, v: usize) {
    let out = trash.join(format!("grp{g}-v{v}"));
    std::fs::rename(group_dir(skills, g, v), &out).unwrap();
    std::fs::remove_dir_all(&out).unwrap();
}

fn churn_text(c: usize, n: usize) -> String {
    format!(
        "---\nname: churn-{c}\ndescription: racemarker churnmarker churn{c}n{n} rewritten {n} times\n---\nBody {n}.\n"
    )
}

/// What one searcher process saw.
#[derive(Default)]
struct SearcherReport {
    answers: usize,
    errors: Vec<String>,
    worst: Duration,
}

fn searcher(home: PathBuf, stop: Arc<AtomicBool>) -> SearcherReport {
    let mut child = bin()
        .args(["search", "--batch", "--home"])
        .arg(&home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut r = SearcherReport::default();
    // Newest version of each group this searcher has seen.
    let mut newest_seen = [0usize; GROUPS];
    let k = GROUPS * GROUP * 4 + CHURN + 10;
    let mut turn = 0usize;
    while !stop.load(Ordering::Relaxed) {
        turn += 1;
        // Alternate: the whole picture, and one churn skill by its exact marker.
        let churn_query = turn.is_multiple_of(2).then_some(turn / 2 % CHURN);
        let query = match churn_query {
            None => "racemarker".to_owned(),
            Some(c) => format!("churn-{c} churnmarker"),
        };
        let asked = Instant::now();
        // The seed ranking: no relevance floor, so every group marker is found.
        writeln!(
            stdin,
            "{}",
            serde_json::json!({"query": query, "k": k, "ranking": "seed"})
        )
        .unwrap();
        let mut line = String::new();
        if out.read_line(&mut line).unwrap() == 0 {
            r.errors.push("searcher exited".into());
            break;
        }
        r.worst = r.worst.max(asked.elapsed());
        r.answers += 1;
        let v: serde_json::Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(e) => {
                r.errors.push(format!("bad line {line:?}: {e}"));
                continue;
            }
        };
        let Some(hits) = v["hits"].as_array() else {
            r.errors.push(format!("error answer: {line}"));
            continue;
        };
        let ids: Vec<&str> = hits.iter().filter_map(|h| h["id"].as_str()).collect();
        if churn_query.is_some() {
            // Every churn hit's description carries its own churn marker.
            for h in hits {
                let id = h["id"].as_str().unwrap_or("");
                let desc = h["description"].as_str().unwrap_or("");
                if let Some(c) = id.strip_prefix("churn-") {
                    if !desc.contains(&format!("churn{c}n")) {
                        r.errors
                            .push(format!("{id} shows another skill's text: {desc}"));
                    }
                }
            }
            continue;
        }
        let mut seen_ids = std::collections::HashSet::new();
        for id in &ids {
            if !seen_ids.insert(*id) {
                r.errors.push(format!("{id} twice in one answer"));
            }
        }
        // group → version → members.
        let mut groups: BTreeMap<usize, BTreeMap<usize, usize>> = BTreeMap::new();
        for h in hits {
            let id = h["id"].as_str().unwrap_or("");
            let Some(rest) = id.strip_prefix("grp") else {
                continue;
            };
            let parts: Vec<&str> = rest
                .split(['-', 'v', 'm'])
                .filter(|s| !s.is_empty())
                .collect();
            let (Some(g), Some(ver)) = (
                parts.first().and_then(|s| s.parse::<usize>().ok()),
                parts.get(1).and_then(|s| s.parse::<usize>().ok()),
            ) else {
                r.errors.push(format!("odd id {id}"));
                continue;
            };
            let desc = h["description"].as_str().unwrap_or("");
            if !desc.contains(&format!("g{g}v{ver} ")) {
                r.errors
                    .push(format!("{id} shows another skill's text: {desc}"));
            }
            *groups.entry(g).or_default().entry(ver).or_default() += 1;
        }
        for (g, seen) in newest_seen.iter_mut().enumerate() {
            let Some(versions) = groups.get(&g) else {
                r.errors.push(format!("group {g} missing from an answer"));
                continue;
            };
            let (&newest, &members) = versions.iter().next_back().unwrap();
            if members != GROUP {
                r.errors.push(format!(
                    "group {g} version {newest} has {members} of {GROUP} members: a half-applied commit"
                ));
            }
            if newest < *seen {
                r.errors.push(format!(
                    "group {g} went back from version {seen} to {newest}"
                ));
            }
            *seen = (*seen).max(newest);
        }
    }
    drop(stdin);
    let status = child.wait().unwrap();
    if !status.success() {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            use std::io::Read;
            let _ = e.read_to_string(&mut err);
        }
        r.errors.push(format!("searcher exit {status:?}: {err}"));
    }
    r
}

fn sync_cmd(home: &Path, rebuild: bool) -> std::process::Command {
    let mut cmd = bin();
    cmd.args(["sync", "--json", "--home"])
        .arg(home)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if rebuild {
        cmd.arg("--rebuild");
    }
    cmd
}

/// The lock wait (ms) a finished sync process reported, or its error.
fn sync_result(out: std::process::Output) -> Result<f64, String> {
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).map_err(|e| e.to_string())?;
    let reports = match v {
        serde_json::Value::Array(a) => a,
        other => vec![other],
    };
    Ok(reports
        .iter()
        .filter_map(|r| r["lock_wait_ms"].as_f64())
        .fold(0.0, f64::max))
}

fn run_sync(home: &Path, rebuild: bool) -> Result<f64, String> {
    sync_result(sync_cmd(home, rebuild).output().unwrap())
}

#[test]
fn searchers_and_two_syncs_race_while_groups_change() {
    let secs: u64 = std::env::var("SKILLIDX_RACE_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10)
        .clamp(1, 60);
    let h = Home::new();
    let skills = h.path().join("skills");
    let staging = h.path().join("staging");
    let trash = h.path().join("trash");
    std::fs::create_dir_all(&staging).unwrap();
    std::fs::create_dir_all(&trash).unwrap();
    // Every group starts with versions 1 and 2 present.
    let mut versions: Vec<Vec<usize>> = vec![Vec::new(); GROUPS];
    for (g, vs) in versions.iter_mut().enumerate() {
        for v in 1..=2 {
            publish_group(&staging, &skills, g, v);
            vs.push(v);
        }
    }
    for c in 0..CHURN {
        h.write(&format!("churn/c{c}"), &churn_text(c, 0));
    }
    run_sync(h.path(), false).expect("first sync");

    let stop = Arc::new(AtomicBool::new(false));
    let searchers: Vec<_> = (0..SEARCHERS)
        .map(|_| {
            let (home, stop) = (h.path().to_owned(), stop.clone());
            std::thread::spawn(move || searcher(home, stop))
        })
        .collect();

    // Sync loop A, and B started with each of A's runs (every 7th B is a rebuild): on
    // even rounds at the same moment, on odd rounds after a random delay of up to 40 ms,
    // so that B's base read, scan and commit fall at every point of A's run.
    let syncers = {
        let (home, stop) = (h.path().to_owned(), stop.clone());
        std::thread::spawn(move || {
            let (mut runs, mut failures, mut worst_lock) = (0usize, Vec::new(), 0f64);
            let mut worst_run = Duration::ZERO;
            let mut rng = rand_lite::Rng::new(0x5eed_5ace);
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                let a = sync_cmd(&home, false).spawn().unwrap();
                if runs % 2 == 1 {
                    std::thread::sleep(Duration::from_millis(rng.below(40)));
                }
                let b = sync_cmd(&home, runs % 7 == 6).spawn().unwrap();
                for child in [a, b] {
                    match sync_result(child.wait_with_output().unwrap()) {
                        Ok(ms) => worst_lock = worst_lock.max(ms),
                        Err(e) => failures.push(e),
                    }
                }
                worst_run = worst_run.max(t.elapsed());
                runs += 1;
            }
            (runs, failures, worst_lock, worst_run)
        })
    };

    // The files change under them.
    let started = Instant::now();
    let mut published = 0usize;
    let mut churn_writes = 0usize;
    let mut n = 0usize;
    while started.elapsed() < Duration::from_secs(secs) {
        n += 1;
        let g = n % GROUPS;
        let v = versions[g].last().unwrap() + 1;
        publish_group(&staging, &skills, g, v);
        versions[g].push(v);
        published += 1;
        if versions[g].len() > 3 {
            let old = versions[g].remove(0);
            retire_group(&trash, &skills, g, old);
        }
        for _ in 0..3 {
            let c = (n * 7 + churn_writes) % CHURN;
            let path = skills.join(format!("churn/c{c}/SKILL.md"));
            match churn_writes % 4 {
                // In place, by rename, deleted, recreated.
                0 => std::fs::write(&path, churn_text(c, n)).unwrap(),
                1 => {
                    h.write(&format!("churn/c{c}"), &churn_text(c, n));
                }
                2 => {
                    let _ = std::fs::remove_file(&path);
                }
                _ => {
                    h.write(&format!("churn/c{c}"), &churn_text(c, n));
                }
            }
            churn_writes += 1;
        }
        std::thread::sleep(Duration::from_millis(40));
    }
    stop.store(true, Ordering::Relaxed);
    let (rounds, failures, worst_lock, worst_round) = syncers.join().unwrap();
    let mut answers = 0;
    let mut worst_answer = Duration::ZERO;
    let mut errors = Vec::new();
    for s in searchers {
        let r = s.join().unwrap();
        answers += r.answers;
        worst_answer = worst_answer.max(r.worst);
        errors.extend(r.errors);
    }
    eprintln!(
        "races: {secs} s, {SEARCHERS} searchers gave {answers} answers (longest wait {:.1} ms); \
         {} sync runs ({rounds} rounds of two syncs, started together or B 0–40 ms after A, every 7th second one a \
         rebuild), longest lock wait {worst_lock:.1} ms, longest round {:.1} ms; {published} \
         group versions published, {churn_writes} churn writes",
        worst_answer.as_secs_f64() * 1e3,
        rounds * 2,
        worst_round.as_secs_f64() * 1e3,
    );
    assert!(failures.is_empty(), "sync failures: {failures:?}");
    assert!(
        errors.is_empty(),
        "{} bad answers, first: {:?}",
        errors.len(),
        &errors[..errors.len().min(5)]
    );
    assert!(answers > 0 && rounds > 0);
    // Readers never wait for a writer: a generous bound that still catches lock waits.
    assert!(
        worst_answer < Duration::from_secs(2),
        "a search waited {worst_answer:?}"
    );

    // Quiet now: one more sync ends in the state of a clean build, table for table (no
    // ghost document, no stale entry survives the races).
    run_sync(h.path(), false).expect("final sync");
    let scratch = tempfile::tempdir().unwrap();
    assert_eq!(
        full_digest(&h.db(), "default"),
        clean_digest(h.path(), &scratch.path().join("clean.redb"))
    );
    let clean = Home::new();
    copy_tree(&skills, &clean.path().join("skills"));
    clean.sync();
    for q in ["racemarker", "churnmarker churn-3", "grp2marker"] {
        let opts = skillidx::search::SearchOptions {
            k: 500,
            ..Default::default()
        };
        assert_eq!(h.search_with(q, &opts), clean.search_with(q, &opts), "{q}");
    }
}
