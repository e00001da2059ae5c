//! The MCP servers extensions register or unregister after loading (`pi.registerMcpServer` or
//! `pi.unregisterMcpServer` from a handler or a command), as Pi 1.5.2's built-in MCP extension
//! follows them: its `mcp_servers_change` handler connects the servers added (a name
//! `mcp.json` defines stays `mcp.json`'s) and withdraws the tools of those removed or
//! registered again with another configuration, closing their connections. A reload tells it
//! the new load's servers, so those of the load before are withdrawn as Pi's rebuilt extension
//! drops them. When neither codemode nor `tool_search` reaches the servers' tools, it gives
//! Pi's warning that they cannot be called, once a session and again after a reload (Pi's
//! rebuilt extension forgets it gave it), as a notice on the run's UI.
//!
//! The handler's decision carries what the session needs, so a replay connects nothing: the
//! added servers' `direct` tools as one `registerTools` action (active from the next request
//! on), their `deferred` ones as `registerDeferredTools`, the tools of removed servers as that
//! action's `withdrawn`; the resource tools follow the tools of the server that moved their
//! exposure (`resource_hub`); when the servers listed in the `mcp_servers` section changed
//! (Pi renders it from the servers as they are when each prompt starts), the section's new
//! text (the instructions of `mcp.json`'s servers that connected in the background included)
//! rides with `registerDeferredTools`. One deliberate difference: Pi does not wait for the servers it
//! connects here (only a session's first prompt waits for servers with `direct` tools); this
//! handler waits for them, up to Pi's startup wait, so that the tools the decision carries are
//! those of the servers as they answered.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use pi_core::agent::hook_state::HookState;
use pi_core::agent::hooks::{HandledHooks, HookAction, HookEvent, HookPayload};
use pi_core::tools::tool_search::TOOL_SEARCH_TOOL_NAME;
use pi_effects::custom_tool::ToolRegistry;
use pi_effects::extension::{HookContext, HookFuture, RustExtension};
use serde_json::Value;

use crate::background::{Background, CODEMODE_TOOL_NAME};
use crate::client::McpConnection;
use crate::config::{McpConfig, Registered};
use crate::custom_tool::McpTool;
use crate::definition::tool_definitions;
use crate::naming::mcp_namespace;
use crate::resource_hub::{ResourceActions, ResourceHub};
use crate::servers_section::{
    needs_codemode, needs_tool_search, SectionServer, UNREACHABLE_NOT_ENABLED_WARNING,
    UNREACHABLE_WARNING,
};

/// How long the handler waits for a server it connects (Pi's startup wait).
const CONNECT_WAIT: Duration = Duration::from_secs(10);

/// One registered server the handler follows.
struct Followed {
    name: String,
    /// Its configuration as registered (a new one makes it another server, as in Pi).
    config: Value,
    /// Its tools' names as the session knows them.
    tools: Vec<String>,
    /// Its connection, when this handler made it (the run's start made the others).
    connection: Option<Arc<McpConnection>>,
}

/// Pi's built-in MCP extension's `mcp_servers_change` handler.
pub struct Later {
    cwd: PathBuf,
    /// The namespaces `mcp.json` defines, which win over a registered server's.
    configured: Vec<String>,
    /// `mcp.json`'s servers, which the `mcp_servers` section lists with the registered ones.
    config: McpConfig,
    /// The servers the run's start connected, whose instructions the section words.
    start_connections: Vec<Arc<McpConnection>>,
    /// `mcp.json`'s servers connecting in the background, whose instructions the section
    /// words once each has connected.
    background: Option<Arc<Background>>,
    /// The `mcp_servers` section as the session last learnt it from this handler (at first,
    /// as the start's servers make it): a change that moves it tells the session.
    section: Mutex<Option<String>>,
    /// Where the tools of the servers it connects are registered for running.
    tools: ToolRegistry,
    /// The servers with resources, which those it connects join and those removed leave.
    resources: ResourceHub,
    /// Shared with the background servers' section (see [`Later::with_background`]).
    followed: Arc<Mutex<Vec<Followed>>>,
    /// The servers the run's start registered (name, configuration, tool names), which a
    /// session that replaced another starts from again.
    started: Vec<(String, Value, Vec<String>)>,
    /// The session the last change came in, by its id.
    session: Mutex<Option<String>>,
    /// Told each credential of a server's configuration before it is connected (a recording
    /// scrubs them), with where it came from.
    credentials: Mutex<Option<CredentialSink>>,
    /// Told Pi's notices (message, kind) for the run's UI.
    notices: Mutex<Option<NoticeSink>>,
    /// Whether Pi's warning that MCP tools cannot be called was given in the session (once a
    /// session, the start's included).
    warned_unreachable: AtomicBool,
    /// The servers extensions registered while loading that no start connected (name and
    /// configuration), connected when the session starts (see [`Later::connecting_at_start`]).
    at_start: Mutex<Option<Vec<(String, Value)>>>,
}

/// What shows a notice (its message, and its kind: Pi's `notifyType`).
pub type NoticeSink = Box<dyn Fn(&str, &str) + Send + Sync>;

/// What learns a credential (its value, and where it came from).
pub type CredentialSink = Box<dyn Fn(&str, &str) + Send + Sync>;

impl std::fmt::Debug for Later {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Later").field("cwd", &self.cwd).finish()
    }
}

impl Later {
    /// The handler for a run whose `mcp.json` servers are `configured` and whose start
    /// registered `started` (each with the tool names its listing declared, from
    /// `listings`: a run's configuration's `mcpServers`), its servers' tools registered in
    /// `tools`, the servers with resources in `resources` (the start's), the servers it
    /// connected `start_connections`.
    pub fn new(
        cwd: PathBuf,
        configured: &McpConfig,
        started: &[Registered],
        listings: &[Value],
        tools: ToolRegistry,
        resources: ResourceHub,
        start_connections: Vec<Arc<McpConnection>>,
    ) -> Later {
        let started: Vec<(String, Value, Vec<String>)> = started
            .iter()
            .map(|server| {
                let tools = listed_tool_names(&server.name, listings);
                (server.name.clone(), server.config.clone(), tools)
            })
            .collect();
        Later {
            cwd,
            configured: configured
                .servers
                .iter()
                .map(|s| mcp_namespace(&s.name))
                .collect(),
            config: configured.clone(),
            start_connections,
            background: None,
            section: Mutex::new(None),
            tools,
            resources,
            followed: Arc::new(Mutex::new(Self::from_start(&started))),
            started,
            session: Mutex::new(None),
            credentials: Mutex::new(None),
            notices: Mutex::new(None),
            warned_unreachable: AtomicBool::new(false),
            at_start: Mutex::new(None),
        }
        .with_start_section()
    }

    /// The handler that connects `servers` (name and configuration; registered while loading
    /// where no start connected them, as through the SDK) when the session starts, as Pi's MCP
    /// extension connects the registered servers in its `session_start` handler: its decision
    /// there carries their tools, so a replay connects nothing.
    pub fn connecting_at_start(self, servers: Vec<(String, Value)>) -> Later {
        if !servers.is_empty() {
            *self.at_start.lock().unwrap_or_else(PoisonError::into_inner) = Some(servers);
        }
        self
    }

    /// The handler with the section the start's servers make as the one the session knows.
    fn with_start_section(self) -> Later {
        self.know_current_section();
        self
    }

    /// The handler whose section also words the instructions of the run's servers connecting
    /// in `background`, as each has connected (Pi's section lists every server as it is).
    /// The background servers' section lists the registered servers as this handler follows
    /// them, too.
    pub fn with_background(mut self, background: Option<Arc<Background>>) -> Later {
        if let Some(background) = &background {
            let followed = Arc::clone(&self.followed);
            let config = self.config.clone();
            background.render_with(Box::new(move |connections| {
                let followed = followed.lock().unwrap_or_else(PoisonError::into_inner);
                section_of(&config, &followed, connections.to_vec())
            }));
        }
        self.background = background;
        self.with_start_section()
    }

    /// Takes the section the servers followed now make as the one the session knows.
    fn know_current_section(&self) {
        let now = self.render(&self.lock());
        *self.section.lock().unwrap_or_else(PoisonError::into_inner) = now;
    }

    /// Pi's `renderServersSection` over `mcp.json`'s servers and the `followed` ones, each
    /// with its instructions once connected.
    fn render(&self, followed: &[Followed]) -> Option<String> {
        let background = self
            .background
            .as_ref()
            .map(|b| b.connected())
            .unwrap_or_default();
        let connections: Vec<Arc<McpConnection>> = self
            .start_connections
            .iter()
            .cloned()
            .chain(background)
            .collect();
        section_of(&self.config, followed, connections)
    }

    /// `mcp.json`'s servers with the `registered` ones (name and configuration) after them,
    /// as Pi's extension merges them (a name `mcp.json` defines stays `mcp.json`'s).
    fn servers_config<'a>(
        &self,
        registered: impl Iterator<Item = (&'a String, &'a Value)>,
    ) -> McpConfig {
        with_registered(&self.config, registered)
    }

    /// The section's change for the session, when the `followed` servers moved it: its new
    /// content, or an empty one when no server is left to list (Pi deletes the section).
    fn section_change(&self, followed: &[Followed]) -> Vec<(String, String)> {
        let now = self.render(followed);
        let mut known = self.section.lock().unwrap_or_else(PoisonError::into_inner);
        if *known == now {
            return Vec::new();
        }
        *known = now.clone();
        vec![(
            crate::servers_section::SECTION_NAME.to_owned(),
            now.unwrap_or_default(),
        )]
    }

    /// Tells `sink` the credentials of every server's configuration before it is connected:
    /// those [`crate::credentials()`] finds in a registered server's `env` or `headers`.
    pub fn on_credentials(&self, sink: CredentialSink) {
        *self
            .credentials
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(sink);
    }

    /// Shows Pi's notices through `sink`; `warned`: the start already gave Pi's warning that
    /// MCP tools cannot be called, which Pi gives once a session.
    pub fn on_notices(&self, sink: NoticeSink, warned: bool) {
        *self.notices.lock().unwrap_or_else(PoisonError::into_inner) = Some(sink);
        self.warned_unreachable.store(warned, Ordering::SeqCst);
    }

    /// A reload rebuilt Pi's MCP extension, which gives its warning that MCP tools cannot be
    /// called again when the new load's servers' tools are unreachable too.
    pub fn reloaded(&self) {
        self.warned_unreachable.store(false, Ordering::SeqCst);
    }

    /// Pi's warning that MCP tools cannot be called, unless it was given in the session.
    fn warn_unreachable(&self, warning: &str) {
        if self.warned_unreachable.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Some(sink) = &*self.notices.lock().unwrap_or_else(PoisonError::into_inner) {
            sink(warning, "warning");
        }
    }

    /// Stops the servers it connected (the session ended).
    pub async fn stop(&self) {
        let connections: Vec<Arc<McpConnection>> =
            self.lock().drain(..).filter_map(|f| f.connection).collect();
        crate::stop_servers(&connections).await;
    }

    /// The servers the run's start registered, as followed from a session's start.
    fn from_start(started: &[(String, Value, Vec<String>)]) -> Vec<Followed> {
        started
            .iter()
            .map(|(name, config, tools)| Followed {
                name: name.clone(),
                config: config.clone(),
                tools: tools.clone(),
                connection: None,
            })
            .collect()
    }

    /// A change comes in `session`: when it is another than the last change's (a session
    /// replaced the one the handler followed servers in), the servers it connected are closed
    /// and it follows the start's again, as Pi's extension closes its servers when a session
    /// ends and connects the registered ones in the next.
    async fn entered(&self, session: Option<&str>) {
        let changed = {
            let mut last = self.session.lock().unwrap_or_else(PoisonError::into_inner);
            let changed = last.is_some() && last.as_deref() != session;
            *last = session.map(str::to_owned);
            changed
        };
        if !changed {
            return;
        }
        let closing: Vec<Arc<McpConnection>> = {
            let mut followed = self.lock();
            let old = std::mem::replace(&mut *followed, Self::from_start(&self.started));
            old.into_iter().filter_map(|f| f.connection).collect()
        };
        self.resources.reset_to_start();
        self.know_current_section();
        // Pi warns again in a new session.
        self.warned_unreachable.store(false, Ordering::SeqCst);
        crate::stop_servers(&closing).await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Followed>> {
        self.followed.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Follows the registered set `servers` (name and configuration): the actions for the
    /// session, after the servers added connected.
    async fn change(
        &self,
        servers: Vec<(String, Value)>,
        state: Option<&HookState>,
    ) -> Vec<HookAction> {
        let servers: Vec<(String, Value)> = servers
            .into_iter()
            .filter(|(name, _)| !self.configured.contains(&mcp_namespace(name)))
            .collect();
        let (removed, added) = {
            let mut followed = self.lock();
            let (kept, removed): (Vec<Followed>, Vec<Followed>) =
                std::mem::take(&mut *followed).into_iter().partition(|f| {
                    servers
                        .iter()
                        .any(|(name, config)| *name == f.name && *config == f.config)
                });
            *followed = kept;
            let added: Vec<(String, Value)> = servers
                .into_iter()
                .filter(|(name, _)| !followed.iter().any(|f| f.name == *name))
                .collect();
            (removed, added)
        };
        // Pi activates the tools that reach the servers' tools before it connects them.
        let mut actions = Vec::new();
        if let Some(state) = state {
            let now = {
                let kept = self.lock();
                let kept = kept.iter().map(|f| (&f.name, &f.config));
                self.servers_config(kept.chain(added.iter().map(|(name, config)| (name, config))))
            };
            let (activate, warning) = discovery(&now, state);
            actions.extend(activate);
            if let Some(warning) = warning {
                self.warn_unreachable(warning);
            }
        }
        // What the session learns, the resource tools in their place: Pi hides each removed
        // server's tools, then syncs them, and syncs them again once it registered the tools
        // of each server that connected.
        let mut learnt = ResourceActions {
            withdrawn: removed.iter().flat_map(|f| self.tools_of(f)).collect(),
            ..ResourceActions::default()
        };
        for server in &removed {
            self.resources.remove(&server.name);
            self.resources.sync_into(&self.tools, &mut learnt);
        }
        let closing: Vec<Arc<McpConnection>> =
            removed.into_iter().filter_map(|f| f.connection).collect();
        crate::stop_servers(&closing).await;
        for (name, config) in added {
            let connection = self.connect(&name, &config).await;
            let mut names = Vec::new();
            if let Some(connection) = &connection {
                for tool in tool_definitions(connection.entry(), connection.tools()) {
                    let exposure = tool.exposure.clone();
                    // A direct tool's declaration carries its server's namespace, as
                    // `register_tools` gives it.
                    let declaration = pi_core::tools::custom::CustomToolDefinition {
                        namespace: (exposure == "direct")
                            .then(|| crate::custom_tool::namespace(connection)),
                        ..tool.custom_definition()
                    };
                    if !self.tools.admits(&declaration.name) {
                        continue;
                    }
                    let registered = Arc::new(McpTool {
                        declaration: declaration.clone(),
                        tool,
                        connection: Arc::clone(connection),
                    });
                    match exposure.as_str() {
                        "direct" => learnt.direct.push(declaration.clone()),
                        "deferred" => {
                            learnt
                                .deferred
                                .push(pi_core::agent::custom_tool::SearchableTool {
                                    tool: declaration.clone(),
                                    namespace: Some(crate::custom_tool::namespace(connection)),
                                })
                        }
                        _ => continue,
                    }
                    names.push(declaration.name.clone());
                    self.tools.register_late(registered);
                }
            }
            if let Some(connection) = &connection {
                self.resources.add(connection);
                self.resources.sync_into(&self.tools, &mut learnt);
            }
            self.lock().push(Followed {
                name,
                config,
                tools: names,
                connection,
            });
        }
        let ResourceActions {
            direct,
            deferred,
            withdrawn,
        } = learnt;
        let later_sections = self.section_change(&self.lock());
        if !direct.is_empty() || !withdrawn.is_empty() {
            actions.push(HookAction::RegisterTools {
                tools: direct,
                withdrawn,
            });
        }
        if !deferred.is_empty() || !later_sections.is_empty() {
            actions.push(HookAction::RegisterDeferredTools {
                tools: deferred,
                later_sections,
            });
        }
        actions
    }

    /// The session's names of `server`'s tools: those it was followed with, else, for a
    /// server of the run's start that connected in the background (its tools not known when
    /// the session started), those of its connection.
    fn tools_of(&self, server: &Followed) -> Vec<String> {
        if !server.tools.is_empty() {
            return server.tools.clone();
        }
        let connected = self
            .background
            .as_ref()
            .map(|b| b.connected())
            .unwrap_or_default();
        let listings: Vec<Value> = connected
            .iter()
            .filter(|c| c.entry().name == server.name)
            .map(|c| c.listing())
            .collect();
        listed_tool_names(&server.name, &listings)
    }

    /// Connects the server `name` as registered with `config`, waiting up to Pi's startup
    /// wait; `None` when it is disabled, its configuration unreadable or it failed.
    async fn connect(&self, name: &str, config: &Value) -> Option<Arc<McpConnection>> {
        let mut read = McpConfig::default();
        read.add_registered(&[Registered {
            name: name.to_owned(),
            config: config.clone(),
            extension_path: String::new(),
        }]);
        if let Some(sink) = &*self
            .credentials
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
        {
            for (value, what) in crate::credentials(&read) {
                sink(&value, &what);
            }
        }
        let entry = read.servers.into_iter().next().filter(|e| e.enabled())?;
        tokio::time::timeout(CONNECT_WAIT, McpConnection::connect(&entry, &self.cwd))
            .await
            .ok()?
            .ok()
            .map(Arc::new)
    }
}

/// `configured` (`mcp.json`'s servers) with the `registered` ones (name and configuration)
/// after them, as Pi's extension merges them (a name `mcp.json` defines stays `mcp.json`'s).
fn with_registered<'a>(
    configured: &McpConfig,
    registered: impl Iterator<Item = (&'a String, &'a Value)>,
) -> McpConfig {
    let mut config = configured.clone();
    let registered: Vec<Registered> = registered
        .map(|(name, config)| Registered {
            name: name.clone(),
            config: config.clone(),
            extension_path: String::new(),
        })
        .collect();
    config.add_registered(&registered);
    config
}

/// Pi's `renderServersSection` over `configured` (`mcp.json`'s servers) and the `followed`
/// ones, each with its instructions once connected (among `connections`, or the followed
/// server's own connection).
fn section_of(
    configured: &McpConfig,
    followed: &[Followed],
    connections: Vec<Arc<McpConnection>>,
) -> Option<String> {
    let config = with_registered(configured, followed.iter().map(|f| (&f.name, &f.config)));
    let connections: Vec<Arc<McpConnection>> = connections
        .into_iter()
        .chain(followed.iter().filter_map(|f| f.connection.clone()))
        .collect();
    crate::startup::later_section(&config, &connections)
}

/// Pi's `ensureDiscoveryActive` once the servers changed to `config`'s: the session's
/// active tools (`state`'s) with codemode added where some enabled server has `codemode`
/// tools and `autoEnableCodemode` is not false, `tool_search` where some has `deferred`
/// ones, each when registered and not active yet (`None` when neither is added); and Pi's
/// warning when some server's tools are reached through them but neither is active then.
fn discovery(config: &McpConfig, state: &HookState) -> (Option<HookAction>, Option<&'static str>) {
    let servers: Vec<SectionServer<'_>> = config
        .servers
        .iter()
        .map(|entry| SectionServer {
            name: &entry.name,
            config: &entry.config,
            instructions: None,
        })
        .collect();
    let registered = |name: &str| {
        state.all_tools.as_ref().is_some_and(|all| {
            all.iter()
                .any(|t| t.get("name").and_then(Value::as_str) == Some(name))
        })
    };
    let codemode = needs_codemode(&servers);
    let tool_search = needs_tool_search(&servers);
    if !codemode && !tool_search {
        return (None, None);
    }
    let auto_enable = config.auto_enable_codemode != Some(false);
    let wanted = [
        (CODEMODE_TOOL_NAME, codemode && auto_enable),
        (TOOL_SEARCH_TOOL_NAME, tool_search),
    ];
    let mut active = state.active_tools.clone();
    let before = active.len();
    for (name, needed) in wanted {
        if needed && registered(name) && !active.iter().any(|a| a == name) {
            active.push(name.to_owned());
        }
    }
    let reaching = [CODEMODE_TOOL_NAME, TOOL_SEARCH_TOOL_NAME]
        .iter()
        .any(|name| registered(name) && active.iter().any(|a| a == name));
    let warning = (!reaching).then_some(
        if codemode && registered(CODEMODE_TOOL_NAME) && !auto_enable {
            UNREACHABLE_NOT_ENABLED_WARNING
        } else {
            UNREACHABLE_WARNING
        },
    );
    let activate = (active.len() > before).then_some(HookAction::SetActiveTools { tools: active });
    (activate, warning)
}

/// The session's names of the tools `server`'s listing declares (its entry in a run's
/// configuration's `mcpServers`), as Pi names them.
fn listed_tool_names(server: &str, listings: &[Value]) -> Vec<String> {
    let tools: Vec<&str> = listings
        .iter()
        .find(|l| l.get("name").and_then(Value::as_str) == Some(server))
        .and_then(|l| l.get("tools"))
        .and_then(Value::as_array)
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| t.get("name").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    crate::naming::assign_tool_names(server, &tools)
}

impl RustExtension for Later {
    fn name(&self) -> &str {
        "builtin:mcp"
    }

    fn handles(&self) -> HandledHooks {
        let at_start = self
            .at_start
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some();
        if at_start {
            HandledHooks::of([HookEvent::McpServersChange, HookEvent::SessionStart])
        } else {
            HandledHooks::of([HookEvent::McpServersChange])
        }
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, cx: &'a HookContext) -> HookFuture<'a> {
        Box::pin(async move {
            let servers = match payload {
                HookPayload::McpServersChange { servers } => servers
                    .iter()
                    .filter_map(|s| s.config.clone().map(|config| (s.name.clone(), config)))
                    .collect(),
                HookPayload::SessionStart { .. } => {
                    let taken = self
                        .at_start
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .take();
                    match taken {
                        Some(servers) => servers,
                        None => return Ok(None),
                    }
                }
                _ => return Ok(None),
            };
            self.entered(cx.state().map(|s| s.session.id.as_str()))
                .await;
            for action in self.change(servers, cx.state()).await {
                cx.act(action);
            }
            Ok(None)
        })
    }
}
