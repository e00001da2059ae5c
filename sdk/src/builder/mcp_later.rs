//! The MCP servers a session's TypeScript extensions register or unregister after loading, as
//! the `pi` binary follows them: once [`SessionBuilder::mcp_config`] has started the MCP
//! servers (Pi's SDK sessions load no built-in MCP extension without it), each session opened
//! with TypeScript extensions loads Pi's MCP extension's `mcp_servers_change` handler
//! (`pi_mcp::Later`), which connects the servers added, withdraws the tools of those removed,
//! and answers with their tools, so a recording holds them and a replay connects nothing. The
//! servers they register while loading connect when the session starts, the same way.

use std::sync::{Arc, Mutex, PoisonError};

use pi_cassettes::Recorder;
use pi_effects::custom_tool::ToolRegistry;

use super::SessionBuilder;

/// The handlers of the sessions a builder opened, stopped together by `Session::finish`
/// (clones of the builder share them).
#[derive(Clone, Debug, Default)]
pub(crate) struct LaterServers(Arc<Mutex<Vec<Arc<pi_mcp::Later>>>>);

impl LaterServers {
    fn push(&self, later: Arc<pi_mcp::Later>) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(later);
    }

    /// Stops the servers every handler connected (the sessions ended).
    pub(crate) async fn stop(&self) {
        let all: Vec<Arc<pi_mcp::Later>> = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
            .collect();
        for later in all {
            later.stop().await;
        }
    }
}

impl SessionBuilder {
    /// Pi's MCP extension's handler of the servers registered after loading, for a session
    /// whose TypeScript extensions are `loaded` and whose custom tools are `tools` (where the
    /// servers' tools are registered for running); `None` when `mcp_config` was not called or
    /// no TypeScript extension is loaded. The servers they registered while loading
    /// (`registered`) connect when the session starts (`Session::bind_extensions`), as Pi's
    /// MCP extension connects them in its `session_start` handler.
    pub(super) fn later_servers(
        &self,
        tools: &ToolRegistry,
        loaded: bool,
        registered: Vec<(String, serde_json::Value)>,
    ) -> Option<Arc<pi_mcp::Later>> {
        let config = self.mcp_config.as_ref().filter(|_| loaded)?;
        let later = pi_mcp::Later::new(
            self.cwd.clone(),
            config,
            &[],
            &self.mcp_servers,
            tools.clone(),
            self.mcp_resources.clone(),
            self.mcp_connections.clone(),
        )
        .with_background(self.mcp_background.first().cloned())
        .connecting_at_start(registered);
        let later = Arc::new(later);
        self.mcp_later.push(Arc::clone(&later));
        Some(later)
    }

    /// The handlers of the sessions this builder opened.
    pub(crate) fn mcp_later(&self) -> &LaterServers {
        &self.mcp_later
    }
}

/// Hands `recorder` each key of a server's configuration before `later` connects it, so the
/// recording scrubs it.
pub(crate) fn learn_keys(later: Option<&Arc<pi_mcp::Later>>, recorder: &Recorder) {
    if let Some(later) = later {
        let recorder = recorder.clone();
        later.on_credentials(Box::new(move |value, what| {
            recorder.secret(value, what);
        }));
    }
}
