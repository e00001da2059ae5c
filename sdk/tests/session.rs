//! The session handle against the kit's mock LLM over real HTTP: a recording replayed without
//! the model, abort and wait_idle, the registry's models and credentials, a session on disk,
//! navigation.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::{builder, mock_model, prompt_once};
use pi_sdk::{
    AgentEvent, AgentMessage, Error, Event, Model, NavigateRequest, SessionBuilder, ThinkingLevel,
};
use pi_testkit::MockLlm;
use serde_json::{json, Value};

/// A run recorded through the builder replays with the model gone: the same events, the whole
/// recording used, and the key sent to the model nowhere in the cassette.
#[tokio::test]
async fn a_recorded_run_replays_without_the_model_and_keeps_no_key() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::write(workspace.path().join("notes.txt"), "hello\n").unwrap();
    let cassette = workspace.path().join("run.cassette.jsonl");
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"id": "call_1", "name": "read", "arguments": {"path": "notes.txt"}}]},
        {"text": ["It says ", "hello."]}
    ]));
    let recorded = prompt_once(
        builder(&mock, workspace.path()).record(&cassette),
        "What does notes.txt say?",
    )
    .await;
    drop(mock);
    assert!(recorded.iter().any(|e| e["type"] == "tool_execution_end"));
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(!text.contains("sk-secret-test-key-0123456789"));

    std::fs::remove_file(workspace.path().join("notes.txt")).unwrap();
    let replayed = prompt_once(
        SessionBuilder::new(workspace.path()).replay(&cassette),
        "What does notes.txt say?",
    )
    .await;
    assert_eq!(replayed, recorded);
}

/// A replay given another prompt than the recorded one stops with a divergence rather than
/// inventing answers.
#[tokio::test]
async fn a_replay_refuses_a_prompt_the_recording_does_not_hold() {
    let workspace = tempfile::tempdir().unwrap();
    let cassette = workspace.path().join("run.cassette.jsonl");
    let mock = MockLlm::start(&json!([{"text": "Hi."}]));
    let session = builder(&mock, workspace.path())
        .record(&cassette)
        .build()
        .unwrap();
    session.prompt("Hello").await.unwrap();
    session.finish().await.unwrap();

    let session = SessionBuilder::new(workspace.path())
        .replay(&cassette)
        .build()
        .unwrap();
    let error = session.prompt("Goodbye").await.unwrap_err();
    assert!(error.to_string().contains("Goodbye"), "{error}");
}

/// `abort` from another task ends a run whose model never finishes; `prompt` returns and
/// `wait_idle` after it.
#[tokio::test]
async fn abort_ends_a_hanging_run_and_wait_idle_returns() {
    let mock = MockLlm::start(&json!([{"text": ["Thinking..."], "hang_until_file": "never"}]));
    let workspace = tempfile::tempdir().unwrap();
    let session = builder(&mock, workspace.path()).build().unwrap();
    let mut events = session.subscribe();
    let running = {
        let session = session.clone();
        tokio::spawn(async move { session.prompt("Hello").await.map(drop) })
    };
    while let Ok(event) = events.recv().await {
        if matches!(event, Event::Agent(AgentEvent::MessageUpdate { .. })) {
            session.abort();
            break;
        }
    }
    tokio::time::timeout(Duration::from_secs(30), session.wait_idle())
        .await
        .expect("idle after the abort");
    running.await.unwrap().unwrap();
    let last = session.messages().await.pop();
    let Some(AgentMessage::Assistant(answer)) = last else {
        panic!("no answer: {last:?}");
    };
    assert_eq!(
        serde_json::to_value(&answer).unwrap()["stopReason"],
        "aborted"
    );
}

/// A model named by provider and id is found in the agent dir's `models.json`, and its key is
/// resolved from there as Pi resolves it; a name nowhere is refused, naming it.
#[tokio::test]
async fn a_model_from_the_registry_with_its_key_from_models_json() {
    let mock = MockLlm::start(&json!([{"text": "From the registry."}]));
    let workspace = tempfile::tempdir().unwrap();
    let agent = workspace.path().join(".agent");
    std::fs::create_dir_all(&agent).unwrap();
    let models = json!({"providers": {"local": {
        "baseUrl": mock.url("/v1"), "api": "openai-completions", "apiKey": "local-key",
        "models": [{"id": "tiny"}]
    }}});
    std::fs::write(agent.join("models.json"), models.to_string()).unwrap();

    let missing = SessionBuilder::new(workspace.path())
        .agent_dir(&agent)
        .model_from_registry("local", "huge")
        .build()
        .unwrap_err();
    assert!(matches!(missing, Error::UnknownModel { .. }), "{missing}");
    assert_eq!(missing.to_string(), "Model local/huge not found");

    let session = SessionBuilder::new(workspace.path())
        .agent_dir(&agent)
        .model_from_registry("local", "tiny")
        .build()
        .unwrap();
    session.prompt("Hello").await.unwrap();
    assert_eq!(mock.requests()[0]["model"], "tiny");
}

/// Keys reach a recording only where the recorder's own scrubbing must catch them: the prompt
/// holds the session's key before any call sends it, and the workspace file the agent reads
/// holds another provider's key from the agent dir, which no call sends. Neither may be written
/// into the cassette, whether the session's key was given to the builder or resolved from
/// `models.json`.
#[tokio::test]
async fn a_recording_scrubs_every_key_the_session_could_send() {
    const GIVEN: &str = "sk-given-key-0123456789abcdef";
    const RESOLVED: &str = "sk-models-json-key-0123456789abcdef";
    const OTHER: &str = "sk-other-provider-key-0123456789abcdef";
    for (key, given) in [(GIVEN, true), (RESOLVED, false)] {
        let mock = MockLlm::start(&json!([
            {"tool_calls": [{"id": "call_1", "name": "read", "arguments": {"path": "notes.txt"}}]},
            {"text": "Done."}
        ]));
        let workspace = tempfile::tempdir().unwrap();
        std::fs::write(workspace.path().join("notes.txt"), format!("key={OTHER}\n")).unwrap();
        let agent = workspace.path().join(".agent");
        std::fs::create_dir_all(&agent).unwrap();
        let models = json!({"providers": {
            "local": {
                "baseUrl": mock.url("/v1"), "api": "openai-completions", "apiKey": RESOLVED,
                "models": [{"id": "tiny"}]
            },
            "other": {
                "baseUrl": "http://127.0.0.1:9/v1", "api": "openai-completions", "apiKey": OTHER,
                "models": [{"id": "elsewhere"}]
            }
        }});
        std::fs::write(agent.join("models.json"), models.to_string()).unwrap();
        let cassette = workspace.path().join("run.cassette.jsonl");
        let builder = SessionBuilder::new(workspace.path())
            .agent_dir(&agent)
            .thinking_level(ThinkingLevel::Off)
            .record(&cassette);
        let builder = if given {
            builder.model(mock_model(&mock)).api_key(GIVEN)
        } else {
            builder.model_from_registry("local", "tiny")
        };
        let session = builder.build().unwrap();
        session
            .prompt(&format!("My key is {key}. What does notes.txt say?"))
            .await
            .unwrap();
        session.finish().await.unwrap();
        let sent = mock.requests()[1].to_string();
        assert!(
            sent.contains(key) && sent.contains(OTHER),
            "the model saw both"
        );
        let text = std::fs::read_to_string(&cassette).unwrap();
        assert!(!text.contains(key), "{key} is in the recording");
        assert!(!text.contains(OTHER), "{OTHER} is in the recording");
    }
}

/// A session written to a directory is a JSONL session file holding the conversation, and
/// navigating back to the prompt's entry moves the leaf: the next prompt starts a new branch.
#[tokio::test]
async fn a_session_on_disk_navigates_to_a_new_branch() {
    let mock = MockLlm::start(&json!([{"text": "First."}, {"text": "Second."}]));
    let workspace = tempfile::tempdir().unwrap();
    let sessions = tempfile::tempdir().unwrap();
    let session = builder(&mock, workspace.path())
        .session_dir(sessions.path())
        .build()
        .unwrap();
    session.prompt("One").await.unwrap();
    let file = session.session_file().await.expect("a session file");
    assert!(file.starts_with(sessions.path()));
    let first_branch = session.branch_ids().await;
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("\"One\"") && text.contains("First."));

    let refused = session
        .navigate(NavigateRequest {
            target_id: "no-such-entry".into(),
            ..NavigateRequest::default()
        })
        .await;
    assert!(refused.is_err());

    let prompt_entry = first_branch[first_branch.len() - 2].clone();
    session
        .navigate(NavigateRequest {
            target_id: prompt_entry,
            ..NavigateRequest::default()
        })
        .await
        .unwrap();
    session.prompt("Two").await.unwrap();
    let second_branch = session.branch_ids().await;
    assert!(!second_branch.contains(&first_branch[first_branch.len() - 1]));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("First.") && text.contains("Second."));
}

/// Skills and prompt templates are found where the binary finds them: the agent dir's always,
/// the project's only when it is trusted. A template expands in the prompt the model receives;
/// a trusted project's skill is listed in the system prompt.
#[tokio::test]
async fn discovered_templates_expand_and_project_skills_need_trust() {
    let workspace = tempfile::tempdir().unwrap();
    let agent = workspace.path().join(".agent");
    std::fs::create_dir_all(agent.join("prompts")).unwrap();
    std::fs::write(
        agent.join("prompts").join("review.md"),
        "---\ndescription: Review a file\n---\nReview $1 carefully.",
    )
    .unwrap();
    let skill = workspace.path().join(".pi").join("skills").join("deploy");
    std::fs::create_dir_all(&skill).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: deploy\ndescription: Deploys the project\n---\nRun make deploy.",
    )
    .unwrap();
    let mock = MockLlm::start(&json!([{"text": "Reviewed."}, {"text": "Again."}]));
    let system = |request: &Value| request["messages"][0]["content"].to_string();

    let untrusted = builder(&mock, workspace.path())
        .discover_resources(false)
        .build()
        .unwrap();
    untrusted.prompt("/review main.rs").await.unwrap();
    let trusted = builder(&mock, workspace.path())
        .discover_resources(true)
        .build()
        .unwrap();
    trusted.prompt("/review lib.rs").await.unwrap();

    let requests = mock.requests();
    assert!(requests[0]
        .to_string()
        .contains("Review main.rs carefully."));
    assert!(!system(&requests[0]).contains("Deploys the project"));
    assert!(system(&requests[1]).contains("Deploys the project"));
}

/// The settings' `skills` and `prompts` entries are read as the binary reads them, each
/// against its settings file's folder: the agent dir's always, the project's when it is
/// trusted. A skill and a template found only through settings reach the model.
#[tokio::test]
async fn the_settings_skills_and_prompts_entries_are_read() {
    let workspace = tempfile::tempdir().unwrap();
    let write = |path: std::path::PathBuf, text: &str| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    let root = workspace.path();
    write(
        root.join(".agent/settings.json"),
        r#"{"skills": ["../shared/skills"], "prompts": ["../shared/prompts"]}"#,
    );
    write(
        root.join("shared/skills/charts/SKILL.md"),
        "---\nname: charts\ndescription: Draws charts from settings\n---\nBody.",
    );
    write(root.join("shared/prompts/deep/ship.md"), "Ship $1 now.");
    write(root.join(".pi/settings.json"), r#"{"skills": ["team"]}"#);
    write(
        root.join(".pi/team/SKILL.md"),
        "---\nname: team\ndescription: The team skill from settings\n---\nBody.",
    );
    let mock = MockLlm::start(&json!([{"text": "One."}, {"text": "Two."}]));
    let system = |request: &Value| request["messages"][0]["content"].to_string();

    let untrusted = builder(&mock, root)
        .discover_resources(false)
        .build()
        .unwrap();
    untrusted.prompt("/ship web").await.unwrap();
    let trusted = builder(&mock, root)
        .discover_resources(true)
        .build()
        .unwrap();
    trusted.prompt("hello").await.unwrap();

    let requests = mock.requests();
    assert!(
        requests[0].to_string().contains("Ship web now."),
        "{}",
        requests[0]
    );
    assert!(system(&requests[0]).contains("Draws charts from settings"));
    assert!(!system(&requests[0]).contains("The team skill from settings"));
    assert!(system(&requests[1]).contains("The team skill from settings"));
}

/// An installed package the settings' `packages` name gives its skills and templates to
/// `discover_resources`, as to the binary; one not installed is left out.
#[tokio::test]
async fn the_settings_packages_skills_and_prompts_are_read() {
    let workspace = tempfile::tempdir().unwrap();
    let write = |path: std::path::PathBuf, text: &str| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    let root = workspace.path();
    write(
        root.join(".agent/settings.json"),
        r#"{"packages": ["npm:kit", "git:github.com/team/absent"]}"#,
    );
    let kit = root.join(".agent/npm/node_modules/kit");
    write(
        kit.join("package.json"),
        r#"{"name": "kit", "version": "1.0.0"}"#,
    );
    write(
        kit.join("skills/plots/SKILL.md"),
        "---\nname: plots\ndescription: Plots from a package\n---\nBody.",
    );
    write(kit.join("prompts/release.md"), "Release $1 from the kit.");
    let mock = MockLlm::start(&json!([{"text": "One."}]));
    let session = builder(&mock, root)
        .discover_resources(false)
        .build()
        .unwrap();
    session.prompt("/release web").await.unwrap();
    let request = &mock.requests()[0];
    assert!(
        request.to_string().contains("Release web from the kit."),
        "{request}"
    );
    assert!(request["messages"][0]["content"]
        .to_string()
        .contains("Plots from a package"));
}

/// A model switch and a thinking level set between prompts take effect in the next request:
/// the other model's id, and the level clamped to what that model supports.
#[tokio::test]
async fn set_model_and_thinking_level_apply_to_the_next_request() {
    let mock = MockLlm::start(&json!([{"text": "One."}, {"text": "Two."}]));
    let workspace = tempfile::tempdir().unwrap();
    let session = builder(&mock, workspace.path()).build().unwrap();
    session.prompt("First").await.unwrap();
    let reasoning = Model {
        id: "mock-reasoner".into(),
        reasoning: true,
        ..mock_model(&mock)
    };
    session.set_model(reasoning).await.unwrap();
    session
        .set_thinking_level(ThinkingLevel::High)
        .await
        .unwrap();
    session.prompt("Second").await.unwrap();
    let requests = mock.requests();
    assert_eq!(requests[0]["model"], "mock-model");
    assert!(requests[0].get("reasoning_effort").is_none());
    assert_eq!(requests[1]["model"], "mock-reasoner");
    assert_eq!(requests[1]["reasoning_effort"], "high");
}

/// A run recorded into a session file replays into the directory given for it, writing the
/// same session byte for byte, and nothing into the workspace.
#[tokio::test]
async fn a_run_recorded_on_disk_replays_into_its_session_dir_byte_for_byte() {
    let workspace = tempfile::tempdir().unwrap();
    let recorded_dir = tempfile::tempdir().unwrap();
    let replayed_dir = tempfile::tempdir().unwrap();
    let cassette = recorded_dir.path().join("run.cassette.jsonl");
    let mock = MockLlm::start(&json!([{"text": "Saved."}]));
    let session = builder(&mock, workspace.path())
        .session_dir(recorded_dir.path())
        .record(&cassette)
        .build()
        .unwrap();
    session.prompt("Keep this").await.unwrap();
    session.finish().await.unwrap();
    let recorded = std::fs::read(session.session_file().await.unwrap()).unwrap();
    drop(mock);

    let replay = SessionBuilder::new(workspace.path())
        .session_dir(replayed_dir.path())
        .replay(&cassette)
        .build()
        .unwrap();
    replay.prompt("Keep this").await.unwrap();
    replay.finish().await.unwrap();
    let written: Vec<_> = std::fs::read_dir(replayed_dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(written.len(), 1, "{written:?}");
    assert_eq!(std::fs::read(&written[0]).unwrap(), recorded);
    assert_eq!(std::fs::read_dir(workspace.path()).unwrap().count(), 0);
}
