//! `skillidx mcp` over its transport: a session of newline-delimited JSON-RPC against a real
//! index, malformed lines answered with errors while the server keeps serving.
//! (`tests/python/test_agents.py` drives the real binary with the protocol's Python SDK.)

mod common;
use common::*;
use serde_json::{json, Value};
use skillidx::refresh::{LiveIndex, LiveOptions};

fn session(h: &Home, lines: &[&str]) -> Vec<Value> {
    let live = LiveIndex::locate(Some(h.path()), None, None, None, LiveOptions::default()).unwrap();
    live.prepare().unwrap();
    let mut out = Vec::new();
    skillidx::mcp::serve(
        &skillidx::mcp::Served::one("hermes", live),
        lines.join("\n").as_bytes(),
        &mut out,
    )
    .unwrap();
    String::from_utf8(out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn text(reply: &Value) -> &str {
    reply["result"]["content"][0]["text"].as_str().unwrap_or("")
}

#[test]
fn a_client_lists_searches_and_reads_and_bad_lines_get_errors() {
    let h = docker_and_shapefile_home();
    let replies = session(
        &h,
        &[
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            "{this is not json",
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_skills","arguments":{"query":"clean up old docker images"}}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"read_skill","arguments":{"name":"geo/shp"}}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"search_skills","arguments":{"query":"thanks a lot!"}}}"#,
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"nope","arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"search_skills","arguments":{"query":7}}}"#,
            r#"{"jsonrpc":"2.0","id":8,"method":"resources/list"}"#,
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"read_skill","arguments":{"name":"missing"}}}"#,
            &format!(
                r#"{{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{{"name":"search_skills","arguments":{{"query":"{}"}}}}}}"#,
                "x".repeat(skillidx::mcp::MAX_LINE_BYTES)
            ),
            r#"{"jsonrpc":"2.0","id":10,"method":"ping"}"#,
        ],
    );
    // One reply per request and per bad line, none for the notification.
    assert_eq!(replies.len(), 12, "{replies:#?}");
    assert_eq!(replies[0]["result"]["protocolVersion"], "2025-03-26");
    assert_eq!(replies[0]["result"]["serverInfo"]["name"], "skillidx");
    let names: Vec<&str> = replies[1]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["search_skills", "read_skill"]);
    assert_eq!(replies[2]["error"]["code"], -32700);
    assert_eq!(replies[2]["id"], Value::Null);
    let found = text(&replies[3]);
    assert!(
        found.contains("- **docker-cleanup** (devops/docker)"),
        "{found}"
    );
    assert!(found.contains(&format!(
        "- docker-cleanup: {}",
        h.path().join("skills/devops/docker/SKILL.md").display()
    )));
    assert!(!found.contains("shapefile"), "{found}");
    let read = text(&replies[4]);
    assert!(
        read.starts_with("Skill **shapefile-tools** (geo/shp), SKILL.md:"),
        "{read}"
    );
    assert!(text(&replies[5]).starts_with("No installed skill matches"));
    assert_eq!(replies[6]["error"]["code"], -32602);
    assert_eq!(replies[7]["error"]["code"], -32602);
    assert_eq!(replies[8]["error"]["code"], -32601);
    assert_eq!(replies[9]["result"]["isError"], true);
    // A line over the limit is refused whole, and the next one is served.
    assert_eq!(replies[10]["error"]["code"], -32600);
    assert_eq!(
        replies[11],
        json!({"jsonrpc": "2.0", "id": 10, "result": {}})
    );
}
