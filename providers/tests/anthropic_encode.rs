//! The Messages API request bodies and headers we encode equal the ones the original sent to
//! the kit's Anthropic mock (fixtures/anthropic-traces). Request k carries the conversation the
//! original had before its k-th answer (from its JSON-mode output); the system prompt and the
//! tool definitions are taken from the request itself (the session runtime builds them, later).
//! Beyond the traces, the bodies the original builds for contexts and options the traces do not
//! reach (thinking blocks signed, unsigned and redacted, images, subscription tokens, adaptive
//! thinking, budgets, cache retention, compat flags; fixtures/anthropic-bodies.json).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Tests read fixtures and run servers; the providers' IO ban applies to the library, not to its
// tests.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod common;

use std::fs;
use std::path::Path;

use common::{fixture_options, fixture_request, mock_claude};
use pi_core::agent::{ModelRequest, ToolDefinition};
use pi_core::message::Message;
use pi_core::model::ThinkingLevel;
use pi_providers::{anthropic, CallOptions};
use serde_json::{json, Value};

fn lines(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

fn check(scenario: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/anthropic-traces")
        .join(scenario);
    let requests: Vec<Value> = lines(&dir.join("requests.jsonl"))
        .into_iter()
        .filter(|r| r.get("body").is_some())
        .collect();
    let messages: Vec<Message> = lines(&dir.join("stdout.jsonl"))
        .into_iter()
        // Pi 1.5's system message is the request's prompt, given separately here.
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] != "system")
        .map(|e| serde_json::from_value(e["message"].clone()).unwrap())
        .collect();
    assert!(!requests.is_empty(), "{scenario}: no requests");
    for (k, recorded) in requests.iter().enumerate() {
        let body = &recorded["body"];
        let answer = messages
            .iter()
            .enumerate()
            .filter(|(_, m)| matches!(m, Message::Assistant(_)))
            .nth(k)
            .map(|(i, _)| i)
            .unwrap();
        let tools = body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| ToolDefinition {
                name: t["name"].as_str().unwrap().into(),
                description: t["description"].as_str().unwrap().into(),
                parameters: t["input_schema"].clone(),
                constrained_sampling: None,
            });
        let request = ModelRequest {
            model: mock_claude(),
            system_prompt: body["system"][0]["text"].as_str().unwrap().into(),
            messages: messages[..answer].to_vec().into(),
            tools: tools.collect(),
            reasoning: Some(ThinkingLevel::Medium),
            session_id: None,
            max_tokens: None,
            thread: None,
            session_diagnostics: Default::default(),
            system_messages: Default::default(),
            max_retries: None,
            provider_hooked: None,
        };
        let options = CallOptions {
            api_key: "mock-anthropic-key".into(),
            ..CallOptions::default()
        };
        let http = anthropic::encode(&request, &options, 0);
        assert_eq!(
            serde_json::to_string(&http.body).unwrap(),
            serde_json::to_string(body).unwrap(),
            "{scenario}: request {k}"
        );
        for (name, value) in &http.headers {
            if name == "content-type" || name == "accept" {
                continue;
            }
            assert_eq!(
                recorded["headers"][name],
                json!(value),
                "{scenario}: request {k}, header {name}"
            );
        }
        assert_eq!(
            http.url,
            format!(
                "{}{}",
                mock_claude().base_url,
                recorded["path"].as_str().unwrap()
            )
        );
    }
}

#[test]
fn a_plain_text() {
    check("a_plain_text");
}

#[test]
fn b_tool_read() {
    check("b_tool_read");
}

#[test]
fn c_two_tools() {
    check("c_two_tools");
}

#[test]
fn bodies_match_the_original_for_every_context_and_option() {
    let text = include_str!("fixtures/anthropic-bodies.json");
    let cases: Vec<Value> = serde_json::from_str(text).unwrap();
    let mut wrong = Vec::new();
    for case in &cases {
        let request = fixture_request(case);
        let call_options = fixture_options(case, "key");
        let ours =
            pi_core::json::to_string(&anthropic::build_body(&request, &call_options, 0)).unwrap();
        let theirs = pi_core::json::to_string(&case["body"]).unwrap();
        if ours != theirs {
            wrong.push(format!(
                "{}\n  ours:   {ours}\n  theirs: {theirs}",
                case["name"]
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// pi-ai's simple streaming never passes a tool choice; a caller that sets one explicitly gets
/// the Messages API's object form, as `streamAnthropic` builds it.
#[test]
fn an_explicit_tool_choice_is_sent_in_object_form() {
    let request = ModelRequest {
        model: mock_claude(),
        system_prompt: String::new(),
        messages: Vec::new().into(),
        tools: Vec::new(),
        reasoning: None,
        session_id: None,
        max_tokens: None,
        thread: None,
        session_diagnostics: Default::default(),
        system_messages: Default::default(),
        max_retries: None,
        provider_hooked: None,
    };
    for (choice, sent) in [
        (json!("any"), json!({"type": "any"})),
        (
            json!({"type": "tool", "name": "read"}),
            json!({"type": "tool", "name": "read"}),
        ),
    ] {
        let options = CallOptions {
            tool_choice: Some(choice),
            ..CallOptions::default()
        };
        assert_eq!(
            anthropic::build_body(&request, &options, 0)["tool_choice"],
            sent
        );
    }
}
