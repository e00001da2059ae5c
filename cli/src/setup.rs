//! Everything a run is built from, gathered once from the command line, the environment and the
//! agent directory (Pi's `main.ts` up to `createAgentSession`), and the sessions built from it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pi_core::agent_session::{CacheRetentionKind, CacheWarming, CacheWarmingMode, SessionMachine};
use pi_core::model::{Model, ThinkingLevel};
use pi_core::session::ids::IdGenerator;
use pi_core::session::tree::SessionTree;
use pi_core::system_prompt::DocPaths;
use pi_core::tools::paths::resolve_posix;
use pi_core::tools::tool_search::TOOL_SEARCH_TOOL_NAME;
use pi_effects::agent_session::{AgentSession, CreateError, SessionOptions, DEFAULT_TOOLS};
use pi_effects::clock::now_ms;
use pi_effects::custom_tool::ToolRegistry;
use pi_effects::extension::sidecar::StateMirror;
use pi_effects::extension::ExtensionRegistry;
use pi_effects::host::process_environment;
use pi_effects::live::CallOptionsFor;
use pi_effects::live::Live;
use pi_effects::registry_files::{load_auth, load_models};
use pi_effects::run_config::{build_machine, RunConfig};
use pi_effects::session::SessionFile;
use pi_effects::session::{
    agent_dir, default_session_dir, list_all_sessions, list_sessions, most_recent_session,
    resolve_session_dir, LockError, SessionLock, SessionStore, StoreError, SESSION_DIR_ENV,
};
use pi_effects::tools::{SessionVariables, ToolEnv};
use pi_providers::catalog;
use pi_providers::registry::{AuthStorage, Environment, ModelRegistry};

use crate::args::Args;
pub use crate::diagnostic::Diagnostic;
use crate::model_choice::{self, ChoicePlace, ModelRequest};
use crate::model_select::ScopedModel;
use crate::request_options::RequestSettings;
use crate::settings::Settings;
use crate::tool_select::{allows, registered, select_tools, tool_list_error};
use crate::CliError;
use pi_core::resources::Resources;

/// Which session a run works in.
#[derive(Clone, Debug)]
pub enum SessionChoice {
    /// A new session in the session directory.
    New,
    /// A new session whose header names the session it came from.
    Child(String),
    /// A new session with this id (`--session-id` naming no session of this directory).
    NewWithId(String),
    /// Not written anywhere (`--no-session`).
    InMemory,
    /// Not written anywhere, with this id (`--no-session --session-id`).
    InMemoryWithId(String),
    /// The most recent session of this directory, or a new one (`--continue`).
    ContinueRecent,
    /// This file (`--session`, `switch_session`); created if missing.
    Open(PathBuf),
    /// A copy of `from` as a new session (`--fork`), with the id `id` (`--session-id`).
    Fork { from: PathBuf, id: Option<String> },
    /// A new session holding the branch of `from` that ends at `leaf` (RPC `fork` and
    /// `clone`), kept in memory until it has something to write, as Pi's
    /// `createBranchedSession` keeps it: a fork before the first user message keeps the system
    /// message recorded before it.
    Branch { from: PathBuf, leaf: String },
    /// A session kept in memory holding the branch of `tree` (a session kept in memory too)
    /// that ends at `leaf` (RPC `fork` and `clone` of a `--no-session` run, as Pi 1.5.2 forks
    /// an in-memory session).
    BranchInMemory {
        tree: Box<SessionTree>,
        leaf: String,
    },
}

/// The run's fixed inputs.
pub struct Runtime {
    pub cwd: PathBuf,
    pub agent_dir: PathBuf,
    pub session_dir: PathBuf,
    pub settings: Settings,
    pub registry: ModelRegistry,
    pub auth: AuthStorage,
    pub env: Environment,
    /// The model `--provider` / `--model` named; a resumed session's model yields to it.
    pub cli_model: Option<Model>,
    /// `--thinking`, else the level a `--model` pattern named.
    pub thinking: Option<ThinkingLevel>,
    /// Whether `--thinking` itself was given (it overrides the levels of `--models` patterns).
    pub(crate) thinking_flag: bool,
    /// What the command line asked of the model, to choose it again once extensions registered
    /// providers (`crate::model_choice`), and where the first choice's messages are.
    pub(crate) model_request: ModelRequest,
    pub(crate) model_choice_place: ChoicePlace,
    /// The `--models` scope (else the `enabledModels` setting), for choosing and cycling models.
    pub scoped_models: Vec<ScopedModel>,
    pub tools: Vec<String>,
    /// The built-in tools registered, active or not (see [`registered_builtins`]).
    pub registered_builtins: Vec<String>,
    pub system_prompt: Option<String>,
    pub append_system_prompt: Option<String>,
    pub context_files: bool,
    /// The skills and prompt templates found (`crate::resources`); a replay's are the recorded
    /// ones.
    pub resources: Resources,
    /// The extensions found for this run (`crate::extensions`), not yet loaded.
    pub extension_paths: Vec<PathBuf>,
    /// The `-e` paths, as the folder resolves them (their commands' `sourceInfo` is Pi's CLI one).
    pub cli_extension_paths: Vec<PathBuf>,
    /// The extensions found but the `-e` ones, with where they came from (their commands'
    /// `sourceInfo`).
    pub extension_sources: Vec<pi_effects::packages::Resource>,
    /// The extension host running them, once loaded (RPC mode gives it a UI).
    pub extension_host: Option<std::sync::Arc<pi_effects::extension::sidecar::ExtensionHost>>,
    /// The loaded extensions' commands, as RPC `get_commands` lists them.
    pub extension_commands: Vec<serde_json::Value>,
    /// `--name`: the display name the first session built gets (a `session_info` entry before
    /// anything else is appended); taken by that build.
    session_name: std::sync::Mutex<Option<String>>,
    /// `--wait-for-session`: wait for another process writing the session file instead of
    /// refusing. Cleared once an RPC session runs: a replacing command never waits, since the
    /// loop must keep answering.
    pub wait_for_session: bool,
    /// Warnings Pi prints at once (an unknown thinking level, bad settings, `--models` patterns
    /// that match nothing), without their `Warning: ` prefix.
    pub warnings: Vec<String>,
    /// Pi's runtime diagnostics (model resolution, `--api-key`), reported after the `@file`
    /// arguments are read; an error among them ends the run.
    pub diagnostics: Vec<Diagnostic>,
    /// The models a recorded run could use, when replaying it: they stand in for the registry
    /// and the credentials of this machine.
    recorded_models: Option<Vec<Model>>,
    /// Whether this run reads the project's own files (its extensions and `.pi/mcp.json` among
    /// them).
    pub project_trusted: bool,
    /// The decision of an extension's `project_trust` handler, when one decided this run's
    /// trust (a recording's header keeps it).
    pub trust_by_extension: Option<pi_effects::extension::sidecar::TrustDecision>,
    /// The tools the loaded extensions define (run by the extension host), then those of the
    /// run's MCP servers (see [`crate::mcp`]), declared as custom tools.
    pub custom_tools: ToolRegistry,
    /// The MCP servers behind them, as the run's configuration lists them.
    pub mcp_servers: Vec<serde_json::Value>,
    /// The loaded extensions with event handlers, in load order (see [`crate::extensions`]).
    pub extensions: ExtensionRegistry,
    /// What their handlers' getters read; kept current by [`Runtime::session_options`].
    pub extension_state: StateMirror,
    /// Their `mcp_servers` system-prompt section, when some server's tools are reached
    /// indirectly (see [`crate::mcp`]).
    pub mcp_section: Option<String>,
    /// That section from the second prompt on, once the servers the first prompt did not wait
    /// for connected (their instructions in it), when it differs.
    pub mcp_later_section: Option<String>,
    /// Whether `--tools`/`--exclude-tools` keep Pi's `tool_search` registered.
    pub tool_search_registered: bool,
    /// Whether MCP servers started for the run (which then registers `tool_search`), and
    /// whether their deferred tools activated it.
    pub mcp_started: bool,
    pub mcp_activates_tool_search: bool,
    /// The MCP servers the extensions registered while loading, in registration order: they
    /// start with `mcp.json`'s, which win a shared name.
    pub mcp_registered: Vec<pi_mcp::Registered>,
    /// The errors the session's start reports: the registered servers nothing connects.
    pub start_errors: Vec<pi_core::agent_session::StartError>,
    /// How sessions warm the prompt cache: set for RPC mode only, whose process outlives its
    /// requests (print and json runs end before a warm is due, as Pi's unreferenced timer lets
    /// them).
    pub cache_warming: Option<CacheWarming>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("cwd", &self.cwd)
            .field("cli_model", &self.cli_model.as_ref().map(|m| &m.id))
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Gathers the inputs of a run started with `args` in `cwd`.
    pub fn from_args(args: &Args, cwd: PathBuf) -> Result<Runtime, CliError> {
        Self::gathered(args, cwd, true)
    }

    /// [`from_args`](Self::from_args) for a configuration read again from a recorded command
    /// line: no extension is started, so none is asked whether the project is trusted (the
    /// recording's answer, when one decided, comes as the command line's flag).
    pub fn from_recorded_args(args: &Args, cwd: PathBuf) -> Result<Runtime, CliError> {
        Self::gathered(args, cwd, false)
    }

    fn gathered(args: &Args, cwd: PathBuf, ask: bool) -> Result<Runtime, CliError> {
        let agent_dir = agent_dir();
        let mut warnings = Vec::new();
        let mut thinking = None;
        if let Some(level) = &args.thinking {
            match ThinkingLevel::parse(level) {
                Some(level) => thinking = Some(level),
                None => {
                    let valid: Vec<&str> = ThinkingLevel::ALL.iter().map(|l| l.as_str()).collect();
                    warnings.push(format!(
                        "Invalid thinking level \"{level}\". Valid values: {}",
                        valid.join(", ")
                    ));
                }
            }
        }
        let thinking_flag = thinking.is_some();
        let env = process_environment();
        let home = env.get("HOME").map(PathBuf::from).unwrap_or_default();
        let global = Settings::load(&agent_dir, &cwd, false);
        let mut trust_host = None;
        let trust = crate::trust::resolve(
            &agent_dir,
            &cwd,
            &home,
            args.project_trust(),
            global.default_project_trust(),
            || {
                if !ask {
                    return None;
                }
                let (host, answer) =
                    crate::trust::ask_extensions(args, &agent_dir, &cwd, &home, &global)?;
                trust_host = Some(host);
                Some(answer)
            },
        );
        let trusted = trust.trusted;
        let settings = Settings::load(&agent_dir, &cwd, trusted == Ok(true));
        let project_trusted = trusted == Ok(true);
        warnings.extend(settings.warnings.iter().cloned());
        let registry = load_models(catalog::builtin(), &agent_dir.join("models.json"));
        let (mut auth, _) = load_auth(&agent_dir.join("auth.json"));
        let cwd_text = cwd.to_string_lossy().into_owned();
        let session_dir = match resolve_session_dir(
            args.session_dir.as_deref(),
            env.get(SESSION_DIR_ENV),
            settings.session_dir(),
            &home,
        ) {
            Some(dir) => dir,
            None => default_session_dir(&agent_dir, &cwd_text).map_err(|source| CliError::Io {
                what: "the session directory".into(),
                source,
            })?,
        };
        let patterns = if args.models.is_empty() {
            enabled_models(&agent_dir, &cwd, trusted == Ok(true))
        } else {
            args.models.iter().map(|p| p.trim().to_owned()).collect()
        };
        let model_request = ModelRequest {
            provider: args.provider.clone(),
            model: args.model.clone(),
            patterns,
            api_key: args.api_key.clone(),
        };
        // Pi's warnings of the handlers that threw come before any other diagnostic.
        let mut diagnostics: Vec<Diagnostic> = trust
            .warnings
            .into_iter()
            .map(Diagnostic::Warning)
            .collect();
        if let Err(error) = trusted {
            diagnostics.push(Diagnostic::Error(error));
        }
        let choice = model_choice::choose(&model_request, &registry, &mut auth, &env);
        let model_choice_place = ChoicePlace {
            warnings: warnings.len()..warnings.len() + choice.warnings.len(),
            diagnostics: diagnostics.len()..diagnostics.len() + choice.diagnostics.len(),
        };
        warnings.extend(choice.warnings);
        diagnostics.extend(choice.diagnostics);
        if thinking.is_none() && choice.model.is_some() {
            thinking = choice.thinking;
        }
        let scoped_models = choice.scoped;
        if let (Some(provider), None) = (&args.provider, &args.model) {
            diagnostics.push(Diagnostic::Error(format!(
                "--provider requires --model (for example: --provider {provider} --model <pattern>)"
            )));
        }
        if let Some(error) = args.tool_names().as_deref().and_then(tool_list_error) {
            diagnostics.push(Diagnostic::Error(format!("--tools: {error}")));
        }
        let tools = active_tools(args, &settings);
        let prompt_files = crate::prompt_files::read(&crate::prompt_files::Wanted {
            system_prompt: args.system_prompt.as_deref(),
            // A value given at all, even an empty one, is the flag given.
            append_system_prompt: (!args.append_system_prompt.is_empty())
                .then_some(args.append_system_prompt.as_slice()),
            cwd: &cwd,
            agent_dir: &agent_dir,
            project_trusted,
        });
        warnings.extend(prompt_files.warnings);
        let packages = pi_effects::packages::resolve(&pi_effects::packages::Wanted {
            agent_dir: &agent_dir,
            cwd: &cwd,
            home: &home,
            listed: settings.listed_resources(),
        });
        warnings.extend(packages.missing.iter().map(ToString::to_string));
        let resources = pi_effects::resources::discover(&pi_effects::resources::Wanted {
            agent_dir: &agent_dir,
            cwd: &cwd,
            home: &home,
            project_trusted,
            no_skills: args.no_skills,
            skill_paths: &args.skills,
            no_prompt_templates: args.no_prompt_templates,
            prompt_template_paths: &args.prompt_templates,
            listed: settings.listed_resources(),
            packages: &packages.found,
        });
        let wanted_extensions = pi_effects::extension::sidecar::Wanted {
            agent_dir: &agent_dir,
            cwd: &cwd,
            home: &home,
            project_trusted,
            no_extensions: args.no_extensions,
            cli_paths: &args.extensions,
            listed: settings.listed_resources(),
            packages: &packages.found,
        };
        let extension_paths = pi_effects::extension::sidecar::discover(&wanted_extensions);
        warnings.extend(
            pi_effects::extension::sidecar::missing_from_command_line(&wanted_extensions)
                .iter()
                .map(ToString::to_string),
        );
        let extension_sources =
            pi_effects::extension::sidecar::discover::resolved(&wanted_extensions);
        // A package source's extensions are the command line's too (Pi's `cli` source).
        let cli_extension_paths = args
            .extensions
            .iter()
            .map(|p| {
                pi_effects::packages::temporary_install(&agent_dir, p)
                    .unwrap_or_else(|| cwd.join(pi_effects::extension::sidecar::expand_home(p)))
            })
            .collect();
        Ok(Runtime {
            resources,
            extension_paths,
            cli_extension_paths,
            extension_sources,
            system_prompt: prompt_files.system_prompt,
            append_system_prompt: prompt_files.append_system_prompt,
            context_files: !args.no_context_files,
            wait_for_session: args.wait_for_session,
            cwd,
            agent_dir,
            session_dir,
            settings,
            registry,
            auth,
            env,
            cli_model: choice.model,
            model_request,
            model_choice_place,
            thinking,
            thinking_flag,
            scoped_models,
            tools,
            registered_builtins: registered_builtins(args),
            session_name: std::sync::Mutex::new(
                args.name.as_deref().map(str::trim).map(str::to_owned),
            ),
            warnings,
            diagnostics,
            recorded_models: None,
            project_trusted,
            trust_by_extension: trust.by_extension,
            custom_tools: ToolRegistry::new(),
            extension_host: trust_host,
            extension_commands: Vec::new(),
            mcp_servers: Vec::new(),
            extensions: ExtensionRegistry::new(),
            extension_state: StateMirror::default(),
            mcp_section: None,
            mcp_later_section: None,
            tool_search_registered: tool_search_registered(args),
            mcp_started: false,
            mcp_registered: Vec::new(),
            start_errors: Vec::new(),
            mcp_activates_tool_search: false,
            cache_warming: None,
        })
    }

    /// The runtime of a recorded RPC run while a cassette replays it: its recorded command line
    /// `args` in its recorded `cwd`, answering with the recorded `models` and `scoped` models.
    /// Nothing of this machine is read — no settings, models.json, auth.json, environment
    /// variable or file a flag names — and no directory is created: a cassette may come from
    /// anyone. The agent and session directories are left empty, since a replay writes no
    /// settings and builds no other session; what only a live run uses (keys, the system prompt
    /// flags, the CLI's model) is left out.
    pub fn replaying(
        args: &Args,
        cwd: PathBuf,
        models: Vec<Model>,
        scoped: Vec<ScopedModel>,
        resources: Resources,
    ) -> Runtime {
        let thinking = args.thinking.as_deref().and_then(ThinkingLevel::parse);
        let tools = active_tools(args, &Settings::default());
        Runtime {
            cwd,
            agent_dir: PathBuf::new(),
            session_dir: PathBuf::new(),
            settings: Settings::default(),
            registry: ModelRegistry::builtin(catalog::builtin()),
            auth: AuthStorage::default(),
            env: Environment::from_vars(Vec::<(String, String)>::new()),
            cli_model: None,
            model_request: ModelRequest::default(),
            model_choice_place: ChoicePlace::default(),
            thinking,
            thinking_flag: thinking.is_some(),
            scoped_models: Vec::new(),
            tools,
            registered_builtins: registered_builtins(args),
            session_name: std::sync::Mutex::new(None),
            system_prompt: None,
            append_system_prompt: None,
            context_files: !args.no_context_files,
            resources,
            extension_paths: Vec::new(),
            cli_extension_paths: Vec::new(),
            extension_sources: Vec::new(),
            wait_for_session: false,
            warnings: Vec::new(),
            diagnostics: Vec::new(),
            recorded_models: None,
            project_trusted: false,
            trust_by_extension: None,
            custom_tools: ToolRegistry::new(),
            extension_host: None,
            extension_commands: Vec::new(),
            mcp_servers: Vec::new(),
            extensions: ExtensionRegistry::new(),
            extension_state: StateMirror::default(),
            mcp_section: None,
            mcp_later_section: None,
            tool_search_registered: tool_search_registered(args),
            mcp_started: false,
            mcp_registered: Vec::new(),
            start_errors: Vec::new(),
            mcp_activates_tool_search: false,
            cache_warming: None,
        }
        .with_recorded_models(models, scoped)
    }

    /// This runtime answering for a recorded run: `models` are the models it could use (with
    /// credentials), whatever this machine's registry and keys say.
    pub fn with_recorded_models(mut self, models: Vec<Model>, scoped: Vec<ScopedModel>) -> Self {
        self.recorded_models = Some(models);
        self.scoped_models = scoped;
        self
    }

    /// The models with credentials, in the registry's order.
    pub fn available_models(&self) -> Vec<Model> {
        if let Some(models) = &self.recorded_models {
            return models.clone();
        }
        self.registry
            .available(&self.auth, &self.env)
            .cloned()
            .collect()
    }

    /// The options of each call: the key and headers as the model registry resolves them, and
    /// what the settings and environment add (see [`RequestSettings`]).
    pub fn call_options(&self) -> CallOptionsFor {
        let registry = self.registry.clone();
        let auth = self.auth.clone();
        let env = self.env.clone();
        let shaping = RequestSettings::new(&self.settings, &self.env);
        Arc::new(move |request| {
            let now = i64::try_from(now_ms()).unwrap_or(i64::MAX);
            let resolved = registry
                .request_auth(&request.model, &auth, &env, now)
                .map_err(|e| e.to_string())?;
            let api_key = resolved
                .api_key
                .ok_or_else(|| format!("No API key for provider: {}", request.model.provider))?;
            Ok(shaping.options(request, api_key, resolved.headers.unwrap_or_default()))
        })
    }

    /// Whether a key can be found for `model` (Pi's check before prompting).
    pub fn has_auth(&self, model: &Model) -> bool {
        if let Some(models) = &self.recorded_models {
            return models
                .iter()
                .any(|m| m.provider == model.provider && m.id == model.id);
        }
        self.registry
            .has_configured_auth(model, &self.auth, &self.env)
    }

    /// The store for `choice`, created at `start`, holding the claim on its file: taken before
    /// an existing file is read, so a second writer is refused (or waits, with
    /// `--wait-for-session`) before it loads anything or writes a byte. A new session's file
    /// (and a fork's, written under a fresh name) is claimed as soon as its name is known.
    pub fn store(&self, choice: &SessionChoice, start: Start) -> Result<SessionStore, CliError> {
        let now = start.at;
        let ids = IdGenerator::new(start.seed);
        let cwd = self.cwd.to_string_lossy();
        // Pi 1.5.2 throws its refusal of a file that is not a session, naming the resolved path,
        // and `main` prints it as `Error: <message>`.
        let session_error = |e: StoreError| match e {
            StoreError::NotASession(path) => {
                let resolved = resolve_posix(&cwd, &path.to_string_lossy());
                let refusal = StoreError::NotASession(PathBuf::from(resolved));
                CliError::Session(format!("Error: {refusal}"))
            }
            other => CliError::Session(other.to_string()),
        };
        let open = |path: &Path, ids| {
            let lock = self.claim(path)?;
            SessionStore::open(path, Some(&self.session_dir), None, &cwd, now, ids)
                .map(|store| store.holding(lock))
                .map_err(session_error)
        };
        let name = self
            .session_name
            .lock()
            .map(|mut name| name.take())
            .unwrap_or_default();
        let named = |mut store: SessionStore| {
            if let Some(name) = &name {
                store.append_session_info(name, now);
            }
            store
        };
        let store = match choice {
            SessionChoice::InMemory => return Ok(named(SessionStore::in_memory(&cwd, now, ids))),
            SessionChoice::InMemoryWithId(id) => {
                let store = SessionStore::in_memory(&cwd, now, ids).with_session_id(id);
                return Ok(named(store));
            }
            SessionChoice::NewWithId(id) => SessionStore::create(&cwd, &self.session_dir, now, ids)
                .map(|store| store.with_session_id(id)),
            SessionChoice::Open(path) => return open(path, ids).map(named),
            SessionChoice::ContinueRecent => match most_recent_session(&self.session_dir) {
                Some(path) => return open(&path, ids).map(named),
                None => SessionStore::create(&cwd, &self.session_dir, now, ids),
            },
            SessionChoice::New => SessionStore::create(&cwd, &self.session_dir, now, ids),
            SessionChoice::Child(parent) => {
                SessionStore::create_child(&cwd, &self.session_dir, now, ids, Some(parent.clone()))
            }
            SessionChoice::Fork { from, id } => {
                SessionStore::fork_from(from, &cwd, &self.session_dir, now, ids, id.as_deref())
            }
            SessionChoice::BranchInMemory { tree, leaf } => {
                SessionStore::in_memory_branched(tree, leaf, now, ids)
            }
            SessionChoice::Branch { from, leaf } => {
                SessionStore::open(from, Some(&self.session_dir), None, &cwd, now, ids).and_then(
                    |mut source| {
                        source.create_branched_session(leaf, now)?;
                        Ok(source)
                    },
                )
            }
        }
        .map_err(session_error)?;
        let store = named(store);
        match store.file().map(Path::to_path_buf) {
            Some(file) => Ok(store.holding(self.claim(&file)?)),
            None => Ok(store),
        }
    }

    /// Claims `file` for this process, waiting for its holder with `--wait-for-session`.
    fn claim(&self, file: &Path) -> Result<SessionLock, CliError> {
        let claimed = if self.wait_for_session {
            SessionLock::acquire_waiting(file, &mut |pid| {
                let holder =
                    pid.map_or_else(|| "another process".to_owned(), |p| format!("process {p}"));
                eprintln!(
                    "Waiting for {holder} to finish with session file {}",
                    file.display()
                );
            })
        } else {
            SessionLock::acquire(file)
        };
        claimed.map_err(|error| match error {
            held @ LockError::Held { .. } => CliError::SessionHeld(held),
            other => CliError::Session(other.to_string()),
        })
    }

    /// Builds a live session for `choice` (see [`Runtime::build`]).
    pub fn open(&self, choice: &SessionChoice) -> Result<AgentSession, CliError> {
        let built = self.build(choice, Start::now(), false)?;
        Ok(AgentSession::from_parts(
            built.machine,
            built.live,
            built.file,
        ))
    }

    /// How RPC mode warms the prompt cache: the global setting `cacheWarming`, and the
    /// retention the requests ask for (`PI_CACHE_RETENTION=long`, else short). `None` when
    /// nothing could be warmed (the setting is `off`, or no model the session can use has a
    /// `promptCache`), so such a run's configuration reads as one from before warming existed.
    pub fn rpc_cache_warming(&self) -> Option<CacheWarming> {
        let mode = self.settings.cache_warming_mode();
        let available = self.available_models();
        let warmable = self
            .cli_model
            .iter()
            .chain(&available)
            .any(|m| m.extra.get("promptCache").is_some());
        (mode != CacheWarmingMode::Off && warmable).then(|| CacheWarming {
            mode,
            retention: if self.env.get_raw("PI_CACHE_RETENTION") == Some("long") {
                CacheRetentionKind::Long
            } else {
                CacheRetentionKind::Short
            },
        })
    }

    /// The run's `tool_search` (see [`SessionOptions::tool_search`]): registered where Pi's
    /// would be observable (extensions loaded, MCP servers started, or the tools naming it),
    /// active when the tools name it or deferred MCP tools need it.
    pub fn tool_search(&self) -> Option<bool> {
        let named = self.tools.iter().any(|t| t == TOOL_SEARCH_TOOL_NAME);
        let observable = named || self.mcp_started || !self.extensions.is_empty();
        (self.tool_search_registered && observable).then_some(self.mcp_activates_tool_search)
    }

    /// The options of a session of `model` at `level` as this command line, settings and
    /// environment configure it.
    pub fn session_options(&self, model: Model, level: ThinkingLevel) -> SessionOptions {
        let mut options = SessionOptions::new(&self.cwd, model, self.call_options());
        options.agent_dir = self.agent_dir.clone();
        // Unclamped: the session clamps it to the model and keeps it as the level a switch to
        // a reasoning model restores.
        options.thinking_level = level;
        options.tools = self.tools.clone();
        options.registered_builtins = Some(self.registered_builtins.clone());
        options.custom_tools = self.custom_tools.clone();
        options.tool_search = self.tool_search();
        options.mcp_servers = self.mcp_servers.clone();
        options.custom_sections =
            pi_mcp::servers_section::custom_sections(self.mcp_section.as_deref());
        options.later_sections =
            pi_mcp::servers_section::custom_sections(self.mcp_later_section.as_deref());
        options.start_errors = self.start_errors.clone();
        options.extensions = self.extensions.clone();
        options.system_prompt = self.system_prompt.clone();
        options.append_system_prompt = self.append_system_prompt.clone();
        options.context_files = self.context_files;
        options.resources = self.resources.clone();
        options.retry = self.settings.retry();
        options.compaction = self.settings.compaction();
        options.steering_mode = self.settings.steering_mode();
        options.follow_up_mode = self.settings.follow_up_mode();
        options.docs = docs();
        options.block_images = self.settings.block_images();
        options.default_thinking_level = self.settings.default_thinking_level();
        options.model_thinking_levels = self.settings.model_thinking_levels();
        options.cache_warming = self.cache_warming;
        let mut env = ToolEnv::new(&self.cwd);
        env.shell = self.settings.shell_path().map(PathBuf::from);
        env.command_prefix = self.settings.shell_command_prefix().map(str::to_owned);
        env.pass_credentials = self.settings.shell_pass_credentials();
        env.auto_resize_images = self.settings.auto_resize_images();
        options.tool_env = Some(env.with_environment_overrides());
        options
    }

    /// The parts of the session for `choice`, started at `start`, with the model and thinking
    /// level Pi's `createAgentSession` would choose (see [`Runtime::choose`]): its
    /// configuration, machine, file, the session as it was before the run, and the Live
    /// interpreter (which a recording wraps).
    pub fn build(
        &self,
        choice: &SessionChoice,
        start: Start,
        capture: bool,
    ) -> Result<Built, CliError> {
        let store = self.store(choice, start)?;
        if let Some(message) = self.missing_session_cwd(&store) {
            return Err(CliError::Session(message));
        }
        if let Some(torn) = store.torn_report() {
            eprintln!("Warning: {torn}");
        }
        self.mirror_for_extensions(store.file());
        let (model, level) = self.choose(&store);
        let mut options = self.session_options(model, level);
        options.seed = Some(start.seed);
        if let Some(tools) = &mut options.tool_env {
            tools.session_variables = Some(SessionVariables {
                id: store.tree().header().id.clone(),
                file: store.file().map(Path::to_path_buf),
                ..SessionVariables::default()
            });
        }
        let session_error = |e: CreateError| CliError::Session(e.to_string());
        let config = options.run_config(start.at).map_err(session_error)?;
        let live = options
            .live()
            .map_err(session_error)?
            .for_run(config.seed, config.started_at);
        let initial = InitialSession::of(&store, capture).map_err(|source| CliError::Io {
            what: "the session file".into(),
            source,
        })?;
        let id_state = store.id_state();
        let unwritten = capture.then(|| store.unwritten_text()).flatten();
        let (machine, file) =
            build_machine(&config, store).map_err(|e| CliError::Session(e.to_string()))?;
        Ok(Built {
            config,
            machine,
            file,
            live,
            initial,
            id_state,
            unwritten,
        })
    }

    /// Pi's refusal of a session file whose stored working directory is gone (outside
    /// interactive mode, which would ask instead): the text it prints, or `None` when the
    /// directory exists or the session has no file.
    fn missing_session_cwd(&self, store: &SessionStore) -> Option<String> {
        let file = store.file()?;
        let session_cwd = &store.tree().header().cwd;
        if session_cwd.is_empty() || Path::new(session_cwd).exists() {
            return None;
        }
        Some(format!(
            "Stored session working directory does not exist: {session_cwd}\nSession file: {}\nCurrent working directory: {}",
            resolve_posix(&self.cwd.to_string_lossy(), &file.to_string_lossy()),
            self.cwd.display()
        ))
    }

    /// The model and (unclamped) thinking level of a session over `store`. The model: the
    /// command line's; else, for a session without messages, the `--models` scope's (the
    /// saved default if in scope, else the first); else the session's own if it still has
    /// credentials; else the settings' default; else the preferred available model; else Pi's
    /// `unknown` placeholder, which fails on the first prompt for want of a key. The level:
    /// the command line's (or the chosen scope entry's); else the session's last change; else,
    /// for a new session, the model's entry in `modelThinkingLevels`; else the settings'
    /// default; else `medium`.
    pub fn choose(&self, store: &SessionStore) -> (Model, ThinkingLevel) {
        let tree = store.tree();
        let context = tree.context();
        let has_messages = !context.messages.is_empty();
        let mut thinking = self.thinking;
        let mut model = self.cli_model.clone();
        if model.is_none() && !has_messages {
            if let Some(scoped) = self.scoped_default() {
                if !self.thinking_flag && scoped.thinking.is_some() {
                    thinking = scoped.thinking;
                }
                model = Some(scoped.model.clone());
            }
        }
        if model.is_none() && has_messages {
            model = context
                .model
                .as_ref()
                .and_then(|saved| self.registry.find(&saved.provider, &saved.model_id))
                .filter(|found| self.has_auth(found))
                .cloned();
        }
        let model = model
            .or_else(|| {
                let provider = self.settings.default_provider()?;
                let id = self.settings.default_model()?;
                self.registry.find(provider, id).cloned()
            })
            .or_else(|| catalog::preferred_available(&self.available_models()).cloned())
            .unwrap_or_else(Model::unknown);
        let session_level = has_messages
            .then(|| {
                tree.branch_path(None)
                    .iter()
                    .any(|e| e.kind() == "thinking_level_change")
                    .then(|| ThinkingLevel::parse(&context.thinking_level))
                    .flatten()
            })
            .flatten();
        // A new session asks for the model's own level first (Pi 1.5.2's `modelThinkingLevels`);
        // a resumed one without a level of its own takes the default.
        let per_model = (!has_messages)
            .then(|| {
                let key = format!("{}/{}", model.provider, model.id);
                self.settings.model_thinking_levels().get(&key).copied()
            })
            .flatten();
        let level = thinking
            .or(session_level)
            .or(per_model)
            .or(self.settings.default_thinking_level())
            .unwrap_or(ThinkingLevel::Medium);
        (model, level)
    }

    /// The scope's model for a new session: the saved default when it is in scope, else the
    /// first.
    fn scoped_default(&self) -> Option<&ScopedModel> {
        let provider = self.settings.default_provider();
        let id = self.settings.default_model();
        self.scoped_models
            .iter()
            .find(|s| {
                Some(s.model.provider.as_str()) == provider && Some(s.model.id.as_str()) == id
            })
            .or(self.scoped_models.first())
    }

    /// A session file named by `--session` / `--fork`: a path, else an id prefix looked up in
    /// this directory's sessions, then in every session.
    pub fn find_session(&self, reference: &str) -> Result<PathBuf, CliError> {
        if reference.contains('/') || reference.ends_with(".jsonl") {
            let path = Path::new(reference);
            return Ok(if path.is_absolute() {
                path.to_path_buf()
            } else {
                self.cwd.join(path)
            });
        }
        let here = list_sessions(&self.session_dir);
        let found = here
            .iter()
            .find(|s| s.id.starts_with(reference))
            .map(|s| s.path.clone())
            .or_else(|| {
                list_all_sessions(&self.agent_dir)
                    .into_iter()
                    .find(|s| s.id.starts_with(reference))
                    .map(|s| s.path)
            });
        found.ok_or_else(|| CliError::Usage(format!("No session found matching '{reference}'")))
    }
}

/// The tools a run starts with, from `--no-tools`, `--no-builtin-tools`, `--tools` and
/// `--exclude-tools` (see [`select_tools`]), the defaults being the settings' `defaultTools` when
/// they set it.
fn active_tools(args: &Args, settings: &Settings) -> Vec<String> {
    let defaults: Vec<String> = if args.no_tools || args.no_builtin_tools {
        Vec::new()
    } else {
        settings
            .default_tools()
            .unwrap_or_else(|| DEFAULT_TOOLS.iter().map(|t| (*t).to_owned()).collect())
    };
    let tools = args.tool_names();
    let tools = if args.no_tools || args.no_builtin_tools {
        None
    } else {
        tools
    };
    select_tools(
        &defaults,
        tools.as_deref(),
        args.excluded_tools().as_deref(),
    )
}

/// Whether the run registers Pi's `tool_search`: not with `--no-tools`, else when `--tools`
/// (an allowlist) and `--exclude-tools` keep it.
fn tool_search_registered(args: &Args) -> bool {
    !args.no_tools
        && allows(
            args.tool_names().as_deref(),
            args.excluded_tools().as_deref(),
            TOOL_SEARCH_TOOL_NAME,
        )
}

/// The built-in tools a run registers, active or not: none with `--no-tools` or
/// `--no-builtin-tools`, else those `--tools` and `--exclude-tools` allow (see
/// [`registered`]).
fn registered_builtins(args: &Args) -> Vec<String> {
    if args.no_tools || args.no_builtin_tools {
        return Vec::new();
    }
    registered(
        args.tool_names().as_deref(),
        args.excluded_tools().as_deref(),
    )
}

/// The `enabledModels` setting (a trusted project's list replaces the global one), read here
/// because [`Settings`] has no accessor for lists.
fn enabled_models(agent_dir: &Path, cwd: &Path, project_trusted: bool) -> Vec<String> {
    let read = |path: PathBuf| -> Option<Vec<String>> {
        let text = std::fs::read_to_string(path).ok()?;
        let value: serde_json::Value = serde_json::from_str(&text).ok()?;
        let list = value.get("enabledModels")?.as_array()?;
        Some(
            list.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
        )
    };
    project_trusted
        .then(|| read(cwd.join(".pi").join("settings.json")))
        .flatten()
        .or_else(|| read(agent_dir.join("settings.json")))
        .unwrap_or_default()
}

/// `--system-prompt` / `--append-system-prompt`: a file's contents when the value names a file.
/// Where Pi's documentation is said to be in the system prompt: `PI_PACKAGE_DIR`, else the
/// directory of this executable.
pub(crate) fn docs() -> DocPaths {
    let package = std::env::var_os("PI_PACKAGE_DIR")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::current_exe()
                .ok()
                .and_then(|exe| exe.parent().map(Path::to_path_buf))
        })
        .unwrap_or_default();
    let text = |p: PathBuf| p.to_string_lossy().into_owned();
    DocPaths {
        readme: text(package.join("README.md")),
        docs: text(package.join("docs")),
        examples: text(package.join("examples")),
    }
}

/// Pi's pointer to its login and model documentation (`auth-guidance.js`).
fn login_help() -> String {
    let docs = PathBuf::from(docs().docs);
    format!(
        "Use /login to log into a provider via OAuth or API key. See:\n  {}\n  {}",
        docs.join("providers.md").display(),
        docs.join("models.md").display()
    )
}

/// What Pi prints when no model has credentials.
pub fn no_models_available() -> String {
    format!("No models available. {}", login_help())
}

/// What a prompt fails with when the model's provider has no key (`unknown` is Pi's
/// placeholder when no model could be chosen).
pub fn no_api_key_found(provider: &str) -> String {
    let shown = if provider == "unknown" {
        "the selected model"
    } else {
        provider
    };
    format!("No API key found for {shown}.\n\n{}", login_help())
}

/// The seed of a run's ids, when given (not Pi's).
pub const SEED_ENV: &str = "PI_SEED";

/// When a session starts and the seed of its ids: the one clock reading and the one seed of
/// each session the CLI builds (a recording keeps both; a replay reuses them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Start {
    pub at: u64,
    pub seed: u64,
}

impl Start {
    /// Now, seeded from the time and the process id, so two processes started in the same
    /// millisecond still differ; or from [`SEED_ENV`] when it is set (an eval gives each
    /// trial its own).
    pub fn now() -> Self {
        let at = now_ms();
        let seed = std::env::var(SEED_ENV)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(at ^ u64::from(std::process::id()).rotate_left(32));
        Start { at, seed }
    }
}

/// A session's parts, before an interpreter is chosen.
#[derive(Debug)]
pub struct Built {
    pub config: RunConfig,
    pub machine: SessionMachine,
    pub file: SessionFile,
    pub live: Live,
    pub initial: InitialSession,
    /// The id generator's state once the session was opened.
    pub id_state: u64,
    /// When captured for a recording: what the session holds that its file does not yet (a
    /// branch kept until it has a message to write, a session in memory), as the file will
    /// start.
    pub unwritten: Option<String>,
}

/// The session a run starts in, as it is on disk before the run: what a recording embeds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InitialSession {
    /// No file.
    InMemory,
    /// A file not written yet.
    New { file: PathBuf },
    /// A file that exists (opened, continued or forked), with its content when it was
    /// captured for a recording.
    Existing {
        file: PathBuf,
        content: Option<Vec<u8>>,
    },
}

impl InitialSession {
    /// The session of `store`; its content is read only when `capture` (a recording embeds
    /// it; an ordinary start does not read a large session twice).
    fn of(store: &SessionStore, capture: bool) -> std::io::Result<Self> {
        let Some(file) = store.file() else {
            return Ok(InitialSession::InMemory);
        };
        let file = file.to_path_buf();
        if !file.exists() {
            return Ok(InitialSession::New { file });
        }
        let content = if capture {
            Some(std::fs::read(&file)?)
        } else {
            None
        };
        Ok(InitialSession::Existing { file, content })
    }
}
