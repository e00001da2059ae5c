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

/// A shim that changes the model's arguments in place and then throws, and one that changes
/// them in place and returns them (case `tool_prepare_arguments_this`): the first call's error
/// is the thrown message, and the later requests, the next prompt's included, send both
/// calls' arguments as the shims left them, as Pi's call holds that object. The shims see
/// Pi's wrapped tool as `this`, not the definition. The change is part of the recorded answer,
/// so a replay without Node reproduces; the change altered there diverges.
#[test]
fn a_shim_that_edits_in_place_then_throws_keeps_its_edit_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let case = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/tool_prepare_arguments_this");
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"id": "t1", "name": "greet", "arguments": "{\"mode\":\"edit-then-throw\"}"}]},
        {"tool_calls": [{"id": "t2", "name": "greet", "arguments": "{\"who\":\"plain\"}"}]},
        {"text": ["Done."]},
        {"text": ["Again."]}
    ]));
    let env = Env::new(&mock);
    let cassette = env.path("shim-this.jsonl");
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &case.join("extension.ts"),
        "Greet.",
    );
    command.arg("Again.");
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    let events = json_lines(&recorded);
    let text = |id: &str| {
        let end = events
            .iter()
            .find(|e| e["type"] == "tool_execution_end" && e["toolCallId"] == id)
            .unwrap();
        (
            end["result"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned(),
            end["isError"] == true,
        )
    };
    assert_eq!(text("t1"), ("edited in place, then threw".to_owned(), true));
    // Pi's wrapped tool: its own fields, not the definition's snippet or other fields.
    let (greeted, failed) = text("t2");
    assert!(!failed);
    assert!(
        greeted.contains(
            r#"{"keys":["constrainedSampling","description","execute","executionMode","label","name","outputSchema","parameters","prepareArguments"],"name":"greet","snippet":null,"custom":null"#
        ),
        "{greeted}"
    );
    // Every request after the calls, the next prompt's included, sends the edited arguments.
    let sent: Vec<Vec<String>> = mock
        .requests()
        .iter()
        .map(|request| {
            request["messages"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|m| m["tool_calls"].as_array().cloned().unwrap_or_default())
                .map(|call| call["function"]["arguments"].as_str().unwrap().to_owned())
                .collect()
        })
        .collect();
    let edited = r#"{"name":"edited"}"#.to_owned();
    let plain = r#"{"name":"plain"}"#.to_owned();
    assert_eq!(
        sent,
        [
            vec![],
            vec![edited.clone()],
            vec![edited.clone(), plain.clone()],
            vec![edited, plain]
        ]
    );

    assert_replays_without_node(&env, &cassette, &recorded);
    let text = std::fs::read_to_string(&cassette).unwrap();
    let from = r#""modelArguments":{"name":"edited"}"#;
    let tampered = text.replacen(from, r#""modelArguments":{"name":"forged"}"#, 1);
    assert_ne!(tampered, text, "the cassette records {from}");
    let changed = env.path("changed.jsonl");
    std::fs::write(&changed, tampered).unwrap();
    let (code, _, stderr) = replay_without_node(&env, &changed);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("diverged"), "{stderr}");
}
