//! Pi's eight built-in tools, run for real (`powershell` refusing, as Pi's does but on Windows): files, processes, directory walks. What they do to
//! text (truncation, notices, edit matching) is pure and lives in `pi_core::tools`; this module
//! owns the IO around it.
//!
//! Every tool is an async function of the environment, its validated arguments, a cancellation
//! token and a channel for partial results. A failure is a thrown error text, as in Pi, which the
//! agent loop turns into an error result.

mod bash;
mod edit;
mod find;
mod grep;
mod image;
mod listing;
mod ls;
mod node_error;
mod powershell;
mod read;
mod sandbox;
mod shell;
pub mod temp_file;
pub mod user_bash;
mod write;

use std::collections::BTreeMap;
use std::path::PathBuf;

use pi_core::agent::ToolOutcome;
use pi_core::event::ToolResult;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

pub use sandbox::{resolve, PathError, PathUse};

use crate::custom_tool::{self, missing_tool_message, Lookup, ToolCallContext, ToolRegistry};

/// The shell every bash command runs in, over the `shellPath` setting. Not Pi's: an eval
/// confines its trials' commands by naming a wrapper here.
pub const SHELL_ENV: &str = "PI_TOOLS_SHELL";

/// When `1`, the file tools refuse paths outside the working directory ([`ToolEnv::sandbox`]).
/// Not Pi's: set for eval trials.
pub const SANDBOX_ENV: &str = "PI_TOOLS_SANDBOX";

/// Where and how tools run.
#[derive(Clone, Debug)]
pub struct ToolEnv {
    /// The working directory relative paths are resolved against.
    pub cwd: PathBuf,
    /// The user's home directory, for `~` in paths.
    pub home: PathBuf,
    /// Confine every path to `cwd` (symlinks resolved), for untrusted eval runs.
    pub sandbox: bool,
    /// Where bash keeps the full output of long commands (Pi: the OS temp dir).
    pub temp_dir: PathBuf,
    /// The shell to run commands with (Pi's `shellPath` setting); found on the system when unset.
    pub shell: Option<PathBuf>,
    /// Lines run before every bash command (Pi's `shellCommandPrefix` setting).
    pub command_prefix: Option<String>,
    /// Whether shell commands see the variables whose names say they hold a credential (the
    /// providers' keys, `*_TOKEN`, `*_SECRET`, ...). Off by default, unlike Pi: a command the
    /// model chose should not be able to print the user's keys.
    pub pass_credentials: bool,
    /// Resize images the read tool returns to fit Pi's limits (Pi's `images.autoResize`).
    pub auto_resize_images: bool,
    /// Whether the model the tools answer takes images; when not, the read tool says the image
    /// will be omitted (Pi passes the current model in the tool context).
    pub model_accepts_images: bool,
    /// The run, from its seed and start time (see [`ToolEnv::for_run`]): with the tool call's
    /// id it names the file bash keeps a long output in, so that a replay running the tools
    /// again names it as the recorded run did (the name is in the result the model reads).
    /// Random when unset.
    pub run: Option<u64>,
    /// The id of the tool call being run, set for each call by the interpreter.
    pub tool_call_id: Option<String>,
    /// The session's state at the call being run, for a custom tool that reads it, set for
    /// each call by the interpreter.
    pub call_state: Option<std::sync::Arc<pi_core::agent::hook_state::HookState>>,
    /// Where a custom tool's partial results and actions go, in order, when the interpreter
    /// takes actions from tools (set for each call); without it a tool's actions are refused.
    pub tool_signals: Option<tokio::sync::mpsc::UnboundedSender<crate::custom_tool::ToolSignal>>,
    /// Variables shell commands get besides this process's own: an eval task's agent
    /// environment, which the recorded agent's commands inherited from it, when the replay runs
    /// inside `pi eval` instead of in an agent process of its own.
    pub variables: BTreeMap<String, String>,
    /// What the bash tool's commands are told about the session (Pi 1.5); `None` leaves the
    /// inherited variables as they are (a user's own `!command` or RPC `bash`).
    pub session_variables: Option<SessionVariables>,
    /// The custom tools a program registered: a call to one of these names runs it, before
    /// any built-in of that name (Pi 1.5.2's composition).
    pub custom: ToolRegistry,
}

/// Pi 1.5's session variables for the bash tool's commands (`resolveSpawnContext`): every one
/// of [`SessionVariables::NAMES`] is cleared, then those known are set, so a command never sees
/// values inherited from another session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SessionVariables {
    /// `PI_SESSION_ID`.
    pub id: String,
    /// `PI_SESSION_FILE`, when the session is written to one.
    pub file: Option<PathBuf>,
    /// `PI_PROVIDER` and `PI_MODEL`: the model of the latest request.
    pub model: Option<(String, String)>,
    /// `PI_REASONING_LEVEL`: the thinking level of the latest request.
    pub reasoning_level: Option<String>,
}

impl SessionVariables {
    /// The variables Pi clears before setting them.
    pub const NAMES: [&'static str; 5] = [
        "PI_SESSION_ID",
        "PI_SESSION_FILE",
        "PI_PROVIDER",
        "PI_MODEL",
        "PI_REASONING_LEVEL",
    ];

    /// The values to set, by name.
    pub fn values(&self) -> Vec<(&'static str, String)> {
        let mut values = vec![("PI_SESSION_ID", self.id.clone())];
        if let Some(file) = &self.file {
            values.push(("PI_SESSION_FILE", file.display().to_string()));
        }
        if let Some((provider, model)) = &self.model {
            values.push(("PI_PROVIDER", provider.clone()));
            values.push(("PI_MODEL", model.clone()));
        }
        if let Some(level) = &self.reasoning_level {
            values.push(("PI_REASONING_LEVEL", level.clone()));
        }
        values
    }
}

impl ToolEnv {
    /// These settings with the process's [`SHELL_ENV`] and [`SANDBOX_ENV`] applied.
    pub fn with_environment_overrides(mut self) -> Self {
        if let Some(shell) = std::env::var_os(SHELL_ENV).filter(|s| !s.is_empty()) {
            self.shell = Some(PathBuf::from(shell));
        }
        if std::env::var_os(SANDBOX_ENV).is_some_and(|v| v == "1") {
            self.sandbox = true;
        }
        self
    }

    /// The defaults Pi uses for a working directory.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        ToolEnv {
            cwd: cwd.into(),
            home: std::env::var_os("HOME")
                .map(PathBuf::from)
                .unwrap_or_default(),
            sandbox: false,
            temp_dir: std::env::temp_dir(),
            shell: None,
            command_prefix: None,
            pass_credentials: false,
            auto_resize_images: true,
            model_accepts_images: true,
            run: None,
            tool_call_id: None,
            call_state: None,
            tool_signals: None,
            variables: BTreeMap::new(),
            session_variables: None,
            custom: ToolRegistry::new(),
        }
    }

    /// These settings for the run of `seed` started at `started_at` (`RunConfig`'s): the start
    /// time keeps runs of one seed at once (an eval's trials) from sharing file names.
    pub fn for_run(mut self, seed: u64, started_at: u64) -> Self {
        self.run = Some(shell::fnv1a(&[
            &seed.to_le_bytes(),
            &started_at.to_le_bytes(),
        ]));
        self
    }
}

/// What a running tool may use besides its arguments.
#[derive(Clone, Debug)]
pub struct ToolContext {
    /// Set when the call is cancelled (Pi's abort signal).
    pub cancel: CancellationToken,
    /// Partial results (`tool_execution_update`), e.g. bash output as it arrives.
    pub updates: UnboundedSender<ToolResult>,
}

/// The names of the built-in tools this module can run.
pub const BUILTIN: [&str; 8] = [
    "read",
    "bash",
    "powershell",
    "edit",
    "write",
    "grep",
    "find",
    "ls",
];

/// A `tool_search` call's outcome over what the session gave it to search (the deferred tools
/// not active): the ranked matches' result, or the error Pi's tool throws. Nothing runs; the
/// session activates what the result loads.
pub fn tool_search_outcome(
    args: &Value,
    candidates: &[pi_core::tools::tool_search::SearchableTool],
) -> ToolOutcome {
    match pi_core::tools::tool_search::run_search(args, candidates) {
        Ok(found) => {
            let (content, details) = found.content();
            ToolOutcome::Ok(ToolResult {
                content,
                details: Some(details),
                ..ToolResult::default()
            })
        }
        Err(message) => ToolOutcome::Thrown(message),
    }
}

/// Runs tool `name` with validated `args`: the custom tool registered under that name in
/// `env.custom`, else the built-in (a custom tool `env.custom` expects and lacks fails).
pub async fn run(env: &ToolEnv, name: &str, args: &Value, cx: &ToolContext) -> ToolOutcome {
    // A tool already registered (or not a custom one) is looked up at once, whatever the
    // cancel: only a wait for a tool still coming ends on it.
    let lookup = tokio::select! {
        biased;
        lookup = env.custom.lookup_coming(name) => lookup,
        () = cx.cancel.cancelled() => return ToolOutcome::Thrown(OPERATION_ABORTED.to_owned()),
    };
    match lookup {
        Lookup::Registered(tool) => {
            let mut context = ToolCallContext::new(
                env.tool_signals.clone(),
                env.tool_call_id.clone().unwrap_or_default(),
                env.cwd.clone(),
                cx.cancel.clone(),
                cx.updates.clone(),
            );
            if let Some(session) = &env.session_variables {
                context.session_id = Some(session.id.clone());
                context.session_file = session.file.clone();
                context.model = session.model.clone();
            }
            context.state = env.call_state.clone();
            return custom_tool::run(tool, args.clone(), context).await;
        }
        Lookup::Missing => return ToolOutcome::Thrown(missing_tool_message(name)),
        Lookup::NotCustom => {}
    }
    let result = match name {
        "read" => read::run(env, args, cx)
            .await
            .map(read::with_structured_content),
        "bash" => bash::run(env, args, cx).await,
        "powershell" => powershell::run(cx),
        "edit" => edit::run(env, args, cx).await,
        "write" => write::run(env, args, cx).await,
        "grep" => grep::run(env, args, cx).await,
        "find" => find::run(env, args, cx).await,
        "ls" => ls::run(env, args, cx).await,
        other => Err(format!("Tool {other} not found")),
    };
    match result {
        Ok(result) => ToolOutcome::Ok(result),
        Err(message) => ToolOutcome::Thrown(message),
    }
}

/// Pi's text when a tool sees its abort signal.
pub(crate) const OPERATION_ABORTED: &str = "Operation aborted";

/// A string argument, if present.
pub(crate) fn str_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// A numeric argument, if present (JSON numbers may be floats; Pi uses them as given).
pub(crate) fn num_arg(args: &Value, key: &str) -> Option<f64> {
    args.get(key).and_then(Value::as_f64)
}
