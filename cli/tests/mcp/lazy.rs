//! Servers whose tools are reached through `tool_search` connect in the background in Pi 1.5.2:
//! the first prompt does not wait for them, a search waits for them, and a prompt after they
//! connected lists their instructions in the `mcp_servers` section.

use std::path::Path;

use serde_json::{json, Value};

use super::tool_search::run_pi;
use super::{session_file, stderr};

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

    std::fs::remove_file(&server).unwrap();
    let replayed = scratch
        .pi(&["replay", "--mode", "json", "--session-dir"])
        .arg(scratch.path("replayed"))
        .arg(scratch.path("run.jsonl"))
        .output()
        .unwrap();
    assert!(replayed.status.success(), "{}", stderr(&replayed));
    assert_eq!(
        String::from_utf8_lossy(&replayed.stdout),
        String::from_utf8_lossy(&ours.stdout)
    );
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
    let (theirs, their_requests, _, _) = run(Some((&original, &install.join("node/bin"))));
    assert_eq!(stderr(&theirs), "");
    assert_eq!(requests, their_requests);
}
