//! `skillidx search --batch` answers each JSON request line with one JSON line that echoes
//! the request's `id` (any JSON value), so scripts need not rely on the order of answers;
//! a request that fails gets an error line with its id too.

mod common;
use common::*;
use std::io::Write;
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
