//! The extension API's actions that change the run, through the binary, recorded and replayed
//! with no Node: `pi.setModel` mid run (the next request goes to the new model), and a message
//! held for the turn's end (`triggerTurn: false`), which the next request carries, and a user
//! message a command sends while idle, which starts a run once the command is answered, and
//! `ctx.compact()`, mid run after the aborted run has settled, while idle before the command is
//! answered.

use std::path::Path;

use serde_json::{json, Value};

use crate::common::{Env, MockLlm};
use crate::support::{
    assert_replays_without_node, drive_rpc_with_ui, fixture, node_path, run, with_extension,
    with_host,
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

    assert_replays_without_node(&env, &cassette, &recorded);
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

    assert_replays_without_node(&env, &cassette, &recorded);
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

    assert_replays_without_node(&env, &cassette, &recorded);
}

/// Print mode's last prompt naming a command whose handler sends a user message while idle:
/// the message's `input` handlers run (their entry is written), then print mode ends before
/// its run starts, as Pi 1.5.2's print mode disposes the session then: no `before_agent_start`,
/// no request. The replay, with no Node, gives the same bytes.
#[test]
fn print_mode_ends_before_the_run_a_commands_user_message_would_start() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Never reached."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("ask.jsonl");
    let extension = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/print_idle/extension.ts");
    let mut command = env.command(&[
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--mode",
        "json",
        "--record",
        cassette.to_str().unwrap(),
        "-e",
        extension.to_str().unwrap(),
        "-p",
        "/ask say hello",
    ]);
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert!(mock.requests().is_empty(), "{recorded}");
    let entries: Vec<String> = recorded
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|e| match e["type"].as_str() {
            Some("entry_appended") => e["entry"]["customType"].as_str().unwrap().to_owned(),
            other => other.unwrap().to_owned(),
        })
        .collect();
    assert_eq!(entries, ["session", "asked", "input"], "{recorded}");

    assert_replays_without_node(&env, &cassette, &recorded);
}

/// A command asking for three runs while idle (RPC): the first note's run starts, the user
/// message beside it is refused with Pi 1.5.2's error, the second note steers the run, whose
/// one request carries both notes; the replay, with no Node and no client, gives the same bytes.
#[test]
fn runs_a_command_asks_beside_the_first_steer_it_or_are_refused_and_replay_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Noted both."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("mixed.jsonl");
    let extension = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/idle_runs_many/extension.ts");
    let mut command = env.rpc_command();
    command.args([
        "--no-session",
        "-e",
        extension.to_str().unwrap(),
        "--record",
        cassette.to_str().unwrap(),
    ]);
    with_host(&mut command, &path);
    let (recorded, lines) = drive_rpc_with_ui(&mut command, "/mixed");
    let errors: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "extension_error")
        .collect();
    assert_eq!(errors.len(), 1, "{recorded}");
    assert_eq!(errors[0]["event"], "send_user_message");
    let requests = mock.requests();
    assert_eq!(requests.len(), 1, "{recorded}");
    let sent = requests[0]["messages"].to_string();
    assert!(
        sent.contains("Note one") && sent.contains("Note two"),
        "{sent}"
    );
    assert!(!sent.contains("After the note."), "{sent}");

    assert_replays_without_node(&env, &cassette, &recorded);
}

/// Runs the conformance case `case`'s extension over RPC with compaction keeping 10 tokens:
/// `prompts` one after the other (the next once the run before has settled or the command is
/// answered), to the first `compaction_end`, recorded. The output, and the types of the lines
/// that answer, settle and compact.
fn compact_over_rpc(
    env: &Env,
    case: &str,
    prompts: &[&str],
    cassette: &Path,
) -> (String, Vec<String>) {
    use std::io::{BufRead, BufReader, Write};
    let path = node_path().unwrap();
    env.write("a.txt", b"alpha\n");
    env.write_agent(
        "settings.json",
        r#"{"compaction": {"enabled": true, "keepRecentTokens": 10}}"#,
    );
    let extension = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../conformance/extensions/{case}/extension.ts"));
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
    let mut prompts = prompts.iter();
    send(json!({"type": "prompt", "message": prompts.next().unwrap()}));
    let mut recorded = String::new();
    let mut kinds = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        recorded.push_str(&line);
        recorded.push('\n');
        let event: Value = serde_json::from_str(&line).unwrap();
        let kind = event["type"].as_str().unwrap().to_owned();
        if kind == "agent_settled" {
            kinds.push(format!("agent_settled {}", event["aborted"]));
            if let Some(prompt) = prompts.next() {
                send(json!({"type": "prompt", "message": prompt}));
            }
        } else if kind == "response" {
            kinds.push(format!("response {}", event["command"].as_str().unwrap()));
        } else if kind.starts_with("compaction") {
            kinds.push(kind.clone());
        }
        if kind == "compaction_end" {
            assert_eq!(
                event["result"]["summary"], "## Goal\nSquashed summary.",
                "{recorded}"
            );
            break;
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    (recorded, kinds)
}

/// A `turn_end` handler's `ctx.compact()` mid run (RPC): the run is aborted and heard to its
/// end (`agent_settled` aborted), then the compaction runs as a manual one whose summary
/// request carries the custom instructions, and no `compact` is answered (none was sent); the
/// replay, with no Node, gives the same bytes.
#[test]
fn a_compaction_an_extension_asks_mid_run_follows_the_settled_run_and_replays_without_node() {
    if node_path().is_none() {
        return;
    }
    let mock = MockLlm::start(&json!([
        {"text": ["First answer about alpha."]},
        {"tool_calls": [{"name": "read", "arguments": "{\"path\":\"a.txt\"}"}]},
        {"text": ["## Goal\nSquashed summary."]},
    ]));
    let env = Env::new(&mock);
    let cassette = env.path("compact-rpc.jsonl");
    let (recorded, kinds) = compact_over_rpc(
        &env,
        "compact_mid_run",
        &["First prompt about alpha.", "Read a.txt."],
        &cassette,
    );
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

    assert_replays_without_node(&env, &cassette, &recorded);
}

/// A command's `ctx.compact()` while idle (RPC): the compaction starts before the command is
/// answered `handled`, its summary request carries the command's arguments as instructions;
/// the replay, with no Node, gives the same bytes.
#[test]
fn a_compaction_a_command_asks_while_idle_starts_before_its_answer_and_replays_without_node() {
    if node_path().is_none() {
        return;
    }
    let mock = MockLlm::start(&json!([
        {"text": ["First answer about alpha."]},
        {"text": ["Second answer about beta."]},
        {"text": ["## Goal\nSquashed summary."]},
    ]));
    let env = Env::new(&mock);
    let cassette = env.path("squash-rpc.jsonl");
    let (recorded, kinds) = compact_over_rpc(
        &env,
        "compact_command",
        &[
            "First prompt about alpha.",
            "Second prompt about beta.",
            "/squash keep the names",
        ],
        &cassette,
    );
    assert_eq!(
        kinds,
        [
            "response prompt",
            "agent_settled false",
            "response prompt",
            "agent_settled false",
            "compaction_start",
            "response prompt",
            "compaction_end"
        ],
        "{recorded}"
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    let summary_prompt = requests[2]["messages"].to_string();
    assert!(
        summary_prompt.contains("Additional focus: keep the names"),
        "{summary_prompt}"
    );

    assert_replays_without_node(&env, &cassette, &recorded);
}
