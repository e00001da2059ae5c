//! SIGTERM and SIGHUP during a print-mode or RPC run: the run is aborted, every process a bash
//! command started is killed (Pi kills its detached children), and the exit code is Pi's (143, 129).
//! SIGINT likewise, exiting 130 (where Pi dies and leaves its commands running).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{Env, MockLlm};
use serde_json::json;

/// Sends `signal` to `pi` once `count` processes carrying `marker` run; the code it exits with.
fn signal_once_running(pi: &mut Child, signal: &str, marker: &str, count: usize) -> Option<i32> {
    pi_testkit::wait_until_running(marker, count, Duration::from_secs(20));
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &pi.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    pi.wait().unwrap().code()
}

fn signal_ends_the_run(signal: &str, expected_code: i32) {
    let marker = pi_testkit::unique_marker(&format!("signal-{signal}"));
    let command = format!(
        "(exec -a {marker}-child sleep 30) & bash -c '(exec -a {marker}-grandchild sleep 30) & wait'"
    );
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"id": "call_1", "name": "bash", "arguments": {"command": command}}]},
        {"text": "unreached"}
    ]));
    let env = Env::new(&mock);
    let mut pi = env
        .command(&[
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "-p",
            "Run it",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let code = signal_once_running(&mut pi, signal, &marker, 2);
    assert_eq!(code, Some(expected_code));
    pi_testkit::wait_until_gone(&marker, Duration::from_secs(2));
}

#[test]
fn sigterm_kills_the_command_and_exits_143() {
    signal_ends_the_run("TERM", 143);
}

#[test]
fn sighup_kills_the_command_and_exits_129() {
    signal_ends_the_run("HUP", 129);
}

#[test]
fn sigint_kills_the_command_and_exits_130() {
    signal_ends_the_run("INT", 130);
}

#[test]
fn sigterm_in_rpc_mode_kills_a_running_bash_command() {
    use std::io::Write;
    let marker = pi_testkit::unique_marker("rpc-signal");
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    let mut pi = env
        .rpc_command()
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = pi.stdin.take().unwrap();
    let command = format!("(exec -a {marker}-child sleep 30) & wait");
    writeln!(
        stdin,
        "{}",
        json!({"id": "b", "type": "bash", "command": command})
    )
    .unwrap();
    assert_eq!(signal_once_running(&mut pi, "TERM", &marker, 1), Some(143));
    pi_testkit::wait_until_gone(&marker, Duration::from_secs(2));
    drop(stdin);
}

/// A print run recorded while a signal stopped it mid-tool replays as it ran: the cassette
/// holds the abort, so `pi replay` prints the same lines and exits with the same code.
#[test]
fn a_run_a_signal_stopped_mid_tool_replays_as_it_ran() {
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        let marker = pi_testkit::unique_marker(&format!("replay-{signal}"));
        let mock = MockLlm::start(&json!([
            {"tool_calls": [{"id": "call_1", "name": "bash",
                "arguments": {"command": format!("(exec -a {marker} sleep 30); echo never")}}]},
            {"text": "unreached"}
        ]));
        let env = Env::new(&mock);
        let cassette = env.path("stopped.jsonl");
        let stdout = env.path("stdout.jsonl");
        let mut pi = env
            .command(&[
                "--provider",
                "mock",
                "--model",
                "mock-model",
                "--mode",
                "json",
                "--record",
                cassette.to_str().unwrap(),
                "-p",
                "Run it",
            ])
            .stdin(Stdio::null())
            .stdout(std::fs::File::create(&stdout).unwrap())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        assert_eq!(signal_once_running(&mut pi, signal, &marker, 1), Some(code));
        let recorded = std::fs::read_to_string(&stdout).unwrap();

        let replay = Command::new(env!("CARGO_BIN_EXE_pi"))
            .arg("replay")
            .arg(&cassette)
            .env("HOME", env.path("home"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let replayed = String::from_utf8_lossy(&replay.stdout);
        assert_eq!(
            replay.status.code(),
            Some(code),
            "{signal}: {}",
            String::from_utf8_lossy(&replay.stderr)
        );
        assert_eq!(replayed, recorded, "{signal}");
    }
}
