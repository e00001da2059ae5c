//! RPC mode takes anything on stdin: arbitrary lines — broken JSON, wrong types, unknown
//! commands, real commands with random fields, control characters — never crash it. Every line
//! is answered (those whose work outlives stdin aside), every output line is JSON, and the
//! process exits 0 when stdin ends.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::Write;
use std::process::Stdio;

use common::{Env, MockLlm};
use proptest::prelude::*;
use serde_json::{json, Value};

const TYPES: &[&str] = &[
    "prompt",
    "steer",
    "follow_up",
    "abort",
    "new_session",
    "get_state",
    "set_model",
    "cycle_model",
    "get_available_models",
    "set_thinking_level",
    "cycle_thinking_level",
    "set_steering_mode",
    "set_follow_up_mode",
    "compact",
    "set_auto_compaction",
    "set_auto_retry",
    "abort_retry",
    "bash",
    "abort_bash",
    "get_session_stats",
    "export_html",
    "switch_session",
    "fork",
    "clone",
    "get_fork_messages",
    "get_last_assistant_text",
    "set_session_name",
    "get_messages",
    "get_commands",
    "no_such_command",
];

fn field_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[a-z ]{0,12}".prop_map(Value::String),
        Just(json!("echo hi")),
        Just(json!(["a", 1])),
        Just(json!({"nested": true})),
    ]
}

fn command_line() -> impl Strategy<Value = String> {
    let command = (
        proptest::sample::select(TYPES),
        proptest::option::of(prop_oneof![
            "[a-z0-9]{1,6}".prop_map(Value::String),
            any::<u16>().prop_map(|n| json!(n))
        ]),
        proptest::collection::vec(
            (
                proptest::sample::select(
                    &[
                        "message",
                        "level",
                        "mode",
                        "enabled",
                        "command",
                        "provider",
                        "modelId",
                        "name",
                        "entryId",
                        "sessionPath",
                        "customInstructions",
                        "streamingBehavior",
                        "images",
                        "outputPath",
                    ][..],
                ),
                field_value(),
            ),
            0..3,
        ),
    )
        .prop_map(|(kind, id, fields)| {
            let mut object = json!({"type": kind});
            if let Some(id) = id {
                object["id"] = id;
            }
            for (key, value) in fields {
                object[key] = value;
            }
            object.to_string()
        });
    prop_oneof![
        4 => command,
        1 => "[ -~]{0,40}",
        1 => Just("{\"type\":".to_owned()),
        1 => Just("[1,2,3]".to_owned()),
        1 => Just("null".to_owned()),
        1 => Just("\"just a string\"".to_owned()),
        1 => Just("{\"type\": 7}".to_owned()),
        1 => Just("\u{7}\u{1b}[31m{}".to_owned()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn any_input_is_answered_and_never_crashes(lines in proptest::collection::vec(command_line(), 1..25)) {
        let script: Vec<Value> = (0..40).map(|_| json!({"text": ["ok"]})).collect();
        let mock = MockLlm::start(&json!(script));
        let env = Env::new(&mock);
        let mut child = env
            .command(&["--provider", "mock", "--model", "mock-model", "--mode", "rpc"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        for line in &lines {
            writeln!(stdin, "{line}").unwrap();
        }
        drop(stdin);
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        prop_assert!(!stderr.contains("panicked"), "{stderr}");
        prop_assert_eq!(out.status.code(), Some(0), "{}", stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        for printed in stdout.lines() {
            let value: Result<Value, _> = serde_json::from_str(printed);
            prop_assert!(value.is_ok(), "not JSON: {}", printed);
        }
        let responses = stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["type"] == "response")
            .count();
        // Every line is answered at once, except the commands answered when their work ends
        // (compact, bash, abort), which stdin's end may cut short, as in Pi.
        let later = ["compact", "bash", "abort"];
        let at_once = lines
            .iter()
            .filter(|l| {
                let kind = serde_json::from_str::<Value>(l)
                    .ok()
                    .and_then(|v| v.get("type").and_then(Value::as_str).map(str::to_owned));
                !kind.is_some_and(|k| later.contains(&k.as_str()))
            })
            .count();
        prop_assert!(responses >= at_once, "{} lines, {} responses\n{}", at_once, responses, stdout);
    }
}
