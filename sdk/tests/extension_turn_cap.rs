//! Harbor's turn cap as a Rust extension through the SDK, against the kit's mock LLM over real
//! HTTP: a `turn_end` handler calls `ctx.abort()` after N turns, the run ends aborted without
//! another request, and the recording replays byte for byte with the extension absent.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::atomic::{AtomicU64, Ordering};

use common::{builder, prompt_once};
use pi_sdk::{
    HandledHooks, HookAction, HookContext, HookEvent, HookFuture, HookPayload, RustExtension,
    SessionBuilder,
};
use pi_testkit::MockLlm;
use serde_json::{json, Value};

/// Aborts the run when its `cap`th turn ends, and writes down that it did.
struct TurnCap {
    cap: u64,
    seen: AtomicU64,
}

impl RustExtension for TurnCap {
    fn name(&self) -> &str {
        "turn-cap"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::TurnEnd])
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, cx: &'a HookContext) -> HookFuture<'a> {
        if let HookPayload::TurnEnd { turn_index, .. } = payload {
            assert_eq!(*turn_index, self.seen.fetch_add(1, Ordering::SeqCst));
            if turn_index + 1 == self.cap {
                cx.act(HookAction::AppendEntry {
                    custom_type: "turn-cap".into(),
                    data: Some(json!({"turns": turn_index + 1})),
                });
                cx.abort();
            }
        }
        Box::pin(async { Ok(None) })
    }
}

#[tokio::test]
async fn a_turn_end_handler_caps_the_run_at_two_turns_and_the_recording_replays() {
    let workspace = tempfile::tempdir().unwrap();
    let cassette = workspace.path().join("cap.cassette.jsonl");
    let call = |id: &str| {
        json!({"tool_calls": [
        {"id": id, "name": "bash", "arguments": {"command": "echo again"}}]})
    };
    let mock = MockLlm::start(&json!([call("call_1"), call("call_2"), call("call_3")]));
    let recorded = prompt_once(
        builder(&mock, workspace.path())
            .extension(TurnCap {
                cap: 2,
                seen: AtomicU64::new(0),
            })
            .record(&cassette),
        "Loop forever.",
    )
    .await;
    assert_eq!(mock.requests().len(), 2, "no request after the cap");
    drop(mock);
    let turn_ends: Vec<&Value> = recorded
        .iter()
        .filter(|e| e["type"] == "turn_end")
        .collect();
    assert_eq!(turn_ends.len(), 3, "two turns and the aborted one");
    assert_eq!(turn_ends[2]["message"]["stopReason"], "aborted");
    assert_eq!(
        turn_ends[2]["message"]["errorMessage"],
        "This operation was aborted"
    );
    // The entry the handler wrote is announced before the turn it capped is.
    let kinds: Vec<&str> = recorded
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .filter(|t| ["entry_appended", "turn_end"].contains(t))
        .collect();
    assert_eq!(
        kinds,
        ["turn_end", "entry_appended", "turn_end", "turn_end"]
    );
    let appended = recorded
        .iter()
        .find(|e| e["type"] == "entry_appended")
        .unwrap();
    assert_eq!(appended["entry"]["customType"], "turn-cap");
    assert_eq!(appended["entry"]["data"], json!({"turns": 2}));
    let settled: Vec<&Value> = recorded
        .iter()
        .filter(|e| e["type"] == "agent_settled")
        .collect();
    assert_eq!(settled.len(), 1);
    assert_eq!(settled[0]["aborted"], true);

    let replayed = prompt_once(
        SessionBuilder::new(workspace.path()).replay(&cassette),
        "Loop forever.",
    )
    .await;
    assert_eq!(replayed, recorded);
}
