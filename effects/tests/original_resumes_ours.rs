//! The original Pi resumes a session file written by us and continues it normally.
//!
//! Runs when `PI_ORIGINAL` names the original `pi` command (`conformance/install-pi-1.5.2.sh`
//! installs it; CI sets `PI_REQUIRE_ORIGINAL=1`, so there its absence fails). The session is written by
//! `SessionStore`, handed to the original with `--session`, and the original answers one more
//! prompt against the kit's scripted mock model. Then: the run succeeded, the model was sent our
//! messages, and the file still starts with every line we wrote, followed by the original's
//! (its system message, the prompt and the answer).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;

use pi_core::message::{
    AgentMessage, AssistantMessage, ContentBlock, StopReason, ToolCall, ToolResultMessage, Usage,
    UserMessage,
};
use pi_core::session::ids::IdGenerator;
use pi_effects::session::SessionStore;
use serde_json::{json, Value};

mod common;

use common::writer::Writer;

const T0: u64 = 1_795_322_284_614;

fn write_ours(path: &Path) -> String {
    let mut store = Writer::new(
        SessionStore::open(path, None, None, "/tmp", T0, IdGenerator::new(2026)).unwrap(),
    );
    store
        .append_model_change("mock", "mock-model", T0 + 1)
        .unwrap();
    store.append_thinking_level_change("off", T0 + 1).unwrap();
    let user = store
        .append_message(
            AgentMessage::User(UserMessage::from_text(
                "Read hello.txt please",
                Vec::new(),
                T0 + 2,
            )),
            T0 + 2,
        )
        .unwrap();
    let call = ToolCall {
        id: "call_ours_1".into(),
        name: "read".into(),
        arguments: json!({"path": "hello.txt"}),
        ..ToolCall::default()
    };
    let assistant = |content, stop_reason, at| {
        AgentMessage::Assistant(AssistantMessage {
            content,
            api: "openai-completions".into(),
            provider: "mock".into(),
            model: "mock-model".into(),
            usage: Usage {
                input: 10,
                output: 5,
                total_tokens: 15,
                ..Usage::default()
            },
            stop_reason,
            timestamp: at,
            ..AssistantMessage::default()
        })
    };
    store
        .append_message(
            assistant(
                vec![ContentBlock::ToolCall(call)],
                StopReason::ToolUse,
                T0 + 3,
            ),
            T0 + 3,
        )
        .unwrap();
    store
        .append_message(
            AgentMessage::ToolResult(ToolResultMessage {
                tool_call_id: "call_ours_1".into(),
                tool_name: "read".into(),
                content: vec![ContentBlock::text("hi from our file\n")],
                details: None,
                usage: None,
                is_error: false,
                duration_ms: None,
                timestamp: T0 + 4,
                extra: Default::default(),
            }),
            T0 + 4,
        )
        .unwrap();
    store
        .append_message(
            assistant(
                vec![ContentBlock::text("It says: hi from our file.")],
                StopReason::Stop,
                T0 + 5,
            ),
            T0 + 5,
        )
        .unwrap();
    store
        .append_label_change(&user, Some("start"), T0 + 6)
        .unwrap();
    store
        .append_session_info("Written by the harness", T0 + 7)
        .unwrap();
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn the_original_resumes_a_session_we_wrote() {
    let Some(pi) = pi_testkit::original_pi() else {
        return;
    };
    let kit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance");
    let tmp = tempfile::tempdir().unwrap();
    let ours = write_ours(&tmp.path().join("ours.jsonl"));

    let scenarios = tmp.path().join("scenarios");
    std::fs::create_dir_all(&scenarios).unwrap();
    let scenario = json!({
        "description": "the original resumes a session written by the harness",
        "script": [{"text": ["Continuing from your session."]}],
        "fixtures": {"ours.jsonl": ours},
        "runs": [{"args": ["--provider", "mock", "--model", "mock-model", "--mode", "json",
                           "--session", "{RUN}/fixtures/ours.jsonl", "-p", "And now?"]}]
    });
    std::fs::write(scenarios.join("resume_ours.json"), scenario.to_string()).unwrap();
    let out = tmp.path().join("out");
    let status = Command::new("python3")
        .arg(kit.join("run.py"))
        .args(["--pi", pi.to_str().unwrap(), "--out"])
        .arg(&out)
        .arg("--scenarios")
        .arg(&scenarios)
        .arg("resume_ours")
        .status()
        .unwrap();
    assert!(status.success(), "run.py failed");

    let run = out.join("resume_ours");
    let meta: Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["runs"][0]["rc"], 0, "{meta}");
    let stdout = std::fs::read_to_string(run.join("stdout.jsonl")).unwrap();
    assert!(
        stdout.lines().any(|l| l.contains("\"type\":\"agent_end\"")),
        "{stdout}"
    );

    let requests = std::fs::read_to_string(run.join("requests.jsonl")).unwrap();
    let body = requests
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|r| r.get("body").cloned())
        .unwrap();
    let sent: Vec<String> = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .skip(1)
        .map(|m| m["role"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        sent,
        ["user", "assistant", "tool", "assistant", "user"],
        "{body}"
    );
    assert_eq!(body["messages"][3]["content"], "hi from our file\n");

    let after = std::fs::read_to_string(run.join("fixtures/ours.jsonl")).unwrap();
    assert!(after.starts_with(&ours), "the original rewrote our lines");
    // Pi 1.5.2 records its prompt as a system message at the first request of a session that
    // has none (as ours has none: it was written without a run), then the prompt and answer.
    let added: Vec<Value> = after[ours.len()..]
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let roles: Vec<&str> = added
        .iter()
        .map(|e| e["message"]["role"].as_str().unwrap_or("-"))
        .collect();
    assert_eq!(roles, ["system", "user", "assistant"], "{added:?}");
    assert_eq!(added[1]["message"]["content"][0]["text"], "And now?");
    assert_eq!(
        added[2]["message"]["content"][0]["text"],
        "Continuing from your session."
    );
}
