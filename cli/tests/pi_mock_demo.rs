//! The README's offline demo end to end: `pi-mock` (the testkit's command) runs this crate's real
//! `pi` against a conformance scenario with a tool call, and the events pi prints show the call,
//! its result and the model's answer.
//!
//! The test lives here because only this crate's tests see the `pi` binary
//! (`CARGO_BIN_EXE_pi`); `pi-mock` belongs to `pi-testkit`, so it is built (or found up to date)
//! with cargo itself, which also names the executable.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

/// The `pi-mock` executable, built if it is missing or out of date.
fn pi_mock() -> PathBuf {
    let out = Command::new(env!("CARGO"))
        .args([
            "build",
            "--quiet",
            "-p",
            "pi-testkit",
            "--bin",
            "pi-mock",
            "--message-format=json",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "building pi-mock: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find_map(|m| {
            let is_pi_mock = m["target"]["name"] == "pi-mock";
            m["executable"]
                .as_str()
                .filter(|_| is_pi_mock)
                .map(PathBuf::from)
        })
        .expect("cargo names the pi-mock executable")
}

#[test]
fn pi_mock_runs_pi_through_a_tool_call_scenario() {
    let keep = tempfile::tempdir().unwrap();
    let work = keep.path().join("work");
    let scenario = pi_testkit::kit_dir().join("scenarios/b_tool_read.json");
    let out = Command::new(pi_mock())
        .arg("--scenario")
        .arg(&scenario)
        .arg("--keep")
        .arg(&work)
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_pi"))
        .args([
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--mode",
            "json",
        ])
        .args(["-p", "Read hello.txt and tell me what it says"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );

    let events: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let kinds: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
    let first = |kind: &str| {
        kinds
            .iter()
            .position(|k| *k == kind)
            .unwrap_or_else(|| panic!("no {kind} in {kinds:?}"))
    };
    assert_eq!(kinds[0], "session");
    assert!(first("tool_execution_start") < first("tool_execution_end"));
    assert_eq!(kinds[kinds.len() - 2..], ["agent_end", "agent_settled"]);

    let start = &events[first("tool_execution_start")];
    assert_eq!(start["toolName"], "read");
    assert_eq!(start["args"], serde_json::json!({"path": "hello.txt"}));
    let end = &events[first("tool_execution_end")];
    assert_eq!(end["isError"], false);
    assert_eq!(
        end["result"]["content"][0]["text"],
        "hi there\nsecond line\n"
    );
    let answer = events
        .iter()
        .rev()
        .find(|e| e["type"] == "message_end")
        .unwrap();
    assert_eq!(
        answer["message"]["content"][0]["text"],
        "The file says: hi there."
    );

    // The kept work folder: pi ran in its cwd, and the mock logged both model calls.
    assert!(stderr.contains("work folder kept in"), "{stderr}");
    let session_cwd = events[0]["cwd"].as_str().unwrap();
    assert_eq!(
        PathBuf::from(session_cwd),
        work.canonicalize().unwrap().join("cwd")
    );
    let log = std::fs::read_to_string(work.join("requests.jsonl")).unwrap();
    let requests: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|r| r.get("event").is_none())
        .collect();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["headers"]["authorization"], "Bearer mock-key");
    let second = requests[1]["body"]["messages"].to_string();
    assert!(
        second.contains("hi there\\nsecond line"),
        "the tool result went back: {second}"
    );
}
