//! Everything a run is built from, gathered once from the command line, the environment and the
//! agent directory (Pi's `main.ts` up to `createAgentSession`), and the sessions built from it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pi_core::model::{clamp_thinking_level, Model, ThinkingLevel};
use pi_core::session::ids::IdGenerator;
use pi_core::system_prompt::DocPaths;
use pi_effects::agent_session::{
    create_agent_session, AgentSession, SessionOptions, DEFAULT_TOOLS,
};
use pi_effects::live::{now_ms, CallOptionsFor};
use pi_effects::session::{
    agent_dir, default_session_dir, list_all_sessions, list_sessions, resolve_session_dir,
    SessionStore, SESSION_DIR_ENV,
};
use pi_effects::tools::ToolEnv;
use pi_providers::registry::{AuthStorage, Environment, ModelRegistry};
use pi_providers::{catalog, CallOptions};

use crate::args::Args;
use crate::model_select::{default_model, resolve_cli_model};
use crate::settings::Settings;
use crate::CliError;

/// Which session a run works in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionChoice {
    /// A new session in the session directory.
    New,
    /// Not written anywhere (`--no-session`).
    InMemory,
    /// The most recent session of this directory, or a new one (`--continue`).
    ContinueRecent,
    /// This file (`--session`, `switch_session`); created if missing.
    Open(PathBuf),
    /// A copy of this file as a new session (`--fork`).
    Fork(PathBuf),
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
    /// The model asked for on the command line (or the default when none was).
    pub model: Option<Model>,
    /// Whether `--provider`/`--model` chose the model (a resumed session's model yields to it).
    pub model_from_cli: bool,
    /// `--thinking`, or the level a `--model` pattern named.
    pub thinking: Option<ThinkingLevel>,
    pub tools: Vec<String>,
    pub system_prompt: Option<String>,
    pub append_system_prompt: Option<String>,
    pub context_files: bool,
    /// Warnings for stderr (bad settings, an unknown thinking level).
    pub warnings: Vec<String>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("cwd", &self.cwd)
            .field("model", &self.model.as_ref().map(|m| &m.id))
            .finish_non_exhaustive()
    }
}

impl Runtime {
    /// Gathers the inputs of a run started with `args` in `cwd`.
    pub fn from_args(args: &Args, cwd: PathBuf) -> Result<Runtime, CliError> {
        let agent_dir = agent_dir();
        let settings = Settings::load(&agent_dir, &cwd);
        let mut warnings = settings.warnings.clone();
        let registry = ModelRegistry::load(catalog::builtin(), &agent_dir.join("models.json"));
        if let Some(error) = registry.error() {
            warnings.push(error.to_string());
        }
        let (mut auth, _) = AuthStorage::load(&agent_dir.join("auth.json"));
        let env = Environment::from_process();
        let home = env.get("HOME").map(PathBuf::from).unwrap_or_default();
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
        let cli = resolve_cli_model(args.provider.as_deref(), args.model.as_deref(), &registry)
            .map_err(CliError::Usage)?;
        let mut thinking = cli.as_ref().and_then(|c| c.thinking);
        if let Some(level) = &args.thinking {
            match ThinkingLevel::parse(level) {
                Some(level) => thinking = Some(level),
                None => warnings.push(format!(
                    "Invalid thinking level \"{level}\". Valid values: off, minimal, low, medium, high, xhigh"
                )),
            }
        }
        let model_from_cli = cli.is_some();
        let model = match cli {
            Some(cli) => Some(cli.model),
            None => default_model(
                &registry,
                &auth,
                &env,
                settings.default_provider(),
                settings.default_model(),
            ),
        };
        if let (Some(key), Some(model)) = (&args.api_key, &model) {
            auth.set_runtime_api_key(&model.provider, key);
        }
        let tools = if args.no_tools || args.no_builtin_tools {
            Vec::new()
        } else {
            match args.tool_names() {
                Some(names) => names,
                None => DEFAULT_TOOLS.iter().map(|t| (*t).to_owned()).collect(),
            }
        };
        let append = args
            .append_system_prompt
            .iter()
            .map(|text| read_or_text(&cwd, text))
            .collect::<Vec<_>>();
        Ok(Runtime {
            system_prompt: args.system_prompt.as_deref().map(|t| read_or_text(&cwd, t)),
            append_system_prompt: (!append.is_empty()).then(|| append.join("\n\n")),
            context_files: !args.no_context_files,
            cwd,
            agent_dir,
            session_dir,
            settings,
            registry,
            auth,
            env,
            model,
            model_from_cli,
            thinking,
            tools,
            warnings,
        })
    }

    /// The key and headers for each call, as the model registry resolves them.
    pub fn call_options(&self) -> CallOptionsFor {
        let registry = self.registry.clone();
        let auth = self.auth.clone();
        let env = self.env.clone();
        Arc::new(move |request| {
            let now = i64::try_from(now_ms()).unwrap_or(i64::MAX);
            let resolved = registry
                .request_auth(&request.model, &auth, &env, now)
                .map_err(|e| e.to_string())?;
            let api_key = resolved
                .api_key
                .ok_or_else(|| format!("No API key for provider: {}", request.model.provider))?;
            Ok(CallOptions {
                api_key,
                headers: resolved.headers.unwrap_or_default(),
                ..CallOptions::default()
            })
        })
    }

    /// Whether a key can be found for `model` (Pi's check before prompting).
    pub fn has_auth(&self, model: &Model) -> bool {
        self.registry
            .has_configured_auth(model, &self.auth, &self.env)
    }

    /// The store for `choice`.
    pub fn store(&self, choice: &SessionChoice) -> Result<SessionStore, CliError> {
        let now = now_ms();
        let ids = IdGenerator::new(now ^ u64::from(std::process::id()).rotate_left(32));
        let cwd = self.cwd.to_string_lossy();
        let store = match choice {
            SessionChoice::InMemory => Ok(SessionStore::in_memory(&cwd, now, ids)),
            SessionChoice::New => SessionStore::create(&cwd, &self.session_dir, now, ids),
            SessionChoice::ContinueRecent => {
                SessionStore::continue_recent(&cwd, &self.session_dir, now, ids)
            }
            SessionChoice::Open(path) => {
                SessionStore::open(path, Some(&self.session_dir), None, &cwd, now, ids)
            }
            SessionChoice::Fork(path) => {
                SessionStore::fork_from(path, &cwd, &self.session_dir, now, ids)
            }
        };
        store.map_err(|e| CliError::Session(e.to_string()))
    }

    /// Builds the session for `choice`: the model and thinking level come from the command line,
    /// else from the session, else from the defaults.
    pub fn open(&self, choice: &SessionChoice) -> Result<AgentSession, CliError> {
        let store = self.store(choice)?;
        let context = store.tree().context();
        let restored = context
            .model
            .as_ref()
            .filter(|_| !self.model_from_cli)
            .and_then(|saved| self.registry.find(&saved.provider, &saved.model_id))
            .filter(|model| self.has_auth(model))
            .cloned();
        let model = restored
            .or_else(|| self.model.clone())
            .ok_or(CliError::NoModels)?;
        let session_level = store
            .tree()
            .entries()
            .iter()
            .any(|e| e.kind() == "thinking_level_change")
            .then(|| ThinkingLevel::parse(&context.thinking_level))
            .flatten();
        let level = self
            .thinking
            .or(session_level)
            .or(self.settings.default_thinking_level())
            .unwrap_or(ThinkingLevel::Medium);
        let mut options = SessionOptions::new(&self.cwd, model.clone(), self.call_options());
        options.agent_dir = self.agent_dir.clone();
        options.thinking_level = clamp_thinking_level(&model, level);
        options.tools = self.tools.clone();
        options.system_prompt = self.system_prompt.clone();
        options.append_system_prompt = self.append_system_prompt.clone();
        options.context_files = self.context_files;
        options.retry = self.settings.retry();
        options.compaction = self.settings.compaction();
        options.steering_mode = self.settings.steering_mode();
        options.follow_up_mode = self.settings.follow_up_mode();
        options.docs = docs();
        let mut env = ToolEnv::new(&self.cwd);
        env.shell = self.settings.shell_path().map(PathBuf::from);
        env.command_prefix = self.settings.shell_command_prefix().map(str::to_owned);
        env.auto_resize_images = self.settings.auto_resize_images();
        options.tool_env = Some(env);
        options.store = Some(store);
        create_agent_session(options).map_err(|e| CliError::Session(e.to_string()))
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

/// `--system-prompt` / `--append-system-prompt`: a file's contents when the value names a file.
fn read_or_text(cwd: &Path, value: &str) -> String {
    let path = cwd.join(value);
    match std::fs::read_to_string(&path) {
        Ok(text) if path.is_file() => text,
        _ => value.to_owned(),
    }
}

/// Where Pi's documentation is said to be in the system prompt: `PI_PACKAGE_DIR`, else the
/// directory of this executable.
fn docs() -> DocPaths {
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
