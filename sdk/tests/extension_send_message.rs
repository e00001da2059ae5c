//! A Rust extension's `pi.sendMessage` through the SDK, against the kit's mock LLM over real
//! HTTP: a `turn_end` handler steers the run with a custom message, the run takes another turn
//! whose request carries it as Pi's `convertToLlm` does, and the recording replays byte for byte
//! with the extension absent.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};

use common::{builder, prompt_once};
use pi_sdk::{
    HandledHooks, HookAction, HookContext, HookEvent, HookFuture, HookPayload, InjectedMessage,
    RustExtension, SessionBuilder,
};
use pi_testkit::MockLlm;
use serde_json::{json, Value};

/// Sends one reminder when the first turn ends.
struct Reminder {
    sent: AtomicBool,
}

impl RustExtension for Reminder {
    fn name(&self) -> &str {
        "reminder"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::TurnEnd])
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, cx: &'a HookContext) -> HookFuture<'a> {
        if let HookPayload::TurnEnd { .. } = payload {
            if !self.sent.swap(true, Ordering::SeqCst) {
                cx.act(HookAction::SendMessage {
                    message: InjectedMessage {
                        custom_type: "reminder".into(),
                        content: json!("Also check the tests."),
                        display: true,
                        details: Some(json!({"n": 1})),
                    },
                    deliver_as: None,
                    trigger_turn: None,
                });
            }
        }
        Box::pin(async { Ok(None) })
    }
}

#[tokio::test]
async fn a_turn_end_handler_steers_the_run_and_the_recording_replays() {
    let workspace = tempfile::tempdir().unwrap();
    let cassette = workspace.path().join("remind.cassette.jsonl");
    let mock = MockLlm::start(&json!([{"text": "Done."}, {"text": "Checked."}]));
    let recorded = prompt_once(
        builder(&mock, workspace.path())
            .extension(Reminder {
                sent: AtomicBool::new(false),
            })
            .record(&cassette),
        "Fix it.",
    )
    .await;
    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "the message starts another turn");
    let body = serde_json::to_string(&requests[1]).unwrap();
    assert!(body.contains("Also check the tests."), "{body}");
    drop(mock);
    let custom: Vec<&Value> = recorded
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "custom")
        .collect();
    assert_eq!(custom.len(), 1);
    assert_eq!(custom[0]["message"]["customType"], "reminder");
    assert_eq!(custom[0]["message"]["details"], json!({"n": 1}));
    let turns = recorded.iter().filter(|e| e["type"] == "turn_end").count();
    assert_eq!(turns, 2);

    let replayed = prompt_once(
        SessionBuilder::new(workspace.path()).replay(&cassette),
        "Fix it.",
    )
    .await;
    assert_eq!(replayed, recorded);
}
