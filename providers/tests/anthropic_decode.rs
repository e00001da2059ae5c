//! The Anthropic decoder, fed the bytes the conformance kit's mock sends over the Messages API
//! (fixtures/mock-sse), produces the events and final messages the original produced for the
//! same responses (fixtures/anthropic-traces: the public scenarios a, b and c run by the original
//! against `mock-anthropic/mock-claude`), for any chunking.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use common::{
    comparable, decode_split, mock_body, mock_claude, observe, responses, script_indices,
};
use pi_core::agent::StreamEvent;
use pi_core::message::StopReason;
use pi_providers::anthropic::Decoder;
use pi_providers::StreamEnd;
use proptest::prelude::*;

fn decode(body: &[u8], cuts: &[usize], end: StreamEnd) -> Vec<StreamEvent> {
    decode_split(Decoder::new(&mock_claude(), 0), body, cuts, end)
}

fn check(scenario: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/anthropic-traces")
        .join(scenario);
    let steps = script_indices(&dir, "anthropic-messages");
    let expected = responses(&dir);
    assert_eq!(steps.len(), expected.len());
    for (step, (updates, message)) in steps.iter().zip(&expected) {
        let (_, body) = mock_body(scenario, *step, "anthropic");
        let (ours, final_message) = observe(decode(&body, &[], StreamEnd::Complete));
        assert_eq!(&ours, updates, "{scenario} step {step}: events");
        assert_eq!(
            &comparable(&final_message),
            message,
            "{scenario} step {step}: final message"
        );
        let bytewise: Vec<usize> = (1..body.len()).collect();
        assert_eq!(
            observe(decode(&body, &bytewise, StreamEnd::Complete)).0,
            ours,
            "{scenario}: byte by byte"
        );
    }
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
fn cut_streams_and_aborts_fail_as_pi_fails_them() {
    let (_, body) = mock_body("a_plain_text", 0, "anthropic");
    // Cut after whole events: the stream started but never stopped.
    let boundary = body
        .windows(2)
        .enumerate()
        .filter(|(_, w)| w == b"\n\n")
        .nth(2)
        .unwrap()
        .0
        + 2;
    let cut = &body[..boundary];
    let (_, message) = observe(decode(cut, &[], StreamEnd::Complete));
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some("Anthropic stream ended before message_stop")
    );
    // Cut inside an event: the SDK hands over the torn event, which does not parse.
    let data = boundary
        + body[boundary..]
            .windows(6)
            .position(|w| w == b"data: ")
            .unwrap();
    let (_, message) = observe(decode(&body[..data + 12], &[], StreamEnd::Complete));
    assert!(message
        .error_message
        .as_deref()
        .unwrap()
        .starts_with("Could not parse Anthropic SSE event "));
    let (_, message) = observe(decode(cut, &[], StreamEnd::Aborted));
    assert_eq!(
        (message.stop_reason, message.error_message.as_deref()),
        (StopReason::Aborted, Some("Request was aborted"))
    );
    let error = b"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n";
    let (_, message) = observe(decode(error, &[], StreamEnd::Complete));
    assert_eq!(
        message.error_message.as_deref(),
        Some("{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}")
    );
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let mut assembly = pi_core::agent::assemble::Assembly::default();
        for event in decode(&bytes, &[bytes.len() / 3], StreamEnd::Complete) {
            prop_assert!(assembly.apply(event).is_ok());
        }
    }

    #[test]
    fn arbitrary_events_never_panic(lines in proptest::collection::vec(
        ("(message_start|content_block_start|content_block_delta|content_block_stop|message_delta|message_stop|error)",
         "\\{\"type\": ?\"[a-z_]{0,20}\"(, ?\"index\": ?[0-3])?[ -~]{0,30}\\}"), 0..16)) {
        let body: String = lines.iter().map(|(e, d)| format!("event: {e}\ndata: {d}\n\n")).collect();
        let mut assembly = pi_core::agent::assemble::Assembly::default();
        for event in decode(body.as_bytes(), &[], StreamEnd::Complete) {
            prop_assert!(assembly.apply(event).is_ok());
        }
    }
}

/// Token counts come from the network: absurd ones saturate instead of overflowing.
#[test]
fn absurd_token_counts_saturate() {
    let body = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":1e30,\"output_tokens\":1e30,\"cache_read_input_tokens\":1e30}}}\n\n";
    let events = decode(body.as_bytes(), &[], StreamEnd::Aborted);
    let (_, message) = observe(events);
    assert_eq!(message.usage.total_tokens, u64::MAX);
}
