//! Which interpreter a print-mode run gets — live, live and recorded, or replayed from a
//! cassette — and the run over it: `--record FILE`, `--replay FILE` with `--cassette-mode`, and
//! the setting that records every run beside its session file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pi_cassettes::convert::{to_json, to_name};
use pi_cassettes::format::{Header, RecordedMode, SessionKind, SessionStart};
use pi_cassettes::redact::{Rules, REDACTIONS};
use pi_cassettes::{
    recording_transport, Cassette, CreateError, Divergence, Hybrid, Record, Recorder, Replay,
};
use pi_core::agent_session::{SessionInput, SessionMachine};
use pi_core::model::Model;
use pi_effects::agent_session::AgentSession;
use pi_effects::clock::{Clock, SystemClock};
use pi_effects::driver::{DriveError, Interpreter, RunEnding};
use pi_effects::extension::sidecar::GivenFlag;
use pi_effects::live::Live;
use pi_effects::session::SessionFile;

use crate::args::{Args, CassetteMode, Mode};
use crate::model_select::ScopedModel;
use crate::output::Stdout;
use crate::print_mode;
use crate::replacement::{self, Leaves, Opened, Reopen};
use crate::setup::{Built, InitialSession, Start};
use crate::CliError;

/// The exit code when a cassette cannot be used (`git bisect run` skips the commit).
pub const UNUSABLE: i32 = 125;

/// The environment variable that records every run (as the setting `cassettes.record` does).
pub const RECORD_ENV: &str = "PI_RECORD_CASSETTES";

/// What a run does with cassettes.
#[derive(Debug)]
pub enum CassettePlan {
    Live,
    /// Record into this file.
    Record(PathBuf),
    /// Record beside the session file, if the session has one.
    RecordBesideSession,
    Replay(Arc<Cassette>),
    /// Replay until the first divergence, then go live; the whole run is recorded into the
    /// file.
    Hybrid(Arc<Cassette>, PathBuf),
}

impl CassettePlan {
    /// The plan of this command line; `record_every_run` is the setting (or variable).
    pub fn of(args: &Args, record_every_run: bool) -> Result<CassettePlan, CliError> {
        if let (Some(CassetteMode::Hybrid), Some(replay)) = (args.cassette_mode, &args.replay) {
            let replay = PathBuf::from(replay);
            let record = args
                .record
                .as_ref()
                .map_or_else(|| replay.with_extension("hybrid.jsonl"), PathBuf::from);
            return Ok(CassettePlan::Hybrid(Arc::new(load(&replay)?), record));
        }
        if let Some(path) = &args.record {
            return Ok(CassettePlan::Record(PathBuf::from(path)));
        }
        let Some(path) = &args.replay else {
            return Ok(if record_every_run || env_says_record() {
                CassettePlan::RecordBesideSession
            } else {
                CassettePlan::Live
            });
        };
        let path = PathBuf::from(path);
        match args.cassette_mode.unwrap_or(CassetteMode::Replay) {
            CassetteMode::Record => Ok(CassettePlan::Record(path)),
            CassetteMode::Once if !path.exists() => Ok(CassettePlan::Record(path)),
            CassetteMode::Once | CassetteMode::Replay | CassetteMode::Hybrid => {
                Ok(CassettePlan::Replay(Arc::new(load(&path)?)))
            }
        }
    }

    /// The file a recording goes to, if this plan records.
    pub fn record_to(&self, built: &Built) -> Option<PathBuf> {
        match self {
            CassettePlan::Record(path) | CassettePlan::Hybrid(_, path) => Some(path.clone()),
            CassettePlan::RecordBesideSession => match &built.initial {
                InitialSession::InMemory => None,
                InitialSession::New { file } | InitialSession::Existing { file, .. } => {
                    Some(file.with_extension("cassette"))
                }
            },
            _ => None,
        }
    }

    /// Whether the run is recorded (its session's content is then captured for the header).
    pub fn records(&self) -> bool {
        matches!(
            self,
            CassettePlan::Record(_) | CassettePlan::RecordBesideSession | CassettePlan::Hybrid(..)
        )
    }

    /// When the run starts and its seed: the recorded ones on replay.
    pub fn start(&self) -> Start {
        match self {
            CassettePlan::Replay(cassette) | CassettePlan::Hybrid(cassette, _) => Start {
                at: cassette.config.started_at,
                seed: cassette.config.seed,
            },
            _ => Start::now(),
        }
    }
}

/// The trust decision an extension made in the recording `--replay` replays (`replay`,
/// `hybrid`, or `once` with the file there), if one did: the run takes it instead of asking the
/// extensions again, so it remembers nothing and trusts as the recording did.
pub fn replayed_trust(args: &Args) -> Option<pi_cassettes::format::ProjectTrust> {
    let path = Path::new(args.replay.as_ref()?);
    let replays = match args.cassette_mode.unwrap_or(CassetteMode::Replay) {
        CassetteMode::Record => false,
        CassetteMode::Once => path.exists(),
        CassetteMode::Replay | CassetteMode::Hybrid => true,
    };
    if !replays || args.project_trust().is_some() {
        return None;
    }
    load(path).ok()?.header.project_trust
}

fn env_says_record() -> bool {
    std::env::var(RECORD_ENV).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

/// Loads a cassette, its errors as the binary reports them.
pub fn load(path: &Path) -> Result<Cassette, CliError> {
    Cassette::load(path).map_err(|e| CliError::Cassette(e.to_string()))
}

/// What a recording's header holds besides the session's parts.
#[derive(Debug)]
pub struct RunInfo<'a> {
    pub mode: Mode,
    /// The command line, without the cassette flags.
    pub command: Vec<String>,
    /// The models the run could switch to and its scope, and where the credentials to scrub
    /// from a recording are resolved (only when recording: resolving runs models.json's
    /// `!command`s).
    pub runtime: &'a crate::setup::Runtime,
}

impl RunInfo<'_> {
    /// Every credential the run could resolve, with where it came from, for the recorder: the
    /// model registry's, those `mcp.json` (read as the run reads it) and the extensions'
    /// registrations hand their MCP servers, the keys the settings keep and the values of the
    /// command line's flags whose names say they hold one (the extensions read both).
    fn secrets(&self) -> Vec<(String, String)> {
        let runtime = self.runtime;
        let mut registered = pi_mcp::McpConfig::default();
        registered.add_registered(&runtime.mcp_registered);
        pi_mcp::machine_credentials(
            &runtime.registry,
            &runtime.auth,
            &runtime.env,
            runtime.mcp_config(),
            pi_mcp::credentials(&registered)
                .into_iter()
                .chain(runtime.settings.credentials())
                .chain(flag_credentials(&runtime.given_flags)),
        )
    }

    /// The user's own redaction rules (settings `redact`); a rule that does not parse stops
    /// the recording before it starts.
    fn rules(&self) -> Result<Rules, CliError> {
        self.runtime
            .settings
            .redact_rules()
            .map_err(CliError::Usage)
    }
}

/// What a recorded command line holds in place of a key.
const REDACTED_ARGUMENT: &str = "<<redacted>>";

/// The header of a recording of `built`.
pub fn header(built: &Built, info: RunInfo<'_>, rules: &Rules) -> Header {
    let RunInfo {
        mode,
        command,
        runtime,
    } = info;
    let models = runtime.available_models();
    let scoped = &runtime.scoped_models;
    Header {
        format: pi_cassettes::FORMAT_VERSION,
        features: Vec::new(),
        harness: env!("CARGO_PKG_VERSION").into(),
        pi: crate::VERSION.into(),
        mode: recorded_mode(mode),
        config: to_json(&built.config),
        session: session_start(built),
        redactions: REDACTIONS.iter().map(|r| (*r).to_owned()).collect(),
        redact: (!rules.is_empty()).then(|| rules.spec().clone()),
        models: Some(models.iter().map(to_json).collect()),
        scoped_models: scoped
            .iter()
            .map(|s| pi_cassettes::format::ScopedModel {
                model: to_json(&s.model),
                thinking_level: s.thinking.as_ref().map(to_name),
            })
            .collect(),
        command: Some(command),
        imported: None,
        project_trust: runtime.trust_by_extension.map(|decision| {
            pi_cassettes::format::ProjectTrust {
                trusted: decision.trusted,
                remember: decision.remember,
            }
        }),
    }
}

/// The session `built` starts in, as a recording holds it (a header's, or a `replaced`
/// line's): its kind, file, the content of a file that exists, the id generator's state.
pub fn session_start(built: &Built) -> SessionStart {
    let name = |file: &Path| file.file_name().map(|n| n.to_string_lossy().into_owned());
    match &built.initial {
        // A new session may start with entries no file holds yet (`--name`'s).
        InitialSession::InMemory => SessionStart {
            kind: SessionKind::Memory,
            file: None,
            path: None,
            content: built.unwritten.clone(),
            content_file: None,
            id_state: built.id_state,
            id: built.given_id.clone(),
        },
        InitialSession::New { file } => SessionStart {
            kind: SessionKind::New,
            file: name(file),
            path: Some(file.to_string_lossy().into_owned()),
            content: built.unwritten.clone(),
            content_file: None,
            id_state: built.id_state,
            id: built.given_id.clone(),
        },
        InitialSession::Existing { file, content } => SessionStart {
            kind: SessionKind::Open,
            file: name(file),
            path: Some(file.to_string_lossy().into_owned()),
            content: content
                .as_deref()
                .map(|bytes| String::from_utf8_lossy(bytes).into_owned()),
            content_file: None,
            id_state: built.id_state,
            id: None,
        },
    }
}

/// The models a recorded run could use and its `--models` scope.
pub fn recorded_models(cassette: &Cassette) -> (Vec<Model>, Vec<ScopedModel>) {
    let scoped = cassette
        .scoped_models
        .iter()
        .map(|(model, thinking)| ScopedModel {
            model: model.clone(),
            thinking: *thinking,
        })
        .collect();
    (cassette.models.clone().unwrap_or_default(), scoped)
}

/// The header's name for the front end `mode`.
pub fn recorded_mode(mode: Mode) -> RecordedMode {
    match mode {
        Mode::Text => RecordedMode::Text,
        Mode::Json => RecordedMode::Json,
        Mode::Rpc => RecordedMode::Rpc,
    }
}

/// The command line without the flags that choose cassettes, and with the value of
/// `--api-key` left out (a key of any length): what records the run again.
pub fn recorded_command(argv: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut skip = false;
    let mut key = false;
    for arg in argv {
        if std::mem::take(&mut skip) {
            continue;
        }
        if std::mem::take(&mut key) {
            out.push(REDACTED_ARGUMENT.to_owned());
            continue;
        }
        match arg.as_str() {
            "--record" | "--replay" | "--cassette-mode" => skip = true,
            a if a.starts_with("--record=")
                || a.starts_with("--replay=")
                || a.starts_with("--cassette-mode=") => {}
            "--api-key" => {
                key = true;
                out.push(arg.clone());
            }
            a if a.starts_with("--api-key=") => out.push(format!("--api-key={REDACTED_ARGUMENT}")),
            _ => out.push(arg.clone()),
        }
    }
    out
}

/// The values of the extension flags given (`--deploy-token KEY`, `--deploy-token=KEY`) whose
/// names say they hold a credential, with the flag each came from.
fn flag_credentials(given: &[GivenFlag]) -> Vec<(String, String)> {
    given
        .iter()
        .filter(|flag| pi_providers::registry::is_credential_name(&flag.name))
        .filter_map(|flag| {
            let value = flag.value.as_ref().filter(|v| !v.is_empty())?;
            Some((value.clone(), format!("--{}", flag.name)))
        })
        .collect()
}

/// A session's interpreter as the plan asks for it.
#[derive(Debug)]
pub enum Io {
    Live(Live),
    Record(Record<Live>),
    Hybrid(Record<Hybrid>),
    Replay(Replay),
}

/// The machine, file and interpreter of a run of `plan` over `built`.
pub fn prepare(
    plan: CassettePlan,
    built: Built,
    info: RunInfo<'_>,
) -> Result<(SessionMachine, SessionFile, Io), CliError> {
    let record_to = plan.record_to(&built);
    let unusable = |d: Divergence| CliError::Cassette(d.to_string());
    if let (
        CassettePlan::Replay(cassette) | CassettePlan::Hybrid(cassette, _),
        InitialSession::Existing { file, .. },
    ) = (&plan, &built.initial)
    {
        if cassette.header.session.kind == SessionKind::New {
            // The recorded run's new session file is there already (this is where it was
            // recorded): replaying into it would append the run a second time.
            return Err(CliError::Session(format!(
                "The session file {} of the recorded run exists; replaying would add to it. Use --no-session or --session-dir DIR, or pi replay.",
                file.display()
            )));
        }
    }
    let io = match (plan, record_to) {
        (CassettePlan::Replay(cassette), _) => Io::Replay(Replay::new(cassette).map_err(unusable)?),
        (CassettePlan::Hybrid(cassette, _), Some(path)) => {
            let replay = Replay::new(cassette).map_err(unusable)?;
            let (secrets, rules) = (info.secrets(), info.rules()?);
            let runtime = info.runtime;
            let header = header(&built, info, &rules);
            let (live, recorder) = recording(built.live, &path, &header, &secrets, rules)?;
            learn_later_keys(runtime, &recorder);
            let hybrid = Hybrid::new(replay, live, Some(recorder.clone()));
            Io::Hybrid(Record::new(hybrid, recorder))
        }
        (_, Some(path)) => {
            let (secrets, rules) = (info.secrets(), info.rules()?);
            let runtime = info.runtime;
            let header = header(&built, info, &rules);
            let (live, recorder) = recording(built.live, &path, &header, &secrets, rules)?;
            learn_later_keys(runtime, &recorder);
            Io::Record(Record::new(live, recorder))
        }
        (_, None) => Io::Live(built.live),
    };
    Ok((built.machine, built.file, io))
}

/// The keys of the MCP servers extensions register after loading reach `recorder` as the
/// servers are connected, before any line that could repeat them is written.
fn learn_later_keys(runtime: &crate::setup::Runtime, recorder: &Recorder) {
    // And the keys of the providers they register after loading, as each is registered.
    let providers = recorder.clone();
    runtime
        .live_providers()
        .on_credentials(Box::new(move |value, what| {
            providers.secret(value, what);
        }));
    if let Some(later) = &runtime.mcp_later {
        let recorder = recorder.clone();
        later.on_credentials(Box::new(move |value, what| {
            recorder.secret(value, what);
        }));
    }
}

/// A recorder at `path` and the Live interpreter that writes its calls into it.
fn recording(
    live: Live,
    path: &Path,
    header: &Header,
    secrets: &[(String, String)],
    rules: Rules,
) -> Result<(Live, Recorder), CliError> {
    let recorder = Recorder::create(path, header, secrets, rules).map_err(|error| match error {
        // Not an unusable cassette: a run that cannot start.
        busy @ CreateError::Busy { .. } => CliError::Session(busy.to_string()),
        other => CliError::Cassette(other.to_string()),
    })?;
    let live = recorded_live(live, &recorder);
    Ok((live, recorder))
}

/// How a recorded run opens the next session a replacement asks for: its file's content
/// captured for the `replaced` line, its calls recorded into the same cassette.
pub fn reopen_recorded() -> Reopen<Record<Live>> {
    Box::new(|runtime, choice, recording: &Record<Live>| {
        // Pi builds the new session's runtime: extensions the settings name since load.
        runtime.start_late_host();
        let built = runtime
            .build(choice, Start::now(), true)
            .map_err(replacement::failed)?;
        // A branch kept until it has a message to write, or kept in memory, starts with
        // entries no file holds yet (its `content`).
        let opened = Opened::new(to_json(&built.config), session_start(&built));
        let session = recorded_beside(recording, built);
        Ok(Some((session, opened)))
    })
}

/// The session `built` (one a replacing command opened), recorded into the cassette that
/// `recording` records into.
pub fn recorded_beside(recording: &Record<Live>, built: Built) -> AgentSession<Record<Live>> {
    let live = recorded_live(built.live, recording.recorder());
    AgentSession::from_parts(built.machine, recording.beside(live), built.file)
}

/// `live` with its model calls recorded into `recorder`.
fn recorded_live(live: Live, recorder: &Recorder) -> Live {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    live.with_call_transport(recording_transport(recorder.clone(), clock))
}

/// Runs `inputs` in print mode over the interpreter `plan` asks for; returns the exit code.
pub async fn run_print(
    plan: CassettePlan,
    built: Built,
    info: RunInfo<'_>,
    inputs: Vec<SessionInput>,
) -> Result<i32, CliError> {
    let mode = info.mode;
    let runtime = info.runtime;
    let (machine, file, io) = prepare(plan, built, info)?;
    let mut out = output(&io);
    let code = match io {
        Io::Live(live) => {
            print(
                machine,
                live,
                file,
                (
                    mode,
                    print_mode::Replacing {
                        runtime,
                        reopen: Some(crate::replacement::live()),
                    },
                ),
                inputs,
                &mut out,
                |_, ran, _| ran.unwrap_or_else(|code| code),
            )
            .await
        }
        Io::Record(io) => {
            print(
                machine,
                io,
                file,
                // The sessions a command opens are recorded into the same cassette.
                (
                    mode,
                    print_mode::Replacing {
                        runtime,
                        reopen: Some(reopen_recorded()),
                    },
                ),
                inputs,
                &mut out,
                |io, ran, (out, session)| {
                    end_run(io, ran.unwrap_or_else(|code| code), out, session)
                },
            )
            .await
        }
        Io::Hybrid(io) => {
            print(
                machine,
                io,
                file,
                // No session but the one replayed and gone on with: a command's replacement
                // is refused.
                (
                    mode,
                    print_mode::Replacing {
                        runtime,
                        reopen: None,
                    },
                ),
                inputs,
                &mut out,
                |io, ran, (out, session)| {
                    match io.inner_mut().went_live_at() {
                        Some(step) => {
                            eprintln!("hybrid: replayed until step {step}, then ran live")
                        }
                        None => eprintln!("hybrid: the whole run was replayed"),
                    }
                    eprintln!("hybrid: recorded to {}", io.recorder().path().display());
                    end_run(io, ran.unwrap_or_else(|code| code), out, session)
                },
            )
            .await
        }
        Io::Replay(replay) => {
            print(
                machine,
                replay,
                file,
                // In place: a later session would be written over the user's; the run ends
                // at the replacement, as said below.
                (
                    mode,
                    print_mode::Replacing {
                        runtime,
                        reopen: Some(crate::replacement::replayed(None, false)),
                    },
                ),
                inputs,
                &mut out,
                // A run that stopped has reported why; one that ended must have used its recording.
                |replay, ran, _| {
                    let finished = || match replay.cassette().next_session() {
                        Some(_) => {
                            eprintln!("{}", replacement::in_place_ends(replay.cassette()));
                            replay.finish_part()
                        }
                        None => replay.finish(),
                    };
                    match ran.map(|code| (code, finished())) {
                        Err(code) | Ok((code, Ok(()))) => code,
                        Ok((_, Err(divergence))) => report(&divergence),
                    }
                },
            )
            .await
        }
    };
    Ok(code)
}

/// What a finished run's session left: its output and session file, for the outcome line.
type Ended<'a> = (&'a Stdout, Option<&'a Path>);

/// Runs print mode over `io` and ends the session (the last one, where a command replaced it); `end` gets the interpreter, the exit code
/// (`Err` when the run stopped on an error, which is printed already) and what was written,
/// and gives the final exit code.
async fn print<I: Leaves>(
    machine: SessionMachine,
    io: I,
    file: SessionFile,
    (mode, replacing): (Mode, print_mode::Replacing<'_, I>),
    inputs: Vec<SessionInput>,
    out: &mut Stdout,
    end: impl FnOnce(&mut I, Result<i32, i32>, Ended<'_>) -> i32,
) -> i32 {
    let mut session = AgentSession::from_parts(machine, io, file);
    let ran = print_mode::run(&mut session, mode, inputs, out, replacing)
        .await
        .map_err(|error| report_error(&error));
    let path = session.written_file().map(Path::to_path_buf);
    let code = end(session.interpreter_mut(), ran, (out, path.as_deref()));
    session.end_before_exit();
    code
}

/// The output of a run over `io`: digested as its recording redacts it, when it records.
pub fn output(io: &Io) -> Stdout {
    match io {
        Io::Record(io) => Stdout::digesting(io.recorder()),
        Io::Hybrid(io) => Stdout::digesting(io.recorder()),
        Io::Live(_) | Io::Replay(_) => Stdout::new(),
    }
}

/// Tells `io` the run ended with `code`, having printed `out` and written `session_file` (a
/// recording writes its outcome), and says when its record could not be written whole;
/// returns `code`.
pub fn end_run<I: Interpreter>(
    io: &mut I,
    code: i32,
    out: &Stdout,
    session_file: Option<&Path>,
) -> i32 {
    let stdout = out.digest().unwrap_or_default();
    let events = out.events_digest();
    let ending = RunEnding {
        exit: code,
        stdout: &stdout,
        events: events.as_deref(),
        stdout_text: out.text(),
        events_text: out.events_text(),
        session_file,
    };
    if let Err(error) = io.end(&ending) {
        eprintln!("Warning: {error}");
    }
    code
}

/// Prints a divergence; its exit code.
pub fn report(divergence: &Divergence) -> i32 {
    eprintln!("{}", crate::printable::printable(&divergence.to_string()));
    if divergence.is_cassette_fault() {
        UNUSABLE
    } else {
        1
    }
}

/// Prints the error that stopped a run; its exit code (a replay's divergence is 1 or 125).
pub fn report_error(error: &DriveError) -> i32 {
    if let Some(divergence) = Divergence::in_error(error) {
        return report(divergence);
    }
    eprintln!("{error}");
    1
}
