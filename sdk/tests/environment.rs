//! What the agent's commands are told and what a recording scrubs, as the `pi` binary does:
//! the bash tool's session variables, and a session after a replacement.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::builder;
use pi_testkit::MockLlm;
use serde_json::json;

/// The bash tool's commands get Pi 1.5's session variables (`PI_SESSION_ID`,
/// `PI_SESSION_FILE`, `PI_PROVIDER`, `PI_MODEL`, `PI_REASONING_LEVEL`) as the binary's get
/// them, those of the session in force after `new_session`.
#[tokio::test]
async fn bash_commands_see_the_sessions_variables() {
    let command =
        "echo \"[$PI_SESSION_ID|$PI_SESSION_FILE|$PI_PROVIDER|$PI_MODEL|$PI_REASONING_LEVEL]\"";
    let call = json!({"tool_calls": [{"name": "bash", "arguments": {"command": command}}]});
    let mock = MockLlm::start(&json!([call, {"text": "Done."}, call, {"text": "Done."}]));
    let workspace = tempfile::tempdir().unwrap();
    let session = builder(&mock, workspace.path())
        .session_dir(workspace.path().join("sessions"))
        .build()
        .unwrap();
    for _ in 0..2 {
        session.prompt("Which session?").await.unwrap();
        let file = session.session_file().await.unwrap();
        let expected = format!(
            "[{}|{}|mock|mock-model|off]",
            session.session_id(),
            file.display()
        );
        let results: Vec<String> = session
            .messages()
            .await
            .iter()
            .filter_map(|m| match m {
                pi_sdk::AgentMessage::ToolResult(result) => Some(
                    result
                        .content
                        .iter()
                        .filter_map(|c| serde_json::to_value(c).ok())
                        .filter_map(|c| c["text"].as_str().map(str::to_owned))
                        .collect::<String>(),
                ),
                _ => None,
            })
            .collect();
        assert_eq!(results.len(), 1, "{results:?}");
        assert!(
            results[0].contains(&expected),
            "{results:?} lacks {expected}"
        );
        session.new_session(None).await.unwrap();
    }
}
