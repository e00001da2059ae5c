//! A Rust extension asked before the session is replaced (Pi 1.5.2's `session_before_fork`,
//! `session_before_switch`), told the old session's end and the new one's start, and asked
//! before the session's leaf moves (`session_before_tree`, then `session_tree`), against the
//! kit's mock LLM over real HTTP with sessions in real files.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::{Arc, Mutex};

use common::builder;
use pi_sdk::{
    Error, HandledHooks, HandlerResult, HookContext, HookEvent, HookFuture, HookPayload,
    NavigateRequest, RustExtension, SessionBuilder, SuppliedSummary, TreeAnswer,
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
    // The program never bound its extensions: the check does not bind them either.
    common::assert_checks(&cassette);

    let replayed = run(SessionBuilder::new(workspace.path()).replay(&cassette)).await;
    assert_eq!(replayed, recorded);
    assert_eq!(heard.lock().unwrap().len(), 1);
}

/// Cancels the first navigation and supplies the summary of the next; writes down the
/// `session_tree` it hears.
struct TreeKeeper {
    heard: Arc<Mutex<Vec<String>>>,
}

impl RustExtension for TreeKeeper {
    fn name(&self) -> &str {
        "tree-keeper"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::SessionBeforeTree, HookEvent::SessionTree])
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, _cx: &'a HookContext) -> HookFuture<'a> {
        let mut heard = self.heard.lock().unwrap();
        let result = match payload {
            HookPayload::SessionBeforeTree { preparation } => {
                heard.push(format!("before {}", preparation["userWantsSummary"]));
                let answer = match heard.len() {
                    1 => TreeAnswer {
                        cancel: true,
                        ..TreeAnswer::default()
                    },
                    _ => TreeAnswer {
                        summary: Some(SuppliedSummary {
                            summary: "Kept by the extension.".into(),
                            details: None,
                            usage: None,
                        }),
                        ..TreeAnswer::default()
                    },
                };
                Some(HandlerResult::SessionBeforeTree(answer))
            }
            HookPayload::SessionTree {
                summary_entry,
                from_extension,
                ..
            } => {
                let summary = summary_entry.as_ref().map(|e| e["summary"].clone());
                heard.push(format!("tree {summary:?} {from_extension:?}"));
                None
            }
            _ => None,
        };
        Box::pin(async move { Ok(result) })
    }
}

/// A Rust extension's `session_before_tree` cancels the first navigation (`Error::Cancelled`,
/// the leaf stays) and supplies the summary of the second (no summary request to the model);
/// its `session_tree` hears the entry written. The recording replays with the extension
/// absent to the same session.
#[tokio::test]
async fn a_rust_extension_cancels_a_navigation_then_supplies_its_summary_and_it_replays() {
    let mock = MockLlm::start(&json!([{"text": "One."}, {"text": "Two."}]));
    let workspace = tempfile::tempdir().unwrap();
    let cassette = workspace.path().join("tree.cassette.jsonl");
    let run = |builder: SessionBuilder| async move {
        let session = builder.build().unwrap();
        session.prompt("First").await.unwrap();
        session.prompt("Second").await.unwrap();
        let branch = session.branch_ids().await;
        let leaf = branch.last().unwrap().clone();
        let first_answer = branch[branch.len() - 3].clone();
        let request = NavigateRequest {
            target_id: first_answer.clone(),
            summarize: true,
            ..NavigateRequest::default()
        };
        let cancelled = session.navigate(request.clone()).await;
        assert!(matches!(cancelled, Err(Error::Cancelled)), "{cancelled:?}");
        assert_eq!(session.branch_ids().await.last(), Some(&leaf));
        session.navigate(request).await.unwrap();
        let branch = session.branch_ids().await;
        let messages = session.messages().await.len();
        session.finish().await.unwrap();
        (branch.len(), branch.contains(&first_answer), messages)
    };
    let heard = Arc::new(Mutex::new(Vec::new()));
    let recorded = run(builder(&mock, workspace.path())
        .seed(5)
        .extension(TreeKeeper {
            heard: Arc::clone(&heard),
        })
        .record(&cassette))
    .await;
    assert_eq!(mock.requests().len(), 2, "no summary request");
    assert_eq!(
        *heard.lock().unwrap(),
        [
            "before true",
            "before true",
            r#"tree Some(String("Kept by the extension.")) Some(true)"#
        ]
    );
    drop(mock);

    let replayed = run(SessionBuilder::new(workspace.path()).replay(&cassette)).await;
    assert_eq!(replayed, recorded);
    assert_eq!(heard.lock().unwrap().len(), 3);
}
