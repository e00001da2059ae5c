//! Replacing the session (Pi 1.5.2's `AgentSessionRuntime`: `newSession`, `switchSession`,
//! `fork`) and clearing the queues, against the kit's mock LLM over real HTTP, sessions written
//! to real files.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::builder;
use pi_sdk::{
    AgentMessage, Error, HandledHooks, HookContext, HookEvent, HookFuture, HookPayload,
    RustExtension, SessionBuilder,
};
use pi_testkit::MockLlm;
use serde_json::{json, Value};

/// The session file's lines.
fn lines(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The texts of the user messages of a transcript, in order.
fn user_texts(messages: &[AgentMessage]) -> Vec<String> {
    messages
        .iter()
        .filter_map(|m| match m {
            AgentMessage::User(user) => Some(user.content.text()),
            _ => None,
        })
        .collect()
}

/// The user texts a request body sent (Chat Completions).
fn sent_user_texts(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(text) => text.clone(),
            parts => parts[0]["text"].as_str().unwrap().to_owned(),
        })
        .collect()
}

/// `new_session` leaves the conversation for an empty one in a new file of the session dir,
/// with a new id; the old file keeps what it held; the next prompt is sent without the old
/// conversation. `new_session(Some(parent))` names the parent in the new header.
#[tokio::test]
async fn new_session_starts_empty_in_a_new_file_and_the_old_file_stays() {
    let mock = MockLlm::start(&json!([{"text": "First."}, {"text": "Second."}]));
    let workspace = tempfile::tempdir().unwrap();
    let sessions = workspace.path().join("sessions");
    let session = builder(&mock, workspace.path())
        .session_dir(&sessions)
        .seed(7)
        .build()
        .unwrap();
    session.prompt("Hello").await.unwrap();
    let first_id = session.session_id();
    let first_file = session.session_file().await.unwrap();
    let first_lines = lines(&first_file);

    session
        .new_session(Some(first_file.to_str().unwrap()))
        .await
        .unwrap();
    assert_ne!(session.session_id(), first_id);
    let second_file = session.session_file().await.unwrap();
    assert_ne!(second_file, first_file);
    assert_eq!(second_file.parent(), Some(sessions.as_path()));
    assert!(session.messages().await.is_empty());
    session.prompt("Again").await.unwrap();

    assert_eq!(lines(&first_file), first_lines);
    let header = &lines(&second_file)[0];
    assert_eq!(header["id"], json!(session.session_id()));
    assert_eq!(header["parentSession"], json!(first_file.to_str().unwrap()));
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(sent_user_texts(&requests[1]), ["Again"]);
    assert_eq!(user_texts(&session.messages().await), ["Again"]);
}

/// `switch_session` opens another session file: its transcript is the session's, and the next
/// prompt continues that conversation (and only it).
#[tokio::test]
async fn switch_session_restores_the_file_and_continues_it() {
    let mock = MockLlm::start(&json!([{"text": "A1."}, {"text": "B1."}, {"text": "A2."}]));
    let workspace = tempfile::tempdir().unwrap();
    let session = builder(&mock, workspace.path())
        .session_dir(workspace.path().join("sessions"))
        .build()
        .unwrap();
    session.prompt("In A").await.unwrap();
    let a = session.session_file().await.unwrap();
    let a_id = session.session_id();
    session.new_session(None).await.unwrap();
    session.prompt("In B").await.unwrap();

    session.switch_session(&a).await.unwrap();
    assert_eq!(session.session_id(), a_id);
    assert_eq!(session.session_file().await.unwrap(), a);
    assert_eq!(user_texts(&session.messages().await), ["In A"]);
    session.prompt("Back in A").await.unwrap();
    let requests = mock.requests();
    assert_eq!(sent_user_texts(&requests[2]), ["In A", "Back in A"]);
    let written: Vec<Value> = lines(&a);
    assert!(written
        .iter()
        .any(|l| l["message"]["content"][0]["text"] == "Back in A"));
}

/// `fork` before a user message continues in a new file holding the branch up to it, returns
/// the message's text, and leaves the source alone; an entry that is not a user message is
/// refused with Pi's text; a session kept in memory cannot fork past its first message.
#[tokio::test]
async fn fork_branches_before_a_user_message_into_a_new_file() {
    let mock = MockLlm::start(&json!([{"text": "One."}, {"text": "Two."}, {"text": "Other."}]));
    let workspace = tempfile::tempdir().unwrap();
    let session = builder(&mock, workspace.path())
        .session_dir(workspace.path().join("sessions"))
        .build()
        .unwrap();
    session.prompt("First").await.unwrap();
    session.prompt("Second").await.unwrap();
    let source = session.session_file().await.unwrap();
    let source_lines = lines(&source);
    let second = source_lines
        .iter()
        .find(|l| l["message"]["content"][0]["text"] == "Second")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let answer = source_lines
        .iter()
        .rfind(|l| l["message"]["role"] == "assistant")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let refused = session.fork(&answer).await.unwrap_err();
    assert!(matches!(refused, Error::Refused(ref t) if t == "Invalid entry ID for forking"));
    assert_eq!(session.fork(&second).await.unwrap(), "Second");
    let forked = session.session_file().await.unwrap();
    assert_ne!(forked, source);
    assert_eq!(user_texts(&session.messages().await), ["First"]);
    session.prompt("Instead").await.unwrap();
    assert_eq!(sent_user_texts(&mock.requests()[2]), ["First", "Instead"]);
    assert_eq!(lines(&source), source_lines);
    assert_eq!(
        lines(&forked)[0]["parentSession"],
        json!(source.to_str().unwrap())
    );
}

/// A session kept in memory forks in memory (Pi's runtime branches the same in-memory
/// manager): a new id, the branch before the message, no file anywhere.
#[tokio::test]
async fn a_session_in_memory_forks_in_memory() {
    let mock = MockLlm::start(&json!([{"text": "One."}, {"text": "Two."}, {"text": "Else."}]));
    let workspace = tempfile::tempdir().unwrap();
    let session = builder(&mock, workspace.path()).build().unwrap();
    session.prompt("First").await.unwrap();
    session.prompt("Second").await.unwrap();
    let id = session.session_id();
    let branch = session.branch_ids().await;
    let second = &branch[branch.len() - 2];
    assert!(session.fork("no-such-entry").await.is_err());
    assert_eq!(session.fork(second).await.unwrap(), "Second");
    assert_ne!(session.session_id(), id);
    assert_eq!(session.session_file().await, None);
    assert_eq!(user_texts(&session.messages().await), ["First"]);
    session.prompt("Else").await.unwrap();
    assert_eq!(sent_user_texts(&mock.requests()[2]), ["First", "Else"]);
    assert_eq!(std::fs::read_dir(workspace.path()).unwrap().count(), 0);
}

/// Hears the sessions' starts and ends (so a recording holds them as inputs) and does nothing.
struct Listener;

impl RustExtension for Listener {
    fn name(&self) -> &str {
        "listener"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::SessionStart, HookEvent::SessionShutdown])
    }

    fn handle<'a>(&'a self, _payload: &'a HookPayload, _cx: &'a HookContext) -> HookFuture<'a> {
        Box::pin(async { Ok(None) })
    }
}

/// A run across every kind of replacement, the same calls recorded or replayed: a prompt, a
/// new session (a child of the first) with two, a fork before the second of them (a branch with a reply, so a new
/// file) with one, a switch back to the first file (`first`: the recorded run's) with one.
/// Returns the events it published and the first session's file.
async fn across_sessions(builder: SessionBuilder, first: Option<&Path>) -> (Vec<Value>, PathBuf) {
    let session = builder.extension(Listener).build().unwrap();
    let mut events = session.subscribe();
    session.bind_extensions().await.unwrap();
    session.prompt("Hello").await.unwrap();
    let first = match first {
        Some(first) => first.to_path_buf(),
        None => session.session_file().await.unwrap(),
    };
    session
        .new_session(Some(first.to_str().unwrap()))
        .await
        .unwrap();
    session.bind_extensions().await.unwrap();
    session.prompt("Again").await.unwrap();
    session.prompt("More").await.unwrap();
    let branch = session.branch_ids().await;
    let more = branch[branch.len() - 2].clone();
    assert_eq!(session.fork(&more).await.unwrap(), "More");
    session.bind_extensions().await.unwrap();
    session.prompt("Forked").await.unwrap();
    session.switch_session(&first).await.unwrap();
    session.bind_extensions().await.unwrap();
    session.prompt("Back").await.unwrap();
    session.shutdown().await.unwrap();
    session.finish().await.unwrap();
    (common::drain(&mut events), first)
}

/// A recording goes on across the session's replacements (new, fork, switch back): one
/// cassette holds all four sessions, a `replaced` line between each, and replays whole without
/// the model, through the library (the same events) and through `pi replay --check`. A
/// session replaced that left its file otherwise than recorded is a divergence there.
#[tokio::test]
async fn a_recording_goes_on_across_replacements_and_replays_whole() {
    let answers = ["Hi.", "Again.", "More.", "Forked.", "Back."];
    let mock = MockLlm::start(&json!(answers.map(|a| json!({ "text": a }))));
    let workspace = tempfile::tempdir().unwrap();
    let cassette = workspace.path().join("run.cassette.jsonl");
    let recorder = builder(&mock, workspace.path())
        .session_dir(workspace.path().join("sessions"))
        .seed(3)
        .record(&cassette);
    let (recorded, first) = across_sessions(recorder, None).await;
    assert_eq!(mock.requests().len(), answers.len());
    drop(mock);
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert_eq!(text.matches(r#"{"type":"replaced""#).count(), 3, "{text}");
    assert!(
        !text.contains("sk-secret-test-key"),
        "a key reached the cassette"
    );
    for answer in answers {
        assert!(text.contains(answer), "{answer} not recorded");
    }

    // The replay never reads the files the recorded run wrote: gone, it forks the same.
    std::fs::remove_dir_all(workspace.path().join("sessions")).unwrap();
    let replayer = SessionBuilder::new(workspace.path())
        .session_dir(workspace.path().join("replayed"))
        .replay(&cassette);
    let (replayed, _) = across_sessions(replayer, Some(&first)).await;
    assert_eq!(replayed, recorded);
    common::assert_checks(&cassette);

    // The first session's file as the recorded run left it, altered.
    let tampered = workspace.path().join("tampered.cassette.jsonl");
    let at = text.find(r#""left":{"session":""#).unwrap() + r#""left":{"session":""#.len();
    let mut bad = text.clone();
    bad.replace_range(at..at + 8, "00000000");
    std::fs::write(&tampered, bad).unwrap();
    let (code, said) = common::pi_check(&tampered);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("session file (of the session replaced)"),
        "{said}"
    );
    let replay = SessionBuilder::new(workspace.path())
        .session_dir(workspace.path().join("replayed-tampered"))
        .replay(&tampered)
        .extension(Listener)
        .build()
        .unwrap();
    replay.bind_extensions().await.unwrap();
    replay.prompt("Hello").await.unwrap();
    let error = replay.new_session(None).await.unwrap_err();
    assert!(
        error
            .to_string()
            .contains("session file (of the session replaced)"),
        "{error}"
    );
}

/// A replay that ends where its recording replaced the session and went on has not reproduced
/// the run: `finish` says the session stopped where the recording goes on, naming the
/// `replaced` line.
#[tokio::test]
async fn a_replay_that_ends_before_its_recordings_replacement_diverges() {
    let mock = MockLlm::start(&json!([{"text": "Hi."}, {"text": "Again."}]));
    let workspace = tempfile::tempdir().unwrap();
    let cassette = workspace.path().join("run.cassette.jsonl");
    let session = builder(&mock, workspace.path())
        .record(&cassette)
        .build()
        .unwrap();
    session.prompt("Hello").await.unwrap();
    session.new_session(None).await.unwrap();
    session.prompt("Again").await.unwrap();
    session.finish().await.unwrap();

    let replay = SessionBuilder::new(workspace.path())
        .replay(&cassette)
        .build()
        .unwrap();
    replay.prompt("Hello").await.unwrap();
    let error = replay.finish().await.unwrap_err().to_string();
    assert!(
        error.contains("the session stopped where the recording goes on"),
        "{error}"
    );
    assert!(error.contains("replaced"), "{error}");
}

/// A replay whose recording did not replace its session refuses a replacement, and the
/// replayed session is left as it was.
#[tokio::test]
async fn a_replay_refuses_a_replacement_its_recording_does_not_hold() {
    let mock = MockLlm::start(&json!([{"text": "Hi."}]));
    let workspace = tempfile::tempdir().unwrap();
    let cassette = workspace.path().join("run.cassette.jsonl");
    let session = builder(&mock, workspace.path())
        .record(&cassette)
        .build()
        .unwrap();
    session.prompt("Hello").await.unwrap();
    session.finish().await.unwrap();

    let replay = SessionBuilder::new(workspace.path())
        .replay(&cassette)
        .build()
        .unwrap();
    replay.prompt("Hello").await.unwrap();
    let error = replay.new_session(None).await.unwrap_err();
    assert_eq!(
        error.to_string(),
        "The recording holds no session after this one: the recorded run did not replace its session here"
    );
    replay.finish().await.unwrap();
}

/// An Anthropic message thread belongs to its session: the first request of a session forked
/// from a threaded conversation creates a thread, never continues the source session's one
/// (1.5.2 keys the state by session id, and a fork has a new id).
#[tokio::test]
async fn a_fork_does_not_continue_the_source_sessions_thread() {
    let mock = MockLlm::start(&json!([{"text": "One."}, {"text": "Two."}, {"text": "Three."}]));
    let workspace = tempfile::tempdir().unwrap();
    let mut model = common::mock_model(&mock);
    model.id = "mock-claude".into();
    model.provider = "mock-anthropic".into();
    model.api = "anthropic-messages".into();
    model.base_url = mock.url("");
    model.compat = Some(json!({"supportsMessageThreads": true}));
    let session = builder(&mock, workspace.path())
        .model(model)
        .session_dir(workspace.path().join("sessions"))
        .build()
        .unwrap();
    session.prompt("First").await.unwrap();
    session.prompt("Second").await.unwrap();
    let requests = mock.requests();
    assert_eq!(requests[0]["thread"]["type"], "create");
    assert_eq!(requests[1]["thread"]["type"], "continue");
    let branch = session.branch_ids().await;
    // The leaf is the second answer; before it, the second prompt.
    let second = &branch[branch.len() - 2];
    session.fork(second).await.unwrap();
    session.new_session(None).await.unwrap();
    session
        .switch_session(session.session_file().await.unwrap())
        .await
        .unwrap();
    session.prompt("Third").await.unwrap();
    assert_eq!(mock.requests()[2]["thread"]["type"], "create");
}

/// `clear_queue` hands back what both queues held and empties them: queued while a run
/// waits on the model, the messages are returned and never delivered.
#[tokio::test]
async fn clear_queue_returns_the_queued_messages_and_drops_them() {
    let mock = MockLlm::start(&json!([
        {"text": ["Working..."], "hang_until_file": "go"},
        {"text": "Done."}
    ]));
    let workspace = tempfile::tempdir().unwrap();
    let session = builder(&mock, workspace.path()).build().unwrap();
    let mut events = session.subscribe();
    let running = {
        let session = session.clone();
        tokio::spawn(async move { session.prompt("Start").await.map(drop) })
    };
    let mut seen = 0;
    while let Ok(event) = events.recv().await {
        let value = serde_json::to_value(&event).unwrap();
        if value["type"] == "message_update" && seen == 0 {
            seen = 1;
            session.steer("Turn left");
            session.follow_up("Then stop");
        }
        if value["type"] == "queue_update" && value["followUp"] == json!(["Then stop"]) {
            break;
        }
    }
    let cleared = session.clear_queue().await;
    assert_eq!(
        cleared,
        (vec!["Turn left".to_owned()], vec!["Then stop".to_owned()])
    );
    let mut emptied = false;
    while let Ok(event) = events.recv().await {
        let value = serde_json::to_value(&event).unwrap();
        if value["type"] == "queue_update" {
            assert_eq!(value["steering"], json!([]));
            assert_eq!(value["followUp"], json!([]));
            emptied = true;
            break;
        }
    }
    assert!(emptied);
    mock.release("go");
    running.await.unwrap().unwrap();
    assert_eq!(user_texts(&session.messages().await), ["Start"]);
    assert_eq!(mock.requests().len(), 1);
    assert_eq!(session.clear_queue().await, (Vec::new(), Vec::new()));
}
