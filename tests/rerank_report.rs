//! `skillidx rerank-report`, the real binary on a reranker log as the plugin writes it.

mod common;

use common::{bin, Home};
use serde_json::{json, Value};
use std::path::Path;

/// One log line as `skillidx.rerank_log` writes it.
fn line(
    engine: &[&str],
    reranked: &[&str],
    outcome: &str,
    ms: Option<f64>,
    unknown: &[&str],
) -> String {
    json!({
        "ts": "2026-12-01T05:00:00.000Z",
        "session": "s-1",
        "query": "clean up docker",
        "model": "stub-model",
        "engine": engine,
        "reranked": reranked,
        "inject_k": 2,
        "latency_ms": ms,
        "outcome": outcome,
        "detail": null,
        "unknown": unknown,
        "tokens": 100,
    })
    .to_string()
}

/// A log of eight turns: four `ok` (two change the top-3), one of each failure, one `no_key`,
/// one `skipped`, plus a truncated last line (a crash mid-write).
fn write_log(path: &Path) {
    let abcd = ["a", "b", "c", "d"];
    let lines = [
        line(&abcd, &abcd, "ok", Some(100.0), &[]),
        line(&abcd, &["c", "a", "b", "d"], "ok", Some(200.0), &["ghost"]),
        line(
            &abcd,
            &["a", "b", "d", "c"],
            "ok",
            Some(300.0),
            &["ghost", "phantom"],
        ),
        line(&abcd, &["a", "b", "c", "d"], "ok", Some(400.0), &[]),
        line(&abcd, &abcd, "timeout", Some(1500.0), &[]),
        line(&abcd, &abcd, "http_error", Some(50.0), &[]),
        line(&abcd, &abcd, "no_key", None, &[]),
        line(&["a"], &["a"], "skipped", None, &[]),
    ];
    let mut text = lines.join("\n");
    text.push_str("\n{\"ts\": \"2026-12-01T05:00");
    std::fs::write(path, text).unwrap();
}

fn report_json(args: &[&str]) -> Value {
    let out = bin()
        .args(["rerank-report", "--json"])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_report_counts_turns_changes_failures_and_latency() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("rerank.jsonl");
    write_log(&log);
    let r = report_json(&["--log", log.to_str().unwrap()]);
    assert_eq!(r["turns"], 8);
    assert_eq!(r["malformed"], 1);
    assert_eq!(r["reranked"], 4);
    assert_eq!(r["top1_changed"], 1);
    assert_eq!(r["top3_changed"], 2);
    // Only the c-first turn changes the first two (inject_k) as a set.
    assert_eq!(r["injection_changed"], 1);
    assert_eq!(r["top3_changed_rate"], 0.5);
    assert_eq!(r["calls"], 6);
    assert_eq!(r["failed"], 2);
    assert_eq!(r["outcomes"]["ok"], 4);
    assert_eq!(r["outcomes"]["timeout"], 1);
    assert_eq!(r["outcomes"]["http_error"], 1);
    assert_eq!(r["outcomes"]["no_key"], 1);
    assert_eq!(r["outcomes"]["skipped"], 1);
    assert_eq!(r["outcomes"]["bad_reply"], 0);
    // Six calls made: 50, 100, 200, 300, 400, 1500 ms (nearest rank).
    assert_eq!(r["latency_ms"]["calls"], 6);
    assert_eq!(r["latency_ms"]["p50"], 200.0);
    assert_eq!(r["latency_ms"]["p90"], 1500.0);
    assert_eq!(r["latency_ms"]["p99"], 1500.0);
    assert_eq!(r["unknown_names"], 3);
    assert_eq!(r["turns_with_unknown"], 2);
    assert_eq!(r["top_unknown"][0], json!(["ghost", 2]));
    assert_eq!(r["tokens"], 800);

    let out = bin()
        .args(["rerank-report", "--log", log.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for want in [
        "turns: 8 (1 malformed lines skipped)",
        "reranked (ok): 4 of 8 turns; changed the top-1 in 1 (25.0%), the top-3 in 2 (50.0%)",
        "latency over 6 calls: p50 200 ms, p90 1500 ms, p99 1500 ms, max 1500 ms",
        "failed open: 2 of 6 calls",
        "outcomes: http_error 1, no_key 1, ok 4, skipped 1, timeout 1",
        "unknown names returned: 3 in 2 turns",
    ] {
        assert!(text.contains(want), "{want:?} not in:\n{text}");
    }
}

#[test]
fn the_rotated_log_is_read_first() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("rerank.jsonl");
    let old = dir.path().join("rerank.jsonl.1");
    std::fs::write(
        &old,
        line(&["a", "b"], &["b", "a"], "ok", Some(10.0), &[]) + "\n",
    )
    .unwrap();
    std::fs::write(
        &log,
        line(&["a", "b"], &["a", "b"], "bad_reply", Some(20.0), &[]) + "\n",
    )
    .unwrap();
    let r = report_json(&["--log", log.to_str().unwrap()]);
    assert_eq!(r["files"], json!([old, log]));
    assert_eq!(r["turns"], 2);
    assert_eq!(r["top1_changed"], 1);
    assert_eq!(r["outcomes"]["bad_reply"], 1);
}

#[test]
fn the_default_log_is_the_env_var_else_the_profile_home() {
    let home = Home::new();
    let logs = home.path().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::fs::write(
        logs.join("skillidx-rerank.jsonl"),
        line(&["a"], &["a"], "skipped", None, &[]) + "\n",
    )
    .unwrap();
    let r = report_json(&["--home", home.path().to_str().unwrap()]);
    assert_eq!(r["turns"], 1);
    assert_eq!(r["outcomes"]["skipped"], 1);

    let elsewhere = home.path().join("other.jsonl");
    std::fs::write(&elsewhere, "").unwrap();
    let out = bin()
        .args([
            "rerank-report",
            "--json",
            "--home",
            home.path().to_str().unwrap(),
        ])
        .env("SKILL_RETRIEVAL_RERANK_LOG", &elsewhere)
        .output()
        .unwrap();
    assert!(out.status.success());
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["turns"], 0);
    assert_eq!(r["latency_ms"]["p50"], Value::Null);
}

#[test]
fn a_missing_log_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("nope.jsonl");
    let out = bin()
        .args(["rerank-report", "--log", log.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("nope.jsonl") && err.contains("SKILL_RETRIEVAL_RERANK=1"),
        "{err}"
    );
}
