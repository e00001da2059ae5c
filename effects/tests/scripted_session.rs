//! Sessions whose model answers come from a scripted transport, with no server at all, and
//! whose times come from a clock the test controls: the seams that let a run be recorded and
//! replayed. Tools still run for real, on a temp directory.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use common::{prompt, types};
use pi_core::agent_session::retry::RetrySettings;
use pi_core::message::{AgentMessage, StopReason};
use pi_core::model::Model;
use pi_core::session::ids::IdGenerator;
use pi_effects::agent_session::{create_agent_session, SessionOptions};
use pi_effects::clock::Clock;
use pi_effects::driver::{FrontEndInput, FrontEndNext, Interpreter, UserBash};
use pi_effects::session::SessionStore;
use pi_providers::retry::{FixedClock, RetryClock};
use pi_providers::transport::scripted::{ScriptedResponse, ScriptedTransport};
use pi_providers::transport::BoxFuture;
use pi_providers::CallOptions;
use serde_json::{json, Value};

/// A model at an address nothing listens on: only the scripted transport can answer.
fn model() -> Model {
    Model {
        id: "scripted-model".into(),
        name: "Scripted Model".into(),
        api: "openai-completions".into(),
        provider: "scripted".into(),
        base_url: "http://127.0.0.1:9/v1".into(),
        input: vec!["text".into()],
        context_window: 128_000,
        max_tokens: 16_384,
        ..Model::default()
    }
}

/// A Chat Completions stream of `deltas`, ending with `finish`.
fn sse(deltas: &[Value], finish: &str) -> ScriptedResponse {
    let chunk = |delta: &Value, finish: Option<&str>| {
        json!({
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "scripted-model",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
    };
    let mut body = String::new();
    for delta in deltas {
        body.push_str(&format!("data: {}\n\n", chunk(delta, None)));
    }
    let mut last = chunk(&json!({}), Some(finish));
    last["usage"] = json!({"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15});
    body.push_str(&format!("data: {last}\n\ndata: [DONE]\n\n"));
    ScriptedResponse::new(200, body).with_header("content-type", "text/event-stream")
}

/// The model asks to read `hello.txt`, then answers with text.
fn read_then_answer() -> ScriptedTransport {
    ScriptedTransport::new([
        Ok(sse(
            &[json!({"role": "assistant", "tool_calls": [{
                "index": 0,
                "id": "call_1",
                "type": "function",
                "function": {"name": "read", "arguments": "{\"path\":\"hello.txt\"}"},
            }]})],
            "tool_calls",
        )),
        Ok(sse(
            &[
                json!({"role": "assistant", "content": "The file "}),
                json!({"content": "says hi there."}),
            ],
            "stop",
        )),
    ])
}

fn options(
    cwd: &std::path::Path,
    transport: Arc<ScriptedTransport>,
    clock: Arc<dyn Clock>,
) -> SessionOptions {
    let mut options = SessionOptions::new(
        cwd,
        model(),
        Arc::new(|_| {
            Ok(CallOptions {
                api_key: "test-key".into(),
                ..CallOptions::default()
            })
        }),
    );
    options.agent_dir = cwd.join(".agent");
    options.seed = Some(42);
    options.transport = Some(transport);
    options.clock = clock;
    options
}

fn timestamp(message: &AgentMessage) -> u64 {
    match message {
        AgentMessage::System(m) => m.timestamp,
        AgentMessage::User(m) => m.timestamp,
        AgentMessage::Assistant(m) => m.timestamp,
        AgentMessage::ToolResult(m) => m.timestamp,
        other => panic!("unexpected message {other:?}"),
    }
}

/// A clock that moves one step at each reading and remembers what it said; it never sleeps.
#[derive(Debug, Default)]
struct SteppingClock {
    next: AtomicU64,
    said: Mutex<Vec<u64>>,
}

impl SteppingClock {
    fn starting_at(ms: u64) -> Self {
        SteppingClock {
            next: AtomicU64::new(ms),
            said: Mutex::new(Vec::new()),
        }
    }

    fn said(&self) -> Vec<u64> {
        self.said.lock().unwrap().clone()
    }
}

impl RetryClock for SteppingClock {
    fn now_ms(&self) -> u64 {
        let now = self.next.fetch_add(7, Ordering::SeqCst);
        self.said.lock().unwrap().push(now);
        now
    }

    fn jitter(&self) -> f64 {
        0.5
    }

    fn sleep(&self, _ms: u64) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
}

#[tokio::test]
async fn a_scripted_model_drives_a_tool_call_and_its_answer_without_a_server() {
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("hello.txt"), "hi there\n").unwrap();
    let transport = Arc::new(read_then_answer());
    let clock: Arc<dyn Clock> = Arc::new(FixedClock::new(1_000, 0.5));
    let mut session =
        create_agent_session(options(cwd.path(), Arc::clone(&transport), clock)).unwrap();
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
    let last = events.iter().rfind(|e| e["type"] == "message_end").unwrap();
    assert_eq!(
        last["message"]["content"],
        json!([{"type": "text", "text": "The file says hi there."}])
    );
    assert_eq!(last["message"]["stopReason"], "stop");
    // Both requests went to the transport; the second carries the tool result.
    let requests = transport.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].url, "http://127.0.0.1:9/v1/chat/completions");
    let body = requests[1].body.to_value();
    let sent = body["messages"].as_array().unwrap();
    assert_eq!(sent.last().unwrap()["role"], "tool");
    assert_eq!(sent.last().unwrap()["content"], "hi there\n");
}

/// What reaches a front end from outside (a stdin line, a user command's result) gets its time
/// from the interpreter's clock, as every input does, not from the front end.
#[tokio::test]
async fn front_end_inputs_are_stamped_by_the_interpreters_clock() {
    let cwd = tempfile::tempdir().unwrap();
    let stepping = Arc::new(SteppingClock::starting_at(7_000_000));
    let clock: Arc<dyn Clock> = Arc::clone(&stepping) as _;
    let mut session =
        create_agent_session(options(cwd.path(), Arc::new(read_then_answer()), clock)).unwrap();
    let line = FrontEndInput::Stdin {
        line: "{\"type\":\"get_state\"}".into(),
        with_next: false,
    };
    let (t, stamped) = session
        .interpreter_mut()
        .arrived(line.clone())
        .unwrap()
        .unwrap();
    assert_eq!(stamped, line);
    let bash = FrontEndInput::UserBash(UserBash {
        id: Some(json!("b")),
        command: "true".into(),
        result: Err("not run".into()),
    });
    let (later, _) = session.interpreter_mut().arrived(bash).unwrap().unwrap();
    let said = stepping.said();
    assert!(
        said.contains(&t) && said.contains(&later) && later > t,
        "{t}, {later}: {said:?}"
    );
    // Live holds nothing for the front end: its inputs are the front end's own.
    assert_eq!(
        session.interpreter_mut().front_end(false),
        FrontEndNext::Nothing
    );
}

#[tokio::test]
async fn every_time_the_interpreter_gives_the_machine_comes_from_its_clock() {
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("hello.txt"), "hi there\n").unwrap();
    let fixed: Arc<dyn Clock> = Arc::new(FixedClock::new(1_234_000, 0.5));
    let mut session =
        create_agent_session(options(cwd.path(), Arc::new(read_then_answer()), fixed)).unwrap();
    prompt(&mut session, "Read hello.txt").await;
    let messages = session.machine().agent().messages();
    assert_eq!(
        messages.len(),
        5,
        "system, user, assistant, tool result, assistant"
    );
    for message in messages {
        assert_eq!(timestamp(message), 1_234_000, "{message:?}");
    }

    // A clock that moves: each message's time is one the clock gave, and the assistant
    // messages (stamped inside the model-call tasks) come after the prompt.
    let stepping = Arc::new(SteppingClock::starting_at(5_000_000));
    let clock: Arc<dyn Clock> = Arc::clone(&stepping) as _;
    let mut session =
        create_agent_session(options(cwd.path(), Arc::new(read_then_answer()), clock)).unwrap();
    prompt(&mut session, "Read hello.txt").await;
    let said = stepping.said();
    let messages = session.machine().agent().messages();
    assert_eq!(
        messages.len(),
        5,
        "system, user, assistant, tool result, assistant"
    );
    let times: Vec<u64> = messages.iter().map(timestamp).collect();
    for time in &times {
        assert!(said.contains(time), "{time} not from the clock: {said:?}");
    }
    // The system message is recorded in the step that takes the prompt, at its time.
    assert!(
        times[0] == times[1] && times[1] < times[2] && times[2] < times[3] && times[3] < times[4],
        "{times:?}"
    );
}

#[tokio::test]
async fn a_retry_backoff_is_waited_through_the_clock() {
    let cwd = tempfile::tempdir().unwrap();
    let transport = Arc::new(ScriptedTransport::new([
        Ok(ScriptedResponse::new(
            500,
            "{\"error\":{\"message\":\"busy\"}}",
        )),
        Ok(sse(
            &[json!({"role": "assistant", "content": "Recovered."})],
            "stop",
        )),
    ]));
    let clock = Arc::new(FixedClock::new(1_000, 0.5));
    let mut options = options(cwd.path(), Arc::clone(&transport), Arc::clone(&clock) as _);
    options.retry = RetrySettings {
        enabled: true,
        max_retries: 3,
        base_delay_ms: 60_000,
        ..RetrySettings::default()
    };
    let mut session = create_agent_session(options).unwrap();
    let events = prompt(&mut session, "Hello").await;
    assert!(events.iter().any(|e| e["type"] == "auto_retry_start"));
    // A minute of backoff, asked of the clock (which does not really wait).
    assert_eq!(clock.waits(), [60_000]);
    assert_eq!(transport.requests().len(), 2);
    let last = session.machine().agent().messages().last().unwrap().clone();
    let AgentMessage::Assistant(last) = last else {
        panic!("{last:?}")
    };
    assert_eq!(last.stop_reason, StopReason::Stop);
}

/// A client that reads the session file when an event arrives finds there every message whose
/// `message_end` came before that event: Pi 1.5 appends a message's entry right after its
/// `message_end`, before any later event (so after `agent_settled` the file is complete). The
/// file starts at the first user message, with what came before it.
#[tokio::test]
async fn each_message_is_on_disk_before_the_events_after_its_end() {
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("hello.txt"), "hi there\n").unwrap();
    let transport = Arc::new(read_then_answer());
    let clock: Arc<dyn Clock> = Arc::new(FixedClock::new(1_000, 0.5));
    let sessions = tempfile::tempdir().unwrap();
    let mut options = options(cwd.path(), Arc::clone(&transport), clock);
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
    let path = session.file().expect("a session file").to_owned();
    let on_disk = || {
        std::fs::read_to_string(&path).map_or(0, |text| {
            text.lines()
                .filter(|l| l.contains(r#""type":"message""#))
                .count()
        })
    };
    let mut ended = 0;
    let mut user_ended = false;
    let mut late = Vec::new();
    session
        .prompt("Read hello.txt", Vec::new(), |event| {
            let event = serde_json::to_value(event).unwrap();
            let kind = event["type"].as_str().unwrap_or_default().to_owned();
            // Pi writes nothing before the first user message; from it on, everything.
            if user_ended && on_disk() < ended {
                late.push(format!(
                    "{kind}: {} of {ended} ended messages on disk",
                    on_disk()
                ));
            }
            if kind == "message_end" {
                ended += 1;
                user_ended |= event["message"]["role"] == "user";
            }
        })
        .await
        .unwrap();
    assert!(late.is_empty(), "{late:#?}");
    assert_eq!(
        ended, 5,
        "the system message, the prompt, the call, its result and the answer"
    );
}
