//! Pi 1.5.2's MCP resource tools for a server that connects in the background (no `direct`
//! tool): registered `deferred` once it connected, they reach the session with the `tool_search`
//! hook decision that waited for it, so a cassette holds them and a replay needs no server;
//! `pi replay --tools live` registers them again as the server connects. A tool's resource link
//! is worded with how to read it when the resource tools reach its server.

use std::path::Path;

use serde_json::{json, Value};

use super::lazy::replay_without;
use super::tool_search::run_pi;
use super::{events, stderr};

/// The results of a json run's tool calls: name, content's texts, whether an error.
fn results(output: &std::process::Output) -> Vec<Value> {
    events(output)
        .into_iter()
        .filter(|e| e["type"] == "tool_execution_end")
        .map(|e| {
            let texts: Vec<Value> = e["result"]["content"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| c["text"].clone())
                .collect();
            json!([e["toolName"], texts, e["isError"]])
        })
        .collect()
}

/// A deferred server with resources that answers `initialize` half a second late.
fn slow_deferred_with_resources(server: &Path) -> Value {
    json!({"t": {"command": server, "exposure": "deferred",
                 "env": {"MCP_TEST_START_DELAY_MS": "500", "MCP_TEST_RESOURCES": "1"}}})
}

/// A deferred server with resources connects in the background: the search waits for it and
/// finds the resource tools (registered deferred, as Pi 1.5.2 registers them for a deferred
/// server), the model reads a resource. The original (`PI_ORIGINAL`) sends the same requests.
/// `pi replay --tools live` runs the read again once the server connected; the cassette
/// replays byte for byte with the server deleted, and an edited resource tool declaration in
/// the search's decision makes `pi replay --check` fail.
#[test]
fn a_background_servers_resource_tools_come_with_the_search_and_replay_without_it() {
    let script = json!([
        {"tool_calls": [{"id": "call_1", "name": "tool_search",
                         "arguments": {"query": "read mcp resource"}}]},
        {"tool_calls": [{"id": "call_2", "name": "read_mcp_resource",
                         "arguments": {"server": "t", "uri": "notes://first"}}]},
        {"text": ["Done."]},
    ]);
    let run = |original| run_pi(&script, &slow_deferred_with_resources, &[], original);
    let (ours, requests, scratch, server) = run(None);
    assert_eq!(stderr(&ours), "");
    let found = results(&ours);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(
        found[0][1][0]
            .as_str()
            .unwrap()
            .contains("- read_mcp_resource:"),
        "{found:?}"
    );
    assert_eq!(
        found[1],
        json!(["read_mcp_resource", ["The first note."], false])
    );
    let declared: Vec<&str> = requests[2]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(declared.contains(&"read_mcp_resource"), "{declared:?}");

    let live = scratch
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
    assert!(live.status.success(), "{}", stderr(&live));
    assert_eq!(results(&live), found);

    let replayed = replay_without(&scratch, &server);
    assert_eq!(
        String::from_utf8_lossy(&replayed.stdout),
        String::from_utf8_lossy(&ours.stdout)
    );
    let checked = scratch
        .pi(&["replay", "--check"])
        .arg(scratch.path("run.jsonl"))
        .output()
        .unwrap();
    assert!(checked.status.success(), "{}", stderr(&checked));

    // The attack: the resource tool the search loads, which came with its hook decision, edited.
    let text = std::fs::read_to_string(scratch.path("run.jsonl")).unwrap();
    let edited: String = text
        .lines()
        .map(|line| {
            let mut line: Value = serde_json::from_str(line).unwrap();
            if line["input"]["kind"] == "hook_decided" {
                for action in line["input"]["outcome"]["actions"]
                    .as_array_mut()
                    .into_iter()
                    .flatten()
                {
                    for tool in action["tools"].as_array_mut().into_iter().flatten() {
                        if tool["tool"]["name"] == "read_mcp_resource" {
                            tool["tool"]["description"] = json!("Reads, and more.");
                        }
                    }
                }
            }
            format!("{line}\n")
        })
        .collect();
    assert!(
        edited.contains("Reads, and more."),
        "no resource tool in a decision"
    );
    std::fs::write(scratch.path("edited.jsonl"), edited).unwrap();
    let refused = scratch
        .pi(&["replay", "--check"])
        .arg(scratch.path("edited.jsonl"))
        .output()
        .unwrap();
    assert!(!refused.status.success(), "an edited resource tool passed");

    let (Some(original), Some(install)) = (
        pi_testkit::original_pi(),
        pi_testkit::extension_host_install(),
    ) else {
        return;
    };
    let (theirs, their_requests, _, _) = run(Some((&original, &install.join("node/bin"))));
    assert_eq!(stderr(&theirs), "");
    assert_eq!(requests, their_requests);
    assert_eq!(results(&theirs), found);
}

/// A direct tool answering with a resource link: Pi 1.5.2 words it with how to read it when
/// the resource tools reach the tool's server, and without when the server has no resources.
/// The original (`PI_ORIGINAL`) gives the same results.
#[test]
fn a_resource_link_says_how_to_read_it_when_its_server_has_resources() {
    let script = json!([
        {"tool_calls": [{"id": "call_1", "name": "mcp__t__link", "arguments": {}},
                        {"id": "call_2", "name": "mcp__plain__link", "arguments": {}}]},
        {"text": ["Done."]},
    ]);
    let servers = |server: &Path| {
        json!({
            "t": {"command": server, "exposure": "direct",
                  "env": {"MCP_TEST_RESOURCES": "1", "MCP_TEST_LINK": "1"}},
            "plain": {"command": server, "exposure": "direct", "env": {"MCP_TEST_LINK": "1"}},
        })
    };
    // The two calls run in parallel: their ends come in the order they finished.
    let sorted = |output| {
        let mut found = results(output);
        found.sort_by_key(|r| r[0].to_string());
        found
    };
    let run = |original| run_pi(&script, &servers, &[], original);
    let (ours, _, _, _) = run(None);
    assert_eq!(stderr(&ours), "");
    let link = "[Resource notes://first \"The first note\" (text/plain, 2.0KB): What came first";
    assert_eq!(
        sorted(&ours),
        json!([
            [
                "mcp__plain__link",
                ["Here it is.", format!("{link}]")],
                false
            ],
            [
                "mcp__t__link",
                [
                    "Here it is.",
                    format!("{link}. Read it with read_mcp_resource (server \"t\")]")
                ],
                false
            ],
        ])
        .as_array()
        .unwrap()
        .clone()
    );
    let (Some(original), Some(install)) = (
        pi_testkit::original_pi(),
        pi_testkit::extension_host_install(),
    ) else {
        return;
    };
    let (theirs, _, _, _) = run(Some((&original, &install.join("node/bin"))));
    assert_eq!(sorted(&theirs), sorted(&ours));
}
