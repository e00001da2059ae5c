//! `get_session_stats` as Pi 1.5.2's `getSessionStats`, on the session file of the kit's
//! `session_stats_152` scenario (a compaction, a branch summary, a cache-warming `usage` entry, a
//! tool result with usage, an abandoned branch and a context edit): the answers before and after
//! a prompt must equal the ones 1.5.2 gave on the same file, read from the scenario's trace.

use serde_json::{json, Value};

use super::super::common::{Env, MockLlm};
use super::super::Pi;

/// The scenario's definition and its 1.5.2 answers to `get_session_stats`, by request id.
fn scenario() -> (Value, Vec<(String, Value)>) {
    let kit = pi_testkit::kit_dir().join("scenarios-1.5.2");
    let text = std::fs::read_to_string(kit.join("session_stats_152.json")).unwrap();
    let scenario: Value = serde_json::from_str(&text).unwrap();
    let trace = std::fs::read_to_string(kit.join("traces/session_stats_152/stdout.jsonl")).unwrap();
    let answers = trace
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|v| v["command"] == "get_session_stats")
        .map(|v| (v["id"].as_str().unwrap().to_owned(), v["data"].clone()))
        .collect();
    (scenario, answers)
}

/// Stats without the file's path (the trace names the scenario's folder).
fn without_file(mut data: Value) -> Value {
    data.as_object_mut().unwrap().remove("sessionFile");
    data
}

#[test]
fn session_stats_add_every_entrys_usage_and_estimate_the_projected_context_as_1_5_2() {
    let (scenario, answers) = scenario();
    assert_eq!(answers.len(), 2, "the trace answers t0 and t1");
    let mock = MockLlm::start(&scenario["script"]);
    let env = Env::new(&mock);
    let cwd = env.cwd().display().to_string();
    let fixture = scenario["fixtures"]["stats.jsonl"]
        .as_str()
        .unwrap()
        .replace("{CWD}", &cwd);
    let file = env.path("stats.jsonl");
    std::fs::write(&file, fixture).unwrap();
    let file = file.display().to_string();
    let mut pi = Pi::start_in(
        env,
        mock,
        &[
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--mode",
            "rpc",
            "--session",
            &file,
        ],
    );
    let before = pi.call("t0", json!({"type": "get_session_stats"}));
    assert_eq!(before["data"]["sessionFile"], json!(file));
    assert_eq!(
        without_file(before["data"].clone()),
        without_file(answers[0].1.clone())
    );
    pi.send(json!({"id": "p1", "type": "prompt", "message": "Go on"}));
    pi.wait_type("agent_settled");
    let after = pi.call("t1", json!({"type": "get_session_stats"}));
    assert_eq!(
        without_file(after["data"].clone()),
        without_file(answers[1].1.clone())
    );
    assert_eq!(pi.finish(), 0);
}
