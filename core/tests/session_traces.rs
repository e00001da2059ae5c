//! Every session file Pi 0.73.1 wrote in the reference traces loads, writes back byte for byte,
//! and yields the context the original sent to the model: the last request of the scenario
//! carried exactly the session's messages up to (not including) its final answer.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Tests read fixtures; the core's IO ban applies to the library, not to its tests.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::fs;
use std::path::{Path, PathBuf};

use pi_core::agent::convert::convert_to_llm;
use pi_core::message::{ContentBlock, Message, UserContent};
use pi_core::session::file::{parse_session, whole_file};
use pi_core::session::ids::IdGenerator;
use pi_core::session::tree::SessionTree;
use serde_json::{json, Value};

fn trace_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/traces")
        .join(name)
}

fn final_session(name: &str) -> PathBuf {
    let dir = trace_dir(name).join("sessions/final");
    let cwd_dir = fs::read_dir(&dir).unwrap().flatten().next().unwrap().path();
    let mut files: Vec<PathBuf> = fs::read_dir(cwd_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    files.pop().unwrap()
}

/// The messages of the scenario's last request, in a provider-neutral shape.
fn last_request(name: &str) -> Vec<Value> {
    let text = fs::read_to_string(trace_dir(name).join("requests.jsonl")).unwrap();
    let body = text
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|r| r.get("body").cloned())
        .unwrap();
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] != "system")
        .map(|m| {
            let text = match &m["content"] {
                Value::String(s) => s.clone(),
                Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(""),
                _ => String::new(),
            };
            let calls: Vec<Value> = m["tool_calls"]
                .as_array()
                .map(|calls| {
                    calls
                        .iter()
                        .map(|c| {
                            let args: Value = serde_json::from_str(c["function"]["arguments"].as_str().unwrap()).unwrap();
                            json!([c["id"], c["function"]["name"], args])
                        })
                        .collect()
                })
                .unwrap_or_default();
            json!({"role": m["role"], "text": text, "calls": calls, "callId": m.get("tool_call_id")})
        })
        .collect()
}

/// The same shape for the context's messages, as an OpenAI-compatible request carries them.
fn shape(messages: &[Message]) -> Vec<Value> {
    let text = |blocks: &[ContentBlock], sep: &str| {
        blocks
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text(t) => Some(t.text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join(sep)
    };
    messages
        .iter()
        .filter_map(|m| match m {
            Message::User(u) => {
                let t = match &u.content {
                    UserContent::Text(s) => s.clone(),
                    UserContent::Blocks(b) => text(b, ""),
                };
                Some(json!({"role": "user", "text": t, "calls": [], "callId": null}))
            }
            Message::Assistant(a) if a.stop_reason.ends_run() => None,
            Message::Assistant(a) => {
                let calls: Vec<Value> = a.tool_calls().map(|c| json!([c.id, c.name, c.arguments])).collect();
                Some(json!({"role": "assistant", "text": text(&a.content, ""), "calls": calls, "callId": null}))
            }
            Message::ToolResult(r) => Some(json!({"role": "tool", "text": text(&r.content, "\n"), "calls": [], "callId": r.tool_call_id})),
        })
        .collect()
}

fn check(name: &str) {
    let path = final_session(name);
    let text = fs::read_to_string(&path).unwrap();
    let parsed = parse_session(&text, &mut IdGenerator::new(0)).unwrap();
    assert!(parsed.problems.is_empty(), "{name}: {:?}", parsed.problems);
    assert_eq!(
        whole_file(&parsed.header, &parsed.entries),
        text,
        "{name}: not byte-identical"
    );

    let tree = SessionTree::from_entries(parsed.header, parsed.entries, true);
    let context = tree.context();
    assert_eq!(context.thinking_level, "off");
    assert_eq!(
        context.model.as_ref().map(|m| m.model_id.as_str()),
        Some("mock-model")
    );
    let mut messages = convert_to_llm(&context.messages);
    let last = messages.pop();
    assert!(
        matches!(last, Some(Message::Assistant(_))),
        "{name}: the session ends with the final answer"
    );
    assert_eq!(
        shape(&messages),
        last_request(name),
        "{name}: context differs from the last request"
    );
}

/// One test a reference trace, named as its folder.
macro_rules! traces {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                check(stringify!($name));
            }
        )*
    };
}

traces!(
    a_plain_text,
    b_tool_read,
    c_two_tools,
    d2_retry_agent_level,
    e_rpc,
    f_session_resume
);
