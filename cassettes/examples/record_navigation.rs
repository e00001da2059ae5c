//! Records a corpus cassette no front end of Pi can drive: two prompts, then a navigation back to
//! the first one with a branch summary (Pi's `navigateTree`, which only its interactive
//! interface offers), then a prompt on the new branch. The session runs over real HTTP against
//! the scripted mock on 127.0.0.1, through the same Record and recording transport as `pi
//! --record`, and replays with `pi replay` like any other cassette.
//!
//!     cargo run -p pi-cassettes --example record_navigation -- cassettes/corpus/navigation.jsonl

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::sync::Arc;

use pi_cassettes::format::{Header, Line, RecordedOutcome, SessionKind, SessionStart};
use pi_cassettes::{recording_transport, sha256_hex, Record, Recorder, FORMAT_VERSION};
use pi_core::agent_session::{NavigateRequest, SessionInput};
use pi_core::message::AgentMessage;
use pi_core::model::Model;
use pi_core::session::entry::SessionEntry;
use pi_core::session::ids::IdGenerator;
use pi_effects::agent_session::SessionOptions;
use pi_effects::clock::{now_ms, Clock, SystemClock};
use pi_effects::driver::drive;
use pi_effects::run_config::build_machine;
use pi_effects::session::SessionStore;
use pi_providers::CallOptions;
use pi_testkit::MockLlm;
use serde_json::json;

#[tokio::main]
async fn main() {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .expect("usage: record_navigation CASSETTE"),
    );
    let mock = MockLlm::start(&json!([
        {"text": ["Paris."]},
        {"text": ["Berlin."]},
        {"text": ["## Goal\nThe user asked about capitals."]},
        {"text": ["Madrid."]},
    ]));
    let work = tempfile::tempdir().unwrap();
    let cwd = work.path().join("project");
    let sessions = work.path().join("sessions");
    std::fs::create_dir_all(&cwd).unwrap();
    let model = Model {
        id: "mock-model".into(),
        name: "Mock Model".into(),
        api: "openai-completions".into(),
        provider: "mock".into(),
        base_url: mock.url("/v1"),
        input: vec!["text".into()],
        context_window: 128_000,
        max_tokens: 16_384,
        ..Model::default()
    };
    let credentials = Arc::new(|_: &_| {
        Ok(CallOptions {
            api_key: "mock-key".into(),
            ..CallOptions::default()
        })
    });
    let mut options = SessionOptions::new(&cwd, model.clone(), credentials);
    options.agent_dir = work.path().join("agent");
    let started_at = now_ms();
    options.seed = Some(started_at);
    let config = options.run_config(started_at).unwrap();
    let store = SessionStore::create(
        &config.cwd,
        &sessions,
        started_at,
        IdGenerator::new(config.seed),
    )
    .unwrap();
    let file = store.file().unwrap().to_path_buf();
    let header = Header {
        format: FORMAT_VERSION,
        features: Vec::new(),
        harness: env!("CARGO_PKG_VERSION").into(),
        pi: pi_cassettes::PI_EDITION.into(),
        mode: pi_cassettes::RecordedMode::Json,
        config: pi_cassettes::convert::to_json(&config),
        session: SessionStart {
            kind: SessionKind::New,
            file: file.file_name().map(|n| n.to_string_lossy().into_owned()),
            path: Some(file.to_string_lossy().into_owned()),
            content: None,
            content_file: None,
            id_state: store.id_state(),
            id: None,
        },
        redactions: vec!["api keys".into()],
        redact: None,
        models: Some(vec![pi_cassettes::convert::to_json(&model)]),
        scoped_models: Vec::new(),
        command: None,
        imported: None,
        project_trust: None,
    };
    let recorder = Recorder::create(&out, &header, &[], Default::default()).unwrap();
    let (mut machine, mut session_file) = build_machine(&config, store).unwrap();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let live = options
        .live()
        .unwrap()
        .with_call_transport(recording_transport(recorder.clone(), clock));
    let mut io = Record::new(live, recorder.clone());

    // What `pi --mode json` prints: the session header, then every event.
    let mut stdout = String::new();
    stdout.push_str(&pi_core::json::to_string(machine.tree().header()).unwrap());
    stdout.push('\n');
    let prompt = |text: &str| SessionInput::Prompt {
        text: text.into(),
        images: Vec::new(),
        streaming_behavior: None,
    };
    for text in ["Capital of France?", "Capital of Germany?"] {
        drive(
            &mut machine,
            &mut io,
            &mut session_file,
            prompt(text),
            |e| {
                stdout.push_str(&pi_core::json::to_string(e).unwrap());
                stdout.push('\n');
            },
        )
        .await
        .unwrap();
    }
    let first_user = machine
        .tree()
        .entries()
        .iter()
        .find_map(|entry| match entry {
            SessionEntry::Message(m) if matches!(m.message, AgentMessage::User(_)) => {
                Some(m.id.clone())
            }
            _ => None,
        })
        .unwrap();
    let navigate = SessionInput::Navigate(NavigateRequest {
        target_id: first_user,
        summarize: true,
        custom_instructions: None,
        replace_instructions: false,
        label: Some("capitals".into()),
    });
    for input in [navigate, prompt("Capital of Spain?")] {
        drive(&mut machine, &mut io, &mut session_file, input, |e| {
            stdout.push_str(&pi_core::json::to_string(e).unwrap());
            stdout.push('\n');
        })
        .await
        .unwrap();
    }
    let session = std::fs::read(&file).ok().map(|bytes| sha256_hex(&bytes));
    recorder.write(Line::Outcome(RecordedOutcome {
        exit: 0,
        stdout: sha256_hex(stdout.as_bytes()),
        session,
        events: None,
        stdout_text: None,
        events_text: None,
        session_text: None,
        updates_omitted: false,
    }));
    assert!(recorder.failure().is_none());
    println!("recorded {}", out.display());
}
