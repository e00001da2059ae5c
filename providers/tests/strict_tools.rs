//! The tool declarations sent over the Chat Completions and Responses APIs equal Pi 1.5.2's
//! (`fixtures/strict-tools.json`, from `scripts/gen-strict-tools-fixtures.mjs`): `strict` is
//! sent only when the model's compat says `supportsStrictMode`, and then a tool that prefers
//! constrained sampling gets `strict: true` with its schema made strict (every property
//! required, the optional ones nullable, no additional properties); the others `strict: false`.
//! Over Anthropic's Messages API the compat's `supportsStrictTools` decides, and a schema with
//! a keyword Anthropic's strict mode refuses (`minimum`, a `format` it does not know, `minItems`
//! above 1, …) is sent as declared; Google's Gemini 3 and later get strict declarations and the
//! `VALIDATED` calling mode.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod common;

use std::sync::Arc;

use pi_core::agent::{ModelRequest, ToolDefinition};
use pi_core::message::Message;
use pi_providers::{anthropic, google, openai_completions, openai_responses, CallOptions};
use serde_json::{json, Value};

fn fixture() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/strict-tools.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn request(api: &str, compat: &Value, tools: &Value) -> ModelRequest {
    let mut model = common::mock_model();
    model.api = api.into();
    model.compat = (!compat.is_null()).then(|| compat.clone());
    let user: Message =
        serde_json::from_value(json!({"role": "user", "content": "hi", "timestamp": 0})).unwrap();
    ModelRequest {
        model,
        system_prompt: "You help.".into(),
        messages: Arc::new(vec![user]),
        tools: tools
            .as_array()
            .unwrap()
            .iter()
            .map(|t| ToolDefinition {
                name: t["name"].as_str().unwrap().into(),
                description: t["description"].as_str().unwrap().into(),
                parameters: t["parameters"].clone(),
                constrained_sampling: t.get("constrainedSampling").cloned(),
            })
            .collect(),
        reasoning: None,
        session_id: None,
        max_tokens: None,
        thread: None,
        session_diagnostics: Default::default(),
        system_messages: Default::default(),
        max_retries: None,
        provider_hooked: None,
    }
}

#[test]
fn tool_declarations_follow_the_models_strict_mode_as_pi_1_5_2_sends_them() {
    let fixture = fixture();
    let cases = fixture["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 11);
    for case in cases {
        let api = case["api"].as_str().unwrap();
        let mut request = request(api, &case["compat"], &fixture["tools"]);
        if let Some(id) = case["model"].as_str() {
            request.model.id = id.into();
        }
        let options = CallOptions::default();
        let body = match api {
            "openai-completions" => {
                let compat = openai_completions::compat(&request.model);
                openai_completions::build_body(&request, &compat, &options, 0)
                    .to_value()
                    .into_owned()
            }
            "anthropic-messages" => anthropic::build_body(&request, &options, 0),
            "google-generative-ai" => {
                let body = google::build_body(&request, &options, 0);
                assert_eq!(
                    body.get("toolConfig").unwrap_or(&Value::Null),
                    &case["toolConfig"],
                    "{api} {}",
                    case["model"]
                );
                body
            }
            _ => openai_responses::build_body(&request, &options, 0),
        };
        assert_eq!(
            pi_core::json::to_string(&body["tools"]).unwrap(),
            pi_core::json::to_string(&case["sent"]).unwrap(),
            "{api} {} with compat {}",
            case["model"],
            case["compat"]
        );
    }
}
