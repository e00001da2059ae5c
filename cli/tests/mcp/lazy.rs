//! Servers whose tools are reached through `tool_search` connect in the background in Pi 1.5.2:
//! the first prompt does not wait for them, a search waits for them, a prompt after they
//! connected lists their instructions in the `mcp_servers` section, and one that fails is
//! reported once while the run goes on.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use pi_testkit::MockLlm;
use serde_json::{json, Value};

use super::tool_search::run_pi;
use super::{session_file, stderr, Scratch};

/// The server's `mcp_servers` line in each request's section.
fn section_lines(requests: &[Value]) -> Vec<String> {
    requests
        .iter()
        .map(|r| {
            let section = r["section"].as_str().unwrap_or_default();
            section
                .lines()
                .find(|l| l.starts_with("- mcp__t"))
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

/// A deferred server without a description that answers `initialize` a second late: the first
/// prompt's section lists it by name alone (Pi renders it before the server connected), its
/// search waits for it, and the second prompt's section carries its instructions, the change
/// recorded as a system message by that prompt's first turn. The original Pi 1.5.2
/// (`PI_ORIGINAL`) sends the same requests; the cassette replays byte for byte with the server
/// gone.
#[test]
fn a_later_prompt_lists_a_deferred_servers_instructions_as_pi_1_5_2_does() {
    let script = json!([
        {"tool_calls": [{"id": "call_1", "name": "tool_search",
                         "arguments": {"query": "echo text"}}]},
        {"text": ["One."]},
        {"text": ["Two."]},
    ]);
    let servers = |server: &Path| {
        json!({"t": {"command": server, "exposure": "deferred",
                     "env": {"MCP_TEST_START_DELAY_MS": "1000"}}})
    };
    let args = ["search first"];
    let run = |original| run_pi(&script, &servers, &args, original);
    let (ours, requests, scratch, server) = run(None);
    assert_eq!(stderr(&ours), "");
    assert_eq!(
        section_lines(&requests),
        [
            "- mcp__t (tool_search)",
            "- mcp__t (tool_search)",
            "- mcp__t (tool_search): Tools for tests."
        ]
    );
    // The second prompt's run starts with the system message of the changed section, after
    // the first prompt's and the one declaring the tool the search loaded.
    let system_ends: Vec<Value> = super::events(&ours)
        .into_iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "system")
        .collect();
    assert_eq!(system_ends.len(), 3, "{system_ends:?}");
    assert_eq!(
        system_ends[2]["message"]["sections"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["mcp_servers"]
    );

    let replayed = replay_without(&scratch, &server);
    assert_eq!(
        String::from_utf8_lossy(&replayed.stdout),
        String::from_utf8_lossy(&ours.stdout)
    );

    let (Some(original), Some(install)) = (
        pi_testkit::original_pi(),
        pi_testkit::extension_host_install(),
    ) else {
        return;
    };
    let (theirs, their_requests, _, _) = run(Some((&original, &install.join("node/bin"))));
    assert_eq!(stderr(&theirs), "");
    assert_eq!(requests, their_requests);
}

/// A deferred server without a description that answers `initialize` a second late, and no
/// search: the first prompt's run takes longer than that (a `sleep 2`), so when the second
/// prompt starts the server has connected and, as in Pi 1.5.2, that prompt's section carries
/// its instructions (its `before_agent_start` decision brings them). The original
/// (`PI_ORIGINAL`) sends the same requests; the cassette replays byte for byte without it.
#[test]
fn a_server_that_connected_during_the_first_run_is_in_the_next_prompts_section() {
    let script = json!([
        {"tool_calls": [{"id": "call_1", "name": "bash",
                         "arguments": {"command": "sleep 2"}}]},
        {"text": ["One."]},
        {"text": ["Two."]},
    ]);
    let servers = |server: &Path| {
        json!({"t": {"command": server, "exposure": "deferred",
                     "env": {"MCP_TEST_START_DELAY_MS": "1000"}}})
    };
    let args = ["wait first"];
    let run = |original| run_pi(&script, &servers, &args, original);
    let (ours, requests, scratch, server) = run(None);
    assert_eq!(stderr(&ours), "");
    assert_eq!(
        section_lines(&requests),
        [
            "- mcp__t (tool_search)",
            "- mcp__t (tool_search)",
            "- mcp__t (tool_search): Tools for tests."
        ]
    );
    let replayed = replay_without(&scratch, &server);
    assert_eq!(
        String::from_utf8_lossy(&replayed.stdout),
        String::from_utf8_lossy(&ours.stdout)
    );

    let (Some(original), Some(install)) = (
        pi_testkit::original_pi(),
        pi_testkit::extension_host_install(),
    ) else {
        return;
    };
    let (theirs, their_requests, _, _) = run(Some((&original, &install.join("node/bin"))));
    assert_eq!(stderr(&theirs), "");
    assert_eq!(requests, their_requests);
}

/// `pi replay` of the run recorded in `scratch` with the server's binary deleted: it succeeds and
/// writes the recorded session file again; its output, to compare with the recording's.
pub(super) fn replay_without(scratch: &Scratch, server: &Path) -> std::process::Output {
    std::fs::remove_file(server).unwrap();
    let replayed = scratch
        .pi(&["replay", "--mode", "json", "--session-dir"])
        .arg(scratch.path("replayed"))
        .arg(scratch.path("run.jsonl"))
        .output()
        .unwrap();
    assert!(replayed.status.success(), "{}", stderr(&replayed));
    assert_eq!(
        session_file(&scratch.path("replayed")),
        session_file(&scratch.path("sessions"))
    );
    replayed
}

/// A json run of `script` with the agent dir's servers `servers` (given the test server's
/// path), recorded into `run.jsonl`; each stdout line with the time since the process started.
fn timed_run(
    script: &Value,
    servers: &dyn Fn(&Path) -> Value,
) -> (Vec<(Duration, Value)>, String, Scratch, PathBuf) {
    let mock = MockLlm::start(script);
    let scratch = Scratch::new(&mock);
    let server = scratch.server_copy();
    scratch.servers(servers(&server));
    let mut command = scratch.pi(&[
        "--mode",
        "json",
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--session-dir",
    ]);
    command
        .arg(scratch.path("sessions"))
        .arg("--record")
        .arg(scratch.path("run.jsonl"))
        .args(["-p", "echo something"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = command.spawn().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let lines: Vec<(Duration, Value)> = stdout
        .lines()
        .map(|line| {
            (
                started.elapsed(),
                serde_json::from_str(&line.unwrap()).unwrap(),
            )
        })
        .collect();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    (lines, stderr(&output), scratch, server)
}

/// When the first line of `kind` came.
fn first(lines: &[(Duration, Value)], kind: &str, role: Option<&str>) -> Duration {
    lines
        .iter()
        .find(|(_, e)| e["type"] == kind && role.is_none_or(|r| e["message"]["role"] == r))
        .unwrap_or_else(|| panic!("no {kind}"))
        .0
}

/// A search, then a call of what it loaded.
fn search_then_echo() -> Value {
    json!([
        {"tool_calls": [{"id": "call_1", "name": "tool_search",
                         "arguments": {"query": "echo text"}}]},
        {"tool_calls": [{"id": "call_2", "name": "mcp__t__echo",
                         "arguments": {"text": "found it"}}]},
        {"text": ["Done."]},
    ])
}

/// A deferred server that answers `initialize` 4 s late: as Pi 1.5.2, the first request goes
/// out without waiting for it (well before half that delay since the process started), the
/// model's `tool_search` waits for it (its result comes after the delay) and loads its tool,
/// which is called. The cassette replays byte for byte, session file included, with the
/// server's binary deleted: its tools came to the session as the search's hook decision.
#[test]
fn the_first_request_does_not_wait_for_a_slow_deferred_server_but_its_search_does() {
    let delay = Duration::from_millis(4000);
    let servers = |server: &Path| {
        json!({"t": {"command": server, "exposure": "deferred",
                     "env": {"MCP_TEST_START_DELAY_MS": delay.as_millis().to_string()}}})
    };
    let (lines, said, scratch, server) = timed_run(&search_then_echo(), &servers);
    assert_eq!(said, "");
    let asked = first(&lines, "message_start", Some("assistant"));
    let searched = first(&lines, "tool_execution_end", None);
    assert!(
        asked * 2 < delay,
        "the first request waited: {asked:?} of a {delay:?} delay"
    );
    assert!(searched >= delay, "the search did not wait: {searched:?}");
    let ends: Vec<&Value> = lines
        .iter()
        .map(|(_, e)| e)
        .filter(|e| e["type"] == "tool_execution_end")
        .collect();
    assert_eq!(
        ends[0]["result"]["details"]["loaded"],
        json!(["mcp__t__echo"])
    );
    assert_eq!(ends[1]["result"]["content"][0]["text"], "found it");

    let replayed = replay_without(&scratch, &server);
    let recorded: Vec<&Value> = lines.iter().map(|(_, e)| e).collect();
    let again: Vec<Value> = super::events(&replayed);
    assert_eq!(again.iter().collect::<Vec<_>>(), recorded);
}

/// A deferred server that fails to start beside a slow one: the run goes on, the search loads
/// the slow server's tool, and the failure is said once on stderr, in Pi's words.
#[test]
fn a_background_server_that_fails_is_reported_once_and_the_run_goes_on() {
    let servers = |server: &Path| {
        json!({
            "t": {"command": server, "exposure": "deferred",
                  "env": {"MCP_TEST_START_DELAY_MS": "1000"}},
            "bad": {"command": server, "args": ["--fail-start"], "exposure": "deferred"},
        })
    };
    let (lines, said, _, _) = timed_run(&search_then_echo(), &servers);
    assert_eq!(
        said.matches("MCP servers need attention:\n").count(),
        1,
        "{said}"
    );
    assert!(said.contains("\n  bad: failed: "), "{said}");
    assert!(said.ends_with("Run /mcp to fix.\n"), "{said}");
    let ends: Vec<&Value> = lines
        .iter()
        .map(|(_, e)| e)
        .filter(|e| e["type"] == "tool_execution_end")
        .collect();
    assert_eq!(ends[1]["result"]["content"][0]["text"], "found it");
}
