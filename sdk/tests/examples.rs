//! Each program in `examples/` run against the kit's mock LLM over real HTTP on 127.0.0.1, with
//! real tools in a temp workspace: the code a user copies is the code tested.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

#[allow(dead_code)]
#[path = "../examples/audit.rs"]
mod audit;
#[allow(dead_code)]
#[path = "../examples/notifier.rs"]
mod notifier;
#[allow(dead_code)]
#[path = "../examples/sandboxed.rs"]
mod sandboxed;
#[allow(dead_code)]
#[path = "../examples/steering.rs"]
mod steering;

use std::sync::Arc;

use pi_sdk::{Event, SessionBuilder, SessionEvent};
use pi_testkit::MockLlm;
use serde_json::{json, Value};

/// The shared session builder, seeded: the examples' runs are the same each time.
fn builder(mock: &MockLlm, workspace: &std::path::Path) -> SessionBuilder {
    common::builder(mock, workspace).seed(7)
}

fn tool_names(request: &Value) -> Vec<String> {
    request["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| {
                    t["function"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned()
                })
                .collect()
        })
        .unwrap_or_default()
}

fn lines(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The sandboxed agent offers the model only the read-only tools, and a call to `bash` the
/// model makes anyway runs nothing: the workspace is unchanged.
#[tokio::test]
async fn the_sandboxed_agent_reads_its_workspace_and_cannot_run_commands() {
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"id": "call_1", "name": "ls", "arguments": {}}]},
        {"tool_calls": [{"id": "call_2", "name": "bash", "arguments": {"command": "touch pwned"}}]},
        {"text": ["One file: ", "notes.txt."]}
    ]));
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("notes.txt"), "hello\n").unwrap();
    let logs = tempfile::tempdir().unwrap();
    let session = builder(&mock, workspace.path())
        .read_only_tools()
        .confine_to_cwd()
        .build()
        .unwrap();

    let log = sandboxed::run(&session, logs.path()).await.unwrap();

    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(tool_names(&requests[0]), ["read", "grep", "find", "ls"]);
    assert!(!workspace.path().join("pwned").exists());
    let events = lines(&log);
    let ends: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_execution_end")
        .collect();
    assert_eq!(ends.len(), 2);
    assert_eq!(ends[0]["isError"], false);
    assert!(ends[0]["result"].to_string().contains("notes.txt"));
    assert_eq!(ends[1]["toolName"], "bash");
    assert_eq!(ends[1]["isError"], true);
    assert_eq!(events.first().unwrap()["type"], "agent_start");
    assert_eq!(events.last().unwrap()["type"], "agent_end");
    assert!(log.ends_with(format!("{}.jsonl", session.session_id())));
}

/// The audit log holds one line per tool call with its arguments and outcome, and the write it
/// audits really happened in the workspace.
#[tokio::test]
async fn the_audit_log_records_every_tool_call_with_its_arguments() {
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"id": "call_1", "name": "write", "arguments": {"path": "out.txt", "content": "done\n"}}]},
        {"tool_calls": [{"id": "call_2", "name": "read", "arguments": {"path": "missing.txt"}}]},
        {"text": "Written."}
    ]));
    let workspace = tempfile::tempdir().unwrap();
    let audit_file = workspace.path().join("audit.jsonl");
    let session = builder(&mock, workspace.path()).build().unwrap();

    audit::run(&session, &audit_file, "Write done to out.txt")
        .await
        .unwrap();

    assert_eq!(
        std::fs::read_to_string(workspace.path().join("out.txt")).unwrap(),
        "done\n"
    );
    assert_eq!(
        lines(&audit_file),
        [
            json!({"tool": "write", "args": {"path": "out.txt", "content": "done\n"}, "isError": false}),
            json!({"tool": "read", "args": {"path": "missing.txt"}, "isError": true}),
        ]
    );
}

/// A failed tool call is notified once, by name; a successful one is not.
#[tokio::test]
async fn the_notifier_reports_each_failed_tool_and_only_those() {
    let mock = MockLlm::start(&json!([
        {"tool_calls": [
            {"id": "call_1", "name": "read", "arguments": {"path": "there.txt"}},
            {"id": "call_2", "name": "read", "arguments": {"path": "missing.txt"}}
        ]},
        {"text": "One of them is missing."}
    ]));
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("there.txt"), "here\n").unwrap();
    let session = builder(&mock, workspace.path()).build().unwrap();
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let notified = Arc::clone(&seen);

    let sent = notifier::run(&session, "Read both files", move |text| {
        notified.lock().unwrap().push(text.to_owned());
    })
    .await
    .unwrap();

    assert_eq!(sent, ["Tool read failed."]);
    assert_eq!(*seen.lock().unwrap(), sent);
}

/// The correction sent while the model streams reaches the model's next call, and the follow-up
/// the call after: the mock holds its first reply open until both are queued.
#[tokio::test]
async fn steering_mid_run_reaches_the_next_call_and_the_follow_up_the_one_after() {
    let mock = Arc::new(MockLlm::start(&json!([
        {"text": ["Looking at the UI"], "hang_until_file": "queued"},
        {"text": "Auth it is."},
        {"text": "Tests written."}
    ])));
    let workspace = tempfile::tempdir().unwrap();
    let session = builder(&mock, workspace.path()).build().unwrap();
    let mut events = session.subscribe();
    let releaser = {
        let mock = Arc::clone(&mock);
        tokio::spawn(async move {
            while let Ok(event) = events.recv().await {
                if let Event::Session(SessionEvent::QueueUpdate {
                    steering,
                    follow_up,
                }) = event
                {
                    if !steering.is_empty() && !follow_up.is_empty() {
                        mock.release("queued");
                        return true;
                    }
                }
            }
            false
        })
    };

    steering::run(&session).await.unwrap();

    assert!(releaser.await.unwrap(), "both messages were queued");
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    let last_user = |request: &Value| {
        request["messages"]
            .as_array()
            .unwrap()
            .iter()
            .rev()
            .find(|m| m["role"] == "user")
            .unwrap()["content"]
            .to_string()
    };
    assert!(last_user(&requests[0]).contains(steering::TASK));
    assert!(last_user(&requests[1]).contains(steering::CORRECTION));
    assert!(last_user(&requests[2]).contains(steering::FOLLOW_UP));
}

#[allow(dead_code)]
#[path = "../examples/custom_tool.rs"]
mod custom_tool;

/// The program's own tool is offered to the model with its schema, runs on a real file, and its
/// result reaches the next call; recorded, the run replays with the tool not registered and the
/// file gone, from the cassette alone.
#[tokio::test]
async fn a_custom_tool_runs_for_real_and_replays_from_the_cassette() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("three.txt"), "a\nb\nc\n").unwrap();
    let cassette = workspace.path().join("tool.cassette.jsonl");
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"id": "call_1", "name": "count_lines", "arguments": {"filePath": "three.txt"}}]},
        {"text": "It has 3 lines."}
    ]));
    let session = builder(&mock, workspace.path())
        .read_only_tools()
        .custom_tool(custom_tool::CountLines::new())
        .record(&cassette)
        .build()
        .unwrap();
    let mut events = session.subscribe();
    let answer = custom_tool::run(&session, "How many lines in three.txt?")
        .await
        .unwrap();
    session.finish().await.unwrap();
    assert_eq!(answer, "It has 3 lines.");
    let requests = mock.requests();
    assert_eq!(
        tool_names(&requests[0]),
        ["read", "grep", "find", "ls", "count_lines"]
    );
    let declared = requests[0]["tools"][4]["function"].clone();
    assert_eq!(declared["parameters"]["required"], json!(["filePath"]));
    assert!(requests[1]["messages"].to_string().contains("3 lines"));
    let mut recorded = Vec::new();
    while let Ok(event) = events.try_recv() {
        recorded.push(serde_json::to_value(&event).unwrap());
    }
    let end = recorded
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(end["result"]["details"], json!({"lineCount": 3}));
    drop(mock);

    std::fs::remove_file(workspace.path().join("three.txt")).unwrap();
    let replay = SessionBuilder::new(workspace.path())
        .replay(&cassette)
        .build()
        .unwrap();
    let mut events = replay.subscribe();
    let answer = custom_tool::run(&replay, "How many lines in three.txt?")
        .await
        .unwrap();
    replay.finish().await.unwrap();
    assert_eq!(answer, "It has 3 lines.");
    let mut replayed = Vec::new();
    while let Ok(event) = events.try_recv() {
        replayed.push(serde_json::to_value(&event).unwrap());
    }
    assert_eq!(replayed, recorded);
}

/// Confined to its workspace, the agent's read of a file beside it (`../`) and through a
/// symlink pointing out of it is refused, and the secret's text reaches neither the events nor
/// the model.
#[tokio::test]
async fn the_confined_agent_cannot_read_outside_its_workspace() {
    let outside = tempfile::tempdir().unwrap();
    let workspace = outside.path().join("workspace");
    std::fs::create_dir(&workspace).unwrap();
    std::fs::write(outside.path().join("secret.txt"), "TOP-SECRET-VALUE\n").unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("secret.txt"),
        workspace.join("link.txt"),
    )
    .unwrap();
    let mock = MockLlm::start(&json!([
        {"tool_calls": [
            {"id": "call_1", "name": "read", "arguments": {"path": "../secret.txt"}},
            {"id": "call_2", "name": "read", "arguments": {"path": "link.txt"}}
        ]},
        {"text": "Refused."}
    ]));
    let session = builder(&mock, &workspace)
        .read_only_tools()
        .confine_to_cwd()
        .build()
        .unwrap();
    let mut events = session.subscribe();
    session.prompt("Read the secret").await.unwrap();
    let mut ends = Vec::new();
    while let Ok(event) = events.try_recv() {
        let event = serde_json::to_value(&event).unwrap();
        if event["type"] == "tool_execution_end" {
            ends.push(event);
        }
    }
    assert_eq!(ends.len(), 2);
    assert!(ends.iter().all(|e| e["isError"] == true), "{ends:?}");
    assert!(!mock.requests()[1].to_string().contains("TOP-SECRET-VALUE"));
}
