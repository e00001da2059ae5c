//! The Anthropic decoder, fed the bytes the conformance kit's mock sends over the Messages API
//! (fixtures/mock-sse), produces the events and final messages the original produced for the
//! same responses (fixtures/anthropic-traces: the public scenarios a, b and c run by the original
//! against `mock-anthropic/mock-claude`), for any chunking.
//!
//! Then streams made up from the Messages API's events (message_start, text, thinking,
//! signature and tool-input blocks, message_delta, message_stop, ping, error), sometimes out of
//! order, torn or with foreign lines, with any line ending, cut anywhere: the same events
//! however they are cut.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use common::{
    comparable, decode_pieces, decode_split, finishes_once, mock_body, mock_claude, observe,
    responses, script_indices,
};
use pi_core::agent::StreamEvent;
use pi_core::message::StopReason;
use pi_providers::anthropic::Decoder;
use pi_providers::StreamEnd;
use proptest::prelude::*;
use serde_json::{json, Value};

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

/// Pi 1.5.2 fails a stream that ends without a stop reason (its answer stays `pending`): an
/// empty body, or one whose message stops without a `message_delta` naming a reason.
#[test]
fn a_stream_without_a_stop_reason_fails_as_pi_fails_it() {
    let stops_without_reason = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n",
        "event: message_stop\n",
        "data: {\"type\":\"message_stop\"}\n\n",
    );
    for body in ["", stops_without_reason] {
        let (_, message) = observe(decode(body.as_bytes(), &[], StreamEnd::Complete));
        assert_eq!(
            (message.stop_reason, message.error_message.as_deref()),
            (
                StopReason::Error,
                Some("Anthropic stream ended without a stop reason")
            ),
            "{body:?}"
        );
    }
}

#[test]
fn a_model_fallback_after_content_fails_as_pi_fails_it() {
    // Pi 1.5.2 skips a `fallback` block that comes first (the threads fixture has one) and
    // fails the answer when content came before it.
    let body = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"fallback\"}}\n\n",
    );
    let (_, message) = observe(decode(body.as_bytes(), &[], StreamEnd::Complete));
    assert_eq!(
        (message.stop_reason, message.error_message.as_deref()),
        (
            StopReason::Error,
            Some("Anthropic performed an unsupported mid-output model fallback")
        )
    );
}

// ---- events pi-ai repairs, and those it cannot parse ------------------------------------------
// Checked against Pi 1.5.2 by the extension conformance case provider_stream_anthropic_repair.

/// A stream of one text block whose deltas carry `datas` as their raw JSON data.
fn text_stream(deltas: &[&str]) -> String {
    let mut body = String::from(concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
    ));
    for text in deltas {
        body.push_str(&format!(
            "event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{text}\"}}}}\n\n"
        ));
    }
    body.push_str(concat!(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    ));
    body
}

/// The text of the answer `body` gives, checking that it did not fail.
fn answered_text(body: &str) -> String {
    let (_, message) = observe(decode(body.as_bytes(), &[], StreamEnd::Complete));
    assert_eq!(
        message.stop_reason,
        StopReason::Stop,
        "{:?}",
        message.error_message
    );
    let value = serde_json::to_value(&message.content).unwrap();
    value[0]["text"].as_str().unwrap().to_owned()
}

#[test]
fn a_raw_control_character_in_a_string_is_escaped() {
    assert_eq!(
        answered_text(&text_stream(&["a\tb", "\u{1}c"])),
        "a\tb\u{1}c"
    );
}

#[test]
fn a_backslash_starting_no_escape_is_kept_as_a_backslash() {
    assert_eq!(answered_text(&text_stream(&["C:\\q"])), "C:\\q");
}

#[test]
fn a_unicode_escape_without_four_hex_digits_is_kept_as_text() {
    assert_eq!(answered_text(&text_stream(&["\\u00e9 \\u12"])), "é \\u12");
}

#[test]
fn a_repaired_event_other_than_a_delta_is_read_too() {
    let body = text_stream(&["x"]).replacen("\"id\":\"m\"", "\"id\":\"m\t1\"", 1);
    let (_, message) = observe(decode(body.as_bytes(), &[], StreamEnd::Complete));
    assert_eq!(message.response_id.as_deref(), Some("m\t1"));
}

#[test]
fn an_event_that_does_not_parse_fails_with_pis_message_data_and_raw_lines() {
    let body = text_stream(&["fine"]).replacen(
        "event: content_block_stop\n",
        ": keep-alive\n\nevent: content_block_delta\ndata:{\"index\":0,\ndata: \"delta\":{}\n\nevent: content_block_stop\n",
        1,
    );
    let (_, message) = observe(decode(body.as_bytes(), &[], StreamEnd::Complete));
    assert_eq!(
        message.error_message.as_deref(),
        Some(concat!(
            "Could not parse Anthropic SSE event content_block_delta: Expected ',' or '}' after ",
            "property value in JSON at position 22 (line 2 column 11); ",
            "data={\"index\":0,\n\"delta\":{}; ",
            "raw=: keep-alive\\nevent: content_block_delta\\ndata:{\"index\":0,\\ndata: \"delta\":{}"
        ))
    );
    // Repaired and still not JSON: the message is the repaired text's.
    let body = text_stream(&["a\tb\"}"]);
    let (_, message) = observe(decode(body.as_bytes(), &[], StreamEnd::Complete));
    let error = message.error_message.unwrap();
    assert!(
        error.starts_with(concat!(
            "Could not parse Anthropic SSE event content_block_delta: Expected ',' or '}' after ",
            "property value in JSON at position 83 (line 1 column 84); data="
        )),
        "{error}"
    );
}

#[test]
fn a_message_event_without_data_does_not_parse() {
    let body = text_stream(&["done"]).replace(
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        "event: message_stop\n\n",
    );
    let (_, message) = observe(decode(body.as_bytes(), &[], StreamEnd::Complete));
    assert_eq!(
        message.error_message.as_deref(),
        Some("Could not parse Anthropic SSE event message_stop: Unexpected end of JSON input; data=; raw=event: message_stop")
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

    /// Text with raw control characters (and no quote or backslash; no line break, which ends
    /// an SSE line) written unescaped into a delta reads back as itself, however the stream is
    /// cut: pi-ai's repair escapes each.
    #[test]
    fn raw_control_characters_in_text_read_back_as_sent(
        text in "[a-z \\x00-\\x09\\x0b\\x0c\\x0e-\\x1f\\x7fé😀]{0,40}",
        cut in 0usize..1000,
    ) {
        let body = text_stream(&[&text]);
        let cut = cut % (body.len() + 1);
        let (_, message) = observe(decode(body.as_bytes(), &[cut], StreamEnd::Complete));
        prop_assert_eq!(message.stop_reason, StopReason::Stop, "{:?}", message.error_message);
        let value = serde_json::to_value(&message.content).unwrap();
        prop_assert_eq!(value[0]["text"].as_str().unwrap_or(""), text.as_str());
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

// ---- made-up Anthropic streams ---------------------------------------------------------------

/// Text as a model streams it, with what is hard to cut or to escape.
fn words() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(
        &[
            "a", "Hello", " ", "\"", "\\", "\n", "\r", "\t", "é", "✓", "😀", "{", "}", "data: ",
            "\n\n",
        ][..],
    );
    prop::collection::vec(pieces, 0..6).prop_map(|p| p.concat())
}

/// One content block: its `content_block_start`, deltas and `content_block_stop` (the stop
/// sometimes missing), at provider index `index`.
fn block(index: usize) -> impl Strategy<Value = Vec<Value>> {
    let start = move |block: Value| json!({"type": "content_block_start", "index": index, "content_block": block});
    let delta =
        move |delta: Value| json!({"type": "content_block_delta", "index": index, "delta": delta});
    let stop = json!({"type": "content_block_stop", "index": index});
    let text = prop::collection::vec(words(), 0..4).prop_map(move |texts| {
        let mut events = vec![start(json!({"type": "text", "text": ""}))];
        events.extend(
            texts
                .into_iter()
                .map(|t| delta(json!({"type": "text_delta", "text": t}))),
        );
        events
    });
    let thinking = (
        prop::collection::vec(words(), 0..4),
        prop::collection::vec("[A-Za-z0-9+/=]{0,8}", 0..3),
    )
        .prop_map(move |(texts, signatures)| {
            let mut events = vec![start(json!({"type": "thinking", "thinking": ""}))];
            events.extend(
                texts
                    .into_iter()
                    .map(|t| delta(json!({"type": "thinking_delta", "thinking": t}))),
            );
            events.extend(
                signatures
                    .into_iter()
                    .map(|s| delta(json!({"type": "signature_delta", "signature": s}))),
            );
            events
        });
    let redacted = Just(vec![start(
        json!({"type": "redacted_thinking", "data": "opaque"}),
    )]);
    let tool = (
        prop::sample::select(&["read", "bash"][..]),
        words(),
        prop::collection::vec(any::<prop::sample::Index>(), 0..4),
    )
        .prop_map(move |(name, path, cuts)| {
            // The input's JSON streamed in fragments cut anywhere (inside strings and escapes).
            let input = json!({"path": path, "limit": 10}).to_string();
            let chars: Vec<char> = input.chars().collect();
            let mut cuts: Vec<usize> = cuts.iter().map(|c| c.index(chars.len() + 1)).collect();
            cuts.sort_unstable();
            let mut events = vec![start(json!({"type": "tool_use", "id": format!("toolu_{index}"), "name": name, "input": {}}))];
            let mut last = 0;
            for cut in cuts.into_iter().chain([chars.len()]) {
                let fragment: String = chars[last..cut].iter().collect();
                events.push(delta(json!({"type": "input_json_delta", "partial_json": fragment})));
                last = cut;
            }
            events
        });
    (
        prop_oneof![3 => text, 2 => thinking, 1 => redacted, 2 => tool],
        prop::bool::weighted(0.9),
    )
        .prop_map(move |(mut events, stopped)| {
            if stopped {
                events.push(stop.clone());
            }
            events
        })
}

/// Events that may turn up anywhere: pings, errors, unknown kinds, blocks that are not there.
fn stray() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        json!({"type": "ping"}),
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        json!({"type": "content_block_delta", "index": 9, "delta": {"type": "text_delta", "text": "lost"}}),
        json!({"type": "content_block_stop", "index": 9}),
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "server_tool_use"}}),
        json!({"type": "message_delta", "delta": {"stop_reason": "something_new"}}),
        json!({"type": "future_event"}),
    ])
}

/// A made-up Messages stream as events: message_start, blocks, message_delta, message_stop,
/// with now and then a stray event inserted or one dropped.
fn message_events() -> impl Strategy<Value = Vec<Value>> {
    let blocks = prop::collection::vec(any::<u8>(), 0..4)
        .prop_flat_map(|n| (0..n.len()).map(block).collect::<Vec<_>>());
    let stop_reason = prop::sample::select(vec![
        json!("end_turn"),
        json!("tool_use"),
        json!("max_tokens"),
        json!("refusal"),
        Value::Null,
    ]);
    (
        blocks,
        stop_reason,
        (0u64..2_000, 0u64..2_000, 0u64..500),
        prop::collection::vec((any::<prop::sample::Index>(), stray()), 0..3),
        prop::option::of(any::<prop::sample::Index>()),
    )
        .prop_map(|(blocks, stop_reason, (input, output, cached), strays, dropped)| {
            let mut events = vec![json!({"type": "message_start", "message": {
                "id": "msg_1", "type": "message", "role": "assistant", "content": [],
                "usage": {"input_tokens": input, "output_tokens": 1, "cache_read_input_tokens": cached,
                          "cache_creation_input_tokens": 0}}})];
            events.extend(blocks.into_iter().flatten());
            events.push(json!({"type": "message_delta", "delta": {"stop_reason": stop_reason},
                               "usage": {"output_tokens": output}}));
            events.push(json!({"type": "message_stop"}));
            for (at, event) in strays {
                events.insert(at.index(events.len() + 1), event);
            }
            if let Some(at) = dropped {
                events.remove(at.index(events.len()));
            }
            events
        })
}

/// One event as SSE: `event:` and `data:` lines with the given line ending, sometimes torn,
/// with its data over two lines, without the `event:` line, or after a comment.
fn sse_record(event: &Value, form: usize, end: &str) -> String {
    let name = event["type"].as_str().unwrap_or("message");
    let data = event.to_string();
    match form {
        0 => format!(
            "event: {name}{end}data: {}{end}{end}",
            &data[..data.len() / 2]
        ),
        1 => match data.find(',') {
            Some(at) => format!(
                "event: {name}{end}data: {}{end}data: {}{end}{end}",
                &data[..=at],
                &data[at + 1..]
            ),
            None => format!("event: {name}{end}data: {data}{end}{end}"),
        },
        2 => format!("data: {data}{end}{end}"),
        3 => format!(": keep-alive{end}event:{name}{end}data:{data}{end}{end}"),
        _ => format!("event: {name}{end}data: {data}{end}{end}"),
    }
}

/// A made-up stream's bytes: each event in one of the forms above (mostly the plain one), lines
/// ended by `\n`, `\r\n` or `\r`; the last blank line sometimes missing.
fn anthropic_stream() -> impl Strategy<Value = Vec<u8>> {
    (
        message_events(),
        prop::collection::vec(prop_oneof![20 => Just(9usize), 1 => 0usize..4], 40),
        prop::sample::select(&["\n", "\r\n", "\r"][..]),
        any::<bool>(),
    )
        .prop_map(|(events, forms, end, cut_tail)| {
            let mut body: String = events
                .iter()
                .zip(forms.iter().cycle())
                .map(|(event, form)| sse_record(event, *form, end))
                .collect();
            if cut_tail {
                let kept = body.trim_end_matches(['\r', '\n']).len();
                body.truncate(kept);
            }
            body.into_bytes()
        })
}

proptest! {
    /// Split-independence over Anthropic-shaped streams: every cut (inside lines, line endings,
    /// JSON strings and UTF-8 sequences, empty pieces included) gives the same events as the
    /// whole body, and those events are one well-formed stream.
    #[test]
    fn made_up_streams_decode_the_same_however_cut(
        body in anthropic_stream(),
        cuts in prop::collection::vec((any::<prop::sample::Index>(), any::<bool>()), 0..12),
    ) {
        // A cut taken twice is an empty read there.
        let cuts: Vec<usize> = cuts
            .iter()
            .flat_map(|(c, twice)| vec![c.index(body.len() + 1); 1 + usize::from(*twice)])
            .collect();
        let whole = decode_pieces(Decoder::new(&mock_claude(), 0), &body, &[], StreamEnd::Complete);
        let split = decode_pieces(Decoder::new(&mock_claude(), 0), &body, &cuts, StreamEnd::Complete);
        prop_assert_eq!(&split, &whole, "{}", String::from_utf8_lossy(&body));
        let bytewise: Vec<usize> = (0..=body.len()).collect();
        let bytewise = decode_pieces(Decoder::new(&mock_claude(), 0), &body, &bytewise, StreamEnd::Complete);
        prop_assert_eq!(&bytewise, &whole);
        prop_assert!(finishes_once(&whole).is_ok(), "{:?}", finishes_once(&whole));
    }
}

/// Pi 1.5.2's usage and stop fields (the text as its `stream` and `calculateCost` write it,
/// float sums included): the hour-long cache writes (`cacheWrite1h`, 0 when not
/// sent) priced at twice the input price, `reasoning` only when `thinking_tokens` is sent, the
/// stop reason as sent, and the cost marked as computed.
#[test]
fn usage_carries_pi_152s_fields() {
    let mut model = mock_claude();
    model.cost.input = 3.0;
    model.cost.cache_write = 3.75;
    let start = |usage: &str| {
        format!(
            "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"m\",\"usage\":{usage}}}}}\n\n"
        )
    };
    let delta = |usage: &str| {
        format!(
            "event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"max_tokens\"}},\"usage\":{usage}}}\n\nevent: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
        )
    };
    let run = |body: String| {
        observe(decode_split(
            Decoder::new(&model, 0),
            body.as_bytes(),
            &[],
            StreamEnd::Complete,
        ))
        .1
    };
    let message = run(start(
        r#"{"input_tokens":10,"output_tokens":1,"cache_creation_input_tokens":300,"cache_creation":{"ephemeral_1h_input_tokens":100}}"#,
    ) + &delta(
        r#"{"output_tokens":9,"output_tokens_details":{"thinking_tokens":5}}"#,
    ));
    assert_eq!(message.raw_stop_reason.as_deref(), Some("max_tokens"));
    assert_eq!(message.stop_reason, StopReason::Length);
    assert_eq!(message.usage.cache_write_1h, Some(100));
    assert_eq!(message.usage.reasoning, Some(5));
    assert_eq!(
        message.usage.cost.cache_write,
        (3.75 * 200.0 + 3.0 * 2.0 * 100.0) / 1e6
    );
    assert_eq!(message.usage.cost.total_from_provider, Some(false));
    assert_eq!(
        pi_core::json::to_string(&message.usage).unwrap(),
        r#"{"input":10,"output":9,"cacheRead":0,"cacheWrite":300,"totalTokens":319,"cost":{"input":0.00003,"output":0,"cacheRead":0,"cacheWrite":0.00135,"total":0.0013800000000000002,"totalFromProvider":false},"cacheWrite1h":100,"reasoning":5}"#
    );
    // The delta may correct the hour-long writes; without them and without thinking tokens,
    // `cacheWrite1h` is 0 and `reasoning` absent.
    let message = run(
        start(r#"{"input_tokens":10,"cache_creation_input_tokens":300}"#)
            + &delta(r#"{"cache_creation":{"ephemeral_1h_input_tokens":50}}"#),
    );
    assert_eq!(message.usage.cache_write_1h, Some(50));
    let message = run(start(r#"{"input_tokens":10}"#) + &delta(r#"{"output_tokens":2}"#));
    assert_eq!(
        (message.usage.cache_write_1h, message.usage.reasoning),
        (Some(0), None)
    );
}

/// Pi 1.5.2 words a refusal with the provider's explanation (or its own text) and keeps the
/// stop reason as sent.
#[test]
fn a_refusal_ends_as_an_error_with_its_explanation() {
    let body = |details: &str| {
        format!(
            "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"m\",\"usage\":{{}}}}}}\n\nevent: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"refusal\"{details}}},\"usage\":{{}}}}\n\nevent: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
        )
    };
    let text = |details: &str| {
        let (_, message) = observe(decode(body(details).as_bytes(), &[], StreamEnd::Complete));
        assert_eq!(message.stop_reason, StopReason::Error);
        assert_eq!(message.raw_stop_reason.as_deref(), Some("refusal"));
        message.error_message.unwrap()
    };
    assert_eq!(
        text(r#","stop_details":{"explanation":"Not that."}"#),
        "Not that."
    );
    assert_eq!(text(""), "The model refused to complete the request");
}
