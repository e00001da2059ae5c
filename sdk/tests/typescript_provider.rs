//! A TypeScript extension in an SDK session registers a model provider (`pi.registerProvider`),
//! as Pi 1.5.2's services register the loaded extensions' providers before the model is
//! chosen: the session's model is found in the catalog with it merged in, its request goes over
//! real HTTP to the registered `baseUrl` with the registered key and header, the extensions'
//! `ctx.modelRegistry` lists it, and the key, a literal in the extension, reaches no cassette;
//! the recording checks as reproduced with no Node on PATH.
//!
//! This needs Node and Pi 1.5.2's install (`PI_EXTENSION_HOST_PI_DIR`, its Node in `node/bin`);
//! without them it is skipped with a line, unless `PI_REQUIRE_EXTENSIONS=1` (CI) makes that a
//! failure.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::prompt_once;
use pi_sdk::{SessionBuilder, ThinkingLevel};
use pi_testkit::MockLlm;
use serde_json::json;

const KEY: &str = "gw-typescript-literal-0123456789abcdef";

/// The extension: `ts-gateway` in front of `base_url`, and the catalog's `ts-gateway` models
/// told to the model at the end of the system prompt.
fn gateway(base_url: &str) -> String {
    let config = json!({
        "baseUrl": base_url, "api": "openai-completions", "apiKey": KEY,
        "headers": {"x-gateway": "typescript"},
        "models": [{"id": "gw-model", "name": "Gateway Model", "reasoning": false,
            "input": ["text"], "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": 64000, "maxTokens": 4096}],
    });
    format!(
        r#"export default function (pi) {{
	pi.registerProvider("ts-gateway", {config});
	pi.on("before_agent_start", (event, ctx) => {{
		const listed = ctx.modelRegistry.getAll().filter((m) => m.provider === "ts-gateway");
		return {{ systemPrompt: event.systemPrompt + "\nCatalog: " + listed.map((m) => m.id).join(",") }};
	}});
}}
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typescript_extensions_provider_serves_the_session_and_its_key_is_scrubbed() {
    let Some(scratch) = common::NodeScratch::new() else {
        return;
    };
    let (dir, workspace) = (&scratch.dir, scratch.workspace.clone());
    let mock = MockLlm::start(&json!([{"text": format!("The key is {KEY}.")}]));
    let extension = workspace.join("gateway.ts");
    std::fs::write(&extension, gateway(&mock.url("/v1"))).unwrap();
    let cassette = dir.path().join("gateway.cassette.jsonl");
    let builder = SessionBuilder::new(&workspace)
        .agent_dir(workspace.join(".agent"))
        .typescript_extensions([&extension])
        .model_from_registry("ts-gateway", "gw-model")
        .thinking_level(ThinkingLevel::Off)
        .record(&cassette);
    let events = prompt_once(builder, &format!("Is {KEY} the key?")).await;
    let requests = mock.received();
    assert_eq!(requests.len(), 1, "{events:?}");
    let request = &requests[0];
    assert_eq!(request["body"]["model"], "gw-model");
    assert_eq!(request["headers"]["authorization"], format!("Bearer {KEY}"));
    assert_eq!(request["headers"]["x-gateway"], "typescript");
    let system = request["body"]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.ends_with("\nCatalog: gw-model"),
        "the extensions' catalog lacks the provider: {system}"
    );

    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(!text.contains(KEY), "the key reached the cassette");
    assert!(text.contains("<<secret-"), "nothing was scrubbed");
    let (code, said) = common::pi_check_with(
        &cassette,
        &[
            ("PATH", dir.path().join("bare-path").as_path()),
            ("HOME", dir.path().join("home").as_path()),
        ],
    );
    assert_eq!(code, Some(0), "{said}");
}
