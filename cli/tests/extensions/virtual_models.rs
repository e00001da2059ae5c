//! Virtual models an extension registers (`pi.registerVirtualModel`): listed among the models,
//! selectable, and each request routed by the extension's router to a physical model.

use serde_json::json;

use crate::common::{Env, MockLlm};
use crate::support::{
    assert_chaos_without_node, assert_replays_without_node, fixture, node_path, run, with_host,
};

/// A virtual model is in `--list-models`, with its limits and thinking, as Pi 1.5.2 lists it;
/// a run on another model goes on without a word about it.
#[test]
fn a_virtual_model_is_listed_and_a_run_on_another_model_says_nothing_of_it() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["done"]}]));
    let env = Env::new(&mock);
    let extension = fixture("virtual_model.ts");
    let mut command = env.command(&["-e", extension.to_str().unwrap(), "--list-models", "auto"]);
    with_host(&mut command, &path);
    let (code, stdout, stderr) = run(&mut command);
    assert_eq!((code, stderr.as_str()), (0, ""), "{stdout}");
    let row: Vec<&str> = stdout
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        row,
        ["router", "auto", "100K", "8K", "yes", "yes"],
        "{stdout}"
    );
    let mut command = crate::support::with_extension(&env, &[], &extension, "hi");
    with_host(&mut command, &path);
    let (code, stdout, stderr) = run(&mut command);
    assert_eq!((code, stdout.as_str(), stderr.as_str()), (0, "done\n", ""));
}

/// A run on a virtual model is recorded with its router's answers: each request goes to the
/// physical model the router named, the router's state is written before it, and the replay,
/// with no Node, routes as the recording did and reproduces the run and its session file (and
/// keeps every invariant under chaos).
#[test]
fn a_routed_run_is_recorded_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let (mock, env, cassette, recorded) = record_routed(&path, "virtual_model.ts");
    let models: Vec<_> = mock.requests().iter().map(|r| r["model"].clone()).collect();
    assert_eq!(
        models,
        [json!("mock-model"), json!("mock-model")],
        "{recorded}"
    );
    let states: Vec<&str> = recorded
        .lines()
        .filter(|l| l.contains("pi.virtual-model-state"))
        .collect();
    assert_eq!(states.len(), 2, "{recorded}");
    assert!(
        states[1].contains(r#""routed":["user","continuation"]"#),
        "{}",
        states[1]
    );
    assert!(
        recorded.contains(r#""provider":"mock","model":"mock-model""#),
        "the responses do not name the physical model: {recorded}"
    );
    assert_replays_without_node(&env, &cassette, &recorded);
    assert_chaos_without_node(&env, &cassette);
    assert_eq!(mock.requests().len(), 2, "the replay sent a request");

    // Run again live, the router decides again, as it did.
    let mut live = std::process::Command::new(env!("CARGO_BIN_EXE_pi"));
    live.args(["replay", cassette.to_str().unwrap(), "--extensions", "live"]);
    with_host(live.env("HOME", env.path("home")), &path);
    let (code, replayed, stderr) = run(&mut live);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(replayed, recorded);
}

/// A routed run with a `context` handler: each request is routed first, from the conversation
/// before the handler, and the handler then sees it once and changes what goes to the physical
/// model (Pi 1.5.2 routes in `prepareRequest`, before `transformContext`); the replay, with no
/// Node, does the same.
#[test]
fn a_routed_request_asks_context_after_routing_once_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let (mock, env, cassette, recorded) = record_routed(&path, "virtual_model_context.ts");
    let logged: Vec<String> = recorded
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|e| e["type"] == "entry_appended")
        .filter_map(|e| {
            let entry = &e["entry"];
            Some(format!(
                "{} {}",
                entry["customType"].as_str()?,
                entry["data"]
            ))
        })
        .collect();
    assert_eq!(
        logged,
        [
            r#"routed {"reason":"user","messages":2}"#,
            r#"context {"call":1}"#,
            r#"routed {"reason":"continuation","messages":4}"#,
            r#"context {"call":2}"#,
        ],
        "{recorded}"
    );
    let last_texts: Vec<String> = mock
        .requests()
        .iter()
        .map(|r| {
            r["messages"]
                .as_array()
                .and_then(|m| m.last())
                .map_or(String::new(), |m| m["content"].to_string())
        })
        .collect();
    assert!(
        last_texts[0].contains("note 1") && last_texts[1].contains("note 2"),
        "the requests do not carry the context handler's note: {last_texts:?}"
    );
    assert_replays_without_node(&env, &cassette, &recorded);
    assert_eq!(mock.requests().len(), 2, "the replay sent a request");
}

/// A virtual model registered once the extensions have loaded (a `session_start` handler) and
/// selected there is routed as one registered while loading: the request goes to the physical
/// model its router names, and the replay, with no Node, has it in its catalog from the
/// recorded registration and routes as the recording did.
#[test]
fn a_virtual_model_registered_after_loading_is_routed_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Routed late."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("late.jsonl");
    let extension = fixture("late_virtual_model.ts");
    let mut command = env.command(&[
        "--mode",
        "json",
        "--record",
        cassette.to_str().unwrap(),
        "-e",
        extension.to_str().unwrap(),
        "-p",
        "Go.",
    ]);
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{recorded}{stderr}");
    assert!(!recorded.contains("extension_error"), "{recorded}");
    let models: Vec<_> = mock.requests().iter().map(|r| r["model"].clone()).collect();
    assert_eq!(models, [json!("mock-reasoner")], "{recorded}");
    assert!(
        recorded.contains(r#""customType":"late-routed","data":{"reason":"user"}"#),
        "{recorded}"
    );
    assert_replays_without_node(&env, &cassette, &recorded);
    assert_eq!(mock.requests().len(), 1, "the replay sent a request");
}

/// Records a json run on the virtual model `router/auto` of the fixture extension `fixture`
/// (the extension host on Node at `node`), whose model reads `a.txt` and answers: the mock, the
/// environment, the cassette and the output.
fn record_routed(node: &str, fixture_name: &str) -> (MockLlm, Env, std::path::PathBuf, String) {
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"id": "call_1", "name": "read", "arguments": {"path": "a.txt"}}]},
        {"text": ["It says alpha."]},
    ]));
    let env = Env::new(&mock);
    std::fs::write(env.cwd().join("a.txt"), "alpha\n").unwrap();
    let cassette = env.path("routed.jsonl");
    let extension = fixture(fixture_name);
    let mut command = env.command(&[
        "--mode",
        "json",
        "--record",
        cassette.to_str().unwrap(),
        "--provider",
        "router",
        "--model",
        "auto",
        "-e",
        extension.to_str().unwrap(),
        "-p",
        "What does a.txt say?",
    ]);
    with_host(&mut command, node);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{recorded}{stderr}");
    (mock, env, cassette, recorded)
}
