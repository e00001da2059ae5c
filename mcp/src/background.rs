//! The servers a session does not wait for, as Pi 1.5.2's MCP extension connects them: those
//! whose tools are all reached through `tool_search` (no `direct` tool) connect in the
//! background while the first prompt runs, and a `tool_search` call waits for them (Pi's
//! `tool_call` handler waits for every server a tool `reachesTools`, and `tool_search` reaches
//! them all) before it searches. Their tools reach the session at that hook point, or at a later
//! prompt's `before_agent_start` when they have settled by then, as the action its decision
//! carries ([`HookAction::RegisterDeferredTools`], with the `mcp_servers` section they change),
//! so a cassette records them with the decision and a replay loads the same tools with no
//! server. A server that fails is reported once,
//! when every one of them has settled; the session goes on without it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use pi_core::agent::custom_tool::SearchableTool;
use pi_core::tools::tool_search::TOOL_SEARCH_TOOL_NAME;
use pi_effects::custom_tool::ToolRegistry;
use pi_effects::extension::{
    HandledHooks, HookAction, HookContext, HookEvent, HookFuture, HookPayload, RustExtension,
};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::client::McpConnection;
use crate::config::{McpConfig, ServerEntry};
use crate::custom_tool::register_late_tools;
use crate::startup::{connect, has_direct_tools, later_section, start_waiting, Started};

/// Starts the servers of `config` as Pi does: those with `direct` tools waited for (up to Pi's
/// startup wait, as [`crate::start_servers`] waits), the others connecting in the background,
/// their tools for `tool_search` registered in `tools` once it needs them. `None` when every
/// server was waited for.
pub async fn start_lazily(
    config: &McpConfig,
    cwd: &Path,
    tools: &ToolRegistry,
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
    );
    (started, Some(background))
}

/// The servers connecting in the background, and Pi's MCP extension's `tool_call` handler
/// that waits for them.
pub struct Background {
    config: McpConfig,
    /// Their names, in configuration order.
    names: Vec<String>,
    /// The servers the session waited for, whose instructions the later section keeps.
    waited: Vec<Arc<McpConnection>>,
    /// Where their tools are registered for running.
    tools: ToolRegistry,
    /// Every background server has settled: those that connected, and the notice about the
    /// others.
    settled: watch::Receiver<Option<Settled>>,
    /// The connecting, until it ended or the session did.
    task: Mutex<Option<JoinHandle<()>>>,
    /// Whether their tools reached the session (the first `tool_search` brings them).
    delivered: AtomicBool,
    /// Whether the notice about those that failed was taken.
    reported: AtomicBool,
    /// How many prompts' runs have started (`before_agent_start`).
    prompts: AtomicUsize,
}

/// What the background servers came to.
#[derive(Clone, Debug)]
struct Settled {
    connections: Vec<Arc<McpConnection>>,
    report: Option<String>,
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
    ) -> Arc<Background> {
        let names = later.iter().map(|s| s.name.clone()).collect();
        let (sender, settled) = watch::channel(None);
        let task = tokio::spawn(async move {
            let entries: Vec<&ServerEntry> = later.iter().collect();
            let (connections, report) = connect(&entries, &cwd, Vec::new()).await;
            let _ = sender.send(Some(Settled {
                connections,
                report,
            }));
        });
        Arc::new(Background {
            config,
            names,
            waited,
            tools,
            settled,
            task: Mutex::new(Some(task)),
            delivered: AtomicBool::new(false),
            reported: AtomicBool::new(false),
            prompts: AtomicUsize::new(0),
        })
    }

    /// The servers as a run's configuration lists them: by name alone, their tools not known
    /// when the session starts.
    pub fn listings(&self) -> Vec<serde_json::Value> {
        self.names
            .iter()
            .map(|name| serde_json::json!({ "name": name }))
            .collect()
    }

    /// Waits until every background server has connected or failed; `None` when the
    /// connecting was stopped.
    async fn settle(&self) -> Option<Settled> {
        let mut settled = self.settled.clone();
        let value = settled.wait_for(Option::is_some).await.ok()?;
        value.clone()
    }

    /// Waits until every background server has connected or failed (or the connecting was
    /// stopped).
    pub async fn settled(&self) {
        self.settle().await;
    }

    /// Pi's one notice about the background servers that failed, once every one has settled:
    /// given once, whoever asks first (`None`: none failed, not settled yet, or taken).
    pub fn take_report(&self) -> Option<String> {
        let report = self.settled.borrow().as_ref()?.report.clone()?;
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
        let connected = self.settled.borrow().clone();
        if let Some(settled) = connected {
            crate::stop_servers(&settled.connections).await;
        }
    }

    /// The background servers' deferred tools, registered for running, and the section they
    /// make, once every one has settled.
    async fn deliver(&self) -> Option<HookAction> {
        let settled = self.settle().await?;
        let mut tools: Vec<SearchableTool> = Vec::new();
        for connection in &settled.connections {
            tools.extend(register_late_tools(&self.tools, Arc::clone(connection)));
        }
        let all: Vec<Arc<McpConnection>> = self
            .waited
            .iter()
            .chain(&settled.connections)
            .cloned()
            .collect();
        let later_sections =
            crate::servers_section::custom_sections(later_section(&self.config, &all).as_deref());
        Some(HookAction::RegisterDeferredTools {
            tools,
            later_sections,
        })
    }
}

/// The handlers of Pi's MCP extension over the background servers: `tool_call`, where a
/// `tool_search` waits for them all and brings their tools, and `before_agent_start`, where a
/// prompt after the first brings them if they have all settled by then (Pi renders the
/// `mcp_servers` section there as the servers are; the first prompt's is rendered before
/// they connected).
impl RustExtension for Background {
    fn name(&self) -> &str {
        "builtin:mcp"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::ToolCall, HookEvent::BeforeAgentStart])
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, cx: &'a HookContext) -> HookFuture<'a> {
        Box::pin(async move {
            if self.delivered.load(Ordering::SeqCst) {
                return Ok(None);
            }
            let ready = match payload {
                HookPayload::ToolCall { tool_name, .. } => tool_name == TOOL_SEARCH_TOOL_NAME,
                HookPayload::BeforeAgentStart { .. } => {
                    let earlier = self.prompts.fetch_add(1, Ordering::SeqCst);
                    earlier > 0 && self.settled.borrow().is_some()
                }
                _ => false,
            };
            if !ready {
                return Ok(None);
            }
            if let Some(action) = self.deliver().await {
                self.delivered.store(true, Ordering::SeqCst);
                cx.act(action);
            }
            Ok(None)
        })
    }
}
