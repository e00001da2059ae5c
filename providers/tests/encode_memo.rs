//! The Chat Completions encoder hands out the elements it built for the last request again
//! (the requests of a session repeat the conversation). That memory must be invisible: any
//! sequence of requests, encoded one after another on one thread, gives each the bytes a fresh
//! thread, which remembers nothing, gives it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Tests read fixtures and run servers; the providers' IO ban applies to the library, not to its
// tests.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod common;

use common::mock_model;
use pi_core::agent::ModelRequest;
use pi_core::message::Message;
use pi_core::model::Model;
use pi_providers::openai_completions::encode;
use pi_providers::CallOptions;
use proptest::prelude::*;
use serde_json::json;

/// One message of a conversation, by kind and a small number that varies its text and ids.
fn message(kind: u8, n: u8) -> Message {
    let value = match kind % 4 {
        0 => json!({"role": "user", "content": format!("question {n}"), "timestamp": 1}),
        1 => {
            json!({"role": "assistant", "content": [{"type": "text", "text": format!("answer {n}")}],
            "api": "openai-completions", "provider": "mock", "model": "mock-model",
            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
            "stopReason": "stop", "timestamp": 2})
        }
        2 => {
            json!({"role": "assistant", "content": [{"type": "toolCall", "id": format!("call_{n}"),
                "name": "read", "arguments": {"path": format!("f{n}.txt")}}],
            "api": "openai-completions", "provider": "mock", "model": "mock-model",
            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
            "stopReason": "toolUse", "timestamp": 3})
        }
        _ => json!({"role": "toolResult", "toolCallId": format!("call_{n}"), "toolName": "read",
            "content": [{"type": "text", "text": format!("line {n}\n\"quoted\"")}],
            "isError": false, "timestamp": 4}),
    };
    serde_json::from_value(value).unwrap()
}

/// The kit's mock model, or one whose requests carry Anthropic-style cache marks (which the
/// encoder writes into the last user or assistant element).
fn model(cache_marks: bool) -> Model {
    let mut model = mock_model();
    if cache_marks {
        model.compat = Some(json!({"cacheControlFormat": "anthropic"}));
    }
    model
}

fn request(model: &Model, messages: &[Message]) -> ModelRequest {
    ModelRequest {
        model: model.clone(),
        system_prompt: "You are a test.".into(),
        messages: messages.to_vec().into(),
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

fn body_text(request: &ModelRequest) -> String {
    let http = encode(request, &CallOptions::default(), 0);
    serde_json::to_string(&http.body).unwrap()
}

proptest! {
    #[test]
    fn a_request_encodes_the_same_whatever_was_encoded_before_it(
        kinds in proptest::collection::vec((0u8..4, 0u8..3), 1..12),
        prefixes in proptest::collection::vec((0usize..12, any::<bool>()), 1..10),
    ) {
        let messages: Vec<Message> = kinds.iter().map(|(k, n)| message(*k, *n)).collect();
        let requests: Vec<ModelRequest> = prefixes
            .iter()
            .map(|(n, marks)| request(&model(*marks), &messages[..(*n).min(messages.len())]))
            .collect();
        let warm: Vec<String> = requests.iter().map(body_text).collect();
        for (request, warm) in requests.iter().zip(&warm) {
            let request = request.clone();
            let cold = std::thread::spawn(move || body_text(&request)).join().unwrap();
            prop_assert_eq!(warm, &cold);
        }
    }
}

#[test]
fn a_cache_mark_stays_on_the_request_that_carries_it() {
    let model = model(true);
    let messages = [message(0, 0), message(1, 0), message(0, 1)];
    let first = body_text(&request(&model, &messages[..1]));
    assert!(first.contains("cache_control"), "{first}");
    let second = body_text(&request(&model, &messages));
    // Only the last user message is marked; the first, marked in the request before, is not.
    assert_eq!(second.matches("cache_control").count(), 2, "{second}");
    assert!(
        second.contains(r#"{"role":"user","content":"question 0"}"#),
        "{second}"
    );
}
