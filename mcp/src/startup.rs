//! A session's servers started together, as Pi 1.5.2's MCP extension starts them: every enabled
//! server connects at once, the session waits for them up to Pi's startup wait, and everything
//! that needs the user (config errors, servers that failed or are still connecting) is one
//! warning in Pi's words, after which the session goes on without those servers.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;

use crate::client::{ConnectError, McpConnection};
use crate::config::{McpConfig, ServerEntry};
use crate::servers_section::{
    has_unreachable_tools, needs_codemode, needs_tool_search, render_servers_section,
    SectionServer, UNREACHABLE_NOT_ENABLED_WARNING, UNREACHABLE_WARNING,
};

/// The servers that connected, in configuration order, and the one warning about the rest.
#[derive(Debug, Default)]
pub struct Started {
    pub connections: Vec<Arc<McpConnection>>,
    /// Pi's `MCP servers need attention:` notice, when anything does.
    pub report: Option<String>,
    /// The `mcp_servers` system-prompt section (`servers_section::SECTION_NAME`), when some
    /// enabled server's tools are reached indirectly.
    pub section: Option<String>,
    /// The section from the second prompt on, when it differs: Pi renders it as the servers
    /// are when each prompt starts, and those the first prompt did not wait for have connected
    /// by then, their instructions with them.
    pub later_section: Option<String>,
    /// Pi's warning, said before the report, that such tools cannot be called: it holds
    /// unless codemode or `tool_search` is active (see [`Started::activate_discovery`]).
    pub warning: Option<&'static str>,
    /// Whether some enabled server has `deferred` tools, which makes Pi activate `tool_search`.
    pub needs_tool_search: bool,
    /// Whether some enabled server has `codemode` tools, which makes Pi activate codemode.
    pub needs_codemode: bool,
    /// The servers with resources, those that connected here first: what the resource tools
    /// reach, shared with whatever connects servers later (`resource_hub`).
    pub resources: crate::resource_hub::ResourceHub,
}

/// What Pi's `ensureDiscoveryActive` activates at session start.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Activated {
    pub tool_search: bool,
    pub codemode: bool,
}

/// A discovery tool as the session has it: `None` not registered, else whether it is active.
pub type Discovery = Option<bool>;

/// How long a session waits for its servers (Pi's `DEFAULT_STARTUP_WAIT_MS`).
const STARTUP_WAIT: Duration = Duration::from_secs(10);

/// Pi's notice when that wait ran out.
const STILL_CONNECTING: &str =
    "MCP servers are still connecting; their tools become available once connected.";

/// Connects every enabled server of `config` concurrently, relative paths against `cwd`,
/// waiting for them up to Pi's startup wait: a server that never answers does not hold the
/// session. Pi goes on without them and adds their tools once they connect; this session goes
/// on without them.
pub async fn start_servers(config: &McpConfig, cwd: &Path) -> Started {
    start_waiting(config, cwd, |_| true).await
}

/// Connects the enabled servers of `config` that `waited` picks, as [`start_servers`] connects
/// them all; the section lists the others as still connecting (by their description alone).
pub(crate) async fn start_waiting(
    config: &McpConfig,
    cwd: &Path,
    waited: impl Fn(&ServerEntry) -> bool,
) -> Started {
    let mut started = tokio::time::timeout(STARTUP_WAIT, connect_all(config, cwd, waited))
        .await
        .unwrap_or_else(|_| Started {
            report: Some(STILL_CONNECTING.to_owned()),
            ..Started::default()
        });
    for connection in &started.connections {
        started.resources.add(connection);
    }
    started.resources.sync_start();
    let listed = section_servers(config, &started.connections, false);
    started.section = render_servers_section(&listed);
    started.later_section = later_section(config, &started.connections)
        .filter(|later| started.section.as_ref() != Some(later));
    started.warning = has_unreachable_tools(&listed).then_some(UNREACHABLE_WARNING);
    started.needs_tool_search = needs_tool_search(&listed);
    started.needs_codemode = needs_codemode(&listed);
    started
}

/// The section as a prompt renders it once `connections` are connected: every server's
/// instructions in it.
pub(crate) fn later_section(
    config: &McpConfig,
    connections: &[Arc<McpConnection>],
) -> Option<String> {
    render_servers_section(&section_servers(config, connections, true))
}

/// Whether the first prompt waits for `entry`: some of its tools are `direct` (Pi's
/// `hasDirectTools`, from its configuration).
pub fn has_direct_tools(entry: &ServerEntry) -> bool {
    SectionServer {
        name: &entry.name,
        config: &entry.config,
        instructions: None,
    }
    .has_direct_tools()
}

impl Started {
    /// Pi's `ensureDiscoveryActive` for a session whose `tool_search` is `None` (not
    /// registered) or registered and active or not: whether the session activates it (some
    /// server has deferred tools and it is registered), and the warning goes when it is active
    /// either way.
    pub fn activate_tool_search(&mut self, tool_search: Option<bool>) -> bool {
        self.activate_discovery(tool_search, None, true).tool_search
    }

    /// Pi's `ensureDiscoveryActive` with both discovery tools: codemode is activated where a
    /// server has `codemode` tools, it is registered and `auto_enable` (the configuration's
    /// `autoEnableCodemode`) allows; `tool_search` where a server has `deferred` tools and it is
    /// registered. The warning goes when either is active then; when it stays and only
    /// `autoEnableCodemode` kept codemode off, it says so.
    pub fn activate_discovery(
        &mut self,
        tool_search: Discovery,
        codemode: Discovery,
        auto_enable: bool,
    ) -> Activated {
        let activated = Activated {
            codemode: codemode == Some(false) && self.needs_codemode && auto_enable,
            tool_search: tool_search == Some(false) && self.needs_tool_search,
        };
        let reachable = activated.codemode
            || activated.tool_search
            || codemode == Some(true)
            || tool_search == Some(true);
        if reachable {
            self.warning = None;
        } else if self.warning.is_some()
            && self.needs_codemode
            && codemode.is_some()
            && !auto_enable
        {
            self.warning = Some(UNREACHABLE_NOT_ENABLED_WARNING);
        }
        activated
    }
}

/// Every configured server as the section sees it, with the instructions of those that
/// connected and that the first prompt waits for (`all`: of every one that connected). Pi's
/// first prompt waits only for servers with `direct` tools; the others are still connecting
/// when it renders the section, which so lists them by their configured description alone.
fn section_servers<'a>(
    config: &'a McpConfig,
    connections: &'a [Arc<McpConnection>],
    all: bool,
) -> Vec<SectionServer<'a>> {
    config
        .servers
        .iter()
        .map(|entry| {
            let mut server = SectionServer {
                name: &entry.name,
                config: &entry.config,
                instructions: None,
            };
            if all || server.has_direct_tools() {
                server.instructions = connections
                    .iter()
                    .find(|c| c.entry().name == entry.name)
                    .and_then(|c| c.instructions());
            }
            server
        })
        .collect()
}

/// Connects every enabled server of `config` that `waited` picks concurrently and words what
/// failed, after the config's errors.
async fn connect_all(
    config: &McpConfig,
    cwd: &Path,
    waited: impl Fn(&ServerEntry) -> bool,
) -> Started {
    let enabled: Vec<_> = config
        .servers
        .iter()
        .filter(|s| s.enabled() && waited(s))
        .collect();
    let errors = config
        .errors
        .iter()
        .map(|e| format!("config: {e}"))
        .collect();
    let (connections, report) = connect(&enabled, cwd, errors).await;
    Started {
        connections,
        report,
        ..Started::default()
    }
}

/// Connects `enabled` concurrently; returns those that connected, in order, and Pi's notice
/// about those that failed, after the lines `lines` already holds.
pub(crate) async fn connect(
    enabled: &[&ServerEntry],
    cwd: &Path,
    mut lines: Vec<String>,
) -> (Vec<Arc<McpConnection>>, Option<String>) {
    // Dropping the set (the startup wait ran out) aborts the connects still running.
    let mut attempts = JoinSet::new();
    for (at, entry) in enabled.iter().enumerate() {
        let (entry, cwd) = ((*entry).clone(), cwd.to_path_buf());
        attempts.spawn(async move { (at, McpConnection::connect(&entry, &cwd).await) });
    }
    let mut outcomes: Vec<_> = attempts.join_all().await;
    outcomes.sort_by_key(|(at, _)| *at);
    let outcomes = outcomes.into_iter().map(|(_, outcome)| outcome);
    let mut connections = Vec::new();
    for (entry, outcome) in enabled.iter().zip(outcomes) {
        match outcome {
            Ok(connection) => connections.push(Arc::new(connection)),
            Err(error) => lines.push(failure_line(entry, &error)),
        }
    }
    (connections, attention(&lines))
}

/// Pi's line about a server that failed to connect: its name once, then the first line of the
/// error.
pub(crate) fn failure_line(entry: &ServerEntry, error: &ConnectError) -> String {
    let message = error.to_string();
    let prefix = format!("MCP server \"{}\": ", entry.name);
    let reason = message.strip_prefix(&prefix).unwrap_or(&message);
    let first = reason.split('\n').next().unwrap_or("");
    format!("{}: failed: {first}", entry.name)
}

/// Pi's one notice about everything that needs the user, `lines` in it; none when empty.
pub(crate) fn attention(lines: &[String]) -> Option<String> {
    (!lines.is_empty()).then(|| {
        let body: String = lines.iter().map(|l| format!("  {l}\n")).collect();
        format!("MCP servers need attention:\n{body}Run /mcp to fix.")
    })
}

/// Stops a session's servers as Pi does when the session ends: every one at once (each given
/// Pi's grace, see [`McpConnection::close`]), so that the session ends after the slowest, not
/// after the sum of them.
pub async fn stop_servers(connections: &[Arc<McpConnection>]) {
    let mut stops = JoinSet::new();
    for connection in connections {
        let connection = Arc::clone(connection);
        stops.spawn(async move { connection.close().await });
    }
    stops.join_all().await;
}
