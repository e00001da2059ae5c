//! The servers a session does not wait for, as Pi 1.5.2's MCP extension connects them: those whose
//! tools are all reached through `tool_search` (no `direct` tool) connect in the background while
//! the first prompt runs, and a `tool_search` call waits for them (Pi's `tool_call` handler waits
//! for every server a tool `reachesTools`, and `tool_search` reaches them all, as the resource
//! tools do) before it searches, or until the run is aborted. Pi registers each server's tools when
//! that server connects; here they reach the session, server by server in the order they connected,
//! at the next hook point where a handler could see them: once the first prompt's run has started,
//! [`crate::early`] registers those connected by then ahead of the other handlers of every run's
//! hook point some extension handles; and this extension's own handlers bring those that connected
//! while a search or a resource tool waited, or by a later prompt's `before_agent_start`. Each
//! server's tools are one action of the hook point's decision
//! ([`HookAction::RegisterDeferredTools`], with the `mcp_servers` section the servers connected so
//! far make), so a cassette records them with the decision and a replay loads the same tools, in
//! the same order, with no server; when a server with resources moves the resource tools' exposure,
//! they follow its tools there (`resource_hub`). A server that fails is reported once, when every
//! one of them has settled; the session goes on without it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use pi_core::tools::tool_search::TOOL_SEARCH_TOOL_NAME;
use pi_effects::custom_tool::ToolRegistry;
use pi_effects::extension::{
    HandledHooks, HookAction, HookContext, HookEvent, HookFuture, HookPayload, RustExtension,
};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

use crate::client::McpConnection;
use crate::config::{McpConfig, ServerEntry};
use crate::custom_tool::register_late_tools;
use crate::resource_hub::{ResourceActions, ResourceHub};
use crate::startup::{
    attention, failure_line, has_direct_tools, later_section, start_waiting, Started,
};

/// Starts the servers of `config` as Pi does: those with `direct` tools waited for (up to Pi's
/// startup wait, as [`crate::start_servers`] waits), the others connecting in the background,
/// their tools for `tool_search` registered in `tools` once it needs them. `None` when every
/// server was waited for.
pub async fn start_lazily(
    config: &McpConfig,
    cwd: &Path,
    tools: &ToolRegistry,
) -> (Started, Option<Arc<Background>>) {
    start(config, cwd, tools, false).await
}

/// Starts the servers of `config` as [`start_lazily`] does, for running a recorded run's
/// tools again (its hook decisions replayed, so no handler of the [`Background`] runs): each
/// background server's tools are registered in `tools` as soon as it connects, and a call of
/// an MCP tool not registered yet waits until every background server has settled
/// ([`ToolRegistry::late_tools_coming`]), as the recorded run's search waited for them.
pub async fn start_for_rerun(
    config: &McpConfig,
    cwd: &Path,
    tools: &mut ToolRegistry,
) -> (Started, Option<Arc<Background>>) {
    let (started, background) = start(config, cwd, tools, true).await;
    if let Some(background) = &background {
        tools.late_tools_coming(comes_late, background.done.clone());
    }
    (started, background)
}

/// The servers with `direct` tools waited for, the others spawned in the background;
/// `registering`: their tools registered in `tools` as each connects.
async fn start(
    config: &McpConfig,
    cwd: &Path,
    tools: &ToolRegistry,
    registering: bool,
) -> (Started, Option<Arc<Background>>) {
    let started = start_waiting(config, cwd, has_direct_tools).await;
    let later: Vec<ServerEntry> = config
        .servers
        .iter()
        .filter(|s| s.enabled() && !has_direct_tools(s))
        .cloned()
        .collect();
    if later.is_empty() {
        return (started, None);
    }
    let background = Background::spawn(
        config.clone(),
        later,
        cwd.to_path_buf(),
        started.connections.clone(),
        tools.clone(),
        started.resources.clone(),
        registering,
    );
    (started, Some(background))
}

/// How Pi's MCP tool names start (`mcp__<server>__<tool>`).
const MCP_TOOL_PREFIX: &str = "mcp__";

/// Pi's codemode tool, whose scripts reach the servers they name.
pub(crate) const CODEMODE_TOOL_NAME: &str = "codemode";

/// The script globals that list or look tools up, so a script using one may call any tool
/// (Pi's `DISCOVERY_GLOBALS`).
const DISCOVERY_GLOBALS: [&str; 4] = [
    "searchTools",
    "describeNamespace",
    "describeTool",
    "ALL_TOOLS",
];

/// Whether a tool of `name` may come with a server connecting in the background: one of its
/// tools, or a resource tool.
fn comes_late(name: &str) -> bool {
    name.starts_with(MCP_TOOL_PREFIX) || is_resource_tool(name)
}

/// Whether `name` is one of Pi's resource tools, which reach every server with resources.
fn is_resource_tool(name: &str) -> bool {
    [
        crate::resources::LIST_MCP_RESOURCES_TOOL,
        crate::resources::LIST_MCP_RESOURCE_TEMPLATES_TOOL,
        crate::resources::READ_MCP_RESOURCE_TOOL,
    ]
    .contains(&name)
}

/// Renders the `mcp_servers` section over the connections given (those the session waited for,
/// then the background servers connected so far), with the servers extensions registered as
/// they are now: the later handler's, in place of the configuration's own servers.
pub type SectionRenderer = Box<dyn Fn(&[Arc<McpConnection>]) -> Option<String> + Send + Sync>;

/// The servers connecting in the background, and Pi's MCP extension's `tool_call` handler
/// that waits for them.
pub struct Background {
    /// How the section is rendered once the later handler follows the registered servers.
    renderer: Mutex<Option<SectionRenderer>>,
    config: McpConfig,
    /// Their names, in configuration order.
    names: Vec<String>,
    /// The servers the session waited for, whose instructions the later section keeps.
    waited: Vec<Arc<McpConnection>>,
    /// Where their tools are registered for running.
    tools: ToolRegistry,
    /// The servers with resources, which those that connect join.
    resources: ResourceHub,
    /// What the servers came to so far, in the order they settled.
    arrivals: Arc<Mutex<Arrivals>>,
    /// How many of them have settled (connected or failed).
    progress: watch::Receiver<usize>,
    /// The connecting, until it ended or the session did.
    task: Mutex<Option<JoinHandle<()>>>,
    /// How many of the connected servers' tools reached the session, in the order they
    /// connected.
    delivered: Mutex<usize>,
    /// Whether the notice about those that failed was taken.
    reported: AtomicBool,
    /// How many prompts' runs have started (`before_agent_start`).
    prompts: AtomicUsize,
    /// Turns `true` once every background server has settled.
    done: watch::Receiver<bool>,
}

/// What the background servers came to so far.
#[derive(Debug, Default)]
struct Arrivals {
    /// Those that connected, in the order they did.
    connected: Vec<Arc<McpConnection>>,
    /// Pi's line about each that failed, with its place in the configuration.
    failed: Vec<(usize, String)>,
}

impl std::fmt::Debug for Background {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Background").finish_non_exhaustive()
    }
}

impl Background {
    fn spawn(
        config: McpConfig,
        later: Vec<ServerEntry>,
        cwd: PathBuf,
        waited: Vec<Arc<McpConnection>>,
        tools: ToolRegistry,
        resources: ResourceHub,
        registering: bool,
    ) -> Arc<Background> {
        let names = later.iter().map(|s| s.name.clone()).collect();
        let (sender, progress) = watch::channel(0);
        let (finished, done) = watch::channel(false);
        let arrivals = Arc::new(Mutex::new(Arrivals::default()));
        let shared = Arc::clone(&arrivals);
        let registry = tools.clone();
        let hub = resources.clone();
        let task = tokio::spawn(async move {
            // Dropping the set (the session ended) aborts the connects still running.
            let mut attempts = JoinSet::new();
            for (at, entry) in later.into_iter().enumerate() {
                let cwd = cwd.clone();
                attempts.spawn(async move {
                    let outcome = McpConnection::connect(&entry, &cwd).await;
                    (at, entry, outcome)
                });
            }
            let mut settled = 0;
            while let Some(joined) = attempts.join_next().await {
                let Ok((at, entry, outcome)) = joined else {
                    continue;
                };
                {
                    let mut arrivals = shared.lock().unwrap_or_else(PoisonError::into_inner);
                    match outcome {
                        Ok(connection) => {
                            let connection = Arc::new(connection);
                            if registering {
                                register_late_tools(&registry, Arc::clone(&connection));
                                hub.add(&connection);
                                hub.sync();
                                hub.register_late(&registry);
                            }
                            arrivals.connected.push(connection);
                        }
                        Err(error) => arrivals.failed.push((at, failure_line(&entry, &error))),
                    }
                }
                settled += 1;
                sender.send_replace(settled);
            }
            finished.send_replace(true);
        });
        Arc::new(Background {
            renderer: Mutex::new(None),
            config,
            names,
            waited,
            tools,
            resources,
            arrivals,
            progress,
            task: Mutex::new(Some(task)),
            delivered: Mutex::new(0),
            reported: AtomicBool::new(false),
            prompts: AtomicUsize::new(0),
            done,
        })
    }

    /// The servers as a run's configuration lists them: by name alone, their tools not known
    /// when the session starts.
    pub fn listings(&self) -> Vec<serde_json::Value> {
        self.names
            .iter()
            .map(|name| {
                let mut listing = serde_json::json!({ "name": name });
                let entry = self.config.servers.iter().find(|s| s.name == *name);
                if let Some(path) = entry.and_then(ServerEntry::registered_by) {
                    listing["extensionPath"] = serde_json::Value::from(path);
                }
                listing
            })
            .collect()
    }

    /// The background servers a codemode script may call (Pi's `getScriptReach` and
    /// `reachesServer`): every one when it uses a discovery global, else those whose namespace
    /// one of its words contains.
    fn reached_by_script(&self, input: &serde_json::Value) -> Vec<String> {
        let code = input
            .get("code")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("");
        let words: Vec<&str> = code
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
            .collect();
        let all = words.iter().any(|w| DISCOVERY_GLOBALS.contains(w));
        self.names
            .iter()
            .filter(|name| {
                let namespace = crate::naming::mcp_namespace(name);
                all || words.iter().any(|w| w.contains(namespace.as_str()))
            })
            .cloned()
            .collect()
    }

    /// Waits until each of the background servers `names` has connected or failed (or the
    /// connecting was stopped).
    async fn settled_among(&self, names: &[String]) {
        let mut progress = self.progress.clone();
        let _ = progress
            .wait_for(|_| names.iter().all(|name| self.has_settled(name)))
            .await;
    }

    /// Whether the background server `name` has connected or failed.
    fn has_settled(&self, name: &str) -> bool {
        let arrivals = self.arrivals();
        arrivals.connected.iter().any(|c| c.entry().name == name)
            || arrivals
                .failed
                .iter()
                .any(|(at, _)| self.names.get(*at).is_some_and(|n| n == name))
    }

    /// Whether every background server has connected or failed.
    fn all_settled(&self) -> bool {
        *self.progress.borrow() >= self.names.len()
    }

    /// Waits until every background server has connected or failed (or the connecting was
    /// stopped).
    pub async fn settled(&self) {
        let mut progress = self.progress.clone();
        let total = self.names.len();
        let _ = progress.wait_for(|settled| *settled >= total).await;
    }

    /// Renders the section with `renderer` from now on (the later handler follows the
    /// registered servers, which Pi's section lists as they are).
    pub(crate) fn render_with(&self, renderer: SectionRenderer) {
        *self.renderer.lock().unwrap_or_else(PoisonError::into_inner) = Some(renderer);
    }

    /// The `mcp_servers` section over `connections`.
    fn section(&self, connections: &[Arc<McpConnection>]) -> Option<String> {
        match &*self.renderer.lock().unwrap_or_else(PoisonError::into_inner) {
            Some(render) => render(connections),
            None => later_section(&self.config, connections),
        }
    }

    /// The background servers that have connected so far, in the order they did.
    pub(crate) fn connected(&self) -> Vec<Arc<McpConnection>> {
        self.arrivals().connected.clone()
    }

    fn arrivals(&self) -> std::sync::MutexGuard<'_, Arrivals> {
        self.arrivals.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Pi's one notice about the background servers that failed, once every one has settled:
    /// given once, whoever asks first (`None`: none failed, not settled yet, or taken).
    pub fn take_report(&self) -> Option<String> {
        if !self.all_settled() {
            return None;
        }
        let mut failed = self.arrivals().failed.clone();
        failed.sort_by_key(|(at, _)| *at);
        let lines: Vec<String> = failed.into_iter().map(|(_, line)| line).collect();
        let report = attention(&lines)?;
        (!self.reported.swap(true, Ordering::SeqCst)).then_some(report)
    }

    /// Stops the background servers as the session's end stops its servers: the connecting
    /// ended, those that connected stopped together.
    pub async fn stop(&self) {
        let task = self
            .task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(task) = task {
            task.abort();
            let _ = task.await;
        }
        let connected = self.arrivals().connected.clone();
        crate::stop_servers(&connected).await;
    }

    /// The tools of the servers that connected since the last delivery, registered for
    /// running: one action per server, in the order they connected, each with the section the
    /// servers connected up to it make, and the resource tools when that server moved their
    /// exposure (after its tools, as Pi syncs them once it registered a server's tools).
    pub(crate) fn deliver(&self) -> Vec<HookAction> {
        let mut delivered = self
            .delivered
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let connected = self.arrivals().connected.clone();
        let mut actions = Vec::new();
        for (at, connection) in connected.iter().enumerate().skip(*delivered) {
            let tools = register_late_tools(&self.tools, Arc::clone(connection));
            let all: Vec<Arc<McpConnection>> = self
                .waited
                .iter()
                .chain(&connected[..=at])
                .cloned()
                .collect();
            let section = self.section(&all);
            self.resources.add(connection);
            let mut resources = ResourceActions::default();
            self.resources.sync_into(&self.tools, &mut resources);
            let mut tools = tools;
            tools.extend(resources.deferred);
            actions.push(HookAction::RegisterDeferredTools {
                tools,
                later_sections: crate::servers_section::custom_sections(section.as_deref()),
            });
            if !resources.direct.is_empty() || !resources.withdrawn.is_empty() {
                actions.push(HookAction::RegisterTools {
                    tools: resources.direct,
                    withdrawn: resources.withdrawn,
                });
            }
        }
        *delivered = connected.len();
        actions
    }

    /// Whether the first prompt's run has started (its `before_agent_start` handled here):
    /// from then on the servers that connected are registered where a handler may see them.
    pub(crate) fn prompted(&self) -> bool {
        self.prompts.load(Ordering::SeqCst) > 0
    }

    /// Whether every server settled and its tools reached the session: nothing is left to do.
    fn done(&self) -> bool {
        self.all_settled()
            && *self
                .delivered
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                == self.arrivals().connected.len()
    }
}

/// The handlers of Pi's MCP extension over the background servers: `tool_call`, where a
/// `tool_search` or a resource tool waits for them all and a codemode script for those it may
/// call (or the run's abort) and brings the tools of those connected, and
/// `before_agent_start`, where a prompt after the first brings those connected by then (Pi
/// renders the `mcp_servers` section there as the servers are; the first prompt's is rendered
/// before they connected).
impl RustExtension for Background {
    fn name(&self) -> &str {
        "builtin:mcp"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::ToolCall, HookEvent::BeforeAgentStart])
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, cx: &'a HookContext) -> HookFuture<'a> {
        Box::pin(async move {
            match payload {
                // `tool_search` and the resource tools reach every server (Pi's `reachesTools`,
                // `RESOURCE_TOOL_NAMES`): they wait for them all.
                HookPayload::ToolCall { tool_name, .. }
                    if tool_name == TOOL_SEARCH_TOOL_NAME || is_resource_tool(tool_name) =>
                {
                    if self.done() {
                        return Ok(None);
                    }
                    tokio::select! {
                        () = self.settled() => {}
                        () = cx.aborted() => {}
                    }
                }
                // A codemode script waits for the servers it may reach (Pi's `reachesTools`).
                HookPayload::ToolCall {
                    tool_name, input, ..
                } if tool_name == CODEMODE_TOOL_NAME => {
                    if self.done() {
                        return Ok(None);
                    }
                    let reached = self.reached_by_script(input);
                    tokio::select! {
                        () = self.settled_among(&reached) => {}
                        () = cx.aborted() => {}
                    }
                }
                HookPayload::BeforeAgentStart { .. } => {
                    if self.prompts.fetch_add(1, Ordering::SeqCst) == 0 {
                        return Ok(None);
                    }
                }
                _ => return Ok(None),
            }
            for action in self.deliver() {
                cx.act(action);
            }
            Ok(None)
        })
    }
}
