//! A Rust extension's `input` handlers through the SDK, against the kit's mock LLM over real
//! HTTP: they see the text as given (before `/template` expansion, as Pi's do), a transform's
//! text is what expands and is sent, a handled input starts no run, and the recording replays
//! byte for byte with the extension absent.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::{Arc, Mutex};

use common::builder;
use pi_sdk::{
    HandledHooks, HandlerResult, HookAction, HookContext, HookEvent, HookFuture, HookPayload,
    InputAction, Resources, RustExtension, SessionBuilder,
};
use pi_testkit::MockLlm;
use serde_json::{json, Value};

/// `hi NAME` becomes the `/greet NAME` template; `secret` is taken (handled, an entry noted).
/// Keeps the texts it was shown.
struct Shortcuts {
    seen: Arc<Mutex<Vec<String>>>,
}

impl RustExtension for Shortcuts {
    fn name(&self) -> &str {
        "shortcuts"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::Input])
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, cx: &'a HookContext) -> HookFuture<'a> {
        let text = match payload {
            HookPayload::Input { text, .. } => text.clone(),
            _ => String::new(),
        };
        self.seen.lock().unwrap().push(text.clone());
        Box::pin(async move {
            if text == "secret" {
                cx.act(HookAction::AppendEntry {
                    custom_type: "taken".into(),
                    data: Some(json!({"text": text})),
                });
                return Ok(Some(HandlerResult::Input(InputAction::Handled)));
            }
            Ok(text.strip_prefix("hi ").map(|name| {
                HandlerResult::Input(InputAction::Transform {
                    text: format!("/greet {name}"),
                    images: None,
                })
            }))
        })
    }
}

fn greet() -> Resources {
    serde_json::from_value(json!({"templates": [{
        "name": "greet", "description": "Greets", "content": "Hello $1, how are you?",
        "filePath": "/prompts/greet.md"}]}))
    .unwrap()
}

/// Runs `texts` one after the other through the session `builder` sets up; the events.
async fn prompts(builder: SessionBuilder, texts: &[&str]) -> Vec<Value> {
    let session = builder.build().unwrap();
    let mut events = session.subscribe();
    for text in texts {
        session.prompt(text).await.unwrap();
    }
    session.finish().await.unwrap();
    let mut out = Vec::new();
    while let Ok(event) = events.try_recv() {
        out.push(serde_json::to_value(&event).unwrap());
    }
    out
}

#[tokio::test]
async fn input_handlers_see_the_typed_text_their_transform_expands_and_the_recording_replays() {
    let workspace = tempfile::tempdir().unwrap();
    let cassette = workspace.path().join("input.cassette.jsonl");
    let mock = MockLlm::start(&json!([{"text": ["Fine."]}, {"text": ["Also fine."]}]));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let texts = ["hi moon", "secret", "/greet sun"];
    let recorded = prompts(
        builder(&mock, workspace.path())
            .resources(greet())
            .extension(Shortcuts {
                seen: Arc::clone(&seen),
            })
            .record(&cassette),
        &texts,
    )
    .await;
    let requests = mock.requests();
    drop(mock);
    // The handlers saw each text as typed, the template one unexpanded.
    assert_eq!(*seen.lock().unwrap(), texts);
    // Two runs: the handled input made no request.
    assert_eq!(requests.len(), 2);
    let last_user = |r: &Value| {
        r["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .unwrap()["content"]
            .to_string()
    };
    assert!(last_user(&requests[0]).contains("Hello moon, how are you?"));
    assert!(last_user(&requests[1]).contains("Hello sun, how are you?"));
    let kinds: Vec<&str> = recorded
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| **k == "agent_settled").count(),
        2,
        "{kinds:?}"
    );
    assert!(recorded
        .iter()
        .any(|e| e["type"] == "entry_appended" && e["entry"]["customType"] == "taken"));
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(text.contains("\"handledHooks\":[\"input\"]"));
    // The cassette holds the typed text; the decision is what expands.
    assert!(text.contains("\"text\":\"hi moon\""));

    // The replay loads no extension: the recorded decisions answer the input hook.
    let replayed = prompts(
        SessionBuilder::new(workspace.path()).replay(&cassette),
        &texts,
    )
    .await;
    assert_eq!(replayed, recorded);
    assert_eq!(seen.lock().unwrap().len(), 3);
}
