//! A whole session against the real local LLM (SmolLM2-135M behind llama.cpp, started by
//! `.ci/run`): the prompt goes out with Pi's system prompt and context files, the answer streams
//! back through the session machine, and the session file records it. Skipped without
//! `LLM_BASE_URL`, unless `PI_REQUIRE_LIVE_LLM=1` (CI) makes that a failure.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use pi_core::message::{AgentMessage, StopReason};
use pi_core::model::Model;
use pi_core::session::ids::IdGenerator;
use pi_effects::agent_session::{create_agent_session, SessionOptions};
use pi_effects::network::Timeouts;
use pi_effects::session::SessionStore;
use pi_providers::CallOptions;
use serde_json::{json, Value};

#[tokio::test]
async fn a_prompt_to_the_local_llm_streams_an_answer_into_the_session_file() {
    let Some(base_url) = pi_testkit::live_llm_base_url() else {
        return;
    };
    let model = Model {
        id: "smollm2-135m-instruct".into(),
        name: "SmolLM2 135M".into(),
        api: "openai-completions".into(),
        provider: "local".into(),
        base_url,
        input: vec!["text".into()],
        context_window: 4096,
        max_tokens: 48,
        compat: Some(json!({"maxTokensField": "max_tokens"})),
        ..Model::default()
    };
    let cwd = tempfile::tempdir().unwrap();
    std::fs::write(cwd.path().join("AGENTS.md"), "Answer in English.\n").unwrap();
    let sessions = tempfile::tempdir().unwrap();
    let mut options = SessionOptions::new(
        cwd.path(),
        model,
        Arc::new(|_| {
            Ok(CallOptions {
                api_key: "local".into(),
                ..CallOptions::default()
            })
        }),
    );
    options.agent_dir = cwd.path().join(".agent");
    // A small model and a small window: no tools, so the prompt fits with room to answer.
    options.tools = Vec::new();
    // Pi's default reserve (16k) exceeds this window, which would compact after every turn.
    options.compaction.reserve_tokens = 1_024;
    options.system_prompt = Some("You are a helpful assistant.".into());
    options.timeouts = Timeouts {
        connect: Duration::from_secs(10),
        idle: Duration::from_secs(120),
    };
    options.store = Some(
        SessionStore::create(
            &cwd.path().to_string_lossy(),
            sessions.path(),
            1_000,
            IdGenerator::new(3),
        )
        .unwrap(),
    );
    let mut session = create_agent_session(options).unwrap();
    let mut types = Vec::new();
    session
        .prompt("Say hello.", Vec::new(), |e| {
            let value = serde_json::to_value(e).unwrap();
            types.push(value["type"].as_str().unwrap_or_default().to_owned());
        })
        .await
        .unwrap();
    assert_eq!(types.first().map(String::as_str), Some("agent_start"));
    assert_eq!(types.last().map(String::as_str), Some("agent_end"));
    assert!(types.iter().any(|t| t == "message_update"), "{types:?}");
    let Some(AgentMessage::Assistant(answer)) = session.machine().agent().messages().last() else {
        panic!("no answer");
    };
    assert!(
        matches!(answer.stop_reason, StopReason::Stop | StopReason::Length),
        "{answer:?}"
    );
    assert!(answer.usage.output > 0);
    assert!(pi_core::message::text_parts(&answer.content).any(|t| !t.trim().is_empty()));
    // The context file reached the system prompt, and the answer reached the file.
    let file = std::fs::read_to_string(session.file().unwrap()).unwrap();
    let last: Value = serde_json::from_str(file.lines().last().unwrap()).unwrap();
    assert_eq!(last["message"]["role"], "assistant");
    assert!(session
        .machine()
        .agent()
        .system_prompt()
        .contains("Answer in English."));
}
