//! A Rust extension's `context` handler through the SDK, against the kit's mock LLM over real
//! HTTP: the request sends the conversation the handler returned, the transcript keeps the
//! real one, and the recording replays byte for byte with the extension absent.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{builder, prompt_once};
use pi_sdk::{
    HandledHooks, HandlerResult, HookContext, HookEvent, HookFuture, HookPayload, RustExtension,
    SessionBuilder,
};
use pi_testkit::MockLlm;
use serde_json::json;

/// Replaces `secret` in every message the model would see.
struct Scrub;

impl RustExtension for Scrub {
    fn name(&self) -> &str {
        "scrub"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::Context])
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, _cx: &'a HookContext) -> HookFuture<'a> {
        let scrubbed = match payload {
            HookPayload::Context { messages } => {
                let text = serde_json::to_string(messages).unwrap();
                Some(serde_json::from_str(&text.replace("secret", "[scrubbed]")).unwrap())
            }
            _ => None,
        };
        Box::pin(async move { Ok(Some(HandlerResult::Context { messages: scrubbed })) })
    }
}

#[tokio::test]
async fn the_request_sends_the_scrubbed_conversation_and_the_recording_replays() {
    let workspace = tempfile::tempdir().unwrap();
    let cassette = workspace.path().join("context.cassette.jsonl");
    let mock = MockLlm::start(&json!([{"text": ["Noted."]}]));
    let recorded = prompt_once(
        builder(&mock, workspace.path())
            .extension(Scrub)
            .record(&cassette),
        "My secret is 42.",
    )
    .await;
    let requests = mock.requests();
    drop(mock);
    assert_eq!(requests.len(), 1);
    let messages = &requests[0]["messages"];
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(
        messages[1],
        json!({"role": "user", "content": [{"type": "text", "text": "My [scrubbed] is 42."}]})
    );
    let user = recorded
        .iter()
        .find(|e| e["type"] == "message_end" && e["message"]["role"] == "user")
        .unwrap();
    assert_eq!(user["message"]["content"][0]["text"], "My secret is 42.");

    let replayed = prompt_once(
        SessionBuilder::new(workspace.path()).replay(&cassette),
        "My secret is 42.",
    )
    .await;
    assert_eq!(replayed, recorded);
}
