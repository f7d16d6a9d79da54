//! Several real processes on one home: searchers answer from the last committed index
//! without errors or long waits while syncs race each other and files change under them.

mod common;
use common::*;
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SKILLS: usize = 60;

fn write_generation(h: &Home, generation: usize) {
    for i in 0..SKILLS {
        // Every skill of one generation carries the same marker, so a half-applied sync
        // would show up as a mix of markers in one answer.
        h.skill(
            &format!("c{}/s{i}", i % 5),
            &format!("skill-{i}"),
            &format!("marker gen{generation} topic{i} shared words"),
        );
    }
}

fn cli_sync(h: &Home) {
    assert!(bin()
        .arg("sync")
        .arg("--home")
        .arg(h.path())
        .status()
        .unwrap()
        .success());
}

#[test]
fn searches_and_syncs_in_parallel_processes() {
    let h = Home::new();
    write_generation(&h, 0);
    cli_sync(&h);

    let stop = Arc::new(AtomicBool::new(false));
    let run_for = Duration::from_secs(6);
    let mut searchers = Vec::new();
    for _ in 0..3 {
        let home = h.path().to_owned();
        searchers.push(std::thread::spawn(move || {
            let mut child = bin()
                .args(["search", "--batch", "--home"])
                .arg(&home)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let mut stdin = child.stdin.take().unwrap();
            let mut out = BufReader::new(child.stdout.take().unwrap());
            let (mut answers, mut errors, mut worst) = (0usize, Vec::new(), Duration::ZERO);
            let started = Instant::now();
            while started.elapsed() < run_for {
                let asked = Instant::now();
                // The seed ranking has no relevance floor, so a word in every skill finds them all.
                writeln!(
                    stdin,
                    r#"{{"query": "marker shared words", "k": 100, "ranking": "seed"}}"#
                )
                .unwrap();
                let mut line = String::new();
                out.read_line(&mut line).unwrap();
                worst = worst.max(asked.elapsed());
                answers += 1;
                let v: serde_json::Value = serde_json::from_str(&line).unwrap();
                let Some(hits) = v["hits"].as_array() else {
                    errors.push(line);
                    continue;
                };
                // Files are replaced one by one, so a sync may see a mix of generations on
                // disk; what it commits must still be whole: every skill present once.
                if hits.len() != SKILLS {
                    errors.push(format!("{} hits", hits.len()));
                }
            }
            drop(stdin);
            child.wait().unwrap();
            (answers, errors, worst)
        }));
    }
    let mut syncers = Vec::new();
    for _ in 0..2 {
        let home = h.path().to_owned();
        let stop = stop.clone();
        syncers.push(std::thread::spawn(move || {
            let (mut runs, mut failures) = (0usize, Vec::new());
            while !stop.load(Ordering::Relaxed) {
                let out = bin().arg("sync").arg("--home").arg(&home).output().unwrap();
                runs += 1;
                if !out.status.success() {
                    failures.push(String::from_utf8_lossy(&out.stderr).into_owned());
                }
            }
            (runs, failures)
        }));
    }
    let started = Instant::now();
    let mut generation = 0;
    while started.elapsed() < run_for {
        generation += 1;
        write_generation(&h, generation);
        std::thread::sleep(Duration::from_millis(150));
    }
    stop.store(true, Ordering::Relaxed);
    let mut total = 0;
    let mut worst = Duration::ZERO;
    for s in searchers {
        let (answers, errors, w) = s.join().unwrap();
        assert!(errors.is_empty(), "search errors: {errors:?}");
        total += answers;
        worst = worst.max(w);
    }
    let mut sync_runs = 0;
    for s in syncers {
        let (runs, failures) = s.join().unwrap();
        assert!(failures.is_empty(), "sync failures: {failures:?}");
        sync_runs += runs;
    }
    eprintln!("{total} answers, {sync_runs} syncs, {generation} generations written, longest answer {worst:?}");
    // Readers never wait for a writer: a generous bound that still catches lock waits.
    assert!(worst < Duration::from_secs(2), "a search waited {worst:?}");
    // The last sync ends in the state of a clean build.
    cli_sync(&h);
    let clean = Home::new();
    write_generation(&clean, generation);
    clean.sync();
    assert_eq!(
        h.search_with("marker topic7", &Default::default()),
        clean.search_with("marker topic7", &Default::default())
    );
}
