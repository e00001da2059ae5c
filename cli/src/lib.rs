//! Pi's command line as a library: print mode, RPC mode, the sessions and settings they are
//! built from (`setup`), cassettes, and the `replay`, `import`, `eval` and `proxy` commands. The
//! `pi` binary parses the command line and hands it here.
//!
//! This build has no interactive interface. Where Pi would start it (a terminal on stdin, no
//! `-p`, no `--mode json|rpc`), `pi` runs the messages as `-p` would, and without any message
//! says so and exits with 1; `--resume` lists the sessions instead of opening a picker.

mod args;
mod atif_cmd;
mod cassette;
mod chaos_cmd;
mod columns;
mod diagnostic;
mod eval_cmd;
mod export;
mod extensions;
mod files;
mod import_cmd;
mod list_models;
mod mcp;
mod model_choice;
mod model_select;
mod output;
mod print_mode;
mod printable;
mod prompt_files;
mod proxy_cmd;
mod reload;
mod replacement;
mod replay_cmd;
mod request_options;
mod rerecord;
mod resume;
mod rpc;
mod secrets;
use pi_effects::settings;
mod setup;
mod signals;
mod tool_select;
mod trust;

pub use args::{pi_usage_error, Args, Mode};
pub use cassette::recorded_command;
pub use export::export_html;
use setup::{Diagnostic, Runtime, SessionChoice};

/// The subcommands, each with its own flags: `pi replay`, `pi import`, `pi eval`, `pi proxy`.
pub mod commands {
    pub use crate::atif_cmd::main as export;
    pub use crate::eval_cmd::main as eval;
    pub use crate::import_cmd::main as import;
    pub use crate::proxy_cmd::main as proxy;

    /// `pi replay`, its `--rerecord`, or its `--chaos` (which checks with the replay's own
    /// machinery): the process's exit code.
    pub fn replay(argv: &[String]) -> std::process::ExitCode {
        let code = match crate::replay_cmd::parse(argv) {
            Ok((args, _)) if args.rerecord => crate::rerecord::run(&args.paths),
            Ok((args, how)) if args.chaos.is_some() => crate::chaos_cmd::run(&args, &how),
            Ok((args, how)) => crate::replay_cmd::run(&args, &how),
            Err(code) => code,
        };
        std::process::ExitCode::from(u8::try_from(code).unwrap_or(1))
    }
}

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

/// The Pi version this build follows (and records in its cassettes).
pub const VERSION: &str = pi_cassettes::PI_EDITION;
const HELP: &str = include_str!("help.txt");

/// The message when Pi would open its interactive interface with nothing to send.
const NO_INTERACTIVE: &str = "Error: interactive mode is not available in this build. Pass a message (pi \"...\"), pipe one on stdin, or use --mode rpc.";

/// Where Pi's `console.log` lines go: stdout in interactive mode and for a plain `--help` or
/// `--list-models` (neither `--print` nor `--mode`), else stderr (Pi's print, json and rpc modes
/// keep stdout for their own output).
#[derive(Clone, Copy, Debug)]
pub struct Console {
    /// Pi would open its interactive interface.
    pub interactive: bool,
    /// The command only prints what the runtime knows (Pi 1.5's `isPlainRuntimeMetadataCommand`).
    pub plain_metadata: bool,
}

impl Console {
    /// The console of a run with these arguments, stdin being a terminal or not.
    pub fn of(args: &Args, stdin_is_terminal: bool) -> Console {
        Console {
            interactive: stdin_is_terminal
                && !args.print
                && matches!(args.mode, None | Some(Mode::Text)),
            plain_metadata: !args.print
                && args.mode.is_none()
                && (args.help || args.list_models.is_some()),
        }
    }

    /// Prints `text` as Pi's `console.log` does in this mode.
    pub fn log(self, text: &str) {
        if self.interactive || self.plain_metadata {
            println!("{text}");
        } else {
            eprintln!("{text}");
        }
    }
}

/// Runs the command line `args` (`command` is the recorded form of it, for a cassette's header)
/// and gives the exit code; errors are printed.
pub async fn run(args: Args, console: Console, command: Vec<String>) -> i32 {
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
    if let Some(error) = args.tui_mode_error() {
        eprintln!("Error: {error}");
        return Ok(1);
    }
    if let Some(error) = session_id_error(&args) {
        eprintln!("Error: {error}");
        return Ok(1);
    }
    let cwd = std::env::current_dir().map_err(|source| CliError::Io {
        what: "the working directory".into(),
        source,
    })?;
    let replayed_trust = cassette::replayed_trust(&args);
    let mut runtime = match replayed_trust {
        Some(decided) => {
            let mut recorded = args.clone();
            recorded.approve = decided.trusted;
            recorded.no_approve = !decided.trusted;
            let mut runtime = Runtime::from_args(&recorded, cwd)?;
            runtime.trust_by_extension = Some(pi_effects::extension::sidecar::TrustDecision {
                trusted: decided.trusted,
                remember: decided.remember,
            });
            runtime
        }
        None => Runtime::from_args(&args, cwd)?,
    };
    runtime.mcp_off = args.no_mcp;
    let extension_flags = runtime.start_extensions(&args.extension_flags);
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
    if args
        .name
        .as_deref()
        .is_some_and(|name| name.trim().is_empty())
    {
        eprintln!("Error: --name requires a non-empty value");
        return Ok(1);
    }
    if let (Some(_), Some(id)) = (&args.fork, &args.session_id) {
        if local_session(&runtime, id).is_some() {
            eprintln!("Session already exists with id '{id}'");
            return Ok(1);
        }
    }
    let choice = session_choice(&args, &runtime)?;
    if args.help {
        // Pi reports what it found wrong, then helps all the same.
        for diagnostic in &runtime.diagnostics {
            eprintln!("{diagnostic}");
        }
        let help = extensions::help_with_flags(HELP, &extension_flags);
        // help.txt ends with the newline Pi's `console.log` adds.
        console.log(help.strip_suffix('\n').unwrap_or(&help));
        return Ok(0);
    }
    if let Some(search) = &args.list_models {
        // As with `--help`: what was found wrong is reported, and the models listed all the same.
        for diagnostic in &runtime.diagnostics {
            eprintln!("{diagnostic}");
        }
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
    if extensions::load_failed(&runtime.diagnostics) {
        eprintln!("{}", extensions::LOAD_FAILURE_HINT);
    }
    if runtime
        .diagnostics
        .iter()
        .any(|d| matches!(d, Diagnostic::Error(_)))
    {
        return Ok(1);
    }
    let plan = cassette::CassettePlan::of(&args, runtime.settings.record_cassettes())?;
    let replaying = matches!(
        plan,
        cassette::CassettePlan::Replay(_) | cassette::CassettePlan::Hybrid(..)
    );
    // A replay's tools are the cassette's; a live run starts its MCP servers before the first
    // prompt, as Pi's MCP extension does at session start.
    let mut mcp_servers = mcp::Servers::default();
    if args.no_mcp {
        // Without Pi's MCP extension nothing connects the servers extensions registered.
        runtime.start_errors = mcp::unconnected(&runtime.mcp_registered);
        runtime.mcp_off = true;
        if let Some(host) = &runtime.extension_host {
            if let Err(error) = host.mcp_unconnected() {
                eprintln!("{error}");
                return Ok(1);
            }
        }
    }
    if !args.no_mcp && !replaying {
        // Pi's `tool_search` as the servers find it: registered once they start.
        let tool_search = runtime.tool_search_registered.then(|| {
            runtime
                .tools
                .iter()
                .any(|t| t == pi_core::tools::tool_search::TOOL_SEARCH_TOOL_NAME)
        });
        // Pi's codemode as the servers find it: registered when the extension host runs it.
        let codemode = runtime
            .custom_tools
            .get(tool_select::CODEMODE_TOOL_NAME)
            .is_some()
            .then(|| {
                runtime
                    .tools
                    .iter()
                    .any(|t| t == tool_select::CODEMODE_TOOL_NAME)
            });
        let discovery = mcp::Discovery {
            tool_search,
            codemode,
        };
        let mut servers = mcp::start_reporting(
            runtime.mcp_config().clone(),
            &runtime.cwd,
            &runtime.mcp_registered,
            &mut runtime.custom_tools,
            discovery,
        )
        .await;
        runtime.mcp_started = !servers.listed.is_empty() || servers.section.is_some();
        runtime.mcp_activates_tool_search = servers.activates_tool_search;
        runtime.mcp_activates_codemode = servers.activates_codemode;
        runtime.mcp_servers = std::mem::take(&mut servers.listed);
        runtime.mcp_section = servers.section.take();
        runtime.mcp_later_section = servers.later_section.take();
        runtime.mcp_warning = servers.warning.take();
        if let Some(background) = &servers.background {
            // Pi's MCP extension waits for them in its `tool_call` handler, and registers
            // each one's tools as it connects, before any handler can look.
            runtime
                .extensions
                .load(std::sync::Arc::clone(background) as _);
            runtime
                .extensions
                .load_first(std::sync::Arc::new(pi_mcp::EarlyRegistration::new(
                    std::sync::Arc::clone(background),
                )));
        }
        // A run that loads no extension now may load some for a session that replaces its
        // first (the settings naming them since): Pi's MCP extension connects theirs then.
        let late = runtime.extension_host.is_none() && runtime.loads_extensions;
        if runtime.extension_host.is_some() || late {
            // Pi's MCP extension follows the servers extensions register after loading.
            let later = std::sync::Arc::new(
                pi_mcp::Later::new(
                    runtime.cwd.clone(),
                    runtime.mcp_config(),
                    &runtime.mcp_registered,
                    &runtime.mcp_servers,
                    runtime.custom_tools.clone(),
                    servers.resources.clone(),
                    servers.connections.clone(),
                )
                .with_background(servers.background.clone()),
            );
            if let Some(host) = &runtime.extension_host {
                later.on_notices(notices_on(host), servers.warned);
            }
            if !late {
                runtime.extensions.load(std::sync::Arc::clone(&later) as _);
            }
            runtime.mcp_later = Some(std::sync::Arc::clone(&later));
            servers.later = Some(later);
        }
        mcp_servers = servers;
    }
    // The session, then its servers stopped together, as Pi stops them when it ends.
    let ran = async {
        if mode == Mode::Rpc {
            runtime.cache_warming = runtime.rpc_cache_warming();
            return rpc::run(runtime, &choice, plan, command).await;
        }
        if console.interactive && message.first.is_none() && message.rest.is_empty() {
            eprintln!("{NO_INTERACTIVE}");
            return Ok(1);
        }
        let built = runtime.build(&choice, plan.start(), plan.records())?;
        let prompts: Vec<String> = message.first.into_iter().chain(message.rest).collect();
        let model = built.machine.agent().model().clone();
        // Pi runs an extension command before asking for a key: prompts that are all commands
        // need none.
        let needs_key = prompts
            .iter()
            .any(|p| !built.machine.is_extension_command(p));
        if needs_key && !replaying && !runtime.has_auth(&model) {
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
    .await;
    mcp_servers.stop().await;
    ran
}

/// Shows the built-in MCP extension's notices on `host`'s UI, as Pi's `ctx.ui.notify`.
pub(crate) fn notices_on(
    host: &std::sync::Arc<pi_effects::extension::sidecar::ExtensionHost>,
) -> pi_mcp::later::NoticeSink {
    let host = std::sync::Arc::clone(host);
    Box::new(move |message, kind| host.notify(message, kind))
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

/// Pi 1.5 refuses `--session-id` beside another way of choosing the session, and an id it
/// could not use as a file name (`assertValidSessionId`).
fn session_id_error(args: &Args) -> Option<String> {
    let id = args.session_id.as_deref()?;
    let conflicts: Vec<&str> = [
        (args.session.is_some(), "--session"),
        (args.continue_session, "--continue"),
        (args.resume, "--resume"),
    ]
    .iter()
    .filter(|(set, _)| *set)
    .map(|(_, flag)| *flag)
    .collect();
    if !conflicts.is_empty() {
        return Some(format!(
            "--session-id cannot be combined with {}",
            conflicts.join(", ")
        ));
    }
    let inner_ok = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    let valid = id.starts_with(|c: char| c.is_ascii_alphanumeric())
        && id.ends_with(|c: char| c.is_ascii_alphanumeric())
        && id.chars().all(inner_ok);
    (!valid).then(|| INVALID_SESSION_ID.to_owned())
}

/// Pi 1.5's text for a `--session-id` it cannot use.
const INVALID_SESSION_ID: &str = "Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', and start and end with an alphanumeric character";

/// The file of this directory's session with exactly this id (Pi's `findLocalSessionByExactId`).
fn local_session(runtime: &Runtime, id: &str) -> Option<std::path::PathBuf> {
    let sessions = pi_effects::session::list_sessions(&runtime.session_dir);
    sessions.into_iter().find(|s| s.id == id).map(|s| s.path)
}

/// The session a run works in, from `--no-session`, `--session`, `--fork`, `--continue` and
/// `--session-id` (this directory's session with that id, else a new one with it).
fn session_choice(args: &Args, runtime: &Runtime) -> Result<SessionChoice, CliError> {
    if args.no_session || args.help || args.list_models.is_some() {
        return Ok(match &args.session_id {
            Some(id) => SessionChoice::InMemoryWithId(id.clone()),
            None => SessionChoice::InMemory,
        });
    }
    if let Some(reference) = &args.fork {
        return Ok(SessionChoice::Fork {
            from: runtime.find_session(reference)?,
            id: args.session_id.clone(),
        });
    }
    if let Some(reference) = &args.session {
        return Ok(SessionChoice::Open(runtime.find_session(reference)?));
    }
    if args.continue_session {
        return Ok(SessionChoice::ContinueRecent);
    }
    if let Some(id) = &args.session_id {
        if let Some(found) = local_session(runtime, id) {
            return Ok(SessionChoice::Open(found));
        }
        eprintln!(
            "Warning: No project session found with id '{id}'; creating a new session with that id."
        );
        return Ok(SessionChoice::NewWithId(id.clone()));
    }
    Ok(SessionChoice::New)
}
