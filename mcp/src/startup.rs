//! A session's servers started together, as Pi 1.5.2's MCP extension starts them: every enabled
//! server connects at once, and everything that needs the user (config errors, servers that
//! failed) is one warning in Pi's words, after which the session goes on without those servers.

use std::path::Path;
use std::sync::Arc;

use crate::client::McpConnection;
use crate::config::McpConfig;

/// The servers that connected, in configuration order, and the one warning about the rest.
#[derive(Debug, Default)]
pub struct Started {
    pub connections: Vec<Arc<McpConnection>>,
    /// Pi's `MCP servers need attention:` notice, when anything does.
    pub report: Option<String>,
}

/// Connects every enabled server of `config` concurrently, relative paths against `cwd`.
pub async fn start_servers(config: &McpConfig, cwd: &Path) -> Started {
    let enabled: Vec<_> = config.servers.iter().filter(|s| s.enabled()).collect();
    let attempts = enabled
        .iter()
        .map(|entry| McpConnection::connect(entry, cwd));
    let outcomes = join_all(attempts).await;
    let mut lines: Vec<String> = config
        .errors
        .iter()
        .map(|e| format!("config: {e}"))
        .collect();
    let mut connections = Vec::new();
    for (entry, outcome) in enabled.iter().zip(outcomes) {
        match outcome {
            Ok(connection) => connections.push(Arc::new(connection)),
            Err(error) => {
                // Pi's line names the server once, then the first line of the error.
                let message = error.to_string();
                let prefix = format!("MCP server \"{}\": ", entry.name);
                let reason = message.strip_prefix(&prefix).unwrap_or(&message);
                let first = reason.split('\n').next().unwrap_or("");
                lines.push(format!("{}: failed: {first}", entry.name));
            }
        }
    }
    let report = (!lines.is_empty()).then(|| {
        let body: String = lines.iter().map(|l| format!("  {l}\n")).collect();
        format!("MCP servers need attention:\n{body}Run /mcp to fix.")
    });
    Started {
        connections,
        report,
    }
}

/// Awaits every future, polling them in turn so that slow servers start side by side (the
/// connects borrow their entries, so they cannot be spawned as tasks).
async fn join_all<F: std::future::Future>(futures: impl Iterator<Item = F>) -> Vec<F::Output> {
    let mut pinned: Vec<_> = futures.map(Box::pin).collect();
    let mut results: Vec<Option<F::Output>> = pinned.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (slot, future) in results.iter_mut().zip(pinned.iter_mut()) {
            if slot.is_none() {
                match future.as_mut().poll(cx) {
                    std::task::Poll::Ready(value) => *slot = Some(value),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    results.into_iter().flatten().collect()
}
