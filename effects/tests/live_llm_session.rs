//! A whole session against the real local LLM (SmolLM2-135M behind llama.cpp, started by
//! `.ci/run`): the prompt goes out with Pi's system prompt and context files, the answer streams
//! back through the session machine, and the session file records it. Skipped without
//! `LLM_BASE_URL`, unless `PI_REQUIRE_LIVE_LLM=1` (CI) makes that a failure.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use pi_core::message::{AssistantMessage, StopReason};
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
        context_window: pi_testkit::LIVE_LLM_CONTEXT_WINDOW,
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
    let mut answers: Vec<AssistantMessage> = Vec::new();
    session
        .prompt("Say hello.", Vec::new(), |e| {
            let value = serde_json::to_value(e).unwrap();
            types.push(value["type"].as_str().unwrap_or_default().to_owned());
            if value["type"] == "message_end" && value["message"]["role"] == "assistant" {
                answers.push(serde_json::from_value(value["message"].clone()).unwrap());
            }
        })
        .await
        .unwrap();
    assert_eq!(types.first().map(String::as_str), Some("agent_start"));
    // Pi 1.5: the prompt's work ends with `agent_settled`, after its runs' `agent_end` (and,
    // when the small model's answer is cut at its output limit, the recovery that follows,
    // which omits the cut answer from the context but not from the file).
    assert_eq!(types.last().map(String::as_str), Some("agent_settled"));
    assert!(types.iter().any(|t| t == "agent_end"), "{types:?}");
    assert!(types.iter().any(|t| t == "message_update"), "{types:?}");
    let answer = answers.first().expect("an answer");
    assert!(
        matches!(answer.stop_reason, StopReason::Stop | StopReason::Length),
        "{answer:?}"
    );
    assert!(answer.usage.output > 0);
    assert!(pi_core::message::text_parts(&answer.content).any(|t| !t.trim().is_empty()));
    // The context file reached the system prompt, and the answer reached the file.
    let file = std::fs::read_to_string(session.file().unwrap()).unwrap();
    assert!(file.lines().any(|line| {
        let entry: Value = serde_json::from_str(line).unwrap();
        entry["message"]["role"] == "assistant"
            && entry["message"]["timestamp"] == json!(answer.timestamp)
    }));
    assert!(session
        .machine()
        .agent()
        .system_prompt()
        .contains("Answer in English."));
}
