//! `pi replay --tools live` starts the recording's MCP servers as a run does (Pi 1.5.2's lazy
//! way): those without `direct` tools connect in the background, a call of one of their tools
//! waits for its server, and a replay that calls none of them does not wait for them.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::tool_search::run_pi;
use super::{stderr, Scratch};

/// How late the server answers `initialize`.
const DELAY: Duration = Duration::from_secs(4);

fn slow_deferred(server: &Path) -> Value {
    json!({"t": {"command": server, "exposure": "deferred",
                 "env": {"MCP_TEST_START_DELAY_MS": DELAY.as_millis().to_string()}}})
}

/// `pi replay --tools live` of the scratch folder's `run.jsonl`: its output and how long it took.
fn replay_live(scratch: &Scratch) -> (std::process::Output, Duration) {
    let started = Instant::now();
    let output = scratch
        .pi(&[
            "replay",
            "--mode",
            "json",
            "--tools",
            "live",
            "--session-dir",
        ])
        .arg(scratch.path("live"))
        .arg(scratch.path("run.jsonl"))
        .output()
        .unwrap();
    (output, started.elapsed())
}

/// A recorded run that only runs `bash` beside a slow deferred server: running its tools again
/// does not wait for that server (the run did not either), and prints what the run printed.
#[test]
fn a_live_replay_does_not_wait_for_a_background_server_it_does_not_need() {
    let script = json!([
        {"tool_calls": [{"id": "call_1", "name": "bash", "arguments": {"command": "echo hi"}}]},
        {"text": ["Done."]},
    ]);
    let (ours, _, scratch, _) = run_pi(&script, &slow_deferred, &[], None);
    let (live, took) = replay_live(&scratch);
    assert!(live.status.success(), "{}", stderr(&live));
    assert!(took * 2 < DELAY, "the replay waited {took:?}");
    assert_eq!(
        String::from_utf8_lossy(&live.stdout),
        String::from_utf8_lossy(&ours.stdout)
    );
}

/// A recorded run whose search loaded the slow server's tool and called it: running its tools
/// again calls the tool once its server connected, and prints what the run printed.
#[test]
fn a_live_replay_calls_a_background_servers_tool_once_it_connected() {
    let script = json!([
        {"tool_calls": [{"id": "call_1", "name": "tool_search",
                         "arguments": {"query": "echo text"}}]},
        {"tool_calls": [{"id": "call_2", "name": "mcp__t__echo",
                         "arguments": {"text": "found it"}}]},
        {"text": ["Done."]},
    ]);
    let (ours, _, scratch, _) = run_pi(&script, &slow_deferred, &[], None);
    let (live, _) = replay_live(&scratch);
    assert!(live.status.success(), "{}", stderr(&live));
    assert_eq!(
        String::from_utf8_lossy(&live.stdout),
        String::from_utf8_lossy(&ours.stdout)
    );
}
