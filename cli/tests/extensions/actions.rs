//! The extension API's actions that change the run, through the binary, recorded and replayed
//! with no Node: `pi.setModel` mid run (the next request goes to the new model), and a message
//! held for the turn's end (`triggerTurn: false`), which the next request carries, and a user
//! message a command sends while idle, which starts a run once the command is answered.

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
