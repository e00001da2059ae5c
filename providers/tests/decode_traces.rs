//! The Chat Completions decoder, fed the exact bytes the conformance kit's mock sends
//! (fixtures/mock-sse, captured by scripts/capture-mock-sse.py), produces the events and the final
//! message Pi 1.5.2 produced for the same responses in the reference traces (`rawStopReason`,
//! `usage.reasoning`, `cost.totalFromProvider` included), whatever the chunking of the bytes;
//! arbitrary bytes never make it panic. d2's HTTP errors are still worded as 0.73.1 words them,
//! so d2 is checked against 0.73.1's trace, without 1.5's fields.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Tests read fixtures and run servers; the providers' IO ban applies to the library, not to its
// tests.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{
    comparable, decode_split, mock_body, mock_model, observe, responses, script_indices, traces,
    traces_152,
};
use pi_core::agent::assemble::Assembly;
use pi_core::agent::StreamEvent;
use pi_providers::http_error;
use pi_providers::openai_completions::Decoder;
use pi_providers::StreamEnd;
use proptest::prelude::*;
use serde_json::Value;

/// Decodes a body delivered in the given pieces.
fn decode(status: u16, body: &[u8], cuts: &[usize], timestamp: u64) -> Vec<StreamEvent> {
    if status != 200 {
        return http_error(&mock_model(), timestamp, status, body);
    }
    let decoder = Decoder::new(&mock_model(), timestamp);
    decode_split(decoder, body, cuts, StreamEnd::Complete)
}

/// The error texts of a scenario's failed answers in its Pi 1.5.2 trace, in order: 1.5.2 words
/// an error response differently from 0.73.1 (`"<status>: <body>"`), and the rest of a failed
/// message is the same.
fn error_texts_152(scenario: &str) -> Vec<Value> {
    let dir = traces().join("../traces-1.5.2").join(scenario);
    fs::read_to_string(dir.join("stdout.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "message_end" && e["message"]["stopReason"] == "error")
        .map(|e| e["message"]["errorMessage"].clone())
        .collect()
}

fn check(scenario: &str) {
    check_in(&traces_152().join(scenario), scenario, false);
}

/// Checks against the trace in `dir`; `without_152` leaves Pi 1.5's fields out of ours (for a
/// 0.73.1 trace).
fn check_in(dir: &Path, scenario: &str, without_152: bool) {
    let dir = dir.to_path_buf();
    let steps = script_indices(&dir, "openai-completions");
    let mut responses = responses(&dir);
    let failed = responses.iter().any(|(_, m)| m["stopReason"] == "error");
    let mut texts = match failed {
        true => error_texts_152(scenario).into_iter(),
        false => Vec::new().into_iter(),
    };
    for (_, message) in &mut responses {
        if message["stopReason"] == "error" {
            message["errorMessage"] = texts.next().expect("as many failures under 1.5.2");
        }
    }
    assert_eq!(
        steps.len(),
        responses.len(),
        "{scenario}: one response per request"
    );
    let mut checked = 0;
    for (step, (updates, message)) in steps.iter().zip(&responses) {
        if message["stopReason"] == "aborted" {
            continue;
        }
        let (status, body) = mock_body(scenario, *step, "openai");
        let (ours, mut final_message) = observe(decode(status, &body, &[], 0));
        assert_eq!(&ours, updates, "{scenario} step {step}: events");
        if without_152 {
            final_message.raw_stop_reason = None;
            final_message.usage.reasoning = None;
            final_message.usage.cost.total_from_provider = None;
        }
        assert_eq!(
            &comparable(&final_message),
            message,
            "{scenario} step {step}: final message"
        );
        let bytewise: Vec<usize> = (1..body.len()).collect();
        assert_eq!(
            observe(decode(status, &body, &bytewise, 0)).0,
            ours,
            "{scenario} step {step}: byte by byte"
        );
        checked += 1;
    }
    assert!(checked > 0, "{scenario}: nothing checked");
}

#[test]
fn a_plain_text() {
    check("a_plain_text");
}

#[test]
fn b_tool_read() {
    check("b_tool_read");
}

#[test]
fn c_two_tools() {
    check("c_two_tools");
}

#[test]
fn d2_retry_agent_level() {
    check_in(
        &traces().join("d2_retry_agent_level"),
        "d2_retry_agent_level",
        true,
    );
}

#[test]
fn e_rpc() {
    check("e_rpc");
}

#[test]
fn f_session_resume() {
    check("f_session_resume");
}

/// Every captured body: the kit's mock for each public scenario, and the real local LLM
/// (fixtures/llm-sse: a text reply and a forced tool call, captured with curl).
fn all_fixtures() -> Vec<(u16, Vec<u8>)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut bodies: Vec<PathBuf> = ["mock-sse", "llm-sse"]
        .iter()
        .flat_map(|d| {
            fs::read_dir(root.join(d))
                .unwrap()
                .flatten()
                .map(|e| e.path())
        })
        .filter(|p| p.to_str().unwrap().ends_with(".openai.body"))
        .collect();
    bodies.sort();
    bodies
        .iter()
        .map(|body| {
            let status = fs::read_to_string(body.with_extension("status")).unwrap();
            (status.trim().parse().unwrap(), fs::read(body).unwrap())
        })
        .collect()
}

#[test]
fn the_real_llm_streams_decode_like_pi_would() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/llm-sse");
    let text = fs::read(root.join("text.openai.body")).unwrap();
    let (kinds, message) = observe(decode(200, &text, &[], 0));
    assert!(
        kinds.len() > 3 && kinds[0]["type"] == "text_start",
        "{kinds:?}"
    );
    assert!(message.usage.output > 0);
    let tool = fs::read(root.join("tool.openai.body")).unwrap();
    let (_, message) = observe(decode(200, &tool, &[], 0));
    assert_eq!(message.stop_reason, pi_core::message::StopReason::ToolUse);
    assert_eq!(message.tool_calls().next().unwrap().name, "get_weather");
    let bytewise: Vec<usize> = (1..tool.len()).collect();
    assert_eq!(decode(200, &tool, &bytewise, 0), decode(200, &tool, &[], 0));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(256)))]

    #[test]
    fn any_chunking_gives_the_same_events(pick in any::<prop::sample::Index>(), cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..20)) {
        let fixtures = all_fixtures();
        let (status, body) = &fixtures[pick.index(fixtures.len())];
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c.index(body.len().max(1))).collect();
        cuts.sort_unstable();
        prop_assert_eq!(decode(*status, body, &cuts, 7), decode(*status, body, &[], 7));
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512), cut in any::<prop::sample::Index>()) {
        let mut decoder = Decoder::new(&mock_model(), 0);
        let mut events = decoder.start();
        let at = cut.index(bytes.len().max(1)).min(bytes.len());
        events.extend(decoder.feed(&bytes[..at]));
        events.extend(decoder.feed(&bytes[at..]));
        events.extend(decoder.finish(StreamEnd::Complete));
        let mut assembly = Assembly::default();
        for event in events {
            prop_assert!(assembly.apply(event).is_ok());
        }
    }

    #[test]
    fn arbitrary_sse_lines_never_panic(lines in proptest::collection::vec("data: [ -~]{0,40}", 0..20)) {
        let body = lines.join("\n\n");
        let mut assembly = Assembly::default();
        for event in decode(200, body.as_bytes(), &[], 0) {
            prop_assert!(assembly.apply(event).is_ok());
        }
    }
}

/// Pi 1.5.2's texts for error responses of the chat completions API (checked by running it
/// against the mock): the SDK's message when it holds the body, else `"<status>: <body>"`.
#[test]
fn error_messages_follow_the_sdks() {
    let model = mock_model();
    let message = |status, body: &str| match &http_error(&model, 0, status, body.as_bytes())[..] {
        [StreamEvent::Error { error, .. }] => error.error_message.clone().unwrap(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        message(
            500,
            r#"{"error":{"message":"mock error 500","type":"server_error"}}"#
        ),
        r#"500: {"message":"mock error 500","type":"server_error"}"#
    );
    assert_eq!(
        message(
            529,
            r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
        ),
        r#"529: {"type":"overloaded_error","message":"Overloaded"}"#
    );
    assert_eq!(
        message(400, r#"{"error":{"code":42}}"#),
        r#"400 {"code":42}"#,
        "the message already holds the body"
    );
    assert_eq!(message(502, "Bad gateway"), "502 Bad gateway");
    assert_eq!(message(503, ""), "503 status code (no body)");
    assert_eq!(
        message(404, r#"{"detail":"x"}"#),
        r#"404 {"detail":"x"}"#,
        "without an `error` the SDK takes the whole body, and its message holds it"
    );
}
