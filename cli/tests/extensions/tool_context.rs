//! An extension's registered tool gets Pi's whole context (`ctx.model`, `ctx.isIdle()`, the
//! session manager's reads) and acts while it runs: its `pi.appendEntry` is written at once,
//! between the call's start and its end, and the run, recorded, replays byte for byte with no
//! Node on PATH (the actions are answers in the cassette).

use serde_json::{json, Value};

use crate::common::{Env, MockLlm};
use crate::support::{
    assert_replays_without_node, fixture, node_path, run, with_extension, with_host,
};

#[test]
fn a_tools_context_reads_the_session_and_its_actions_land_before_its_result_and_replay_without_node(
) {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "inspect", "arguments": "{}"}]},
        {"text": ["Inspected."]},
    ]));
    let env = Env::new(&mock);
    let cassette = env.path("inspect.jsonl");
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &fixture("inspect.ts"),
        "Inspect.",
    );
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    let events: Vec<Value> = recorded
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|e| e["type"].as_str())
        .filter(|t| {
            t.starts_with("tool_execution")
                || *t == "entry_appended"
                || *t == "session_info_changed"
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "tool_execution_start",
            "tool_execution_update",
            "entry_appended",
            "tool_execution_end",
        ],
        "{recorded}"
    );
    let end = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(end["isError"], json!(false), "{end}");
    assert_eq!(
        end["result"]["details"],
        json!({
            "model": "mock-model",
            "idle": false,
            "branch": ["model_change", "thinking_level_change", "message", "message", "message", "custom"],
            "leafIsMine": true,
        })
    );
    let written = std::fs::read_to_string(&cassette).unwrap();
    assert_eq!(
        written.matches("\"tool_acted\"").count(),
        1,
        "the action is an answer in the cassette"
    );

    assert_replays_without_node(&env, &cassette, &recorded);
}
