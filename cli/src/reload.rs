//! A command's `ctx.reload()` carried out by the front end, print and RPC mode alike (Pi 1.5.2's
//! `AgentSession.reload` rebuilding its runtime): once the extensions heard their shutdown, the
//! extension host loads them again and answers what the new load registered; the session's
//! interpreter answers the hook points with the new load's handlers and runs its tools, and the
//! machine's `reloaded` input carries the hook points handled, the tools' declarations, the
//! commands, and what Pi's resource loader reads again (the extensions found again with the
//! settings read again, the context files, the skills and
//! prompt templates, `SYSTEM.md` and `APPEND_SYSTEM.md`, the flags of the command line still
//! applying) and the settings' queue modes, so that a recording holds them and a replay (which
//! loads nothing) takes them from there.

use pi_core::agent::hooks::RegisteredMcpServer;
use pi_core::agent_session::{Reload, ReloadedPromptFiles, SessionInput, StartError};
use pi_effects::agent_session::AgentSession;
use pi_effects::custom_tool::ToolRegistry;
use pi_effects::driver::Interpreter;
use pi_effects::extension::sidecar::{
    command_names, register_tools, ExtensionHost, HostError, Registrations,
};
use pi_effects::run_config::load_context_files;

use crate::settings::Settings;
use crate::setup::Runtime;

/// Loads the run's extensions again and gives `session`'s interpreter their new handlers
/// and tools (for a reload, or a session that replaced another); the input that tells the
/// machine what they registered comes back. In a run that started with no extension, the
/// host building the session started ([`Runtime::start_late_host`]) has loaded them. Without
/// a host (a replay, or nothing found) it carries nothing, and a replay's recording says what
/// the load registered.
/// A host that failed to load them again is the error (the registrations then stay).
pub(crate) fn reload<I: Interpreter>(
    runtime: &Runtime,
    session: &mut AgentSession<I>,
) -> Result<(SessionInput, Option<Registrations>), HostError> {
    // A host started late for this session loaded them already (or failed to start).
    let late = match runtime.take_late_load() {
        Some(Err(error)) => return Err(error),
        Some(Ok(registrations)) => Some(registrations),
        None => None,
    };
    let Some(host) = runtime.host() else {
        return Ok((SessionInput::Reloaded(None), None));
    };
    let Found {
        settings,
        packages,
        paths,
        sources,
    } = Found::now(runtime);
    let mut registrations = match late {
        Some(registrations) => registrations,
        None => host.reload(&paths)?,
    };
    // The settings read again are what the new load's `pi.getSettings()` answers.
    host.set_settings(settings.merged())?;
    // `--tools` and `--exclude-tools` filter the new load's tools as they did the first's.
    registrations
        .tools
        .retain(|tool| runtime.tool_flags.allows(&tool.name));
    crate::extensions::word_tool_sources(
        &mut registrations,
        &runtime.cli_extension_paths,
        &sources,
    );
    let state = &runtime.extension_state;
    let added_default_tools = added_default_tools(runtime, &settings);
    let resources = runtime.resource_flags.resources(
        &runtime.agent_dir,
        &runtime.cwd,
        runtime.project_trusted,
        settings.listed_resources(),
        &packages.found,
    );
    let prompt_files = runtime.resource_flags.prompt_files(
        &runtime.cwd,
        &runtime.agent_dir,
        runtime.project_trusted,
    );
    // The host's extensions of the previous load (all share the run's mirror) give way to the
    // new load's; the others (the MCP client's) keep their places.
    let mut loaded = crate::extensions::handlers(&registrations, host, state);
    // A run that started with no extension loads them for a session that replaced its first:
    // Pi's MCP extension is among them, and connects the servers they registered.
    let late_run = runtime.extension_host.is_none();
    if let (Some(later), true) = (&runtime.mcp_later, late_run) {
        loaded.push(std::sync::Arc::clone(later) as _);
    }
    // Pi's MCP extension, rebuilt with the runtime, follows the new load's servers alone.
    let follows_servers = runtime.mcp_later.is_some();
    if let Some(later) = &runtime.mcp_later {
        later.reloaded();
    }
    let mut extensions = runtime.extensions.reloaded(
        |extension| extension.mirror().is_some_and(|mirror| mirror.same(state)),
        loaded,
    );
    if late_run {
        // Their providers changed after loading go to the run's registry, as at a start's.
        extensions.take_provider_changes(runtime.live_providers());
    }
    let mut tools = ToolRegistry::new();
    register_tools(&mut tools, &registrations, host, state);
    let reload = Reload {
        handled_hooks: extensions.handled(),
        tools: registrations.tools.clone(),
        commands: command_names(&registrations),
        command_listing: runtime.listed_commands_from(&registrations, &sources),
        // Pi's resource loader reads them again (the flag that turned them off still does).
        context_files: runtime
            .context_files
            .then(|| load_context_files(&runtime.agent_dir, &runtime.cwd)),
        start_errors: unconnected(runtime, &registrations),
        // Pi reads the settings again and takes the queue modes from them.
        steering_mode: Some(settings.steering_mode()),
        follow_up_mode: Some(settings.follow_up_mode()),
        added_default_tools,
        skills: Some(resources.skills),
        templates: Some(resources.templates),
        prompt_files: Some(ReloadedPromptFiles {
            system_prompt: prompt_files.system_prompt,
            append_system_prompt: prompt_files.append_system_prompt,
        }),
        // The replacement that took this load adds them (see `replacement::replace`).
        providers: Vec::new(),
        mcp_servers: follows_servers.then(|| {
            crate::extensions::registered_servers(&registrations)
                .into_iter()
                .map(|server| RegisteredMcpServer {
                    name: server.name,
                    extension_path: server.extension_path,
                    config: Some(server.config),
                })
                .collect()
        }),
    };
    session
        .interpreter_mut()
        .reload_extensions(extensions, &tools);
    Ok((
        SessionInput::Reloaded(Some(Box::new(reload))),
        Some(registrations),
    ))
}

/// The extensions Pi's resource loader finds now, with the settings read again (one the
/// settings name since is loaded), and what their packages give.
pub(crate) struct Found {
    pub(crate) settings: Settings,
    pub(crate) packages: pi_effects::packages::Resolved,
    pub(crate) paths: Vec<std::path::PathBuf>,
    pub(crate) sources: Vec<pi_effects::packages::Resource>,
}

impl Found {
    /// What `runtime`'s command line and the files as they are now find.
    pub(crate) fn now(runtime: &Runtime) -> Found {
        let settings = Settings::load(&runtime.agent_dir, &runtime.cwd, runtime.project_trusted);
        let packages = pi_effects::packages::resolve(&pi_effects::packages::Wanted {
            agent_dir: &runtime.agent_dir,
            cwd: &runtime.cwd,
            home: &runtime.resource_flags.home,
            listed: settings.listed_resources(),
        });
        let flags = &runtime.resource_flags;
        let wanted = pi_effects::extension::sidecar::Wanted {
            agent_dir: &runtime.agent_dir,
            cwd: &runtime.cwd,
            home: &flags.home,
            project_trusted: runtime.project_trusted,
            no_extensions: flags.no_extensions,
            cli_paths: &flags.extension_cli_paths,
            listed: settings.listed_resources(),
            packages: &packages.found,
        };
        let paths = pi_effects::extension::sidecar::discover(&wanted);
        let sources = pi_effects::extension::sidecar::discover::resolved(&wanted);
        Found {
            settings,
            packages,
            paths,
            sources,
        }
    }
}

/// The MCP servers the new load registered that nothing connects, reported again after the
/// reload's start as Pi's new runner reports them: with `--no-mcp` (where the run's start
/// reported those of the first load, and no handler of the built-in MCP extension follows them).
fn unconnected(runtime: &Runtime, registrations: &Registrations) -> Vec<StartError> {
    if !runtime.mcp_off {
        return Vec::new();
    }
    crate::mcp::unconnected(&crate::extensions::registered_servers(registrations))
}

/// The tools the settings read again newly add to the defaults (Pi activates them at a reload;
/// one removed stays active, one turned off since stays off unless newly added), from the
/// selection of the settings last read, which becomes this one.
fn added_default_tools(runtime: &Runtime, settings: &Settings) -> Vec<String> {
    let now = runtime.tool_flags.active(settings);
    let mut last = runtime
        .last_default_tools
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let added = now.iter().filter(|t| !last.contains(t)).cloned().collect();
    *last = now;
    added
}

impl Runtime {
    /// Starts the extension host in a run that started with no extension, when the
    /// extensions the settings name now are some (Pi builds a replacing session's runtime
    /// with the settings read again): before that session is built, so that it registers what
    /// Pi's registers beside extensions, and the reload that gives it their registrations
    /// takes this load's ([`Runtime::take_late_load`]). Nothing in a replay (it loads none).
    pub(crate) fn start_late_host(&self) {
        if !self.loads_extensions || self.host().is_some() {
            return;
        }
        let found = Found::now(self);
        if found.paths.is_empty() {
            return;
        }
        let started = ExtensionHost::start_with_models(
            &found.paths,
            &self.cwd,
            self.project_trusted,
            &[],
            &self.host_models(),
        )
        .and_then(|(host, registrations)| {
            // The settings read again are what the new load's `pi.getSettings()` answers.
            host.set_settings(found.settings.merged())?;
            Ok((host, registrations))
        });
        let load = started.map(|(host, registrations)| {
            if let Some(later) = &self.mcp_later {
                later.on_notices(crate::notices_on(&host), false);
            }
            let _ = self.late_host.set(host);
            registrations
        });
        *self
            .late_load
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(load);
    }

    /// What the late host's first load registered, once (see [`Runtime::start_late_host`]).
    pub(crate) fn take_late_load(&self) -> Option<Result<Registrations, HostError>> {
        self.late_load
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }
}
