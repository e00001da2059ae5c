//! Everything a run is built from, gathered once from the command line, the environment and the
//! agent directory (Pi's `main.ts` up to `createAgentSession`), and the sessions built from it.
//!
//! Split by job: [`gather`] reads the inputs of a run (or a recorded run's, for a replay),
//! [`models`] chooses models and finds their keys, [`options`] says what a session is
//! configured with, [`session`] opens and builds sessions, and [`guidance`] is where Pi's
//! documentation is and the messages that point to it.

mod gather;
mod guidance;
mod live_providers;
mod models;
mod options;
mod session;

use std::path::PathBuf;

use pi_core::agent_session::CacheWarming;
use pi_core::model::{Model, ThinkingLevel};
use pi_core::resources::Resources;
use pi_core::session::tree::SessionTree;
use pi_effects::custom_tool::ToolRegistry;
use pi_effects::extension::sidecar::StateMirror;
use pi_effects::extension::ExtensionRegistry;
use pi_providers::registry::{AuthStorage, Environment, ModelRegistry};

use crate::model_choice::{ChoicePlace, ModelRequest};
use crate::model_select::ScopedModel;
use crate::settings::Settings;

pub use crate::diagnostic::Diagnostic;
pub(crate) use guidance::docs;
pub use guidance::{no_api_key_found, no_models_available};
pub use live_providers::LiveProviders;
pub use session::{Built, InitialSession, Start};

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

/// The command line's tool flags, read once: `--no-tools`/`--no-builtin-tools`, `--tools` and
/// `--exclude-tools`. They select the active tools from the settings' `defaultTools` (Pi's
/// default tools and their modifiers, which a reload reads again), and as an allowlist with
/// exclusions they decide which tools extensions and MCP servers register (Pi's
/// `_isAllowedTool`, and the allowlist's activation).
#[derive(Clone, Debug, Default)]
pub(crate) struct ToolFlags {
    /// No default tools (`--no-tools` or `--no-builtin-tools`).
    pub(crate) off: bool,
    /// The `--tools` names, which choose from the defaults or add to them.
    pub(crate) tools: Option<Vec<String>>,
    /// Pi 1.5.2's allowlist: `--tools`, or under `--no-tools` what it names, else nothing.
    pub(crate) allowlist: Option<Vec<String>>,
    pub(crate) exclude: Option<Vec<String>>,
}

impl ToolFlags {
    /// Whether a tool of `name` stays registered.
    pub(crate) fn allows(&self, name: &str) -> bool {
        crate::tool_select::allows(self.allowlist.as_deref(), self.exclude.as_deref(), name)
    }
}

/// What the command line says of the resources a reload finds again (Pi's resource loader keeps
/// its options across reloads): the skill and template flags, and the prompt file flags.
#[derive(Clone, Debug, Default)]
pub(crate) struct ResourceFlags {
    /// The home directory (`~/.agents/skills`, `~` in given paths).
    pub(crate) home: PathBuf,
    pub(crate) no_skills: bool,
    pub(crate) skill_paths: Vec<String>,
    pub(crate) no_prompt_templates: bool,
    pub(crate) prompt_template_paths: Vec<String>,
    /// `--system-prompt`, and the `--append-system-prompt` values (`None`: not given at all).
    pub(crate) system_prompt: Option<String>,
    pub(crate) append_system_prompt: Option<Vec<String>>,
    /// `--no-extensions` and the `-e` paths, which the extensions are found with again.
    pub(crate) no_extensions: bool,
    pub(crate) extension_cli_paths: Vec<String>,
}

impl ResourceFlags {
    /// The prompt's replacement and addendum, read as Pi's resource loader reads them.
    pub(crate) fn prompt_files(
        &self,
        cwd: &std::path::Path,
        agent_dir: &std::path::Path,
        project_trusted: bool,
    ) -> crate::prompt_files::PromptFiles {
        crate::prompt_files::read(&crate::prompt_files::Wanted {
            system_prompt: self.system_prompt.as_deref(),
            append_system_prompt: self.append_system_prompt.as_deref(),
            cwd,
            agent_dir,
            project_trusted,
        })
    }

    /// The skills and templates found with these flags, the settings' `listed` entries and
    /// what their `packages` give.
    pub(crate) fn resources(
        &self,
        agent_dir: &std::path::Path,
        cwd: &std::path::Path,
        project_trusted: bool,
        listed: &[pi_effects::settings::Listed],
        packages: &pi_effects::packages::Accumulator,
    ) -> Resources {
        pi_effects::resources::discover(&pi_effects::resources::Wanted {
            agent_dir,
            cwd,
            home: &self.home,
            project_trusted,
            no_skills: self.no_skills,
            skill_paths: &self.skill_paths,
            no_prompt_templates: self.no_prompt_templates,
            prompt_template_paths: &self.prompt_template_paths,
            listed,
            packages,
        })
    }
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
    /// The command line's tool flags: how the active tools are selected from the settings'
    /// defaults, and what keeps the tools extensions register registered and activates them.
    pub(crate) tool_flags: ToolFlags,
    /// The selection of the settings last read (a reload activates the tools its settings
    /// newly add).
    pub(crate) last_default_tools: std::sync::Mutex<Vec<String>>,
    /// The built-in tools registered, active or not (see `gather::registered_builtins`).
    pub registered_builtins: Vec<String>,
    pub system_prompt: Option<String>,
    pub append_system_prompt: Option<String>,
    pub context_files: bool,
    /// The skills and prompt templates found (`crate::resources`); a replay's are the recorded
    /// ones.
    pub resources: Resources,
    /// What a reload finds the skills, templates and prompt files with again (a replay's are
    /// empty: it reads none).
    pub(crate) resource_flags: ResourceFlags,
    /// The extensions found for this run (`crate::extensions`), not yet loaded.
    pub extension_paths: Vec<PathBuf>,
    /// The options the command line gave that Pi's own do not know: the flags extensions may
    /// register and read (a recording scrubs the values of those named as credentials).
    pub given_flags: Vec<pi_effects::extension::sidecar::GivenFlag>,
    /// The `-e` paths, as the folder resolves them (their commands' `sourceInfo` is Pi's CLI one).
    pub cli_extension_paths: Vec<PathBuf>,
    /// The extensions found but the `-e` ones, with where they came from (their commands'
    /// `sourceInfo`).
    pub extension_sources: Vec<pi_effects::packages::Resource>,
    /// The extension host running them, once loaded (RPC mode gives it a UI).
    pub extension_host: Option<std::sync::Arc<pi_effects::extension::sidecar::ExtensionHost>>,
    /// The host a run that started with no extension starts once a new load finds some (a
    /// replacement's, as Pi builds the new session's runtime with the settings read again).
    pub(crate) late_host:
        std::sync::OnceLock<std::sync::Arc<pi_effects::extension::sidecar::ExtensionHost>>,
    /// What the late host's first load registered (or why it did not start), until the reload
    /// of the session it was started for takes it.
    pub(crate) late_load: std::sync::Mutex<
        Option<
            Result<
                pi_effects::extension::sidecar::Registrations,
                pi_effects::extension::sidecar::HostError,
            >,
        >,
    >,
    /// Whether a new load may find extensions and start the host: a live run's; a replay's
    /// loads nothing (its recording holds what the recorded run loaded).
    pub(crate) loads_extensions: bool,
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
    /// The registry as extensions change it after loading (`live_providers`).
    live_providers: std::sync::Arc<LiveProviders>,
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
    /// Whether a server's `codemode` tools activated Pi's codemode tool (in its registry place,
    /// after the tools active before it, as Pi's `setActiveTools` appends it).
    pub mcp_activates_codemode: bool,
    /// The run's `mcp.json` files as [`Runtime::mcp_config`] reads them, once: whether they
    /// activate codemode, the servers started, the later servers' handler and the recorder's
    /// credentials all see the same files.
    pub(crate) mcp_config: std::sync::OnceLock<pi_mcp::McpConfig>,
    /// The MCP servers the extensions registered while loading, in registration order: they
    /// start with `mcp.json`'s, which win a shared name.
    pub mcp_registered: Vec<pi_mcp::Registered>,
    /// Pi's MCP extension's handler of the servers registered after loading, when a live run
    /// has one: a recording learns their keys from it as it connects them.
    pub mcp_later: Option<std::sync::Arc<pi_mcp::Later>>,
    /// Pi's warning at the session's start that MCP tools cannot be called (neither codemode
    /// nor `tool_search` active): a notice on RPC mode's UI, as Pi's `ctx.ui.notify`; print
    /// mode shows none, as Pi's shows no notice.
    pub mcp_warning: Option<&'static str>,
    /// The errors the session's start reports: the registered servers nothing connects.
    pub start_errors: Vec<pi_core::agent_session::StartError>,
    /// `--no-mcp`: nothing connects MCP servers (a reload reports those its load registers).
    pub mcp_off: bool,
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
