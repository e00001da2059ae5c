//! The OpenAI Responses codec against the original: request bodies for contexts and options
//! (reasoning items, text signatures, foreign tool-call ids, images, cache keys, effort mapping),
//! and the events and final message for response streams the original was served byte for byte
//! (text, reasoning summaries, tool calls, refusals, every error form, cut streams), for any
//! chunking; arbitrary bytes never panic. Fixtures: `scripts/gen-responses-fixtures.mjs`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::OnceLock;

use common::{comparable, decode_split, fixture_options, fixture_request, observe, serve_once};
use pi_core::agent::{ModelRequest, StreamEvent, ToolDefinition};
use pi_core::model::Model;
use pi_providers::openai_responses::{build_body, Decoder};
use pi_providers::{CallOptions, StreamEnd};
use proptest::prelude::*;
use serde_json::Value;

fn fixtures() -> &'static Value {
    static FIXTURES: OnceLock<Value> = OnceLock::new();
    FIXTURES.get_or_init(|| serde_json::from_str(include_str!("fixtures/responses.json")).unwrap())
}

fn stream_model() -> Model {
    serde_json::from_value(serde_json::json!({
        "id": "gpt-5-mini", "name": "GPT", "api": "openai-responses", "provider": "openai",
        "baseUrl": "http://127.0.0.1:1/v1", "reasoning": true, "input": ["text", "image"],
        "cost": {"input": 1.25, "output": 10, "cacheRead": 0.125, "cacheWrite": 0},
        "contextWindow": 400000, "maxTokens": 128000
    }))
    .unwrap()
}

#[test]
fn bodies_match_the_original() {
    let mut wrong = Vec::new();
    for case in fixtures()["bodies"].as_array().unwrap() {
        let request = fixture_request(case);
        let call_options = fixture_options(case, "key");
        let ours = pi_core::json::to_string(&build_body(&request, &call_options, 0)).unwrap();
        let theirs = pi_core::json::to_string(&case["body"]).unwrap();
        if ours != theirs {
            wrong.push(format!(
                "{}\n  ours:   {ours}\n  theirs: {theirs}",
                case["name"]
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The decoder for a stream fixture: the request it answers may declare grammar tools (with the
/// model's `compat`), whose custom calls decode into their input property, and ask for an effort
/// mid-conversation.
fn stream_decoder(stream: &Value) -> Decoder {
    let mut model = stream_model();
    model.compat = serde_json::from_value(stream["compat"].clone()).unwrap();
    let tools: Vec<ToolDefinition> = stream["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| ToolDefinition {
            name: t["name"].as_str().unwrap().into(),
            description: t["description"].as_str().unwrap().into(),
            parameters: t["parameters"].clone(),
            constrained_sampling: t.get("constrainedSampling").cloned(),
        })
        .collect();
    // The effort a mid-conversation-effort model was asked for, which its answer records.
    let request = fixture_request(&serde_json::json!({
        "model": model, "context": {"messages": []}, "options": stream["options"],
    }));
    let effort =
        pi_providers::openai_responses::requested_effort(&request, &fixture_options(stream, "key"));
    Decoder::new(&model, 0)
        .with_tools(&tools)
        .with_requested_effort(effort)
}

fn decode(stream: &Value, cuts: &[usize]) -> Vec<StreamEvent> {
    let body = stream["body"].as_str().unwrap().as_bytes();
    decode_split(stream_decoder(stream), body, cuts, StreamEnd::Complete)
}

/// Every stream's differences from the original when cut at `cuts`.
fn differences(cuts: &[usize]) -> Vec<String> {
    let mut wrong = Vec::new();
    for stream in fixtures()["streams"].as_array().unwrap() {
        let name = stream["name"].as_str().unwrap();
        let (updates, message) = observe(decode(stream, cuts));
        let theirs: Vec<Value> = stream["events"]
            .as_array()
            .unwrap()
            .iter()
            .map(common::summary)
            .collect();
        if updates != theirs {
            wrong.push(format!(
                "{name}: events\n  ours:   {updates:?}\n  theirs: {theirs:?}"
            ));
        }
        if comparable(&message) != stream["message"] {
            wrong.push(format!(
                "{name}: message\n  ours:   {}\n  theirs: {}",
                comparable(&message),
                stream["message"]
            ));
        }
    }
    wrong
}

#[test]
fn streams_decode_as_the_original_decoded_them() {
    let wrong = differences(&[]);
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

proptest! {
    #[test]
    fn any_chunking_decodes_the_same(cuts in prop::collection::vec(0usize..2_500, 0..12)) {
        let mut cuts = cuts;
        cuts.sort_unstable();
        let wrong = differences(&cuts);
        prop_assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let mut decoder = Decoder::new(&stream_model(), 0);
        decoder.start();
        decoder.feed(&bytes);
        decoder.finish(StreamEnd::Complete);
    }

    #[test]
    fn arbitrary_events_never_panic(
        kinds in prop::collection::vec(0usize..14, 0..40),
        texts in prop::collection::vec("[a-z{}\":]{0,6}", 40),
    ) {
        const KINDS: [&str; 14] = [
            "response.output_item.added", "response.output_item.done",
            "response.reasoning_summary_part.added", "response.reasoning_summary_text.delta",
            "response.reasoning_summary_part.done", "response.content_part.added",
            "response.output_text.delta", "response.function_call_arguments.delta",
            "response.function_call_arguments.done", "response.completed", "response.refusal.delta",
            "response.reasoning_text.delta", "response.custom_tool_call_input.delta",
            "response.custom_tool_call_input.done",
        ];
        const ITEMS: [&str; 4] = ["reasoning", "message", "function_call", "custom_tool_call"];
        let mut body = String::new();
        for (i, kind) in kinds.iter().enumerate() {
            let text = &texts[i % texts.len()];
            let event = serde_json::json!({
                "type": KINDS[*kind],
                "item": {"type": ITEMS[i % 4], "id": "x", "call_id": "c", "name": "n", "arguments": text, "input": text, "content": [], "summary": []},
                "part": {"type": if i % 2 == 0 { "output_text" } else { "refusal" }},
                "delta": text, "arguments": text, "input": text,
                "response": {"status": "completed", "usage": {"input_tokens": 1}},
            });
            body.push_str(&format!("data: {event}\n\n"));
        }
        let events = decode(&serde_json::json!({"body": body}), &[]);
        let mut assembly = pi_core::agent::assemble::Assembly::default();
        for event in events {
            prop_assert!(assembly.apply(event).is_ok());
        }
    }
}

#[tokio::test]
async fn a_call_over_http_decodes_the_served_stream() {
    use pi_core::message::{Message, UserMessage};
    use pi_effects::network::{Timeouts, Transport};
    use pi_providers::call::ModelCall;
    use pi_providers::retry::FixedClock;

    let stream = fixtures()["streams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "reasoning-and-tool-call")
        .unwrap();
    let (port, server) = serve_once(200, "text/event-stream", stream["body"].as_str().unwrap());
    let mut model = stream_model();
    model.base_url = format!("http://127.0.0.1:{port}/v1");
    let request = ModelRequest {
        model,
        system_prompt: "Be brief.".into(),
        messages: vec![Message::User(UserMessage::from_text("Hi", Vec::new(), 1))].into(),
        tools: Vec::new(),
        reasoning: None,
        session_id: Some("session-7".into()),
        max_tokens: None,
        thread: None,
        session_diagnostics: Default::default(),
        system_messages: Default::default(),
        max_retries: None,
        provider_hooked: None,
    };
    let options = CallOptions {
        api_key: "sk-test".into(),
        ..CallOptions::default()
    };
    let transport = Transport::new(Timeouts {
        connect: std::time::Duration::from_secs(5),
        idle: std::time::Duration::from_secs(10),
    })
    .unwrap();
    let mut call = ModelCall::new(&request, &options, 0);
    let mut events = call.open(&transport, &FixedClock::default()).await;
    while !call.is_done() {
        events.extend(call.next().await);
    }
    let (_, message) = observe(events);
    assert_eq!(comparable(&message), stream["message"]);
    let (head, body) = server.join().unwrap();
    let head = head.to_ascii_lowercase();
    assert!(head.starts_with("post /v1/responses http/1.1"), "{head}");
    assert!(head.contains("authorization: bearer sk-test"), "{head}");
    assert!(head.contains("session_id: session-7"), "{head}");
    assert_eq!(body["prompt_cache_key"], "session-7");
    assert_eq!(body["input"][0]["role"], "developer");
}

/// A grammar tool Pi 1.5.2 refuses (no usable variant, not one required string property, a
/// call in the history whose input property is not a string) fails the call before anything is
/// sent, with 1.5.2's text; a failed answer's calls are not checked (they are not sent), and a
/// model without grammar tools sends the tool as a function tool.
#[tokio::test]
async fn refused_grammar_tools_fail_the_call_unsent_as_the_original_fails_it() {
    use pi_providers::call::ModelCall;
    use pi_providers::retry::FixedClock;
    use pi_providers::transport::scripted::{ScriptedResponse, ScriptedTransport};

    let mut wrong = Vec::new();
    for case in fixtures()["refusals"].as_array().unwrap() {
        let mut model = stream_model();
        model.compat = serde_json::from_value(case["compat"].clone()).unwrap();
        let fixture = serde_json::json!({
            "model": model,
            "context": {"messages": case["messages"], "tools": case["tools"]},
            "options": {},
        });
        let request = fixture_request(&fixture);
        let body = fixtures()["streams"][0]["body"].as_str().unwrap();
        let served = ScriptedResponse::new(200, body.to_owned())
            .with_header("content-type", "text/event-stream");
        let transport = ScriptedTransport::new([Ok(served)]);
        let options = fixture_options(&fixture, "key");
        let mut call = ModelCall::new(&request, &options, 0);
        let mut events = call.open(&transport, &FixedClock::default()).await;
        while !call.is_done() {
            events.extend(call.next().await);
        }
        let (_, message) = observe(events);
        let ours = serde_json::json!({
            "sent": transport.requests().len(),
            "stopReason": message.stop_reason,
            "errorMessage": message.error_message,
        });
        let theirs = serde_json::json!({
            "sent": case["sent"],
            "stopReason": case["stopReason"],
            "errorMessage": case["errorMessage"],
        });
        if ours != theirs {
            wrong.push(format!(
                "{}\n  ours:   {ours}\n  theirs: {theirs}",
                case["name"]
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
