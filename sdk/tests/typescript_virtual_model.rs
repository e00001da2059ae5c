//! A TypeScript extension in an SDK session registers a virtual model
//! (`pi.registerVirtualModel`), as Pi 1.5.2's services register the loaded extensions' before
//! the model is chosen: the session's model is found in the catalog with it merged in, each
//! request is routed by its router (run in the extension host, its context reading the
//! session) to the physical model it names, which the response records, and the recording
//! checks as reproduced with no Node on PATH.
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

/// The extension: `ts-gateway` in front of `base_url`, and `router/auto`, whose router sends
/// each request to the gateway's model, writing down the reason it was given.
fn routed_gateway(base_url: &str) -> String {
    let config = json!({
        "baseUrl": base_url, "api": "openai-completions", "apiKey": "gw-key",
        "models": [{"id": "gw-model", "name": "Gateway Model", "reasoning": false,
            "input": ["text"], "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            "contextWindow": 64000, "maxTokens": 4096}],
    });
    format!(
        r#"export default function (pi) {{
	pi.registerProvider("ts-gateway", {config});
	pi.registerVirtualModel({{
		provider: "router",
		id: "auto",
		name: "Auto Router",
		route: (request, ctx) => {{
			pi.appendEntry("routed", {{ reason: request.reason }});
			return {{ model: ctx.modelRegistry.find("ts-gateway", "gw-model") }};
		}},
	}});
}}
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typescript_extensions_virtual_model_is_selected_and_routes_each_request() {
    let Some(scratch) = common::NodeScratch::new() else {
        return;
    };
    let (dir, workspace) = (&scratch.dir, scratch.workspace.clone());
    let mock = MockLlm::start(&json!([{"text": "Routed."}]));
    let extension = workspace.join("router.ts");
    std::fs::write(&extension, routed_gateway(&mock.url("/v1"))).unwrap();
    let cassette = dir.path().join("router.cassette.jsonl");
    let builder = SessionBuilder::new(&workspace)
        .agent_dir(workspace.join(".agent"))
        .typescript_extensions([&extension])
        .model_from_registry("router", "auto")
        .thinking_level(ThinkingLevel::Off)
        .record(&cassette);
    let events = prompt_once(builder, "Route me.").await;
    let requests = mock.received();
    assert_eq!(requests.len(), 1, "{events:?}");
    assert_eq!(requests[0]["body"]["model"], "gw-model");
    let answered = events
        .iter()
        .find(|e| e["type"] == "message_end" && e["message"]["role"] == "assistant");
    let answered = answered.unwrap_or_else(|| panic!("no answer: {events:?}"));
    assert_eq!(
        (
            &answered["message"]["provider"],
            &answered["message"]["model"]
        ),
        (&json!("ts-gateway"), &json!("gw-model")),
        "{answered}"
    );
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(
        text.contains(r#""customType":"routed","data":{"reason":"user"}"#),
        "the router's entry is not in the recording"
    );
    let (code, said) = common::pi_check_with(
        &cassette,
        &[
            ("PATH", dir.path().join("bare-path").as_path()),
            ("HOME", dir.path().join("home").as_path()),
        ],
    );
    assert_eq!(code, Some(0), "{said}");
}
