//! Pi 1.5.2's `powershell` tool (Windows' shell) through the real binary on a platform that is
//! not Windows: `--tools` activates it, the request declares it and the prompt gives
//! PowerShell's rule, and a call fails with Pi's refusal (after the shell tools' first, empty
//! partial result) without running anything, whatever its arguments; the recording replays.
//! Conformance case `powershell_linux` compares the same with Pi 1.5.2 itself.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{Env, MockLlm};
use serde_json::{json, Value};

const REFUSAL: &str = "The powershell tool is only available on Windows.";

#[test]
fn powershell_is_declared_and_refuses_outside_windows_and_replays() {
    let mock = MockLlm::start(&json!([
        {"tool_calls": [
            {"name": "powershell", "arguments": "{\"command\":\"New-Item made.txt\"}"},
            {"name": "powershell", "arguments": "{\"command\":\"Get-ChildItem\",\"timeout\":-1}"}
        ]},
        {"text": ["It failed."]}
    ]));
    let env = Env::new(&mock);
    let cassette = env.path("powershell.jsonl");
    let out = env.run(&[
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--mode",
        "json",
        "--no-session",
        "--tools",
        "read,powershell",
        "--record",
        cassette.to_str().unwrap(),
        "-p",
        "Make a file.",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let ends: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_execution_end")
        .collect();
    assert_eq!(ends.len(), 2, "{}", out.stdout);
    for end in ends {
        assert_eq!(end["isError"], true);
        assert_eq!(
            end["result"]["content"],
            json!([{"type": "text", "text": REFUSAL}])
        );
    }
    let updates: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_execution_update")
        .collect();
    assert_eq!(updates.len(), 2, "{}", out.stdout);
    assert!(updates
        .iter()
        .all(|u| u["partialResult"] == json!({"content": []})));
    assert!(!env.cwd().join("made.txt").exists(), "nothing ran");
    assert_eq!(mock.declared_tools()[0], ["read", "powershell"]);
    let system = mock.requests()[0]["messages"][0]["content"].to_string();
    assert!(
        system.contains(
            "Use PowerShell for file operations like listing, searching, and finding files"
        ),
        "{system}"
    );
    assert!(
        system.contains("- powershell: Execute PowerShell commands"),
        "{system}"
    );

    let replayed = env.run(&["replay", cassette.to_str().unwrap()]);
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    assert_eq!(replayed.stdout, out.stdout);
}
