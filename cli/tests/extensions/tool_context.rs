//! An extension's registered tool gets Pi's whole context (`ctx.model`, `ctx.isIdle()`, the
//! session manager's reads) and acts while it runs: its `pi.appendEntry` is written at once,
//! between the call's start and its end, and the run, recorded, replays byte for byte with no
//! Node on PATH (the actions are answers in the cassette).

use serde_json::json;

use crate::common::{Env, MockLlm};
use crate::support::{
    assert_replays_without_node, fixture, json_lines, node_path, run, with_extension, with_host,
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
    let events = json_lines(&recorded);
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

/// A registered tool's dialog tells every extension, as a hook's does (case `tool_dialog`):
/// the listener hears `ui_prompt_start` and `ui_prompt_end` around the client's answer, and
/// the entry it writes reaches the session before the tool's result. The recording replays
/// with no Node and no client.
#[test]
fn a_tools_dialog_is_heard_by_every_extension_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let case = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/tool_dialog");
    let script = json!([
        {"tool_calls": [{"name": "deploy", "arguments": "{\"target\":\"staging\"}"}]},
        {"text": ["Deployed."]},
    ]);
    let mock = MockLlm::start(&script);
    let env = Env::new(&mock);
    let cassette = env.path("tool_dialog.jsonl");
    let mut command = env.rpc_command();
    for extension in ["extension.ts", "listener.ts"] {
        command.args(["-e", case.join(extension).to_str().unwrap()]);
    }
    command.args(["--record", cassette.to_str().unwrap()]);
    with_host(&mut command, &path);
    let (recorded, lines) = crate::support::drive_rpc_with_ui(&mut command, "deploy it");
    let order: Vec<String> = lines
        .iter()
        .filter_map(|line| match line["type"].as_str() {
            Some("extension_ui_request") => line["message"].as_str().map(str::to_owned),
            Some("entry_appended") => Some(format!("entry {}", line["entry"]["customType"])),
            Some("tool_execution_end") => {
                Some(format!("end {}", line["result"]["content"][0]["text"]))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        order,
        [
            "staging",
            "heard ui_prompt_start confirm Deploy?",
            "heard ui_prompt_end confirm Deploy?",
            r#"entry "heard""#,
            r#"end "deployed staging""#,
        ],
        "{recorded}"
    );
    assert_replays_without_node(&env, &cassette, &recorded);
}
