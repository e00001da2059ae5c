//! The nested-call record's limits (Pi 1.5's `NESTED_CALL_LIMITS`) and texts.

#![allow(clippy::unwrap_used)]

use super::*;

fn call(id: &str, arguments: Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "read".into(),
        arguments,
        ..ToolCall::default()
    }
}

fn answer(call: ToolCall, text: &str, is_error: bool) -> NestedAnswer {
    NestedAnswer {
        tool_call: call,
        result: ToolResult::error(text),
        is_error,
        duration_ms: None,
    }
}

#[test]
fn no_call_means_no_record_and_an_unfinished_call_leaves_it_incomplete() {
    let mut recorder = Recorder::default();
    assert_eq!(recorder.snapshot(), None);
    recorder.start(&call("a/1", json!({})));
    assert_eq!(
        recorder.snapshot().unwrap(),
        json!({"calls": [{"id": "a/1", "name": "read", "status": "unfinished", "arguments": {}}],
               "complete": false})
    );
}

#[test]
fn calls_beyond_the_count_are_dropped_and_the_record_is_incomplete() {
    let mut recorder = Recorder::default();
    for n in 0..MAX_CALLS {
        let index = recorder.start(&call(&format!("a/{n}"), json!({}))).unwrap();
        recorder.finish(index, &answer(call("x", json!({})), "", false), 1);
    }
    assert_eq!(recorder.snapshot().unwrap()["complete"], true);
    assert_eq!(recorder.start(&call("a/257", json!({}))), None);
    let record = recorder.snapshot().unwrap();
    assert_eq!(record["calls"].as_array().unwrap().len(), MAX_CALLS);
    assert_eq!(record["complete"], false);
}

#[test]
fn arguments_over_the_limits_are_replaced_by_their_size() {
    let mut recorder = Recorder::default();
    // `{"t":"…"}`: 8 bytes around the text.
    let big = json!({"t": "x".repeat(MAX_ARGUMENT_BYTES_PER_CALL - 7)});
    let index = recorder.start(&call("a/1", big)).unwrap();
    let record = &recorder.calls[index];
    assert_eq!(record["argumentsBytes"], MAX_ARGUMENT_BYTES_PER_CALL + 1);
    assert!(record.get("arguments").is_none());
    assert!(recorder.incomplete);

    // Four calls of 8 KiB fill the total; the fifth is over it.
    let mut recorder = Recorder::default();
    let full = json!({"t": "x".repeat(MAX_ARGUMENT_BYTES_PER_CALL - 8)});
    for n in 0..4 {
        recorder
            .start(&call(&format!("a/{n}"), full.clone()))
            .unwrap();
    }
    assert!(!recorder.incomplete);
    let index = recorder.start(&call("a/5", json!({}))).unwrap();
    assert_eq!(recorder.calls[index]["argumentsBytes"], 2);
    assert!(recorder.incomplete);
}

#[test]
fn an_errors_text_is_cut_in_utf16_units_and_usage_is_summed() {
    let mut recorder = Recorder::default();
    let index = recorder.start(&call("a/1", json!({}))).unwrap();
    let text = format!("{}😀tail", "e".repeat(MAX_ERROR_CHARS - 1));
    recorder.finish(index, &answer(call("a/1", json!({})), &text, true), 3);
    let record = &recorder.calls[index];
    assert_eq!(record["status"], "error");
    assert_eq!(record["durationMs"], 3);
    // The emoji's two units do not fit in the last one: JavaScript's slice would cut it in
    // half; the record keeps whole characters.
    assert_eq!(record["error"], "e".repeat(MAX_ERROR_CHARS - 1));
    assert_eq!(js_prefix("ab", 5), "ab");

    let usage = json!({"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3,
        "cost": {"input": 0.5, "output": 0.25, "cacheRead": 0, "cacheWrite": 0, "total": 0.75}});
    recorder.add_usage(&usage);
    recorder.add_usage(&usage);
    let sum = recorder.usage.clone().unwrap();
    assert_eq!(sum["input"], 2);
    assert_eq!(sum["totalTokens"], 6);
    assert_eq!(sum["cost"]["total"], 1.5);
}
