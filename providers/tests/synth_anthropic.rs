//! The Anthropic Messages synthesizer is the reverse of the anthropic decoder: any message the
//! API can express decodes back from its stream unchanged, however the bytes are cut; anything
//! else is refused with a reason; and the wire spelling is pinned by a hand-written example.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::message::{
    AssistantMessage, ContentBlock, ImageContent, StopReason, TextContent, ThinkingContent,
    ToolCall, Usage,
};
use pi_core::model::Model;
use pi_providers::catalog::builtin;
use pi_providers::cost::{calculate_cost, total_tokens};
use pi_providers::synth::{decode, synthesize, SynthesizedResponse, Unrepresentable};
use proptest::collection::vec;
use proptest::option;
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{json, Map, Value};

fn model() -> Model {
    builtin()
        .get_model("anthropic", "claude-sonnet-4-5")
        .expect("claude-sonnet-4-5 is in the catalog")
        .clone()
}

/// The usage the decoder computes from these token counts.
fn usage(model: &Model, input: u64, output: u64, cache_read: u64, cache_write: u64) -> Usage {
    let mut usage = Usage {
        input,
        output,
        cache_read,
        cache_write,
        // Pi 1.5.2: 0 unless the API reports hour-long writes.
        cache_write_1h: Some(0),
        ..Usage::default()
    };
    usage.total_tokens = total_tokens(&usage);
    usage.cost = calculate_cost(model, &usage);
    usage.cost.total_from_provider = Some(false);
    usage
}

/// A message of `model` as the decoder heads it.
fn message(model: &Model, content: Vec<ContentBlock>, stop_reason: StopReason) -> AssistantMessage {
    AssistantMessage {
        api: model.api.clone(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        timestamp: 1_700_000_000_000,
        content,
        stop_reason,
        usage: usage(model, 0, 0, 0, 0),
        // Pi 1.5.2 keeps the stop reason the API sent.
        raw_stop_reason: match stop_reason {
            StopReason::Stop => Some("end_turn".into()),
            StopReason::Length => Some("max_tokens".into()),
            StopReason::ToolUse => Some("tool_use".into()),
            _ => None,
        },
        ..AssistantMessage::default()
    }
}

fn thinking(text: &str, signature: &str) -> ContentBlock {
    ContentBlock::Thinking(ThinkingContent {
        thinking: text.into(),
        thinking_signature: Some(signature.into()),
        ..ThinkingContent::default()
    })
}

fn redacted(data: &str) -> ContentBlock {
    ContentBlock::Thinking(ThinkingContent {
        thinking: "[Reasoning redacted]".into(),
        thinking_signature: Some(data.into()),
        redacted: Some(true),
        ..ThinkingContent::default()
    })
}

fn tool_call(id: &str, name: &str, arguments: Value) -> ContentBlock {
    ContentBlock::ToolCall(ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
        ..ToolCall::default()
    })
}

fn body(response: &SynthesizedResponse) -> String {
    let bytes: Vec<u8> = response.body();
    String::from_utf8(bytes).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Strategies: messages the Messages API can express.

/// Text with the characters JSON and SSE framing have to take care of, and any others.
fn text() -> impl Strategy<Value = String> {
    let tricky = prop::sample::select(vec![
        '"', '\\', '/', '\n', '\r', '\t', '\u{0}', '\u{1f}', '\u{7f}', '\u{2028}', '\u{feff}',
        '😀', 'é', '中', ' ', ':', '{', '}', '[', ']',
    ]);
    vec(prop_oneof![any::<char>(), tricky], 0..24).prop_map(String::from_iter)
}

/// Token counts, small as usual or anywhere a double holds exactly (`u64::MAX` included: the
/// decoder's cast saturates back to it).
fn tokens() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 0u64..300_000,
        1 => any::<u64>().prop_map(|n| n as f64 as u64),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f)
            .map(Value::Number)),
        prop::sample::select(vec![0.0, -0.0, 1.0, -2.0, 0.1, 1e21, 1e-7, 5e-324])
            .prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 40, 6, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..6).prop_map(Value::Array),
            vec((text(), inner), 0..6).prop_map(|pairs| Value::Object(pairs.into_iter().collect())),
        ]
    })
}

fn arguments() -> impl Strategy<Value = Value> {
    vec((text(), json_value()), 0..6)
        .prop_map(|pairs| Value::Object(pairs.into_iter().collect::<Map<_, _>>()))
}

/// Arguments, sometimes inside more levels than serde_json parses (the decoder then reads them
/// with its lenient parser).
fn deep_arguments() -> impl Strategy<Value = Value> {
    prop_oneof![
        6 => arguments(),
        1 => (arguments(), 120usize..140).prop_map(|(args, depth)| {
            (0..depth).fold(args, |inner, _| json!({ "d": [inner] }))
        }),
    ]
}

fn block() -> impl Strategy<Value = ContentBlock> {
    let id = prop_oneof!["toolu_[0-9A-Za-z]{24}", text()];
    prop_oneof![
        text().prop_map(ContentBlock::text),
        (text(), text()).prop_map(|(t, s)| thinking(&t, &s)),
        text().prop_map(|data| redacted(&data)),
        (id, text(), deep_arguments()).prop_map(|(id, name, args)| tool_call(&id, &name, args)),
    ]
}

/// A stop reason, or an error with its text: the API's error JSON or any text without a
/// carriage return.
fn ending() -> impl Strategy<Value = (StopReason, Option<String>)> {
    let error_json = text().prop_map(|m| {
        json!({"type": "error", "error": {"type": "overloaded_error", "message": m}}).to_string()
    });
    let error_text = prop_oneof![error_json, text().prop_map(|t| t.replace('\r', "\n"))];
    prop_oneof![
        3 => Just((StopReason::Stop, None)),
        2 => Just((StopReason::Length, None)),
        2 => Just((StopReason::ToolUse, None)),
        2 => error_text.prop_map(|t| (StopReason::Error, Some(t))),
    ]
}

fn any_message() -> impl Strategy<Value = AssistantMessage> {
    (
        vec(block(), 0..6),
        (tokens(), tokens(), tokens(), tokens()),
        ending(),
        option::of(prop_oneof!["msg_[0-9A-Za-z]{24}", text()]),
        any::<u64>(),
    )
        .prop_map(
            |(content, counts, (stop_reason, error_message), response_id, timestamp)| {
                let model = model();
                let (input, output, cache_read, cache_write) = counts;
                AssistantMessage {
                    usage: usage(&model, input, output, cache_read, cache_write),
                    error_message,
                    response_id,
                    timestamp,
                    ..message(&model, content, stop_reason)
                }
            },
        )
}

proptest! {
    #[test]
    fn every_expressible_message_decodes_back_however_cut(
        m in any_message(),
        cuts in vec(any::<Index>(), 0..24),
    ) {
        let model = model();
        let response = synthesize(&model, &m)?;
        prop_assert_eq!(response.status, 200);
        for chunk in &response.chunks {
            let chunk = std::str::from_utf8(chunk).unwrap();
            prop_assert!(chunk.starts_with("event: "), "{chunk:?}");
            prop_assert_eq!(chunk.find("\n\n"), Some(chunk.len() - 2), "one event per read: {:?}", chunk);
        }
        prop_assert_eq!(&decode(&model, m.timestamp, &response), &m);
        let length = response.chunks.iter().map(|c| c.len()).sum::<usize>() + 1;
        let cuts: Vec<usize> = cuts.iter().map(|i| i.index(length)).collect();
        prop_assert_eq!(&decode(&model, m.timestamp, &response.recut(&cuts)), &m, "cut at {:?}", cuts);
    }
}

// ---------------------------------------------------------------------------------------------
// The wire spelling.

fn example() -> AssistantMessage {
    let model = model();
    AssistantMessage {
        response_id: Some("msg_01XYZ".into()),
        usage: usage(&model, 12, 34, 5, 6),
        ..message(
            &model,
            vec![
                thinking("Let me look.", "c2ln"),
                redacted("b3BhcXVl"),
                ContentBlock::text("Reading it."),
                tool_call(
                    "toolu_01A",
                    "read",
                    json!({"path": "a \"b\".txt", "limit": 2.0}),
                ),
            ],
            StopReason::ToolUse,
        )
    }
}

#[test]
fn a_small_message_is_spelled_as_the_api_spells_it() {
    let response = synthesize(&model(), &example()).unwrap();
    let expected: Vec<String> = [
        ("message_start", r#"{"type":"message_start","message":{"id":"msg_01XYZ","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":34,"cache_read_input_tokens":5,"cache_creation_input_tokens":6}}}"#),
        ("content_block_start", r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#),
        ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Let me look."}}"#),
        ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2ln"}}"#),
        ("content_block_stop", r#"{"type":"content_block_stop","index":0}"#),
        ("content_block_start", r#"{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"b3BhcXVl"}}"#),
        ("content_block_stop", r#"{"type":"content_block_stop","index":1}"#),
        ("content_block_start", r#"{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}"#),
        ("content_block_delta", r#"{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Reading it."}}"#),
        ("content_block_stop", r#"{"type":"content_block_stop","index":2}"#),
        ("content_block_start", r#"{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_01A","name":"read","input":{}}}"#),
        ("content_block_delta", r#"{"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"path\":\"a \\\"b\\\".txt\",\"limit\":2.0}"}}"#),
        ("content_block_stop", r#"{"type":"content_block_stop","index":3}"#),
        ("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":34}}"#),
        ("message_stop", r#"{"type":"message_stop"}"#),
    ]
    .iter()
    .map(|(name, data)| format!("event: {name}\ndata: {data}\n\n"))
    .collect();
    let chunks: Vec<&str> = response
        .chunks
        .iter()
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    assert_eq!(chunks, expected);
    assert_eq!(response.status, 200);
    assert_eq!(
        response.headers,
        vec![("content-type".to_owned(), "text/event-stream".to_owned())]
    );
}

#[test]
fn the_example_decodes_back_read_byte_by_byte() {
    let model = model();
    let m = example();
    let response = synthesize(&model, &m).unwrap();
    assert_eq!(decode(&model, m.timestamp, &response), m);
    let every_byte: Vec<usize> = (1..body(&response).len()).collect();
    let bytewise = response.recut(&every_byte);
    assert!(bytewise.chunks.iter().all(|c| c.len() == 1));
    assert_eq!(decode(&model, m.timestamp, &bytewise), m);
}

#[test]
fn an_error_is_the_api_error_event_with_the_text_as_its_data() {
    let model = model();
    let text = "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n second line\n";
    let m = AssistantMessage {
        error_message: Some(text.into()),
        usage: usage(&model, 7, 2, 0, 0),
        ..message(
            &model,
            vec![ContentBlock::text("Partial")],
            StopReason::Error,
        )
    };
    let response = synthesize(&model, &m).unwrap();
    let last = response.chunks.last().unwrap();
    assert_eq!(
        std::str::from_utf8(last).unwrap(),
        "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\ndata:  second line\ndata: \n\n"
    );
    assert!(!body(&response).contains("message_delta"));
    assert_eq!(decode(&model, m.timestamp, &response), m);
}

#[test]
fn a_message_without_response_id_starts_without_one() {
    let model = model();
    let m = message(&model, Vec::new(), StopReason::Stop);
    let response = synthesize(&model, &m).unwrap();
    assert!(body(&response).starts_with(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"type\":\"message\","
    ));
    assert_eq!(decode(&model, m.timestamp, &response), m);
}

#[test]
fn an_answer_of_another_model_names_it_and_decodes_back() {
    // Pi 1.5.2 sets `responseModel` when `message_start` names another model (a fallback).
    let model = model();
    let mut m = message(&model, Vec::new(), StopReason::Stop);
    m.response_model = Some("claude-opus-5".into());
    let response = synthesize(&model, &m).unwrap();
    assert!(body(&response).contains("\"model\":\"claude-opus-5\""));
    assert_eq!(decode(&model, m.timestamp, &response), m);
}

// ---------------------------------------------------------------------------------------------
// Refusals.

/// A representable message that each refusal below changes in one way.
fn base() -> AssistantMessage {
    let model = model();
    AssistantMessage {
        response_id: Some("msg_1".into()),
        usage: usage(&model, 10, 20, 30, 40),
        ..message(&model, vec![ContentBlock::text("hi")], StopReason::Stop)
    }
}

/// The reason `change` makes [`base`] unrepresentable.
fn refused(change: impl FnOnce(&mut AssistantMessage)) -> String {
    let model = model();
    assert!(
        synthesize(&model, &base()).is_ok(),
        "the base message is representable"
    );
    let mut m = base();
    change(&mut m);
    match synthesize(&model, &m) {
        Err(Unrepresentable { api, why }) => {
            assert_eq!(api, "anthropic-messages");
            why
        }
        Ok(response) => panic!(
            "refused nothing; decodes to {:?}",
            decode(&model, m.timestamp, &response)
        ),
    }
}

#[test]
fn endings_the_decoder_never_makes_are_refused() {
    let why = refused(|m| m.stop_reason = StopReason::Aborted);
    assert!(why.contains("abort"), "{why}");
    let why = refused(|m| m.stop_reason = StopReason::Error);
    assert!(why.contains("error a text"), "{why}");
    let why = refused(|m| m.error_message = Some("boom".into()));
    assert!(why.contains("only an error"), "{why}");
    let why = refused(|m| {
        m.stop_reason = StopReason::Error;
        m.error_message = Some("line\r\nbreak".into());
    });
    assert!(why.contains("carriage return"), "{why}");
}

#[test]
fn usages_the_decoder_would_not_compute_are_refused() {
    let why = refused(|m| m.usage.total_tokens += 1);
    assert!(why.contains("usage"), "{why}");
    let why = refused(|m| m.usage.cost.total *= 2.0);
    assert!(why.contains("usage"), "{why}");
    let why = refused(|m| m.usage.cost.extra.insert("x".into(), json!(1)));
    assert!(why.contains("usage"), "{why}");
    let model = model();
    let inexact = (1u64 << 53) + 1;
    let why = refused(|m| m.usage = usage(&model, inexact, 0, 0, 0));
    assert!(why.contains(&inexact.to_string()), "{why}");
}

#[test]
fn a_message_of_another_model_is_refused() {
    let why = refused(|m| m.model = "claude-opus-4-1".into());
    assert!(why.contains("claude-opus-4-1"), "{why}");
    let why = refused(|m| m.provider = "xiaomi".into());
    assert!(why.contains("xiaomi"), "{why}");
    let why = refused(|m| m.api = "openai-completions".into());
    assert!(why.contains("openai-completions"), "{why}");
}

#[test]
fn fields_the_decoder_never_sets_are_refused() {
    let id = model().id;
    let why = refused(|m| m.response_model = Some(id));
    assert!(why.contains("response model"), "{why}");
    let why = refused(|m| m.diagnostics = Some(vec![json!("d")]));
    assert!(why.contains("diagnostics"), "{why}");
    let why = refused(|m| m.extra.insert("x".into(), json!(1)));
    assert!(why.contains("unknown fields"), "{why}");
}

#[test]
fn blocks_the_decoder_never_makes_are_refused() {
    let image = ContentBlock::Image(ImageContent {
        data: "AAAA".into(),
        mime_type: "image/png".into(),
        ..ImageContent::default()
    });
    let why = refused(|m| m.content.push(image));
    assert!(why.contains("image"), "{why}");
    let signed = ContentBlock::Text(TextContent {
        text: "t".into(),
        text_signature: Some("s".into()),
        ..TextContent::default()
    });
    let why = refused(|m| m.content.push(signed));
    assert!(why.contains("text block"), "{why}");
    let unsigned = ContentBlock::Thinking(ThinkingContent {
        thinking: "t".into(),
        ..ThinkingContent::default()
    });
    let why = refused(|m| m.content.push(unsigned));
    assert!(why.contains("signature"), "{why}");
    let unredacted = ContentBlock::Thinking(ThinkingContent {
        thinking: "t".into(),
        thinking_signature: Some("s".into()),
        redacted: Some(false),
        ..ThinkingContent::default()
    });
    let why = refused(|m| m.content.push(unredacted));
    assert!(why.contains("redacted"), "{why}");
}

#[test]
fn redacted_thinking_is_only_the_placeholder_and_its_data() {
    let mut shown = redacted("data");
    if let ContentBlock::Thinking(t) = &mut shown {
        t.thinking = "the reasoning after all".into();
    }
    let why = refused(|m| m.content.push(shown));
    assert!(why.contains("[Reasoning redacted]"), "{why}");
    let mut without_data = redacted("data");
    if let ContentBlock::Thinking(t) = &mut without_data {
        t.thinking_signature = None;
    }
    let why = refused(|m| m.content.push(without_data));
    assert!(why.contains("data"), "{why}");
}

#[test]
fn tool_calls_the_decoder_never_makes_are_refused() {
    let why = refused(|m| m.content.push(tool_call("t", "ls", json!([1, 2]))));
    assert!(why.contains("object"), "{why}");
    let why = refused(|m| m.content.push(tool_call("t", "ls", Value::Null)));
    assert!(why.contains("object"), "{why}");
    let mut signed = tool_call("t", "ls", json!({}));
    if let ContentBlock::ToolCall(call) = &mut signed {
        call.thought_signature = Some("sig".into());
    }
    let why = refused(|m| m.content.push(signed));
    assert!(why.contains("thought signature"), "{why}");
}

/// `value` inside `depth` more levels, objects and arrays in turn.
fn nested(value: Value, depth: usize) -> Value {
    (0..depth).fold(value, |inner, level| {
        if level % 2 == 0 {
            json!({ "a\u{e9}\"": inner })
        } else {
            json!([1.5, inner])
        }
    })
}

/// serde_json parses at most 128 levels; the decoder reads deeper arguments with its lenient
/// parser, which must give the same value.
#[test]
fn arguments_nested_deeper_than_serde_json_parses_decode_back() {
    let model = model();
    let leaf = json!({"s": "q\"\\\u{1F600}\n\u{0}", "f": 2.0, "z": -0.0, "e": 1e-7, "big": u64::MAX,
        "neg": i64::MIN, "arr": [[], {}, null, true, false], "": ""});
    for depth in [126, 127, 128, 129, 300] {
        let mut m = base();
        m.content.push(tool_call(
            "t",
            "deep",
            json!({ "x": nested(leaf.clone(), depth) }),
        ));
        let response = synthesize(&model, &m).unwrap();
        assert_eq!(decode(&model, m.timestamp, &response), m, "depth {depth}");
    }
}

#[test]
fn a_refusal_names_the_api_and_the_reason() {
    let model = model();
    let mut m = base();
    m.stop_reason = StopReason::Aborted;
    let error = synthesize(&model, &m).unwrap_err();
    assert!(error
        .to_string()
        .starts_with("anthropic-messages cannot stream this message: "));
}
