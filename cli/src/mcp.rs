//! The MCP servers of a run, as Pi 1.5.2's built-in MCP extension starts them at session start:
//! the agent dir's `mcp.json` (and the project's, when it is trusted) read, every enabled server
//! started together, the first prompt waiting up to 10 s for those with `direct` tools, and the
//! `direct` tools of those that connected registered as the run's custom tools (declared in its
//! configuration, so a cassette holds them), their `deferred` and `codemode` tools registered
//! for `tool_search` and codemode scripts (a server with `deferred` tools activates
//! `tool_search`, one with `codemode` tools Pi's codemode tool when the extension host runs it,
//! as Pi's `ensureDiscoveryActive` does); the servers without `direct` tools connect in the
//! background and reach the session when a `tool_search` waits for them
//! (`pi_mcp::background`); the servers whose tools are reached indirectly are listed in the
//! system prompt's `mcp_servers` section. What needs the user is one notice on stderr; Pi's
//! warning that indirect tools cannot be called when neither codemode nor `tool_search` is
//! active is a notice on RPC mode's UI (print mode shows none, as Pi's); the run goes on.

use std::path::Path;
use std::sync::Arc;

use pi_effects::custom_tool::ToolRegistry;
use pi_mcp::{
    load_mcp_config, register_tools, start_for_rerun, start_lazily, Background, McpConfig,
    McpConnection,
};
use serde_json::Value;

/// The servers that connected, and the notice about what failed, if anything did.
#[derive(Debug, Default)]
pub struct Servers {
    /// Each connected server's name and tool list, for the run's configuration.
    pub listed: Vec<Value>,
    /// The `mcp_servers` system-prompt section, when some server's tools are reached
    /// indirectly (Pi's MCP extension adds it before each prompt).
    pub section: Option<String>,
    /// The section from the second prompt on, when the servers' instructions change it.
    pub later_section: Option<String>,
    /// Pi's warning that those tools cannot be called (neither codemode nor `tool_search`
    /// active).
    pub warning: Option<&'static str>,
    /// Whether that warning was said (Pi says it once a session).
    pub warned: bool,
    /// Whether a server's deferred tools activate `tool_search`.
    pub activates_tool_search: bool,
    /// Whether a server's `codemode` tools activate Pi's codemode tool.
    pub activates_codemode: bool,
    pub notice: Option<String>,
    /// The servers that connected, stopped together when the session ends
    /// (`pi_mcp::stop_servers`).
    pub connections: Vec<Arc<McpConnection>>,
    /// The servers connecting in the background (no `direct` tool), whose `tool_call` handler
    /// a run loads as an extension (a replay running its tools again loads none: their tools
    /// are registered as each connects); stopped when the session ends.
    pub background: Option<Arc<Background>>,
    /// Pi's MCP extension's `mcp_servers_change` handler, when extensions are loaded: the
    /// servers they register after loading, connected by it and stopped when the session
    /// ends.
    pub later: Option<Arc<pi_mcp::Later>>,
    /// The servers with resources, which the resource tools reach, shared with those that
    /// connect later.
    pub resources: pi_mcp::ResourceHub,
}

impl Servers {
    /// Stops every server of the run, those still connecting included; the notice about
    /// background servers that failed is said now if it was not yet.
    pub async fn stop(&self) {
        if let Some(background) = &self.background {
            if let Some(notice) = background.take_report() {
                eprintln!("{notice}");
            }
            background.stop().await;
        }
        if let Some(later) = &self.later {
            later.stop().await;
        }
        pi_mcp::stop_servers(&self.connections).await;
    }
}

/// Starts the servers that `config` (the run's `mcp.json` files) configures, then the servers
/// extensions `registered` (`mcp.json` wins a shared name), relative paths against `cwd`, and
/// registers their tools in `tools` after those there; `discovery` is the run's `tool_search`
/// and codemode (each `None`: not registered, else whether it is active). No file, no server,
/// nothing said.
pub async fn start(
    mut config: McpConfig,
    cwd: &Path,
    registered: &[pi_mcp::Registered],
    tools: &mut ToolRegistry,
    discovery: Discovery,
) -> Servers {
    config.add_registered(registered);
    start_configured(config, cwd, tools, discovery, false).await
}

/// The run's discovery tools as the servers find them: `tool_search` and Pi's codemode, each
/// `None` when not registered, else whether it is active.
#[derive(Clone, Copy, Debug, Default)]
pub struct Discovery {
    pub tool_search: Option<bool>,
    pub codemode: Option<bool>,
}

/// Starts the servers of `agent_dir`'s `mcp.json` that `declared` names (a replay's: those
/// the recorded run had) for running its tools again, as [`start_reporting`] does; no project
/// file is read.
pub async fn start_declared(
    agent_dir: &Path,
    cwd: &Path,
    declared: &[String],
    tools: &mut ToolRegistry,
    discovery: Discovery,
) -> Servers {
    let mut config = load_mcp_config(agent_dir, cwd, false);
    config
        .servers
        .retain(|server| declared.contains(&server.name));
    report(start_configured(config, cwd, tools, discovery, true).await)
}

/// Starts the servers of `config` and registers their tools in `tools`; those without
/// `direct` tools connect in the background, as Pi connects them. `rerun`: for a replay
/// running its tools again, whose recording brings their tools' declarations: their tools are
/// registered as each connects, and a call of one waits for them (`pi_mcp::start_for_rerun`).
async fn start_configured(
    config: McpConfig,
    cwd: &Path,
    tools: &mut ToolRegistry,
    discovery: Discovery,
    rerun: bool,
) -> Servers {
    if config.servers.is_empty() && config.errors.is_empty() {
        return Servers::default();
    }
    let (mut started, background) = if rerun {
        start_for_rerun(&config, cwd, tools).await
    } else {
        start_lazily(&config, cwd, tools).await
    };
    let auto_enable = config.auto_enable_codemode.unwrap_or(true);
    let activated =
        started.activate_discovery(discovery.tool_search, discovery.codemode, auto_enable);
    let mut servers = Servers {
        activates_tool_search: activated.tool_search,
        activates_codemode: activated.codemode,
        notice: started.report,
        section: started.section,
        later_section: started.later_section,
        warning: started.warning,
        background,
        resources: started.resources,
        ..Servers::default()
    };
    for connection in started.connections {
        servers.listed.push(connection.listing());
        register_tools(tools, Arc::clone(&connection));
        servers.connections.push(connection);
    }
    servers.resources.register_started(tools);
    if let Some(background) = &servers.background {
        servers.listed.extend(background.listings());
    }
    servers
}

/// Starts the servers as [`start`] does and says on stderr what needs the user.
pub async fn start_reporting(
    config: McpConfig,
    cwd: &Path,
    registered: &[pi_mcp::Registered],
    tools: &mut ToolRegistry,
    discovery: Discovery,
) -> Servers {
    report(start(config, cwd, registered, tools, discovery).await)
}

/// Says on stderr what of `servers` needs the user, and, once the background servers have
/// settled, which of them failed (once; nothing when the run ends first). Pi's warning that
/// their tools cannot be called stays in `warning`, for RPC mode's UI to show.
fn report(mut servers: Servers) -> Servers {
    servers.warned = servers.warning.is_some();
    if let Some(notice) = servers.notice.take() {
        eprintln!("{notice}");
    }
    if let Some(background) = &servers.background {
        let background = Arc::clone(background);
        tokio::spawn(async move {
            background.settled().await;
            if let Some(notice) = background.take_report() {
                eprintln!("{notice}");
            }
        });
    }
    servers
}

/// The first MCP server an extension registered in the run `cassette` recorded, with the
/// extension: one its configuration lists with the extension (registered while loading), else
/// one a recorded hook decision's `mcpServersChange` names (registered later). A recording
/// keeps no registered server's configuration (its `env` or `headers` may hold keys), so a
/// replay running tools again cannot start it.
pub fn registered_in(cassette: &pi_cassettes::Cassette) -> Option<(String, String)> {
    use pi_cassettes::format::{Line, RecordedInput};
    let named = |server: &Value| {
        let name = server.get("name")?.as_str()?;
        let path = server.get("extensionPath")?.as_str()?;
        Some((name.to_owned(), path.to_owned()))
    };
    if let Some(found) = cassette.config.mcp_servers.iter().find_map(named) {
        return Some(found);
    }
    cassette.lines.iter().find_map(|(_, line)| {
        let (Line::Answer { input, .. }
        | Line::Command { input, .. }
        | Line::Outside { input, .. }) = line
        else {
            return None;
        };
        let RecordedInput::HookDecided { outcome, .. } = &**input else {
            return None;
        };
        outcome
            .get("actions")?
            .as_array()?
            .iter()
            .filter(|action| action["action"] == "mcpServersChange")
            .filter_map(|action| action["servers"].as_array())
            .flatten()
            .find_map(named)
    })
}

/// Pi 1.5.2's report of each server an extension registered when no extension connects MCP
/// servers (`--no-mcp` leaves the built-in MCP extension out): one `register_mcp_server`
/// extension error a server, which the session reports when it starts.
pub fn unconnected(registered: &[pi_mcp::Registered]) -> Vec<pi_core::agent_session::StartError> {
    registered
        .iter()
        .map(|server| pi_core::agent_session::StartError {
            extension_path: server.extension_path.clone(),
            event: "register_mcp_server".into(),
            error: format!(
                "MCP server \"{}\" is registered, but no loaded extension connects MCP servers; \
                 another extension may have replaced the built-in MCP support",
                server.name
            ),
        })
        .collect()
}
