//! `skillidx hook claude-code|codex` against the hook contract: the event JSON Claude Code
//! documents for `UserPromptSubmit` on stdin; on exit 0, stdout is one JSON object whose
//! `hookSpecificOutput.additionalContext` carries the matching skills (under the 10,000
//! characters that reach the model whole), or nothing at all for small talk, bad input or a
//! missing index.

mod common;
use common::*;
use serde_json::Value;
use std::io::Write;
use std::process::{Command, Stdio};

/// Runs the hook with `stdin`; its exit code and stdout.
fn hook(h: &Home, agent: &str, stdin: &[u8]) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_skillidx"))
        .args(["hook", agent, "--home"])
        .arg(h.path())
        .env_remove("HERMES_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The hook may stop reading early (bad input): a closed pipe is not an error here.
    let _ = child.stdin.take().unwrap().write_all(stdin);
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
    )
}

/// The event as Claude Code's hook reference shows it.
fn event(prompt: &str) -> Vec<u8> {
    serde_json::json!({
        "session_id": "abc123",
        "transcript_path": "/home/u/.claude/projects/p/00893aaf.jsonl",
        "cwd": "/home/u/project",
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    })
    .to_string()
    .into_bytes()
}

fn home() -> Home {
    let h = docker_and_shapefile_home();
    h.sync();
    h
}

#[test]
fn a_request_gets_its_skills_as_additional_context() {
    let h = home();
    for agent in ["claude-code", "codex"] {
        let (code, out) = hook(&h, agent, &event("how do I clean up old docker images?"));
        assert_eq!(code, 0);
        let v: Value = serde_json::from_str(out.trim()).expect("one JSON object");
        let specific = &v["hookSpecificOutput"];
        assert_eq!(specific["hookEventName"], "UserPromptSubmit");
        let context = specific["additionalContext"].as_str().unwrap();
        assert!(
            context.contains("- **docker-cleanup** (devops/docker): Remove dangling docker"),
            "{context}"
        );
        let path = h.path().join("skills/devops/docker/SKILL.md");
        assert!(
            context.contains(&format!("  {}", path.display())),
            "{context}"
        );
        assert!(!context.contains("shapefile") && context.chars().count() < 10_000);
    }
}

#[test]
fn small_talk_bad_input_and_no_index_add_nothing() {
    let h = home();
    let empty = Home::new();
    for (home, stdin) in [
        (&h, event("thanks a lot, have a nice weekend!")),
        (&h, event("")),
        (&h, b"{not json".to_vec()),
        (&h, b"{\"prompt\": 42}".to_vec()),
        (&h, vec![0xff, 0xfe, 0x00]),
        (
            &h,
            br#"{"hook_event_name": "SessionStart", "prompt": "clean up docker images"}"#.to_vec(),
        ),
        (
            &h,
            br#"{"hook_event_name": 7, "prompt": "clean up docker images"}"#.to_vec(),
        ),
        (&h, Vec::new()),
        (&empty, event("how do I clean up old docker images?")),
    ] {
        let (code, out) = hook(home, "claude-code", &stdin);
        assert_eq!(
            (code, out.as_str()),
            (0, ""),
            "{:?}",
            String::from_utf8_lossy(&stdin)
        );
    }
    assert!(!empty.db().exists(), "the hook never creates an index");
}

#[test]
fn a_long_prompt_still_gets_a_context_that_reaches_the_model_whole() {
    let h = home();
    // 200 KB pasted after the request.
    let prompt = format!(
        "clean up the old docker images on this host, the log follows:\n{}",
        "container exited with code 137 after OOM\n".repeat(5_000)
    );
    let (code, out) = hook(&h, "claude-code", &event(&prompt));
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(out.trim()).expect("a context");
    let context = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(context.contains("docker-cleanup") && context.chars().count() < 10_000);
}

#[test]
fn long_entries_are_cut_at_whole_entries_under_the_cap() {
    // Six matching skills whose entries (each with its SKILL.md path, here ~2,000
    // characters deep) do not fit under the 10,000 characters that reach the model whole:
    // the context keeps the best entries that fit, each whole, and stops there.
    let h = Home::new();
    let deep: String = (0..8)
        .map(|i| {
            let words: Vec<String> = (0..24).map(|w| format!("area{i}x{w}")).collect();
            format!("{}/", words.join("-"))
        })
        .collect();
    // Six capabilities (no two names or descriptions alike, so none folds into another's
    // entry).
    let capabilities = [
        (
            "docker-prune",
            "Remove dangling Docker images to reclaim disk space",
        ),
        (
            "image-scan",
            "Scan Docker images for known vulnerabilities before release",
        ),
        (
            "slim-builds",
            "Shrink Docker images with multi-stage builds and slim bases",
        ),
        (
            "cosign-verify",
            "Sign and verify Docker images in a registry",
        ),
        (
            "registry-mirror",
            "Mirror Docker images between registries on a schedule",
        ),
        (
            "image-inventory",
            "List which Docker images each running service uses",
        ),
    ];
    for (name, what) in capabilities {
        h.skill(&format!("{deep}{name}"), name, what);
    }
    for n in 0..30 {
        h.skill(
            &format!("misc/filler-{n}"),
            &format!("filler-{n}"),
            "Format tables in plain text files",
        );
    }
    h.sync();
    let (code, out) = hook(&h, "claude-code", &event("manage our docker images"));
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(out.trim()).expect("a context");
    let context = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    let entries = context.lines().filter(|l| l.starts_with("- **")).count();
    assert!(
        context.chars().count() <= 9_500,
        "{}",
        context.chars().count()
    );
    assert!((1..6).contains(&entries), "{entries} entries: {context}");
    // Every entry shown is whole: its name and the end of its path.
    assert_eq!(context.matches("/SKILL.md").count(), entries, "{context}");
}
