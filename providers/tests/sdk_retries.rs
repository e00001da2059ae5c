//! The original SDKs' retries, when a call's options ask for them (Pi's settings
//! `retry.provider.maxRetries` and `timeoutMs`), over real HTTP to the kit's mock LLM: which
//! failures are sent again, how many times, and the per-attempt timeout. The counts are those
//! the original 0.73.1 made against the same scripts (the repository's conformance scenarios
//! `settings_provider_retries` and `settings_provider_timeout`). The calls get a fixed
//! [`FixedClock`]: the waits they ask for are noted, not slept.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::{kinds, mock_claude, mock_model_at};
use pi_core::agent::ModelRequest;
use pi_core::message::{AssistantMessage, ContentBlock, Message, StopReason, UserMessage};
use pi_core::model::Model;
use pi_effects::network::{Timeouts, Transport};
use pi_providers::call::ModelCall;
use pi_providers::retry::FixedClock;
use pi_providers::transport::scripted::{ScriptedResponse, ScriptedTransport};
use pi_providers::CallOptions;
use pi_testkit::MockLlm;
use serde_json::json;

async fn call(model: Model, options: CallOptions) -> (Vec<String>, AssistantMessage) {
    call_timed(model, options, &FixedClock::new(1_000, 0.5)).await
}

/// A call whose SDK retries read the time and jitter from `clock` and note their waits there.
async fn call_timed(
    model: Model,
    options: CallOptions,
    clock: &FixedClock,
) -> (Vec<String>, AssistantMessage) {
    call_capped(model, options, clock, None).await
}

/// A call whose request carries its own cap on the SDK's retries (`max_retries`).
async fn call_capped(
    model: Model,
    options: CallOptions,
    clock: &FixedClock,
    cap: Option<u32>,
) -> (Vec<String>, AssistantMessage) {
    let transport = Transport::new(Timeouts {
        connect: Duration::from_secs(5),
        idle: Duration::from_secs(10),
    })
    .unwrap();
    let request = ModelRequest {
        model,
        system_prompt: "Be brief.".into(),
        messages: vec![Message::User(UserMessage::from_text("Hi", Vec::new(), 1))].into(),
        tools: Vec::new(),
        reasoning: None,
        session_id: None,
        max_tokens: None,
        thread: None,
        session_diagnostics: Default::default(),
        system_messages: Default::default(),
        max_retries: cap,
        provider_hooked: None,
    };
    let mut call = ModelCall::new(&request, &options, 1_000);
    let mut events = call.open(&transport, clock).await;
    while !call.is_done() {
        events.extend(call.next().await);
    }
    kinds(events)
}

fn retries(max_retries: u32) -> CallOptions {
    CallOptions {
        api_key: "mock-key".into(),
        max_retries,
        ..CallOptions::default()
    }
}

fn openai(mock: &MockLlm) -> Model {
    mock_model_at(&mock.url("/v1"))
}

#[tokio::test]
async fn retryable_failures_are_sent_again_until_one_succeeds() {
    let mock = MockLlm::start(&json!([
        {"status": 500, "headers": {"retry-after": "0"}},
        {"status": 429, "headers": {"retry-after-ms": "20"}},
        {"status": 408, "headers": {"retry-after": "0"}},
        {"text": ["Recovered."]}
    ]));
    let clock = FixedClock::new(1_000, 0.5);
    let (kinds, message) = call_timed(openai(&mock), retries(3), &clock).await;
    assert_eq!(kinds.first().map(String::as_str), Some("start"));
    assert_eq!(message.content, vec![ContentBlock::text("Recovered.")]);
    assert_eq!(mock.requests().len(), 4);
    // Each wait is the one the server asked for.
    assert_eq!(clock.waits(), [0, 20, 0]);
}

#[tokio::test]
async fn a_requests_own_cap_of_no_retries_sends_it_once_whatever_the_setting() {
    // A cache warm (Pi 1.5.2's `maxRetries: 0`) under `retry.provider.maxRetries: 3`.
    let mock = MockLlm::start(&json!([
        {"status": 500, "headers": {"retry-after": "0"}},
        {"text": ["Never asked for."]}
    ]));
    let clock = FixedClock::new(1_000, 0.5);
    let (_, message) = call_capped(openai(&mock), retries(3), &clock, Some(0)).await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(mock.requests().len(), 1);
}

#[tokio::test]
async fn the_last_failure_is_reported_once_retries_run_out() {
    let mock = MockLlm::start(&json!([
        {"status": 503, "headers": {"retry-after": "0"}},
        {"status": 502, "headers": {"retry-after": "0"}},
        {"status": 500, "error_body": {"error": {"message": "Still broken", "type": "server_error"}}},
        {"text": ["Never asked for."]}
    ]));
    let (kinds, message) = call(openai(&mock), retries(2)).await;
    assert!(kinds.is_empty());
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some(r#"500: {"message":"Still broken","type":"server_error"}"#),
        "{message:?}"
    );
    assert_eq!(mock.requests().len(), 3);
}

#[tokio::test]
async fn client_errors_and_a_server_that_says_no_are_not_retried() {
    let mock = MockLlm::start(&json!([
        {"status": 400},
        {"status": 500, "headers": {"x-should-retry": "false"}},
        {"status": 500, "headers": {"retry-after": "0"}},
        {"text": ["Third call."]}
    ]));
    let (_, first) = call(openai(&mock), retries(2)).await;
    assert_eq!(first.stop_reason, StopReason::Error);
    assert_eq!(mock.requests().len(), 1);
    let (_, second) = call(openai(&mock), retries(2)).await;
    assert_eq!(second.stop_reason, StopReason::Error);
    assert_eq!(mock.requests().len(), 2);
    // Without retries asked for (the default), a retryable failure is sent once.
    let (_, third) = call(openai(&mock), retries(0)).await;
    assert_eq!(third.stop_reason, StopReason::Error);
    assert_eq!(mock.requests().len(), 3);
}

#[tokio::test]
async fn anthropic_retries_and_google_does_not() {
    let mock = MockLlm::start(&json!([
        {"status": 529, "headers": {"retry-after": "0"}},
        {"text": ["Anthropic recovered."]},
        {"status": 500, "headers": {"retry-after": "0"}}
    ]));
    let mut claude = mock_claude();
    claude.base_url = mock.url("");
    let options = CallOptions {
        api_key: "mock-anthropic-key".into(),
        max_retries: 2,
        ..CallOptions::default()
    };
    let (_, message) = call(claude, options).await;
    assert_eq!(
        message.content,
        vec![ContentBlock::text("Anthropic recovered.")]
    );
    assert_eq!(mock.requests().len(), 2);

    // The Google SDK does not retry: a retryable 500 followed by a good answer still ends the
    // call after one request.
    let mut gemini = openai(&mock);
    gemini.api = "google-generative-ai".into();
    let transport = ScriptedTransport::new([
        Ok(
            ScriptedResponse::new(500, "{\"error\":{\"message\":\"busy\"}}")
                .with_header("retry-after", "0"),
        ),
        Ok(ScriptedResponse::new(200, "data: {}\n\n")),
    ]);
    let request = ModelRequest {
        model: gemini,
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
    };
    let mut call = ModelCall::new(&request, &retries(2), 1_000);
    call.open(&transport, &FixedClock::new(1_000, 0.5)).await;
    while !call.is_done() {
        call.next().await;
    }
    assert_eq!(transport.requests().len(), 1, "the Google SDK sends once");
}

#[tokio::test]
async fn each_attempt_waits_for_the_headers_at_most_the_timeout() {
    let mock = MockLlm::start(&json!([
        {"delay_ms": 3000, "text": ["Too late."]},
        {"delay_ms": 3000, "text": ["Too late again."]},
        {"text": ["In time."]}
    ]));
    let options = CallOptions {
        timeout_ms: Some(200),
        ..retries(1)
    };
    let clock = FixedClock::new(1_000, 0.5);
    let (kinds, message) = call_timed(openai(&mock), options.clone(), &clock).await;
    assert!(kinds.is_empty());
    assert_eq!(
        message.error_message.as_deref(),
        Some(pi_providers::transport::TIMEOUT_TEXT)
    );
    // A timeout carries no headers: the SDK's backoff, 0.5 s shortened by jitter 0.5 x 25 %.
    assert_eq!(clock.waits(), [437]);
    let (_, message) = call(openai(&mock), options).await;
    assert_eq!(message.content, vec![ContentBlock::text("In time.")]);
}

#[tokio::test]
async fn options_the_sdk_refuses_fail_the_call_unsent() {
    let mock = MockLlm::start(&json!([{"text": ["Never sent."]}]));
    let options = CallOptions {
        refused: Some("timeout must be an integer".into()),
        ..retries(0)
    };
    let (kinds, message) = call(openai(&mock), options).await;
    assert!(kinds.is_empty());
    assert_eq!(
        message.error_message.as_deref(),
        Some("timeout must be an integer")
    );
    assert!(mock.requests().is_empty());
}
