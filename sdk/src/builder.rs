//! [`SessionBuilder`]: what Pi's `createAgentSession` options say, as a builder. It assembles
//! the same [`SessionOptions`] the `pi` binary assembles and hands them to the same machinery
//! (`pi_effects::agent_session`, the driver, the Live interpreter), so a session built here
//! behaves as `pi` does.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pi_cassettes::convert::to_json;
use pi_cassettes::format::{Header, RecordedMode, SessionKind, SessionStart};
use pi_cassettes::redact::{Rules, REDACTIONS};
use pi_cassettes::replay::ReplayedSession;
use pi_cassettes::{recording_transport, Cassette, Record, Recorder};
use pi_core::agent::QueueMode;
use pi_core::agent_session::retry::RetrySettings;
use pi_core::agent_session::{SessionInput, SessionMachine};
use pi_core::compaction::CompactionSettings;
use pi_core::model::{Model, ThinkingLevel};
use pi_core::resources::Resources;
use pi_core::session::ids::IdGenerator;
use pi_core::session::tree::SessionTree;
use pi_core::system_prompt::DocPaths;
use pi_core::tools::selection::{NoTools, ToolSelection};
use pi_effects::agent_session::{AgentSession, SessionOptions, DEFAULT_TOOLS};
use pi_effects::clock::{Clock, SystemClock};
use pi_effects::custom_tool::{CustomTool, ToolRegistry};
use pi_effects::extension::sidecar::StateMirror;
use pi_effects::extension::{ExtensionRegistry, RustExtension};
use pi_effects::live::Live;
use pi_effects::resources::{discover, Wanted};
use pi_effects::run_config::build_machine;
use pi_effects::run_config::RunConfig;
use pi_effects::session::{agent_dir, SessionFile, SessionLock, SessionStore, StoreError};
use pi_effects::settings::Settings;
use pi_effects::tools::{SessionVariables, ToolEnv};
use pi_mcp::McpConfig;
use serde_json::json;
use tokio::sync::mpsc::UnboundedSender;

use crate::io::Io;
use crate::printed::Printed;
use crate::{Error, Session};

mod mcp_later;
mod models;
mod typescript;

pub(crate) use mcp_later::learn_keys;

/// Pi's read-only tool set (`createReadOnlyTools`): the agent can look but not change anything.
pub const READ_ONLY_TOOLS: [&str; 4] = ["read", "grep", "find", "ls"];

/// Every built-in tool (`createCodingTools` plus the read-only ones), in Pi's order.
pub const ALL_TOOLS: [&str; 7] = ["read", "bash", "edit", "write", "grep", "find", "ls"];

/// What Pi's `--mode` a recording made by the library names in its header: the events are the
/// ones `--mode json` prints.
const RECORDED_MODE: RecordedMode = RecordedMode::Json;

/// Which model the session starts with.
#[derive(Clone, Debug)]
enum ModelChoice {
    /// Pi's `getModel(provider, id)`: looked up in the built-in catalog and `models.json`.
    Registry { provider: String, id: String },
    /// A model the program describes itself (a local server, a test's mock).
    Given(Box<Model>),
}

/// Where the session's entries are kept (Pi's `SessionManager.inMemory()` or `create(dir)`).
#[derive(Clone, Debug)]
enum Storage {
    InMemory,
    Dir(PathBuf),
}

/// Whether the session is recorded into a cassette or replayed from one.
#[derive(Clone, Debug)]
enum CassetteChoice {
    None,
    Record(PathBuf),
    Replay(PathBuf),
}

/// Builds a [`Session`]: Pi's `createAgentSession` options as methods, each defaulting to what
/// Pi does. Only the model is required.
///
/// ```
/// # #[tokio::main] async fn main() -> Result<(), pi_sdk::Error> {
/// # let mock = pi_testkit::MockLlm::start(&serde_json::json!([{"text": "Hi."}]));
/// # let workspace = tempfile::tempdir().map_err(|e| pi_sdk::Error::Io(e.to_string()))?;
/// # let model = pi_sdk::Model { id: "mock".into(), provider: "mock".into(), api: "openai-completions".into(), base_url: mock.url("/v1"), input: vec!["text".into()], context_window: 128_000, max_tokens: 16_384, ..pi_sdk::Model::default() };
/// use pi_sdk::{SessionBuilder, ThinkingLevel};
///
/// let session = SessionBuilder::new(workspace.path())
///     .model(model)
///     .api_key("sk-example")
///     .thinking_level(ThinkingLevel::Off)
///     .read_only_tools()
///     .build()?;
/// session.prompt("Hello").await?;
/// // Pi 1.5.2's transcript: the system prompt in force, the prompt, the answer.
/// let messages = session.messages().await;
/// assert!(matches!(messages.last(), Some(pi_sdk::AgentMessage::Assistant(_))));
/// assert_eq!(messages.len(), 3);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct SessionBuilder {
    cwd: PathBuf,
    agent_dir: PathBuf,
    model: Option<ModelChoice>,
    api_key: Option<String>,
    /// The level asked for; `None` takes the settings' (`modelThinkingLevels`, then
    /// `defaultThinkingLevel`), else Pi's `medium`.
    thinking_level: Option<ThinkingLevel>,
    tools: ToolSelection,
    custom_tools: ToolRegistry,
    mcp_servers: Vec<serde_json::Value>,
    /// The system prompt's `mcp_servers` section for the servers `mcp_config` started.
    mcp_section: Option<String>,
    /// That section from the second prompt on, with the instructions of the servers the first
    /// prompt does not wait for, when they change it.
    mcp_later_section: Option<String>,
    /// The credentials `mcp.json` hands its servers, with where they came from: a recording
    /// replaces them as it replaces the API key.
    mcp_secrets: Vec<(String, String)>,
    /// The servers `mcp_config` started, stopped together by [`Session::finish`].
    mcp_connections: Vec<Arc<pi_mcp::McpConnection>>,
    /// The servers `mcp_config` connects in the background (no `direct` tool), whose
    /// handlers are among the extensions; stopped by [`Session::finish`] too.
    mcp_background: Vec<Arc<pi_mcp::Background>>,
    /// Pi's `tool_search` once `mcp_config` started servers, as the binary registers it:
    /// whether it is active from the start (a server has `deferred` tools).
    mcp_tool_search: Option<bool>,
    /// The configuration `mcp_config` started the servers from: with it, a session with
    /// TypeScript extensions follows the servers they register after loading.
    mcp_config: Option<McpConfig>,
    /// The servers with resources `mcp_config` started, which those connected later join.
    mcp_resources: pi_mcp::ResourceHub,
    /// The handlers following the servers registered after loading, of each session opened.
    mcp_later: mcp_later::LaterServers,
    extensions: ExtensionRegistry,
    /// Pi's TypeScript extensions to load in the extension host when the session is built.
    typescript_extensions: Vec<PathBuf>,
    /// Whether the extensions are also found where `pi` finds them, and the project trusted.
    extension_discovery: Option<bool>,
    confine_to_cwd: bool,
    system_prompt: Option<String>,
    append_system_prompt: Option<String>,
    context_files: bool,
    resources: Resources,
    docs: DocPaths,
    storage: Storage,
    /// `None` (here and below) takes the settings' value, else Pi's default.
    retry: Option<RetrySettings>,
    compaction: Option<CompactionSettings>,
    queue_modes: Option<(QueueMode, QueueMode)>,
    seed: Option<u64>,
    cassette: CassetteChoice,
}

impl SessionBuilder {
    /// A session working in `cwd` (where tools run and relative paths resolve: Pi's `cwd`
    /// option), with Pi's defaults: the agent dir `~/.pi/agent` (or `PI_CODING_AGENT_DIR`),
    /// the settings of its `settings.json` and the project's `.pi/settings.json` (read as Pi's
    /// SDK reads them, by the `pi` binary's reader: thinking levels, `retry`, `compaction`,
    /// `steeringMode`/`followUpMode`, `blockImages`; what a method here sets wins), thinking
    /// `medium` when they name none, the tools read, bash, edit and write, context files loaded,
    /// kept in memory.
    pub fn new(cwd: impl Into<PathBuf>) -> Self {
        SessionBuilder {
            cwd: cwd.into(),
            agent_dir: agent_dir(),
            model: None,
            api_key: None,
            thinking_level: None,
            tools: ToolSelection {
                defaults: DEFAULT_TOOLS.iter().map(|t| (*t).to_owned()).collect(),
                ..ToolSelection::default()
            },
            custom_tools: ToolRegistry::new(),
            mcp_servers: Vec::new(),
            mcp_section: None,
            mcp_later_section: None,
            mcp_secrets: Vec::new(),
            mcp_connections: Vec::new(),
            mcp_background: Vec::new(),
            mcp_tool_search: None,
            mcp_config: None,
            mcp_resources: pi_mcp::ResourceHub::default(),
            mcp_later: mcp_later::LaterServers::default(),
            extensions: ExtensionRegistry::new(),
            typescript_extensions: Vec::new(),
            extension_discovery: None,
            confine_to_cwd: false,
            system_prompt: None,
            append_system_prompt: None,
            context_files: true,
            resources: Resources::default(),
            docs: DocPaths::default(),
            storage: Storage::InMemory,
            retry: None,
            compaction: None,
            queue_modes: None,
            seed: None,
            cassette: CassetteChoice::None,
        }
    }

    /// Pi's agent directory: where `models.json`, `auth.json` and the global `AGENTS.md` are
    /// read from.
    pub fn agent_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.agent_dir = dir.into();
        self
    }

    /// Starts with `model`, described by the program (Pi's `model` option with a model it
    /// built itself).
    pub fn model(mut self, model: Model) -> Self {
        self.model = Some(ModelChoice::Given(Box::new(model)));
        self
    }

    /// Starts with the model `provider`/`id` of the built-in catalog or the agent dir's
    /// `models.json` (Pi's `getModel`); [`build`](Self::build) fails naming it when there is none.
    pub fn model_from_registry(mut self, provider: &str, id: &str) -> Self {
        self.model = Some(ModelChoice::Registry {
            provider: provider.to_owned(),
            id: id.to_owned(),
        });
        self
    }

    /// Sends `key` with every call instead of resolving one as Pi does (`auth.json` in the
    /// agent dir, then the provider's environment variable, then `models.json`). A recording
    /// redacts it.
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.api_key = Some(key.into());
        self
    }

    /// The thinking level asked for, over the settings'; the session clamps it to what the model
    /// supports.
    pub fn thinking_level(mut self, level: ThinkingLevel) -> Self {
        self.thinking_level = Some(level);
        self
    }

    /// The tools the model may call (Pi's `tools` option): names and `*` patterns, each name
    /// declared in this order, then the other tools a pattern matches; a custom tool not named
    /// or matched is not offered. Or only `+name`/`-name` entries, which change the default
    /// built-ins and keep the custom tools. An unknown name fails [`build`](Self::build).
    pub fn tools<S: AsRef<str>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.tools.tools = Some(names.into_iter().map(|n| n.as_ref().to_owned()).collect());
        self
    }

    /// Only the built-in tools that read ([`READ_ONLY_TOOLS`]), so the agent cannot change the
    /// workspace or run commands; the custom tools stay offered.
    pub fn read_only_tools(mut self) -> Self {
        let mut changes = vec!["-bash".to_owned(), "-edit".into(), "-write".into()];
        changes.extend(READ_ONLY_TOOLS.iter().map(|name| format!("+{name}")));
        self.tools.tools = Some(changes);
        self
    }

    /// Tools never offered, by name or `*` pattern, custom tools included (Pi's
    /// `excludeTools`).
    pub fn exclude_tools<S: AsRef<str>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.tools.exclude = Some(names.into_iter().map(|n| n.as_ref().to_owned()).collect());
        self
    }

    /// Starts from no built-in tool ([`NoTools::Builtin`]) or from no tool at all
    /// ([`NoTools::All`], custom tools included) unless [`tools`](Self::tools) names them
    /// (Pi's `noTools`).
    pub fn no_tools(mut self, which: NoTools) -> Self {
        self.tools.no_tools = which;
        self
    }

    /// Adds a tool the program defines (Pi's `customTools`), offered after the built-ins; one
    /// named as a built-in replaces it. Its calls are effects like the built-ins': a recording
    /// holds them and a replay answers them without running the tool.
    pub fn custom_tool(mut self, tool: impl CustomTool + 'static) -> Self {
        self.custom_tools.register(Arc::new(tool));
        self
    }

    /// Starts the MCP servers `config` describes (read it with [`crate::mcp::load_mcp_config`],
    /// or build one), together, relative paths against `cwd`, waits for them up to Pi's 10 s
    /// (then goes on without them, as the `pi` binary does), and adds the `direct` tools of
    /// those that connected as custom tools, named and declared as Pi 1.5.2 does
    /// (`mcp__<server>__<tool>`), so a recording holds them and a replay answers them without
    /// the servers. Servers whose tools are reached through codemode or `tool_search` (the
    /// default exposure is `codemode`) are listed in the system prompt's `mcp_servers` section
    /// as Pi lists them; their `deferred` tools are loaded by Pi's `tool_search`, registered
    /// (inactive) as the binary registers it and active when some server has such tools. Only
    /// the servers with `direct` tools are waited for here; the others connect in the
    /// background, as Pi and the binary connect them: a `tool_search` waits for them, and their
    /// tools reach the session as a decision of the handlers loaded here as an extension
    /// (`pi_mcp::background`), which a recording holds. A server that fails does not stop the
    /// session: the second value is Pi's one notice about those waited for (and about the
    /// config's errors), after Pi's warning that indirectly reached tools cannot be called
    /// here, when anything needs the user.
    /// Pi's SDK sessions load no built-in extension, so nothing starts without this; with
    /// it, a session's TypeScript extensions' servers registered while loading connect when
    /// the session starts, and those registered after loading as the binary connects them
    /// (`builder/mcp_later.rs`). A recording replaces the keys the config hands its servers
    /// (`pi_mcp::credentials`).
    pub async fn mcp_config(mut self, config: &McpConfig) -> (Self, Option<String>) {
        self.mcp_secrets.extend(pi_mcp::credentials(config));
        let (mut started, background) =
            pi_mcp::start_lazily(config, &self.cwd, &self.custom_tools).await;
        // Pi's `ensureDiscoveryActive`: `tool_search`, registered inactive, is activated for
        // a server with deferred tools (and then nothing is unreachable).
        let activate = started.activate_tool_search(Some(false));
        if !started.connections.is_empty() || started.section.is_some() {
            self.mcp_tool_search = Some(activate);
        }
        for connection in started.connections {
            self.mcp_servers.push(connection.listing());
            pi_mcp::register_tools(&mut self.custom_tools, Arc::clone(&connection));
            self.mcp_connections.push(connection);
        }
        started.resources.register_started(&mut self.custom_tools);
        self.mcp_config = Some(config.clone());
        self.mcp_resources = started.resources.clone();
        if let Some(background) = background {
            self.mcp_servers.extend(background.listings());
            self.extensions.load(Arc::clone(&background) as _);
            self.extensions
                .load_first(Arc::new(pi_mcp::EarlyRegistration::new(Arc::clone(
                    &background,
                ))));
            self.mcp_background.push(background);
        }
        self.mcp_section = started.section;
        self.mcp_later_section = started.later_section;
        let notice: Vec<String> = started
            .warning
            .map(str::to_owned)
            .into_iter()
            .chain(started.report)
            .collect();
        (self, (!notice.is_empty()).then(|| notice.join("\n")))
    }

    /// The MCP servers [`SessionBuilder::mcp_config`] started, which [`Session::finish`]
    /// stops.
    pub(crate) fn mcp_connections(&self) -> &[Arc<pi_mcp::McpConnection>] {
        &self.mcp_connections
    }

    /// The servers [`SessionBuilder::mcp_config`] connects in the background, which
    /// [`Session::finish`] stops.
    pub(crate) fn mcp_background(&self) -> &[Arc<pi_mcp::Background>] {
        &self.mcp_background
    }

    /// Loads an extension (Pi's `extensionFactories`) after those already loaded: it is asked
    /// at the hook points it handles, in load order. What it decides is recorded, so a replay
    /// reproduces the run without it.
    pub fn extension(mut self, extension: impl RustExtension + 'static) -> Self {
        self.extensions.load(Arc::new(extension));
        self
    }

    /// Loads Pi's TypeScript extensions at `paths` (files or folders, as Pi's
    /// `additionalExtensionPaths` and the `pi` binary's `-e`) after those already given. When
    /// the session is built they are loaded out of process, by Pi 1.5.2's own loader in the Node
    /// extension host (Node >= 22.19 on PATH, and the install `PI_EXTENSION_HOST_PI_DIR`
    /// names), and the tools they register are offered after the custom tools. Their calls are
    /// effects: a recording holds them and a replay answers them without Node. Their event
    /// handlers (`tool_call`, `tool_result`, `input`, `before_agent_start`, `turn_end`,
    /// `context`) run after those of the Rust extensions, their decisions recorded as the
    /// binary's are. An extension that fails to load, or no Node, fails
    /// [`build`](Self::build) with [`Error::Extension`]; a project's own `.pi/extensions` is
    /// left out (the session's folder is not trusted).
    ///
    /// ```no_run
    /// # fn main() -> Result<(), pi_sdk::Error> {
    /// # let model = pi_sdk::Model::default();
    /// let session = pi_sdk::SessionBuilder::new("/path/to/project")
    ///     .model(model)
    ///     .typescript_extensions(["/path/to/my-extension.ts"])
    ///     .record("run.cassette.jsonl")
    ///     .build()?;
    /// # Ok(()) }
    /// ```
    pub fn typescript_extensions<P: Into<PathBuf>>(
        mut self,
        paths: impl IntoIterator<Item = P>,
    ) -> Self {
        self.typescript_extensions
            .extend(paths.into_iter().map(Into::into));
        self
    }

    /// Also loads the TypeScript extensions found where the `pi` binary finds them (Pi 1.5.2's
    /// resource loader, which Pi's SDK uses by default): `<agent dir>/extensions`, the settings'
    /// `extensions` entries, the extensions of the installed packages the settings' `packages`
    /// name (one not installed is left out), and, when `project_trusted`, the project's
    /// `.pi/extensions` and settings entries; after those given to
    /// [`typescript_extensions`](Self::typescript_extensions), each once.
    pub fn discover_extensions(mut self, project_trusted: bool) -> Self {
        self.extension_discovery = Some(project_trusted);
        self
    }

    /// Confines the file tools (read, write, edit, grep, find, ls) to `cwd`, symlinks
    /// resolved: a path outside it is refused (seed 000's workspace-bound tool definitions).
    /// `bash` is not confined; leave it out ([`read_only_tools`](Self::read_only_tools) or
    /// [`tools`](Self::tools)) for a workspace the agent must not leave.
    pub fn confine_to_cwd(mut self) -> Self {
        self.confine_to_cwd = true;
        self
    }

    /// Replaces Pi's default system prompt (Pi's `systemPrompt`).
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Appended after the system prompt (Pi's `appendSystemPrompt`).
    pub fn append_system_prompt(mut self, text: impl Into<String>) -> Self {
        self.append_system_prompt = Some(text.into());
        self
    }

    /// Whether `AGENTS.md`/`CLAUDE.md` from the agent dir and from `cwd` up to the root go into
    /// the system prompt (on by default; Pi's `noContextFiles` turns it off).
    pub fn context_files(mut self, load: bool) -> Self {
        self.context_files = load;
        self
    }

    /// The skills (listed in the system prompt, expanded by `/skill:name`) and prompt
    /// templates (expanded by `/name args`) the session knows.
    pub fn resources(mut self, resources: Resources) -> Self {
        self.resources = resources;
        self
    }

    /// Finds the skills and prompt templates where the `pi` binary finds them (Pi 1.5.2's
    /// discovery): the settings' `skills` and `prompts` entries, `<agent dir>/skills` and
    /// `~/.agents/skills`, `<agent dir>/prompts`, and, when `project_trusted`, the project's
    /// settings entries, `.pi/skills`, `.agents/skills` and `.pi/prompts` from `cwd` up to the
    /// git root; then those of the installed packages the settings' `packages` name (one not
    /// installed is left out). Replaces what [`resources`](Self::resources) gave.
    pub fn discover_resources(mut self, project_trusted: bool) -> Self {
        let (home, settings, packages) = self.settings_and_packages(project_trusted);
        self.resources = discover(&Wanted {
            agent_dir: &self.agent_dir,
            cwd: &self.cwd,
            home: &home,
            project_trusted,
            no_skills: false,
            skill_paths: &[],
            no_prompt_templates: false,
            prompt_template_paths: &[],
            listed: settings.listed_resources(),
            packages: &packages.found,
        });
        self
    }

    /// Where Pi's documentation is, for the system prompt's pointer to it (the `pi` binary
    /// points at its own package; a program pointing nowhere leaves the paths empty).
    pub fn docs(mut self, docs: DocPaths) -> Self {
        self.docs = docs;
        self
    }

    /// Keeps the session in memory only (the default; Pi's `SessionManager.inMemory()`).
    pub fn in_memory(mut self) -> Self {
        self.storage = Storage::InMemory;
        self
    }

    /// Writes the session to a new JSONL file in `dir` (Pi's `SessionManager.create(dir)`), which
    /// `pi --session FILE` can resume.
    pub fn session_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.storage = Storage::Dir(dir.into());
        self
    }

    /// Automatic retries of failed calls, over Pi's `retry.*` settings.
    pub fn retry(mut self, retry: RetrySettings) -> Self {
        self.retry = Some(retry);
        self
    }

    /// Automatic compaction, over Pi's `compaction.*` settings.
    pub fn compaction(mut self, compaction: CompactionSettings) -> Self {
        self.compaction = Some(compaction);
        self
    }

    /// How queued steering and follow-up messages are delivered (Pi's `steeringMode` and
    /// `followUpMode`, over the settings'; one at a time by default).
    pub fn queue_modes(mut self, steering: QueueMode, follow_up: QueueMode) -> Self {
        self.queue_modes = Some((steering, follow_up));
        self
    }

    /// Seeds the session's ids (the start time by default), so two runs write the same ids.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Records the run into a cassette at `path`: every input, effect and HTTP exchange, so
    /// [`replay`](Self::replay) or `pi replay` can run it again without the model.
    pub fn record(mut self, path: impl Into<PathBuf>) -> Self {
        self.cassette = CassetteChoice::Record(path.into());
        self
    }

    /// Replays the cassette at `path` instead of calling the model or running tools: the
    /// session is rebuilt from the cassette's configuration (the other options are ignored),
    /// prompts are checked against the recorded ones, and every answer comes from the
    /// recording. [`Session::finish`] says whether the whole recording was used. A run recorded
    /// in memory replays in memory; one recorded into a session file writes the replayed session
    /// into [`session_dir`](Self::session_dir) (`cwd` when none is given). A cassette whose
    /// MCP servers' tool lists contradict the tools it declared is refused
    /// ([`Error::RecordedServers`]), as `pi replay` refuses it.
    pub fn replay(mut self, path: impl Into<PathBuf>) -> Self {
        self.cassette = CassetteChoice::Replay(path.into());
        self
    }

    /// Builds the session (inside a tokio runtime: the Live interpreter spawns its calls).
    pub fn build(self) -> Result<Session, Error> {
        if let CassetteChoice::Replay(path) = &self.cassette {
            return self.build_replay(path);
        }
        let opened = self.open(&Target::Start, 0)?;
        let (io, printed) = match &self.cassette {
            CassetteChoice::Record(path) => {
                let secrets = opened.secrets(&self);
                let header = Header {
                    format: pi_cassettes::FORMAT_VERSION,
                    features: Vec::new(),
                    harness: env!("CARGO_PKG_VERSION").into(),
                    pi: pi_cassettes::PI_EDITION.into(),
                    mode: RECORDED_MODE,
                    config: to_json(&opened.config),
                    session: opened.start,
                    redactions: REDACTIONS.iter().map(|r| (*r).to_owned()).collect(),
                    redact: None,
                    models: Some(vec![to_json(&opened.config.model)]),
                    scoped_models: Vec::new(),
                    command: None,
                    imported: None,
                    project_trust: None,
                };
                let recorder = Recorder::create(path, &header, &secrets, Rules::default())
                    .map_err(|e| Error::Cassette(e.to_string()))?;
                learn_keys(opened.later.as_ref(), &recorder);
                let live = opened
                    .live
                    .with_call_transport(recording_transport(recorder.clone(), opened.clock));
                let printed = Printed::new(recorder.clone());
                (Io::Record(Record::new(live, recorder)), Some(printed))
            }
            CassetteChoice::None | CassetteChoice::Replay(_) => (Io::Live(opened.live), None),
        };
        let mut reopen = self;
        reopen.cassette = CassetteChoice::None;
        Ok(Session::new(
            AgentSession::from_parts(opened.machine, io, opened.file),
            Some(opened.commands),
            Reopen::Build(Box::new(reopen)),
            printed,
        ))
    }

    /// A live session of these options over the session `target` names: the machine, its
    /// session file and the interpreter, not yet recorded. `generation` counts the sessions
    /// this one replaced, so a seeded builder gives each a session id of its own.
    pub(crate) fn open(&self, target: &Target, generation: u64) -> Result<Opened, Error> {
        // Pi's SDK reads the project's settings too (`SettingsManager.create` trusts it): read
        // once for everything a session's build takes from them.
        let settings = Settings::load(&self.agent_dir, &self.cwd, true);
        let typescript = self.load_typescript(&settings)?;
        let catalog = self.model_catalog(
            typescript.as_ref().map_or(&[], |t| t.providers()),
            typescript.as_ref().map_or(&[], |t| t.virtual_models()),
        );
        let model = self.resolve_model(&settings, &catalog)?;
        let model_key = format!("{}/{}", model.provider, model.id);
        let thinking_level = self
            .thinking_level
            .or_else(|| settings.model_thinking_levels().get(&model_key).copied())
            .or(settings.default_thinking_level())
            .unwrap_or(ThinkingLevel::Medium);
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let mut options =
            SessionOptions::new(&self.cwd, model, self.call_options(&catalog.registry));
        options.agent_dir = self.agent_dir.clone();
        options.thinking_level = thinking_level;
        options.default_thinking_level = settings.default_thinking_level();
        options.model_thinking_levels = settings.model_thinking_levels();
        options.block_images = settings.block_images();
        let state = StateMirror::default();
        let (custom_tools, mut extensions, commands) = self.tools_with_extensions(
            &state,
            typescript.as_ref(),
            &self.host_models(&catalog.registry),
        )?;
        let registered = typescript
            .as_ref()
            .map(typescript::Loaded::mcp_servers)
            .unwrap_or_default();
        let later = self.later_servers(&custom_tools, typescript.is_some(), registered);
        if let Some(later) = &later {
            extensions.load(Arc::clone(later) as _);
        }
        // Pi's SDK starts from the settings' `defaultTools` when they set it.
        let mut tools = self.tools.clone();
        if let Some(defaults) = settings.default_tools() {
            tools.defaults = defaults;
        }
        let selected = tools.select(&custom_tools.definitions());
        options.tools = selected.active;
        options.custom_tools = ToolRegistry::new().with_deferred_of(&custom_tools);
        for tool in &selected.custom {
            if let Some(registered) = custom_tools.get(&tool.name) {
                options.custom_tools.register(registered);
            }
        }
        options.tool_search = self.mcp_tool_search;
        options.mcp_servers = self.mcp_servers.clone();
        options.custom_sections =
            pi_mcp::servers_section::custom_sections(self.mcp_section.as_deref());
        options.later_sections =
            pi_mcp::servers_section::custom_sections(self.mcp_later_section.as_deref());
        options.extensions = extensions;
        // What only the program knows of what the TypeScript extensions' handlers read (the
        // folder is not trusted, the session file below); the session's state comes with each
        // hook point.
        state.set("cwd", json!(options.cwd));
        state.set("projectTrusted", json!(false));
        let mut tool_env = ToolEnv::new(&self.cwd);
        tool_env.sandbox = self.confine_to_cwd;
        options.tool_env = Some(tool_env);
        options.system_prompt = self.system_prompt.clone();
        options.append_system_prompt = self.append_system_prompt.clone();
        options.context_files = self.context_files;
        options.resources = self.resources.clone();
        options.resources.commands.extend(commands);
        options.docs = self.docs.clone();
        options.retry = self.retry.unwrap_or_else(|| settings.retry());
        options.compaction = self.compaction.unwrap_or_else(|| settings.compaction());
        (options.steering_mode, options.follow_up_mode) = self
            .queue_modes
            .unwrap_or_else(|| (settings.steering_mode(), settings.follow_up_mode()));
        options.seed = self.seed.map(|seed| seed.wrapping_add(generation));
        options.clock = Arc::clone(&clock);
        let started_at = clock.now_ms();
        let config = options.run_config(started_at)?;
        let ids = IdGenerator::new(config.seed);
        let store = self.store(target, &config.cwd, started_at, ids)?;
        // The session manager's `getSessionFile()` (none in memory).
        if let Some(file) = store.file() {
            state.set("sessionFile", json!(file));
        }
        // The bash tool's commands are told of the session as the binary's are.
        if let Some(tools) = &mut options.tool_env {
            tools.session_variables = Some(SessionVariables {
                id: store.tree().header().id.clone(),
                file: store.file().map(Path::to_path_buf),
                ..SessionVariables::default()
            });
        }
        let (commands, received) = tokio::sync::mpsc::unbounded_channel();
        let live = options
            .live()?
            .for_run(config.seed, config.started_at)
            .with_commands(received);
        let start = session_start(&store)?;
        let (machine, file) =
            build_machine(&config, store).map_err(|e| Error::Session(e.to_string()))?;
        Ok(Opened {
            later,
            config,
            live,
            commands,
            start,
            machine,
            file,
            clock,
            settings,
            registry: catalog.registry,
        })
    }

    /// The entries `target` starts from (Pi's `SessionManager` of the runtime's replacement).
    fn store(
        &self,
        target: &Target,
        cwd: &str,
        now: u64,
        ids: IdGenerator,
    ) -> Result<SessionStore, Error> {
        let store = self.unclaimed_store(target, cwd, now, ids)?;
        // One writer per file, as the binary claims one: another process holding the file
        // (the binary, or another program's session) is refused before anything is written.
        match store.file().map(Path::to_path_buf) {
            Some(file) => Ok(store.holding(SessionLock::acquire(&file)?)),
            None => Ok(store),
        }
    }

    /// The store of [`store`](Self::store), its file not claimed yet.
    fn unclaimed_store(
        &self,
        target: &Target,
        cwd: &str,
        now: u64,
        ids: IdGenerator,
    ) -> Result<SessionStore, Error> {
        let refused = |e: StoreError| Error::Session(e.to_string());
        let dir = match &self.storage {
            Storage::InMemory => None,
            Storage::Dir(dir) => Some(dir.as_path()),
        };
        match (target, dir) {
            (Target::Start, None) => Ok(SessionStore::in_memory(cwd, now, ids)),
            (Target::Start, Some(dir)) => SessionStore::create(cwd, dir, now, ids).map_err(refused),
            (Target::New { parent }, None) => {
                Ok(SessionStore::in_memory_child(cwd, now, ids, parent.clone()))
            }
            (Target::New { parent }, Some(dir)) => {
                SessionStore::create_child(cwd, dir, now, ids, parent.clone()).map_err(refused)
            }
            (Target::Open(path), dir) => {
                SessionStore::open(path, dir, None, cwd, now, ids).map_err(refused)
            }
            (Target::Branch { from, leaf }, dir) => {
                let mut source =
                    SessionStore::open(from, dir, None, cwd, now, ids).map_err(refused)?;
                source.create_branched_session(leaf, now).map_err(refused)?;
                Ok(source)
            }
            (Target::BranchInMemory { tree, leaf }, _) => {
                SessionStore::in_memory_branched(tree, leaf, now, ids).map_err(refused)
            }
        }
    }

    /// A session answered from the cassette at `path`.
    fn build_replay(&self, path: &Path) -> Result<Session, Error> {
        let cassette = Cassette::load(path).map_err(|e| Error::Cassette(e.to_string()))?;
        let config = cassette.config.clone();
        pi_mcp::check_recorded_servers(&config.mcp_servers, &config.declarable_tools()).map_err(
            |reason| Error::RecordedServers {
                cassette: path.to_path_buf(),
                reason,
            },
        )?;
        let dir = match &self.storage {
            Storage::Dir(dir) => dir.clone(),
            Storage::InMemory => self.cwd.clone(),
        };
        let session = ReplayedSession::rebuild(Arc::new(cassette), &dir)
            .map_err(|e| Error::Cassette(e.to_string()))?
            .into_session(|replay| Io::Replay(Box::new(replay)));
        Ok(Session::new(session, None, Reopen::Replay(dir), None))
    }

    /// `path` against the session's `cwd` when relative.
    pub(crate) fn resolve(&self, path: &Path) -> PathBuf {
        self.cwd.join(path)
    }
}

/// Which session a build starts in: the builder's own, or the one a replacement names (Pi's
/// `AgentSessionRuntime`: `newSession`, `switchSession`, `fork`).
#[derive(Clone, Debug)]
pub(crate) enum Target {
    /// A new session where the builder keeps them.
    Start,
    /// A new session whose header names `parent` (`newSession({parentSession})`).
    New { parent: Option<String> },
    /// The session in this file (created if missing).
    Open(PathBuf),
    /// A new session holding the branch of `from` that ends at `leaf`.
    Branch { from: PathBuf, leaf: String },
    /// A new session kept in memory holding the branch of this tree that ends at `leaf`.
    BranchInMemory {
        tree: Box<SessionTree>,
        leaf: String,
    },
}

/// Where a replacement's new session comes from.
#[derive(Debug)]
pub(crate) enum Reopen {
    /// Built from these options (live, or recorded into the same cassette).
    Build(Box<SessionBuilder>),
    /// The recording's next session, rebuilt in this folder.
    Replay(PathBuf),
}

/// A live session built and not yet started: what [`SessionBuilder::open`] hands back.
pub(crate) struct Opened {
    /// Pi's MCP extension's handler of the servers registered after loading, when it follows
    /// them (a recording is handed their keys).
    pub(crate) later: Option<Arc<pi_mcp::Later>>,
    pub(crate) config: RunConfig,
    pub(crate) live: Live,
    pub(crate) commands: UnboundedSender<SessionInput>,
    pub(crate) start: SessionStart,
    pub(crate) machine: SessionMachine,
    pub(crate) file: SessionFile,
    pub(crate) clock: Arc<dyn Clock>,
    /// The settings the session was built from, and the models it may call (a recording
    /// scrubs the keys they keep).
    settings: Settings,
    registry: pi_providers::registry::ModelRegistry,
}

impl Opened {
    /// Every credential the session `builder` opened could send or come across.
    fn secrets(&self, builder: &SessionBuilder) -> Vec<(String, String)> {
        builder.secrets(&self.settings, &self.registry)
    }
}

/// What a recording says of the session a run starts in or goes on in (a header's, or a
/// `replaced` line's): its kind, its file, the content of a file that exists (a switch's), and
/// entries no file holds yet (a fork before the first message, or of a session in memory),
/// so that a replay rebuilds it from the recording alone.
fn session_start(store: &SessionStore) -> Result<SessionStart, Error> {
    let file = store.file();
    let existing = match file.filter(|f| f.exists()) {
        Some(file) => Some(
            std::fs::read(file)
                .map_err(|e| Error::Session(format!("cannot read {}: {e}", file.display())))?,
        ),
        None => None,
    };
    let kind = match (file, &existing) {
        (None, _) => SessionKind::Memory,
        (Some(_), None) => SessionKind::New,
        (Some(_), Some(_)) => SessionKind::Open,
    };
    let content = match existing {
        Some(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
        None => store.unwritten_text(),
    };
    Ok(SessionStart {
        kind,
        file: file.and_then(|f| f.file_name().map(|n| n.to_string_lossy().into_owned())),
        path: file.map(|f| f.to_string_lossy().into_owned()),
        content,
        content_file: None,
        id_state: store.id_state(),
        id: None,
    })
}
