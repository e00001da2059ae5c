//! Loading the run's extensions (found by `pi_effects::extension::sidecar::discover` in
//! `Runtime::from_args`): the extension host is started only when one is configured (or was
//! started already, to ask the global and command line's extensions whether the project is
//! trusted, and then loads the final set, Pi 1.5.2's two passes), its tools
//! join the run's custom tools, and an extension that fails to load is Pi 1.5.2's error, which
//! ends the run (never a silent skip).

use std::path::Path;

use pi_cassettes::read::Cassette;
use pi_effects::extension::sidecar::{
    command_extension, command_names, compact_end_extension, discover, flag_errors,
    hook_extensions, register_tools, ExtensionHost, FlagDeclaration, GivenFlag, HostError,
    HostModels, Registrations, StateMirror, Wanted,
};
use pi_effects::extension::ExtensionRegistry;
use pi_effects::run_config::RunConfig;
use serde_json::{json, Value};

use crate::args::Args;

use crate::settings::Settings;
use crate::setup::{Diagnostic, Runtime};

/// What Pi 1.5.2 prints after an extension failed to load.
pub const LOAD_FAILURE_HINT: &str = "Hint: Start without extensions using \"pi -ne\".";

/// Pi's diagnostic for an extension that failed to load.
fn load_failure(path: &str, error: &str) -> Diagnostic {
    Diagnostic::Error(format!("Failed to load extension \"{path}\": {error}"))
}

/// Where Pi 1.5.2 says an extension given with `-e` came from (its commands' `sourceInfo`,
/// less the path); the loader alone says `local` and adds a `baseDir`.
const CLI_SOURCE: [(&str, &str); 3] = [
    ("source", "cli"),
    ("scope", "temporary"),
    ("origin", "top-level"),
];

/// Gives `command` Pi's CLI `sourceInfo` when its extension is one of `cli_paths` or inside one.
fn from_cli(command: &mut Value, cli_paths: &[std::path::PathBuf]) {
    let Some(path) = command["sourceInfo"]["path"].as_str().map(Path::new) else {
        return;
    };
    if cli_paths.iter().any(|cli| path.starts_with(cli)) {
        let mut info = json!({ "path": path });
        for (field, value) in CLI_SOURCE {
            info[field] = json!(value);
        }
        command["sourceInfo"] = info;
    }
}

/// Gives `command` the `sourceInfo` of where its extension was found (Pi's metadata of a
/// resolved resource: a settings entry, a folder, a package), over the CLI one as in Pi.
fn from_resolved(command: &mut Value, sources: &[pi_effects::packages::Resource]) {
    let Some(path) = command["sourceInfo"]["path"].as_str().map(Path::new) else {
        return;
    };
    if let Some(source) = sources.iter().find(|s| path.starts_with(&s.path)) {
        command["sourceInfo"] = source.meta.info(&path.to_string_lossy());
    }
}

/// Words the `sourceInfo` of each tool `registrations` hold as the commands' is worded:
/// where its extension came from, `cli_paths` (`-e`) or one of `sources`.
pub(crate) fn word_tool_sources(
    registrations: &mut Registrations,
    cli_paths: &[std::path::PathBuf],
    sources: &[pi_effects::packages::Resource],
) {
    for tool in &mut registrations.tools {
        let Some(info) = tool.source_info.take() else {
            continue;
        };
        let mut holder = json!({ "sourceInfo": info });
        from_cli(&mut holder, cli_paths);
        from_resolved(&mut holder, sources);
        tool.source_info = Some(holder["sourceInfo"].take());
    }
}

/// The MCP servers `registrations` hold, as the MCP client takes them.
pub(crate) fn registered_servers(registrations: &Registrations) -> Vec<pi_mcp::Registered> {
    registrations
        .mcp_servers
        .iter()
        .map(|server| pi_mcp::Registered {
            name: server.name.clone(),
            config: server.config.clone(),
            extension_path: server.extension_path.clone(),
        })
        .collect()
}

/// Whether `diagnostics` hold a failed extension load (which Pi follows with its hint).
pub fn load_failed(diagnostics: &[Diagnostic]) -> bool {
    diagnostics.iter().any(
        |d| matches!(d, Diagnostic::Error(text) if text.starts_with("Failed to load extension")),
    )
}

impl Runtime {
    /// Starts the extension host for the extensions found, if any, and registers their tools,
    /// commands and event handlers, the command line's `flags` set for those they registered;
    /// failures, and flags no extension registered, become diagnostics (Pi's, in its order).
    /// The flags they registered come back (for `--help`).
    pub fn start_extensions(&mut self, flags: &[GivenFlag]) -> Vec<FlagDeclaration> {
        // The host the pre-trust load started (`trust::ask_extensions`) loads the final set.
        let asked = self.extension_host.take();
        // Codemode named among the tools needs the host; an MCP server with `codemode` tools
        // would have Pi activate it, so the host starts for it too where it can.
        let named_codemode = self.wants_codemode();
        let mcp_codemode = !named_codemode && !self.mcp_off && self.mcp_activates_codemode();
        if self.extension_paths.is_empty() && !named_codemode && !mcp_codemode {
            self.diagnostics
                .extend(flag_errors(&[], flags).into_iter().map(Diagnostic::Error));
            return Vec::new();
        }
        let started = match asked {
            Some(host) => host
                .extend(&self.extension_paths, self.project_trusted)
                .and_then(|registrations| {
                    host.set_catalog(&self.host_models())?;
                    Ok((host, registrations))
                }),
            None => ExtensionHost::start_with_models(
                &self.extension_paths,
                &self.cwd,
                self.project_trusted,
                flags,
                &self.host_models(),
            ),
        }
        .and_then(|(host, registrations)| {
            host.set_settings(self.settings.merged())?;
            Ok((host, registrations))
        });
        match started {
            Ok((host, mut registrations)) => {
                // Pi's `_isAllowedTool`: `--tools` and `--exclude-tools` filter them too.
                registrations
                    .tools
                    .retain(|tool| self.tool_flags.allows(&tool.name));
                word_tool_sources(
                    &mut registrations,
                    &self.cli_extension_paths,
                    &self.extension_sources,
                );
                self.register_providers(&registrations, &host);
                self.live_providers().start_from(
                    self.registry.clone(),
                    self.auth.clone(),
                    self.env.clone(),
                );
                self.extensions.take_provider_changes(self.live_providers());
                self.mcp_registered = registered_servers(&registrations);
                self.diagnostics.extend(
                    flag_errors(&registrations.flags, flags)
                        .into_iter()
                        .map(Diagnostic::Error),
                );
                for failed in &registrations.errors {
                    self.diagnostics
                        .push(load_failure(&failed.path, &failed.error));
                }
                for extension in &registrations.extensions {
                    let undelivered = extension.undelivered();
                    if !undelivered.is_empty() {
                        self.diagnostics.push(Diagnostic::Warning(format!(
                            "Extension \"{}\" handles {}, which this harness does not deliver \
                             to extensions yet: those handlers never run.",
                            extension.path,
                            undelivered.join(", ")
                        )));
                    }
                }
                register_tools(
                    &mut self.custom_tools,
                    &registrations,
                    &host,
                    &self.extension_state,
                );
                self.resources.command_listing = self.listed_commands(&registrations);
                self.resources.commands = command_names(&registrations);
                for extension in handlers(&registrations, &host, &self.extension_state) {
                    self.extensions.load(extension);
                }
                self.extension_host = Some(host);
                registrations.flags
            }
            Err(error) => {
                self.diagnostics
                    .extend(flag_errors(&[], flags).into_iter().map(Diagnostic::Error));
                for path in &self.extension_paths {
                    self.diagnostics
                        .push(load_failure(&path.to_string_lossy(), &error.to_string()));
                }
                // Without the host an MCP server's `codemode` tools stay reachable as they
                // are without codemode (the servers' warning says when they are not).
                if self.extension_paths.is_empty() && named_codemode {
                    self.diagnostics.push(Diagnostic::Error(format!(
                        "The codemode tool runs in Pi's extension host, which could not start: \
                         {error}"
                    )));
                }
                Vec::new()
            }
        }
    }
}

impl Runtime {
    /// Whether the active tools name Pi's built-in `codemode`, which only the extension host
    /// runs (its scripts run in Pi's own sandbox): the host starts for it even without an
    /// extension of the user's.
    fn wants_codemode(&self) -> bool {
        self.tools
            .iter()
            .any(|name| name == crate::tool_select::CODEMODE_TOOL_NAME)
    }

    /// Whether the run's `mcp.json` files have Pi activate codemode (see
    /// [`pi_mcp::McpConfig::activates_codemode`]).
    fn mcp_activates_codemode(&self) -> bool {
        self.mcp_config().activates_codemode()
    }

    /// The extension host running the extensions: the one the run started with, else the
    /// one a later load started ([`Runtime::late_host`]); none without extensions.
    pub(crate) fn host(&self) -> Option<&std::sync::Arc<ExtensionHost>> {
        self.extension_host
            .as_ref()
            .or_else(|| self.late_host.get())
    }

    /// The commands `registrations` hold as RPC `get_commands` lists them, each with where its
    /// extension came from.
    pub(crate) fn listed_commands(&self, registrations: &Registrations) -> Vec<Value> {
        self.listed_commands_from(registrations, &self.extension_sources)
    }

    /// [`Runtime::listed_commands`] with the extensions found as `sources` says (a reload's).
    pub(crate) fn listed_commands_from(
        &self,
        registrations: &Registrations,
        sources: &[pi_effects::packages::Resource],
    ) -> Vec<Value> {
        let mut commands = registrations.commands.clone();
        for command in &mut commands {
            from_cli(command, &self.cli_extension_paths);
            from_resolved(command, sources);
        }
        commands
    }

    /// Merges the providers the extensions registered into the model catalog, in registration
    /// order, as Pi 1.5.2's registry takes them before it resolves the model: one it refuses is
    /// Pi's diagnostic naming the extension. The model is then chosen again from the catalog as
    /// it is now, and the host's `ctx.modelRegistry` answers from it.
    /// Registers the extensions' providers, then their virtual models, as Pi's runner does
    /// when it binds; an invalid one is that extension's error.
    fn register_providers(&mut self, registrations: &Registrations, host: &ExtensionHost) {
        if registrations.providers.is_empty() && registrations.virtual_models.is_empty() {
            return;
        }
        for registration in &registrations.providers {
            if let Err(message) = self.registry.register_provider(registration) {
                self.diagnostics.push(Diagnostic::Error(format!(
                    "Extension \"{}\" error: {message}",
                    registration.extension_path
                )));
            }
        }
        for definition in &registrations.virtual_models {
            if let Err(message) = self.registry.register_virtual_model(definition) {
                self.diagnostics.push(Diagnostic::Error(format!(
                    "Extension \"{}\" error: {message}",
                    definition.extension_path
                )));
            }
        }
        self.choose_model_again();
        if let Err(error) = host.set_catalog(&self.host_models()) {
            self.diagnostics.push(Diagnostic::Error(error.to_string()));
        }
    }

    /// Forgets the providers extensions registered or unregistered since loading, as Pi 1.5.2
    /// forgets them when a session replaces another (it builds the new session's runtime
    /// afresh): the registry model calls resolve from, and the catalog the extensions'
    /// `ctx.modelRegistry` reads, are the run's again. Nothing without an extension host.
    pub(crate) fn forget_provider_changes(&self) -> Result<(), HostError> {
        let Some(host) = self.host() else {
            return Ok(());
        };
        self.live_providers().start_from(
            self.registry.clone(),
            self.auth.clone(),
            self.env.clone(),
        );
        host.set_catalog(&self.host_models())
    }

    /// The models the extensions' registry lists, and the providers among theirs with auth
    /// (which `pi.setModel` asks about; a replay's auth is its recording's).
    pub(crate) fn host_models(&self) -> HostModels {
        let models = self.registry.all().to_vec();
        let mut auth_providers: Vec<String> = Vec::new();
        for model in &models {
            if !auth_providers.contains(&model.provider) && self.has_auth(model) {
                auth_providers.push(model.provider.clone());
            }
        }
        HostModels {
            models,
            auth_providers,
            oauth_providers: self.auth.oauth_providers(),
        }
    }

    /// [`Runtime::host_models`] of `registry` (the run's as extensions changed it), its keys
    /// looked up in the run's auth and environment.
    pub(crate) fn host_models_of(
        &self,
        registry: &pi_providers::registry::ModelRegistry,
    ) -> HostModels {
        let models = registry.all().to_vec();
        let mut auth_providers: Vec<String> = Vec::new();
        for model in &models {
            if !auth_providers.contains(&model.provider)
                && registry.has_configured_auth(model, &self.auth, &self.env)
            {
                auth_providers.push(model.provider.clone());
            }
        }
        HostModels {
            models,
            auth_providers,
            oauth_providers: self.auth.oauth_providers(),
        }
    }
}

/// The line of Pi 1.5.2's help after which the extensions' flags are listed.
const FLAGS_PLACE: &str =
    "Extensions can register additional flags (e.g., --plan from plan-mode extension).\n";

/// `help` with Pi 1.5.2's `Extension CLI Flags:` section for `flags` (none: unchanged).
pub fn help_with_flags(help: &str, flags: &[FlagDeclaration]) -> String {
    if flags.is_empty() {
        return help.to_owned();
    }
    let mut section = String::from("Extension CLI Flags:\n");
    for flag in flags {
        let value = if flag.kind == "string" {
            " <value>"
        } else {
            ""
        };
        let option = format!("  --{}{value}", flag.name);
        let description = match &flag.description {
            Some(text) => text.clone(),
            None => format!(
                "Registered by {}",
                flag.extension_path.as_deref().unwrap_or("undefined")
            ),
        };
        section.push_str(&format!("{option:<30}{description}\n"));
    }
    section.push('\n');
    match help.split_once(FLAGS_PLACE) {
        Some((before, after)) => format!("{before}{FLAGS_PLACE}{section}{after}"),
        None => help.to_owned(),
    }
}

impl Runtime {
    /// Mirrors what only the program knows into the state the extensions' handlers read
    /// (`ctx.cwd`, `ctx.isProjectTrusted()`, the session manager's `getSessionFile()`); the
    /// session's own state comes with each hook point.
    pub fn mirror_for_extensions(&self, session_file: Option<&Path>) {
        if self.extensions.is_empty() && self.late_host.get().is_none() {
            return;
        }
        self.extension_state.set("cwd", json!(self.cwd));
        self.extension_state
            .set("projectTrusted", json!(self.project_trusted));
        // The lines Pi puts before a user command an extension's `exec` runs.
        match self.settings.shell_command_prefix() {
            Some(prefix) => self
                .extension_state
                .set("shellCommandPrefix", json!(prefix)),
            None => self.extension_state.remove("shellCommandPrefix"),
        }
        match session_file {
            Some(file) => self.extension_state.set("sessionFile", json!(file)),
            None => self.extension_state.remove("sessionFile"),
        }
    }
}

/// The extensions `pi replay --extensions live` runs again for `cassette`: those of its
/// recorded command line (`-e`, `--no-extensions`) and of today's agent dir, its settings'
/// `extensions` and `packages` included, as they are now, loaded in `cwd` (a project's own are
/// not: no one is asked to trust it). An extension that no longer loads is an error, as in a
/// live run; a package no longer installed is said once, as a live run says it.
pub fn for_replay(
    cassette: &Cassette,
    config: &RunConfig,
    cwd: &Path,
) -> Result<ExtensionRegistry, String> {
    let command = cassette.header.command.clone().unwrap_or_default();
    let args = Args::parse_from_args(command).map_err(|e| e.to_string())?;
    let agent_dir = pi_effects::session::agent_dir();
    let home = std::env::var_os("HOME")
        .map(std::path::PathBuf::from)
        .unwrap_or_default();
    let settings = Settings::load(&agent_dir, cwd, false);
    let packages = pi_effects::packages::resolve(&pi_effects::packages::Wanted {
        agent_dir: &agent_dir,
        cwd,
        home: &home,
        listed: settings.listed_resources(),
    });
    for missing in &packages.missing {
        eprintln!("Warning: {missing}");
    }
    let paths = discover(&Wanted {
        agent_dir: &agent_dir,
        cwd,
        home: &home,
        project_trusted: false,
        no_extensions: args.no_extensions,
        cli_paths: &args.extensions,
        listed: settings.listed_resources(),
        packages: &packages.found,
    });
    let (host, registrations) =
        ExtensionHost::start_with_flags(&paths, cwd, false, &args.extension_flags)
            .map_err(|e| e.to_string())?;
    if let Some(failed) = registrations.errors.first() {
        return Err(format!(
            "Failed to load extension \"{}\": {}",
            failed.path, failed.error
        ));
    }
    // The extensions' registry reads the models the recorded run could use, each with
    // credentials (a virtual model's router picks among them).
    let models = cassette.models.clone().unwrap_or_default();
    let mut auth_providers: Vec<String> = Vec::new();
    for model in &models {
        if !auth_providers.contains(&model.provider) {
            auth_providers.push(model.provider.clone());
        }
    }
    // The recording's credentials are not kept: none is taken for an OAuth login.
    host.set_catalog(&HostModels {
        models,
        auth_providers,
        oauth_providers: Vec::new(),
    })
    .map_err(|e| e.to_string())?;
    let state = StateMirror::default();
    state.set("cwd", json!(config.cwd));
    let mut registry = ExtensionRegistry::new();
    for extension in handlers(&registrations, &host, &state) {
        registry.load(extension);
    }
    Ok(registry)
}

/// What answers the machine's hook points and command runs: the extensions with handlers, in
/// load order, then their commands.
pub(crate) fn handlers(
    registrations: &Registrations,
    host: &std::sync::Arc<ExtensionHost>,
    state: &StateMirror,
) -> Vec<std::sync::Arc<dyn pi_effects::extension::RustExtension>> {
    let mut all = hook_extensions(registrations, host, state);
    all.extend(command_extension(registrations, host, state));
    all.push(compact_end_extension(host, state));
    all
}

impl Runtime {
    /// Chooses the model again from the registry as it is now (once extensions registered
    /// providers), in place of the first choice.
    pub fn choose_model_again(&mut self) {
        let choice = crate::model_choice::choose(
            &self.model_request,
            &self.registry,
            &mut self.auth,
            &self.env,
        );
        let place = self.model_choice_place.clone();
        let warnings = place.warnings.start..place.warnings.start + choice.warnings.len();
        let diagnostics =
            place.diagnostics.start..place.diagnostics.start + choice.diagnostics.len();
        self.warnings.splice(place.warnings, choice.warnings);
        self.diagnostics
            .splice(place.diagnostics, choice.diagnostics);
        self.model_choice_place = crate::model_choice::ChoicePlace {
            warnings,
            diagnostics,
        };
        self.scoped_models = choice.scoped;
        if !self.thinking_flag {
            self.thinking = choice.thinking;
        }
        self.cli_model = choice.model;
    }
}
