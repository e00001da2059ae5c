//! A Rust extension's `pi.setModel` through the SDK, against the kit's mock LLM over real HTTP:
//! a `turn_end` handler switches to another model (the whole model in the action, as a
//! TypeScript extension's host sends it), the run's next request names it, and the recording
//! replays byte for byte with the extension absent.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};

use common::{builder, prompt_once};
use pi_sdk::{
    HandledHooks, HookAction, HookContext, HookEvent, HookFuture, HookPayload, RustExtension,
    SessionBuilder,
};
use pi_testkit::MockLlm;
use serde_json::json;

/// Switches to `mock-reasoner` when the first turn ends.
struct Switch {
    done: AtomicBool,
}

impl RustExtension for Switch {
    fn name(&self) -> &str {
        "switch"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::TurnEnd])
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, cx: &'a HookContext) -> HookFuture<'a> {
        if let (HookPayload::TurnEnd { .. }, Some(state)) = (payload, cx.state()) {
            if !self.done.swap(true, Ordering::SeqCst) {
                let mut model = state.model.clone();
                model.id = "mock-reasoner".into();
                model.reasoning = true;
                cx.act(HookAction::SetModel {
                    model: Box::new(model),
                });
            }
        }
        Box::pin(async { Ok(None) })
    }
}

#[tokio::test]
async fn a_turn_end_handler_sets_the_model_of_the_next_request_and_the_recording_replays() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("a.txt"), "alpha\n").unwrap();
    let cassette = workspace.path().join("switch.cassette.jsonl");
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "read", "arguments": "{\"path\":\"a.txt\"}"}]},
        {"text": "It says alpha."},
    ]));
    let recorded = prompt_once(
        builder(&mock, workspace.path())
            .extension(Switch {
                done: AtomicBool::new(false),
            })
            .record(&cassette),
        "Read a.txt.",
    )
    .await;
    let models: Vec<_> = mock.requests().iter().map(|r| r["model"].clone()).collect();
    assert_eq!(models.len(), 2);
    assert_ne!(models[0], json!("mock-reasoner"));
    assert_eq!(models[1], json!("mock-reasoner"), "the run's next request");
    drop(mock);

    let replayed = prompt_once(
        SessionBuilder::new(workspace.path()).replay(&cassette),
        "Read a.txt.",
    )
    .await;
    assert_eq!(replayed, recorded);
}
