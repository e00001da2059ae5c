//! Sessions end to end through the Live interpreter: real HTTP to the kit's scripted mock LLM on
//! 127.0.0.1, real tools on a temp directory, the session file on disk; then the reliability
//! cases (garbage, a hanging server, a cut stream, 5xx forever) ending as documented within
//! their timeouts.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{prompt, types, MockLlm};
use pi_core::agent_session::retry::RetrySettings;
use pi_core::event::{AgentEvent, Event};
use pi_core::message::{AgentMessage, AssistantMessage, StopReason};
use pi_core::session::ids::IdGenerator;
use pi_effects::agent_session::{create_agent_session, AgentSession, SessionOptions};
use pi_effects::network::Timeouts;
use pi_effects::session::SessionStore;
use pi_providers::CallOptions;
use serde_json::{json, Value};

fn options(mock: &MockLlm, cwd: &std::path::Path) -> SessionOptions {
    let mut options = SessionOptions::new(
        cwd,
        common::mock_model(mock),
        Arc::new(|_| {
            Ok(CallOptions {
                api_key: "test-key".into(),
                ..CallOptions::default()
            })
        }),
    );
    options.agent_dir = cwd.join(".agent");
    options.seed = Some(42);
    options
}

fn last_assistant(session: &AgentSession) -> AssistantMessage {
    session
        .machine()
        .agent()
        .messages()
        .iter()
        .rev()
        .find_map(|m| match m {
            AgentMessage::Assistant(a) => Some(a.clone()),
            _ => None,
        })
        .unwrap()
}

#[tokio::test]
async fn a_tool_call_and_its_answer_over_real_http_with_the_session_on_disk() {
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"id": "call_1", "name": "read", "arguments": {"path": "hello.txt"}}]},
        {"text": ["The file ", "says hi there."]}
    ]));
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("hello.txt"), "hi there\n").unwrap();
    let sessions = tempfile::tempdir().unwrap();
    let mut options = options(&mock, cwd.path());
    options.store = Some(
        SessionStore::create(
            &cwd.path().to_string_lossy(),
            sessions.path(),
            1_000,
            IdGenerator::new(42),
        )
        .unwrap(),
    );
    let mut session = create_agent_session(options).unwrap();
    let events = prompt(&mut session, "Read hello.txt").await;
    assert_eq!(types(&events), common::READ_THEN_ANSWER);
    let end = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(
        end["result"]["content"],
        json!([{"type": "text", "text": "hi there\n"}])
    );
    assert_eq!(end["isError"], json!(false));
    // The model saw the tool result; the system prompt lists the default tools.
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let messages = requests[1]["messages"].as_array().unwrap();
    assert_eq!(messages.last().unwrap()["role"], "tool");
    assert_eq!(messages.last().unwrap()["content"], "hi there\n");
    let system = messages[0]["content"].as_str().unwrap();
    assert!(system.contains("- read: Read file contents"), "{system}");
    // The file holds the header, the model and thinking entries, and the four messages.
    let file = std::fs::read_to_string(session.file().unwrap()).unwrap();
    let kinds: Vec<String> = file
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            match v["message"]["role"].as_str() {
                Some(role) => role.to_owned(),
                None => v["type"].as_str().unwrap().to_owned(),
            }
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "session",
            "model_change",
            "thinking_level_change",
            "system",
            "user",
            "assistant",
            "toolResult",
            "assistant"
        ]
    );
}

#[tokio::test]
async fn a_transient_failure_is_retried_after_the_backoff() {
    let mock = MockLlm::start(&json!([
        {"status": 500},
        {"status": 429, "error_body": {"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}},
        {"text": "Recovered."}
    ]));
    let cwd = tempfile::tempdir().unwrap();
    let mut options = options(&mock, cwd.path());
    options.retry = RetrySettings {
        enabled: true,
        max_retries: 3,
        base_delay_ms: 50,
        ..RetrySettings::default()
    };
    let mut session = create_agent_session(options).unwrap();
    let events = prompt(&mut session, "Hello").await;
    let retries: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"].as_str().unwrap().starts_with("auto_retry"))
        .collect();
    assert_eq!(
        retries,
        [
            &json!({"type": "auto_retry_start", "attempt": 1, "maxAttempts": 3, "delayMs": 50, "errorMessage": r#"500: {"message":"mock error 500","type":"server_error","code":null}"#}),
            &json!({"type": "auto_retry_start", "attempt": 2, "maxAttempts": 3, "delayMs": 100, "errorMessage": r#"429: {"message":"Rate limit reached","type":"rate_limit_error"}"#}),
            &json!({"type": "auto_retry_end", "success": true, "attempt": 2}),
        ]
    );
    assert_eq!(last_assistant(&session).stop_reason, StopReason::Stop);
    // Failed attempts never reach the model again.
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[2]["messages"].as_array().unwrap().len(), 2);
}

/// Runs a one-shot prompt against `script` with these retry settings and idle timeout; returns
/// the final assistant message, the number of requests and the events.
async fn one_shot(
    script: Value,
    idle: Duration,
    retry: RetrySettings,
) -> (AssistantMessage, usize, Vec<Value>) {
    let mock = MockLlm::start(&script);
    let cwd = tempfile::tempdir().unwrap();
    let mut options = options(&mock, cwd.path());
    options.retry = retry;
    options.timeouts = Timeouts {
        connect: Duration::from_secs(5),
        idle,
    };
    let mut session = create_agent_session(options).unwrap();
    let events = tokio::time::timeout(Duration::from_secs(30), prompt(&mut session, "Hello"))
        .await
        .expect("the run ends on its own");
    (last_assistant(&session), mock.requests().len(), events)
}

fn no_retry() -> RetrySettings {
    RetrySettings {
        enabled: false,
        ..RetrySettings::default()
    }
}

#[tokio::test]
async fn garbage_instead_of_sse_ends_the_run_with_an_empty_failed_answer() {
    // Lines that are not SSE fields carry no events, as for the OpenAI SDK; the stream then
    // ends without a finish reason, which Pi 1.5.2 fails: an empty, errored answer.
    let (message, _, events) = one_shot(
        json!([{"raw_sse": ["this is not an event stream\n\n", "{\"neither\": \"is this\"}\n\n"]}]),
        Duration::from_secs(10),
        no_retry(),
    )
    .await;
    assert_eq!(message.stop_reason, StopReason::Error, "{message:?}");
    assert_eq!(
        message.error_message.as_deref(),
        Some("Stream ended without finish_reason")
    );
    assert!(message.content.is_empty());
    assert_eq!(types(&events).last(), Some(&"agent_settled"));
}

#[tokio::test]
async fn a_server_that_never_answers_times_out() {
    let (message, _, _) = one_shot(
        json!([{"delay_ms": 20000, "text": "too late"}]),
        Duration::from_millis(300),
        no_retry(),
    )
    .await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some(pi_providers::transport::TIMEOUT_TEXT)
    );
}

#[tokio::test]
async fn a_stream_that_stalls_midway_times_out() {
    let (message, _, _) = one_shot(
        json!([{"text": ["Hel", "lo"], "hang_ms": 20000}]),
        Duration::from_millis(300),
        no_retry(),
    )
    .await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(
        message.error_message.as_deref(),
        Some(pi_providers::transport::TIMEOUT_TEXT)
    );
}

#[tokio::test]
async fn a_cut_stream_keeps_what_arrived_and_fails_as_the_original_does() {
    // A connection closed before the finish reason fails the answer under Pi 1.5.2, which keeps
    // what had arrived.
    let (message, _, _) = one_shot(
        json!([{"text": ["one ", "two ", "three"], "drop_after": 2}]),
        Duration::from_secs(10),
        no_retry(),
    )
    .await;
    assert_eq!(message.stop_reason, StopReason::Error, "{message:?}");
    let text: Vec<&str> = pi_core::message::text_parts(&message.content).collect();
    assert_eq!(text, ["one "]);
}

#[tokio::test]
async fn five_hundreds_forever_exhaust_the_retries() {
    let (message, requests, events) = one_shot(
        json!([{"status": 503}, {"status": 503}, {"status": 503}, {"status": 503}, {"text": "unreached"}]),
        Duration::from_secs(10),
        RetrySettings {
            enabled: true,
            max_retries: 3,
            base_delay_ms: 10,
            ..RetrySettings::default()
        },
    )
    .await;
    assert_eq!(message.stop_reason, StopReason::Error);
    assert_eq!(requests, 4);
    let end = events
        .iter()
        .find(|e| e["type"] == "auto_retry_end")
        .unwrap();
    assert_eq!(end["success"], json!(false));
    assert_eq!(end["attempt"], json!(3));
}

#[tokio::test]
async fn abort_from_another_task_ends_a_streaming_response() {
    let mock = MockLlm::start(&json!([{"text": ["Hel", "lo"], "hang_ms": 20000}]));
    let cwd = tempfile::tempdir().unwrap();
    let mut session = create_agent_session(options(&mock, cwd.path())).unwrap();
    let commands = session.commands().unwrap();
    let mut events = Vec::new();
    session
        .prompt("Hello", Vec::new(), |e| {
            if matches!(e, Event::Agent(AgentEvent::MessageUpdate { .. })) {
                let _ = commands.send(pi_core::agent_session::SessionInput::Abort);
            }
            events.push(serde_json::to_value(e).unwrap());
        })
        .await
        .unwrap();
    let message = last_assistant(&session);
    assert_eq!(message.stop_reason, StopReason::Aborted);
    assert_eq!(types(&events).last(), Some(&"agent_settled"));
}

/// The abort comes once the command's child and grandchild run, so the kill has something to
/// kill. Were they not killed, the command would end after 30 s by itself and say so.
#[tokio::test]
async fn abort_during_bash_kills_the_command_and_its_children() {
    let marker = common::unique_marker("session");
    let command = format!(
        "(exec -a {marker}-child sleep 30) & bash -c '(exec -a {marker}-grandchild sleep 30) & wait'; echo ended"
    );
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"id": "call_1", "name": "bash", "arguments": {"command": command}}]},
        {"text": "unreached"}
    ]));
    let cwd = tempfile::tempdir().unwrap();
    let mut session = create_agent_session(options(&mock, cwd.path())).unwrap();
    let commands = session.commands().unwrap();
    let mut events = Vec::new();
    let run = session.prompt("Run it", Vec::new(), |e| {
        events.push(serde_json::to_value(e).unwrap())
    });
    let abort = async {
        common::wait_for_processes(&marker, 2).await;
        commands
            .send(pi_core::agent_session::SessionInput::Abort)
            .unwrap();
    };
    let (ran, ()) = tokio::join!(run, abort);
    ran.unwrap();
    common::assert_all_gone(&marker).await;
    let end = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(end["isError"], json!(true));
    assert_eq!(end["result"]["content"][0]["text"], "Command aborted");
    assert_eq!(last_assistant(&session).stop_reason, StopReason::Aborted);
    assert_eq!(mock.requests().len(), 1, "no model call after the abort");
}

#[tokio::test]
async fn the_edit_tool_takes_legacy_arguments_as_pi_does() {
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"id": "call_1", "name": "edit", "arguments": {"path": "a.txt", "oldText": "world", "newText": "there"}}]},
        {"text": "Done."}
    ]));
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("a.txt"), "hello world\r\n").unwrap();
    let mut session = create_agent_session(options(&mock, cwd.path())).unwrap();
    let events = prompt(&mut session, "Edit it").await;
    let end = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(end["isError"], json!(false), "{end}");
    assert_eq!(
        end["result"]["content"][0]["text"],
        "Successfully replaced 1 block(s) in a.txt."
    );
    assert_eq!(
        std::fs::read_to_string(cwd.path().join("a.txt")).unwrap(),
        "hello there\r\n"
    );
}

#[tokio::test]
async fn dropping_a_session_stops_its_commands() {
    let marker = common::unique_marker("dropped");
    let command = format!("(exec -a {marker}-child sleep 30) & wait");
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"id": "call_1", "name": "bash", "arguments": {"command": command}}]},
        {"text": "unreached"}
    ]));
    let cwd = tempfile::tempdir().unwrap();
    let mut session = create_agent_session(options(&mock, cwd.path())).unwrap();
    session
        .submit(
            pi_core::agent_session::SessionInput::Prompt {
                text: "Run it".into(),
                images: Vec::new(),
                streaming_behavior: None,
            },
            |_| {},
        )
        .unwrap();
    // Advance until the command runs, then drop the session mid-run.
    let started = common::wait_for_processes(&marker, 1);
    tokio::pin!(started);
    loop {
        tokio::select! {
            () = &mut started => break,
            advanced = session.advance(|_| {}) => {
                advanced.unwrap().unwrap();
            }
        }
    }
    drop(session);
    common::assert_all_gone(&marker).await;
}

#[tokio::test]
async fn a_session_file_that_cannot_be_written_does_not_stall_the_run() {
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"id": "call_1", "name": "ls", "arguments": {}}]},
        {"text": "Listed."}
    ]));
    let cwd = tempfile::tempdir().unwrap();
    let mut options = options(&mock, cwd.path());
    options.tools = vec!["ls".into()];
    let folder = cwd.path().join("sessions");
    options.store = Some(
        SessionStore::create(
            &cwd.path().to_string_lossy(),
            &folder,
            1_000,
            IdGenerator::new(5),
        )
        .unwrap(),
    );
    // The session file's folder becomes a regular file: every write fails, even for root.
    std::fs::remove_dir(&folder).unwrap();
    std::fs::write(&folder, "x").unwrap();
    let mut session = create_agent_session(options).unwrap();
    let error = session
        .prompt("List", Vec::new(), |_| {})
        .await
        .unwrap_err();
    assert!(error.to_string().contains("sessions"), "{error}");
    // The step that failed to persist still started its tool: the run can be carried on.
    let deadline = Instant::now() + Duration::from_secs(10);
    while session.machine().is_busy() {
        assert!(Instant::now() < deadline, "the run stalled");
        let _ = tokio::time::timeout(Duration::from_secs(5), session.advance(|_| {})).await;
    }
    assert_eq!(last_assistant(&session).stop_reason, StopReason::Stop);
}
