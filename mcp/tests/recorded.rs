//! MCP tools as custom tools, recorded and replayed: a run whose model calls a tool of the
//! crate's test server (started as a real process from a copy of its binary) is recorded into a
//! cassette over real HTTP against the mock LLM; the server's tools are the cassette's
//! `customTools`; the copy of the server is then deleted and the cassette replays byte for byte
//! without it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pi_cassettes::format::{Header, Line, RecordedOutcome, SessionKind, SessionStart};
use pi_cassettes::read::Cassette;
use pi_cassettes::replay::Replay;
use pi_cassettes::{recording_transport, sha256_hex, Record, Recorder, FORMAT_VERSION};
use pi_core::agent_session::SessionInput;
use pi_core::model::Model;
use pi_core::session::ids::IdGenerator;
use pi_effects::agent_session::SessionOptions;
use pi_effects::clock::{now_ms, Clock, SystemClock};
use pi_effects::custom_tool::ToolRegistry;
use pi_effects::driver::{drive, Interpreter};
use pi_effects::run_config::{build_machine, RunConfig};
use pi_effects::session::SessionStore;
use pi_mcp::config::{validate_server, Scope};
use pi_mcp::{register_direct_tools, McpConnection, ServerEntry};
use pi_providers::CallOptions;
use pi_testkit::MockLlm;
use serde_json::json;

fn model(mock: &MockLlm) -> Model {
    Model {
        id: "mock-model".into(),
        name: "Mock Model".into(),
        api: "openai-completions".into(),
        provider: "mock".into(),
        base_url: mock.url("/v1"),
        input: vec!["text".into()],
        context_window: 128_000,
        max_tokens: 16_384,
        ..Model::default()
    }
}

/// Records a run in `workspace` whose model calls the MCP server's `echo` once, then answers;
/// the cassette's path and the run's events, one JSON line each.
async fn record(dir: &Path, workspace: &Path, server: &Path) -> (PathBuf, Vec<String>) {
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "mcp__t__echo", "arguments": "{\"text\":\"hello mcp\"}"}]},
        {"text": ["Echoed."]},
    ]));
    let credentials = Arc::new(|_: &_| {
        Ok(CallOptions {
            api_key: "mock-key".into(),
            ..CallOptions::default()
        })
    });
    let mut options = SessionOptions::new(workspace, model(&mock), credentials);
    options.agent_dir = dir.join("agent");
    options.tools = vec!["read".into()];
    let (config, transport) =
        validate_server("t", json!({"command": server, "exposure": "direct"})).unwrap();
    let entry = ServerEntry {
        name: "t".into(),
        config,
        transport,
        source: "mcp.json".into(),
        scope: Scope::Global,
        override_path: None,
    };
    let connection = Arc::new(McpConnection::connect(&entry, workspace).await.unwrap());
    let mut registry = ToolRegistry::new();
    let declared = register_direct_tools(&mut registry, connection);
    assert_eq!(declared.len(), 7);
    options.custom_tools = registry;
    let started_at = now_ms();
    options.seed = Some(started_at);
    let config = options.run_config(started_at).unwrap();
    assert_eq!(config.custom_tools, declared);
    let store = SessionStore::in_memory(&config.cwd, started_at, IdGenerator::new(config.seed));
    let header = Header {
        format: FORMAT_VERSION,
        features: Vec::new(),
        harness: env!("CARGO_PKG_VERSION").into(),
        pi: pi_cassettes::PI_EDITION.into(),
        mode: "json".into(),
        config: pi_cassettes::convert::to_json(&config),
        session: SessionStart {
            kind: SessionKind::Memory,
            file: None,
            path: None,
            content: None,
            content_file: None,
            id_state: store.id_state(),
        },
        redactions: vec!["api keys".into()],
        redact: None,
        models: None,
        scoped_models: Vec::new(),
        command: None,
        imported: None,
    };
    let cassette = dir.join("custom.jsonl");
    let recorder = Recorder::create(&cassette, &header, &[], Default::default()).unwrap();
    let (mut machine, mut file) = build_machine(&config, store).unwrap();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let live = options
        .live()
        .unwrap()
        .for_run(config.seed, config.started_at)
        .with_call_transport(recording_transport(recorder.clone(), clock));
    let mut io = Record::new(live, recorder.clone());
    let events = run(&mut machine, &mut io, &mut file).await;
    let stdout: String = events.iter().map(|e| format!("{e}\n")).collect();
    recorder.write(Line::Outcome(RecordedOutcome {
        exit: 0,
        stdout: sha256_hex(stdout.as_bytes()),
        session: None,
        events: None,
        stdout_text: None,
        events_text: None,
        session_text: None,
        updates_omitted: false,
    }));
    assert!(recorder.failure().is_none());
    (cassette, events)
}

fn prompt() -> SessionInput {
    SessionInput::Prompt {
        text: "Echo something.".into(),
        images: Vec::new(),
        streaming_behavior: None,
    }
}

async fn run<I: Interpreter>(
    machine: &mut pi_core::agent_session::SessionMachine,
    io: &mut I,
    file: &mut pi_effects::session::SessionFile,
) -> Vec<String> {
    let mut events = Vec::new();
    drive(machine, io, file, prompt(), |e| {
        events.push(pi_core::json::to_string(e).unwrap());
    })
    .await
    .unwrap();
    events
}

/// Replays `cassette` as `configure` sets the replay up; its events and how it ended.
async fn replay(
    cassette: &Path,
    configure: impl FnOnce(Replay) -> Replay,
) -> (Vec<String>, Result<(), String>) {
    let cassette = Arc::new(Cassette::load(cassette).unwrap());
    let config: RunConfig = cassette.config.clone();
    let scratch = tempfile::tempdir().unwrap();
    let store = cassette.starting_session(&config, scratch.path()).unwrap();
    let (mut machine, mut file) = build_machine(&config, store).unwrap();
    let mut io = configure(Replay::new(cassette).unwrap());
    let mut events = Vec::new();
    let driven = drive(&mut machine, &mut io, &mut file, prompt(), |e| {
        events.push(pi_core::json::to_string(e).unwrap());
    })
    .await;
    let ended = match driven {
        Ok(_) => io.finish().map_err(|d| d.to_string()),
        Err(error) => Err(format!("{error:?}")),
    };
    (events, ended)
}

fn tool_events(events: &[String]) -> Vec<&String> {
    events
        .iter()
        .filter(|e| e.contains("\"type\":\"tool_execution_"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_tools_call_is_recorded_and_replays_byte_for_byte_without_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("work");
    std::fs::create_dir_all(&workspace).unwrap();
    let server = dir.path().join("mcp-server");
    std::fs::copy(env!("CARGO_BIN_EXE_pi-mcp-test-server"), &server).unwrap();
    let (cassette, recorded) = record(dir.path(), &workspace, &server).await;
    let tools = tool_events(&recorded);
    assert_eq!(tools.len(), 2, "{tools:#?}");
    assert!(
        tools[1].contains("tool_execution_end") && tools[1].contains("hello mcp"),
        "{tools:#?}"
    );
    assert!(
        tools[1].contains("\"details\":{\"server\":\"t\",\"tool\":\"echo\"}"),
        "{tools:#?}"
    );
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(text.contains("\"customTools\":[{\"name\":\"mcp__t__echo\",\"label\":\"t/echo\""));

    std::fs::remove_file(&server).unwrap();
    let (replayed, ended) = replay(&cassette, |r| r).await;
    assert_eq!(ended, Ok(()));
    assert_eq!(replayed, recorded);
}
