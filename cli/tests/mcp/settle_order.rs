//! Several servers connecting in the background, as Pi 1.5.2's MCP extension has them: each
//! server's tools are registered when that server connects, in the order they connect, not
//! once every one has; a prompt lists the instructions of those connected by then.

use std::path::Path;

use serde_json::{json, Value};

use super::lazy::replay_without;
use super::tool_search::run_pi;
use super::{events, stderr};

/// Two deferred servers, the first configured answering `initialize` well after the second.
fn slow_then_fast(slow_ms: u64) -> impl Fn(&Path) -> Value {
    move |server: &Path| {
        json!({
            "slow": {"command": server, "exposure": "deferred",
                     "env": {"MCP_TEST_START_DELAY_MS": slow_ms.to_string()}},
            "fast": {"command": server, "exposure": "deferred",
                     "env": {"MCP_TEST_START_DELAY_MS": "200"}},
        })
    }
}

/// The `registerDeferredTools` actions of a cassette's hook decisions: each one's server (from
/// its tools' names), in the order recorded.
fn deferred_actions(cassette: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(cassette).unwrap();
    text.lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["input"]["kind"] == "hook_decided")
        .flat_map(|l| {
            l["input"]["outcome"]["actions"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter(|a| a["action"] == "registerDeferredTools")
        .map(|a| {
            let name = a["tools"][0]["tool"]["name"].as_str().unwrap_or_default();
            name.split("__").nth(1).unwrap_or_default().to_owned()
        })
        .collect()
}

/// A search waits for both servers; as in Pi 1.5.2 the one that connected first registered its
/// tools first, so the search finds its `echo` first, though it is configured second. Each
/// server's tools are their own recorded action, in the order they connected; the cassette
/// replays byte for byte with no server. The original (`PI_ORIGINAL`) gives the same requests
/// and results.
#[test]
fn background_servers_tools_arrive_in_the_order_they_connect() {
    let script = json!([
        {"tool_calls": [{"id": "call_1", "name": "tool_search",
                         "arguments": {"query": "echo text"}}]},
        {"text": ["Done."]},
    ]);
    let servers = slow_then_fast(1500);
    let run = |original| run_pi(&script, &servers, &[], original);
    let (ours, requests, scratch, server) = run(None);
    assert_eq!(stderr(&ours), "");
    let loaded = |output| {
        events(output)
            .into_iter()
            .find(|e| e["type"] == "tool_execution_end")
            .map(|e| e["result"]["details"]["loaded"].clone())
            .unwrap_or_default()
    };
    assert_eq!(loaded(&ours), json!(["mcp__fast__echo", "mcp__slow__echo"]));
    assert_eq!(
        deferred_actions(&scratch.path("run.jsonl")),
        ["fast", "slow"]
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
    assert_eq!(loaded(&theirs), loaded(&ours));
    assert_eq!(requests, their_requests);
}

/// The second prompt starts while only the fast server has connected: as in Pi 1.5.2 its
/// `mcp_servers` section carries that server's instructions, the slow one still listed by name
/// alone; the cassette replays byte for byte with no server. The original (`PI_ORIGINAL`)
/// sends the same requests.
#[test]
fn a_prompt_lists_the_instructions_of_the_background_servers_connected_by_then() {
    let script = json!([
        {"tool_calls": [{"id": "call_1", "name": "bash",
                         "arguments": {"command": "sleep 1"}}]},
        {"text": ["One."]},
        {"text": ["Two."]},
    ]);
    let servers = slow_then_fast(6000);
    let args = ["wait first"];
    let run = |original| run_pi(&script, &servers, &args, original);
    let (ours, requests, scratch, server) = run(None);
    assert_eq!(stderr(&ours), "");
    let lines = |requests: &[Value]| -> Vec<Vec<String>> {
        requests
            .iter()
            .map(|r| {
                let section = r["section"].as_str().unwrap_or_default();
                section
                    .lines()
                    .filter(|l| l.starts_with("- mcp__"))
                    .map(str::to_owned)
                    .collect()
            })
            .collect()
    };
    let first = vec![
        "- mcp__fast (tool_search)".to_owned(),
        "- mcp__slow (tool_search)".to_owned(),
    ];
    let later = vec![
        "- mcp__fast (tool_search): Tools for tests.".to_owned(),
        "- mcp__slow (tool_search)".to_owned(),
    ];
    assert_eq!(lines(&requests), [first.clone(), first, later]);
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
