//! A signal ends the session as Pi 1.5.2's print and RPC modes end it (`runtimeHost.dispose()`):
//! the run is aborted, then the extensions hear `session_shutdown` (reason `quit`), whose entry
//! the session file keeps, and the exit code is the signal's.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::common::{Env, MockLlm};
use crate::recording::lifecycle_entries;
use crate::support::{fixture, node_path, replay_without_node, with_extension, with_host};

/// The mock's script: a `bash` call that runs until killed (its process named `marker`).
fn sleeper(marker: &str) -> MockLlm {
    let command = format!("(exec -a {marker} sleep 30)");
    MockLlm::start(&json!([
        {"tool_calls": [{"id": "call_1", "name": "bash", "arguments": {"command": command}}]},
        {"text": "unreached"}
    ]))
}

/// Sends `signal` to `child` once its tool runs; its exit code.
fn signalled(mut child: std::process::Child, marker: &str, signal: &str) -> Option<i32> {
    pi_testkit::wait_until_running(marker, 1, Duration::from_secs(20));
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let code = child.wait().unwrap().code();
    pi_testkit::wait_until_gone(marker, Duration::from_secs(5));
    code
}

#[test]
fn sigterm_in_print_mode_tells_the_session_shutdown_after_the_abort() {
    let Some(path) = node_path() else { return };
    let marker = pi_testkit::unique_marker("shutdown-print");
    let mock = sleeper(&marker);
    let env = Env::new(&mock);
    let mut command = with_extension(&env, &["--mode", "json"], &fixture("lifecycle.ts"), "go");
    with_host(&mut command, &path);
    let child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    assert_eq!(signalled(child, &marker, "TERM"), Some(143));
    let entries = lifecycle_entries(&env);
    assert_eq!(
        entries.first().map(String::as_str),
        Some("session_start startup")
    );
    assert_eq!(
        entries.last().map(String::as_str),
        Some("session_shutdown quit"),
        "{entries:?}"
    );
}

/// The recording of a run a signal stopped holds the abort and the shutdown: its replay, with
/// no Node, stops the same way and prints the same bytes.
#[test]
fn sighup_in_rpc_mode_tells_the_session_shutdown_after_the_abort_and_replays_without_node() {
    use std::io::Write;
    let Some(path) = node_path() else { return };
    let marker = pi_testkit::unique_marker("shutdown-rpc");
    let mock = sleeper(&marker);
    let env = Env::new(&mock);
    let cassette = env.path("signalled.jsonl");
    let stdout = env.path("stdout.jsonl");
    let mut command = env.rpc_command();
    command.args(["-e", fixture("lifecycle.ts").to_str().unwrap()]);
    command.args(["--record", cassette.to_str().unwrap()]);
    with_host(&mut command, &path);
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{}", json!({"type": "prompt", "message": "go"})).unwrap();
    assert_eq!(signalled(child, &marker, "HUP"), Some(129));
    drop(stdin);
    let entries = lifecycle_entries(&env);
    assert_eq!(
        entries.last().map(String::as_str),
        Some("session_shutdown quit"),
        "{entries:?}"
    );
    let (code, replayed, stderr) = replay_without_node(&env, &cassette);
    assert_eq!(code, 129, "{stderr}");
    assert_eq!(replayed, std::fs::read_to_string(&stdout).unwrap());
}
