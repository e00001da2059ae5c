//! A Rust extension's `ctx.compact()` through the SDK, against the kit's mock LLM over real
//! HTTP: a `turn_end` handler asks for a compaction mid run (the second prompt's); the run is aborted (no request for
//! its next turn) and settles, then the compaction's summary request carries the custom
//! instructions; the recording replays byte for byte with the extension absent. And the
//! compaction hook points for a Rust extension: it supplies the summary
//! (`session_before_compact`), hears the entry (`session_compact`) and the end of the
//! compaction it asked for (`compact_end`, its callback's number).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::atomic::{AtomicBool, Ordering};

use common::builder;
use pi_sdk::{
    CompactionSettings, HandledHooks, HandlerResult, HookAction, HookContext, HookEvent,
    HookFuture, HookPayload, RustExtension, SessionBuilder, SuppliedCompaction,
};
use pi_testkit::MockLlm;
use serde_json::{json, Value};

/// Compacts when the first turn with tool results ends.
struct Squash {
    done: AtomicBool,
}

impl RustExtension for Squash {
    fn name(&self) -> &str {
        "squash"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::TurnEnd])
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, cx: &'a HookContext) -> HookFuture<'a> {
        let tool_turn = matches!(payload, HookPayload::TurnEnd { tool_results, .. } if !tool_results.is_empty());
        if tool_turn && !self.done.swap(true, Ordering::SeqCst) {
            cx.act(HookAction::Compact {
                custom_instructions: Some("keep the file name".into()),
                callback: None,
            });
        }
        Box::pin(async { Ok(None) })
    }
}

/// Runs a first prompt, then "Read a.txt." to the end of the compaction; the types of the
/// events that settle and compact, and all the events.
async fn run(builder: SessionBuilder) -> (Vec<String>, Vec<Value>) {
    let session = builder
        .compaction(CompactionSettings {
            keep_recent_tokens: 10,
            ..CompactionSettings::default()
        })
        .build()
        .unwrap();
    let mut events = session.subscribe();
    session.prompt("First prompt about alpha.").await.unwrap();
    session.prompt("Read a.txt.").await.unwrap();
    session.wait_idle().await;
    session.finish().await.unwrap();
    let mut all = Vec::new();
    while let Ok(event) = events.try_recv() {
        all.push(serde_json::to_value(&event).unwrap());
    }
    let kinds = all
        .iter()
        .map(|e| e["type"].as_str().unwrap_or_default().to_owned())
        .filter(|k| k == "agent_settled" || k.starts_with("compaction"))
        .collect();
    (kinds, all)
}

#[tokio::test]
async fn a_turn_end_handler_compacts_after_the_aborted_run_and_the_recording_replays() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("a.txt"), "alpha\n").unwrap();
    let cassette = workspace.path().join("squash.cassette.jsonl");
    let mock = MockLlm::start(&json!([
        {"text": "First answer about alpha."},
        {"tool_calls": [{"name": "read", "arguments": "{\"path\":\"a.txt\"}"}]},
        {"text": "## Goal\nSquashed."},
        {"text": "Never reached."},
    ]));
    let (kinds, recorded) = run(builder(&mock, workspace.path())
        .extension(Squash {
            done: AtomicBool::new(false),
        })
        .record(&cassette))
    .await;
    assert_eq!(
        kinds,
        [
            "agent_settled",
            "agent_settled",
            "compaction_start",
            "compaction_end"
        ]
    );
    let requests = mock.requests();
    assert_eq!(requests.len(), 3, "two runs' turns, then the summary");
    let summary = requests[2]["messages"].to_string();
    assert!(
        summary.contains("Additional focus: keep the file name"),
        "{summary}"
    );
    drop(mock);

    let (_, replayed) = run(SessionBuilder::new(workspace.path()).replay(&cassette)).await;
    assert_eq!(replayed, recorded);
}

/// Compacts when the first turn with tool results ends, with a callback numbered 3; supplies the
/// compaction's summary at `session_before_compact`, and notes `session_compact` and the end.
struct Supplier {
    done: AtomicBool,
}

impl RustExtension for Supplier {
    fn name(&self) -> &str {
        "supplier"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([
            HookEvent::TurnEnd,
            HookEvent::SessionBeforeCompact,
            HookEvent::SessionCompact,
            HookEvent::CompactEnd,
        ])
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, cx: &'a HookContext) -> HookFuture<'a> {
        let note = |custom_type: &str, data: Value| {
            cx.act(HookAction::AppendEntry {
                custom_type: custom_type.into(),
                data: Some(data),
            })
        };
        let result = match payload {
            HookPayload::TurnEnd { tool_results, .. }
                if !tool_results.is_empty() && !self.done.swap(true, Ordering::SeqCst) =>
            {
                cx.act(HookAction::Compact {
                    custom_instructions: None,
                    callback: Some(3),
                });
                None
            }
            HookPayload::SessionBeforeCompact { preparation, .. } => {
                Some(HandlerResult::SessionBeforeCompact {
                    cancel: false,
                    compaction: Some(SuppliedCompaction {
                        summary: "Supplied by a Rust extension.".into(),
                        first_kept_entry_id: preparation["firstKeptEntryId"]
                            .as_str()
                            .unwrap_or_default()
                            .into(),
                        tokens_before: 7,
                        details: None,
                        usage: None,
                    }),
                })
            }
            HookPayload::SessionCompact {
                from_extension,
                compaction_entry,
                ..
            } => {
                note(
                    "compacted",
                    json!({"fromExtension": from_extension, "fromHook": compaction_entry["fromHook"]}),
                );
                None
            }
            HookPayload::CompactEnd {
                callback, result, ..
            } => {
                note(
                    "called back",
                    json!({"callback": callback, "summary": result.as_ref().map(|r| r.summary.clone())}),
                );
                None
            }
            _ => None,
        };
        Box::pin(async move { Ok(result) })
    }
}

#[tokio::test]
async fn a_rust_extension_supplies_the_compaction_hears_it_and_its_end_and_the_recording_replays() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("a.txt"), "alpha\n").unwrap();
    let cassette = workspace.path().join("supplier.cassette.jsonl");
    let mock = MockLlm::start(&json!([
        {"text": "First answer about alpha."},
        {"tool_calls": [{"name": "read", "arguments": "{\"path\":\"a.txt\"}"}]},
        {"text": "Never reached."},
    ]));
    let (kinds, recorded) = run(builder(&mock, workspace.path())
        .extension(Supplier {
            done: AtomicBool::new(false),
        })
        .record(&cassette))
    .await;
    assert_eq!(
        kinds,
        [
            "agent_settled",
            "agent_settled",
            "compaction_start",
            "compaction_end"
        ]
    );
    assert_eq!(mock.requests().len(), 2, "no summary request");
    let notes: Vec<&Value> = recorded
        .iter()
        .filter(|e| e["type"] == "entry_appended")
        .map(|e| &e["entry"]["data"])
        .collect();
    assert_eq!(
        notes,
        [
            &json!({"fromExtension": true, "fromHook": true}),
            &json!({"callback": 3, "summary": "Supplied by a Rust extension."}),
        ]
    );
    let order: Vec<&str> = recorded
        .iter()
        .filter_map(|e| e["type"].as_str())
        .filter(|k| *k == "entry_appended" || k.starts_with("compaction"))
        .collect();
    assert_eq!(
        order,
        [
            "compaction_start",
            "entry_appended",
            "compaction_end",
            "entry_appended"
        ]
    );
    drop(mock);

    let (_, replayed) = run(SessionBuilder::new(workspace.path()).replay(&cassette)).await;
    assert_eq!(replayed, recorded);
}
