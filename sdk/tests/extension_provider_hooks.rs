//! A Rust extension's provider hooks through the SDK, against the kit's mock LLM over real
//! HTTP: `before_provider_headers` sees the headers the call would send and adds one,
//! `before_provider_request` sees the encoded body and adds a field; both reach the wire, and
//! the recording replays byte for byte with the extension absent.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::{Arc, Mutex};

use common::{builder, prompt_once};
use pi_sdk::{
    HandledHooks, HandlerResult, HookContext, HookEvent, HookFuture, HookPayload, RustExtension,
    SessionBuilder,
};
use pi_testkit::MockLlm;
use serde_json::{json, Value};

/// Tags each request's headers and body, remembering the body it was shown.
struct Tag {
    seen: Arc<Mutex<Vec<Value>>>,
}

impl RustExtension for Tag {
    fn name(&self) -> &str {
        "tag"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([
            HookEvent::BeforeProviderHeaders,
            HookEvent::BeforeProviderRequest,
        ])
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, _cx: &'a HookContext) -> HookFuture<'a> {
        let result = match payload {
            HookPayload::BeforeProviderHeaders { headers, .. } => {
                let mut headers = headers.clone();
                headers.insert("x-tag".into(), json!("rust"));
                Some(HandlerResult::BeforeProviderHeaders { headers })
            }
            HookPayload::BeforeProviderRequest { payload, .. } => {
                self.seen.lock().unwrap().push(payload.clone());
                let mut payload = payload.clone();
                payload["metadata"] = json!({"by": "rust"});
                Some(HandlerResult::BeforeProviderRequest { payload })
            }
            _ => None,
        };
        Box::pin(async move { Ok(result) })
    }
}

#[tokio::test]
async fn the_hooks_change_what_is_sent_and_the_recording_replays_without_them() {
    let workspace = tempfile::tempdir().unwrap();
    let cassette = workspace.path().join("provider.cassette.jsonl");
    let mock = MockLlm::start(&json!([{"text": ["Noted."]}]));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorded = prompt_once(
        builder(&mock, workspace.path())
            .extension(Tag {
                seen: Arc::clone(&seen),
            })
            .record(&cassette),
        "Hello.",
    )
    .await;
    let sent = mock.received();
    drop(mock);
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0]["headers"]["x-tag"], "rust");
    assert_eq!(sent[0]["body"]["metadata"], json!({"by": "rust"}));
    // The handler was shown the body the call encodes.
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    let mut unchanged = sent[0]["body"].clone();
    unchanged.as_object_mut().unwrap().remove("metadata");
    assert_eq!(seen[0], unchanged);

    let replayed = prompt_once(
        SessionBuilder::new(workspace.path()).replay(&cassette),
        "Hello.",
    )
    .await;
    assert_eq!(replayed, recorded);
}

/// Listens to the provider's answer, remembering each notice it was told.
struct Listen {
    told: Arc<Mutex<Vec<Value>>>,
}

impl RustExtension for Listen {
    fn name(&self) -> &str {
        "listen"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([
            HookEvent::AfterProviderResponse,
            HookEvent::ProviderStreamEvent,
        ])
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, _cx: &'a HookContext) -> HookFuture<'a> {
        self.told
            .lock()
            .unwrap()
            .push(serde_json::to_value(payload).unwrap());
        Box::pin(async move { Ok(None) })
    }
}

#[tokio::test]
async fn the_answer_is_told_head_first_then_each_stream_event_and_replays_without_it() {
    let workspace = tempfile::tempdir().unwrap();
    let cassette = workspace.path().join("answer.cassette.jsonl");
    let mock = MockLlm::start(&json!([{"text": ["Noted."]}]));
    let told = Arc::new(Mutex::new(Vec::new()));
    let recorded = prompt_once(
        builder(&mock, workspace.path())
            .extension(Listen {
                told: Arc::clone(&told),
            })
            .record(&cassette),
        "Hello.",
    )
    .await;
    drop(mock);
    let told = told.lock().unwrap().clone();
    assert_eq!(told[0]["type"], "after_provider_response");
    assert_eq!(told[0]["status"], 200);
    assert_eq!(told[0]["headers"]["content-type"], "text/event-stream");
    let stream = &told[1..];
    assert!(!stream.is_empty());
    for event in stream {
        assert_eq!(event["type"], "provider_stream_event");
        assert_eq!(
            (&event["provider"], &event["api"]),
            (&json!("mock"), &json!("openai-completions"))
        );
    }
    // The SDK's parsed chunks: the text's delta among them, no `[DONE]`.
    assert!(stream
        .iter()
        .any(|e| e["data"]["choices"][0]["delta"]["content"] == "Noted."));
    assert!(stream.iter().all(|e| e["data"].is_object()));

    let replayed = prompt_once(
        SessionBuilder::new(workspace.path()).replay(&cassette),
        "Hello.",
    )
    .await;
    assert_eq!(replayed, recorded);
}
