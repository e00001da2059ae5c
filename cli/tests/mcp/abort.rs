//! An abort while a `tool_search` waits for a server connecting in the background: Pi 1.5.2's
//! MCP extension stops waiting when the run's signal aborts (`waitForServers` races it), so the
//! search ends at once as an aborted call, not once the server connected.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

use pi_testkit::MockLlm;
use serde_json::{json, Value};

use super::{session_file, stderr, Scratch};

/// How late the server answers `initialize`.
const DELAY: Duration = Duration::from_secs(8);

/// An RPC run (`pi` given, or ours recording into `run.jsonl`) whose model searches while the
/// deferred server connects; an `abort` is sent a second after the search started. Returns the
/// lines it printed, how long after the abort the search ended, and the scratch folder.
fn abort_a_waiting_search(original: Option<(&Path, &Path)>) -> (Vec<Value>, Duration, Scratch) {
    let script = json!([
        {"tool_calls": [{"id": "call_1", "name": "tool_search",
                         "arguments": {"query": "echo text"}}]},
        {"text": ["Not reached."]},
    ]);
    let mock = MockLlm::start(&script);
    let scratch = Scratch::new(&mock);
    let server = scratch.server_copy();
    scratch.servers(json!({"t": {"command": server, "exposure": "deferred",
        "env": {"MCP_TEST_START_DELAY_MS": DELAY.as_millis().to_string()}}}));
    let mut command = scratch.pi(&[
        "--mode",
        "rpc",
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--session-dir",
    ]);
    command.arg(scratch.path("sessions"));
    if let Some((pi, node_bin)) = original {
        let args: Vec<_> = command.get_args().map(|a| a.to_owned()).collect();
        let envs: Vec<_> = command
            .get_envs()
            .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned())))
            .collect();
        let path = format!(
            "{}:{}",
            node_bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        command = Command::new(pi);
        command
            .args(args)
            .envs(envs)
            .env("PATH", path)
            .current_dir(scratch.path("cwd"));
    } else {
        command.arg("--record").arg(scratch.path("run.jsonl"));
    }
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, lines) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send((Instant::now(), line));
        }
    });
    let mut stdin = child.stdin.take().unwrap();
    let mut send = |command: Value| {
        writeln!(stdin, "{command}").unwrap();
        stdin.flush().unwrap();
    };
    send(json!({"id": "p", "type": "prompt", "message": "search"}));
    let mut seen = Vec::new();
    let (mut aborted_at, mut ended_at) = (None, None);
    let deadline = Instant::now() + 3 * DELAY;
    while !(seen.iter().any(|v: &Value| v["id"] == "ab")
        && seen.iter().any(|v| v["type"] == "agent_end"))
    {
        let left = deadline.saturating_duration_since(Instant::now());
        let (at, line) = lines
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("timed out; seen: {seen:#?}"));
        let value: Value = serde_json::from_str(&line).unwrap();
        if value["type"] == "tool_execution_start" && aborted_at.is_none() {
            std::thread::sleep(Duration::from_secs(1));
            aborted_at = Some(Instant::now());
            send(json!({"id": "ab", "type": "abort"}));
        }
        if value["type"] == "tool_execution_end" {
            ended_at = Some(at);
        }
        seen.push(value);
    }
    drop(stdin);
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}");
    let waited = ended_at.expect("the search ended") - aborted_at.expect("an abort was sent");
    (seen, waited, scratch)
}

/// The lines as they compare across runs: the types of the events (the streamed updates
/// aside), the search's result and the abort's answer.
fn shape(lines: &[Value]) -> Vec<Value> {
    lines
        .iter()
        .filter(|v| v["type"] != "message_update")
        .map(|v| match v["type"].as_str() {
            Some("tool_execution_end") => json!([v["type"], v["result"], v["isError"]]),
            Some("response") => v.clone(),
            _ => json!([v["type"], v["message"]["role"], v["message"]["stopReason"]]),
        })
        .collect()
}

/// The abort ends the waiting search at once (well before the server would have connected):
/// the call fails as aborted and the run ends, as in Pi 1.5.2 (`PI_ORIGINAL`), whose lines
/// have the same shape. The cassette replays byte for byte with the server deleted.
#[test]
fn an_abort_ends_a_search_waiting_for_a_background_server() {
    let (ours, waited, scratch) = abort_a_waiting_search(None);
    assert!(
        waited < DELAY / 4,
        "the search waited {waited:?} after the abort"
    );
    let end = ours
        .iter()
        .find(|v| v["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(
        end["result"],
        json!({"content": [{"type": "text", "text": "Operation aborted"}], "details": {}})
    );
    assert_eq!(end["isError"], true);

    std::fs::remove_file(scratch.path("mcp-server")).unwrap();
    let replayed = scratch
        .pi(&["replay", "--session-dir"])
        .arg(scratch.path("replayed"))
        .arg(scratch.path("run.jsonl"))
        .output()
        .unwrap();
    assert!(replayed.status.success(), "{}", stderr(&replayed));
    let printed: Vec<String> = ours.iter().map(Value::to_string).collect();
    let again: Vec<Value> = String::from_utf8_lossy(&replayed.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let again: Vec<String> = again.iter().map(Value::to_string).collect();
    assert_eq!(again, printed);
    assert_eq!(
        session_file(&scratch.path("replayed")),
        session_file(&scratch.path("sessions"))
    );

    let (Some(original), Some(install)) = (
        pi_testkit::original_pi(),
        pi_testkit::extension_host_install(),
    ) else {
        return;
    };
    let (theirs, their_wait, _) =
        abort_a_waiting_search(Some((&original, &install.join("node/bin"))));
    assert!(their_wait < DELAY / 4, "1.5.2 waited {their_wait:?}");
    assert_eq!(shape(&ours), shape(&theirs));
}

/// SIGINT to a json run whose search waits for the server: the run is aborted at once (the
/// search fails as aborted) and exits 130, as this harness ends a run on SIGINT (Pi 1.5.2 dies
/// there).
#[test]
fn sigint_ends_a_search_waiting_for_a_background_server_at_once() {
    let script = json!([
        {"tool_calls": [{"id": "call_1", "name": "tool_search",
                         "arguments": {"query": "echo text"}}]},
        {"text": ["Not reached."]},
    ]);
    let mock = MockLlm::start(&script);
    let scratch = Scratch::new(&mock);
    let server = scratch.server_copy();
    scratch.servers(json!({"t": {"command": server, "exposure": "deferred",
        "env": {"MCP_TEST_START_DELAY_MS": DELAY.as_millis().to_string()}}}));
    let mut child = scratch
        .pi(&[
            "--mode",
            "json",
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--session-dir",
        ])
        .arg(scratch.path("sessions"))
        .args(["-p", "search"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut printed = Vec::new();
    let mut signalled = None;
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        let value: Value = serde_json::from_str(&line).unwrap();
        if value["type"] == "tool_execution_start" && signalled.is_none() {
            std::thread::sleep(Duration::from_secs(1));
            let sent = Command::new("kill")
                .args(["-INT", &child.id().to_string()])
                .status()
                .unwrap();
            assert!(sent.success());
            signalled = Some(Instant::now());
        }
        printed.push(line);
    }
    let status = child.wait().unwrap();
    let took = signalled.expect("the search started").elapsed();
    // Without the abort reaching the wait, the run would end only at its signal grace.
    assert!(
        took < Duration::from_secs(1),
        "the run went on {took:?} after SIGINT"
    );
    assert_eq!(status.code(), Some(130));
    let end: Value = printed
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["type"] == "tool_execution_end")
        .expect("the search ended");
    assert_eq!(end["result"]["content"][0]["text"], "Operation aborted");
}
