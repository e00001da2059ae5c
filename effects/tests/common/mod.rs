//! What this crate's test suites share beyond `pi-testkit`: the mock model, running a prompt
//! through a session, waiting for processes to come and go, and running a test as an
//! unprivileged user.

#![allow(dead_code, unused_imports)]

pub mod writer;

use std::process::Command;
use std::time::{Duration, Instant};

use pi_core::model::Model;
use pi_effects::agent_session::AgentSession;
pub use pi_testkit::{processes_with, unique_marker, MockLlm};
use serde_json::Value;

/// The kit's `mock/mock-model` served by `mock`.
pub fn mock_model(mock: &MockLlm) -> Model {
    Model {
        id: "mock-model".into(),
        name: "Mock Model".into(),
        api: "openai-completions".into(),
        provider: "mock".into(),
        base_url: mock.url("/v1"),
        input: vec!["text".into()],
        context_window: 128_000,
        max_tokens: 16_384,
        ..Model::default()
    }
}

/// Waits until at least `count` processes with `marker` run (up to ten seconds, then fails).
pub async fn wait_for_processes(marker: &str, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while processes_with(marker).len() < count {
        assert!(Instant::now() < deadline, "the processes did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Waits up to two seconds for the processes with `marker` to be gone.
pub async fn assert_all_gone(marker: &str) {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let left = processes_with(marker);
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "left behind: {left:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Root reads and writes anything, so permission errors only show to other users. When this
/// process is root, runs the test named `test` again in this test binary as `nobody` (through
/// `setpriv`) and asserts that it passed; returns true, and the caller stops. Otherwise returns
/// false and the caller runs the test itself.
pub fn rerun_unprivileged(test: &str) -> bool {
    if std::env::var_os("PI_TEST_UNPRIVILEGED").is_some() || !is_root() {
        return false;
    }
    let exe = std::env::current_exe().unwrap();
    let output = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env("PI_TEST_UNPRIVILEGED", "1")
        .output()
        .expect("setpriv runs the test as nobody");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && text.contains("1 passed"),
        "as nobody: {text}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    true
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        == Some("0")
}

/// Runs one prompt; returns the events as JSON values.
pub async fn prompt(session: &mut AgentSession, text: &str) -> Vec<Value> {
    let mut events = Vec::new();
    session
        .prompt(text, Vec::new(), |e| {
            events.push(serde_json::to_value(e).unwrap())
        })
        .await
        .unwrap();
    events
}

/// The events' types, without the `message_update`s.
pub fn types(events: &[Value]) -> Vec<&str> {
    events
        .iter()
        .filter_map(|e| e["type"].as_str())
        .filter(|t| *t != "message_update")
        .collect()
}

/// The event types of one prompt answered by a `read` tool call, then a text answer: the
/// system message (Pi 1.5.2 records the prompt before the first request), the user's, the
/// assistant's, the tool result, the answer, and the prompt settled (Pi 1.5.2's
/// `agent_settled`).
pub const READ_THEN_ANSWER: [&str; 19] = [
    "agent_start",
    "turn_start",
    "message_start",
    "message_end",
    "message_start",
    "message_end",
    "message_start",
    "message_end",
    "tool_execution_start",
    "tool_execution_end",
    "message_start",
    "message_end",
    "turn_end",
    "turn_start",
    "message_start",
    "message_end",
    "turn_end",
    "agent_end",
    "agent_settled",
];
