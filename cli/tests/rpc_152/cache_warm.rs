//! Pi 1.5.2's cache warming through the binary: an RPC session on a models.json model whose
//! `promptCache` lasts 12 s sends its request again, with a one-token cap, 2 s after it, and
//! writes a `usage {kind: "cache_warm"}` entry announced by `entry_appended` (as 1.5.2 did,
//! checked by hand, against the same mock). The run recorded replays byte for byte, its wait
//! answered from the recording; print mode never warms.

use serde_json::{json, Value};

use super::replay_check;
use crate::common::{Env, MockLlm};
use crate::Pi;

/// The kit's models.json with `mock-cache`: a 12 s prompt cache (a 2 s warm delay), and an
/// input price that makes a warm pay off even idle.
fn env_with_cache_model(mock: &MockLlm) -> Env {
    let env = Env::new(mock);
    let mut models = pi_testkit::demo::models_json(mock.port);
    models["providers"]["mock"]["models"]
        .as_array_mut()
        .unwrap()
        .push(json!({
            "id": "mock-cache", "name": "Mock Cache", "contextWindow": 200000, "maxTokens": 16384,
            "cost": {"input": 1000, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            "promptCache": {"short": 12}
        }));
    env.write_agent("models.json", &models.to_string());
    env
}

fn script() -> Value {
    json!([
        {"text": ["Hello."], "usage": {"input": 100000, "output": 5}},
        {"text": ["W"], "usage": {"input": 100000, "output": 1}}
    ])
}

#[test]
fn an_idle_rpc_session_warms_the_cache_and_its_recording_replays_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("warm.jsonl");
    let mock = MockLlm::start(&script());
    let env = env_with_cache_model(&mock);
    let args = [
        "--provider",
        "mock",
        "--model",
        "mock-cache",
        "--mode",
        "rpc",
        "--record",
        cassette.to_str().unwrap(),
    ];
    let mut pi = Pi::start_in(env, mock, &args);
    pi.call("p1", json!({"type": "prompt", "message": "Hi"}));
    let appended = pi.wait(|v| v["type"] == "entry_appended" && v["entry"]["type"] == "usage");
    let entry = &appended["entry"];
    assert_eq!(entry["kind"], "cache_warm", "{entry}");
    assert_eq!(entry["provider"], "mock");
    assert_eq!(entry["model"], "mock-cache");
    assert_eq!(entry["usage"]["input"], 100000);
    let entry = entry.clone();
    let settled = pi.seen.iter().position(|v| v["type"] == "agent_settled");
    let warmed = pi.seen.len() - 1;
    assert!(settled.is_some_and(|s| s < warmed), "warmed once idle");
    // The reply is no message and no event of the conversation.
    assert!(!pi.seen[settled.unwrap()..]
        .iter()
        .any(|v| v["type"] == "message_start"));
    let requests = pi.mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1]["max_completion_tokens"], 1, "{}", requests[1]);
    assert_eq!(requests[1]["messages"], requests[0]["messages"]);
    let messages = pi.call("m", json!({"type": "get_messages"}));
    assert_eq!(messages["data"]["messages"].as_array().unwrap().len(), 3);
    // The last entry, the answer's child.
    let all = pi.call("e", json!({"type": "get_entries"}));
    let entries = all["data"]["entries"].as_array().unwrap();
    let (last, before) = (&entries[entries.len() - 1], &entries[entries.len() - 2]);
    assert_eq!(*last, entry);
    assert_eq!(before["message"]["role"], "assistant", "{before}");
    assert_eq!(entry["parentId"], before["id"]);
    assert_eq!(pi.finish(), 0);

    let recorded = std::fs::read_to_string(&cassette).unwrap();
    assert!(
        recorded.contains(r#""cacheWarming""#),
        "the run's settings are recorded"
    );
    // The replay is answered from the recording, the wait included: no model, no clock.
    let (code, stderr) = replay_check(&cassette);
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn a_warm_is_off_when_the_global_setting_says_so() {
    let mock = MockLlm::start(&script());
    let env = env_with_cache_model(&mock);
    env.write_agent("settings.json", r#"{"cacheWarming": "off"}"#);
    let args = [
        "--provider",
        "mock",
        "--model",
        "mock-cache",
        "--mode",
        "rpc",
    ];
    let mut pi = Pi::start_in(env, mock, &args);
    pi.call("p1", json!({"type": "prompt", "message": "Hi"}));
    pi.wait_type("agent_settled");
    // Well past the 2 s delay: a `get_state` answered after it shows nothing was sent.
    std::thread::sleep(std::time::Duration::from_millis(2500));
    pi.call("s", json!({"type": "get_state"}));
    assert_eq!(pi.mock.requests().len(), 1);
    assert!(!pi.seen.iter().any(|v| v["entry"]["type"] == "usage"));
    assert_eq!(pi.finish(), 0);
}

#[test]
fn print_mode_never_warms() {
    let mock = MockLlm::start(&script());
    let env = env_with_cache_model(&mock);
    let out = env.run(&["--provider", "mock", "--model", "mock-cache", "-p", "Hi"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(mock.requests().len(), 1);
}
