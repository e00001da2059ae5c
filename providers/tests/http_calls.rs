//! Model calls over real HTTP on 127.0.0.1: the conformance kit's scripted mock LLM (a real
//! server process) answers, and `ModelCall` encodes, streams, decodes and aborts, over the Chat
//! Completions and the Anthropic Messages APIs.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Tests read fixtures and run servers; the providers' IO ban applies to the library, not to its
// tests.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod common;

use std::time::Duration;

use common::{kinds, mock_claude, mock_model_at};
use pi_core::agent::{ModelRequest, StreamEvent};
use pi_core::message::{AssistantMessage, ContentBlock, Message, StopReason, UserMessage};
use pi_effects::network::{Timeouts, Transport};
use pi_providers::call::ModelCall;
use pi_providers::retry::FixedClock;
use pi_providers::CallOptions;
use pi_testkit::MockLlm;
use serde_json::{json, Value};

fn mock(script: Value) -> MockLlm {
    MockLlm::start(&script)
}

fn request(port: u16) -> ModelRequest {
    ModelRequest {
        model: mock_model_at(&format!("http://127.0.0.1:{port}/v1")),
        system_prompt: "Be brief.".into(),
        messages: vec![Message::User(UserMessage::from_text("Hi", Vec::new(), 1))].into(),
        tools: Vec::new(),
        reasoning: None,
        session_id: None,
        max_tokens: None,
        thread: None,
        session_diagnostics: Default::default(),
        system_messages: Default::default(),
        max_retries: None,
        provider_hooked: None,
    }
}

fn options() -> CallOptions {
    CallOptions {
        api_key: "mock-key".into(),
        ..CallOptions::default()
    }
}

/// Runs a call to its end (aborting after `abort_after` events if given); returns the event
/// kinds as the core sees them and the final message.
async fn run(port: u16, abort_after: Option<usize>) -> (Vec<String>, AssistantMessage) {
    let transport = Transport::new(Timeouts {
        connect: Duration::from_secs(5),
        idle: Duration::from_secs(10),
    })
    .unwrap();
    let mut call = ModelCall::new(&request(port), &options(), 1_000);
    let mut events: Vec<StreamEvent> = call.open(&transport, &FixedClock::default()).await;
    while !call.is_done() {
        if abort_after.is_some_and(|n| events.len() >= n) {
            events.extend(call.abort());
            break;
        }
        events.extend(call.next().await);
    }
    kinds(events)
}

#[tokio::test]
async fn a_streamed_answer_and_a_tool_call() {
    let mock = mock(json!([
        {"text": ["Hello", " there."], "usage": {"input": 12, "output": 3}},
        {"tool_calls": [{"id": "call_1", "name": "read", "arguments": {"path": "a.txt"}, "chunks": ["{\"path\"", ": \"a.txt\"}"]}]}
    ]));
    let (kinds, message) = run(mock.port, None).await;
    assert_eq!(
        kinds,
        [
            "start",
            "text_start",
            "text_delta",
            "text_delta",
            "text_end"
        ]
    );
    assert_eq!(message.content, vec![ContentBlock::text("Hello there.")]);
    assert_eq!(message.stop_reason, StopReason::Stop);
    assert_eq!(
        (
            message.usage.input,
            message.usage.output,
            message.usage.total_tokens
        ),
        (12, 3, 15)
    );
    assert_eq!(message.usage.cost.total, 12.0 / 1e6 + 6.0 / 1e6);
    assert_eq!(message.response_id.as_deref(), Some("chatcmpl-mock-1"));
    assert_eq!(message.timestamp, 1_000);

    let (kinds, message) = run(mock.port, None).await;
    assert_eq!(
        kinds,
        [
            "start",
            "toolcall_start",
            "toolcall_delta",
            "toolcall_delta",
            "toolcall_delta",
            "toolcall_end"
        ]
    );
    assert_eq!(message.stop_reason, StopReason::ToolUse);
    let call = message.tool_calls().next().unwrap();
    assert_eq!(
        (call.id.as_str(), call.arguments.clone()),
        ("call_1", json!({"path": "a.txt"}))
    );

    let log = std::fs::read_to_string(&mock.log).unwrap();
    let first: Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    assert_eq!(first["headers"]["authorization"], "Bearer mock-key");
    assert_eq!(
        first["body"]["messages"][0],
        json!({"role": "system", "content": "Be brief."})
    );
    assert_eq!(first["body"]["max_completion_tokens"], 16_384);
}

#[tokio::test]
async fn http_errors_cut_streams_and_aborts() {
    let mock = mock(json!([
        {"status": 429, "error_body": {"error": {"message": "Rate limit reached", "type": "rate_limit"}}},
        {"text": ["one", " two", " three"], "drop_after": 2},
        {"text": ["slow", " answer"], "chunk_delay_ms": 300}
    ]));
    let (kinds, message) = run(mock.port, None).await;
    assert!(kinds.is_empty(), "no start for an HTTP error: {kinds:?}");
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some(r#"429: {"message":"Rate limit reached","type":"rate_limit"}"#)
    );

    // Pi 1.5.2 fails a body that ends without a finish reason, keeping what had arrived.
    let (kinds, message) = run(mock.port, None).await;
    assert_eq!(kinds, ["start", "text_start", "text_delta", "text_end"]);
    assert_eq!(
        (message.stop_reason, message.content.clone()),
        (StopReason::Error, vec![ContentBlock::text("one")])
    );
    assert_eq!(
        message.error_message.as_deref(),
        Some("Stream ended without finish_reason")
    );

    let (kinds, message) = run(mock.port, Some(3)).await;
    assert_eq!(kinds.last().map(String::as_str), Some("text_end"));
    assert_eq!(message.stop_reason, StopReason::Aborted);
    assert_eq!(
        message.error_message.as_deref(),
        Some("Request was aborted")
    );
}

#[tokio::test]
async fn a_refused_connection_is_an_error_message() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (kinds, message) = run(port, None).await;
    assert!(kinds.is_empty());
    assert_eq!(message.stop_reason, StopReason::Error);
    assert!(
        message
            .error_message
            .as_deref()
            .unwrap()
            .starts_with("Connection error: "),
        "{:?}",
        message.error_message
    );
}

#[tokio::test]
async fn an_anthropic_messages_call_with_thinking_and_a_tool_call() {
    let mock = mock(json!([
        {"reasoning": ["Let me ", "look."], "tool_calls": [{"id": "toolu_1", "name": "read", "arguments": {"path": "a.txt"}, "chunks": ["{\"path\": ", "\"a.txt\"}"]}], "usage": {"input": 20, "output": 7}}
    ]));
    let transport = Transport::new(Timeouts {
        connect: Duration::from_secs(5),
        idle: Duration::from_secs(10),
    })
    .unwrap();
    let mut model = mock_claude();
    model.base_url = format!("http://127.0.0.1:{}", mock.port);
    let request = ModelRequest {
        model,
        reasoning: Some(pi_core::model::ThinkingLevel::Low),
        ..request(mock.port)
    };
    let options = CallOptions {
        api_key: "mock-anthropic-key".into(),
        ..CallOptions::default()
    };
    let mut call = ModelCall::new(&request, &options, 1_000);
    let mut events = call.open(&transport, &FixedClock::default()).await;
    while !call.is_done() {
        events.extend(call.next().await);
    }
    let (kinds, message) = kinds(events);
    assert_eq!(kinds.first().map(String::as_str), Some("start"));
    assert!(kinds.contains(&"thinking_delta".to_owned()), "{kinds:?}");
    assert_eq!(kinds.last().map(String::as_str), Some("toolcall_end"));
    assert_eq!(message.stop_reason, StopReason::ToolUse, "{message:?}");
    assert!(
        matches!(&message.content[0], ContentBlock::Thinking(t) if t.thinking == "Let me look." && t.thinking_signature.as_deref() == Some("mocksig=="))
    );
    let call = message.tool_calls().next().unwrap();
    assert_eq!(
        (call.id.as_str(), call.arguments.clone()),
        ("toolu_1", json!({"path": "a.txt"}))
    );
    assert_eq!((message.usage.input, message.usage.output), (20, 7));

    let log = std::fs::read_to_string(&mock.log).unwrap();
    let first: Value = serde_json::from_str(log.lines().next().unwrap()).unwrap();
    // Pi 1.5.2 calls the SDK's beta endpoint.
    assert_eq!(first["path"], "/v1/messages?beta=true");
    assert_eq!(first["headers"]["x-api-key"], "mock-anthropic-key");
    assert_eq!(
        first["body"]["thinking"],
        json!({"type": "enabled", "budget_tokens": 2048, "display": "summarized"})
    );
    assert_eq!(first["body"]["max_tokens"], 8192);
}

/// Pi 1.5.2's `buildBaseOptions` asks a Chat Completions model for its own output limit,
/// clamped to the room its context window leaves (0.73.1 capped it at 32,000).
#[test]
fn a_chat_completions_request_asks_for_the_models_limit_within_its_window() {
    let asked = |max_tokens: u64, context_window: u64| {
        let mut request = request(1);
        request.model.max_tokens = max_tokens;
        request.model.context_window = context_window;
        let compat = pi_providers::openai_completions::compat(&request.model);
        let body = pi_providers::openai_completions::build_body(&request, &compat, &options(), 0);
        serde_json::to_value(&body).unwrap()["max_completion_tokens"].clone()
    };
    assert_eq!(asked(128_000, 400_000), 128_000);
    let clamped = asked(128_000, 100_000).as_u64().unwrap();
    assert!((90_000..100_000).contains(&clamped), "{clamped}");
}
