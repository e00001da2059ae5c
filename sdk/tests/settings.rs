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
