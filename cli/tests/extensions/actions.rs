//! The extension API's actions that change the run, through the binary, recorded and replayed
//! with no Node: `pi.setModel` mid run (the next request goes to the new model), and a message
//! held for the turn's end (`triggerTurn: false`), which the next request carries, and a user
//! message a command sends while idle, which starts a run once the command is answered, and a
//! compaction asked mid run, which follows the aborted run once it has settled.

use serde_json::{json, Value};

use crate::common::{Env, MockLlm};
use crate::support::{
    drive_rpc_with_ui, fixture, node_path, replay_without_node, run, with_extension, with_host,
};

/// A handler's `pi.setModel` at a turn's end: refused for a provider without auth, applied for
/// the mock's reasoner (a `model_change` entry), whose model the run's next request names. The
/// recorded action holds the whole model, so the replay, with no Node and no catalog lookup,
/// gives the same bytes.
#[test]
fn a_model_an_extension_sets_mid_run_answers_the_next_request_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "ls", "arguments": "{}"}]},
        {"text": ["Listed."]},
    ]));
    let env = Env::new(&mock);
    let cassette = env.path("switch.jsonl");
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &fixture("switch.ts"),
        "list it",
    );
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    let models: Vec<Value> = mock.requests().iter().map(|r| r["model"].clone()).collect();
    assert_eq!(models, [json!("mock-model"), json!("mock-reasoner")]);
    let entry = recorded
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "entry_appended")
        .unwrap();
    assert_eq!(
        entry["entry"]["data"],
        json!({"refused": false, "set": true, "now": "mock-reasoner"})
    );

    let (code, replayed, stderr) = replay_without_node(&env, &cassette);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(replayed, recorded);
}

/// A handler's `pi.sendMessage` with `triggerTurn: false` while the agent streams: held for the
/// turn's end, then written, and carried by the run's next request; the replay, with no Node,
/// gives the same bytes.
#[test]
fn a_message_held_for_the_turn_end_is_in_the_next_request_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "read", "arguments": "{\"path\":\"a.txt\"}"}]},
        {"text": ["Read."]},
    ]));
    let env = Env::new(&mock);
    std::fs::write(env.cwd().join("a.txt"), "alpha\n").unwrap();
    let cassette = env.path("hold.jsonl");
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &fixture("hold.ts"),
        "read a.txt",
    );
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "no turn of its own: {recorded}");
    assert_eq!(
        requests[1]["messages"].as_array().unwrap().last().unwrap(),
        &json!({"role": "user", "content": [{"type": "text", "text": "The file is fresh."}]})
    );

    let (code, replayed, stderr) = replay_without_node(&env, &cassette);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(replayed, recorded);
}

/// An RPC prompt naming a command whose handler sends a user message while the agent is idle:
/// the prompt is answered `handled`, then the message's run follows (Pi 1.5.2's order); the
/// replay, with no Node and no client, gives the same bytes.
#[test]
fn a_user_message_a_command_sends_while_idle_starts_a_run_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("ask.jsonl");
    let extension = fixture("ask.ts");
    let mut command = env.rpc_command();
    command.args([
        "--no-session",
        "-e",
        extension.to_str().unwrap(),
        "--record",
        cassette.to_str().unwrap(),
    ]);
    with_host(&mut command, &path);
    let (recorded, lines) = drive_rpc_with_ui(&mut command, "/ask say hello");
    let kinds: Vec<&str> = lines
        .iter()
        .filter_map(|l| l["type"].as_str())
        .filter(|t| ["response", "agent_start", "agent_end"].contains(t))
        .collect();
    assert_eq!(
        kinds,
        ["response", "agent_start", "agent_end"],
        "{recorded}"
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0]["messages"].as_array().unwrap().last().unwrap(),
        &json!({"role": "user", "content": [{"type": "text", "text": "Please say hello."}]})
    );

    let (code, replayed, stderr) = replay_without_node(&env, &cassette);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(replayed, recorded);
}

/// A `turn_end` handler's `ctx.compact()` mid run (RPC): the run is aborted and heard to its
/// end (`agent_settled` aborted), then the compaction runs as a manual one whose summary
/// request carries the custom instructions, and no `compact` is answered (none was sent); the
/// replay, with no Node, gives the same bytes.
#[test]
fn a_compaction_an_extension_asks_mid_run_follows_the_settled_run_and_replays_without_node() {
    use std::io::{BufRead, BufReader, Write};
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"text": ["First answer about alpha."]},
        {"tool_calls": [{"name": "read", "arguments": "{\"path\":\"a.txt\"}"}]},
        {"text": ["## Goal\nMid-run summary."]},
    ]));
    let env = Env::new(&mock);
    env.write("a.txt", b"alpha\n");
    env.write_agent(
        "settings.json",
        r#"{"compaction": {"enabled": true, "keepRecentTokens": 10}}"#,
    );
    let cassette = env.path("compact-rpc.jsonl");
    let extension = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/compact_mid_run/extension.ts");
    let mut command = env.rpc_command();
    command.args([
        "--no-session",
        "-e",
        extension.to_str().unwrap(),
        "--record",
        cassette.to_str().unwrap(),
    ]);
    with_host(&mut command, &path);
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = Some(child.stdin.take().unwrap());
    let mut send = |line: Value| writeln!(stdin.as_mut().unwrap(), "{line}").unwrap();
    send(json!({"id": "p1", "type": "prompt", "message": "First prompt about alpha."}));
    let mut recorded = String::new();
    let mut kinds = Vec::new();
    let mut settled = 0;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        recorded.push_str(&line);
        recorded.push('\n');
        let event: Value = serde_json::from_str(&line).unwrap();
        let kind = event["type"].as_str().unwrap().to_owned();
        if kind == "agent_settled" {
            settled += 1;
            kinds.push(format!("agent_settled {}", event["aborted"]));
            if settled == 1 {
                send(json!({"id": "p2", "type": "prompt", "message": "Read a.txt."}));
            }
        } else if kind == "response" {
            kinds.push(format!("response {}", event["command"].as_str().unwrap()));
        } else if kind.starts_with("compaction") {
            kinds.push(kind.clone());
        }
        if kind == "compaction_end" {
            assert_eq!(event["result"]["summary"], "## Goal\nMid-run summary.");
            break;
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert_eq!(
        kinds,
        [
            "response prompt",
            "agent_settled false",
            "response prompt",
            "agent_settled true",
            "compaction_start",
            "compaction_end"
        ],
        "{recorded}"
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "no request for the aborted turn");
    let summary_prompt = requests[2]["messages"].to_string();
    assert!(
        summary_prompt.contains("Additional focus: keep the file name"),
        "{summary_prompt}"
    );

    let (code, replayed, stderr) = replay_without_node(&env, &cassette);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(replayed, recorded);
}
