//! Rust extensions through the SDK, against the kit's mock LLM over real HTTP: a `tool_call`
//! gate blocks a command before it runs, a `tool_result` transform replaces an output, their
//! decisions are recorded, and the recording replays with the extensions absent.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::{builder, prompt_once};
use pi_sdk::{
    ContentBlock, HandledHooks, HandlerResult, HookContext, HookEvent, HookFuture, HookPayload,
    RustExtension, SessionBuilder,
};
use pi_testkit::MockLlm;
use serde_json::{json, Value};

/// Blocks every bash command that mentions `rm`, giving no reason (Pi's default text), and
/// counts how often it was asked.
struct NoRm {
    asked: Arc<AtomicUsize>,
}

impl RustExtension for NoRm {
    fn name(&self) -> &str {
        "no-rm"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::ToolCall])
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, _cx: &'a HookContext) -> HookFuture<'a> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let block = matches!(payload, HookPayload::ToolCall { tool_name, input, .. }
            if tool_name == "bash" && input["command"].as_str().is_some_and(|c| c.contains("rm")));
        Box::pin(async move {
            Ok(block.then_some(HandlerResult::ToolCall {
                block: true,
                reason: None,
                terminate: None,
                input: None,
            }))
        })
    }
}

/// Replaces the output of a command that printed `kept` (a `tool_result` transform).
struct Redact;

impl RustExtension for Redact {
    fn name(&self) -> &str {
        "redact"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::ToolResult])
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, _cx: &'a HookContext) -> HookFuture<'a> {
        let printed = matches!(payload, HookPayload::ToolResult { content, .. }
            if serde_json::to_string(content).unwrap().contains("kept"));
        Box::pin(async move {
            Ok(printed.then(|| HandlerResult::ToolResult {
                content: Some(vec![ContentBlock::text("[redacted]")]),
                details: None,
                is_error: None,
            }))
        })
    }
}

#[tokio::test]
async fn a_gate_blocks_a_command_a_transform_redacts_an_output_and_the_recording_replays_without_them(
) {
    let workspace = tempfile::tempdir().unwrap();
    let kept = workspace.path().join("important.txt");
    std::fs::write(&kept, "keep me\n").unwrap();
    let cassette = workspace.path().join("gate.cassette.jsonl");
    let mock = MockLlm::start(&json!([
        {"tool_calls": [
            {"id": "call_1", "name": "bash", "arguments": {"command": "rm important.txt"}},
            {"id": "call_2", "name": "bash", "arguments": {"command": "echo kept"}}
        ]},
        {"text": ["Blocked."]}
    ]));
    let asked = Arc::new(AtomicUsize::new(0));
    let recorded = prompt_once(
        builder(&mock, workspace.path())
            .extension(NoRm {
                asked: Arc::clone(&asked),
            })
            .extension(Redact)
            .record(&cassette),
        "Tidy up.",
    )
    .await;
    drop(mock);
    assert_eq!(asked.load(Ordering::SeqCst), 2, "asked once per call");
    assert!(kept.exists(), "the blocked command did not run");
    let ends: Vec<&Value> = recorded
        .iter()
        .filter(|e| e["type"] == "tool_execution_end")
        .collect();
    assert_eq!(ends.len(), 2);
    assert_eq!(ends[0]["toolCallId"], "call_1");
    assert_eq!(ends[0]["isError"], true);
    assert_eq!(
        ends[0]["result"]["content"][0]["text"],
        "Tool execution was blocked"
    );
    assert_eq!(ends[1]["isError"], false);
    assert_eq!(ends[1]["result"]["content"][0]["text"], "[redacted]");
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(
        text.contains("\"hook_decided\""),
        "the decision is recorded"
    );
    assert!(text.contains("\"handledHooks\":[\"tool_call\",\"tool_result\"]"));

    // The replay loads no extension: the recorded decisions answer the hook points.
    let replayed = prompt_once(
        SessionBuilder::new(workspace.path()).replay(&cassette),
        "Tidy up.",
    )
    .await;
    assert_eq!(replayed, recorded);
    assert_eq!(asked.load(Ordering::SeqCst), 2);
}
