//! The servers a session's resource tools reach, however each connected (waited for at the
//! start, in the background, or registered later by an extension), and the exposure the tools
//! were last registered with: Pi 1.5.2's `syncResourceTools`. Each server that connects or goes
//! away is told to the hub, which says whether the tools' exposure moved (the widest of the
//! servers with resources: `direct`, then `codemode`, then `deferred`; `hidden` once none is
//! left) and how the session learns of it: the tools' declarations as a hook decision's
//! `registerTools` (direct) or `registerDeferredTools` (deferred, no namespace) action, or
//! their names `withdrawn` once no server has resources. The tools read the hub at each call,
//! so one registration reaches every server that connects after it.

use std::sync::{Arc, Mutex, PoisonError};

use pi_core::agent::custom_tool::SearchableTool;
use pi_effects::custom_tool::{CustomToolDefinition, ToolExposure, ToolRegistry};

use crate::client::McpConnection;
use crate::resources::{reached, resource_exposure, resource_tools, ResourceServers};

/// The shared state of a session's resource tools (clones share it).
#[derive(Clone, Default)]
pub struct ResourceHub {
    state: Arc<Mutex<HubState>>,
}

#[derive(Default)]
struct HubState {
    /// Every connected server with resources, in the order it came.
    connections: Vec<Arc<McpConnection>>,
    /// Pi's `resourceToolsExposure`: `None` until a server had resources.
    registered: Option<ToolExposure>,
    /// The servers and exposure as the session's start left them (a session that replaced
    /// another starts from them again).
    at_start: (Vec<Arc<McpConnection>>, Option<ToolExposure>),
}

impl std::fmt::Debug for ResourceHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceHub").finish_non_exhaustive()
    }
}

/// The exposure the resource tools moved to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ResourceSync {
    /// `Direct`, `Codemode`, `Deferred`, or `Hidden` when no server has resources any more.
    pub exposure: ToolExposure,
    /// Whether they were `direct` before (Pi then takes them out of the active tools).
    pub was_direct: bool,
}

/// What a sync tells the session, gathered into a hook decision's actions.
#[derive(Debug, Default)]
pub struct ResourceActions {
    /// Declarations for `registerTools` (the tools exposed directly).
    pub direct: Vec<CustomToolDefinition>,
    /// Declarations for `registerDeferredTools`.
    pub deferred: Vec<SearchableTool>,
    /// Names no longer active nor searchable.
    pub withdrawn: Vec<String>,
}

impl ResourceHub {
    fn lock(&self) -> std::sync::MutexGuard<'_, HubState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds a server that connected (one without resources is not kept); one of its name
    /// already there is replaced.
    pub fn add(&self, connection: &Arc<McpConnection>) {
        if !connection.has_resources() {
            return;
        }
        let mut state = self.lock();
        let name = &connection.entry().name;
        state.connections.retain(|c| c.entry().name != *name);
        state.connections.push(Arc::clone(connection));
    }

    /// Takes away the server `name` (unregistered, or its session ended).
    pub fn remove(&self, name: &str) {
        self.lock().connections.retain(|c| c.entry().name != name);
    }

    /// The servers the tools reach now, read at each call.
    pub fn servers(&self) -> ResourceServers {
        let hub = self.clone();
        Arc::new(move || reached(&hub.lock().connections))
    }

    /// Pi's `syncResourceTools`: the exposure the tools move to, when it moved (a first
    /// `hidden` is no move: nothing was registered).
    pub fn sync(&self) -> Option<ResourceSync> {
        let mut state = self.lock();
        let next = resource_exposure(&state.connections).unwrap_or(ToolExposure::Hidden);
        let previous = state.registered;
        if previous == Some(next) || (previous.is_none() && next == ToolExposure::Hidden) {
            return None;
        }
        state.registered = Some(next);
        Some(ResourceSync {
            exposure: next,
            was_direct: previous == Some(ToolExposure::Direct),
        })
    }

    /// The start's sync, before anything connects in the background: the servers and
    /// exposure as they are now kept as the session's start left them.
    pub fn sync_start(&self) {
        self.sync();
        let mut state = self.lock();
        state.at_start = (state.connections.clone(), state.registered);
    }

    /// Back to the start's servers and exposure (a new session in place of the one followed).
    pub fn reset_to_start(&self) {
        let mut state = self.lock();
        let (connections, registered) = state.at_start.clone();
        state.connections = connections;
        state.registered = registered;
    }

    /// Registers the tools in `registry` with the exposure the start left them (none when no
    /// server waited for has resources), as the run's configuration declares them.
    pub fn register_started(&self, registry: &mut ToolRegistry) {
        let Some(exposure) = self.lock().at_start.1 else {
            return;
        };
        for tool in resource_tools(exposure, &self.servers()) {
            registry.register(Arc::new(tool));
        }
    }

    /// Registers the tools for running in `registry` and every clone of it, when they are
    /// registered with some exposure (a replay running tools again, whose recording brings
    /// their declarations).
    pub fn register_late(&self, registry: &ToolRegistry) {
        let Some(exposure) = self.lock().registered else {
            return;
        };
        if exposure == ToolExposure::Hidden {
            return;
        }
        for tool in resource_tools(exposure, &self.servers()) {
            registry.register_late(Arc::new(tool));
        }
    }

    /// Syncs, and when the exposure moved, registers the tools for running in `registry` and
    /// adds what the session must learn to `actions` (a declaration of a name already there
    /// replaced).
    pub fn sync_into(&self, registry: &ToolRegistry, actions: &mut ResourceActions) {
        let Some(sync) = self.sync() else {
            return;
        };
        let tools = resource_tools(sync.exposure, &self.servers());
        let names: Vec<String> = tools
            .iter()
            .map(|t| t.definition_name().to_owned())
            .filter(|name| registry.admits(name))
            .collect();
        actions.direct.retain(|d| !names.contains(&d.name));
        actions.deferred.retain(|d| !names.contains(&d.tool.name));
        actions.withdrawn.retain(|name| !names.contains(name));
        if sync.exposure == ToolExposure::Hidden || sync.was_direct {
            // Pi re-registers them hidden (or no longer direct): out of the active tools.
            actions.withdrawn.extend(names.iter().cloned());
        }
        if sync.exposure == ToolExposure::Hidden {
            return;
        }
        for tool in tools {
            let declaration = pi_effects::custom_tool::CustomTool::definition(&tool).clone();
            if !names.contains(&declaration.name) {
                continue;
            }
            match sync.exposure {
                ToolExposure::Direct => actions.direct.push(declaration),
                _ => actions.deferred.push(SearchableTool {
                    tool: declaration,
                    namespace: None,
                }),
            }
            registry.register_late(Arc::new(tool));
        }
    }
}
