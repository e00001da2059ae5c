//! A TypeScript extension found in the agent dir (the untrusted project's left out) runs its
//! event handlers in an SDK session as in the binary: its
//! `tool_call` gate refuses a call and its `before_agent_start` handler changes the system
//! prompt sent to the model, reading the session's file as the session manager's
//! `getSessionFile()`. The recording then replays event for event with no Node on PATH
//! (the handlers' decisions are answered from the cassette).
//!
//! This needs Node and Pi 1.5.2's install (`PI_EXTENSION_HOST_PI_DIR`, its Node in `node/bin`);
//! without them it is skipped with a line, unless `PI_REQUIRE_EXTENSIONS=1` (CI) makes that a
//! failure.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use common::{builder, drain, lines, prompt_once};
use pi_sdk::SessionBuilder;
use pi_testkit::MockLlm;
use serde_json::json;

const PROMPT: &str = "List the files.";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extensions_hooks_gate_and_prompt_are_recorded_and_replay_without_node() {
    let Some(scratch) = common::NodeScratch::new() else {
        return;
    };
    let (dir, workspace) = (&scratch.dir, scratch.workspace.clone());
    // Found where `pi` finds extensions: the agent dir's; the untrusted project's are not loaded.
    let extension = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/typescript_hooks/gate.ts");
    let agent_extensions = workspace.join(".agent/extensions");
    let project_extensions = workspace.join(".pi/extensions");
    std::fs::create_dir_all(&agent_extensions).unwrap();
    std::fs::create_dir_all(&project_extensions).unwrap();
    std::fs::copy(&extension, agent_extensions.join("gate.ts")).unwrap();
    std::fs::write(
        project_extensions.join("untrusted.ts"),
        "export default function (pi) { pi.on(\"before_agent_start\", () => ({ systemPrompt: \"UNTRUSTED\" })); }\n",
    )
    .unwrap();
    let cassette = dir.path().join("gate.cassette.jsonl");
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"id": "call_ls", "name": "bash", "arguments": {"command": "ls"}}]},
        {"text": ["Done."]}
    ]));
    let session = builder(&mock, &workspace)
        .discover_extensions(false)
        .session_dir(dir.path().join("sessions"))
        .record(&cassette)
        .build()
        .unwrap();
    let file = session.session_file().await.expect("a session on disk");
    let mut events = session.subscribe();
    session.prompt(PROMPT).await.unwrap();
    session.finish().await.unwrap();
    let recorded = drain(&mut events);
    let seen = recorded
        .iter()
        .find(|e| e["type"] == "entry_appended")
        .unwrap();
    assert_eq!(seen["entry"]["data"], json!({"file": file}), "{seen}");

    let requests = mock.requests();
    assert_eq!(requests.len(), 2, "{requests:#?}");
    let system = requests[0]["messages"][0]["content"]
        .as_str()
        .unwrap_or_default();
    assert!(system.ends_with("\nGATED"), "{system}");
    assert!(
        !system.contains("UNTRUSTED"),
        "the untrusted project's ran: {system}"
    );
    let end = recorded
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(end["isError"], true, "{end}");
    assert_eq!(
        end["result"]["content"][0]["text"], "no shell here",
        "{end}"
    );

    // No Node: the decisions come from the cassette.
    std::env::set_var("PATH", dir.path().join("bare-path"));
    let replayed = prompt_once(SessionBuilder::new(&workspace).replay(&cassette), PROMPT).await;
    assert_eq!(lines(&replayed), lines(&recorded));
}
