//! Which interpreter a print-mode run gets — live, live and recorded, or replayed from a
//! cassette — and the run over it: `--record FILE`, `--replay FILE` with `--cassette-mode`, and
//! the setting that records every run beside its session file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pi_cassettes::format::{Header, SessionStart};
use pi_cassettes::{recording_transport, Cassette, Divergence, Outcome, Record, Recorder, Replay};
use pi_core::agent_session::SessionInput;
use pi_core::model::Model;
use pi_effects::agent_session::AgentSession;
use pi_effects::clock::{Clock, SystemClock};
use pi_effects::driver::{DriveError, InterpretError};

use crate::args::{Args, CassetteMode, Mode};
use crate::model_select::ScopedModel;
use crate::output::Stdout;
use crate::print_mode;
use crate::setup::{Built, InitialSession, Start};
use crate::CliError;

/// The exit code when a cassette cannot be used (`git bisect run` skips the commit).
pub const UNUSABLE: i32 = 125;

/// The environment variable that records every run (as the setting `cassettes.record` does).
pub const RECORD_ENV: &str = "PI_RECORD_CASSETTES";

/// What a run does with cassettes.
#[derive(Debug)]
pub enum Plan {
    Live,
    /// Record into this file.
    Record(PathBuf),
    /// Record beside the session file, if the session has one.
    RecordBesideSession,
    Replay(Arc<Cassette>),
}

impl Plan {
    /// The plan of this command line; `record_every_run` is the setting (or variable).
    pub fn of(args: &Args, record_every_run: bool) -> Result<Plan, CliError> {
        if let Some(path) = &args.record {
            return Ok(Plan::Record(PathBuf::from(path)));
        }
        let Some(path) = &args.replay else {
            return Ok(if record_every_run || env_says_record() {
                Plan::RecordBesideSession
            } else {
                Plan::Live
            });
        };
        let path = PathBuf::from(path);
        match args.cassette_mode.unwrap_or(CassetteMode::Replay) {
            CassetteMode::Record => Ok(Plan::Record(path)),
            CassetteMode::Once if !path.exists() => Ok(Plan::Record(path)),
            CassetteMode::Once | CassetteMode::Replay => Ok(Plan::Replay(Arc::new(load(&path)?))),
            CassetteMode::Hybrid => Err(CliError::Usage(
                "--cassette-mode hybrid is not available in this build yet; use replay, once or record".into(),
            )),
        }
    }

    /// The file a recording goes to, if this plan records.
    pub fn record_to(&self, built: &Built) -> Option<PathBuf> {
        match self {
            Plan::Record(path) => Some(path.clone()),
            Plan::RecordBesideSession => match &built.initial {
                InitialSession::InMemory => None,
                InitialSession::New { file } | InitialSession::Existing { file, .. } => {
                    Some(file.with_extension("cassette"))
                }
            },
            _ => None,
        }
    }

    /// When the run starts and its seed: the recorded ones on replay.
    pub fn start(&self) -> Start {
        match self {
            Plan::Replay(cassette) => Start {
                at: cassette.header.config.started_at,
                seed: cassette.header.config.seed,
            },
            _ => Start::now(),
        }
    }
}

fn env_says_record() -> bool {
    std::env::var(RECORD_ENV).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

/// Loads a cassette, its errors as the binary reports them.
pub fn load(path: &Path) -> Result<Cassette, CliError> {
    Cassette::load(path).map_err(|e| CliError::Cassette(e.to_string()))
}

/// The header of a recording of `built` in `mode`, started by the command line `command`.
pub fn header(
    built: &Built,
    mode: Mode,
    command: Vec<String>,
    models: Vec<Model>,
    scoped: &[ScopedModel],
) -> Header {
    let name = |file: &Path| file.file_name().map(|n| n.to_string_lossy().into_owned());
    let session = match &built.initial {
        InitialSession::InMemory => SessionStart {
            kind: "memory".into(),
            file: None,
            path: None,
            content: None,
            id_state: built.id_state,
        },
        InitialSession::New { file } => SessionStart {
            kind: "new".into(),
            file: name(file),
            path: Some(file.to_string_lossy().into_owned()),
            content: None,
            id_state: built.id_state,
        },
        InitialSession::Existing { file, content } => SessionStart {
            kind: "open".into(),
            file: name(file),
            path: Some(file.to_string_lossy().into_owned()),
            content: Some(String::from_utf8_lossy(content).into_owned()),
            id_state: built.id_state,
        },
    };
    Header {
        format: pi_cassettes::FORMAT_VERSION,
        harness: env!("CARGO_PKG_VERSION").into(),
        pi: crate::VERSION.into(),
        mode: mode_name(mode).into(),
        config: built.config.clone(),
        session,
        redactions: vec![
            "api keys".into(),
            "credential headers".into(),
            "credential query parameters".into(),
        ],
        models: Some(models),
        scoped_models: scoped
            .iter()
            .map(|s| pi_cassettes::format::ScopedModel {
                model: s.model.clone(),
                thinking_level: s.thinking,
            })
            .collect(),
        command: Some(command),
    }
}

/// The models a recorded run could use and its `--models` scope.
pub fn recorded_models(cassette: &Cassette) -> (Vec<Model>, Vec<ScopedModel>) {
    let header = &cassette.header;
    let scoped = header
        .scoped_models
        .iter()
        .map(|s| ScopedModel {
            model: s.model.clone(),
            thinking: s.thinking_level,
        })
        .collect();
    (header.models.clone().unwrap_or_default(), scoped)
}

/// `text`, `json` or `rpc`.
pub fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Text => "text",
        Mode::Json => "json",
        Mode::Rpc => "rpc",
    }
}

/// The command line without the flags that choose cassettes: what records the run again.
pub fn recorded_command(argv: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip = false;
    for arg in argv {
        if std::mem::take(&mut skip) {
            continue;
        }
        match arg.as_str() {
            "--record" | "--replay" | "--cassette-mode" => skip = true,
            a if a.starts_with("--record=")
                || a.starts_with("--replay=")
                || a.starts_with("--cassette-mode=") => {}
            _ => out.push(arg.clone()),
        }
    }
    out
}

/// Runs `inputs` in print mode over the interpreter `plan` asks for; returns the exit code.
pub async fn run_print(
    plan: Plan,
    built: Built,
    mode: Mode,
    inputs: Vec<SessionInput>,
    command: Vec<String>,
    models: Vec<Model>,
    scoped: &[ScopedModel],
) -> Result<i32, CliError> {
    let record_to = plan.record_to(&built);
    if let Plan::Replay(cassette) = plan {
        let replay = Replay::new(cassette).map_err(|d| CliError::Cassette(d.to_string()))?;
        let mut session = AgentSession::from_parts(built.machine, replay, built.file);
        let mut out = Stdout::new();
        let result = print_mode::run(&mut session, mode, inputs, &mut out).await;
        let code = match result {
            Ok(code) => match session.interpreter_mut().finish() {
                Ok(()) => code,
                Err(divergence) => report(&divergence),
            },
            Err(error) => report_error(&error),
        };
        session.end_before_exit();
        return Ok(code);
    }
    let Some(path) = record_to else {
        let mut session = AgentSession::from_parts(built.machine, built.live, built.file);
        let mut out = Stdout::new();
        let code = print_mode::run(&mut session, mode, inputs, &mut out)
            .await
            .unwrap_or_else(|error| report_error(&error));
        session.end_before_exit();
        return Ok(code);
    };
    let header = header(&built, mode, command, models, scoped);
    let recorder =
        Recorder::create(&path, &header, &[]).map_err(|e| CliError::Cassette(e.to_string()))?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let live = built
        .live
        .with_call_transport(recording_transport(recorder.clone(), clock));
    let io = Record::new(live, recorder.clone());
    let mut session = AgentSession::from_parts(built.machine, io, built.file);
    let mut out = Stdout::new();
    let code = print_mode::run(&mut session, mode, inputs, &mut out)
        .await
        .unwrap_or_else(|error| report_error(&error));
    write_outcome(&recorder, code, &out, session.written_file());
    if let Some(failure) = recorder.failure() {
        eprintln!("Warning: the recording is incomplete: {failure}");
    }
    session.end_before_exit();
    Ok(code)
}

/// The outcome line: the exit code and the digests of stdout and the session file.
pub fn write_outcome(recorder: &Recorder, code: i32, out: &Stdout, session_file: Option<&Path>) {
    let session = session_file
        .and_then(|path| std::fs::read(path).ok())
        .map(|bytes| pi_cassettes::sha256_hex(&bytes));
    recorder.write(pi_cassettes::Line::Outcome(Outcome {
        exit: code,
        stdout: out.digest(),
        session,
    }));
}

/// Prints a divergence; its exit code.
pub fn report(divergence: &Divergence) -> i32 {
    eprintln!("{divergence}");
    if divergence.is_cassette_fault() {
        UNUSABLE
    } else {
        1
    }
}

/// The divergence behind `error` (a replay stopped by its recording), or the error itself as
/// an output divergence of `replay`'s cassette.
pub fn divergence_of(error: DriveError, replay: &Replay) -> Divergence {
    if let DriveError::Interpret(InterpretError::Halted(halted)) = &error {
        if let Some(divergence) = halted.downcast_ref::<Divergence>() {
            return divergence.clone();
        }
    }
    Divergence::output(replay.cassette(), "the run failed", "", &error.to_string())
}

/// Prints the error that stopped a run; its exit code (a replay's divergence is 1 or 125).
pub fn report_error(error: &DriveError) -> i32 {
    if let DriveError::Interpret(InterpretError::Halted(halted)) = error {
        if let Some(divergence) = halted.downcast_ref::<Divergence>() {
            return report(divergence);
        }
    }
    eprintln!("{error}");
    1
}
