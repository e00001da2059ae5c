//! What the test suites of several crates share to record a run through the library and replay
//! it: the kit's mock model, a custom tool that really writes a file, and the record and replay
//! of one prompt. Behind the `test-support` feature, which only dev-dependencies turn on: the
//! binary never carries it. Its helpers fail the test (panic) on any error, as assertions do.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use pi_core::agent_session::SessionInput;
use pi_core::event::ToolResult;
use pi_core::message::ContentBlock;
use pi_core::model::Model;
use pi_core::session::ids::IdGenerator;
use pi_effects::agent_session::SessionOptions;
use pi_effects::clock::{now_ms, Clock, SystemClock};
use pi_effects::custom_tool::{CustomTool, CustomToolDefinition, ToolCallContext, ToolFuture};
use pi_effects::driver::drive;
use pi_effects::live::CallOptionsFor;
use pi_effects::run_config::{build_machine, RunConfig};
use pi_effects::session::SessionStore;
use pi_providers::CallOptions;
use pi_testkit::MockLlm;
use serde_json::{json, Value};

use crate::format::{Header, Line, RecordedMode, RecordedOutcome, SessionKind, SessionStart};
use crate::read::Cassette;
use crate::replay::Replay;
use crate::{recording_transport, sha256_hex, Record, Recorder, FORMAT_VERSION};

/// The kit's `mock/mock-model` (OpenAI completions) as `mock` serves it.
pub fn mock_model(mock: &MockLlm) -> Model {
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

/// Every request's options: the key `mock-key` and nothing else.
pub fn mock_key() -> CallOptionsFor {
    Arc::new(|_: &_| {
        Ok(CallOptions {
            api_key: "mock-key".into(),
            ..CallOptions::default()
        })
    })
}

/// The file [`WriteNote`] writes in the session's directory.
pub const NOTE: &str = "note.txt";

/// A custom tool with an effect on the host: writes `text` to [`NOTE`] in the session's
/// directory, streaming two updates on the way.
#[derive(Debug)]
pub struct WriteNote {
    definition: CustomToolDefinition,
}

impl WriteNote {
    /// `write_note`, listed in the system prompt as "Write a note".
    pub fn new() -> Self {
        let mut definition = CustomToolDefinition::new(
            "write_note",
            "Writes a note to note.txt.",
            json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        );
        definition.prompt_snippet = Some("Write a note".into());
        WriteNote { definition }
    }
}

impl Default for WriteNote {
    fn default() -> Self {
        Self::new()
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

/// A prompt of `text`, with no image.
pub fn prompt(text: &str) -> SessionInput {
    SessionInput::Prompt {
        text: text.into(),
        images: Vec::new(),
        streaming_behavior: None,
    }
}

/// Records into `cassette` the run of `input` under `options` (in memory, seeded with its start
/// time, `--mode json`), as the binary would with `command` as its command line, its outcome
/// holding what `pi --mode json` prints (so `pi replay --check` reproduces it); the run's
/// events, one JSON line each. Fails the test if the run or the recording fails.
pub async fn record(
    cassette: &Path,
    mut options: SessionOptions,
    input: SessionInput,
    command: Option<Vec<String>>,
) -> Vec<String> {
    let started_at = now_ms();
    options.seed = Some(started_at);
    let config = options.run_config(started_at).unwrap();
    let store = SessionStore::in_memory(&config.cwd, started_at, IdGenerator::new(config.seed));
    let header = Header {
        format: FORMAT_VERSION,
        features: Vec::new(),
        harness: env!("CARGO_PKG_VERSION").into(),
        pi: crate::PI_EDITION.into(),
        mode: RecordedMode::Json,
        config: crate::convert::to_json(&config),
        session: SessionStart {
            kind: SessionKind::Memory,
            file: None,
            path: None,
            content: None,
            content_file: None,
            id_state: store.id_state(),
            id: None,
        },
        redactions: vec!["api keys".into()],
        redact: None,
        models: None,
        scoped_models: Vec::new(),
        command,
        imported: None,
        project_trust: None,
    };
    let recorder = Recorder::create(cassette, &header, &[], Default::default()).unwrap();
    let (mut machine, mut file) = build_machine(&config, store).unwrap();
    // `pi --mode json` prints the session header first.
    let header_line = pi_core::json::to_string(machine.tree().header()).unwrap();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let live = options
        .live()
        .unwrap()
        .for_run(config.seed, config.started_at)
        .with_call_transport(recording_transport(recorder.clone(), clock));
    let mut io = Record::new(live, recorder.clone());
    let mut events = Vec::new();
    drive(&mut machine, &mut io, &mut file, input, |e| {
        events.push(pi_core::json::to_string(e).unwrap());
    })
    .await
    .unwrap();
    let stdout: String = std::iter::once(&header_line)
        .chain(&events)
        .map(|line| format!("{line}\n"))
        .collect();
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
    events
}

/// Replays `cassette` on `input` as `configure` sets the replay up, in a scratch directory; its
/// events and how it ended (a divergence or a failed drive as text).
pub async fn replay(
    cassette: &Path,
    input: SessionInput,
    configure: impl FnOnce(Replay) -> Replay,
) -> (Vec<String>, Result<(), String>) {
    let cassette = Arc::new(Cassette::load(cassette).unwrap());
    let config: RunConfig = cassette.config.clone();
    let scratch = tempfile::tempdir().unwrap();
    let store = cassette.starting_session(&config, scratch.path()).unwrap();
    let (mut machine, mut file) = build_machine(&config, store).unwrap();
    let mut io = configure(Replay::new(cassette).unwrap());
    let mut events = Vec::new();
    let driven = drive(&mut machine, &mut io, &mut file, input, |e| {
        events.push(pi_core::json::to_string(e).unwrap());
    })
    .await;
    let ended = match driven {
        Ok(_) => io.finish().map_err(|d| d.to_string()),
        Err(error) => Err(format!("{error:?}")),
    };
    (events, ended)
}

/// The `tool_execution_*` events among `events`.
pub fn tool_events(events: &[String]) -> Vec<&String> {
    events
        .iter()
        .filter(|e| e.contains("\"type\":\"tool_execution_"))
        .collect()
}
