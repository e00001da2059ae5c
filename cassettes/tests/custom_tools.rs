//! A custom tool's calls are effects like a built-in's: a real one (it writes a file in a temp
//! workspace and streams two updates) recorded into a cassette over real HTTP against the mock
//! LLM; the cassette replayed with no tool registered gives the recorded events byte for byte
//! and runs nothing; replayed with the tools run again (`--tools live`) it runs the registered
//! tool in the replay's workspace; a hybrid replay that diverges goes on live and runs the
//! registered tool for real; and a program that did not register the tool is told which one is
//! missing instead of running a built-in or nothing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pi_cassettes::read::Cassette;
use pi_cassettes::replay::Replay;
use pi_cassettes::test_support::{
    mock_key, mock_model, prompt, record, replay, tool_events, WriteNote, NOTE,
};
use pi_cassettes::Hybrid;
use pi_core::agent_session::SessionInput;
use pi_effects::agent_session::SessionOptions;
use pi_effects::custom_tool::{missing_tool_message, CustomTool};
use pi_effects::driver::drive;
use pi_effects::run_config::{build_machine, RunConfig};
use pi_effects::tools::ToolEnv;
use pi_testkit::MockLlm;
use serde_json::{json, Value};

/// The mock's script for the recorded run: a call to `write_note`, then the answer.
fn recorded_script() -> Value {
    json!([
        {"tool_calls": [{"name": "write_note", "arguments": "{\"text\":\"hello note\"}"}]},
        {"text": ["Noted."]},
    ])
}

fn take_a_note() -> SessionInput {
    prompt("Take a note.")
}

/// Records the run of [`take_a_note`] against `mock` (whose script starts with
/// [`recorded_script`]) with `write_note` registered, in `workspace`; the cassette's path and
/// the run's events, one JSON line each.
async fn record_note(dir: &Path, workspace: &Path, mock: &MockLlm) -> (PathBuf, Vec<String>) {
    let mut options = SessionOptions::new(workspace, mock_model(mock), mock_key());
    options.agent_dir = dir.join("agent");
    options.tools = vec!["read".into()];
    options.custom_tools.register(Arc::new(WriteNote::new()));
    let config = options.run_config(0).unwrap();
    assert_eq!(
        config.custom_tools,
        vec![WriteNote::new().definition().clone()]
    );
    let cassette = dir.join("custom.jsonl");
    let events = record(&cassette, options, take_a_note(), None).await;
    (cassette, events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_tools_call_is_recorded_and_replays_byte_for_byte_without_the_tool() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("work");
    std::fs::create_dir_all(&workspace).unwrap();
    let mock = MockLlm::start(&recorded_script());
    let (cassette, recorded) = record_note(dir.path(), &workspace, &mock).await;
    // The tool ran for real and streamed its two updates.
    assert_eq!(
        std::fs::read_to_string(workspace.join(NOTE)).unwrap(),
        "hello note"
    );
    let tools = tool_events(&recorded);
    assert_eq!(tools.len(), 4, "{tools:#?}");
    assert!(tools[1].contains("opening") && tools[2].contains("written"));
    assert!(tools[3].contains("Wrote 10 bytes"));
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(text.contains("\"customTools\":[{\"name\":\"write_note\""));
    // The first request declares the tool and lists it in the system prompt by its snippet.
    let request = text
        .lines()
        .find(|line| line.contains("\"type\":\"request\""))
        .unwrap();
    let line: Value = serde_json::from_str(request).unwrap();
    let body = &line["body"];
    let declared = body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect::<Vec<_>>();
    assert_eq!(declared, ["read", "write_note"]);
    assert!(body["messages"][0]["content"]
        .as_str()
        .unwrap()
        .contains("- write_note: Write a note\n"));

    // Replayed with no registry and no live tools: the recorded events, and nothing runs.
    std::fs::remove_file(workspace.join(NOTE)).unwrap();
    let (replayed, ended) = replay(&cassette, take_a_note(), |r| r).await;
    assert_eq!(ended, Ok(()));
    assert_eq!(replayed, recorded);
    assert!(!workspace.join(NOTE).exists(), "a replay ran the tool");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_live_runs_the_registered_custom_tool_in_the_replays_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("work");
    std::fs::create_dir_all(&workspace).unwrap();
    let mock = MockLlm::start(&recorded_script());
    let (cassette, recorded) = record_note(dir.path(), &workspace, &mock).await;
    let scratch = dir.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let mut env = ToolEnv::new(&scratch);
    env.custom.register(Arc::new(WriteNote::new()));
    let (replayed, ended) = replay(&cassette, take_a_note(), |r| r.with_live_tools_env(env)).await;
    assert_eq!(ended, Ok(()));
    assert_eq!(
        std::fs::read_to_string(scratch.join(NOTE)).unwrap(),
        "hello note"
    );
    assert_eq!(tool_events(&replayed), tool_events(&recorded));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_live_without_the_tool_registered_says_which_tool_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("work");
    std::fs::create_dir_all(&workspace).unwrap();
    let mock = MockLlm::start(&recorded_script());
    let (cassette, _) = record_note(dir.path(), &workspace, &mock).await;
    let scratch = dir.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let (replayed, ended) = replay(&cassette, take_a_note(), |r| r.with_live_tools(&scratch)).await;
    // The result the model would now see differs from the recorded one: a divergence.
    assert!(ended.is_err());
    let missing = serde_json::to_string(&missing_tool_message("write_note")).unwrap();
    let missing = missing.trim_matches('"');
    assert!(
        tool_events(&replayed)
            .iter()
            .any(|e| e.contains("tool_execution_end") && e.contains(missing)),
        "{replayed:#?}"
    );
    assert!(!scratch.join(NOTE).exists());
}

/// A hybrid replay of the cassette given another prompt diverges at once and goes on live: the
/// model (asked for real) calls the custom tool again, and the tool registered with the live
/// interpreter runs for real in its workspace. Without it registered, the call fails naming it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hybrid_replay_runs_the_registered_custom_tool_after_its_divergence() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("work");
    std::fs::create_dir_all(&workspace).unwrap();
    let mut script = recorded_script().as_array().unwrap().clone();
    for _ in 0..2 {
        script.push(json!({"tool_calls": [{"name": "write_note", "arguments": "{\"text\":\"second note\"}"}]}));
        script.push(json!({"text": ["Noted again."]}));
    }
    let mock = MockLlm::start(&Value::Array(script));
    let (cassette, _) = record_note(dir.path(), &workspace, &mock).await;
    let another = prompt("Take another note.");
    for registered in [true, false] {
        let scratch = dir.path().join(format!("live-{registered}"));
        std::fs::create_dir_all(&scratch).unwrap();
        let mut options = SessionOptions::new(&scratch, mock_model(&mock), mock_key());
        options.agent_dir = dir.path().join("agent");
        if registered {
            options.custom_tools.register(Arc::new(WriteNote::new()));
        }
        let loaded = Arc::new(Cassette::load(&cassette).unwrap());
        let config: RunConfig = loaded.config.clone();
        let store = loaded.starting_session(&config, &scratch).unwrap();
        let (mut machine, mut file) = build_machine(&config, store).unwrap();
        let live = options
            .live()
            .unwrap()
            .for_run(config.seed, config.started_at);
        let mut io = Hybrid::new(Replay::new(loaded).unwrap(), live, None);
        let mut events = Vec::new();
        drive(&mut machine, &mut io, &mut file, another.clone(), |e| {
            events.push(pi_core::json::to_string(e).unwrap());
        })
        .await
        .unwrap();
        assert_eq!(io.went_live_at(), Some(1));
        let end = tool_events(&events)
            .into_iter()
            .find(|e| e.contains("tool_execution_end"))
            .unwrap()
            .clone();
        if registered {
            assert!(end.contains("Wrote 11 bytes"), "{end}");
            assert_eq!(
                std::fs::read_to_string(scratch.join(NOTE)).unwrap(),
                "second note"
            );
        } else {
            let missing = serde_json::to_string(&missing_tool_message("write_note")).unwrap();
            assert!(end.contains(missing.trim_matches('"')), "{end}");
            assert!(!scratch.join(NOTE).exists());
        }
    }
    // The recording's workspace holds only the recorded run's note.
    assert_eq!(
        std::fs::read_to_string(workspace.join(NOTE)).unwrap(),
        "hello note"
    );
}
