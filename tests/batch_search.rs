//! `skillidx search --batch` answers each JSON request line with one JSON line that echoes
//! the request's `id` (any JSON value), so scripts need not rely on the order of answers;
//! a request that fails gets an error line with its id too. A line that is not UTF-8 gets
//! an error line of its own and the batch goes on; a batch outlives a damaged index file
//! that `sync --rebuild` replaces.

mod common;
use common::*;
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

#[test]
fn every_answer_echoes_its_request_id() {
    let h = Home::new();
    h.skill("c/alpha", "alpha", "about the alpha wombat");
    assert!(bin()
        .args(["sync", "--home"])
        .arg(h.path())
        .status()
        .unwrap()
        .success());
    let mut child = bin()
        .args(["search", "--batch", "--home"])
        .arg(h.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let requests = [
        r#"{"id": 7, "query": "wombat"}"#,
        r#"{"id": "q-2", "query": "nothing matches this"}"#,
        r#"{"id": {"turn": 3}, "query": "wombat", "profile": "nosuch"}"#,
        r#"{"id": [1, 2], "qery": "a typo in the key"}"#,
        r#"{"query": "wombat"}"#,
    ];
    {
        let mut stdin = child.stdin.take().unwrap();
        for r in requests {
            writeln!(stdin, "{r}").unwrap();
        }
    }
    let out = child.wait_with_output().unwrap();
    let answers: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), 5);
    assert_eq!(answers[0]["id"], 7);
    assert_eq!(answers[0]["hits"][0]["id"], "alpha");
    assert_eq!(answers[1]["id"], "q-2");
    assert_eq!(answers[1]["hits"], serde_json::json!([]));
    assert_eq!(answers[2]["id"], serde_json::json!({"turn": 3}));
    assert!(answers[2]["error"].as_str().unwrap().contains("nosuch"));
    assert_eq!(answers[3]["id"], serde_json::json!([1, 2]));
    assert!(answers[3]["error"].is_string());
    assert!(answers[4].get("id").is_none());
    assert_eq!(answers[4]["hits"][0]["id"], "alpha");
}

#[test]
fn a_line_that_is_not_utf8_gets_its_own_error_and_the_batch_goes_on() {
    let h = Home::new();
    h.skill("c/alpha", "alpha", "about the alpha wombat");
    assert!(bin()
        .args(["sync", "--home"])
        .arg(h.path())
        .status()
        .unwrap()
        .success());
    let mut child = bin()
        .args(["search", "--batch", "--home"])
        .arg(h.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"{\"query\":\"\xff\"}\n{\"id\": 2, \"query\":\"wombat\"}\n\xc3\n \xc2\xa0\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let answers: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), 4, "{answers:?}");
    assert!(answers[3]["error"]
        .as_str()
        .unwrap()
        .starts_with("line 4: no request"));
    assert!(answers[0]["error"]
        .as_str()
        .unwrap()
        .starts_with("line 1: not valid UTF-8"));
    assert_eq!(answers[1]["id"], 2);
    assert_eq!(answers[1]["hits"][0]["id"], "alpha");
    assert!(answers[2]["error"]
        .as_str()
        .unwrap()
        .starts_with("line 3: not valid UTF-8"));
}

/// A batch running while its index file is truncated, then rebuilt: the damage is an
/// answer that says to rebuild, and once `sync --rebuild` has replaced the file, the same
/// batch answers from the new one (it never repeats "Previous I/O error" forever).
#[test]
fn a_batch_outlives_a_truncated_index_once_it_is_rebuilt() {
    let h = Home::new();
    for i in 0..400 {
        h.skill(
            &format!("c{}/s{i}", i % 13),
            &format!("s{i}"),
            &format!("skill number {i} about topic{i} and quokka{}", i % 7),
        );
    }
    let sync = |extra: &[&str]| {
        bin()
            .arg("sync")
            .args(extra)
            .arg("--home")
            .arg(h.path())
            .output()
            .unwrap()
    };
    assert!(sync(&[]).status.success());
    let mut child = bin()
        .args(["search", "--batch", "--home"])
        .arg(h.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut ask = |q: &str| -> serde_json::Value {
        writeln!(stdin, "{}", serde_json::json!({ "query": q })).unwrap();
        stdin.flush().unwrap();
        serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap()
    };
    assert_eq!(ask("topic7")["hits"][0]["id"], "s7");
    let len = std::fs::metadata(h.db()).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(h.db())
        .unwrap()
        .set_len(len / 8)
        .unwrap();
    let mut saw_damage = false;
    for q in ["topic311", "quokka3 skill", "number 399"] {
        let a = ask(q);
        if let Some(e) = a["error"].as_str() {
            assert!(e.contains("damaged") && e.contains("--rebuild"), "{e}");
            saw_damage = true;
        }
    }
    assert!(saw_damage, "the truncated file answered every request");
    let out = sync(&["--rebuild"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for (q, want) in [("topic311", "s311"), ("number 399 topic399", "s399")] {
        let a = ask(q);
        assert_eq!(a["hits"][0]["id"], want, "{a}");
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

/// Requests that would size a buffer from the request (a `k` of 2^32) or hold a huge line
/// whole get an answer of their own, and the batch goes on (third hostile review).
#[test]
fn a_huge_k_or_a_huge_line_is_answered_and_the_batch_goes_on() {
    let h = Home::new();
    for i in 0..300 {
        h.skill(
            &format!("c/s{i}"),
            &format!("s{i}"),
            &format!("skill topic{i} thing"),
        );
    }
    assert!(bin()
        .args(["sync", "--home"])
        .arg(h.path())
        .status()
        .unwrap()
        .success());
    let mut child = bin()
        .args(["search", "--batch", "--home"])
        .arg(h.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, r#"{{"query":"skill topic5 thing","k":4294967296}}"#).unwrap();
    let huge = format!(r#"{{"query":"{}"}}"#, "x".repeat(3 << 20));
    writeln!(stdin, "{huge}").unwrap();
    writeln!(stdin, r#"{{"query":"topic7"}}"#).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let answers: Vec<serde_json::Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(answers.len(), 3, "{answers:?}");
    assert_eq!(answers[0]["hits"][0]["id"], "s5");
    assert!(answers[0]["hits"].as_array().unwrap().len() <= 300);
    assert!(answers[1]["error"]
        .as_str()
        .unwrap()
        .starts_with("line 2: longer than"));
    assert_eq!(answers[2]["hits"][0]["id"], "s7");
}
