//! Extension tools and hook points through the binary, recorded and replayed: a tool run in
//! Node, Harbor's gate, rewrite and turn cap, a message that steers, `pi replay --extensions live`,
//! and a `cache_warming_decision` override; each recording replays with no Node on PATH.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::common::{Env, MockLlm};
use crate::support::{
    assert_chaos_without_node, assert_replays_without_node, fixture, json_lines, node_path, run,
    with_extension, with_host,
};

#[test]
fn an_extension_tool_runs_in_node_is_recorded_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "greet", "arguments": "{\"name\":\"Ada\"}"}]},
        {"text": ["Greeted."]},
    ]));
    let env = Env::new(&mock);
    let cassette = env.path("greet.jsonl");
    let extension = fixture("greet.ts");
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &extension,
        "greet Ada",
    );
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("greeted.txt")).unwrap(),
        format!("Ada in {}", env.cwd().canonicalize().unwrap().display()),
        "the tool did not run in the extension host, or pi.exec not in the session's folder"
    );
    // Declared after the built-ins, as Pi 1.5.2 declares an extension's tool.
    let requests = mock.requests();
    let tools = requests[0]["tools"].as_array().unwrap();
    assert_eq!(
        tools.last().unwrap(),
        &json!({"type": "function", "function": {
            "name": "greet",
            "description": "Greets someone by name.",
            "parameters": {"type": "object", "required": ["name"],
                "properties": {"name": {"type": "string", "description": "Who to greet"}}},
        }})
    );
    let system = requests[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("- greet: Greet someone by name"),
        "{system}"
    );
    let events = json_lines(&recorded);
    let update = events
        .iter()
        .find(|e| e["type"] == "tool_execution_update")
        .unwrap();
    assert_eq!(update["partialResult"]["details"], json!({"step": 1}));
    let end = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(end["result"]["content"][0]["text"], "Hello, Ada!");

    std::fs::remove_file(env.cwd().join("greeted.txt")).unwrap();
    assert_replays_without_node(&env, &cassette, &recorded);
    assert!(
        !env.cwd().join("greeted.txt").exists(),
        "the replay ran the tool"
    );
    assert_chaos_without_node(&env, &cassette);
    assert!(
        !env.cwd().join("greeted.txt").exists(),
        "a chaos run ran the tool"
    );
}

/// Harbor's pattern through the binary: an extension rewrites the system prompt in
/// `before_agent_start` (from the active tools and model it reads), a `tool_call` gate blocks a
/// bash command, and `turn_end` aborts after two turns. Its handlers run in Node with Pi's
/// runner; what they decided is recorded, so the replay reproduces the run with no Node. What
/// is asserted is what Pi 1.5.2 (`pi -e cap.ts`) does with the same script.
#[test]
fn extension_hooks_gate_rewrite_and_cap_and_replay_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "bash", "arguments": "{\"command\":\"rm -rf stuff\"}"}]},
        {"tool_calls": [{"name": "bash", "arguments": "{\"command\":\"echo kept > kept.txt\"}"}]},
        {"text": ["unreached: the cap ends the run first"]},
    ]));
    let env = Env::new(&mock);
    std::fs::create_dir_all(env.cwd().join("stuff")).unwrap();
    let cassette = env.path("cap.jsonl");
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &fixture("cap.ts"),
        "clean up",
    );
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert!(env.cwd().join("stuff").exists(), "the gate let rm -rf run");
    assert!(
        env.cwd().join("kept.txt").exists(),
        "the allowed call did not run"
    );
    let requests = mock.requests();
    for request in &requests[..2] {
        let system = request["messages"][0]["content"].as_str().unwrap();
        assert!(
            system.ends_with("\n\nCapped at 2 turns on mock-model; tools: read,bash,edit,write."),
            "{system}"
        );
    }
    let blocked = requests[1]["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(
        blocked,
        &json!({"role": "tool", "content": "rm -rf is not allowed here", "tool_call_id": "call_mock_1_0"})
    );
    let events = json_lines(&recorded);
    // As in Pi 1.5.2: the abort asked at the second turn's end ends the third turn before any
    // answer (its message aborted, its turn_end seen by the handler too), and the run settles
    // as aborted.
    let turn_ends: Vec<&Value> = events.iter().filter(|e| e["type"] == "turn_end").collect();
    assert_eq!(turn_ends.len(), 3, "{recorded}");
    assert_eq!(turn_ends[2]["message"]["stopReason"], "aborted");
    assert!(
        !recorded.contains("unreached"),
        "the cap let a third answer in"
    );
    let appended: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "entry_appended")
        .map(|e| &e["entry"]["data"]["turns"])
        .collect();
    assert_eq!(appended, [&json!(1), &json!(2), &json!(3)]);
    assert_eq!(
        events.last().unwrap(),
        &json!({"type": "agent_settled", "aborted": true})
    );

    std::fs::remove_file(env.cwd().join("kept.txt")).unwrap();
    assert_replays_without_node(&env, &cassette, &recorded);
    assert!(
        !env.cwd().join("kept.txt").exists(),
        "the replay ran the tool"
    );
    assert_chaos_without_node(&env, &cassette);
}

/// The loop's events reach the extensions that handle them, each before it goes out: a
/// response's updates (with Pi's `partial`), a message's end, a tool's end; a follow-up an
/// `agent_end` handler queues continues the run. The cassette keeps each update's notification
/// without the message so far (the model's lines hold it), and replays with no Node.
#[test]
fn the_loops_events_reach_the_extensions_and_replay_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "read", "arguments": "{\"path\":\"a.txt\"}"}]},
        {"text": ["Listed ", "it ", "all."]},
        {"text": ["Again."]},
    ]));
    let env = Env::new(&mock);
    std::fs::write(env.cwd().join("a.txt"), "alpha\n").unwrap();
    let cassette = env.path("observe.jsonl");
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &fixture("observe.ts"),
        "list it",
    );
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    let events = json_lines(&recorded);
    let written: Vec<(&Value, &Value)> = events
        .iter()
        .filter(|e| e["type"] == "entry_appended")
        .map(|e| (&e["entry"]["customType"], &e["entry"]["data"]))
        .collect();
    let updates = |text: &Value| {
        events
            .iter()
            .filter(|e| e["type"] == "message_update")
            .filter(|e| text == "call" || e["assistantMessageEvent"]["type"] != "toolcall_delta")
            .count()
    };
    assert!(updates(&json!("call")) > 0, "{recorded}");
    assert_eq!(
        written
            .iter()
            .map(|(t, _)| t.as_str().unwrap())
            .collect::<Vec<_>>(),
        ["updates", "tool", "updates", "updates"],
        "{recorded}"
    );
    let counted: u64 = written
        .iter()
        .filter(|(t, _)| *t == "updates")
        .map(|(_, d)| d["updates"].as_u64().unwrap())
        .sum();
    assert_eq!(counted as usize, updates(&json!("call")));
    assert_eq!(written[1].1, &json!({"name": "read", "isError": false}));
    // The follow-up continued the run: two runs, one settlement, three requests.
    let count = |kind: &str| events.iter().filter(|e| e["type"] == kind).count();
    assert_eq!((count("agent_end"), count("agent_settled")), (2, 1));
    assert_eq!(mock.requests().len(), 3);
    let lines = std::fs::read_to_string(&cassette).unwrap();
    let mut payloads = Vec::new();
    for line in lines.lines() {
        hook_payloads(&serde_json::from_str(line).unwrap(), &mut payloads);
    }
    let updates_asked: Vec<&Value> = payloads
        .iter()
        .filter(|p| p["type"] == "message_update")
        .collect();
    assert_eq!(updates_asked.len(), updates(&json!("call")));
    assert!(
        updates_asked
            .iter()
            .all(|p| p.get("message").is_none() && p.get("assistantMessageEvent").is_some()),
        "{updates_asked:?}"
    );

    assert_replays_without_node(&env, &cassette, &recorded);
    assert_chaos_without_node(&env, &cassette);
}

/// The entries the extension of `lifecycle.ts` wrote in the session file, in order, and where
/// the session's messages stand among them.
pub fn lifecycle_entries(env: &Env) -> Vec<String> {
    let files = env.session_files();
    assert_eq!(files.len(), 1, "{files:?}");
    std::fs::read_to_string(&files[0])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter_map(|e| match e["type"].as_str() {
            Some("custom") => Some(format!(
                "{} {}",
                e["data"]["heard"].as_str().unwrap(),
                e["data"]["reason"].as_str().unwrap()
            )),
            Some("message") => Some(e["message"]["role"].as_str().unwrap().to_owned()),
            _ => None,
        })
        .collect()
}

/// Print mode tells the extensions of the session's start after the header, before the first
/// prompt, and of its end once the last run is over, as Pi 1.5.2 binds and disposes (what
/// their handlers do is not printed: Pi subscribes its printer after binding). Both are
/// recorded: the replay, with no Node, prints the same bytes.
#[test]
fn print_mode_tells_the_session_start_and_shutdown_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("lifecycle.jsonl");
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &fixture("lifecycle.ts"),
        "hi",
    );
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        lifecycle_entries(&env),
        [
            "session_start startup",
            "system",
            "user",
            "assistant",
            "session_shutdown quit"
        ]
    );
    assert!(!recorded.contains("entry_appended"), "{recorded}");

    assert_replays_without_node(&env, &cassette, &recorded);
}

/// The payloads of the hook points a cassette line records, wherever they are in it.
fn hook_payloads(value: &Value, found: &mut Vec<Value>) {
    match value {
        Value::Object(fields) => {
            if fields.get("kind") == Some(&json!("hook")) {
                if let Some(payload) = fields.get("payload") {
                    found.push(payload.clone());
                }
            }
            fields.values().for_each(|v| hook_payloads(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| hook_payloads(v, found)),
        _ => {}
    }
}

/// A handler's `pi.sendMessage` while the agent streams steers the run into another turn whose
/// request carries the message (Pi 1.5.2's `sendCustomMessage`), and the replay needs no Node.
#[test]
fn an_extensions_message_steers_the_run_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Done."]}, {"text": ["Checked."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("remind.jsonl");
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &fixture("remind.ts"),
        "fix it",
    );
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    let requests = mock.requests();
    assert_eq!(
        requests.len(),
        2,
        "the message starts another turn: {recorded}"
    );
    // Pi's convertToLlm gives a custom message's text as a text block.
    assert_eq!(
        requests[1]["messages"].as_array().unwrap().last().unwrap(),
        &json!({"role": "user", "content": [{"type": "text", "text": "Also check the tests."}]})
    );
    let events = json_lines(&recorded);
    let custom: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "custom")
        .collect();
    assert_eq!(custom.len(), 1, "{recorded}");
    assert_eq!(custom[0]["message"]["customType"], "reminder");

    assert_replays_without_node(&env, &cassette, &recorded);
}

/// `pi replay --extensions live` runs the recorded extensions again instead of answering
/// their hook points from the cassette: unchanged, the replay is the recording byte for byte;
/// changed (the gate now lets `rm -rf` through), the replay stops where the run diverges, the
/// next request, whose tool result the gate no longer wrote. The recorded answers, which need
/// no Node, still replay the original.
#[test]
fn replay_with_live_extensions_runs_a_changed_extension_again() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "bash", "arguments": "{\"command\":\"rm -rf stuff\"}"}]},
        {"tool_calls": [{"name": "bash", "arguments": "{\"command\":\"echo kept\"}"}]},
    ]));
    let env = Env::new(&mock);
    let extension = env.path("cap.ts");
    std::fs::copy(fixture("cap.ts"), &extension).unwrap();
    let cassette = env.path("cap.jsonl");
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &extension,
        "clean up",
    );
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");

    let replay = |live: bool| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_pi"));
        command.args(["replay", cassette.to_str().unwrap()]);
        if live {
            command.args(["--extensions", "live"]);
        }
        with_host(command.env("HOME", env.path("home")), &path);
        run(&mut command)
    };
    let (code, replayed, stderr) = replay(true);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(replayed, recorded);

    let source = std::fs::read_to_string(&extension).unwrap();
    std::fs::write(&extension, source.replace("rm -rf\")", "never\")")).unwrap();
    let (code, _, stderr) = replay(true);
    assert_ne!(code, 0, "the changed gate went unnoticed: {stderr}");
    assert!(stderr.contains("rm -rf is not allowed here"), "{stderr}");
    let (code, replayed, stderr) = replay(false);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(replayed, recorded);
}

/// `pi replay --extensions live` runs again the extensions the agent dir's settings name (their
/// `extensions` entries), as the recorded run loaded them: the replay is the recording byte for
/// byte, and a changed one is heard.
#[test]
fn replay_with_live_extensions_loads_the_ones_the_settings_name() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "bash", "arguments": "{\"command\":\"rm -rf stuff\"}"}]},
        {"tool_calls": [{"name": "bash", "arguments": "{\"command\":\"echo kept\"}"}]},
    ]));
    let env = Env::new(&mock);
    let extension = env.path("agent").join("cap.ts");
    std::fs::copy(fixture("cap.ts"), &extension).unwrap();
    env.write_agent("settings.json", r#"{"extensions": ["cap.ts"]}"#);
    let cassette = env.path("cap.jsonl");
    let mut command = env.command(&[
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--mode",
        "json",
        "--record",
        cassette.to_str().unwrap(),
        "-p",
        "clean up",
    ]);
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        recorded.contains("rm -rf is not allowed here"),
        "{recorded}"
    );

    let replay = || {
        let mut command = env.command(&["replay", cassette.to_str().unwrap()]);
        command.args(["--extensions", "live"]);
        with_host(&mut command, &path);
        run(&mut command)
    };
    let (code, replayed, stderr) = replay();
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(replayed, recorded);
    let source = std::fs::read_to_string(&extension).unwrap();
    std::fs::write(&extension, source.replace("rm -rf\")", "never\")")).unwrap();
    let (code, _, stderr) = replay();
    assert_ne!(code, 0, "the changed gate went unnoticed: {stderr}");
}

/// A `cache_warming_decision` handler overrides Pi's decision (Pi 1.5.2's last override): on a
/// model whose warm does not pay (Pi says stop) the extension, shown Pi's `stop`, asks for a
/// warm; the warm goes out with a one-token cap and its entry says `extension override`, after
/// the entry the handler wrote.
#[test]
fn an_extension_overrides_the_cache_warming_decision() {
    use std::io::{BufRead, BufReader, Write};
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"text": ["Hello."], "usage": {"input": 100000, "output": 5}},
        {"text": ["W"], "usage": {"input": 100000, "output": 1}}
    ]));
    let env = Env::new(&mock);
    let mut models = pi_testkit::demo::models_json(mock.port);
    models["providers"]["mock"]["models"]
        .as_array_mut()
        .unwrap()
        .push(json!({
            "id": "mock-cache", "name": "Mock Cache", "contextWindow": 200000, "maxTokens": 16384,
            "cost": {"input": 0.001, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            "promptCache": {"short": 12}
        }));
    env.write_agent("models.json", &models.to_string());
    let extension = fixture("warm.ts");
    let mut command = env.command(&[
        "--provider",
        "mock",
        "--model",
        "mock-cache",
        "-e",
        extension.to_str().unwrap(),
        "--mode",
        "rpc",
    ]);
    with_host(&mut command, &path);
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{}", json!({"type": "prompt", "message": "Hi"})).unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let (mut seen, mut appended) = (Vec::new(), Vec::new());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let Ok(line) = lines.recv_timeout(left) else {
            child.kill().unwrap();
            panic!("no warm within 30 s; printed:\n{}", seen.join("\n"));
        };
        let event: Value = serde_json::from_str(&line).unwrap();
        seen.push(line);
        if event["type"] == "entry_appended" {
            appended.push(event["entry"].clone());
            if event["entry"]["type"] == "usage" {
                break;
            }
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert_eq!(appended.len(), 2, "{appended:?}");
    assert_eq!(appended[0]["customType"], "warming-decision");
    assert_eq!(appended[0]["data"], json!({"action": "stop"}));
    assert_eq!(appended[1]["kind"], "cache_warm");
    assert_eq!(appended[1]["note"], "extension override");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1]["max_completion_tokens"], 1);
}

/// Pi 1.5's boundaries: the entries `turn_end` and `agent_before_settle` handlers return are
/// written (a custom message carried by the next request) and `agent_before_settle`'s
/// continuation runs once more; their decisions are recorded, so the replay with no Node
/// prints the same bytes.
#[test]
fn boundary_entries_and_continuations_replay_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "read", "arguments": "{\"path\":\"a.txt\"}"}]},
        {"text": ["It says alpha."]},
        {"text": ["One more thing."]},
    ]));
    let env = Env::new(&mock);
    std::fs::write(env.cwd().join("a.txt"), "alpha\n").unwrap();
    let (cassette, recorded, _) = record_case(&env, &path, "boundaries", "what does a.txt say?");
    let written: Vec<String> = recorded
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "entry_appended")
        .map(|e| e["entry"]["customType"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        written,
        [
            "turn-note",
            "reminder",
            "turn-note",
            "reminder",
            "settle",
            "nudge",
            "turn-note",
            "reminder",
            "settle"
        ],
        "{recorded}"
    );
    let starts = recorded.matches("\"type\":\"agent_start\"").count();
    assert_eq!(starts, 2, "the settle boundary continued the run once");

    assert_replays_without_node(&env, &cassette, &recorded);
}

/// The skills and templates a `resources_discover` handler names are loaded before its decision
/// is recorded: the prompt's template expands and the system prompt lists the skill, and the
/// replay, with no Node and the folders gone, prints the same bytes.
#[test]
fn discovered_resources_are_recorded_and_replay_without_their_files_or_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Reviewed."]}]));
    let env = Env::new(&mock);
    let case =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/extensions/resources_discover");
    let scenario: Value =
        serde_json::from_str(&std::fs::read_to_string(case.join("scenario.json")).unwrap())
            .unwrap();
    for (name, text) in scenario["files"].as_object().unwrap() {
        let file = env.cwd().join(name);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text.as_str().unwrap()).unwrap();
    }
    let cassette = env.path("discover.jsonl");
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &case.join("extension.ts"),
        "/review a.txt",
    );
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    let requests = mock.requests();
    let request = requests.last().unwrap().to_string();
    assert!(request.contains("Review a.txt carefully."), "{request}");
    assert!(request.contains("Deploys the thing."), "{request}");
    assert!(request.contains("A lone skill file."), "{request}");

    std::fs::remove_dir_all(env.cwd().join("ext-res")).unwrap();
    assert_replays_without_node(&env, &cassette, &recorded);
}

/// An `agent_settled` handler's entry and the run its user message asks for come before and
/// after the session's own `agent_settled`, and print mode waits for that run; the recording
/// replays with no Node.
#[test]
fn the_settled_handlers_run_is_recorded_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["First."]}, {"text": ["Second."]}]));
    let env = Env::new(&mock);
    let (cassette, recorded, _) = record_case(&env, &path, "agent_settled", "Hi");
    let kinds: Vec<String> = recorded
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter_map(|e| e["type"].as_str().map(str::to_owned))
        .filter(|k| ["agent_start", "entry_appended", "agent_settled"].contains(&k.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            "agent_start",
            "entry_appended",
            "agent_settled",
            "agent_start",
            "entry_appended",
            "agent_settled"
        ]
    );
    assert_replays_without_node(&env, &cassette, &recorded);
}

/// Pi 1.5's drafts that change the context (case `boundary_drafts`): a `turn_end` edit of a
/// tool result, a compaction a turn later, a follow-up queued before the run settles and an
/// invalid draft dropped; what the requests send follows from the recorded decisions, so the
/// replay with no Node prints the same bytes.
#[test]
fn context_edit_and_compaction_drafts_replay_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "read", "arguments": "{\"path\":\"a.txt\"}"}]},
        {"tool_calls": [{"name": "read", "arguments": "{\"path\":\"b.txt\"}"}]},
        {"text": ["Both read."]},
        {"text": ["Followed up."]},
    ]));
    let env = Env::new(&mock);
    std::fs::write(env.cwd().join("a.txt"), "alpha\n").unwrap();
    std::fs::write(env.cwd().join("b.txt"), "beta\n").unwrap();
    let (cassette, recorded, stderr) = record_case(
        &env,
        &path,
        "boundary_drafts",
        "what do a.txt and b.txt say?",
    );
    let written: Vec<String> = recorded
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "entry_appended")
        .map(|e| e["entry"]["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        written,
        ["context_edit", "compaction", "custom", "custom"],
        "{recorded}"
    );
    assert!(
        stderr.contains("Invalid boundary entries: Entry missing not found"),
        "{stderr}"
    );
    assert!(recorded.contains("\"pending\":1"), "{recorded}");

    assert_replays_without_node(&env, &cassette, &recorded);
}

/// Records a json print run of `prompt` with the extension of conformance case `case`, the
/// host found on the `node` PATH: the cassette, what was printed and stderr (the run must
/// succeed).
fn record_case(env: &Env, node: &str, case: &str, prompt: &str) -> (PathBuf, String, String) {
    let cassette = env.path(&format!("{case}.jsonl"));
    let extension = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../conformance/extensions/{case}/extension.ts"));
    let mut command = with_extension(
        env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &extension,
        prompt,
    );
    with_host(&mut command, node);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    (cassette, recorded, stderr)
}

/// `pi replay --extensions live` of a run whose MCP server connected in the background while a
/// tool ran: the built-in MCP extension is not run again (nothing connects), but the
/// registrations it made at a hook point come again there, ahead of the handlers run again, so
/// their `pi.getAllTools()` lists the server's tool where it did and the replay is the
/// recording byte for byte.
#[test]
fn replay_with_live_extensions_keeps_the_recorded_mcp_registrations() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "wait", "arguments": "{}"}]},
        {"text": ["Waited."]},
    ]));
    let env = Env::new(&mock);
    let extension = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/mcp_background_tools/extension.ts");
    let cassette = env.path("mcp.jsonl");
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &extension,
        "Wait a little.",
    );
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        recorded.contains(r#""at":"turn_end","tools":["mcp__notes__count"]"#),
        "the server's tool never reached the handlers: {recorded}"
    );

    let mut command = Command::new(env!("CARGO_BIN_EXE_pi"));
    command
        .args(["replay", cassette.to_str().unwrap(), "--extensions", "live"])
        .current_dir(env.cwd());
    with_host(command.env("HOME", env.path("home")), &path);
    let (code, replayed, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(replayed, recorded);
}
