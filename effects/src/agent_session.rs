//! A ready-to-use coding-agent session (Pi's `createAgentSession`): the session machine with
//! Pi's tools and system prompt, the session file, and the Live interpreter, behind `prompt`.
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use pi_core::agent_session::SessionInput;
//! use pi_effects::agent_session::{create_agent_session, SessionOptions};
//! use pi_effects::registry_files::load_models;
//! use pi_effects::session::agent_dir;
//! use pi_providers::{catalog, CallOptions};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let registry = load_models(catalog::builtin(), &agent_dir().join("models.json"));
//!     let model = registry
//!         .find("local", "smollm2-135m-instruct")
//!         .ok_or("no such model")?
//!         .clone();
//!     let credentials = Arc::new(|_request: &_| {
//!         Ok(CallOptions { api_key: "none".into(), ..CallOptions::default() })
//!     });
//!     let mut session = create_agent_session(SessionOptions::new(".", model, credentials))?;
//!
//!     // Steer or abort from another task while a prompt runs.
//!     let commands = session.commands().ok_or("no command channel")?;
//!     tokio::spawn(async move {
//!         tokio::time::sleep(std::time::Duration::from_secs(60)).await;
//!         let _ = commands.send(SessionInput::Abort);
//!     });
//!
//!     // Every event as `pi --mode json` prints it; returns when the session is idle
//!     // (retries and compactions included).
//!     session
//!         .prompt("List the files here", Vec::new(), |event| {
//!             println!("{}", serde_json::to_string(event).unwrap_or_default());
//!         })
//!         .await?;
//!     println!("{} messages", session.machine().agent().messages().len());
//!     Ok(())
//! }
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use pi_core::agent::{QueueMode, ToolExposure};
use pi_core::agent_session::retry::RetrySettings;
use pi_core::agent_session::{
    CacheWarming, Reply, SessionError, SessionInput, SessionMachine, ToolLoadout,
};
use pi_core::compaction::CompactionSettings;
use pi_core::event::Event;
use pi_core::message::ImageContent;
use pi_core::model::{Model, ThinkingLevel};
use pi_core::resources::Resources;
use pi_core::session::ids::IdGenerator;
use pi_core::system_prompt::{
    build_system_prompt_sections, DocPaths, InvalidSectionName, SystemPromptInputs,
};
use pi_core::tools::custom::CustomToolDefinition;
use pi_core::tools::definitions::{builtin_tool, builtin_tools};
use pi_core::tools::selection::matches;
use pi_core::tools::tool_search::{tool_search_definition, TOOL_SEARCH_TOOL_NAME};
use pi_providers::transport::{HttpTransport, TransportError};
use serde_json::Value;
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
/// Cancels a user command run beside a session ([`crate::tools::user_bash::execute_bash`]),
/// re-exported so front ends need not depend on `tokio-util` themselves.
pub use tokio_util::sync::CancellationToken;

use crate::clock::{Clock, SystemClock};
use crate::custom_tool::ToolRegistry;
use crate::driver::{advance, drive, drive_to_end, submit, DriveError, Driven, Interpreter};
use crate::extension::ExtensionRegistry;
use crate::live::{CallOptionsFor, Live};
use crate::network::{Timeouts, Transport};
use crate::run_config::{build_machine, load_context_files, BuildError, RunConfig};
use crate::session::{SessionFile, SessionStore, StoreError};
use crate::tools::ToolEnv;

/// Pi's default tools.
pub use pi_core::tools::selection::DEFAULT_TOOL_NAMES as DEFAULT_TOOLS;

/// How to build a session. Start from [`SessionOptions::new`] and change what you need.
pub struct SessionOptions {
    /// Where tools run and relative paths resolve.
    pub cwd: PathBuf,
    /// Pi's agent directory (global `AGENTS.md`).
    pub agent_dir: PathBuf,
    /// The model the session starts with.
    pub model: Model,
    /// Clamped to the model; `medium` by default as in Pi.
    pub thinking_level: ThinkingLevel,
    /// Built-in tool names, in order.
    pub tools: Vec<String>,
    /// Tools the program defines, active after the built-ins; one named as a built-in
    /// replaces it (in `tools`' place). The run's configuration records their declarations,
    /// and the Live interpreter runs their calls.
    pub custom_tools: ToolRegistry,
    /// The MCP servers behind some of `custom_tools`, as the run's configuration records them
    /// ([`RunConfig::mcp_servers`]).
    pub mcp_servers: Vec<Value>,
    /// System-prompt sections after `cwd`, in order (name, text without its tags): what Pi's
    /// extensions add, such as the MCP extension's `mcp_servers`. An empty one is left out.
    pub custom_sections: Vec<(String, String)>,
    /// Custom sections that replace theirs from the second prompt's run on (an MCP server's
    /// instructions in Pi's `mcp_servers` section once it connected).
    pub later_sections: Vec<(String, String)>,
    /// The errors the session's start reports ([`RunConfig::start_errors`]).
    pub start_errors: Vec<pi_core::agent_session::StartError>,
    /// The extensions, in load order: the run's configuration records the hook points they
    /// handle, and the Live interpreter asks them there.
    pub extensions: ExtensionRegistry,
    /// Replaces Pi's default system prompt.
    pub system_prompt: Option<String>,
    /// Appended to the system prompt (Pi's `--append-system-prompt`).
    pub append_system_prompt: Option<String>,
    /// Load `AGENTS.md` / `CLAUDE.md` from the agent dir and from cwd up to the root.
    pub context_files: bool,
    /// The skills (listed in the system prompt) and prompt templates the front end found;
    /// recorded in the run's configuration.
    pub resources: Resources,
    /// Where Pi's documentation is, for the system prompt's pointer to it.
    pub docs: DocPaths,
    /// The session to continue or create; in memory when `None`.
    pub store: Option<SessionStore>,
    /// Automatic retry (`retry.*` settings).
    pub retry: RetrySettings,
    /// Automatic compaction (`compaction.*` settings).
    pub compaction: CompactionSettings,
    /// How queued steering and follow-up messages are delivered (Pi's `steeringMode`,
    /// `followUpMode`).
    pub steering_mode: QueueMode,
    /// See `steering_mode`.
    pub follow_up_mode: QueueMode,
    /// Tool settings (sandbox, shell, temp dir); defaults for `cwd` when `None`.
    pub tool_env: Option<ToolEnv>,
    /// Seed of entry ids for an in-memory session; the start time when `None`.
    pub seed: Option<u64>,
    /// API key and headers per call.
    pub call_options: CallOptionsFor,
    /// Connect and idle timeouts of model calls over the network.
    pub timeouts: Timeouts,
    /// Where model calls go: `None` (the default) is the network ([`Transport`] with
    /// `timeouts`); a test or a replay gives another source of responses.
    pub transport: Option<Arc<dyn HttpTransport>>,
    /// The clock of the interpreter and of the session's own times (the file's header and first
    /// entries); the system clock by default.
    pub clock: Arc<dyn Clock>,
    /// The setting `images.blockImages`: the model sees `Image reading is disabled.` instead
    /// of each image of a user message or tool result.
    pub block_images: bool,
    /// The setting `defaultThinkingLevel`, which a model switch asks for (`None`: the switch
    /// keeps the current level).
    pub default_thinking_level: Option<ThinkingLevel>,
    /// The setting `modelThinkingLevels` (`"provider/id"` → level), asked for first by a switch.
    pub model_thinking_levels: BTreeMap<String, ThinkingLevel>,
    /// Prompt-cache warming (Pi 1.5.2's `cacheWarming`); `None` never warms. Only a session
    /// that outlives its requests (RPC mode) warms: a warm is due minutes after a request.
    pub cache_warming: Option<CacheWarming>,
    /// The built-in tools registered, active or not, in registry order (Pi registers every
    /// one its `--tools` allowlist allows); `None` is every built-in. An extension's
    /// `pi.setActiveTools` chooses among these and `custom_tools`.
    pub registered_builtins: Option<Vec<String>>,
    /// Pi's `tool_search`: `None` not registered, else whether it is active from the start
    /// (after the extensions' tools, unless `tools` places it; `tools` naming it activates
    /// it too). Pi
    /// registers it always, inactive; a registered one makes the run record its loadout, so
    /// `pi.setActiveTools` can activate it and its calls load `custom_tools`' deferred tools.
    pub tool_search: Option<bool>,
    /// Custom tools activated at the start without being named (Pi's MCP extension activating
    /// codemode with `setActiveTools([...active, codemode])` before the servers' tools
    /// register): active in their registry place, whatever `tools` and the allowlist say.
    pub activated_tools: Vec<String>,
    /// The allowlist's entries (names and `*` patterns) when `tools` came from one (Pi's
    /// `--tools a,b`): a declarable custom tool it names or matches is active from the start,
    /// `defaultActive: false` or not. Without one, a custom tool not named in `tools` is active
    /// when registering it activates it.
    pub tools_allowlist: Option<Vec<String>>,
}

impl std::fmt::Debug for SessionOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionOptions")
            .field("cwd", &self.cwd)
            .field("model", &self.model.id)
            .field("tools", &self.tools)
            .field("custom_tools", &self.custom_tools)
            .field("extensions", &self.extensions)
            .finish_non_exhaustive()
    }
}

impl SessionOptions {
    /// Pi's defaults for `model` in `cwd`, with `call_options` supplying credentials.
    pub fn new(cwd: impl Into<PathBuf>, model: Model, call_options: CallOptionsFor) -> Self {
        SessionOptions {
            cwd: cwd.into(),
            agent_dir: crate::session::agent_dir(),
            model,
            thinking_level: ThinkingLevel::Medium,
            tools: DEFAULT_TOOLS.iter().map(|t| (*t).to_owned()).collect(),
            custom_tools: ToolRegistry::new(),
            mcp_servers: Vec::new(),
            custom_sections: Vec::new(),
            later_sections: Vec::new(),
            start_errors: Vec::new(),
            extensions: ExtensionRegistry::new(),
            system_prompt: None,
            append_system_prompt: None,
            context_files: true,
            resources: Resources::default(),
            docs: DocPaths::default(),
            store: None,
            retry: RetrySettings::default(),
            compaction: CompactionSettings::default(),
            steering_mode: QueueMode::OneAtATime,
            follow_up_mode: QueueMode::OneAtATime,
            tool_env: None,
            seed: None,
            call_options,
            timeouts: Timeouts::default(),
            transport: None,
            clock: Arc::new(SystemClock),
            block_images: false,
            default_thinking_level: None,
            model_thinking_levels: BTreeMap::new(),
            cache_warming: None,
            registered_builtins: None,
            tool_search: None,
            activated_tools: Vec::new(),
            tools_allowlist: None,
        }
    }
}

/// The custom tools as a session starts with them (see [`SessionOptions::run_config`]).
#[derive(Default)]
struct StartTools {
    active: Vec<CustomToolDefinition>,
    inactive: Vec<CustomToolDefinition>,
    /// The `hidden` ones' names, which naming in `tools` does not activate.
    hidden: Vec<String>,
}

/// Why a session could not be built.
#[derive(Debug, thiserror::Error)]
pub enum CreateError {
    #[error("Unknown tool: {0}")]
    UnknownTool(String),
    #[error(transparent)]
    Transport(#[from] TransportError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    SystemPrompt(#[from] InvalidSectionName),
}

impl From<BuildError> for CreateError {
    fn from(error: BuildError) -> Self {
        match error {
            BuildError::UnknownTool(name) => CreateError::UnknownTool(name),
            BuildError::Store(error) => CreateError::Store(error),
        }
    }
}

/// A session with its file and interpreter.
#[derive(Debug)]
pub struct AgentSession<I: Interpreter = Live> {
    machine: SessionMachine,
    io: I,
    file: SessionFile,
    commands: Option<UnboundedSender<SessionInput>>,
    /// The path the session reports instead of the one it writes (see
    /// [`AgentSession::reporting_path`]).
    reported_path: Option<PathBuf>,
}

/// Builds a live session (must be called inside a tokio runtime).
pub fn create_agent_session(options: SessionOptions) -> Result<AgentSession<Live>, CreateError> {
    let started_at = options.clock.now_ms();
    let config = options.run_config(started_at)?;
    let (commands, received) = unbounded_channel();
    let io = options
        .live()?
        .for_run(config.seed, config.started_at)
        .with_commands(received);
    let store = options.store.unwrap_or_else(|| {
        SessionStore::in_memory(&config.cwd, started_at, IdGenerator::new(config.seed))
    });
    let (machine, file) = build_machine(&config, store)?;
    Ok(AgentSession {
        machine,
        io,
        file,
        commands: Some(commands),
        reported_path: None,
    })
}

impl SessionOptions {
    /// The run these options describe, started at `started_at`: tools checked, the system
    /// prompt built (context files read now), the seed chosen.
    pub fn run_config(&self, started_at: u64) -> Result<RunConfig, CreateError> {
        let start = self.start_tools();
        let mut custom_tools = start.active;
        let search_active = self.tool_search == Some(true)
            || (self.tool_search.is_some()
                && self.tools.iter().any(|t| t == TOOL_SEARCH_TOOL_NAME));
        if search_active && self.custom_tools.get(TOOL_SEARCH_TOOL_NAME).is_none() {
            // Activated at session start: after the extensions' tools, before the MCP servers'
            // (`mcp__…`), which register as their servers connect.
            let at = custom_tools
                .iter()
                .position(|t| t.name.starts_with("mcp__"))
                .unwrap_or(custom_tools.len());
            custom_tools.insert(at, tool_search_definition());
        }
        let tools: Vec<String> = self
            .tools
            .iter()
            .filter(|name| !start.hidden.contains(name))
            .cloned()
            .collect();
        if let Some(unknown) = tools.iter().find(|name| {
            builtin_tool(name).is_none() && !custom_tools.iter().any(|t| t.name == **name)
        }) {
            return Err(CreateError::UnknownTool(unknown.clone()));
        }
        let cwd = self.cwd.to_string_lossy().into_owned();
        let names: Vec<&str> = tools.iter().map(String::as_str).collect();
        let inputs = SystemPromptInputs {
            custom_prompt: self.system_prompt.clone(),
            append_system_prompt: self.append_system_prompt.clone(),
            cwd: cwd.clone(),
            context_files: if self.context_files {
                load_context_files(&self.agent_dir, &self.cwd)
            } else {
                Vec::new()
            },
            skills: self.resources.prompt_skills(),
            docs: self.docs.clone(),
            custom_sections: self.custom_sections.clone(),
            ..SystemPromptInputs::default()
        }
        .with_builtin_tools(&names)
        .with_custom_tools(&custom_tools);
        // The custom tools in the order they are active: those `tools` names, then the others.
        let active_custom: Vec<String> = tools
            .iter()
            .filter(|name| custom_tools.iter().any(|t| t.name == **name))
            .cloned()
            .chain(
                custom_tools
                    .iter()
                    .map(|t| t.name.clone())
                    .filter(|name| !tools.contains(name)),
            )
            .collect();
        let tool_loadout = (!self.extensions.is_empty() || self.tool_search.is_some()).then(|| {
            self.tool_loadout(
                &inputs,
                search_active,
                &tools,
                &active_custom,
                start.inactive,
            )
        });
        Ok(RunConfig {
            started_at,
            seed: self.seed.unwrap_or(started_at),
            cwd,
            model: self.model.clone(),
            thinking_level: self.thinking_level,
            tools,
            custom_tools,
            named_tools: Vec::new(),
            mcp_servers: self.mcp_servers.clone(),
            system_sections: Some(build_system_prompt_sections(&inputs)?),
            docs: self.docs.clone(),
            retry: self.retry,
            compaction: self.compaction,
            steering_mode: self.steering_mode,
            follow_up_mode: self.follow_up_mode,
            block_images: self.block_images,
            default_thinking_level: self.default_thinking_level,
            model_thinking_levels: self.model_thinking_levels.clone(),
            resources: self.resources.clone(),
            cache_warming: self.cache_warming,
            handled_hooks: self.extensions.handled(),
            tool_loadout,
            later_sections: self.later_sections.clone(),
            start_errors: self.start_errors.clone(),
            context_tools: self.custom_tools.context_tools(),
        })
    }

    /// The custom tools active at the start and those registered without being active, in
    /// registration order (Pi's first activation): a tool `tools` names is active unless it is
    /// `hidden` (a `deferred` one too); one it does not name is when registering it activates
    /// it, or, with an allowlist, when it is declarable and the allowlist matches it.
    fn start_tools(&self) -> StartTools {
        let named = |name: &str| self.tools.iter().any(|t| t == name);
        let mut start = StartTools::default();
        for tool in self.custom_tools.definitions() {
            let exposure = tool.exposure();
            let active = if exposure == ToolExposure::Hidden {
                start.hidden.push(tool.name.clone());
                false
            } else if named(&tool.name) || self.activated_tools.contains(&tool.name) {
                true
            } else if let Some(entries) = &self.tools_allowlist {
                exposure.declarable() && matches(entries, &tool.name)
            } else {
                tool.activated_on_registration()
            };
            if active {
                start.active.push(tool);
            } else {
                start.inactive.push(tool);
            }
        }
        let deferred = self.custom_tools.deferred_definitions();
        start.active.extend(
            deferred
                .into_iter()
                .filter(|t| named(&t.tool.name))
                .map(|t| t.tool),
        );
        start
    }

    /// The registered built-ins not active, and `inputs` with the snippets and rules of every
    /// registered tool (those of the active ones in force).
    fn tool_loadout(
        &self,
        inputs: &SystemPromptInputs,
        search_active: bool,
        tools: &[String],
        active_custom: &[String],
        inactive_custom: Vec<CustomToolDefinition>,
    ) -> ToolLoadout {
        let registered: Vec<&str> = match &self.registered_builtins {
            Some(names) => names.iter().map(String::as_str).collect(),
            None => builtin_tools().iter().map(|t| t.name.as_str()).collect(),
        };
        let inactive: Vec<&str> = registered
            .into_iter()
            .filter(|name| !tools.iter().any(|t| t == name))
            .filter(|name| self.custom_tools.get(name).is_none())
            .collect();
        let deferred = self.custom_tools.deferred_definitions();
        // Needed only when a tool is registered without being active, or is an extension's
        // deferred one, or `tool_search` is registered inactive beside MCP servers' tools:
        // otherwise the order of the active, then inactive, then deferred tools is the
        // registration order. `tool_search` comes before the MCP servers' tools.
        let mcp_registered = || {
            self.custom_tools
                .registration_order()
                .iter()
                .any(|name| name.starts_with("mcp__"))
        };
        // Active custom tools in another order than registered (`--tools` naming a later one
        // first) are out of place too.
        let registered_active = self
            .custom_tools
            .registration_order()
            .iter()
            .filter(|name| active_custom.contains(name));
        let out_of_place = !inactive_custom.is_empty()
            || !active_custom
                .iter()
                .filter(|name| self.custom_tools.get(name).is_some())
                .eq(registered_active)
            || deferred.iter().any(|t| !t.tool.name.starts_with("mcp__"))
            || (self.tool_search.is_some() && !search_active && mcp_registered());
        let mut registration_order = Vec::new();
        if out_of_place {
            registration_order = self.custom_tools.registration_order().to_vec();
            let search = TOOL_SEARCH_TOOL_NAME.to_owned();
            if self.tool_search.is_some() && !registration_order.contains(&search) {
                let at = registration_order
                    .iter()
                    .position(|name| name.starts_with("mcp__"))
                    .unwrap_or(registration_order.len());
                registration_order.insert(at, search);
            }
        }
        let search = (self.tool_search.is_some() && !search_active).then(tool_search_definition);
        let inactive_tools: Vec<CustomToolDefinition> =
            inactive_custom.into_iter().chain(search).collect();
        // A deferred tool activated later lists its snippet and rules too (an MCP server's
        // have none).
        let deferred_listed: Vec<CustomToolDefinition> = deferred
            .iter()
            .map(|t| t.tool.clone())
            .filter(|t| t.normalized_snippet().is_some() || !t.normalized_guidelines().is_empty())
            .collect();
        let mut prompt = inputs
            .clone()
            .with_builtin_tools(&inactive)
            .with_custom_tools(&inactive_tools)
            .with_custom_tools(&deferred_listed);
        prompt.selected_tools = inputs.selected_tools.clone();
        ToolLoadout {
            inactive_builtins: inactive.iter().map(|n| (*n).to_owned()).collect(),
            inactive_tools,
            deferred_tools: deferred,
            registration_order,
            prompt,
        }
    }

    /// The Live interpreter these options describe: their transport (the network by default),
    /// clock, credentials and tool settings.
    pub fn live(&self) -> Result<Live, CreateError> {
        let transport = match &self.transport {
            Some(transport) => Arc::clone(transport),
            None => Arc::new(Transport::new(self.timeouts)?),
        };
        let mut env = self
            .tool_env
            .clone()
            .unwrap_or_else(|| ToolEnv::new(&self.cwd));
        env.custom = self.custom_tools.clone();
        Ok(Live::new(
            transport,
            Arc::clone(&self.clock),
            Arc::clone(&self.call_options),
            env,
        )
        .with_extensions(self.extensions.clone()))
    }
}

impl<I: Interpreter> AgentSession<I> {
    /// A session from parts (e.g. a recording interpreter).
    pub fn from_parts(machine: SessionMachine, io: I, file: SessionFile) -> Self {
        AgentSession {
            machine,
            io,
            file,
            commands: None,
            reported_path: None,
        }
    }

    /// The session reports `path` as its file while writing where it was opened: a replay
    /// writes in a scratch directory but says what the recorded run said.
    pub fn reporting_path(mut self, path: Option<PathBuf>) -> Self {
        self.reported_path = path;
        self
    }

    /// A sender for inputs while a prompt runs (steer, follow-up, abort), from another task.
    /// Inputs sent while idle are taken by the next run.
    pub fn commands(&self) -> Option<UnboundedSender<SessionInput>> {
        self.commands.clone()
    }

    /// Sets Pi's `input` source of the texts from now on, which `input` handlers see: a front
    /// end driving the session over RPC sets [`pi_core::agent_session::RPC_SOURCE`].
    pub fn set_input_source(&mut self, source: &str) {
        self.machine.set_input_source(source);
    }

    /// The session machine (transcript, entries, state).
    pub fn machine(&self) -> &SessionMachine {
        &self.machine
    }

    /// The interpreter.
    pub fn interpreter(&self) -> &I {
        &self.io
    }

    /// The interpreter, for what only it knows (whether a replay used its whole recording).
    pub fn interpreter_mut(&mut self) -> &mut I {
        &mut self.io
    }

    /// The session file, `None` in memory (as reported: see [`AgentSession::reporting_path`]).
    pub fn file(&self) -> Option<&Path> {
        match &self.reported_path {
            Some(path) if self.file.path().is_some() => Some(path),
            _ => self.file.path(),
        }
    }

    /// The file the session is written to, `None` in memory.
    pub fn written_file(&self) -> Option<&Path> {
        self.file.path()
    }

    /// Whether the session's file is on disk yet (Pi writes it with the first answer): the
    /// file this session writes, never the recorded run's it reports.
    pub fn is_saved(&self) -> bool {
        self.written_file().is_some_and(Path::exists)
    }

    /// Feeds one input now, without waiting for the run it may start (see [`advance`]).
    ///
    /// [`advance`]: Self::advance
    pub fn submit(
        &mut self,
        input: SessionInput,
        on_event: impl FnMut(&Event),
    ) -> Result<Vec<Reply>, DriveError> {
        submit(
            &mut self.machine,
            &mut self.io,
            &mut self.file,
            input,
            on_event,
        )
    }

    /// Waits for the next answer, timer or command and carries it out; call it while
    /// `machine().is_busy()`. Cancel-safe: dropping the future loses nothing.
    pub async fn advance(
        &mut self,
        on_event: impl FnMut(&Event),
    ) -> Result<Result<Vec<Reply>, SessionError>, DriveError> {
        advance(&mut self.machine, &mut self.io, &mut self.file, on_event).await
    }

    /// The interpreter, the rest of the session dropped (a session replaced: its interpreter
    /// may have something to say of it, as a recording does).
    pub fn into_interpreter(self) -> I {
        let AgentSession { io, .. } = self;
        io
    }

    /// Ends the session in a process that exits next. What the interpreter started is cancelled
    /// exactly as when the session is dropped; the transcript and entries are left to the exit,
    /// which hands their memory back at once instead of freeing their allocations one by one
    /// (tens of milliseconds for a session of tens of thousands of entries).
    pub fn end_before_exit(self) {
        let AgentSession {
            machine,
            io,
            file,
            commands,
            ..
        } = self;
        drop((io, file, commands));
        std::mem::forget(machine);
    }

    /// Sends a prompt and runs until the session is idle (retries and compactions included).
    pub async fn prompt(
        &mut self,
        text: &str,
        images: Vec<ImageContent>,
        on_event: impl FnMut(&Event),
    ) -> Result<Driven, DriveError> {
        let input = SessionInput::Prompt {
            text: text.to_owned(),
            images,
            streaming_behavior: None,
        };
        self.run(input, on_event).await
    }

    /// Feeds any input and runs until the session is idle.
    pub async fn run(
        &mut self,
        input: SessionInput,
        on_event: impl FnMut(&Event),
    ) -> Result<Driven, DriveError> {
        drive(
            &mut self.machine,
            &mut self.io,
            &mut self.file,
            input,
            on_event,
        )
        .await
    }

    /// Feeds a run's last input and runs until the session is idle but for the runs an
    /// extension asked for while idle, which never start (print mode's end: `drive_to_end`).
    pub async fn run_to_end(
        &mut self,
        input: SessionInput,
        on_event: impl FnMut(&Event),
    ) -> Result<Driven, DriveError> {
        drive_to_end(
            &mut self.machine,
            &mut self.io,
            &mut self.file,
            input,
            on_event,
        )
        .await
    }
}
