//! Pi's TypeScript extensions in a session the builder opens: where they are found, and the
//! extension host that loads them, whose tools, handlers and commands join the session's.

use std::path::PathBuf;
use std::sync::Arc;

use pi_effects::custom_tool::ToolRegistry;
use pi_effects::extension::sidecar::{
    command_extension, command_names, compact_end_extension, hook_extensions, register_tools,
    ExtensionHost, HostModels, Registrations, StateMirror,
};
use pi_effects::extension::ExtensionRegistry;
use pi_effects::settings::Settings;
use pi_providers::registry::{ProviderRegistration, VirtualModelDefinition};

use super::SessionBuilder;
use crate::Error;

impl SessionBuilder {
    /// The home folder, the settings (the project's when `project_trusted`) and what their
    /// `packages` give: what discovery reads.
    pub(super) fn settings_and_packages(
        &self,
        project_trusted: bool,
    ) -> (PathBuf, Settings, pi_effects::packages::Resolved) {
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_default();
        let settings = Settings::load(&self.agent_dir, &self.cwd, project_trusted);
        let packages = pi_effects::packages::resolve(&pi_effects::packages::Wanted {
            agent_dir: &self.agent_dir,
            cwd: &self.cwd,
            home: &home,
            listed: settings.listed_resources(),
        });
        (home, settings, packages)
    }

    /// The TypeScript extensions to load: those given, then those discovered when asked.
    pub(super) fn typescript_extension_paths(&self) -> Vec<PathBuf> {
        let Some(project_trusted) = self.extension_discovery else {
            return self.typescript_extensions.clone();
        };
        let (home, settings, packages) = self.settings_and_packages(project_trusted);
        let given: Vec<String> = self
            .typescript_extensions
            .iter()
            .map(|p| p.display().to_string())
            .collect();
        pi_effects::extension::sidecar::discover(&pi_effects::extension::sidecar::Wanted {
            agent_dir: &self.agent_dir,
            cwd: &self.cwd,
            home: &home,
            project_trusted,
            no_extensions: false,
            cli_paths: &given,
            listed: settings.listed_resources(),
            packages: &packages.found,
        })
    }

    /// Starts the extension host for the TypeScript extensions, if any, and loads them, the
    /// settings set for `pi.getSettings()`: what they registered comes back with the host, before
    /// the session's model is chosen (the providers they register are in the catalog it is
    /// chosen from, as Pi 1.5.2's services register them).
    pub(super) fn load_typescript(&self, settings: &Settings) -> Result<Option<Loaded>, Error> {
        let paths = self.typescript_extension_paths();
        if paths.is_empty() {
            return Ok(None);
        }
        // Pi's line for each extension that failed, as the binary prints them.
        let failed = |failures: Vec<(String, String)>| {
            let lines: Vec<String> = failures
                .iter()
                .map(|(path, error)| format!("Failed to load extension \"{path}\": {error}"))
                .collect();
            Error::Extension(lines.join("\n"))
        };
        let (host, registrations) =
            ExtensionHost::start(&paths, &self.cwd, self.extension_discovery.unwrap_or(false))
                .map_err(|e| {
                    let error = e.to_string();
                    failed(
                        paths
                            .iter()
                            .map(|p| (p.display().to_string(), error.clone()))
                            .collect(),
                    )
                })?;
        if !registrations.errors.is_empty() {
            let errors = registrations.errors.iter();
            return Err(failed(
                errors.map(|e| (e.path.clone(), e.error.clone())).collect(),
            ));
        }
        // `pi.getSettings()` answers the settings Pi's SDK reads (the project's too).
        host.set_settings(settings.merged())
            .map_err(|e| Error::Extension(e.to_string()))?;
        Ok(Some(Loaded {
            host,
            registrations,
        }))
    }

    /// The custom tools with those of the TypeScript extensions `loaded`, the extensions with
    /// theirs (handlers and commands), answering from `state` and reading `models` through
    /// `ctx.modelRegistry`, and the names their commands are invoked by.
    pub(super) fn tools_with_extensions(
        &self,
        state: &StateMirror,
        loaded: Option<&Loaded>,
        models: &HostModels,
    ) -> Result<(ToolRegistry, ExtensionRegistry, Vec<String>), Error> {
        let mut tools = self.custom_tools.clone();
        let mut extensions = self.extensions.clone();
        let Some(Loaded {
            host,
            registrations,
        }) = loaded
        else {
            return Ok((tools, extensions, Vec::new()));
        };
        host.set_catalog(models)
            .map_err(|e| Error::Extension(e.to_string()))?;
        register_tools(&mut tools, registrations, host, state);
        for extension in hook_extensions(registrations, host, state) {
            extensions.load(extension);
        }
        if let Some(commands) = command_extension(registrations, host, state) {
            extensions.load(commands);
        }
        extensions.load(compact_end_extension(host, state));
        Ok((tools, extensions, command_names(registrations)))
    }
}

/// The TypeScript extensions of a session being opened: the host running them and what they
/// registered as they loaded.
pub(super) struct Loaded {
    host: Arc<ExtensionHost>,
    registrations: Registrations,
}

impl Loaded {
    /// The model providers they registered (`pi.registerProvider`), in their order.
    pub(super) fn providers(&self) -> &[ProviderRegistration] {
        &self.registrations.providers
    }

    /// The virtual models they registered (`pi.registerVirtualModel`), in their order; their
    /// routers run in the host, at the `route_model` point its hook extensions answer.
    pub(super) fn virtual_models(&self) -> &[VirtualModelDefinition] {
        &self.registrations.virtual_models
    }

    /// The MCP servers they registered while loading (name and configuration), in their
    /// order.
    pub(super) fn mcp_servers(&self) -> Vec<(String, serde_json::Value)> {
        self.registrations
            .mcp_servers
            .iter()
            .map(|server| (server.name.clone(), server.config.clone()))
            .collect()
    }
}
