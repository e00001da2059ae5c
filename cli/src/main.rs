//! `pi`: Pi's command line. Glue only: arguments and settings in, a session built by
//! `pi-effects`, one of the output modes out.
//!
//! This build has no interactive interface. Where Pi would start it (a terminal on stdin, no
//! `-p`, no `--mode json|rpc`), `pi` runs the messages as `-p` would, and without any message
//! says so and exits with 1; `--resume` lists the sessions instead of opening a picker.

mod args;
mod cassette;
mod chaos_cmd;
mod columns;
mod eval_cmd;
mod export;
mod files;
mod import_cmd;
mod list_models;
mod model_select;
mod output;
mod print_mode;
mod printable;
mod proxy_cmd;
mod replay_cmd;
mod request_options;
mod resume;
mod rpc;
mod secrets;
mod settings;
mod setup;
mod signals;

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use args::{Args, Mode};
use setup::{Diagnostic, Runtime, SessionChoice};

/// Why the binary stopped before running anything.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A wrong flag or value; the message says which.
    #[error("{0}")]
    Usage(String),
    #[error("{0}")]
    Session(String),
    /// Another process is writing the session file.
    #[error("{0}; wait for it to finish or pass --wait-for-session")]
    SessionHeld(pi_effects::session::LockError),
    /// A cassette that cannot be used (exit 125).
    #[error("{0}")]
    Cassette(String),
    #[error("cannot use {what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}

/// mimalloc instead of the system allocator: opening a large session allocates hundreds of
/// thousands of strings on several threads at once, where glibc's per-thread arenas grow a page
/// range at a time (thousands of `mprotect` calls). Built without transparent huge pages: on a
/// virtual machine that hands freed memory back to its host, every fresh 2 MiB page is faulted
/// in from the host again, which made a large session's open two to four times slower.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The Pi version this build follows.
const VERSION: &str = "0.73.1";
const HELP: &str = include_str!("help.txt");

/// The message when Pi would open its interactive interface with nothing to send.
const NO_INTERACTIVE: &str = "Error: interactive mode is not available in this build. Pass a message (pi \"...\"), pipe one on stdin, or use --mode rpc.";

/// Where Pi's `console.log` lines go: stdout in interactive mode, else stderr (Pi's print, json
/// and rpc modes keep stdout for their own output).
#[derive(Clone, Copy, Debug)]
struct Console {
    interactive: bool,
}

impl Console {
    fn log(self, text: &str) {
        if self.interactive {
            println!("{text}");
        } else {
            eprintln!("{text}");
        }
    }
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    set_offline(&argv);
    if argv.first().is_some_and(|a| a == "replay") {
        let code = match replay_cmd::parse(&argv[1..]) {
            Ok((args, how)) if args.chaos.is_some() => chaos_cmd::run(&args, &how),
            Ok((args, how)) => replay_cmd::run(&args, &how),
            Err(code) => code,
        };
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    if argv.first().is_some_and(|a| a == "import") {
        return import_cmd::main(&argv[1..]);
    }
    if argv.first().is_some_and(|a| a == "eval") {
        return eval_cmd::main(&argv[1..]);
    }
    if argv.first().is_some_and(|a| a == "proxy") {
        return proxy_cmd::main(&argv[1..]);
    }
    let command = cassette::recorded_command(&argv);
    let args = match Args::parse_from_args(argv) {
        Ok(args) => args,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(1);
        }
    };
    let console = Console {
        interactive: std::io::stdin().is_terminal()
            && !args.print
            && matches!(args.mode, None | Some(Mode::Text)),
    };
    if args.version {
        console.log(VERSION);
        return ExitCode::SUCCESS;
    }
    if let Some(file) = &args.export {
        let messages = args.text_messages();
        let out = messages.first().map(Path::new);
        return match export::export_html(Path::new(file), out) {
            Ok(path) => {
                console.log(&format!("Exported to: {}", path.display()));
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("Error: {error}");
                ExitCode::from(1)
            }
        };
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start: {error}");
            return ExitCode::from(1);
        }
    };
    let code = runtime.block_on(run(args, console, command));
    // Dropping the tasks still running (a cancelled tool, a command the run left behind) kills
    // their processes; give that a moment instead of exiting past it.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// `--offline` or a true `PI_OFFLINE`: Pi sets `PI_OFFLINE=1` and `PI_SKIP_VERSION_CHECK=1` for
/// the whole process, so commands the tools run see them too.
fn set_offline(argv: &[String]) {
    let truthy = std::env::var("PI_OFFLINE")
        .is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true") || v.eq_ignore_ascii_case("yes"));
    if truthy || argv.iter().any(|a| a == "--offline") {
        // Still single-threaded: nothing else reads the environment yet.
        std::env::set_var("PI_OFFLINE", "1");
        std::env::set_var("PI_SKIP_VERSION_CHECK", "1");
    }
}

async fn run(args: Args, console: Console, command: Vec<String>) -> i32 {
    match start(args, console, command).await {
        Ok(code) => code,
        Err(error @ CliError::Cassette(_)) => {
            eprintln!("{error}");
            cassette::UNUSABLE
        }
        Err(error) => {
            eprintln!("{error}");
            1
        }
    }
}

async fn start(args: Args, console: Console, command: Vec<String>) -> Result<i32, CliError> {
    let mode = args.mode();
    let file_args: Vec<String> = args
        .messages
        .iter()
        .filter_map(|m| m.strip_prefix('@').map(str::to_owned))
        .collect();
    if mode == Mode::Rpc && !file_args.is_empty() {
        eprintln!("Error: @file arguments are not supported in RPC mode");
        return Ok(1);
    }
    if let Some(conflicts) = fork_conflicts(&args) {
        eprintln!("Error: --fork cannot be combined with {conflicts}");
        return Ok(1);
    }
    let cwd = std::env::current_dir().map_err(|source| CliError::Io {
        what: "the working directory".into(),
        source,
    })?;
    let runtime = Runtime::from_args(&args, cwd)?;
    for warning in &runtime.warnings {
        eprintln!("Warning: {warning}");
    }
    if args.resume && !args.no_session && args.fork.is_none() && args.session.is_none() {
        let sessions = pi_effects::session::list_sessions(&runtime.session_dir);
        let cwd = runtime.cwd.to_string_lossy();
        for line in resume::listing(&cwd, &sessions) {
            println!("{line}");
        }
        return Ok(0);
    }
    let choice = session_choice(&args, &runtime)?;
    if args.help {
        // help.txt ends with the newline Pi's `console.log` adds.
        console.log(HELP.strip_suffix('\n').unwrap_or(HELP));
        return Ok(0);
    }
    if let Some(search) = &args.list_models {
        let error = runtime.registry.error().map(ToString::to_string);
        let listing = list_models::list_models(
            &runtime.available_models(),
            Some(search),
            error,
            &setup::no_models_available(),
        );
        if let Some(warning) = listing.warning {
            eprintln!("{warning}");
        }
        for line in listing.lines {
            console.log(&line);
        }
        return Ok(0);
    }
    let stdin = (mode != Mode::Rpc).then(files::read_piped_stdin).flatten();
    let files = if file_args.is_empty() {
        files::FileArgs::default()
    } else {
        match files::process_file_arguments(
            &file_args,
            &runtime.cwd,
            runtime.settings.auto_resize_images(),
        )
        .await
        {
            Ok(files) => files,
            Err(message) => {
                eprintln!("{message}");
                return Ok(1);
            }
        }
    };
    let texts: Vec<String> = args
        .text_messages()
        .iter()
        .map(|m| (*m).to_owned())
        .collect();
    let message = files::initial_message(stdin, files, &texts);
    for diagnostic in &runtime.diagnostics {
        eprintln!("{diagnostic}");
    }
    if runtime
        .diagnostics
        .iter()
        .any(|d| matches!(d, Diagnostic::Error(_)))
    {
        return Ok(1);
    }
    let plan = cassette::Plan::of(&args, runtime.settings.record_cassettes())?;
    if mode == Mode::Rpc {
        return rpc::run(runtime, &choice, plan, command).await;
    }
    if console.interactive && message.first.is_none() && message.rest.is_empty() {
        eprintln!("{NO_INTERACTIVE}");
        return Ok(1);
    }
    let built = runtime.build(&choice, plan.start(), plan.records())?;
    let prompts: Vec<String> = message.first.into_iter().chain(message.rest).collect();
    let model = built.machine.agent().model().clone();
    let replaying = matches!(plan, cassette::Plan::Replay(_) | cassette::Plan::Hybrid(..));
    if !prompts.is_empty() && !replaying && !runtime.has_auth(&model) {
        if mode == Mode::Json {
            let mut out = output::Stdout::new();
            out.json_line(built.machine.tree().header());
        }
        eprintln!("{}", setup::no_api_key_found(&model.provider));
        return Ok(1);
    }
    let inputs = print_mode::prompts(prompts, message.images);
    let info = cassette::RunInfo {
        mode,
        command,
        runtime: &runtime,
    };
    cassette::run_print(plan, built, info, inputs).await
}

/// Pi refuses `--fork` together with another session flag; the flags, as Pi lists them.
fn fork_conflicts(args: &Args) -> Option<String> {
    args.fork.as_ref()?;
    let conflicts: Vec<&str> = [
        (args.session.is_some(), "--session"),
        (args.continue_session, "--continue"),
        (args.resume, "--resume"),
        (args.no_session, "--no-session"),
    ]
    .iter()
    .filter(|(set, _)| *set)
    .map(|(_, flag)| *flag)
    .collect();
    (!conflicts.is_empty()).then(|| conflicts.join(", "))
}

/// The session a run works in, from `--no-session`, `--session`, `--fork`, `--continue`.
fn session_choice(args: &Args, runtime: &Runtime) -> Result<SessionChoice, CliError> {
    if args.no_session {
        return Ok(SessionChoice::InMemory);
    }
    if let Some(reference) = &args.fork {
        return Ok(SessionChoice::Fork(runtime.find_session(reference)?));
    }
    if let Some(reference) = &args.session {
        return Ok(SessionChoice::Open(runtime.find_session(reference)?));
    }
    if args.continue_session {
        return Ok(SessionChoice::ContinueRecent);
    }
    Ok(SessionChoice::New)
}
