//! Providers an extension registers or unregisters once loaded (`pi.registerProvider` from a
//! command): the session's model moves to the provider's, its request goes over real HTTP with
//! the registered key and headers, RPC's model list follows, a prompt after the provider is gone
//! is refused for want of its key; the keys reach no file the run wrote (a model repeating them
//! before any request carried them included), and the recording replays with no Node.

use serde_json::{json, Value};

use crate::common::{Env, MockLlm};
use crate::support::{
    assert_replays_without_node, fixture, node_path, run, send, spawn_rpc, with_host,
};

/// The key `runtime_provider.ts` writes in its registration, and the one its header holds.
const PLANTED_KEY: &str = "gw-runtime-planted-0123456789abcdef";
const PLANTED_HEADER: &str = "hdr-runtime-planted-0123456789abcdef";

#[test]
fn a_provider_registered_by_a_command_is_used_listed_dropped_and_replays_without_node_keys_unwritten(
) {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello from the gateway."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("runtime.jsonl");
    let extension = fixture("runtime_provider.ts");
    let mut command = env.rpc_command();
    command.args(["-e", extension.to_str().unwrap()]);
    command.args(["--record", cassette.to_str().unwrap()]);
    with_host(&mut command, &path);
    let (mut child, mut stdin, mut lines) = spawn_rpc(&mut command);
    let mut recorded = String::new();
    let mut until = |done: &dyn Fn(&Value) -> bool| -> Value {
        for line in lines.by_ref() {
            let line = line.unwrap();
            recorded.push_str(&line);
            recorded.push('\n');
            let value: Value = serde_json::from_str(&line).unwrap();
            if done(&value) {
                return value;
            }
        }
        panic!("the run ended first")
    };
    let response = |id: &'static str| move |v: &Value| v["type"] == "response" && v["id"] == id;
    send(
        &mut stdin,
        json!({"id": "gw", "type": "prompt", "message": "/gw"}),
    );
    let answered = until(&response("gw"));
    assert_eq!(answered["success"], true, "{answered}");
    send(&mut stdin, json!({"id": "s1", "type": "get_state"}));
    let state = until(&response("s1"));
    assert_eq!(state["data"]["model"]["provider"], "gateway", "{state}");
    send(
        &mut stdin,
        json!({"id": "p1", "type": "prompt", "message": "Say hello."}),
    );
    until(&|v: &Value| v["type"] == "agent_settled");
    send(
        &mut stdin,
        json!({"id": "drop", "type": "prompt", "message": "/drop"}),
    );
    until(&response("drop"));
    send(
        &mut stdin,
        json!({"id": "m", "type": "get_available_models"}),
    );
    let listed = until(&response("m"));
    send(
        &mut stdin,
        json!({"id": "p2", "type": "prompt", "message": "Again."}),
    );
    let refused = until(&response("p2"));
    drop(stdin);
    for line in lines {
        recorded.push_str(&line.unwrap());
        recorded.push('\n');
    }
    assert!(child.wait().unwrap().success(), "{recorded}");

    // The request went to the gateway with its key and headers.
    let requests = mock.requests();
    assert_eq!(requests.len(), 1, "{recorded}");
    assert_eq!(requests[0]["model"], "gw-model");
    let headers = request_headers(&mock);
    assert_eq!(headers[0]["authorization"], format!("Bearer {PLANTED_KEY}"));
    assert_eq!(headers[0]["x-api-key"], PLANTED_HEADER);
    assert_eq!(headers[0]["x-gateway"], "runtime");
    // Once unregistered, it is no longer listed, and a prompt to its model wants a key.
    let providers: Vec<&str> = listed["data"]["models"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["provider"].as_str())
        .collect();
    assert!(!providers.contains(&"gateway"), "{listed}");
    assert!(providers.contains(&"mock"), "{listed}");
    assert_eq!(refused["success"], false, "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .starts_with("No API key found for gateway."),
        "{refused}"
    );

    // Neither key reaches a file the run wrote (session, cassette), nor its output.
    for planted in [PLANTED_KEY, PLANTED_HEADER] {
        let mut leaks = written_with(&env, planted, false);
        if recorded.contains(planted) {
            leaks.push("stdout".to_owned());
        }
        assert!(leaks.is_empty(), "{planted} reached {leaks:?}");
    }
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(text.contains("<<secret-"), "the keys were not scrubbed");
    assert!(
        text.contains("registerProvider"),
        "the change was not recorded"
    );

    assert_replays_without_node(&env, &cassette, &recorded);
    assert_eq!(mock.requests().len(), 1, "the replay sent a request");
}

/// An attack on the recording: the provider is registered with its keys but the session keeps
/// its model, so no request ever carries them, and the model then says both. Only Pi's own
/// session file (and the printed events) may hold them: the cassette scrubs them, and still
/// checks with no Node.
#[test]
fn keys_of_a_provider_registered_after_loading_never_reach_the_cassette_even_unsent() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"text": [format!("The keys are {PLANTED_KEY} and {PLANTED_HEADER}.")]}
    ]));
    let env = Env::new(&mock);
    let cassette = env.path("unsent.jsonl");
    let (code, printed, stderr) =
        recorded_run(&env, &path, &cassette, &["/gw stay", "Say the keys."]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        printed.contains(PLANTED_KEY),
        "the model did not say it: {printed}"
    );
    assert_eq!(mock.requests()[0]["model"], "mock-model");
    for planted in [PLANTED_KEY, PLANTED_HEADER] {
        let leaks = written_with(&env, planted, true);
        assert!(leaks.is_empty(), "{planted} reached {leaks:?}");
    }
    checks_without_node(&env, &cassette);
}

/// The same attack through a tool: the model calls `connect`, whose `execute` registers the
/// provider (applied at once, as Pi 1.5.2 applies it), then says the keys. The registry took
/// them before the tool's action was recorded, so the cassette scrubs them too; the run's
/// model lists gained the provider, and the recording checks with no Node.
#[test]
fn keys_of_a_provider_a_tool_registered_never_reach_the_cassette() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "connect", "arguments": "{}"}]},
        {"text": [format!("The keys are {PLANTED_KEY} and {PLANTED_HEADER}.")]}
    ]));
    let env = Env::new(&mock);
    let cassette = env.path("tool.jsonl");
    let (code, printed, stderr) =
        recorded_run(&env, &path, &cassette, &["Connect, then say the keys."]);
    assert_eq!(code, 0, "{stderr}");
    assert!(printed.contains("\"connected\""), "{printed}{stderr}");
    assert!(
        printed.contains(PLANTED_KEY),
        "the model did not say it: {printed}"
    );
    for planted in [PLANTED_KEY, PLANTED_HEADER] {
        let leaks = written_with(&env, planted, true);
        assert!(leaks.is_empty(), "{planted} reached {leaks:?}");
    }
    let recorded = std::fs::read_to_string(&cassette).unwrap();
    assert!(
        recorded.contains("\"registerProvider\"") && recorded.contains("\"gw-model\""),
        "the tool's change is recorded with its models"
    );
    checks_without_node(&env, &cassette);
}

/// A json print-mode run of `runtime_provider.ts` on the mock model, of `prompts`, recorded
/// into `cassette`.
fn recorded_run(
    env: &Env,
    path: &str,
    cassette: &std::path::Path,
    prompts: &[&str],
) -> (i32, String, String) {
    let extension = fixture("runtime_provider.ts");
    let mut command = env.command(&[
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--mode",
        "json",
    ]);
    command
        .arg("--record")
        .arg(cassette)
        .arg("-e")
        .arg(extension);
    command.arg("-p").args(prompts);
    with_host(&mut command, path);
    run(&mut command)
}

/// `pi replay --check` of `cassette` with no Node on the path reproduces.
fn checks_without_node(env: &Env, cassette: &std::path::Path) {
    let (code, said, stderr) = run(std::process::Command::new(env!("CARGO_BIN_EXE_pi"))
        .args(["replay", "--check"])
        .arg(cassette)
        .env("PATH", env.path("no-node"))
        .env("HOME", env.path("home")));
    assert_eq!(code, 0, "{said}{stderr}");
}

/// The files under the test's folder holding `planted` (but the session files, with
/// `but_sessions`).
fn written_with(env: &Env, planted: &str, but_sessions: bool) -> Vec<String> {
    pi_testkit::files_under(&env.path(""))
        .into_iter()
        .filter(|p| !(but_sessions && p.to_string_lossy().contains("/sessions/")))
        .filter(|p| String::from_utf8_lossy(&std::fs::read(p).unwrap()).contains(planted))
        .map(|p| p.display().to_string())
        .collect()
}

/// The headers of each request the mock received.
fn request_headers(mock: &MockLlm) -> Vec<Value> {
    std::fs::read_to_string(&mock.log)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("event").is_none())
        .map(|v| v["headers"].clone())
        .collect()
}

/// A tool whose `execute` registers providers by name (case `register_provider_tool_refused`):
/// the one Pi's model runtime refuses fails the call with the runtime's error, as Pi's
/// `pi.registerProvider` throws it into `execute`, and nothing is said on stderr (the error is
/// the call's recorded result, so a checked replay says only its verdict); the one whose id is
/// blank is registered, as Pi takes it by name. The recording checks with no Node.
#[test]
fn a_provider_change_the_registry_refuses_fails_the_tool_that_asked_for_it() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"id": "c1", "name": "connect", "arguments": "{}"}]},
        {"tool_calls": [{"id": "b1", "name": "blank", "arguments": "{}"}]},
        {"text": ["Done."]}
    ]));
    let env = Env::new(&mock);
    let cassette = env.path("refused.jsonl");
    let extension = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/register_provider_tool_refused/extension.ts");
    let mut command = env.command(&[
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--mode",
        "json",
    ]);
    command
        .arg("--record")
        .arg(&cassette)
        .arg("-e")
        .arg(extension);
    command.args(["-p", "Connect."]);
    with_host(&mut command, &path);
    let (code, printed, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("Extension error"), "{stderr}");
    let ends: Vec<(String, String, bool)> = printed
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "tool_execution_end")
        .map(|e| {
            (
                e["toolCallId"].as_str().unwrap().to_owned(),
                e["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
                e["isError"] == true,
            )
        })
        .collect();
    assert_eq!(
        ends,
        [
            (
                "c1".to_owned(),
                "Provider streamer: \"api\" is required when registering streamSimple.".to_owned(),
                true
            ),
            ("b1".to_owned(), "registered".to_owned(), false),
        ]
    );
    checks_without_node(&env, &cassette);
}
