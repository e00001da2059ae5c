//! An extension tool's `prepareArguments` shim (case `tool_prepare_arguments`): the extension
//! host runs it on each call's arguments before they are validated, for the model's calls and
//! a tool's `ctx.executeTool` calls alike; its answer (the arguments, or the message it threw)
//! is a recorded hook decision, so a replay without Node reproduces the run, and a recorded
//! answer changed in the cassette diverges.

use serde_json::{json, Value};

use crate::common::{Env, MockLlm};
use crate::support::{
    assert_chaos_without_node, assert_replays_without_node, json_lines, node_path,
    replay_without_node, run, with_extension, with_host,
};

fn case() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/tool_prepare_arguments")
}

/// The legacy shape, the new one beside one the shim throws at, a legacy shape whose value
/// validation coerces beside one the shim returns nothing for, then the tool that calls the
/// shimmed one.
fn script() -> Value {
    let call = |id: &str, name: &str, args: Value| json!({"id": id, "name": name, "arguments": args.to_string()});
    json!([
        {"tool_calls": [call("g1", "greet", json!({"who": "legacy"}))]},
        {"tool_calls": [
            call("g2", "greet", json!({"name": "current"})),
            call("g3", "greet", json!({"name": "BOOM"})),
        ]},
        {"tool_calls": [
            call("g4", "greet", json!({"who": 7})),
            call("g5", "greet", json!({"name": "NONE"})),
        ]},
        {"tool_calls": [call("r1", "relay", json!({}))]},
        {"text": ["Done."]},
    ])
}

/// Each `tool_execution_start`'s arguments and its end's text and error flag, by call id.
fn calls(events: &[Value]) -> Vec<(String, Value, String, bool)> {
    let starts = events
        .iter()
        .filter(|e| e["type"] == "tool_execution_start");
    starts
        .map(|start| {
            let id = start["toolCallId"].as_str().unwrap().to_owned();
            let end = events
                .iter()
                .find(|e| e["type"] == "tool_execution_end" && e["toolCallId"] == id.as_str())
                .unwrap();
            let text = end["result"]["content"][0]["text"].as_str().unwrap_or("");
            let short = text.chars().take(20).collect::<String>();
            (
                id,
                start["args"].clone(),
                short,
                end["isError"] == json!(true),
            )
        })
        .collect()
}

#[test]
fn the_shim_runs_before_validation_and_its_recorded_answers_replay_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&script());
    let env = Env::new(&mock);
    let cassette = env.path("shim.jsonl");
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &case().join("extension.ts"),
        "Greet.",
    );
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("prepareArguments"), "{stderr}");

    // The events show the model's arguments; the tool ran with the prepared ones.
    let events = json_lines(&recorded);
    let row = |id: &str, args: Value, text: &str, error: bool| {
        (id.to_owned(), args, text.to_owned(), error)
    };
    assert_eq!(
        calls(&events),
        [
            row("g1", json!({"who": "legacy"}), "Hello, legacy!", false),
            row("g2", json!({"name": "current"}), "Hello, current!", false),
            row("g3", json!({"name": "BOOM"}), "cannot prepare BOOM", true),
            row("g4", json!({"who": 7}), "Hello, 7!", false),
            row("g5", json!({"name": "NONE"}), "Validation failed fo", true),
            row("r1", json!({}), "[{\"isError\":false,\"t", false),
            row("r1/1", json!({"who": "nested"}), "Hello, nested!", false),
            row("r1/2", json!({"name": "BOOM"}), "cannot prepare BOOM", true),
        ]
    );
    // The `tool_call` handlers saw the prepared arguments.
    let seen: Vec<Value> = events
        .iter()
        .filter(|e| e["type"] == "entry_appended")
        .filter(|e| e["entry"]["customType"] == "tool-call-seen")
        .map(|e| e["entry"]["data"]["input"].clone())
        .collect();
    assert_eq!(
        seen,
        [
            json!({"name": "legacy"}),
            json!({"name": "current"}),
            json!({"name": "7"}),
            json!({}),
            json!({"name": "nested"}),
        ]
    );

    // A shim that returned nothing fails validation as Pi's does with `undefined`.
    let failed = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end" && e["toolCallId"] == "g5")
        .unwrap();
    assert_eq!(
        failed["result"]["content"][0]["text"],
        "Validation failed for tool \"greet\":\n  - root: expected object, got undefined\n\n\
         Received arguments:\nundefined"
    );

    assert_replays_without_node(&env, &cassette, &recorded);
    assert_chaos_without_node(&env, &cassette);

    // A recorded answer is what the replay validates and runs with: changed, the tool's
    // recorded run is asked with other arguments, and the replay diverges.
    let text = std::fs::read_to_string(&cassette).unwrap();
    for (from, to) in [
        (
            r#""verdict":"prepared","arguments":{"name":"legacy"}"#,
            r#""verdict":"prepared","arguments":{"name":"forged"}"#,
        ),
        (
            r#""verdict":"thrown","error":"cannot prepare BOOM""#,
            r#""verdict":"thrown","error":"cannot prepare it""#,
        ),
    ] {
        let tampered = text.replacen(from, to, 1);
        assert_ne!(tampered, text, "the cassette records {from}");
        let changed = env.path("changed.jsonl");
        std::fs::write(&changed, tampered).unwrap();
        let (code, _, stderr) = replay_without_node(&env, &changed);
        assert_eq!(code, 1, "{from}: {stderr}");
        assert!(stderr.contains("diverged"), "{from}: {stderr}");
    }
}
