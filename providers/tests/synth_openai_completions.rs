//! The Chat Completions synthesizer is the decoder's reverse: any message the API can express
//! comes back from its synthesized stream, however the bytes are cut, and any other message is
//! refused rather than turned into bytes that say something else.

#![allow(clippy::panic)]

use pi_core::message::{
    AssistantMessage, ContentBlock, StopReason, TextContent, ThinkingContent, ToolCall, Usage,
};
use pi_core::model::Model;
use pi_providers::catalog::builtin;
use pi_providers::cost::{calculate_cost, total_tokens};
use pi_providers::synth::{decode, synthesize};
use proptest::prelude::*;
use serde_json::{json, Value};

fn model() -> Model {
    builtin()
        .get_model("deepseek", "deepseek-v4-pro")
        .cloned()
        .unwrap_or_else(|| panic!("the catalog has deepseek-v4-pro"))
}

fn message(content: Vec<ContentBlock>, stop_reason: StopReason) -> AssistantMessage {
    let model = model();
    AssistantMessage {
        api: model.api.clone(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        timestamp: 1_764_000_000_000,
        content,
        stop_reason,
        ..AssistantMessage::default()
    }
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e6f64..1e6).prop_map(|f| json!(f.trunc() + 0.5)),
        "\\PC{0,12}".prop_map(Value::from),
        Just(json!(
            "quote \" backslash \\ newline \n tab \t nul \u{0} emoji 😀"
        )),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-z_]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn tool_call() -> impl Strategy<Value = ContentBlock> {
    (
        "[A-Za-z0-9_-]{1,20}",
        "[a-z_]{1,12}",
        prop::collection::btree_map("[a-z_]{1,8}", json_value(), 0..4),
        any::<bool>(),
        "[A-Za-z0-9+/=]{1,40}",
    )
        .prop_map(|(id, name, arguments, signed, data)| {
            let thought_signature = signed.then(|| {
                let detail = json!({"type": "reasoning.encrypted", "id": id, "data": data});
                pi_core::json::to_string(&detail).unwrap_or_default()
            });
            ContentBlock::ToolCall(ToolCall {
                id,
                name,
                arguments: Value::Object(arguments.into_iter().collect()),
                thought_signature,
                ..ToolCall::default()
            })
        })
}

fn unique_id(block: ContentBlock, i: usize) -> ContentBlock {
    let ContentBlock::ToolCall(mut call) = block else {
        return block;
    };
    let id = format!("{}-{i}", call.id);
    if let Some(signature) = &call.thought_signature {
        let mut detail: Value = serde_json::from_str(signature).unwrap_or_default();
        detail["id"] = json!(id);
        call.thought_signature = pi_core::json::to_string(&detail).ok();
    }
    call.id = id;
    ContentBlock::ToolCall(call)
}

/// Content the API can express: at most one text and one thinking block, any tool calls, in
/// any order.
fn content() -> impl Strategy<Value = Vec<ContentBlock>> {
    (
        prop::option::of("\\PC{1,80}"),
        prop::option::of((
            "\\PC{1,80}",
            prop::sample::select(vec!["reasoning_content", "reasoning", "reasoning_text"]),
        )),
        prop::collection::vec(tool_call(), 0..3),
    )
        .prop_flat_map(|(text, thinking, tools)| {
            // Ids are unique within an answer (the decoder finds a call by its id).
            let mut blocks: Vec<ContentBlock> = tools
                .into_iter()
                .enumerate()
                .map(|(i, block)| unique_id(block, i))
                .collect();
            if let Some(text) = text {
                blocks.push(ContentBlock::text(text));
            }
            if let Some((thinking, field)) = thinking {
                blocks.push(ContentBlock::Thinking(ThinkingContent {
                    thinking,
                    thinking_signature: Some(field.to_owned()),
                    ..ThinkingContent::default()
                }));
            }
            Just(blocks).prop_shuffle()
        })
}

/// A reported usage as Pi 1.5 reads it: with `reasoning` (0 when the server says none) and
/// the cost marked as computed.
fn usage() -> impl Strategy<Value = Usage> {
    (
        0u64..2_000_000,
        0u64..200_000,
        0u64..2_000_000,
        0u64..100_000,
        0u64..1_000,
    )
        .prop_map(|(input, output, cache_read, cache_write, reasoning)| {
            let mut usage = Usage {
                input,
                output,
                cache_read,
                cache_write,
                reasoning: Some(reasoning),
                ..Usage::default()
            };
            usage.total_tokens = total_tokens(&usage);
            usage.cost = calculate_cost(&model(), &usage);
            usage.cost.total_from_provider = Some(false);
            usage
        })
}

/// How the answer ends: the stop reason, the error text, and the finish reason as sent (Pi
/// 1.5's `rawStopReason`; none when an error chunk ends the stream).
fn ending() -> impl Strategy<Value = (StopReason, Option<String>, Option<String>)> {
    let sent = |stop, raw: &str| (stop, None, Some(raw.to_owned()));
    prop_oneof![
        Just(sent(StopReason::Stop, "stop")),
        Just(sent(StopReason::Stop, "end")),
        Just(sent(StopReason::Length, "length")),
        Just(sent(StopReason::ToolUse, "tool_calls")),
        Just(sent(StopReason::ToolUse, "function_call")),
        "[a-z_]{1,16}"
            .prop_filter("a reason pi-ai maps", |r| !matches!(
                r.as_str(),
                "stop" | "end" | "length" | "tool_calls" | "function_call"
            ))
            .prop_map(|r| (
                StopReason::Error,
                Some(format!("Provider finish_reason: {r}")),
                Some(r)
            )),
        "[A-Za-z][A-Za-z .]{0,30}".prop_map(|text| (StopReason::Error, Some(text), None)),
    ]
}

fn expressible() -> impl Strategy<Value = AssistantMessage> {
    (
        content(),
        usage(),
        ending(),
        prop::option::of("chatcmpl-[a-z0-9]{1,12}"),
        prop::option::of("[a-z0-9.-]{1,12}-served"),
        0u64..4_000_000_000_000,
    )
        .prop_map(
            |(content, usage, (stop, error, raw), id, served, timestamp)| {
                let mut m = message(content, stop);
                m.usage = usage;
                m.error_message = error;
                m.raw_stop_reason = raw;
                m.response_id = id;
                m.response_model = served;
                m.timestamp = timestamp;
                m
            },
        )
}

proptest! {
    #[test]
    fn a_message_comes_back_from_its_stream(m in expressible()) {
        let model = model();
        let response = synthesize(&model, &m).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(decode(&model, m.timestamp, &response), m);
    }

    #[test]
    fn however_the_bytes_are_cut(m in expressible(), cuts in prop::collection::vec(0usize..20_000, 0..40)) {
        let model = model();
        let response = synthesize(&model, &m).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let recut = response.recut(&cuts);
        prop_assert_eq!(decode(&model, m.timestamp, &recut), m);
    }
}

#[test]
fn the_wire_spelling_is_openais() {
    let mut m = message(vec![ContentBlock::text("Hi.")], StopReason::Stop);
    m.response_id = Some("chatcmpl-1".into());
    m.raw_stop_reason = Some("stop".into());
    let response = synthesize(&model(), &m).unwrap_or_else(|e| panic!("{e}"));
    let body: Vec<u8> = response.body();
    let expected = concat!(
        "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1764000000,\"model\":\"deepseek-v4-pro\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1764000000,\"model\":\"deepseek-v4-pro\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi.\"},\"finish_reason\":null}]}\n\n",
        "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1764000000,\"model\":\"deepseek-v4-pro\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n",
        "data: [DONE]\n\n",
    );
    assert_eq!(String::from_utf8_lossy(&body), expected);
    assert_eq!(response.status, 200);
}

#[test]
fn what_the_api_cannot_say_is_refused() {
    let two_texts = message(
        vec![ContentBlock::text("a"), ContentBlock::text("b")],
        StopReason::Stop,
    );
    let foreign_signature = message(
        vec![ContentBlock::Thinking(ThinkingContent {
            thinking: "hmm".into(),
            thinking_signature: Some("sig-from-anthropic".into()),
            ..ThinkingContent::default()
        })],
        StopReason::Stop,
    );
    let aborted = message(vec![], StopReason::Aborted);
    let mut wrong_cost = message(vec![ContentBlock::text("a")], StopReason::Stop);
    wrong_cost.raw_stop_reason = Some("stop".into());
    wrong_cost.usage.input = 10;
    wrong_cost.usage.reasoning = Some(0);
    wrong_cost.usage.total_tokens = 10;
    wrong_cost.usage.cost.total_from_provider = Some(false);
    let styled = message(
        vec![ContentBlock::Text(TextContent {
            text: "a".into(),
            text_signature: Some("sig".into()),
            ..TextContent::default()
        })],
        StopReason::Stop,
    );
    for (m, why) in [
        (two_texts, "a second text block"),
        (foreign_signature, "thinking signature"),
        (aborted, "aborted"),
        (wrong_cost, "usage.cost"),
        (styled, "textSignature"),
    ] {
        let refused = synthesize(&model(), &m)
            .err()
            .unwrap_or_else(|| panic!("{why}: accepted"));
        assert!(refused.to_string().contains(why), "{why}: {refused}");
    }
}
