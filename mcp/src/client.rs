//! A connection to one MCP server through rmcp: a child process over stdio (started with the
//! session's environment plus the entry's `env`, in its own process group, its stderr kept for
//! the error report, stopped as Pi stops it: `stdio_child`) or streamable HTTP with the entry's headers. It lists the server's tools and
//! calls one with Pi's per-request timeout and an abort signal; an abort sends MCP's
//! `notifications/cancelled` so the server stops too.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use rmcp::model::{
    CallToolRequest, CallToolRequestParam, CancelledNotificationParam, ClientRequest,
    ListResourceTemplatesRequest, ListResourcesRequest, PaginatedRequestParam, ReadResourceRequest,
    ReadResourceRequestParam, ServerResult,
};
use rmcp::service::{Peer, PeerRequestOptions, RunningService};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use tokio::io::AsyncReadExt;
use tokio_util::sync::CancellationToken;

use pi_core::event::ToolResult;

use crate::config::{ServerEntry, Transport};
use crate::convert::{convert_result, SaveOutput};
use crate::definition::McpToolDefinition;
use crate::raw_results::{RawResults, Tap};
use crate::stdio_child::StdioChild;

/// How much of a failed stdio server's stderr the error keeps (Pi's `STDERR_TAIL_CHARS`).
const STDERR_TAIL_CHARS: usize = 2_000;

/// Why a server could not be connected; the message names the server, as Pi's one report does.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("MCP server \"{server}\" {what} \"{name}\" uses ${{{variable}}}, which is not set")]
    MissingVariable {
        server: String,
        what: &'static str,
        name: String,
        variable: String,
    },
    #[error("MCP server \"{server}\": cannot start {command}: {source}")]
    Spawn {
        server: String,
        command: String,
        source: std::io::Error,
    },
    #[error("MCP server \"{server}\": {message}")]
    Handshake { server: String, message: String },
    #[error("MCP server \"{server}\": invalid header \"{name}\"")]
    Header { server: String, name: String },
}

/// Why a tool call gave no result.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("MCP request aborted")]
    Aborted,
    #[error("MCP request timed out after {0}ms")]
    TimedOut(u128),
    #[error("{0}")]
    Service(String),
    /// The server does not know the method (JSON-RPC's -32601).
    #[error("{0}")]
    MethodNotFound(String),
}

/// One connected server.
#[derive(Debug)]
pub struct McpConnection {
    entry: ServerEntry,
    /// The running service until [`McpConnection::close`] ends it.
    service: Mutex<Option<RunningService<RoleClient, ()>>>,
    /// What requests go through.
    peer: Peer<RoleClient>,
    /// The tools the server listed, each as MCP's JSON.
    tools: Vec<Value>,
    /// The server's `instructions`, if it sent any.
    instructions: Option<String>,
    /// The raw resource results a stdio server sent (see [`crate::raw_results`]); none over
    /// HTTP, whose answers are read as rmcp's types.
    raw: Option<RawResults>,
    /// Whether the server said it has resources (its capabilities list `resources`): Pi's
    /// resource tools reach it.
    has_resources: bool,
    /// A stdio server's process, stopped as Pi stops it by [`McpConnection::close`] (after
    /// the service, which holds its pipes), or when the connection goes unclosed.
    process: Option<StdioChild>,
}

/// `~` and `~/…` name the home directory, as in a shell.
fn expand_home(value: &str) -> String {
    let home = std::env::var("HOME").unwrap_or_default();
    if value == "~" {
        home
    } else if let Some(rest) = value.strip_prefix("~/") {
        format!("{home}/{rest}")
    } else {
        value.to_string()
    }
}

/// `${NAME}` replaced by the variable's value; an unset variable is an error naming it.
pub(crate) fn resolve_value(value: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        let Some(end) = rest[at..].find('}') else {
            break;
        };
        let name = &rest[at + 2..at + end];
        out.push_str(&rest[..at]);
        out.push_str(&std::env::var(name).map_err(|_| name.to_string())?);
        rest = &rest[at + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn tail(text: &str) -> String {
    let text = text.trim();
    let count = text.chars().count();
    text.chars()
        .skip(count.saturating_sub(STDERR_TAIL_CHARS))
        .collect()
}

impl McpConnection {
    /// Starts (stdio) or opens (HTTP) the server of `entry`, relative paths against `cwd`, and
    /// lists its tools.
    pub async fn connect(entry: &ServerEntry, cwd: &Path) -> Result<Self, ConnectError> {
        let server = entry.name.clone();
        let handshake = |message: String| ConnectError::Handshake {
            server: server.clone(),
            message,
        };
        let mut process = None;
        let mut raw = None;
        let (service, stderr) = match &entry.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd: dir,
            } => {
                let mut cmd = tokio::process::Command::new(expand_home(command));
                cmd.args(args.iter().map(|a| expand_home(a)));
                let dir = dir
                    .as_deref()
                    .map(expand_home)
                    .unwrap_or_else(|| ".".to_string());
                cmd.current_dir(cwd.join(PathBuf::from(dir)));
                for (key, value) in env {
                    let value =
                        resolve_value(value).map_err(|variable| ConnectError::MissingVariable {
                            server: server.clone(),
                            what: "env",
                            name: key.clone(),
                            variable,
                        })?;
                    cmd.env(key, value);
                }
                let (child, (stdout, stdin, stderr)) =
                    StdioChild::spawn(cmd).map_err(|source| ConnectError::Spawn {
                        server: server.clone(),
                        command: command.clone(),
                        source,
                    })?;
                process = Some(child);
                let stderr_task = stderr.map(|mut stderr| {
                    tokio::spawn(async move {
                        let mut buf = Vec::new();
                        let _ = stderr.read_to_end(&mut buf).await;
                        String::from_utf8_lossy(&buf).into_owned()
                    })
                });
                let results = RawResults::default();
                let stdout = Tap::new(stdout, results.clone());
                raw = Some(results);
                (().serve((stdout, stdin)).await, stderr_task)
            }
            Transport::Http { url, headers } => {
                let mut map = reqwest::header::HeaderMap::new();
                for (name, value) in headers {
                    let value =
                        resolve_value(value).map_err(|variable| ConnectError::MissingVariable {
                            server: server.clone(),
                            what: "header",
                            name: name.clone(),
                            variable,
                        })?;
                    let header = || ConnectError::Header {
                        server: server.clone(),
                        name: name.clone(),
                    };
                    let key = reqwest::header::HeaderName::from_bytes(name.as_bytes())
                        .map_err(|_| header())?;
                    let value =
                        reqwest::header::HeaderValue::from_str(&value).map_err(|_| header())?;
                    map.insert(key, value);
                }
                let client = reqwest::Client::builder()
                    .default_headers(map)
                    .build()
                    .map_err(|e| handshake(e.to_string()))?;
                let config = rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                    url.as_str(),
                );
                let transport =
                    rmcp::transport::StreamableHttpClientTransport::with_client(client, config);
                (().serve(transport).await, None)
            }
        };
        let service = match service {
            Ok(service) => service,
            Err(error) => {
                let mut message = error.to_string();
                if let Some(task) = stderr {
                    let text = tokio::time::timeout(Duration::from_secs(1), task).await;
                    if let Ok(Ok(text)) = text {
                        let text = tail(&text);
                        if !text.is_empty() {
                            message = format!("{message}\n{text}");
                        }
                    }
                }
                return Err(handshake(message));
            }
        };
        let instructions = service
            .peer_info()
            .and_then(|info| info.instructions.clone());
        let has_resources = service
            .peer_info()
            .is_some_and(|info| info.capabilities.resources.is_some());
        let timeout = Duration::from_secs_f64(entry.timeout_seconds());
        let listed = tokio::time::timeout(timeout, service.list_all_tools()).await;
        let tools = match listed {
            Ok(Ok(tools)) => tools,
            Ok(Err(error)) => return Err(handshake(error.to_string())),
            Err(_) => {
                return Err(handshake(format!(
                    "MCP request tools/list timed out after {} ms",
                    timeout.as_millis()
                )))
            }
        };
        let tools = tools
            .iter()
            .filter_map(|tool| serde_json::to_value(tool).ok())
            .collect();
        Ok(McpConnection {
            entry: entry.clone(),
            peer: service.peer().clone(),
            service: Mutex::new(Some(service)),
            tools,
            instructions,
            raw,
            has_resources,
            process,
        })
    }

    /// Whether the server has resources (Pi's `hasResources`).
    pub fn has_resources(&self) -> bool {
        self.has_resources
    }

    /// Whether the resource tools reach this server (Pi's `serversWithResources`): it has
    /// resources, is enabled and its exposure is not `hidden`.
    pub fn resources_reachable(&self) -> bool {
        self.has_resources && self.entry.enabled() && self.entry.exposure() != "hidden"
    }

    /// The server's tools as MCP's JSON, in the order it listed them.
    pub fn tools(&self) -> &[Value] {
        &self.tools
    }

    /// The server's instructions (the `mcp_servers` section shows their first line; the
    /// namespace `tool_search` ranks by holds them whole).
    pub fn instructions(&self) -> Option<&str> {
        self.instructions.as_deref()
    }

    /// The server as a run's configuration lists it (and a cassette holds it): its name and
    /// its tools as it answered, and for one an extension registered, the extension (a
    /// replay running tools again says it cannot start it).
    pub fn listing(&self) -> Value {
        let mut listing = serde_json::json!({"name": self.entry.name, "tools": self.tools});
        if let Some(path) = self.entry.registered_by() {
            listing["extensionPath"] = Value::from(path);
        }
        listing
    }

    /// The entry this connection was made from.
    pub fn entry(&self) -> &ServerEntry {
        &self.entry
    }

    /// Calls `tool` (the server's name for it) with `arguments`; the `CallToolResult` as JSON.
    /// `abort` cancels the call and tells the server; the entry's timeout ends it too.
    pub async fn call_tool(
        &self,
        tool: &str,
        arguments: Value,
        abort: &CancellationToken,
    ) -> Result<Value, CallError> {
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(CallToolRequestParam {
            name: tool.to_string().into(),
            arguments: arguments.as_object().cloned(),
        }));
        match self.request(request, abort).await?.0 {
            ServerResult::CallToolResult(result) => as_json(&result),
            _ => Err(unexpected("tools/call")),
        }
    }

    /// One page of the server's resources (`resources/list` from `cursor`), as MCP's JSON.
    pub async fn resources_page(
        &self,
        cursor: Option<String>,
        abort: &CancellationToken,
    ) -> Result<Value, CallError> {
        let request = ClientRequest::ListResourcesRequest(ListResourcesRequest::with_param(
            PaginatedRequestParam { cursor },
        ));
        let (answer, id) = self.request(request, abort).await?;
        match answer {
            ServerResult::ListResourcesResult(result) => self.as_sent(&id, &result),
            _ => Err(unexpected("resources/list")),
        }
    }

    /// One page of the server's resource templates (`resources/templates/list`); none from a
    /// server that does not know the method, as Pi's `withoutTemplates` reads it.
    pub async fn resource_templates_page(
        &self,
        cursor: Option<String>,
        abort: &CancellationToken,
    ) -> Result<Value, CallError> {
        let request = ClientRequest::ListResourceTemplatesRequest(
            ListResourceTemplatesRequest::with_param(PaginatedRequestParam { cursor }),
        );
        let (answer, id) = match self.request(request, abort).await {
            Err(CallError::MethodNotFound(_)) => {
                return Ok(serde_json::json!({"resourceTemplates": []}))
            }
            answered => answered?,
        };
        match answer {
            ServerResult::ListResourceTemplatesResult(result) => self.as_sent(&id, &result),
            _ => Err(unexpected("resources/templates/list")),
        }
    }

    /// The contents of the resource at `uri` (`resources/read`), as MCP's JSON.
    pub async fn read_resource(
        &self,
        uri: &str,
        abort: &CancellationToken,
    ) -> Result<Value, CallError> {
        let request = ClientRequest::ReadResourceRequest(ReadResourceRequest::new(
            ReadResourceRequestParam {
                uri: uri.to_string(),
            },
        ));
        let (answer, id) = self.request(request, abort).await?;
        match answer {
            ServerResult::ReadResourceResult(result) => self.as_sent(&id, &result),
            _ => Err(unexpected("resources/read")),
        }
    }

    /// The result of the answer to request `id` as the server sent it, when its raw JSON was
    /// kept, else as rmcp read it.
    fn as_sent(&self, id: &str, result: &impl serde::Serialize) -> Result<Value, CallError> {
        match self.raw.as_ref().and_then(|raw| raw.take(id)) {
            Some(sent) => Ok(sent),
            None => as_json(result),
        }
    }

    /// Sends `request` and waits for its answer (with its id, as JSON text), with the entry's timeout; `abort` cancels it
    /// and tells the server (MCP's `notifications/cancelled`).
    async fn request(
        &self,
        request: ClientRequest,
        abort: &CancellationToken,
    ) -> Result<(ServerResult, String), CallError> {
        if abort.is_cancelled() {
            return Err(CallError::Aborted);
        }
        let timeout = Duration::from_secs_f64(self.entry.timeout_seconds());
        let peer = self.peer.clone();
        let handle = peer
            .send_request_with_option(request, PeerRequestOptions::no_options())
            .await
            .map_err(|e| CallError::Service(e.to_string()))?;
        let id = handle.id.clone();
        let key = serde_json::to_value(&id)
            .map(|id| id.to_string())
            .unwrap_or_default();
        let outcome = tokio::select! {
            response = tokio::time::timeout(timeout, handle.await_response()) => response,
            () = abort.cancelled() => {
                let cancel = CancelledNotificationParam { request_id: id, reason: Some("Aborted".to_string()) };
                let _ = peer.notify_cancelled(cancel).await;
                return Err(CallError::Aborted);
            }
        };
        match outcome {
            Err(_) => Err(CallError::TimedOut(timeout.as_millis())),
            Ok(Err(rmcp::ServiceError::McpError(data)))
                if data.code == rmcp::model::ErrorCode::METHOD_NOT_FOUND =>
            {
                let error = rmcp::ServiceError::McpError(data);
                Err(CallError::MethodNotFound(error.to_string()))
            }
            Ok(Err(error)) => Err(CallError::Service(error.to_string())),
            Ok(Ok(result)) => Ok((result, key)),
        }
    }

    /// Runs `tool` as Pi runs an MCP tool: the call, then the result converted
    /// ([`convert_result`]); a call that gives no result (aborted, timed out, the connection
    /// lost) is the error text Pi's loop reports as thrown.
    pub async fn run_tool(
        &self,
        tool: &McpToolDefinition,
        arguments: Value,
        abort: &CancellationToken,
        save: SaveOutput<'_>,
    ) -> Result<ToolResult, String> {
        let result = self
            .call_tool(&tool.server_tool, arguments, abort)
            .await
            .map_err(|error| error.to_string())?;
        // Pi words a resource link with how to read it when the resource tools reach the
        // tool's server.
        let readable = self.resources_reachable();
        Ok(convert_result(&tool.server, &tool.server_tool, &result, readable, save).tool_result())
    }

    /// Stops the server: the service ended (an HTTP session closed), then a stdio server's
    /// process stopped as Pi stops it (`stdio_child`), sleeping on the runtime's timer, so
    /// that a session's servers stop together ([`crate::stop_servers`]). Once closed, a
    /// connection answers no call; closing it again does nothing.
    pub async fn close(&self) {
        let service = self
            .service
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(service) = service {
            let _ = service.cancel().await;
        }
        if let Some(process) = &self.process {
            process.stop().await;
        }
    }
}

/// An MCP result as its JSON.
fn as_json(result: &impl serde::Serialize) -> Result<Value, CallError> {
    serde_json::to_value(result).map_err(|e| CallError::Service(e.to_string()))
}

/// The error of an answer of another kind than the request's.
fn unexpected(method: &str) -> CallError {
    CallError::Service(format!("unexpected response to {method}"))
}
