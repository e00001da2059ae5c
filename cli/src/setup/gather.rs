//! The inputs of a run, gathered once from the command line, the environment and the agent
//! directory (Pi's `main.ts` up to `createAgentSession`), or, for a replay, from a recorded
//! command line alone.

use std::path::{Path, PathBuf};

use pi_core::model::{Model, ThinkingLevel};
use pi_core::resources::Resources;
use pi_core::tools::tool_search::TOOL_SEARCH_TOOL_NAME;
use pi_effects::agent_session::DEFAULT_TOOLS;
use pi_effects::custom_tool::ToolRegistry;
use pi_effects::extension::sidecar::StateMirror;
use pi_effects::extension::ExtensionRegistry;
use pi_effects::host::process_environment;
use pi_effects::registry_files::{load_auth, load_models};
use pi_effects::session::{agent_dir, default_session_dir, resolve_session_dir, SESSION_DIR_ENV};
use pi_providers::catalog;
use pi_providers::registry::{AuthStorage, Environment, ModelRegistry};

use super::{ResourceFlags, Runtime, ToolFlags};
use crate::args::Args;
use crate::diagnostic::Diagnostic;
use crate::model_choice::{self, ChoicePlace, ModelRequest};
use crate::model_select::ScopedModel;
use crate::settings::Settings;
use crate::tool_select::{allowed_tools, registered, select_tools, tool_list_error};
use crate::CliError;

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
        let resource_flags = ResourceFlags {
            home: home.clone(),
            no_skills: args.no_skills,
            skill_paths: args.skills.clone(),
            no_prompt_templates: args.no_prompt_templates,
            prompt_template_paths: args.prompt_templates.clone(),
            system_prompt: args.system_prompt.clone(),
            // A value given at all, even an empty one, is the flag given.
            append_system_prompt: (!args.append_system_prompt.is_empty())
                .then(|| args.append_system_prompt.clone()),
            no_extensions: args.no_extensions,
            extension_cli_paths: args.extensions.clone(),
        };
        let prompt_files = resource_flags.prompt_files(&cwd, &agent_dir, project_trusted);
        warnings.extend(prompt_files.warnings);
        let packages = pi_effects::packages::resolve(&pi_effects::packages::Wanted {
            agent_dir: &agent_dir,
            cwd: &cwd,
            home: &home,
            listed: settings.listed_resources(),
        });
        warnings.extend(packages.missing.iter().map(ToString::to_string));
        let resources = resource_flags.resources(
            &agent_dir,
            &cwd,
            project_trusted,
            settings.listed_resources(),
            &packages.found,
        );
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
            resource_flags,
            extension_paths,
            given_flags: args.extension_flags.clone(),
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
            tool_flags: ToolFlags::of(args),
            last_default_tools: std::sync::Mutex::new(tools.clone()),
            tools,
            registered_builtins: registered_builtins(args),
            session_name: std::sync::Mutex::new(
                args.name.as_deref().map(str::trim).map(str::to_owned),
            ),
            warnings,
            diagnostics,
            recorded_models: None,
            live_providers: Default::default(),
            project_trusted,
            trust_by_extension: trust.by_extension,
            custom_tools: admitted_tools(args),
            extension_host: trust_host,
            late_host: std::sync::OnceLock::new(),
            late_load: std::sync::Mutex::new(None),
            loads_extensions: true,
            mcp_servers: Vec::new(),
            extensions: ExtensionRegistry::new(),
            extension_state: StateMirror::default(),
            mcp_section: None,
            mcp_later_section: None,
            tool_search_registered: tool_search_registered(args),
            mcp_started: false,
            mcp_config: std::sync::OnceLock::new(),
            mcp_registered: Vec::new(),
            mcp_later: None,
            mcp_warning: None,
            start_errors: Vec::new(),
            mcp_off: false,
            mcp_activates_tool_search: false,
            mcp_activates_codemode: false,
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
            tool_flags: ToolFlags::of(args),
            last_default_tools: std::sync::Mutex::new(tools.clone()),
            tools,
            registered_builtins: registered_builtins(args),
            session_name: std::sync::Mutex::new(None),
            system_prompt: None,
            append_system_prompt: None,
            context_files: !args.no_context_files,
            resources,
            resource_flags: ResourceFlags::default(),
            extension_paths: Vec::new(),
            given_flags: args.extension_flags.clone(),
            cli_extension_paths: Vec::new(),
            extension_sources: Vec::new(),
            wait_for_session: false,
            warnings: Vec::new(),
            diagnostics: Vec::new(),
            recorded_models: None,
            live_providers: Default::default(),
            project_trusted: false,
            trust_by_extension: None,
            custom_tools: ToolRegistry::new(),
            extension_host: None,
            late_host: std::sync::OnceLock::new(),
            late_load: std::sync::Mutex::new(None),
            loads_extensions: false,
            mcp_servers: Vec::new(),
            extensions: ExtensionRegistry::new(),
            extension_state: StateMirror::default(),
            mcp_section: None,
            mcp_later_section: None,
            tool_search_registered: tool_search_registered(args),
            mcp_started: false,
            mcp_config: std::sync::OnceLock::new(),
            mcp_registered: Vec::new(),
            mcp_later: None,
            mcp_warning: None,
            start_errors: Vec::new(),
            mcp_off: false,
            mcp_activates_tool_search: false,
            mcp_activates_codemode: false,
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
}

/// The tools a run starts with, from `--no-tools`, `--no-builtin-tools`, `--tools` and
/// `--exclude-tools` (see [`ToolFlags::active`]): no defaults under either of the first two,
/// which `--tools` entries still choose from or add to, as in Pi 1.5.2.
fn active_tools(args: &Args, settings: &Settings) -> Vec<String> {
    ToolFlags::of(args).active(settings)
}

impl ToolFlags {
    /// The command line's tool flags.
    pub(super) fn of(args: &Args) -> Self {
        let tools = args.tool_names();
        ToolFlags {
            off: args.no_tools || args.no_builtin_tools,
            allowlist: allowed_tools(tools.as_deref(), args.no_tools),
            tools,
            exclude: args.excluded_tools(),
        }
    }

    /// The active tools these flags select (see [`select_tools`]) from the defaults, which are
    /// `settings`' `defaultTools` when they set it.
    pub(crate) fn active(&self, settings: &Settings) -> Vec<String> {
        let defaults: Vec<String> = if self.off {
            Vec::new()
        } else {
            settings
                .default_tools()
                .unwrap_or_else(|| DEFAULT_TOOLS.iter().map(|t| (*t).to_owned()).collect())
        };
        select_tools(&defaults, self.tools.as_deref(), self.exclude.as_deref())
    }
}

/// The run's registry of custom tools, which registers only what `--tools` and
/// `--exclude-tools` keep: an MCP server's tools are filtered there, whichever way the server
/// connects.
fn admitted_tools(args: &Args) -> ToolRegistry {
    let filter = ToolFlags::of(args);
    ToolRegistry::new().admitting(move |name| filter.allows(name))
}

/// Whether the run registers Pi's `tool_search`: when the run's allowlist and exclusions keep
/// it (none under a bare `--no-tools`).
fn tool_search_registered(args: &Args) -> bool {
    ToolFlags::of(args).allows(TOOL_SEARCH_TOOL_NAME)
}

/// The built-in tools a run registers, active or not: those the run's allowlist and exclusions
/// keep (see [`registered`]); every one under `--no-builtin-tools` alone, which only leaves
/// them inactive.
fn registered_builtins(args: &Args) -> Vec<String> {
    let filter = ToolFlags::of(args);
    registered(filter.allowlist.as_deref(), filter.exclude.as_deref())
}

impl Runtime {
    /// The run's `mcp.json` files: the agent dir's, and the project's when it is trusted,
    /// read the first time something asks and kept for the run.
    pub fn mcp_config(&self) -> &pi_mcp::McpConfig {
        self.mcp_config.get_or_init(|| {
            pi_mcp::load_mcp_config(&self.agent_dir, &self.cwd, self.project_trusted)
        })
    }
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
