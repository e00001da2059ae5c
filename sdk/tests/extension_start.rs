//! A Rust extension's `before_agent_start` handlers through the SDK, against the kit's mock LLM
//! over real HTTP: the last system prompt set is what the request sends, the messages they add
//! follow the prompt, and the recording replays byte for byte with the extensions absent.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{builder, prompt_once};
use pi_sdk::{
    HandledHooks, HandlerResult, HookContext, HookEvent, HookFuture, HookPayload, InjectedMessage,
    RustExtension, SessionBuilder,
};
use pi_testkit::MockLlm;
use serde_json::{json, Value};

/// Sets the system prompt to `prompt`, and, when given, adds a message; checks that it sees the
/// prompt the handlers before it set.
struct Rewrite {
    name: &'static str,
    prompt: &'static str,
    message: Option<&'static str>,
}

impl RustExtension for Rewrite {
    fn name(&self) -> &str {
        self.name
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::BeforeAgentStart])
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, _cx: &'a HookContext) -> HookFuture<'a> {
        let seen = match payload {
            HookPayload::BeforeAgentStart { system_prompt, .. } => system_prompt.clone(),
            _ => String::new(),
        };
        Box::pin(async move {
            if self.message.is_some() && seen != "You are first." {
                return Err(format!("saw {seen:?}, not the first handler's prompt"));
            }
            Ok(Some(HandlerResult::BeforeAgentStart {
                messages: Vec::new(),
                message: self.message.map(|text| InjectedMessage {
                    custom_type: "reminder".into(),
                    content: json!(text),
                    display: false,
                    details: None,
                }),
                system_prompt: Some(self.prompt.into()),
            }))
        })
    }
}

#[tokio::test]
async fn the_last_prompt_set_is_sent_the_added_message_follows_and_the_recording_replays() {
    let workspace = tempfile::tempdir().unwrap();
    let cassette = workspace.path().join("start.cassette.jsonl");
    let mock = MockLlm::start(&json!([{"text": ["Done."]}]));
    let recorded = prompt_once(
        builder(&mock, workspace.path())
            .extension(Rewrite {
                name: "first",
                prompt: "You are first.",
                message: None,
            })
            .extension(Rewrite {
                name: "terse",
                prompt: "You are terse.",
                message: Some("Answer in one word."),
            })
            .record(&cassette),
        "Hello?",
    )
    .await;
    let requests = mock.requests();
    drop(mock);
    assert_eq!(requests.len(), 1);
    let messages = &requests[0]["messages"];
    assert_eq!(
        messages[0],
        json!({"role": "system", "content": "You are terse."})
    );
    assert_eq!(messages[1]["role"], "user");
    assert_eq!(messages[2]["role"], "user");
    assert_eq!(
        serde_json::to_string(&messages[2]).unwrap(),
        serde_json::to_string(&json!({"role": "user", "content": [
            {"type": "text", "text": "Answer in one word."}]}))
        .unwrap()
    );
    // The run records the prompt's prompt-and-tools system message, the prompt, the added
    // message, the answer.
    let ends: Vec<&Value> = recorded
        .iter()
        .filter(|e| e["type"] == "message_end")
        .map(|e| &e["message"])
        .collect();
    let roles: Vec<&str> = ends.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["system", "user", "custom", "assistant"]);
    assert_eq!(ends[2]["customType"], "reminder");
    assert!(
        !ends[0].to_string().contains("terse"),
        "the transcript's prompt is not patched: {}",
        ends[0]
    );
    assert!(
        !recorded.iter().any(|e| e["type"] == "extension_error"),
        "{recorded:?}"
    );
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(text.contains("\"handledHooks\":[\"before_agent_start\"]"));

    // The replay loads no extension: the recorded decision starts the run.
    let replayed = prompt_once(
        SessionBuilder::new(workspace.path()).replay(&cassette),
        "Hello?",
    )
    .await;
    assert_eq!(replayed, recorded);
}
