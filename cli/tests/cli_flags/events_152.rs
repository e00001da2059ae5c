//! The event stream of `--mode json` as Pi 1.5.2 writes it (checked against the 1.5.2 traces of
//! the conformance kit): an assistant message starts `pending`; `message_update` carries only
//! the usage and the delta, `toolcall_start` the call's id and name; final answers carry
//! `rawStopReason`, `durationMs` and `thinkingLevel`, their usage `reasoning` and
//! `cost.totalFromProvider`; tools report `durationMs`; every `agent_end` says whether a retry
//! follows, and one `agent_settled` ends the prompt. Durations come from the times the loop is
//! given, so a replay reproduces them.

use crate::common::{Env, MockLlm};
use serde_json::{json, Value};

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn keys(value: &Value) -> Vec<&str> {
    value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// The assistant messages of `message_start` (or `message_end`) events.
fn assistant(events: &[Value], kind: &str) -> Vec<Value> {
    of_type(events, kind)
        .into_iter()
        .filter(|e| e["message"]["role"] == "assistant")
        .map(|e| e["message"].clone())
        .collect()
}

const JSON_RUN: [&str; 6] = [
    "--provider",
    "mock",
    "--model",
    "mock-model",
    "--mode",
    "json",
];

/// b_tool_read's script: a streamed `read` call, then the answer.
fn read_script() -> Value {
    json!([
        {"tool_calls": [{"id": "call_read_1", "name": "read", "arguments": {"path": "hello.txt"},
                         "chunks": ["{\"pa", "th\": \"hel", "lo.txt\"}"]}]},
        {"text": ["The file ", "says: hi there."]}
    ])
}

#[test]
fn a_tool_run_streams_deltas_and_ends_with_the_new_fields_and_one_settled_event() {
    let mock = MockLlm::start(&read_script());
    let env = Env::new(&mock);
    env.write("hello.txt", b"hi there\nsecond line\n");
    let out = env.run(&[&JSON_RUN[..], &["-p", "Read hello.txt"]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = lines(&out.stdout);

    // Each answer starts pending and ends with its real reason and the provider's own.
    let started = assistant(&events, "message_start");
    let ended = assistant(&events, "message_end");
    assert_eq!(started.len(), 2);
    for message in &started {
        assert_eq!(message["stopReason"], "pending", "{message}");
        assert!(message.get("durationMs").is_none(), "{message}");
    }
    let reasons: Vec<(&Value, &Value)> = ended
        .iter()
        .map(|m| (&m["stopReason"], &m["rawStopReason"]))
        .collect();
    assert_eq!(
        reasons,
        [
            (&json!("toolUse"), &json!("tool_calls")),
            (&json!("stop"), &json!("stop"))
        ]
    );
    for message in &ended {
        assert_eq!(
            keys(message)[7..],
            [
                "timestamp",
                "responseId",
                "rawStopReason",
                "durationMs",
                "thinkingLevel"
            ],
            "{message}"
        );
        assert!(message["durationMs"].is_u64(), "{message}");
        assert_eq!(message["thinkingLevel"], "off");
        let usage = &message["usage"];
        assert_eq!(
            keys(usage),
            [
                "input",
                "output",
                "cacheRead",
                "cacheWrite",
                "reasoning",
                "totalTokens",
                "cost"
            ],
            "{usage}"
        );
        assert_eq!(usage["reasoning"], 0);
        assert_eq!(usage["cost"]["totalFromProvider"], false, "{usage}");
    }

    // message_update: the usage and the delta, nothing else.
    let updates = of_type(&events, "message_update");
    assert!(!updates.is_empty());
    for update in &updates {
        assert_eq!(
            keys(update),
            ["type", "usage", "assistantMessageEvent"],
            "{update}"
        );
        assert!(update["assistantMessageEvent"].get("partial").is_none());
    }
    let first = &updates[0]["assistantMessageEvent"];
    assert_eq!(
        *first,
        json!({"type": "toolcall_start", "contentIndex": 0, "id": "call_read_1", "toolName": "read"})
    );

    // The tool ran: its end event and its result message say for how long.
    let end = of_type(&events, "tool_execution_end")[0];
    assert_eq!(
        keys(end),
        [
            "type",
            "toolCallId",
            "toolName",
            "result",
            "isError",
            "durationMs"
        ]
    );
    let result = of_type(&events, "message_end")
        .into_iter()
        .map(|e| &e["message"])
        .find(|m| m["role"] == "toolResult")
        .unwrap();
    let result_keys = keys(result);
    assert_eq!(
        result_keys[result_keys.len() - 3..],
        ["isError", "durationMs", "timestamp"],
        "{result}"
    );
    assert_eq!(result["durationMs"], end["durationMs"]);

    // One run, no retry, settled last.
    let ends = of_type(&events, "agent_end");
    assert_eq!(ends.len(), 1);
    assert_eq!(ends[0]["willRetry"], false);
    assert_eq!(
        events.last().unwrap(),
        &json!({"type": "agent_settled", "aborted": false})
    );
    assert_eq!(of_type(&events, "agent_settled").len(), 1);

    // The session file holds the final messages as they were printed.
    let files = env.session_files();
    let stored: Vec<Value> = lines(&std::fs::read_to_string(&files[0]).unwrap())
        .into_iter()
        .filter(|e| e["type"] == "message" && e["message"]["role"] == "assistant")
        .map(|e| e["message"].clone())
        .collect();
    assert_eq!(stored, ended);
}

#[test]
fn a_retried_run_says_which_agent_end_is_retried_and_settles_once() {
    let mock = MockLlm::start(&json!([
        {"status": 500},
        {"status": 429, "error_body": {"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}},
        {"text": ["Recovered after 500 and 429."]}
    ]));
    let env = Env::new(&mock);
    env.write_agent(
        "settings.json",
        &json!({"retry": {"baseDelayMs": 1, "provider": {"maxRetries": 0}}}).to_string(),
    );
    let out = env.run(&[&JSON_RUN[..], &["-p", "Hello"]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = lines(&out.stdout);
    let will_retry: Vec<&Value> = of_type(&events, "agent_end")
        .iter()
        .map(|e| &e["willRetry"])
        .collect();
    assert_eq!(will_retry, [&json!(true), &json!(true), &json!(false)]);
    assert_eq!(of_type(&events, "agent_settled").len(), 1);
    assert_eq!(
        events.last().unwrap(),
        &json!({"type": "agent_settled", "aborted": false})
    );
    // A failed request never streamed: its message starts as the error it is, and still says
    // how long the call took and at which level.
    let started = assistant(&events, "message_start");
    assert_eq!(started[0]["stopReason"], "error");
    assert_eq!(started[2]["stopReason"], "pending");
    let failed = &assistant(&events, "message_end")[0];
    assert!(failed["durationMs"].is_u64(), "{failed}");
    assert_eq!(failed["thinkingLevel"], "off");
    assert!(failed.get("rawStopReason").is_none(), "{failed}");
}

#[test]
fn a_replay_gives_back_the_recorded_durations() {
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"id": "call_bash_1", "name": "bash", "arguments": {"command": "sleep 0.2; echo done"}}]},
        {"text": ["Done."]}
    ]));
    let env = Env::new(&mock);
    let cassette = env.cwd().join("run.cassette.jsonl");
    let cassette = cassette.to_str().unwrap();
    let out = env.run(&[&JSON_RUN[..], &["--record", cassette, "-p", "Run it"]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let durations = |stdout: &str| -> Vec<Value> {
        lines(stdout)
            .into_iter()
            .filter(|e| e["type"] == "message_end")
            .filter_map(|e| e["message"].get("durationMs").cloned())
            .collect()
    };
    let recorded = durations(&out.stdout);
    assert_eq!(recorded.len(), 3, "two answers and the tool result");

    let replayed = env.run(&["replay", cassette]);
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    assert_eq!(durations(&replayed.stdout), recorded);
    let check = env.run(&["replay", "--check", cassette]);
    assert_eq!(check.code, 0, "{}", check.stderr);
}
