//! A Rust extension registers a model provider (Pi's `pi.registerProvider`): the session's
//! model is looked up in the catalog with it merged in, its request goes over real HTTP to the
//! registered `baseUrl` with the registered key and header, and the key, written in the
//! program, reaches no file the recording wrote.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::prompt_once;
use pi_sdk::{
    HandledHooks, HookContext, HookFuture, HookPayload, ProviderRegistration, RustExtension,
    SessionBuilder, ThinkingLevel,
};
use pi_testkit::MockLlm;
use serde_json::json;

const KEY: &str = "gw-rust-literal-0123456789abcdef";

/// Registers `gateway` in front of the mock.
struct Gateway {
    base_url: String,
}

impl RustExtension for Gateway {
    fn name(&self) -> &str {
        "gateway"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::default()
    }

    fn handle<'a>(&'a self, _: &'a HookPayload, _: &'a HookContext) -> HookFuture<'a> {
        Box::pin(async { Ok(None) })
    }

    fn providers(&self) -> Vec<ProviderRegistration> {
        let config = json!({
            "baseUrl": self.base_url, "api": "openai-completions", "apiKey": KEY,
            "headers": {"x-gateway": "sdk"},
            "models": [{"id": "gw-model", "name": "Gateway Model", "reasoning": false,
                "input": ["text"], "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
                "contextWindow": 64000, "maxTokens": 4096}],
        });
        vec![ProviderRegistration {
            name: "gateway".into(),
            extension_path: "gateway".into(),
            config: config.as_object().cloned().unwrap(),
            ..ProviderRegistration::default()
        }]
    }
}

#[tokio::test]
async fn a_rust_extensions_provider_serves_the_session_and_its_key_is_scrubbed() {
    let workspace = tempfile::tempdir().unwrap();
    let cassette = workspace.path().join("gateway.cassette.jsonl");
    let mock = MockLlm::start(&json!([{"text": format!("The key is {KEY}.")}]));
    let builder = SessionBuilder::new(workspace.path())
        .agent_dir(workspace.path().join(".agent"))
        .extension(Gateway {
            base_url: mock.url("/v1"),
        })
        .model_from_registry("gateway", "gw-model")
        .thinking_level(ThinkingLevel::Off)
        .record(&cassette);
    let events = prompt_once(builder, &format!("Is {KEY} the key?")).await;
    let requests = mock.received();
    assert_eq!(requests.len(), 1, "{events:?}");
    assert_eq!(requests[0]["body"]["model"], "gw-model");
    assert_eq!(
        requests[0]["headers"]["authorization"],
        format!("Bearer {KEY}")
    );
    assert_eq!(requests[0]["headers"]["x-gateway"], "sdk");
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(!text.contains(KEY), "the key reached the cassette");
    assert!(text.contains("<<secret-"), "nothing was scrubbed");
}
