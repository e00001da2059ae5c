//! An extension tool's nested calls (`ctx.executeTool`, case `nested_tool_calls`): the built-in
//! `read` runs for real, the extension's own `shout` runs in the host, another extension's gate
//! blocks a nested `bash`, and the outer result carries the `nestedCalls` record. Recorded, the
//! run replays byte for byte with no Node on PATH: each nested call is an answer of the
//! cassette (`tool_nested`), its run an effect answered from it, and the outcome handed back an
//! `answer_nested` effect a replay checks.

use serde_json::{json, Value};

use crate::common::{Env, MockLlm};
use crate::support::{
    assert_replays_without_node, json_lines, node_path, run, with_extension, with_host,
};

#[test]
fn nested_calls_run_through_the_session_and_replay_without_node() {
    let Some(path) = node_path() else { return };
    let case = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/nested_tool_calls");
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "gather", "arguments": "{}"}]},
        {"text": ["Gathered."]},
    ]));
    let env = Env::new(&mock);
    std::fs::write(env.cwd().join("a.txt"), "alpha\n").unwrap();
    let cassette = env.path("nested.jsonl");
    let gate = case.join("gate.ts");
    let mut command = with_extension(
        &env,
        &[
            "--mode",
            "json",
            "--record",
            cassette.to_str().unwrap(),
            "-e",
            gate.to_str().unwrap(),
        ],
        &case.join("extension.ts"),
        "Gather.",
    );
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    let events = json_lines(&recorded);
    let outer = events
        .iter()
        .find(|e| e["type"] == "tool_execution_start")
        .unwrap()["toolCallId"]
        .as_str()
        .unwrap();
    let nested: Vec<String> = events
        .iter()
        .filter(|e| e["parentToolCallId"] == outer)
        .map(|e| {
            let id = e["toolCallId"].as_str().unwrap();
            format!("{} {}", e["type"].as_str().unwrap(), &id[outer.len()..])
        })
        .collect();
    assert_eq!(
        nested,
        [
            "tool_execution_start /1",
            "tool_execution_end /1",
            "tool_execution_start /2",
            "tool_execution_update /2",
            "tool_execution_end /2",
            "tool_execution_start /3",
            "tool_execution_end /3",
            "tool_execution_start /4",
            "tool_execution_end /4",
        ],
        "{recorded}"
    );
    let result = events
        .iter()
        .find(|e| e["type"] == "message_end" && e["message"]["role"] == "toolResult")
        .unwrap();
    let record = &result["message"]["nestedCalls"];
    assert_eq!(record["complete"], true, "{record}");
    let statuses: Vec<&str> = record["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["ok", "ok", "error", "error"]);
    let said: Value =
        serde_json::from_str(result["message"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(said["seen"][0]["text"], "alpha\n", "read ran for real");
    assert_eq!(said["seen"][2]["text"], format!("no bash from {outer}"));
    assert_eq!(
        said["tools"],
        json!(["read", "bash", "edit", "write", "shout", "gather"])
    );

    let written = std::fs::read_to_string(&cassette).unwrap();
    assert_eq!(written.matches("\"kind\":\"tool_nested\"").count(), 4);
    assert_eq!(written.matches("\"kind\":\"answer_nested\"").count(), 4);
    // The file the nested read read is gone: the replay answers it from the cassette.
    std::fs::remove_file(env.cwd().join("a.txt")).unwrap();
    assert_replays_without_node(&env, &cassette, &recorded);

    // A replay that would run the tools and extensions again is refused before it runs
    // anything (exit 125), naming the extension tools: their nested calls are never answered
    // from the recording, nor run anew in a way the recording does not hold.
    let mut command = env.command(&["replay", cassette.to_str().unwrap()]);
    command.args(["--tools", "live", "--extensions", "live"]);
    with_host(&mut command, &path);
    let (code, replayed, stderr) = run(&mut command);
    assert_eq!(code, 125, "{stderr}");
    assert!(replayed.is_empty(), "{replayed}");
    assert!(stderr.contains("(shout, gather)"), "{stderr}");
}
