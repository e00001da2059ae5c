//! Rust extensions through the SDK, against the kit's mock LLM over real HTTP: a `tool_call`
//! gate blocks a command before it runs, a `tool_result` transform replaces an output, their
//! decisions are recorded, and the recording replays with the extensions absent; a hook line
//! tampered with is a divergence; a handler that panics is reported as one that threw; the
//! loop's and the session's events reach an extension that handles them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::{builder, prompt_once};
use pi_sdk::{
    ContentBlock, HandledHooks, HandlerResult, HookAction, HookContext, HookEvent, HookFuture,
    HookPayload, RustExtension, SessionBuilder, UserContent,
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
    // Chaos answers the hook points from the recording too, the extensions absent.
    common::assert_chaos(&cassette);
    assert!(kept.exists(), "no chaos run ran the blocked command");
}

/// The attack on a recording's hook lines: the gate's run recorded, then its cassette altered
/// one place at a time (the hook point's payload, the decision turned from block to run, the
/// decision removed, the header's hook points removed). Each replay must report a divergence,
/// never reproduce; and none runs the command.
#[tokio::test]
async fn a_tampered_hook_line_is_a_divergence() {
    let workspace = tempfile::tempdir().unwrap();
    let kept = workspace.path().join("important.txt");
    std::fs::write(&kept, "keep me\n").unwrap();
    let cassette = workspace.path().join("gate.cassette.jsonl");
    let mock = MockLlm::start(&json!([
        {"tool_calls": [
            {"id": "call_1", "name": "bash", "arguments": {"command": "rm important.txt"}}
        ]},
        {"text": ["Blocked."]}
    ]));
    let session = builder(&mock, workspace.path())
        .extension(NoRm {
            asked: Arc::new(AtomicUsize::new(0)),
        })
        .record(&cassette)
        .build()
        .unwrap();
    session.prompt("Tidy up.").await.unwrap();
    session.finish().await.unwrap();
    drop(mock);
    let text = std::fs::read_to_string(&cassette).unwrap();
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let find = |kind: &str| {
        lines
            .iter()
            .position(|l| l["effect"]["kind"] == kind || l["input"]["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind} line in {text}"))
    };
    let (hook, decided) = (find("hook"), find("hook_decided"));
    let tampered = workspace.path().join("tampered.jsonl");
    assert!(replays(&tampered, &lines).await, "the recording replays");
    let mut payload = lines.clone();
    payload[hook] = serde_json::from_str(
        &payload[hook]
            .to_string()
            .replace("rm important.txt", "rm other.txt"),
    )
    .unwrap();
    let mut run = lines.clone();
    run[decided]["input"]["outcome"]["decision"] =
        json!({"type": "tool_call", "verdict": "run", "input": {"command": "rm important.txt"}});
    let mut removed = lines.clone();
    removed.remove(decided);
    let mut unhandled = lines.clone();
    unhandled[0]["config"]
        .as_object_mut()
        .unwrap()
        .remove("handledHooks");
    for (what, altered) in [
        ("payload", payload),
        ("run", run),
        ("removed", removed),
        ("unhandled", unhandled),
    ] {
        assert!(!replays(&tampered, &altered).await, "{what}: reproduced");
        assert!(kept.exists(), "{what}: the command ran");
    }
}

/// A `tool_call` gate whose handler panics.
struct Panicking;

impl RustExtension for Panicking {
    fn name(&self) -> &str {
        "panicking"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::ToolCall])
    }

    fn handle<'a>(&'a self, _payload: &'a HookPayload, _cx: &'a HookContext) -> HookFuture<'a> {
        Box::pin(async { panic!("the gate fell over") })
    }
}

/// A panicking gate fails its call as a throwing one does in Pi (the call is not run, its result
/// is the error), is reported as `extension_error` under its extension, and the session goes on
/// to the model's next answer; the recording replays with the extension absent.
#[tokio::test]
async fn a_panicking_handler_is_reported_and_the_session_goes_on() {
    let workspace = tempfile::tempdir().unwrap();
    let cassette = workspace.path().join("panic.cassette.jsonl");
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"id": "call_1", "name": "bash",
            "arguments": {"command": "touch ran"}}]},
        {"text": ["Done."]},
    ]));
    let recorded = prompt_once(
        builder(&mock, workspace.path())
            .extension(Panicking)
            .record(&cassette),
        "Touch it.",
    )
    .await;
    assert!(!workspace.path().join("ran").exists(), "the call never ran");
    let errors: Vec<&Value> = recorded
        .iter()
        .filter(|e| e["type"] == "extension_error")
        .collect();
    assert_eq!(
        errors,
        [
            &json!({"type": "extension_error", "extensionPath": "panicking",
            "event": "tool_call", "error": "the gate fell over"})
        ]
    );
    let result = recorded
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(result["isError"], true);
    assert_eq!(mock.requests().len(), 2, "the session went on");
    drop(mock);
    // The handler's error is not a line of output (print mode says it on stderr).
    common::assert_checks(&cassette);

    let replayed = prompt_once(
        SessionBuilder::new(workspace.path()).replay(&cassette),
        "Touch it.",
    )
    .await;
    assert_eq!(replayed, recorded);
}

/// Whether `lines`, written to `path`, replay to the end without a divergence.
async fn replays(path: &std::path::Path, lines: &[Value]) -> bool {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(path, text).unwrap();
    let Ok(session) = SessionBuilder::new(path.parent().unwrap())
        .replay(path)
        .build()
    else {
        return false;
    };
    let prompted = session.prompt("Tidy up.").await;
    prompted.and(session.finish().await).is_ok()
}

/// Hears the session's start and end and the loop's events, writing down each it heard; the
/// first `agent_end` queues a follow-up, the start writes an entry.
struct Observer {
    heard: Arc<Mutex<Vec<String>>>,
}

impl RustExtension for Observer {
    fn name(&self) -> &str {
        "observer"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([
            HookEvent::SessionStart,
            HookEvent::AgentStart,
            HookEvent::MessageUpdate,
            HookEvent::AgentEnd,
            HookEvent::SessionShutdown,
        ])
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, cx: &'a HookContext) -> HookFuture<'a> {
        let mut heard = self.heard.lock().unwrap();
        let name = payload.event().name();
        if heard.last().map(String::as_str) != Some(name) {
            heard.push(name.to_owned());
        }
        match payload {
            HookPayload::SessionStart { reason, .. } => cx.act(HookAction::AppendEntry {
                custom_type: "started".into(),
                data: Some(json!({ "reason": reason })),
            }),
            HookPayload::AgentEnd { .. }
                if heard.iter().filter(|h| *h == "agent_end").count() == 1 =>
            {
                cx.act(HookAction::SendUserMessage {
                    content: UserContent::Text("And then?".into()),
                    deliver_as: Some("followUp".into()),
                    expand_prompt_templates: None,
                })
            }
            _ => {}
        }
        Box::pin(async { Ok(None) })
    }
}

/// A Rust extension hears the session's start (`bind_extensions`) and end (`shutdown`) and the
/// loop's events it handles, in order (a response's updates among them); a follow-up its
/// `agent_end` queues continues the run. The recording replays, the extension absent, to the
/// same events.
#[tokio::test]
async fn an_extension_hears_the_session_and_the_loop_and_the_recording_replays_without_it() {
    let workspace = tempfile::tempdir().unwrap();
    let cassette = workspace.path().join("observe.cassette.jsonl");
    let mock = MockLlm::start(&json!([{"text": ["One", " two."]}, {"text": ["Three."]}]));
    let heard = Arc::new(Mutex::new(Vec::new()));
    let run = |builder: SessionBuilder| async move {
        let session = builder.build().unwrap();
        let mut events = session.subscribe();
        session.bind_extensions().await.unwrap();
        session.prompt("Count.").await.unwrap();
        session.shutdown().await.unwrap();
        session.finish().await.unwrap();
        common::drain(&mut events)
    };
    let recorded = run(builder(&mock, workspace.path())
        .extension(Observer {
            heard: Arc::clone(&heard),
        })
        .record(&cassette))
    .await;
    assert_eq!(
        *heard.lock().unwrap(),
        [
            "session_start",
            "agent_start",
            "message_update",
            "agent_end",
            "agent_start",
            "message_update",
            "agent_end",
            "session_shutdown"
        ]
    );
    assert_eq!(mock.requests().len(), 2, "the follow-up continued the run");
    let started = recorded
        .iter()
        .find(|e| e["type"] == "entry_appended")
        .unwrap();
    assert_eq!(started["entry"]["data"], json!({"reason": "startup"}));
    drop(mock);
    // What the start's and the end's handlers caused is not printed, as in print mode.
    common::assert_checks(&cassette);

    let replayed = run(SessionBuilder::new(workspace.path()).replay(&cassette)).await;
    assert_eq!(replayed, recorded);
    common::assert_chaos(&cassette);
}
