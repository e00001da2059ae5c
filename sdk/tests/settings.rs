//! `settings.json` read as Pi 1.5.2's SDK reads it (`SettingsManager.create(cwd, agentDir)`:
//! the agent dir's, then the project's `.pi/settings.json`, which the SDK trusts), through the
//! reader the `pi` binary uses; what the program sets on the builder wins.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use pi_sdk::{SessionBuilder, ThinkingLevel};
use pi_testkit::MockLlm;
use serde_json::{json, Value};

/// The configuration a recording's header holds: what the session was built from.
fn recorded_config(builder: SessionBuilder, cassette: &std::path::Path) -> Value {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let session = builder.record(cassette).build().unwrap();
        session.finish().await.unwrap();
    });
    let text = std::fs::read_to_string(cassette).unwrap();
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    header["config"].clone()
}

#[test]
fn the_agent_dirs_and_the_projects_settings_configure_the_session() {
    let mock = MockLlm::start(&json!([]));
    let workspace = tempfile::tempdir().unwrap();
    let agent = workspace.path().join(".agent");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::create_dir_all(workspace.path().join(".pi")).unwrap();
    let global = json!({
        "defaultThinkingLevel": "high",
        "compaction": {"enabled": false, "reserveTokens": 1234},
        "retry": {"enabled": false, "maxRetries": 7},
        "steeringMode": "all"
    });
    std::fs::write(agent.join("settings.json"), global.to_string()).unwrap();
    let project = json!({"followUpMode": "all", "compaction": {"keepRecentTokens": 999}});
    std::fs::write(
        workspace.path().join(".pi/settings.json"),
        project.to_string(),
    )
    .unwrap();
    let mut model = common::mock_model(&mock);
    model.reasoning = true;
    let builder = SessionBuilder::new(workspace.path())
        .agent_dir(&agent)
        .model(model)
        .api_key("sk-test");

    let config = recorded_config(builder.clone(), &workspace.path().join("a.jsonl"));
    assert_eq!(config["thinkingLevel"], "high", "{config:#}");
    assert_eq!(config["compaction"]["enabled"], false, "{config:#}");
    assert_eq!(config["compaction"]["reserveTokens"], 1234, "{config:#}");
    assert_eq!(config["compaction"]["keepRecentTokens"], 999, "{config:#}");
    assert_eq!(config["retry"]["enabled"], false, "{config:#}");
    assert_eq!(config["retry"]["maxRetries"], 7, "{config:#}");
    assert_eq!(config["steeringMode"], "all", "{config:#}");
    assert_eq!(config["followUpMode"], "all", "{config:#}");

    let given = builder.thinking_level(ThinkingLevel::Low);
    let config = recorded_config(given, &workspace.path().join("b.jsonl"));
    assert_eq!(config["thinkingLevel"], "low", "{config:#}");
}

/// A builder told no model takes the settings' `defaultProvider` / `defaultModel` (found in
/// the agent dir's `models.json`, its key configured), and its default tools are the settings'
/// `defaultTools` as Pi 1.5.2 merges them: the project's list of only `-name` / `+name`
/// entries changes the agent dir's instead of replacing it. Tools the builder names win.
#[test]
fn the_settings_default_model_and_tools_apply_when_the_builder_is_not_told() {
    let mock = MockLlm::start(&json!([]));
    let workspace = tempfile::tempdir().unwrap();
    let agent = workspace.path().join(".agent");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::create_dir_all(workspace.path().join(".pi")).unwrap();
    let models = pi_testkit::demo::models_json(mock.port);
    std::fs::write(agent.join("models.json"), models.to_string()).unwrap();
    let global = json!({
        "defaultProvider": "mock",
        "defaultModel": "mock-reasoner",
        "defaultTools": ["read", "+grep", "+ls"]
    });
    std::fs::write(agent.join("settings.json"), global.to_string()).unwrap();
    let project = json!({"defaultTools": ["-read"]});
    std::fs::write(
        workspace.path().join(".pi/settings.json"),
        project.to_string(),
    )
    .unwrap();
    let builder = SessionBuilder::new(workspace.path()).agent_dir(&agent);

    let config = recorded_config(builder.clone(), &workspace.path().join("a.jsonl"));
    assert_eq!(config["model"]["id"], "mock-reasoner", "{config:#}");
    assert_eq!(config["model"]["provider"], "mock", "{config:#}");
    assert_eq!(config["tools"], json!(["grep", "ls"]), "{config:#}");

    let told = builder.tools(["bash"]);
    let config = recorded_config(told, &workspace.path().join("b.jsonl"));
    assert_eq!(config["tools"], json!(["bash"]), "{config:#}");
}

/// A builder told no model, with settings that name none, takes what Pi 1.5.2's
/// `findInitialModel` takes: the first model with a configured key (here the agent dir's
/// `models.json`, whose provider has no default of Pi's); with no key anywhere, it is refused.
#[test]
fn with_no_model_named_the_first_model_with_a_key_is_taken() {
    if let Some((name, _)) = std::env::vars().find(|(name, _)| name.ends_with("_API_KEY")) {
        eprintln!("skipped: {name} gives the environment's provider a key");
        return;
    }
    let mock = MockLlm::start(&json!([]));
    let workspace = tempfile::tempdir().unwrap();
    let agent = workspace.path().join(".agent");
    std::fs::create_dir_all(&agent).unwrap();
    let builder = SessionBuilder::new(workspace.path()).agent_dir(&agent);
    assert!(
        matches!(builder.clone().build(), Err(pi_sdk::Error::NoModel)),
        "no model has a key"
    );
    let models = pi_testkit::demo::models_json(mock.port);
    std::fs::write(agent.join("models.json"), models.to_string()).unwrap();
    let first = models["providers"]["mock"]["models"][0]["id"].clone();

    let config = recorded_config(builder, &workspace.path().join("a.jsonl"));
    assert_eq!(config["model"]["provider"], "mock", "{config:#}");
    assert_eq!(config["model"]["id"], first, "{config:#}");
}
