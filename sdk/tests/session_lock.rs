//! One writer per session file across processes, as the `pi` binary claims one: an SDK session
//! claims the file it writes (a new session's, a switched-to or forked one's) for as long as it
//! may write it, so another process's SDK session cannot take the same file meanwhile.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use common::builder;
use pi_testkit::MockLlm;
use serde_json::json;

/// Set in the child process: the session file its SDK session switches to and holds.
const HOLD: &str = "PI_SDK_TEST_HOLD_SESSION";

/// The other process of [`a_file_another_process_holds_is_refused_until_it_lets_go`]: switches
/// to the file, says `held`, and keeps the session until its stdin closes. Run alone (without
/// the variable) it does nothing.
#[tokio::test]
async fn holder_process() {
    let Some(file) = std::env::var_os(HOLD) else {
        return;
    };
    let mock = MockLlm::start(&json!([]));
    let workspace = tempfile::tempdir().unwrap();
    let session = builder(&mock, workspace.path())
        .session_dir(workspace.path().join("sessions"))
        .build()
        .unwrap();
    session.switch_session(&file).await.unwrap();
    println!("held");
    let mut line = String::new();
    let _ = std::io::stdin().read_line(&mut line);
    drop(session);
}

/// A session file an SDK session in another process switched to: `switch_session` to it here
/// is refused naming the holder, and the file is left as it was; once that process ends its
/// session, the same call succeeds.
#[tokio::test]
async fn a_file_another_process_holds_is_refused_until_it_lets_go() {
    let mock = MockLlm::start(&json!([{"text": "A1."}, {"text": "B1."}, {"text": "A2."}]));
    let workspace = tempfile::tempdir().unwrap();
    let session = builder(&mock, workspace.path())
        .session_dir(workspace.path().join("sessions"))
        .build()
        .unwrap();
    session.prompt("In A").await.unwrap();
    let a = session.session_file().await.unwrap();
    session.new_session(None).await.unwrap();
    session.prompt("In B").await.unwrap();

    let mut holder = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "holder_process",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(HOLD, &a)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(holder.stdout.take().unwrap());
    let mut line = String::new();
    // libtest prints the test's name before its output, on the same line.
    while !line.trim_end().ends_with("held") {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "the holder ended");
    }
    let before = std::fs::read(&a).unwrap();

    let refused = session.switch_session(&a).await;
    let error = refused.expect_err("a held file is refused").to_string();
    assert!(error.contains("is in use by process"), "{error}");
    assert_eq!(std::fs::read(&a).unwrap(), before);

    drop(holder.stdin.take());
    assert!(holder.wait().unwrap().success());
    session.switch_session(&a).await.unwrap();
    session.prompt("Back in A").await.unwrap();
}
