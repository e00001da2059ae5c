//! The binary and the SDK scrub the same credentials from a recording: keys planted in every
//! file of the agent dir a key comes from (`auth.json`, `models.json`, `mcp.json`), none of them
//! the key the run sends, and a model that answers with all of them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{Env, MockLlm};
use serde_json::json;

/// The keys the agent dir holds and the run does not send.
const PLANTED: [&str; 3] = [
    "sk-planted-auth-0123456789",
    "sk-planted-models-header-0123456789",
    "planted-mcp-token-0123456789",
];

/// An agent dir holding [`PLANTED`] and a model that says them all, twice over.
fn planted(mock: &MockLlm) -> Env {
    let env = Env::new(mock);
    let mut models = pi_testkit::demo::models_json(mock.port);
    models["providers"]["mock-anthropic"]["headers"] = json!({"x-api-key": PLANTED[1]});
    env.write_agent("models.json", &models.to_string());
    let auth = json!({"mock-anthropic": {"type": "api_key", "key": PLANTED[0]}});
    env.write_agent("auth.json", &auth.to_string());
    let mcp = json!({"mcpServers": {"tokens": {
        "command": "false", "env": {"API_TOKEN": PLANTED[2]}
    }}});
    env.write_agent("mcp.json", &mcp.to_string());
    env
}

/// What the model answers: every planted key.
fn script() -> serde_json::Value {
    let said = format!("Found: {}", PLANTED.join(", "));
    json!([{"text": [said]}])
}

/// No planted key is in `cassette`, and the answer that held them is (redacted).
fn scrubbed(cassette: &std::path::Path, who: &str) {
    let text = std::fs::read_to_string(cassette).unwrap();
    assert!(
        text.contains("Found: "),
        "{who}: the answer is not recorded"
    );
    for key in PLANTED {
        assert!(!text.contains(key), "{who}: {key} reached the cassette");
    }
}

#[test]
fn the_binary_and_the_sdk_scrub_the_same_credentials() {
    let mock = MockLlm::start(&script());
    let env = planted(&mock);
    let cassette = env.cwd().join("binary.jsonl");
    let out = env.run(&[
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--no-mcp",
        "--no-session",
        "--mode",
        "json",
        "--record",
        cassette.to_str().unwrap(),
        "-p",
        "keys?",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    scrubbed(&cassette, "the binary");

    let mock = MockLlm::start(&script());
    let env = planted(&mock);
    let cassette = env.cwd().join("sdk.jsonl");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let session = pi_sdk::SessionBuilder::new(env.cwd())
            .agent_dir(env.path("agent"))
            .model_from_registry("mock", "mock-model")
            .record(&cassette)
            .build()
            .unwrap();
        session.prompt("keys?").await.unwrap();
        session.finish().await.unwrap();
    });
    scrubbed(&cassette, "the SDK");
}
