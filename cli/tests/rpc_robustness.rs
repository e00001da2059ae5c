//! RPC mode takes anything on stdin: arbitrary lines (broken JSON, wrong types, unknown
//! commands, real commands with random fields, control characters) never crash it, every output
//! line is JSON, and the process exits 0 when stdin ends.
//!
//! Answers are matched line by line: each line gets exactly one response, carrying the line's
//! `id` as sent (string or number, repeated ids counted) and its `type` as `command`; lines
//! without an id, and lines that do not parse, get Pi's answer. With stdin held open until
//! everything is answered, that holds for every line; with stdin closed at once, the commands
//! answered when their work ends (compact, bash, abort) may be cut short, as in Pi, and are
//! answered at most once.
//!
//! Cases: `PROPTEST_CASES`, else 24 (each case starts a process).
//!
//! The `fuzz` module goes wider: mutants of the binary's real inputs (cassettes, a session file,
//! RPC stdin, an eval suite) through `pi replay`, `pi --session`, RPC mode and `pi eval`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
mod fuzz;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::Stdio;
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

use common::{Env, MockLlm};
use proptest::prelude::*;
use serde_json::{json, Value};

/// Commands Pi knows.
const COMMANDS: &[&str] = &[
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
];

/// Commands answered when their work ends, which the end of stdin may cut short.
const ANSWERED_LATER: &[&str] = &["compact", "bash", "abort"];

/// A command Pi does not know.
const UNKNOWN: &str = "no_such_command";

const FIELDS: &[&str] = &[
    "message",
    "level",
    "mode",
    "enabled",
    "provider",
    "modelId",
    "name",
    "entryId",
    "sessionPath",
    "customInstructions",
    "streamingBehavior",
    "images",
    "outputPath",
];

fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(24)
}

fn field_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        "[a-z ]{0,12}".prop_map(Value::String),
        Just(json!(["a", 1])),
        Just(json!({"nested": true})),
    ]
}

/// What `bash` is given to run: short commands only (random text could name one that never
/// ends), and values that are not commands.
fn shell_command() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        json!("echo hi"),
        json!("true"),
        json!("exit 3"),
        json!("printf 'a\\nb'"),
        json!(7),
        Value::Null,
    ])
}

/// Ids as clients send them, drawn from a small pool so that they repeat, and so that the
/// string `"3"` and the number `3` meet.
fn id() -> impl Strategy<Value = Value> {
    prop_oneof![
        "[a-z0-9]{1,3}".prop_map(Value::String),
        (0u8..4).prop_map(|n| json!(n.to_string())),
        (0i64..4).prop_map(|n| json!(n)),
        Just(json!(-1)),
        Just(json!(9_007_199_254_740_991_i64)),
        Just(json!(0.5)),
    ]
}

fn command_line() -> impl Strategy<Value = String> {
    let kind = prop_oneof![
        12 => prop::sample::select(COMMANDS),
        1 => Just(UNKNOWN),
    ];
    let command = (
        kind,
        prop::option::of(id()),
        prop::collection::vec((prop::sample::select(FIELDS), field_value()), 0..3),
        prop::option::of(shell_command()),
    )
        .prop_map(|(kind, id, fields, shell)| {
            let mut object = json!({"type": kind});
            if let Some(id) = id {
                object["id"] = id;
            }
            for (key, value) in fields {
                object[key] = value;
            }
            if let Some(shell) = shell {
                object["command"] = shell;
            }
            object.to_string()
        });
    prop_oneof![
        8 => command,
        1 => "[ -~]{0,40}",
        1 => Just("".to_owned()),
        1 => Just("{\"type\":".to_owned()),
        1 => Just("[1,2,3]".to_owned()),
        1 => Just("null".to_owned()),
        1 => Just("\"just a string\"".to_owned()),
        1 => Just("{\"type\": 7}".to_owned()),
        1 => Just("{\"type\": [1, null, \"x\"]}".to_owned()),
        1 => Just("{}".to_owned()),
        1 => Just("\u{7}\u{1b}[31m{}".to_owned()),
    ]
}

/// JavaScript's `String(value)` for the types the lines carry.
fn js_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::Null => String::new(),
                other => js_text(other),
            })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".to_owned(),
        other => other.to_string(),
    }
}

/// What a line is answered with.
struct Expected {
    /// The response's `id` and `command` (`None`: the key is absent).
    key: (Option<Value>, Option<Value>),
    /// The whole response, where it is known without running the command (parse errors are
    /// compared without their error text, which is the JavaScript engine's).
    exact: Option<Value>,
    /// Answered when its work ends (so possibly never, when stdin ends first).
    later: bool,
}

fn expected(line: &str) -> Expected {
    let Ok(parsed) = serde_json::from_str::<Value>(line) else {
        return Expected {
            key: (None, Some(json!("parse"))),
            exact: Some(json!({"type": "response", "command": "parse", "success": false})),
            later: false,
        };
    };
    let id = parsed.get("id").cloned();
    let kind = parsed.get("type").cloned();
    let known = kind
        .as_ref()
        .and_then(Value::as_str)
        .is_some_and(|k| COMMANDS.contains(&k));
    let exact = (!known).then(|| {
        let mut response = json!({});
        if let Some(id) = &id {
            response["id"] = id.clone();
        }
        response["type"] = json!("response");
        if let Some(kind) = &kind {
            response["command"] = kind.clone();
        }
        response["success"] = json!(false);
        let text = kind
            .as_ref()
            .map_or_else(|| "undefined".to_owned(), js_text);
        response["error"] = json!(format!("Unknown command: {text}"));
        response
    });
    let later = kind
        .as_ref()
        .and_then(Value::as_str)
        .is_some_and(|k| ANSWERED_LATER.contains(&k));
    Expected {
        key: (id, kind),
        exact,
        later,
    }
}

type Key = (Option<Value>, Option<Value>);

/// Keys as sortable text, so that repeated ones are counted.
fn count(keys: impl Iterator<Item = Key>) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for key in keys {
        *counts.entry(json!([key.0, key.1]).to_string()).or_insert(0) += 1;
    }
    counts
}

/// The whole response as compared with an expected one (parse errors without their text).
fn comparable(response: &Value) -> Value {
    let mut response = response.clone();
    if response["command"] == "parse" {
        let error = response["error"].as_str().unwrap_or("");
        assert!(error.starts_with("Failed to parse command: "), "{response}");
        response.as_object_mut().unwrap().remove("error");
    }
    response
}

/// Starts RPC mode, writes `lines`, and either closes stdin at once or holds it open until
/// there are as many responses as lines; returns stdout's lines, stderr and the exit code.
fn run(lines: &[String], hold_open: bool) -> (Vec<String>, String, Option<i32>) {
    let script: Vec<Value> = (0..60).map(|_| json!({"text": ["ok"]})).collect();
    let mock = MockLlm::start(&json!(script));
    let env = Env::new(&mock);
    let mut child = env
        .rpc_command()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        stderr.read_to_string(&mut text).unwrap();
        text
    });
    let stdout = child.stdout.take().unwrap();
    let (tx, printed) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut stdin = child.stdin.take().unwrap();
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
    }
    stdin.flush().unwrap();
    let mut out = Vec::new();
    if hold_open {
        // A generous bound, only so that a missing answer fails instead of hanging.
        let deadline = Instant::now() + Duration::from_secs(120);
        let is_response =
            |l: &String| serde_json::from_str::<Value>(l).is_ok_and(|v| v["type"] == "response");
        while out.iter().filter(|l| is_response(l)).count() < lines.len() {
            let left = deadline.saturating_duration_since(Instant::now());
            match printed.recv_timeout(left) {
                Ok(line) => out.push(line),
                Err(_) => break,
            }
        }
    }
    drop(stdin);
    let status = child.wait().unwrap();
    out.extend(printed.iter());
    (out, stderr.join().unwrap(), status.code())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn every_line_is_answered_once_with_its_id_and_nothing_crashes(
        lines in prop::collection::vec(command_line(), 1..25),
        hold_open in any::<bool>(),
    ) {
        let (out, stderr, code) = run(&lines, hold_open);
        prop_assert!(!stderr.contains("panicked"), "{}", stderr);
        prop_assert_eq!(code, Some(0), "{}", stderr);
        let mut responses = Vec::new();
        for printed in &out {
            let value: Result<Value, _> = serde_json::from_str(printed);
            prop_assert!(value.is_ok(), "not JSON: {}", printed);
            let value = value.unwrap();
            if value["type"] == "response" {
                responses.push(value);
            }
        }
        let expected: Vec<Expected> = lines.iter().map(|l| expected(l)).collect();
        // An unknown command sent with an id is answered with that id, as Pi 1.5.2 answers it
        // (Pi 0.73.1 left it out).
        let got = count(responses.iter().map(|r| (r.get("id").cloned(), r.get("command").cloned())));
        let all = count(expected.iter().map(|e| e.key.clone()));
        let at_once = count(expected.iter().filter(|e| !e.later).map(|e| e.key.clone()));
        let report = || format!("lines:\n{}\nresponses:\n{}", lines.join("\n"), out.join("\n"));
        if hold_open {
            prop_assert_eq!(&got, &all, "{}", report());
        } else {
            for (key, n) in &got {
                let most = all.get(key).copied().unwrap_or(0);
                prop_assert!(*n <= most, "{} answered {} times, at most {}\n{}", key, n, most, report());
            }
            for (key, n) in &at_once {
                let answered = got.get(key).copied().unwrap_or(0);
                prop_assert!(answered >= *n, "{} answered {} times, at least {}\n{}", key, answered, n, report());
            }
        }
        // The answers known in advance (parse errors, unknown commands) are Pi's, whole.
        let mut whole: Vec<Value> = responses.iter().map(comparable).collect();
        for exact in expected.iter().filter_map(|e| e.exact.as_ref()) {
            let at = whole.iter().position(|r| r == exact);
            prop_assert!(at.is_some(), "no answer {}\n{}", exact, report());
            whole.remove(at.unwrap());
        }
    }
}
