//! A Rust extension asked before the session is replaced (Pi 1.5.2's `session_before_fork`,
//! `session_before_switch`), told the old session's end and the new one's start, against the
//! kit's mock LLM over real HTTP with sessions in real files.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::{Arc, Mutex};

use common::builder;
use pi_sdk::{
    Error, HandledHooks, HandlerResult, HookContext, HookEvent, HookFuture, HookPayload,
    RustExtension, SessionBuilder,
};
use pi_testkit::MockLlm;
use serde_json::json;

/// Cancels the first fork and lets the rest through; writes down every event it heard, with
/// the reason or position, and whether a session file was named.
struct ForkOnce {
    heard: Arc<Mutex<Vec<String>>>,
}

impl RustExtension for ForkOnce {
    fn name(&self) -> &str {
        "fork-once"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([
            HookEvent::SessionBeforeFork,
            HookEvent::SessionBeforeSwitch,
            HookEvent::SessionShutdown,
            HookEvent::SessionStart,
        ])
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, _cx: &'a HookContext) -> HookFuture<'a> {
        let mut heard = self.heard.lock().unwrap();
        let (what, named) = match payload {
            HookPayload::SessionBeforeFork { position, .. } => (position.clone(), true),
            HookPayload::SessionBeforeSwitch {
                reason,
                target_session_file,
            } => (reason.clone(), target_session_file.is_some()),
            HookPayload::SessionShutdown {
                reason,
                target_session_file,
            } => (reason.clone(), target_session_file.is_some()),
            HookPayload::SessionStart {
                reason,
                previous_session_file,
            } => (reason.clone(), previous_session_file.is_some()),
            _ => (String::new(), false),
        };
        heard.push(format!("{} {what} {named}", payload.event().name()));
        let first_fork = matches!(payload, HookPayload::SessionBeforeFork { .. })
            && heard
                .iter()
                .filter(|h| h.starts_with("session_before_fork"))
                .count()
                == 1;
        let result = first_fork.then_some(HandlerResult::SessionBeforeReplace { cancel: true });
        Box::pin(async move { Ok(result) })
    }
}

/// A Rust extension's `session_before_fork` cancels the first fork: `Error::Cancelled`, and the
/// session, its file and transcript stay. The second fork goes through: the old session hears
/// `session_shutdown` (reason `fork`, the new file named) and the new one, once bound,
/// `session_start` (reason `fork`, the old file named); a `new_session` after it asks
/// `session_before_switch` (reason `new`).
#[tokio::test]
async fn a_rust_extension_cancels_a_fork_and_hears_the_one_it_lets_through() {
    let mock = MockLlm::start(&json!([{"text": "One."}, {"text": "Two."}]));
    let workspace = tempfile::tempdir().unwrap();
    let heard = Arc::new(Mutex::new(Vec::new()));
    let session = builder(&mock, workspace.path())
        .session_dir(workspace.path().join("sessions"))
        .extension(ForkOnce {
            heard: Arc::clone(&heard),
        })
        .build()
        .unwrap();
    session.prompt("First").await.unwrap();
    session.prompt("Second").await.unwrap();
    let file = session.session_file().await.unwrap();
    let branch = session.branch_ids().await;
    let second = branch[branch.len() - 2].clone();
    let messages = session.messages().await;

    let refused = session.fork(&second).await.unwrap_err();
    assert!(matches!(refused, Error::Cancelled), "{refused:?}");
    assert_eq!(session.session_file().await.unwrap(), file);
    assert_eq!(session.messages().await, messages);

    assert_eq!(session.fork(&second).await.unwrap(), "Second");
    assert_ne!(session.session_file().await.unwrap(), file);
    session.bind_extensions().await.unwrap();
    session.new_session(None).await.unwrap();
    assert_eq!(
        *heard.lock().unwrap(),
        [
            "session_before_fork before true",
            "session_before_fork before true",
            "session_shutdown fork true",
            "session_start fork true",
            "session_before_switch new false",
            "session_shutdown new true",
        ]
    );
    session.finish().await.unwrap();
}

/// A recording of a fork its extension cancelled replays with the extension absent: the
/// recorded answer cancels it again, and the session goes on as recorded.
#[tokio::test]
async fn a_cancelled_fork_replays_without_the_extension() {
    let mock = MockLlm::start(&json!([{"text": "One."}, {"text": "Two."}]));
    let workspace = tempfile::tempdir().unwrap();
    let cassette = workspace.path().join("fork.cassette.jsonl");
    let run = |builder: SessionBuilder| async move {
        let session = builder.build().unwrap();
        session.prompt("First").await.unwrap();
        let branch = session.branch_ids().await;
        let first = branch[branch.len() - 2].clone();
        let forked = session.fork(&first).await;
        session.prompt("Again").await.unwrap();
        let messages = session.messages().await.len();
        session.finish().await.unwrap();
        (matches!(forked, Err(Error::Cancelled)), messages)
    };
    let heard = Arc::new(Mutex::new(Vec::new()));
    let recorded = run(builder(&mock, workspace.path())
        .seed(3)
        .extension(ForkOnce {
            heard: Arc::clone(&heard),
        })
        .record(&cassette))
    .await;
    assert!(recorded.0, "the fork was cancelled");
    drop(mock);

    let replayed = run(SessionBuilder::new(workspace.path()).replay(&cassette)).await;
    assert_eq!(replayed, recorded);
    assert_eq!(heard.lock().unwrap().len(), 1);
}
