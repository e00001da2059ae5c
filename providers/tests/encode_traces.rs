//! The Chat Completions request bodies we encode equal the ones Pi 1.5.2 sent in its reference
//! traces. For every request the original made, some prefix of the scenario's session
//! (as the model sees it) must encode to exactly that body; the system prompt and the tool
//! definitions are taken from the request itself (they are built by the session runtime, later).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Tests read fixtures and run servers; the providers' IO ban applies to the library, not to its
// tests.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

mod common;

use common::{mock_model, traces_152};

use std::fs;
use std::path::Path;

use pi_core::agent::convert::convert_to_llm;
use pi_core::agent::{ModelRequest, ToolDefinition};
use pi_core::message::Message;
use pi_core::session::file::parse_session;
use pi_core::session::ids::IdGenerator;
use pi_core::session::tree::SessionTree;
use pi_providers::openai_completions::encode;
use pi_providers::CallOptions;
use serde_json::Value;

fn sessions(trace: &Path) -> Vec<Vec<Message>> {
    let mut out = Vec::new();
    let root = trace.join("sessions/final");
    for dir in fs::read_dir(root).unwrap().flatten() {
        for file in fs::read_dir(dir.path()).unwrap().flatten() {
            let text = fs::read_to_string(file.path()).unwrap();
            let parsed = parse_session(&text, &mut IdGenerator::new(0)).unwrap();
            let tree = SessionTree::from_entries(parsed.header, parsed.entries, true);
            out.push(convert_to_llm(&tree.context().messages));
        }
    }
    out
}

fn check(name: &str) {
    let trace = traces_152().join(name);
    let requests: Vec<Value> = fs::read_to_string(trace.join("requests.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["api"] == "openai-completions")
        .collect();
    assert!(!requests.is_empty(), "{name}: no requests");
    let sessions = sessions(&trace);
    for (k, request) in requests.iter().enumerate() {
        let body = &request["body"];
        let system = body["messages"][0]["content"].as_str().unwrap().to_owned();
        let tools: Vec<ToolDefinition> = body["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .map(|t| ToolDefinition {
                        name: t["function"]["name"].as_str().unwrap().into(),
                        description: t["function"]["description"].as_str().unwrap().into(),
                        parameters: t["function"]["parameters"].clone(),
                        constrained_sampling: None,
                    })
                    .collect()
            })
            .unwrap_or_default();
        let matched = sessions.iter().any(|messages| {
            (0..=messages.len()).any(|n| {
                let model_request = ModelRequest {
                    model: mock_model(),
                    system_prompt: system.clone(),
                    messages: messages[..n].to_vec().into(),
                    tools: tools.clone(),
                    reasoning: None,
                    session_id: Some("01a2018c-0000-7000-8000-000000000000".into()),
                    max_tokens: None,
                    thread: None,
                    session_diagnostics: Default::default(),
                    system_messages: Default::default(),
                    max_retries: None,
                    provider_hooked: None,
                };
                let options = CallOptions {
                    api_key: "mock-key".into(),
                    ..CallOptions::default()
                };
                let encoded = encode(&model_request, &options, 0);
                let ours: Value =
                    serde_json::from_str(&pi_core::json::to_string(&encoded.body).unwrap())
                        .unwrap();
                &ours == body
            })
        });
        assert!(
            matched,
            "{name}: request {k} matches no prefix of the session:\n{body}"
        );
        assert_eq!(request["headers"]["authorization"], "Bearer mock-key");
        assert_eq!(request["path"], "/v1/chat/completions");
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
fn d2_retry_agent_level() {
    check("d2_retry_agent_level");
}

#[test]
fn e_rpc() {
    check("e_rpc");
}

#[test]
fn f_session_resume() {
    check("f_session_resume");
}
