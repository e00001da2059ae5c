//! `pi replay`: re-runs recorded runs from their cassettes, offline, without waiting.
//!
//! `pi replay FILE [--mode json|text] [--session-dir DIR]` prints the run's output again.
//! `pi replay --check PATH... [--jobs N]` checks files and directories of cassettes in parallel:
//! exit 0 when this build reproduces every one (each effect, request, event and the session file),
//! 1 when one diverges, 125 when one cannot be used — so `git bisect run pi replay --check DIR`
//! finds the commit that changed a behaviour. `--config current` replays the recorded inputs
//! against today's settings, context files (of the current directory, or `--workspace`) and
//! system prompt instead of the recorded ones.
//! `pi replay --chaos N [--seed S] [--plan P] PATH...` replays each cassette N times under
//! seeded perturbations, checking the loop's invariants (`chaos_cmd.rs`, which uses this
//! module's checking; `main.rs` chooses between them).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use clap::{Parser, ValueEnum};
use pi_cassettes::format::{Line, RecordedMode, RecordedOutcome};
use pi_cassettes::replay::ReplayedSession;
use pi_cassettes::{Cassette, Divergence, Replay};
use pi_core::tools::tool_search::TOOL_SEARCH_TOOL_NAME;
use pi_effects::agent_session::AgentSession;
use pi_effects::custom_tool::{
    unregistered_tools_message, CustomToolDefinition, DeclaredOnly, ToolRegistry,
};
use pi_effects::run_config::{build_machine, RunConfig};

use crate::args::{Args, Mode};
use crate::cassette::{self, UNUSABLE};
use crate::output::Stdout;
use crate::print_mode::{self, Part};
use crate::printable::printable;
use crate::setup::Runtime;

/// `pi replay`'s flags.
#[derive(Debug, Parser)]
#[command(
    name = "pi replay",
    about = "Replay recorded runs from their cassettes"
)]
pub(crate) struct ReplayArgs {
    /// Check that this build reproduces every cassette instead of printing one's output.
    #[arg(long)]
    check: bool,
    /// The output to print (the recorded mode by default).
    #[arg(long, value_enum)]
    mode: Option<ReplayMode>,
    /// Cassettes checked at once (the number of cores by default).
    #[arg(long, short = 'j')]
    pub(crate) jobs: Option<usize>,
    /// Build the run from the recorded configuration, or from today's (settings, context
    /// files, system prompt, tools).
    #[arg(long, value_enum, default_value = "recorded")]
    config: ConfigSource,
    /// Where tool calls are answered from: the recording, running them for real in a scratch
    /// copy of `--workspace`, or running them for real in `--workspace` itself (`in-place`:
    /// an eval's trial workspace, which its checks look at afterwards).
    #[arg(long, value_enum, default_value = "recorded")]
    tools: ToolSource,
    /// Where the extensions' decisions at hook points come from: the recording, or their
    /// handlers run again (`live`: the recorded command's `-e` extensions and the agent
    /// dir's, as they are today), so a changed extension shows where its run now diverges.
    #[arg(long, value_enum, default_value = "recorded")]
    extensions: ExtensionSource,
    /// The workspace copied for `--tools live`, and where `--config current` reads today's
    /// context files and project settings (the current directory by default).
    #[arg(long)]
    workspace: Option<PathBuf>,
    /// Keep the replayed session file in this directory.
    #[arg(long = "session-dir")]
    session_dir: Option<PathBuf>,
    /// Replay each cassette this many times under seeded perturbations, checking the loop's
    /// invariants on every run (the first run of each is unperturbed).
    #[arg(long, value_name = "N")]
    pub(crate) chaos: Option<usize>,
    /// The seed of `--chaos` (the clock's milliseconds by default; always printed).
    #[arg(long, requires = "chaos")]
    pub(crate) seed: Option<u64>,
    /// With `--chaos`: run exactly this plan (as a failure report prints it) instead of
    /// seeded ones.
    #[arg(long, requires = "chaos")]
    pub(crate) plan: Option<String>,
    /// Record each cassette again with this build, against the scripted mock it was made
    /// with (`scenarios/<name>.json` beside it), keeping the new one only when it replays
    /// clean; one recorded against a real model is reported and left as it is.
    #[arg(long, conflicts_with_all = ["check", "chaos", "mode", "session_dir", "workspace"])]
    pub(crate) rerecord: bool,
    /// Cassette files, or directories of them.
    #[arg(required = true)]
    pub(crate) paths: Vec<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ReplayMode {
    Text,
    Json,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ExtensionSource {
    Recorded,
    Live,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ToolSource {
    Recorded,
    Live,
    InPlace,
}

/// How a cassette is replayed.
#[derive(Clone, Debug)]
pub(crate) struct How {
    config: ConfigSource,
    /// The workspace whose scratch copy the tools run in, when they run for real.
    live_tools: Option<PathBuf>,
    /// The tools change `live_tools` itself rather than a copy.
    in_place: bool,
    /// The tools' settings when they run in place (shell, sandbox); the process's by default.
    tool_env: Option<pi_effects::tools::ToolEnv>,
    /// `--workspace`: where `--config current` reads today's context files and project
    /// settings (the current directory by default).
    workspace: Option<PathBuf>,
    /// `--extensions live`: the hook points are answered by the extensions run again.
    live_extensions: bool,
    /// The agent dir whose `mcp.json` may start the servers the recording declares, when the
    /// tools run for real: the one the user names (this process's). None for a replay inside
    /// an eval's own process, which starts no server (a trial's start in its confined agent).
    servers_from: Option<PathBuf>,
}

impl How {
    /// Recorded configuration, tools run for real as `env` says, in its working directory.
    pub(crate) fn tools_in_place(env: pi_effects::tools::ToolEnv) -> How {
        How {
            config: ConfigSource::Recorded,
            live_tools: Some(env.cwd.clone()),
            in_place: true,
            tool_env: Some(env),
            workspace: None,
            live_extensions: false,
            servers_from: None,
        }
    }
}

impl How {
    /// As recorded: the recorded configuration, tools answered from the recording.
    pub(crate) fn recorded() -> How {
        How {
            config: ConfigSource::Recorded,
            live_tools: None,
            in_place: false,
            tool_env: None,
            workspace: None,
            live_extensions: false,
            servers_from: None,
        }
    }

    fn of(args: &ReplayArgs) -> Result<How, String> {
        let live_tools = match args.tools {
            ToolSource::Recorded => None,
            ToolSource::Live | ToolSource::InPlace => Some(match &args.workspace {
                Some(dir) => dir.clone(),
                None => std::env::current_dir().map_err(|e| e.to_string())?,
            }),
        };
        Ok(How {
            config: args.config,
            live_tools,
            in_place: args.tools == ToolSource::InPlace,
            tool_env: None,
            workspace: args.workspace.clone(),
            live_extensions: args.extensions == ExtensionSource::Live,
            servers_from: Some(pi_effects::session::agent_dir()),
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum ConfigSource {
    Recorded,
    Current,
}

/// `pi replay`'s flags in `argv` (the words after `replay`) and how they ask to replay; the
/// exit code when they are wrong (or asked for help).
pub fn parse(argv: &[String]) -> Result<(ReplayArgs, How), i32> {
    let words = std::iter::once("pi replay".to_owned()).chain(argv.iter().cloned());
    let args = ReplayArgs::try_parse_from(words).map_err(|error| {
        let _ = error.print();
        if error.use_stderr() {
            2
        } else {
            0
        }
    })?;
    let how = How::of(&args).map_err(|error| {
        eprintln!("{error}");
        1
    })?;
    Ok((args, how))
}

/// Replays one cassette's output, or checks them all (`--check`); the exit code. `--chaos` is
/// `chaos_cmd`'s.
pub fn run(args: &ReplayArgs, how: &How) -> i32 {
    if args.check {
        check(args, how)
    } else {
        replay_one_file(args, how)
    }
}

fn replay_one_file(args: &ReplayArgs, how: &How) -> i32 {
    let [path] = args.paths.as_slice() else {
        eprintln!("pi replay prints one cassette's output; use --check for several");
        return 2;
    };
    let cassette = match cassette::load(path) {
        Ok(cassette) => Arc::new(cassette),
        Err(error) => {
            eprintln!("{}", printable(&error.to_string()));
            return UNUSABLE;
        }
    };
    let mode = output_mode(args, &cassette);
    // The session is replayed in a scratch directory and then moved to `--session-dir` under
    // a name no file there has: the directory may hold the very file the run was recorded
    // into, which a replay must neither append to nor change.
    let dir = scratch_dir(0);
    let mut out = Stdout::batched();
    let result = block_on(replay(cassette, mode, how, &dir, &mut out));
    out.flush();
    let kept = match &args.session_dir {
        Some(keep) => keep_sessions(&dir, keep),
        None => Ok(()),
    };
    let _ = std::fs::remove_dir_all(&dir);
    let code = match result {
        Ok(replayed) => replayed.code,
        Err(divergence) => cassette::report(&divergence),
    };
    match kept {
        Ok(()) => code,
        Err(error) => {
            eprintln!("{error}");
            1
        }
    }
}

/// Moves the session files a replay wrote in `scratch` into `dir`, each under its own name
/// or, when `dir` has a file of that name, `<name>.replay-<n>.jsonl` with the first free `n`;
/// names a renamed one on stderr.
fn keep_sessions(scratch: &Path, dir: &Path) -> Result<(), String> {
    let Ok(entries) = std::fs::read_dir(scratch) else {
        return Ok(());
    };
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let mut written: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    written.sort();
    for file in written {
        let Some(name) = file.file_name() else {
            continue;
        };
        let stem = file.file_stem().unwrap_or(name).to_string_lossy();
        let (mut n, mut target) = (0, dir.join(name));
        // Created new, never opened if it exists: nothing in `dir` is overwritten.
        let mut out = loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&target)
            {
                Ok(out) => break out,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    n += 1;
                    target = dir.join(format!("{stem}.replay-{n}.jsonl"));
                }
                Err(e) => return Err(format!("cannot write {}: {e}", target.display())),
            }
        };
        std::fs::File::open(&file)
            .and_then(|mut from| std::io::copy(&mut from, &mut out))
            .map_err(|e| format!("cannot write {}: {e}", target.display()))?;
        if n > 0 {
            eprintln!(
                "the replayed session is in {} ({} exists and is left alone)",
                target.display(),
                dir.join(name).display()
            );
        }
    }
    Ok(())
}

/// The names of the MCP servers a recording lists.
fn recorded_server_names(servers: &[serde_json::Value]) -> Vec<String> {
    servers
        .iter()
        .filter_map(|server| server.get("name").and_then(serde_json::Value::as_str))
        .map(str::to_owned)
        .collect()
}

/// What a replay did.
#[derive(Debug)]
pub(crate) struct ReplayRun {
    /// The cassette (its lines taken by the replay).
    cassette: Arc<Cassette>,
    pub(crate) code: i32,
    /// The digest of stdout.
    stdout: String,
    /// Stdout, when kept (not for RPC, whose front end keeps only the digest).
    stdout_text: Option<String>,
    /// The digest of a text-mode run's events, and their text when kept.
    events: Option<String>,
    events_text: Option<String>,
    /// The session file as the replay left it.
    session: Option<SessionWritten>,
    steps: usize,
}

/// A session file a replay wrote: its digest, and its text.
#[derive(Debug)]
struct SessionWritten {
    digest: String,
    text: Option<String>,
}

impl SessionWritten {
    fn read(path: &Path) -> Option<SessionWritten> {
        let bytes = std::fs::read(path).ok()?;
        Some(SessionWritten {
            digest: pi_cassettes::sha256_hex(&bytes),
            text: String::from_utf8(bytes).ok(),
        })
    }
}

/// The tools' settings of a live replay in `workspace`: the process's, with `custom` tools.
fn live_env(workspace: &Path, custom: &ToolRegistry) -> pi_effects::tools::ToolEnv {
    let mut env = pi_effects::tools::ToolEnv::new(workspace).with_environment_overrides();
    env.custom = custom.clone();
    env
}

/// Why a recording that goes on across session replacements is not run again in part.
const ACROSS_SESSIONS_AGAIN: &str = "the recorded run replaced its session (`replaced` lines): its sessions replay from the recording only, so `--tools live`, `--extensions live` and `--config current` cannot be used with it";

/// Replays `cassette` in `mode`, its sessions in `dir`, printing to `out`.
pub(crate) async fn replay(
    cassette: Arc<Cassette>,
    mode: Mode,
    how: &How,
    dir: &Path,
    out: &mut Stdout,
) -> Result<ReplayRun, Divergence> {
    let unusable = |what: String| Divergence::unusable_cassette(&cassette, what);
    let again = how.live_tools.is_some()
        || how.live_extensions
        || matches!(how.config, ConfigSource::Current);
    if again && cassette.next_session().is_some() {
        return Err(unusable(ACROSS_SESSIONS_AGAIN.into()));
    }
    let config = match how.config {
        ConfigSource::Recorded => cassette.config.clone(),
        ConfigSource::Current => current_config(&cassette, how).map_err(unusable)?,
    };
    pi_mcp::check_recorded_servers(&config.mcp_servers, &config.declarable_tools())
        .map_err(unusable)?;
    if how.live_tools.is_some() && how.servers_from.is_some() {
        if let Some((server, extension)) = crate::mcp::registered_in(&cassette) {
            return Err(unusable(format!(
                "--tools live cannot start the MCP server \"{server}\", which the extension \"{extension}\" registered: a recording keeps no registered server's configuration (its env or headers may hold keys). Replay without --tools live."
            )));
        }
    }
    // Running a recorded custom tool again needs a program that provides it: the binary's are
    // the tools of the MCP servers the recording declares, as the agent dir the user names
    // configures them (a project's `mcp.json` is not read: no one is asked to trust it; a
    // server the recorded run did not have is not started), only when the recorded run
    // declared custom tools.
    let mut custom = ToolRegistry::new();
    let mut servers = crate::mcp::Servers::default();
    if let (Some(workspace), Some(agent_dir)) = (
        how.live_tools
            .as_ref()
            .filter(|_| !config.custom_tools.is_empty()),
        &how.servers_from,
    ) {
        let declared = recorded_server_names(&config.mcp_servers);
        // What the recording activated is in its configuration: only the tools matter here.
        let discovery = crate::mcp::Discovery {
            tool_search: recorded_tool_search(&config),
            codemode: None,
        };
        servers =
            crate::mcp::start_declared(agent_dir, workspace, &declared, &mut custom, discovery)
                .await;
    }
    // The replay, then the servers stopped together, as Pi stops them when a session ends.
    let ran = async {
        let unusable = |what: String| Divergence::unusable_cassette(&cassette, what);
        let missing = custom.missing(&config.custom_tools);
        if how.live_tools.is_some() && !missing.is_empty() {
            return Err(unusable(unregistered_tools_message(&missing)));
        }
        let store = cassette.starting_session(&config, dir).map_err(unusable)?;
        let (machine, file) = build_machine(&config, store).map_err(|e| unusable(e.to_string()))?;
        // Nothing else writes the replayed session while it runs.
        let file = file.held_open();
        let reported = cassette.header.session.path.as_ref().map(PathBuf::from);
        let rpc_runtime = if cassette.header.mode == RecordedMode::Rpc {
            Some(replay_runtime(&cassette).map_err(unusable)?)
        } else {
            None
        };
        // The replay takes the cassette's lines (the caller keeps no other handle on it).
        let mut replay = Replay::new(cassette)?;
        if let (Some(workspace), true) = (&how.live_tools, how.in_place) {
            replay = match &how.tool_env {
                Some(env) => replay.with_live_tools_env(env.clone()),
                None => replay.with_live_tools_env(live_env(workspace, &custom)),
            };
        }
        if how.live_extensions && !config.handled_hooks.is_empty() {
            let cwd = how
                .workspace
                .clone()
                .unwrap_or_else(|| PathBuf::from(&config.cwd));
            let extensions = crate::extensions::for_replay(replay.cassette(), &config, &cwd)
                .map_err(|e| Divergence::unusable_cassette(replay.cassette(), e))?;
            replay = replay.with_live_extensions(extensions);
        }
        let unusable = |what: String| Divergence::unusable_cassette(replay.cassette(), what);
        let scratch = match &how.live_tools {
            Some(workspace) if !how.in_place => {
                let scratch = Scratch::new();
                pi_cassettes::live_tools::scratch_copy(workspace, &scratch.0)
                    .map(|copy| (scratch, copy))
                    .map_err(|e| unusable(format!("cannot copy {}: {e}", workspace.display())))
                    .map(Some)?
            }
            _ => None,
        };
        let _scratch = match scratch {
            Some((scratch, copy)) => {
                replay = replay.with_live_tools_env(live_env(&copy, &custom));
                Some(scratch)
            }
            None => None,
        };
        let steps = replay.steps();
        if let Some(runtime) = rpc_runtime {
            let shared = replay.shared_cassette();
            let session = AgentSession::from_parts(machine, replay, file).reporting_path(reported);
            let taken = std::mem::replace(out, Stdout::discarded());
            let later = Some(dir.to_path_buf());
            let replayed = crate::rpc::replay(runtime, session, taken, later).await;
            return Ok(ReplayRun {
                cassette: shared,
                code: replayed.result?,
                stdout: replayed.stdout,
                stdout_text: replayed.stdout_text,
                events: None,
                events_text: None,
                session: replayed
                    .session_file
                    .and_then(|path| SessionWritten::read(&path)),
                steps: steps + replayed.later_steps,
            });
        }
        let mut session = AgentSession::from_parts(machine, replay, file).reporting_path(reported);
        let (code, later_steps) = print_sessions(&mut session, mode, dir, out).await?;
        Ok(ReplayRun {
            cassette: session.interpreter().shared_cassette(),
            code,
            stdout: out.digest().unwrap_or_default(),
            stdout_text: out.text().map(str::to_owned),
            events: out.events_digest(),
            events_text: out.events_text().map(str::to_owned),
            session: session.written_file().and_then(SessionWritten::read),
            steps: steps + later_steps,
        })
    }
    .await;
    servers.stop().await;
    ran
}

/// Replays a print-mode recording's sessions in turn, from `session` (its first) on, printing
/// to `out`: each session's recorded inputs, then, where the recorded run replaced it (a
/// program's recording through the SDK), the check of how it was left and the next session
/// rebuilt in `dir`. Returns the exit code and the steps of the sessions after the first;
/// `session` is the last one at the end.
async fn print_sessions(
    session: &mut AgentSession<Replay>,
    mode: Mode,
    dir: &Path,
    out: &mut Stdout,
) -> Result<(i32, usize), Divergence> {
    let mut later_steps = 0;
    let mut first = true;
    loop {
        let next = session.interpreter().cassette().next_session();
        let part = Part {
            first,
            last: next.is_none(),
            recorded: true,
        };
        let inputs = session.interpreter().outside_inputs();
        let code = print_mode::run_part(session, mode, inputs, out, part, None)
            .await
            .map_err(|error| Divergence::of_run(&error, session.interpreter().cassette()))?;
        let Some(next) = next else {
            session.interpreter_mut().finish()?;
            return Ok((code, later_steps));
        };
        let rebuilt = ReplayedSession::rebuild(next, dir)?.into_session(|replay| replay);
        later_steps += rebuilt.interpreter().steps();
        let old = std::mem::replace(session, rebuilt);
        let left_file = old.written_file().map(Path::to_path_buf);
        let replay = old.into_interpreter();
        let reason = replay.cassette().left().map(|left| left.reason.clone());
        replay.left(reason.as_deref().unwrap_or_default(), left_file.as_deref())?;
        first = false;
    }
}

/// The front end's view of the world for an RPC replay: the recorded command line in the
/// recorded working directory, from the header alone (see [`Runtime::replaying`]): today's
/// directory, HOME, settings and environment play no part.
fn replay_runtime(cassette: &Cassette) -> Result<Runtime, String> {
    let command = cassette.header.command.clone().unwrap_or_default();
    let args = Args::parse_from_args(command).map_err(|e| e.to_string())?;
    let cwd = PathBuf::from(&cassette.config.cwd);
    let (models, scoped) = crate::cassette::recorded_models(cassette);
    let resources = cassette.config.resources.clone();
    Ok(Runtime::replaying(&args, cwd, models, scoped, resources))
}

/// The recorded run's configuration rebuilt from today's settings, context files and prompt:
/// the recorded command line read again here (`--workspace`, else the current directory: the
/// context files and project settings of this checkout, not of the machine that recorded it),
/// with the recorded model, thinking level, start time, seed and custom tools' declarations.
fn current_config(cassette: &Cassette, how: &How) -> Result<RunConfig, String> {
    let recorded = &cassette.config;
    let command = cassette.header.command.clone().ok_or(
        "the cassette does not hold its command line, so today's configuration of it is unknown",
    )?;
    let mut args = Args::parse_from_args(command).map_err(|e| e.to_string())?;
    // An extension's trust decision is the recording's answer: nobody is asked again, and
    // nothing is remembered.
    if let (Some(decided), None) = (cassette.header.project_trust, args.project_trust()) {
        args.approve = decided.trusted;
        args.no_approve = !decided.trusted;
    }
    let here = match &how.workspace {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(|e| e.to_string())?,
    };
    let here = std::path::absolute(&here).map_err(|e| format!("{}: {e}", here.display()))?;
    let mut runtime = Runtime::from_recorded_args(&args, here).map_err(|e| e.to_string())?;
    if cassette.header.mode == RecordedMode::Rpc {
        runtime.cache_warming = runtime.rpc_cache_warming();
    }
    let mut options = runtime.session_options(recorded.model.clone(), recorded.thinking_level);
    // The runtime read from the command line has started no extension or MCP server, so the
    // recorded custom tools stay declared as the run declared them (a call to one is answered
    // from the cassette): they were the active ones, so an allowlist leaves none out, nor
    // does the command line's rule of which tools may be registered.
    options.tools_allowlist = None;
    options.custom_tools = ToolRegistry::new();
    for tool in &recorded.custom_tools {
        options
            .custom_tools
            .register(Arc::new(DeclaredOnly::new(tool.clone())));
    }
    options.seed = Some(recorded.seed);
    options.docs = recorded.docs.clone();
    let mut config = options
        .run_config(recorded.started_at)
        .map_err(|e| e.to_string())?;
    config.cwd.clone_from(&recorded.cwd);
    Ok(config)
}

fn output_mode(args: &ReplayArgs, cassette: &Cassette) -> Mode {
    recorded_mode(cassette, args.mode)
}

/// The output mode a replay prints in: `chosen`, else the recorded one (json for rpc).
pub(crate) fn recorded_mode(cassette: &Cassette, chosen: Option<ReplayMode>) -> Mode {
    match chosen {
        Some(ReplayMode::Text) => Mode::Text,
        Some(ReplayMode::Json) => Mode::Json,
        None if cassette.header.mode == RecordedMode::Text => Mode::Text,
        None => Mode::Json,
    }
}

/// A scratch directory of its own, removed when dropped (the workspace copy of `--tools live`).
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        Scratch(std::env::temp_dir().join(format!("pi-replay-tools-{}-{n}", std::process::id())))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A scratch directory for one replay's session.
pub(crate) fn scratch_dir(n: usize) -> PathBuf {
    std::env::temp_dir().join(format!("pi-replay-{}-{n}", std::process::id()))
}

/// A runtime for replays on this thread (one per thread: a check makes many replays).
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start: {error}");
            std::process::exit(1)
        }
    }
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    runtime().block_on(future)
}

/// How one cassette fared in a check.
pub(crate) enum CheckVerdict {
    Reproduced { steps: usize },
    Diverged(Divergence),
    Unusable(String),
}

/// The cassette files `paths` name, and how many jobs check them (`--jobs`, or one per
/// core, no more than the files); what to exit with when there are none.
pub(crate) fn files_and_jobs(
    paths: &[PathBuf],
    jobs: Option<usize>,
) -> Result<(Vec<PathBuf>, usize), i32> {
    let files = match cassette_files(paths) {
        Ok(files) => files,
        Err(error) => {
            eprintln!("{error}");
            return Err(UNUSABLE);
        }
    };
    if files.is_empty() {
        eprintln!("no cassettes found in {}", display_paths(paths));
        return Err(UNUSABLE);
    }
    let jobs = jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, files.len());
    Ok((files, jobs))
}

fn check(args: &ReplayArgs, how: &How) -> i32 {
    let started = Instant::now();
    let (files, jobs) = match files_and_jobs(&args.paths, args.jobs) {
        Ok(found) => found,
        Err(code) => return code,
    };
    // The largest first, so that no job is left with a long one at the end; verdicts are
    // printed in path order.
    let mut order: Vec<usize> = (0..files.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(std::fs::metadata(&files[i]).map_or(0, |m| m.len())));
    let next = AtomicUsize::new(0);
    let verdicts: Mutex<Vec<Option<CheckVerdict>>> =
        Mutex::new((0..files.len()).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..jobs {
            scope.spawn(|| {
                let runtime = runtime();
                loop {
                    let Some(&index) = order.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        return;
                    };
                    let path = &files[index];
                    let verdict = check_one(&runtime, path, how, index);
                    verdicts.lock().unwrap_or_else(PoisonError::into_inner)[index] = Some(verdict);
                }
            });
        }
    });
    let verdicts = verdicts
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    let (mut reproduced, mut diverged, mut unusable) = (0, 0, 0);
    for (path, verdict) in files.iter().zip(verdicts) {
        match verdict {
            Some(CheckVerdict::Reproduced { steps }) => {
                reproduced += 1;
                println!("ok        {} ({steps} steps)", shown(path));
            }
            Some(CheckVerdict::Diverged(divergence)) => {
                diverged += 1;
                println!("DIVERGED  {}", shown(path));
                eprintln!("{}\n", printable(&divergence.to_string()));
            }
            Some(CheckVerdict::Unusable(why)) => {
                unusable += 1;
                println!("UNUSABLE  {}", shown(path));
                eprintln!("{}\n", printable(&why));
            }
            None => unusable += 1,
        }
    }
    println!(
        "{} cassettes: {reproduced} reproduced, {diverged} diverged, {unusable} unusable ({} jobs, {:.2} s)",
        files.len(),
        jobs,
        started.elapsed().as_secs_f64()
    );
    if diverged > 0 {
        1
    } else if unusable > 0 {
        UNUSABLE
    } else {
        0
    }
}

pub(crate) fn check_one(
    runtime: &tokio::runtime::Runtime,
    path: &Path,
    how: &How,
    index: usize,
) -> CheckVerdict {
    let cassette = match Cassette::load(path) {
        Ok(cassette) => Arc::new(cassette),
        Err(error) => return CheckVerdict::Unusable(error.to_string()),
    };
    let dir = scratch_dir(index + 1);
    let mode = if cassette.header.mode == RecordedMode::Text {
        Mode::Text
    } else {
        Mode::Json
    };
    let outcome = cassette.outcome().cloned();
    let mut out = match &outcome {
        Some(outcome) if outcome.updates_omitted => Stdout::discarded_without_updates(),
        _ => Stdout::discarded(),
    };
    let result = runtime.block_on(replay(cassette, mode, how, &dir, &mut out));
    let _ = std::fs::remove_dir_all(&dir);
    let replayed = match result {
        Ok(replayed) => replayed,
        Err(divergence) if divergence.is_cassette_fault() => {
            return CheckVerdict::Unusable(divergence.to_string())
        }
        Err(divergence) => return CheckVerdict::Diverged(divergence),
    };
    let Some(outcome) = outcome else {
        return CheckVerdict::Unusable(format!(
            "{}: the recording has no outcome line (the recording run was interrupted)",
            path.display()
        ));
    };
    match differs(&outcome, &replayed) {
        Some((what, expected, actual)) => CheckVerdict::Diverged(Divergence::output(
            &replayed.cassette,
            what,
            &expected,
            &actual,
        )),
        None => CheckVerdict::Reproduced {
            steps: replayed.steps,
        },
    }
}

/// The first of the exit code, stdout, the session file and the events (text mode) that the
/// replay did otherwise than the recording: what it is, recorded and replayed, as texts when
/// the cassette holds the recorded text (else as digests).
fn differs(
    outcome: &RecordedOutcome,
    replayed: &ReplayRun,
) -> Option<(&'static str, String, String)> {
    if outcome.exit != replayed.code {
        let (expected, actual) = (outcome.exit.to_string(), replayed.code.to_string());
        return Some(("exit code", expected, actual));
    }
    // An imported cassette has no output of Pi's to compare with (see `Imported`).
    let imported = replayed.cassette.header.imported.is_some();
    let session = replayed.session.as_ref();
    let compared = [
        (
            "stdout",
            (!imported).then_some((&outcome.stdout, &outcome.stdout_text)),
            (replayed.stdout.clone(), replayed.stdout_text.clone()),
        ),
        (
            "session file",
            Some((
                &outcome.session.clone().unwrap_or_default(),
                &outcome.session_text,
            )),
            (
                session.map(|s| s.digest.clone()).unwrap_or_default(),
                session.and_then(|s| s.text.clone()),
            ),
        ),
        (
            "events",
            outcome
                .events
                .as_ref()
                .filter(|_| !imported)
                .map(|digest| (digest, &outcome.events_text)),
            (
                replayed.events.clone().unwrap_or_default(),
                replayed.events_text.clone(),
            ),
        ),
    ];
    for (what, recorded, (digest, text)) in compared {
        let Some((recorded_digest, recorded_text)) = recorded else {
            continue;
        };
        let shown = pi_cassettes::printed::shown_difference(
            recorded_digest,
            recorded_text.as_deref(),
            &digest,
            text,
        );
        if let Some((expected, actual)) = shown {
            return Some((what, expected, actual));
        }
    }
    None
}

/// The cassettes among `paths`: files as given, directories searched (recursively) for files
/// whose first line is a cassette header, in path order. Each other `.jsonl` or `.cassette` file
/// found in a directory is named on stderr as skipped (a stray file or a Pi session must not
/// make a check unusable); a file named in `paths` is taken whatever it holds.
pub(crate) fn cassette_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let mut files = Vec::new();
    for path in paths {
        if path.is_dir() {
            collect_dir(path, &mut files)?;
        } else if path.exists() {
            files.push(path.clone());
        } else {
            return Err(format!("{}: no such file or directory", path.display()));
        }
    }
    Ok(files)
}

fn collect_dir(dir: &Path, files: &mut Vec<PathBuf>) -> Result<(), String> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot read {}: {e}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect_dir(&path, files)?;
            continue;
        }
        let named = path
            .extension()
            .is_some_and(|e| e == "jsonl" || e == "cassette");
        if !named || is_session_blob(&path) {
            continue;
        }
        if starts_as_cassette(&path) {
            files.push(path);
        } else {
            eprintln!(
                "skipped {}: not a cassette (its first line is not a cassette header)",
                shown(&path)
            );
        }
    }
    Ok(())
}

/// Bytes of a file's first line read to tell whether it is a cassette header (a header holds
/// the system prompt and the resumed session's name, not the session itself).
const MAX_HEADER_BYTES: u64 = 16 << 20;

/// Whether `path` starts as a cassette, whatever follows: its first line a cassette header
/// (`"type": "cassette"`), a header whose type was changed (it holds the header's `harness`
/// and `config`), or another line of a cassette (its header gone). A damaged cassette is
/// taken, so that it is reported, never skipped as a stray file.
fn starts_as_cassette(path: &Path) -> bool {
    #[derive(serde::Deserialize)]
    struct Tag {
        #[serde(rename = "type")]
        kind: Option<String>,
        harness: Option<serde_json::Value>,
        config: Option<serde_json::Value>,
    }
    let Ok(file) = std::fs::File::open(path) else {
        // Taken, so that the check says why it cannot be read.
        return true;
    };
    let mut first = Vec::new();
    let mut reader = std::io::BufReader::new(std::io::Read::take(file, MAX_HEADER_BYTES));
    if std::io::BufRead::read_until(&mut reader, b'\n', &mut first).is_err() {
        return true;
    }
    if first.starts_with(b"{\"type\":\"cassette\"") {
        return true;
    }
    let header = serde_json::from_slice::<Tag>(&first).is_ok_and(|tag| {
        tag.kind.as_deref() == Some("cassette") || (tag.harness.is_some() && tag.config.is_some())
    });
    header || serde_json::from_slice::<Line>(&first).is_ok()
}

/// A large resumed session a cassette keeps beside it (`blobs/<sha256>.jsonl`): part of its
/// cassette, not a stray file.
fn is_session_blob(path: &Path) -> bool {
    let in_blobs = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|d| d == "blobs");
    let hex_name = path
        .file_stem()
        .and_then(|s| s.to_str())
        .is_some_and(|s| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()));
    in_blobs && hex_name
}

/// A cassette's path as a check prints it (its name may hold terminal controls).
pub(crate) fn shown(path: &Path) -> String {
    printable(&path.display().to_string()).into_owned()
}

pub(crate) fn display_paths(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The recorded run's `tool_search`: `None` when it did not register it, else whether it was
/// active from the start.
fn recorded_tool_search(config: &RunConfig) -> Option<bool> {
    let named = |t: &CustomToolDefinition| t.name == TOOL_SEARCH_TOOL_NAME;
    if config.custom_tools.iter().any(named) {
        return Some(true);
    }
    let loadout = config.tool_loadout.as_ref()?;
    loadout.inactive_tools.iter().any(named).then_some(false)
}
