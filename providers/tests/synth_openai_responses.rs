//! The OpenAI Responses stream synthesizer against the Responses decoder: every message the API
//! can express (text, reasoning items, function calls, a last text or thinking block left
//! unfinished, usage with cache writes and reasoning under any service tier, every stop reason,
//! raw stop reason and error wording, response ids) decodes back from
//! its synthesized stream, however the bytes are cut; messages the decoder can never make are
//! refused with `Unrepresentable` by the synthesizer itself; the wire spelling of a small message
//! is pinned byte for byte.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::message::{
    AssistantMessage, ContentBlock, ImageContent, StopReason, TextContent, ThinkingContent,
    ToolCall, Usage,
};
use pi_core::model::Model;
use pi_providers::catalog::builtin;
use pi_providers::cost::calculate_cost;
// The module's own function, not the dispatcher `synth::synthesize` (which also decodes what it
// returns and refuses a difference): these tests check that the bytes are right by themselves.
use pi_providers::synth::openai_responses::synthesize;
use pi_providers::synth::{decode, SynthesizedResponse, Unrepresentable};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{json, Map, Value};

/// Responses models of the catalog: `gpt-5.5` has its own priority price.
const MODELS: [&str; 3] = ["gpt-5-mini", "gpt-5.5", "gpt-4.1"];

fn model(id: &str) -> Model {
    let model = builtin().get_model("openai", id).expect("a built-in model");
    assert_eq!(model.api, "openai-responses");
    model.clone()
}

fn json_text(value: &Value) -> String {
    pi_core::json::to_string(value).unwrap()
}

/// A value as it arrives over the wire: written and read back, so numbers take the form JSON
/// gives them (`1.0` arrives as `1`).
fn wire(value: Value) -> Value {
    serde_json::from_str(&json_text(&value)).unwrap()
}

/// Text with what JSON must escape, unicode beyond the BMP, line separators and plain words.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9 .,:!?]{0,24}",
        prop::collection::vec(any::<char>(), 0..12).prop_map(String::from_iter),
        prop::collection::vec(
            prop::sample::select(vec![
                '"', '\\', '/', '\n', '\r', '\t', '\u{0}', '\u{1f}', '\u{7f}', '\u{2028}', 'é',
                '😀', '{', '}', ':', '|', ' ',
            ]),
            0..10
        )
        .prop_map(String::from_iter),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("JSON has no infinities", |f| f.is_finite())
            .prop_map(Value::from),
        text().prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 32, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((text(), inner), 0..5)
                .prop_map(|fields| Value::Object(fields.into_iter().collect())),
        ]
    })
}

/// Tool-call arguments: a JSON object as the API streams it.
fn arguments() -> impl Strategy<Value = Value> {
    prop::collection::vec((text(), json_value()), 0..5)
        .prop_map(|fields| wire(Value::Object(fields.into_iter().collect())))
}

fn text_block() -> impl Strategy<Value = ContentBlock> {
    let phase = prop::option::of(prop::sample::select(vec!["commentary", "final_answer"]));
    (text(), "msg_[a-z0-9]{1,12}", phase).prop_map(|(text, id, phase)| {
        let mut signature = json!({"v": 1, "id": id});
        if let Some(phase) = phase {
            signature["phase"] = phase.into();
        }
        ContentBlock::Text(TextContent {
            text,
            text_signature: Some(json_text(&signature)),
            ..TextContent::default()
        })
    })
}

/// A thinking block whose signature is the reasoning item: with a summary (OpenAI's models),
/// with raw reasoning content (open-weight models), or with neither (text that only streamed).
fn thinking_block() -> impl Strategy<Value = ContentBlock> {
    let parts = prop::collection::vec(text(), 0..4);
    let encrypted = prop::option::of("[A-Za-z0-9+/]{0,40}={0,2}");
    (0..3usize, parts, text(), "rs_[a-z0-9]{1,12}", encrypted).prop_map(
        |(kind, parts, streamed, id, encrypted)| {
            let mut item = Map::new();
            item.insert("id".into(), id.into());
            item.insert("type".into(), "reasoning".into());
            if let Some(encrypted) = encrypted {
                item.insert("encrypted_content".into(), encrypted.into());
            }
            let listed = |kind: &str| -> Value {
                parts
                    .iter()
                    .map(|text| json!({"type": kind, "text": text}))
                    .collect()
            };
            let thinking = match kind {
                0 => {
                    item.insert("summary".into(), listed("summary_text"));
                    parts.join("\n\n")
                }
                1 => {
                    item.insert("summary".into(), json!([]));
                    item.insert("content".into(), listed("reasoning_text"));
                    parts.join("\n\n")
                }
                _ => {
                    item.insert("summary".into(), json!([]));
                    streamed
                }
            };
            ContentBlock::Thinking(ThinkingContent {
                thinking,
                thinking_signature: Some(json_text(&Value::Object(item))),
                ..ThinkingContent::default()
            })
        },
    )
}

fn tool_call_block() -> impl Strategy<Value = ContentBlock> {
    let ids = ("call_[A-Za-z0-9]{1,12}", "fc_[A-Za-z0-9|]{1,12}");
    (ids, "[a-z_]{1,16}", arguments()).prop_map(|((call_id, item_id), name, arguments)| {
        ContentBlock::ToolCall(ToolCall {
            id: format!("{call_id}|{item_id}"),
            name,
            arguments,
            ..ToolCall::default()
        })
    })
}

/// The last block as a stream cut before its `output_item.done` leaves it: unsigned (a tool
/// call is never left so: Pi 1.5.2 fails a response with an unfinished one).
fn unfinished(block: ContentBlock, thinking: String) -> ContentBlock {
    match block {
        ContentBlock::Text(text) => ContentBlock::Text(TextContent {
            text_signature: None,
            ..text
        }),
        ContentBlock::Thinking(_) => ContentBlock::Thinking(ThinkingContent {
            thinking,
            ..ThinkingContent::default()
        }),
        other => other,
    }
}

/// Error texts in every wording the decoder has, and arbitrary ones.
fn error_text() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("An unknown error occurred".to_owned()),
        Just("Unknown error (no error details in response)".to_owned()),
        "Error Code [a-z_]{0,12}: .{0,20}",
        "incomplete: [a-z_]{1,20}",
        "Response incomplete: [a-z_]{1,20}"
            .prop_filter("the output limit is a length stop", |t| !t
                .ends_with(": max_output_tokens")),
        Just("Response incomplete without a provider reason".to_owned()),
        Just("OpenAI Responses stream ended before a terminal response event".to_owned()),
        "[a-z_]{1,12}: .{1,20}",
        "[^:]{1,30}",
        text().prop_filter("a failure has words", |t| !t.is_empty()),
    ]
}

#[derive(Clone, Debug)]
enum Ending {
    Stop,
    Length,
    ToolUse,
    Error(String),
}

fn ending() -> impl Strategy<Value = Ending> {
    prop_oneof![
        Just(Ending::Stop),
        Just(Ending::Length),
        Just(Ending::ToolUse),
        error_text().prop_map(Ending::Error),
    ]
}

/// The usage the decoder reports for these tokens under `tier`: the model's prices, times the
/// tier's multiplier (half for flex, double for priority, 2.5 times for gpt-5.5's priority).
fn priced(model: &Model, tokens: [u64; 6], tier: &str) -> Usage {
    let [input, output, cache_read, cache_write, reasoning, total_tokens] = tokens;
    let usage = Usage {
        input,
        output,
        cache_read,
        cache_write,
        reasoning: Some(reasoning),
        total_tokens,
        ..Usage::default()
    };
    with_cost(model, usage, tier)
}

/// What the decoder makes of a response that ends without reporting usage.
fn unreported(model: &Model) -> Usage {
    with_cost(model, Usage::default(), "default")
}

fn with_cost(model: &Model, mut usage: Usage, tier: &str) -> Usage {
    let mut cost = calculate_cost(model, &usage);
    let multiplier = match tier {
        "flex" => 0.5,
        "priority" if model.id == "gpt-5.5" => 2.5,
        "priority" => 2.0,
        _ => 1.0,
    };
    if multiplier != 1.0 {
        cost.input *= multiplier;
        cost.output *= multiplier;
        cost.cache_read *= multiplier;
        cost.cache_write *= multiplier;
        cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write;
    }
    cost.total_from_provider = Some(false);
    usage.cost = cost;
    usage
}

/// A usage as a message carries it: none (a stream that failed before its end), none reported,
/// or counts priced under a tier.
fn usage(model: Model) -> impl Strategy<Value = Usage> {
    let count = prop_oneof![0..100u64, 0..1u64 << 40];
    let tier = prop::sample::select(vec!["default", "flex", "priority"]);
    let unreported = unreported(&model);
    prop_oneof![
        1 => Just(Usage::default()),
        1 => Just(unreported),
        4 => (prop::array::uniform6(count), tier)
            .prop_map(move |(tokens, tier)| priced(&model, tokens, tier)),
    ]
}

fn block() -> impl Strategy<Value = ContentBlock> {
    prop_oneof![text_block(), thinking_block(), tool_call_block()]
}

/// A message a Responses stream can carry, with the head the decoder writes.
fn message() -> impl Strategy<Value = (Model, AssistantMessage)> {
    prop::sample::select(MODELS.to_vec()).prop_flat_map(|id| {
        let model = model(id);
        let blocks = prop::collection::vec(block(), 0..5);
        let cut = (any::<bool>(), text());
        let response_id = prop::option::of(prop_oneof!["resp_[a-f0-9]{8,24}", Just(String::new())]);
        let timestamp = 0..4_000_000_000_000u64;
        (
            Just(model.clone()),
            blocks,
            cut,
            ending(),
            usage(model),
            response_id,
            timestamp,
        )
            .prop_map(
                |(model, content, cut, ending, usage, response_id, timestamp)| {
                    let message = assemble(&model, content, cut, ending, usage);
                    let message = AssistantMessage {
                        response_id,
                        timestamp,
                        ..message
                    };
                    (model, message)
                },
            )
    })
}

/// The message, with the stop reason the decoder gives its content (`toolUse` whenever it
/// calls tools), the usage a response that ends always has (priced, if not reported), and the
/// raw stop reason the stream leaves.
fn assemble(
    model: &Model,
    mut content: Vec<ContentBlock>,
    (cut, thinking): (bool, String),
    ending: Ending,
    mut usage: Usage,
) -> AssistantMessage {
    if let Some(last) = content.pop() {
        content.push(if cut {
            unfinished(last, thinking)
        } else {
            last
        });
    }
    let calls = content
        .iter()
        .any(|b| matches!(b, ContentBlock::ToolCall(_)));
    let ends = |usage: Usage| {
        if usage == Usage::default() {
            unreported(model)
        } else {
            usage
        }
    };
    let (stop_reason, error_message, raw) = match ending {
        Ending::Error(text) => {
            let incomplete = text.strip_prefix("Response incomplete: ");
            let raw = if let Some(reason) = incomplete {
                usage = ends(usage);
                Some(format!("incomplete.{reason}"))
            } else if text == "Response incomplete without a provider reason" {
                usage = ends(usage);
                Some("incomplete".to_owned())
            } else if text == "An unknown error occurred" {
                usage = ends(usage);
                Some("failed".to_owned())
            } else if failed_event(&text) || usage != Usage::default() {
                Some("failed".to_owned())
            } else {
                None
            };
            (StopReason::Error, Some(text), raw)
        }
        Ending::Length => (
            StopReason::Length,
            None,
            Some("incomplete.max_output_tokens".into()),
        ),
        Ending::Stop if !calls => (StopReason::Stop, None, Some("completed".into())),
        Ending::Stop | Ending::ToolUse if calls => {
            (StopReason::ToolUse, None, Some("completed".into()))
        }
        Ending::Stop | Ending::ToolUse => (StopReason::Stop, None, Some("completed".into())),
    };
    if error_message.is_none() {
        usage = ends(usage);
    }
    AssistantMessage {
        api: model.api.clone(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        content,
        usage,
        stop_reason,
        error_message,
        raw_stop_reason: raw,
        ..AssistantMessage::default()
    }
}

/// Whether the failure worded `text` is a `response.failed` (whose status the decoder keeps):
/// its texts without details, with an incomplete reason, or `{code}: {message}`.
fn failed_event(text: &str) -> bool {
    text == "Unknown error (no error details in response)"
        || text
            .match_indices(": ")
            .any(|(at, separator)| at > 0 && at + separator.len() < text.len())
}

fn body(response: &SynthesizedResponse) -> Vec<u8> {
    response.body()
}

/// Each read is one server-sent event: `event: <type>` over a JSON `data:` line of that type,
/// numbered in order.
fn check_one_event_per_chunk(response: &SynthesizedResponse) -> Result<(), TestCaseError> {
    prop_assert_eq!(response.status, 200);
    for (sequence, chunk) in response.chunks.iter().enumerate() {
        let chunk = std::str::from_utf8(chunk).unwrap();
        prop_assert!(chunk.ends_with("\n\n"), "{chunk:?}");
        let lines: Vec<&str> = chunk.trim_end_matches('\n').split('\n').collect();
        match lines.as_slice() {
            [event, data] => {
                let kind = event.strip_prefix("event: ").unwrap();
                let data: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap())?;
                prop_assert_eq!(&data["type"], kind);
                prop_assert_eq!(&data["sequence_number"], sequence);
            }
            _ => prop_assert!(false, "not one event: {chunk:?}"),
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(384))]

    #[test]
    fn every_expressible_message_comes_back_however_cut(
        (model, message) in message(),
        cuts in prop::collection::vec(any::<Index>(), 0..16),
    ) {
        let response = synthesize(&model, &message)
            .map_err(|e| TestCaseError::fail(format!("refused {message:?}: {e}")))?;
        check_one_event_per_chunk(&response)?;
        prop_assert_eq!(&decode(&model, message.timestamp, &response), &message);
        let length = body(&response).len();
        let cuts: Vec<usize> = cuts.iter().map(|cut| cut.index(length + 1)).collect();
        let recut = response.recut(&cuts);
        prop_assert_eq!(body(&recut), body(&response));
        prop_assert_eq!(&decode(&model, message.timestamp, &recut), &message);
    }

    #[test]
    fn one_byte_reads_decode_the_same((model, message) in message()) {
        let response = synthesize(&model, &message)
            .map_err(|e| TestCaseError::fail(format!("refused {message:?}: {e}")))?;
        let every: Vec<usize> = (1..body(&response).len()).collect();
        prop_assert_eq!(decode(&model, message.timestamp, &response.recut(&every)), message);
    }
}

// ---- a pinned example ----

fn small_message() -> (Model, AssistantMessage) {
    let model = model("gpt-5-mini");
    let message = AssistantMessage {
        api: model.api.clone(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        timestamp: 1_700_000_000_123,
        content: vec![ContentBlock::Text(TextContent {
            text: "Hi \"you\"".into(),
            text_signature: Some(r#"{"v":1,"id":"msg_1"}"#.into()),
            ..TextContent::default()
        })],
        usage: priced(&model, [3, 5, 2, 0, 1, 10], "default"),
        stop_reason: StopReason::Stop,
        raw_stop_reason: Some("completed".into()),
        response_id: Some("resp_1".into()),
        ..AssistantMessage::default()
    };
    (model, message)
}

#[test]
fn a_small_message_is_streamed_in_the_apis_spelling() {
    let (model, message) = small_message();
    let response = synthesize(&model, &message).unwrap();
    let item = r#"{"id":"msg_1","type":"message","status":"completed","content":[{"type":"output_text","annotations":[],"text":"Hi \"you\""}],"role":"assistant"}"#;
    let expected = [
        r#"event: response.created
data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","created_at":1700000000,"status":"in_progress","model":"gpt-5-mini","output":[]}}"#.to_owned(),
        r#"event: response.output_item.added
data: {"type":"response.output_item.added","sequence_number":1,"output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","content":[],"role":"assistant"}}"#.to_owned(),
        r#"event: response.content_part.added
data: {"type":"response.content_part.added","sequence_number":2,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":""}}"#.to_owned(),
        r#"event: response.output_text.delta
data: {"type":"response.output_text.delta","sequence_number":3,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hi \"you\""}"#.to_owned(),
        r#"event: response.output_text.done
data: {"type":"response.output_text.done","sequence_number":4,"item_id":"msg_1","output_index":0,"content_index":0,"text":"Hi \"you\""}"#.to_owned(),
        r#"event: response.content_part.done
data: {"type":"response.content_part.done","sequence_number":5,"item_id":"msg_1","output_index":0,"content_index":0,"part":{"type":"output_text","annotations":[],"text":"Hi \"you\""}}"#.to_owned(),
        format!(r#"event: response.output_item.done
data: {{"type":"response.output_item.done","sequence_number":6,"output_index":0,"item":{item}}}"#),
        format!(r#"event: response.completed
data: {{"type":"response.completed","sequence_number":7,"response":{{"id":"resp_1","object":"response","created_at":1700000000,"status":"completed","model":"gpt-5-mini","incomplete_details":null,"output":[{item}],"usage":{{"input_tokens":5,"input_tokens_details":{{"cached_tokens":2}},"output_tokens":5,"output_tokens_details":{{"reasoning_tokens":1}},"total_tokens":10}},"service_tier":"default"}}}}"#),
    ];
    let chunks: Vec<String> = response
        .chunks
        .iter()
        .map(|c| String::from_utf8(c.to_vec()).unwrap())
        .collect();
    let expected: Vec<String> = expected.iter().map(|e| format!("{e}\n\n")).collect();
    assert_eq!(chunks, expected);
    assert_eq!(response.status, 200);
    assert_eq!(
        response.headers,
        vec![("content-type".to_owned(), "text/event-stream".to_owned())]
    );
    assert_eq!(decode(&model, message.timestamp, &response), message);
}

#[test]
fn the_dispatcher_streams_responses_models_with_this_synthesizer() {
    let (model, message) = small_message();
    let ours = synthesize(&model, &message).unwrap();
    assert_eq!(pi_providers::synth::synthesize(&model, &message), Ok(ours));
}

/// The last read of the stream for `message` failing with `text` (any usage), which leaves the
/// raw stop reason `raw`.
fn failure_chunk(text: &str, usage: Usage, raw: Option<&str>) -> String {
    let (model, mut message) = small_message();
    message.stop_reason = StopReason::Error;
    message.error_message = Some(text.to_owned());
    message.usage = usage;
    message.raw_stop_reason = raw.map(str::to_owned);
    let response = synthesize(&model, &message).unwrap();
    assert_eq!(decode(&model, message.timestamp, &response), message);
    String::from_utf8(response.chunks.last().unwrap().to_vec()).unwrap()
}

#[test]
fn failures_take_the_event_the_decoder_words_as_their_text() {
    let failed = Some("failed");
    let cases = [
        (
            "boom",
            None,
            r#"event: error
data: {"type":"error","sequence_number":7,"code":null,"message":"boom","param":null}"#,
        ),
        (
            "Error Code server_error: boom",
            failed,
            r#"event: response.failed
data: {"type":"response.failed","sequence_number":7,"response":{"id":"resp_1","object":"response","created_at":1700000000,"status":"failed","model":"gpt-5-mini","error":{"code":"Error Code server_error","message":"boom"},"incomplete_details":null}}"#,
        ),
        (
            "rate_limit_exceeded: Slow down",
            failed,
            r#"event: response.failed
data: {"type":"response.failed","sequence_number":7,"response":{"id":"resp_1","object":"response","created_at":1700000000,"status":"failed","model":"gpt-5-mini","error":{"code":"rate_limit_exceeded","message":"Slow down"},"incomplete_details":null}}"#,
        ),
        (
            "incomplete: max_output_tokens",
            failed,
            r#"event: response.failed
data: {"type":"response.failed","sequence_number":7,"response":{"id":"resp_1","object":"response","created_at":1700000000,"status":"failed","model":"gpt-5-mini","error":null,"incomplete_details":{"reason":"max_output_tokens"}}}"#,
        ),
        (
            "Unknown error (no error details in response)",
            failed,
            r#"event: response.failed
data: {"type":"response.failed","sequence_number":7,"response":{"id":"resp_1","object":"response","created_at":1700000000,"status":"failed","model":"gpt-5-mini","error":null,"incomplete_details":null}}"#,
        ),
    ];
    for (text, raw, expected) in cases {
        assert_eq!(
            failure_chunk(text, Usage::default(), raw),
            format!("{expected}\n\n"),
            "{text}"
        );
    }
    let model = model("gpt-5-mini");
    let unknown = failure_chunk("An unknown error occurred", unreported(&model), failed);
    assert!(
        unknown.starts_with("event: response.completed\n"),
        "{unknown}"
    );
    assert!(unknown.contains(r#""status":"failed""#), "{unknown}");
    // Pi 1.5.2 fails an incomplete response cut for another reason than the output limit.
    let filtered = failure_chunk(
        "Response incomplete: content_filter",
        unreported(&model),
        Some("incomplete.content_filter"),
    );
    assert!(
        filtered.starts_with("event: response.incomplete\n"),
        "{filtered}"
    );
    assert!(
        filtered.contains(r#""incomplete_details":{"reason":"content_filter"}"#),
        "{filtered}"
    );
}

#[test]
fn a_failure_with_usage_completes_before_it_fails() {
    let model = model("gpt-5-mini");
    let usage = priced(&model, [10, 20, 0, 4, 3, 30], "flex");
    let last = failure_chunk("boom", usage.clone(), Some("failed"));
    assert!(last.starts_with("event: error\n"), "{last}");
    let only = failure_chunk("An unknown error occurred", usage, Some("failed"));
    assert!(only.contains(r#""service_tier":"flex""#), "{only}");
    assert!(only.contains(r#""cache_write_tokens":4"#), "{only}");
}

#[test]
fn a_stream_cut_before_its_end_fails_with_pi_152s_text() {
    let (model, mut message) = small_message();
    if let ContentBlock::Text(text) = &mut message.content[0] {
        text.text_signature = None;
    }
    message.usage = Usage::default();
    message.stop_reason = StopReason::Error;
    message.error_message =
        Some("OpenAI Responses stream ended before a terminal response event".into());
    message.raw_stop_reason = None;
    let response = synthesize(&model, &message).unwrap();
    let body = String::from_utf8(body(&response)).unwrap();
    assert!(body.contains("response.output_text.delta"), "{body}");
    assert!(!body.contains("response.output_item.done"), "{body}");
    assert!(!body.contains("response.completed"), "{body}");
    assert_eq!(decode(&model, message.timestamp, &response), message);
}

// ---- what the decoder can never make ----

/// Why `change` makes the small message unrepresentable (after checking it was representable).
fn refusal(change: impl FnOnce(&mut AssistantMessage)) -> String {
    let (model, mut message) = small_message();
    assert!(synthesize(&model, &message).is_ok());
    change(&mut message);
    match synthesize(&model, &message) {
        Err(Unrepresentable { api, why }) => {
            assert_eq!(api, "openai-responses");
            why
        }
        Ok(response) => panic!(
            "synthesized {:?}, which decodes to {:?}",
            response,
            decode(&model, message.timestamp, &response)
        ),
    }
}

fn tool_call(id: &str, arguments: Value) -> ContentBlock {
    ContentBlock::ToolCall(ToolCall {
        id: id.into(),
        name: "read".into(),
        arguments,
        ..ToolCall::default()
    })
}

/// A change to the small message.
type Change = Box<dyn FnOnce(&mut AssistantMessage)>;

#[test]
fn unrepresentable_messages_are_refused_with_the_reason() {
    let signed_thinking = |thinking: &str, signature: &str| {
        ContentBlock::Thinking(ThinkingContent {
            thinking: thinking.into(),
            thinking_signature: Some(signature.into()),
            ..ThinkingContent::default()
        })
    };
    let cases: Vec<(&str, Change)> = vec![
        ("aborted", Box::new(|m| m.stop_reason = StopReason::Aborted)),
        (
            "image",
            Box::new(|m| {
                m.content.push(ContentBlock::Image(ImageContent {
                    data: "AAAA".into(),
                    mime_type: "image/png".into(),
                    ..ImageContent::default()
                }))
            }),
        ),
        (
            "call_id|item_id",
            Box::new(|m| m.content.push(tool_call("call_1", json!({})))),
        ),
        (
            "read back",
            Box::new(|m| {
                m.stop_reason = StopReason::ToolUse;
                m.content.push(tool_call("call_1|fc_1", json!({"n": 1.0})));
            }),
        ),
        ("cost", Box::new(|m| m.usage.cost.total += 1e-9)),
        (
            "cacheWrite1h",
            Box::new(|m| m.usage.cache_write_1h = Some(1)),
        ),
        (
            "totalFromProvider",
            Box::new(|m| m.usage.cost.total_from_provider = None),
        ),
        ("rawStopReason", Box::new(|m| m.raw_stop_reason = None)),
        ("double", Box::new(|m| m.usage.total_tokens = (1 << 60) + 1)),
        (
            "before the last block",
            Box::new(|m| {
                if let ContentBlock::Text(text) = &mut m.content[0] {
                    text.text_signature = None;
                }
                m.content.push(ContentBlock::text("more"));
            }),
        ),
        (
            "textSignature",
            Box::new(|m| {
                if let ContentBlock::Text(text) = &mut m.content[0] {
                    text.text_signature = Some(r#"{"id":"msg_1","v":1}"#.into());
                }
            }),
        ),
        (
            "reasoning item",
            Box::new(move |m| {
                m.content
                    .insert(0, signed_thinking("", r#"{"type":"message","id":"rs_1"}"#))
            }),
        ),
        (
            "reasoning item",
            Box::new(move |m| {
                m.content.insert(
                    0,
                    signed_thinking("", r#"{"type": "reasoning","id":"rs_1"}"#),
                )
            }),
        ),
        (
            "summary",
            Box::new(move |m| {
                let item = r#"{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"a"}]}"#;
                m.content.insert(0, signed_thinking("b", item));
            }),
        ),
        (
            "content",
            Box::new(move |m| {
                let item = r#"{"id":"rs_1","type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"a"}]}"#;
                m.content.insert(0, signed_thinking("b", item));
            }),
        ),
        (
            "redacted",
            Box::new(|m| {
                m.content.push(ContentBlock::Thinking(ThinkingContent {
                    redacted: Some(true),
                    ..ThinkingContent::default()
                }))
            }),
        ),
        (
            "responseModel",
            Box::new(|m| m.response_model = Some("gpt-5-mini-2025".into())),
        ),
        ("gpt-4o", Box::new(|m| m.model = "gpt-4o".into())),
        (
            "without an errorMessage",
            Box::new(|m| m.stop_reason = StopReason::Error),
        ),
        (
            "did not fail",
            Box::new(|m| m.error_message = Some("boom".into())),
        ),
        (
            "empty errorMessage",
            Box::new(|m| {
                m.stop_reason = StopReason::Error;
                m.error_message = Some(String::new());
            }),
        ),
        (
            "without a tool call",
            Box::new(|m| m.stop_reason = StopReason::ToolUse),
        ),
        (
            "stop with tool calls",
            Box::new(|m| m.content.push(tool_call("call_1|fc_1", json!({})))),
        ),
        (
            "partialJson",
            Box::new(|m| {
                m.stop_reason = StopReason::Error;
                m.error_message = Some("boom".into());
                let mut call = ToolCall {
                    id: "call_1|fc_1".into(),
                    arguments: json!({}),
                    ..ToolCall::default()
                };
                call.extra.insert("partialJson".into(), "".into());
                m.content.push(ContentBlock::ToolCall(call));
            }),
        ),
    ];
    for (reason, change) in cases {
        let why = refusal(change);
        assert!(why.contains(reason), "expected {reason:?} in {why:?}");
    }
}
