//! A cassette of a run that used a custom tool (one that writes a file), through the real
//! binary, which registers no custom tool: `pi replay` answers the call from the cassette and
//! writes nothing on the host, also under `--config current` (which keeps the recorded tools'
//! declarations); `pi replay --tools live` refuses before running anything, naming the tool it
//! does not have.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use pi_cassettes::format::{Header, Line, RecordedOutcome, SessionKind, SessionStart};
use pi_cassettes::{recording_transport, sha256_hex, Record, Recorder, FORMAT_VERSION};
use pi_core::agent_session::SessionInput;
use pi_core::event::ToolResult;
use pi_core::message::ContentBlock;
use pi_core::model::Model;
use pi_core::session::ids::IdGenerator;
use pi_effects::agent_session::SessionOptions;
use pi_effects::clock::{now_ms, Clock, SystemClock};
use pi_effects::custom_tool::{
    CustomTool, CustomToolDefinition, ToolCallContext, ToolFuture, ToolRegistry,
};
use pi_effects::driver::{drive, Interpreter};
use pi_effects::run_config::build_machine;
use pi_effects::session::SessionStore;
use pi_providers::CallOptions;
use pi_testkit::MockLlm;
use serde_json::{json, Value};

const NOTE: &str = "note.txt";

/// Writes `text` to `note.txt` in the session's directory, saying so twice on the way.
struct WriteNote {
    definition: CustomToolDefinition,
}

impl WriteNote {
    fn new() -> Self {
        let mut definition = CustomToolDefinition::new(
            "write_note",
            "Writes a note to note.txt.",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        );
        definition.prompt_snippet = Some("Write a note".into());
        WriteNote { definition }
    }
}

fn text_result(text: &str, details: Value) -> ToolResult {
    ToolResult {
        content: vec![ContentBlock::text(text)],
        details: Some(details),
        ..ToolResult::error("")
    }
}

impl CustomTool for WriteNote {
    fn definition(&self) -> &CustomToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, args: Value, cx: ToolCallContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let text = args["text"].as_str().ok_or("text is not a string")?;
            cx.update(text_result("opening", json!({"step": 1})));
            let path = cx.cwd.join(NOTE);
            std::fs::write(&path, text).map_err(|e| e.to_string())?;
            cx.update(text_result("written", json!({"step": 2})));
            Ok(text_result(
                &format!("Wrote {} bytes", text.len()),
                json!({"call": cx.tool_call_id}),
            ))
        })
    }
}

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

/// Records a run in `workspace` whose model calls `write_note` once, then answers; the
/// cassette's path and the run's events, one JSON line each.
async fn record(dir: &Path, workspace: &Path) -> (PathBuf, Vec<String>) {
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "write_note", "arguments": "{\"text\":\"hello note\"}"}]},
        {"text": ["Noted."]},
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
    let mut registry = ToolRegistry::new();
    registry.register(Arc::new(WriteNote::new()));
    options.custom_tools = registry;
    let started_at = now_ms();
    options.seed = Some(started_at);
    let config = options.run_config(started_at).unwrap();
    assert_eq!(config.custom_tools, vec![WriteNote::new().definition]);
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
        // The command line that `--config current` reads again: the binary registers no custom
        // tool, so the recorded ones are the only ones it can know of.
        command: Some(
            [
                "--mode",
                "json",
                "--no-session",
                "--provider",
                "mock",
                "--model",
                "mock-model",
                "--thinking",
                "off",
                "--tools",
                "read",
                "-p",
                "Take a note.",
            ]
            .map(str::to_owned)
            .to_vec(),
        ),
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
        text: "Take a note.".into(),
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

fn pi_replay(args: &[&str], cassette: &Path) -> std::process::Output {
    let home = cassette.with_file_name("home");
    Command::new(env!("CARGO_BIN_EXE_pi"))
        .env("HOME", &home)
        .env("PI_CODING_AGENT_DIR", cassette.with_file_name("agent"))
        .arg("replay")
        .args(args)
        .arg(cassette)
        .output()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_replays_a_custom_tools_call_from_the_cassette_and_runs_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("work");
    std::fs::create_dir_all(&workspace).unwrap();
    let (cassette, recorded) = record(dir.path(), &workspace).await;
    std::fs::remove_file(workspace.join(NOTE)).unwrap();

    let out = pi_replay(&[], &cassette);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let end = recorded
        .iter()
        .find(|e| e.contains("\"type\":\"tool_execution_end\""))
        .unwrap();
    assert!(stdout.lines().any(|line| line == end), "{stdout}");
    assert!(!workspace.join(NOTE).exists(), "the replay ran the tool");

    let scratch = dir.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let out = pi_replay(
        &["--tools", "live", "--workspace", scratch.to_str().unwrap()],
        &cassette,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("custom tools this program does not register (write_note)"),
        "{stderr}"
    );
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!scratch.join(NOTE).exists() && !workspace.join(NOTE).exists());
}

/// `--config current` rebuilds the run's configuration from the recorded command line; the
/// binary has no custom tool of its own, so the recorded tools' declarations are kept: the
/// request declares them as the run did and the replay does not diverge.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_under_todays_configuration_keeps_the_recorded_custom_tools() {
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("work");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::create_dir_all(dir.path().join("home")).unwrap();
    let (cassette, recorded) = record(dir.path(), &workspace).await;
    std::fs::remove_file(workspace.join(NOTE)).unwrap();

    let out = pi_replay(
        &[
            "--config",
            "current",
            "--workspace",
            workspace.to_str().unwrap(),
        ],
        &cassette,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let end = recorded
        .iter()
        .find(|e| e.contains("\"type\":\"tool_execution_end\""))
        .unwrap();
    assert!(stdout.lines().any(|line| line == end), "{stdout}");
    assert!(!workspace.join(NOTE).exists(), "the replay ran the tool");

    // Declared is not registered: running the tools again is still refused.
    let scratch = dir.path().join("scratch");
    std::fs::create_dir_all(&scratch).unwrap();
    let out = pi_replay(
        &[
            "--config",
            "current",
            "--tools",
            "live",
            "--workspace",
            scratch.to_str().unwrap(),
        ],
        &cassette,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("(write_note)"), "{stderr}");
    assert!(!scratch.join(NOTE).exists());
}
