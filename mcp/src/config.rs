//! `mcp.json` as Pi 1.5.2 reads it (`extensions/mcp/config.js`, `core/mcp-servers.js`, pi-mcp's
//! `validateMcpServerConfig`): the agent dir's file, then `<cwd>/.pi/mcp.json` only when the project
//! is trusted. A project entry replaces the global one of the same name; a project entry without
//! `command`, `url` or `type` only overrides `enabled`, `exposure` and `toolExposure`. Every
//! problem names its file and reads as Pi's message; an invalid entry is skipped and the others
//! are kept.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::naming::mcp_namespace;

/// The exposures Pi knows (`codemode-deferred` is read as `codemode`).
pub const EXPOSURES: [&str; 4] = ["codemode", "deferred", "direct", "hidden"];
/// The keys a project override may set.
const OVERRIDE_KEYS: [&str; 3] = ["enabled", "exposure", "toolExposure"];
/// Pi's per-request timeout when `timeout` is absent, in seconds.
pub const DEFAULT_TIMEOUT_SECONDS: f64 = 60.0;

/// Where a server entry came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The agent dir's `mcp.json`.
    Global,
    /// The trusted project's `.pi/mcp.json`.
    Project,
    /// Registered by an extension (`pi.registerMcpServer`); its source is the extension's path.
    Extension,
}

/// How to reach a server.
#[derive(Clone, Debug, PartialEq)]
pub enum Transport {
    /// A child process speaking JSON-RPC on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        cwd: Option<String>,
    },
    /// Streamable HTTP at `url`.
    Http {
        url: String,
        headers: Vec<(String, String)>,
    },
}

/// One valid server entry.
#[derive(Clone, Debug, PartialEq)]
pub struct ServerEntry {
    pub name: String,
    /// The entry as written (exposure aliases resolved), which Pi keeps as the server's config.
    pub config: Map<String, Value>,
    pub transport: Transport,
    pub source: PathBuf,
    pub scope: Scope,
    /// The project file that overrides this global entry's `enabled`/`exposure`/`toolExposure`.
    pub override_path: Option<PathBuf>,
}

impl ServerEntry {
    /// The extension that registered the server (Pi's `extensionPath`), for one an extension
    /// registered.
    pub fn registered_by(&self) -> Option<String> {
        (self.scope == Scope::Extension).then(|| self.source.display().to_string())
    }

    /// `enabled` (default true): a disabled entry is kept but not connected.
    pub fn enabled(&self) -> bool {
        self.config.get("enabled").and_then(Value::as_bool) != Some(false)
    }

    /// The per-request timeout in seconds (`timeout`, default 60).
    pub fn timeout_seconds(&self) -> f64 {
        self.config
            .get("timeout")
            .and_then(Value::as_f64)
            .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
    }

    /// The configured one-line description of the server, trimmed, if any.
    pub fn description(&self) -> Option<&str> {
        let text = self.config.get("description")?.as_str()?.trim();
        (!text.is_empty()).then_some(text)
    }

    /// The server's own exposure (`exposure`, else `codemode`), Pi's `exposureOf`.
    pub fn exposure(&self) -> &str {
        self.config
            .get("exposure")
            .and_then(Value::as_str)
            .unwrap_or("codemode")
    }

    /// The exposure of one tool: its `toolExposure` entry (exact name first, then the first
    /// matching `*` pattern), else the server's `exposure`, else `codemode`.
    pub fn tool_exposure(&self, tool: &str) -> &str {
        if let Some(Value::Object(map)) = self.config.get("toolExposure") {
            if let Some(Value::String(exact)) = map.get(tool) {
                return exact;
            }
            for (pattern, value) in map {
                if pattern.contains('*') && pattern_matches(pattern, tool) {
                    if let Value::String(exposure) = value {
                        return exposure;
                    }
                }
            }
        }
        self.config
            .get("exposure")
            .and_then(Value::as_str)
            .unwrap_or("codemode")
    }
}

/// Whether `name` matches `pattern`, where `*` matches any characters.
fn pattern_matches(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if parts.len() == 1 {
        return pattern == name;
    }
    if !name.starts_with(first) || name.len() < first.len() + last.len() || !name.ends_with(last) {
        return false;
    }
    let mut rest = &name[first.len()..name.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// What is wrong in one file, worded as Pi words it.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Problem {
    #[error("{0}")]
    Unreadable(String),
    #[error("expected an object with an \"mcpServers\" object")]
    NotAnObject,
    #[error("autoEnableCodemode must be a boolean")]
    AutoEnableCodemode,
    #[error("invalid server name \"{server}\" (use letters, digits, \"_\" and \"-\")")]
    InvalidName { server: String },
    #[error("server \"{server}\" must be an object")]
    ServerNotObject { server: String },
    /// One field of a server entry has a bad value; `message` names the field as Pi does.
    #[error("server \"{server}\": {message}")]
    Field {
        server: String,
        field: String,
        message: String,
    },
    #[error(
        "server \"{server}\": legacy SSE transport is not supported; use the streamable HTTP URL"
    )]
    Sse { server: String },
    #[error("server \"{server}\" needs either \"command\" (stdio) or \"url\" (streamable HTTP)")]
    NoTransport { server: String },
    #[error("server \"{server}\" needs \"command\" or \"url\", or a global server to override")]
    OverrideWithoutBase { server: String },
    #[error("server \"{server}\": an override can only set enabled, exposure, toolExposure")]
    OverrideExtraKeys { server: String },
    #[error("server \"{server}\" conflicts with \"{other}\"")]
    Conflict { server: String, other: String },
    #[error("server \"{server}\": auth is only allowed in the global mcp.json")]
    AuthInProject { server: String },
}

/// A problem in one `mcp.json`; displayed as Pi reports it, `<file>: <message>`.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigError {
    pub file: PathBuf,
    pub problem: Problem,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.problem)
    }
}

impl std::error::Error for ConfigError {}

/// The servers of one session and the problems found on the way.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct McpConfig {
    /// Valid entries, disabled ones included, in the order Pi keeps them.
    pub servers: Vec<ServerEntry>,
    /// The top-level `autoEnableCodemode`, when a file sets it (the project's wins).
    pub auto_enable_codemode: Option<bool>,
    pub errors: Vec<ConfigError>,
    /// Registered servers left out because `mcp.json` defines their namespace, each as Pi's
    /// `/mcp` status words it after `overridden: `.
    pub overridden: Vec<String>,
}

/// A server an extension registered: its name, its config as Pi's loader validated it, and the
/// extension's path.
#[derive(Clone, Debug, PartialEq)]
pub struct Registered {
    pub name: String,
    pub config: Value,
    pub extension_path: String,
}

impl McpConfig {
    /// Whether Pi would activate its codemode tool for these servers at session start: some
    /// enabled server has `codemode` tools and `autoEnableCodemode` is not false.
    pub fn activates_codemode(&self) -> bool {
        let servers: Vec<crate::servers_section::SectionServer<'_>> = self
            .servers
            .iter()
            .map(|entry| crate::servers_section::SectionServer {
                name: &entry.name,
                config: &entry.config,
                instructions: None,
            })
            .collect();
        self.auto_enable_codemode != Some(false) && crate::servers_section::needs_codemode(&servers)
    }

    /// Adds the servers extensions registered after the configured ones, as Pi's built-in MCP
    /// extension merges them: a name whose namespace `mcp.json` defines is left out (the
    /// configured server wins) and noted in `overridden`. Pi's loader validated them already;
    /// one this crate cannot read is a config error rather than a panic.
    pub fn add_registered(&mut self, registered: &[Registered]) {
        for server in registered {
            let configured = self
                .servers
                .iter()
                .filter(|s| s.scope != Scope::Extension)
                .find(|s| mcp_namespace(&s.name) == mcp_namespace(&server.name));
            if let Some(configured) = configured {
                self.overridden.push(format!(
                    "\"{}\" registered by {} is overridden by \"{}\" in {}",
                    server.name,
                    server.extension_path,
                    configured.name,
                    configured.source.display()
                ));
                continue;
            }
            match validate_server(&server.name, server.config.clone()) {
                Ok((config, transport)) => self.servers.push(ServerEntry {
                    name: server.name.clone(),
                    config,
                    transport,
                    source: PathBuf::from(&server.extension_path),
                    scope: Scope::Extension,
                    override_path: None,
                }),
                Err(problem) => self.errors.push(ConfigError {
                    file: PathBuf::from(&server.extension_path),
                    problem,
                }),
            }
        }
    }
}

/// Reads `<agent_dir>/mcp.json` and, when `project_trusted`, `<cwd>/.pi/mcp.json`. Missing files
/// are no servers; problems are collected, never fatal.
pub fn load_mcp_config(agent_dir: &Path, cwd: &Path, project_trusted: bool) -> McpConfig {
    let mut config = McpConfig::default();
    read_file(&agent_dir.join("mcp.json"), Scope::Global, &mut config);
    if project_trusted {
        read_file(
            &cwd.join(".pi").join("mcp.json"),
            Scope::Project,
            &mut config,
        );
    }
    config
}

fn read_file(path: &Path, scope: Scope, state: &mut McpConfig) {
    let fail = |state: &mut McpConfig, problem| {
        state.errors.push(ConfigError {
            file: path.to_path_buf(),
            problem,
        });
    };
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return,
        Err(error) => return fail(state, Problem::Unreadable(error.to_string())),
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let parsed: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(_) => {
            let message = pi_core::json_error::node22_parse_error(text)
                .unwrap_or_else(|| "Unexpected end of JSON input".to_string());
            return fail(state, Problem::Unreadable(message));
        }
    };
    let Value::Object(root) = parsed else {
        return fail(state, Problem::NotAnObject);
    };
    let servers = match root.get("mcpServers") {
        None => Map::new(),
        Some(Value::Object(servers)) => servers.clone(),
        Some(_) => return fail(state, Problem::NotAnObject),
    };
    match root.get("autoEnableCodemode") {
        Some(Value::Bool(value)) => state.auto_enable_codemode = Some(*value),
        Some(_) => fail(state, Problem::AutoEnableCodemode),
        None => {}
    }
    for (name, value) in servers {
        if let Err(problem) = read_entry(path, scope, &name, value, state) {
            fail(state, problem);
        }
    }
}

fn is_override(entry: &Map<String, Value>) -> bool {
    !entry.contains_key("command") && !entry.contains_key("url") && !entry.contains_key("type")
}

fn read_entry(
    path: &Path,
    scope: Scope,
    name: &str,
    value: Value,
    state: &mut McpConfig,
) -> Result<(), Problem> {
    if scope == Scope::Project {
        if let Value::Object(entry) = &value {
            if is_override(entry) {
                let at = state.servers.iter().position(|s| s.name == name);
                let Some(at) = at else {
                    return Err(Problem::OverrideWithoutBase {
                        server: name.to_string(),
                    });
                };
                if entry.keys().any(|k| !OVERRIDE_KEYS.contains(&k.as_str())) {
                    return Err(Problem::OverrideExtraKeys {
                        server: name.to_string(),
                    });
                }
                let mut merged = state.servers[at].config.clone();
                merged.extend(entry.clone());
                let (config, transport) = validate_server(name, Value::Object(merged))?;
                let base = &mut state.servers[at];
                base.config = config;
                base.transport = transport;
                base.override_path = Some(path.to_path_buf());
                return Ok(());
            }
        }
    }
    let (config, transport) = validate_server(name, value)?;
    if let Some(other) = state
        .servers
        .iter()
        .find(|s| s.name != name && mcp_namespace(&s.name) == mcp_namespace(name))
    {
        return Err(Problem::Conflict {
            server: name.to_string(),
            other: other.name.clone(),
        });
    }
    if scope == Scope::Project
        && matches!(transport, Transport::Http { .. })
        && config.contains_key("auth")
    {
        return Err(Problem::AuthInProject {
            server: name.to_string(),
        });
    }
    let entry = ServerEntry {
        name: name.to_string(),
        config,
        transport,
        source: path.to_path_buf(),
        scope,
        override_path: None,
    };
    match state.servers.iter_mut().find(|s| s.name == name) {
        Some(existing) => *existing = entry,
        None => state.servers.push(entry),
    }
    Ok(())
}

fn field(server: &str, field: &str, message: &str) -> Problem {
    Problem::Field {
        server: server.to_string(),
        field: field.to_string(),
        message: message.to_string(),
    }
}

fn string_map(value: Option<&Value>) -> Option<Option<Vec<(String, String)>>> {
    match value {
        None => Some(None),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
            .collect::<Option<Vec<_>>>()
            .map(Some),
        Some(_) => None,
    }
}

/// One entry checked as pi-mcp and Pi check it, in their order; the config with exposure
/// aliases resolved, and its transport.
pub fn validate_server(name: &str, raw: Value) -> Result<(Map<String, Value>, Transport), Problem> {
    let valid_name = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !valid_name {
        return Err(Problem::InvalidName {
            server: name.to_string(),
        });
    }
    let Value::Object(mut entry) = raw else {
        return Err(Problem::ServerNotObject {
            server: name.to_string(),
        });
    };
    resolve_aliases(&mut entry);
    match entry.get("enabled") {
        Some(v) if !v.is_boolean() => {
            return Err(field(name, "enabled", "enabled must be a boolean"))
        }
        _ => {}
    }
    match entry.get("description") {
        Some(v) if !v.is_string() => {
            return Err(field(name, "description", "description must be a string"))
        }
        _ => {}
    }
    match entry.get("timeout") {
        Some(v) if !v.as_f64().is_some_and(|t| t > 0.0) => {
            return Err(field(
                name,
                "timeout",
                "timeout must be a positive number of seconds",
            ))
        }
        _ => {}
    }
    let kind = entry.get("type").cloned();
    let kind = kind.as_ref().and_then(Value::as_str);
    let type_is = |allowed: &[&str]| {
        entry.get("type").is_none() || kind.is_some_and(|k| allowed.contains(&k))
    };
    if kind == Some("sse") {
        return Err(Problem::Sse {
            server: name.to_string(),
        });
    }
    let transport = if let (Some(Value::String(url)), true) =
        (entry.get("url"), type_is(&["http", "streamable-http"]))
    {
        let http = url::Url::parse(url)
            .ok()
            .is_some_and(|u| u.scheme() == "http" || u.scheme() == "https");
        if !http {
            return Err(field(name, "url", "url must be an http or https URL"));
        }
        let Some(headers) = string_map(entry.get("headers")) else {
            return Err(field(name, "headers", "headers must map names to strings"));
        };
        if entry.get("oauth").is_some_and(|o| !o.is_object()) {
            return Err(field(name, "oauth", "oauth must be an object"));
        }
        Transport::Http {
            url: url.clone(),
            headers: headers.unwrap_or_default(),
        }
    } else if let (Some(Value::String(command)), true) = (entry.get("command"), type_is(&["stdio"]))
    {
        let args = match entry.get("args") {
            None => Vec::new(),
            Some(Value::Array(items)) if items.iter().all(Value::is_string) => items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect(),
            Some(_) => return Err(field(name, "args", "args must be an array of strings")),
        };
        let Some(env) = string_map(entry.get("env")) else {
            return Err(field(name, "env", "env must map names to strings"));
        };
        let cwd = match entry.get("cwd") {
            None => None,
            Some(Value::String(cwd)) => Some(cwd.clone()),
            Some(_) => return Err(field(name, "cwd", "cwd must be a string")),
        };
        Transport::Stdio {
            command: command.clone(),
            args,
            env: env.unwrap_or_default(),
            cwd,
        }
    } else {
        return Err(Problem::NoTransport {
            server: name.to_string(),
        });
    };
    check_exposures(name, &entry)?;
    if let Transport::Http { url, .. } = &transport {
        check_auth(name, entry.get("auth"), url)?;
    }
    Ok((entry, transport))
}

fn resolve_aliases(entry: &mut Map<String, Value>) {
    let alias = |v: &mut Value| {
        if v.as_str() == Some("codemode-deferred") {
            *v = Value::String("codemode".to_string());
        }
    };
    if let Some(v) = entry.get_mut("exposure") {
        alias(v);
    }
    if let Some(Value::Object(map)) = entry.get_mut("toolExposure") {
        map.values_mut().for_each(alias);
    }
}

fn exposure_list() -> String {
    EXPOSURES
        .iter()
        .map(|e| format!("\"{e}\""))
        .collect::<Vec<_>>()
        .join(", ")
}

fn check_exposures(name: &str, entry: &Map<String, Value>) -> Result<(), Problem> {
    let is_exposure = |v: &Value| v.as_str().is_some_and(|s| EXPOSURES.contains(&s));
    if let Some(v) = entry.get("exposure") {
        if !is_exposure(v) {
            return Err(field(
                name,
                "exposure",
                &format!("exposure must be one of {}", exposure_list()),
            ));
        }
    }
    match entry.get("toolExposure") {
        None => Ok(()),
        Some(Value::Object(map)) => match map.iter().find(|(_, v)| !is_exposure(v)) {
            Some((tool, _)) => Err(field(
                name,
                "toolExposure",
                &format!("toolExposure \"{tool}\" must be one of {}", exposure_list()),
            )),
            None => Ok(()),
        },
        Some(_) => Err(field(
            name,
            "toolExposure",
            "toolExposure must map tool names to exposures",
        )),
    }
}

fn check_auth(name: &str, auth: Option<&Value>, url: &str) -> Result<(), Problem> {
    let Some(auth) = auth else { return Ok(()) };
    let provider = auth.get("provider").and_then(Value::as_str).unwrap_or("");
    if !auth.is_object() || provider.is_empty() {
        return Err(field(name, "auth", "auth.provider must be a provider name"));
    }
    let loopback = ["localhost", "127.0.0.1", "[::1]"];
    let ok = url::Url::parse(url).ok().is_some_and(|u| {
        u.scheme() == "https" || u.host_str().is_some_and(|h| loopback.contains(&h))
    });
    if !ok {
        return Err(field(
            name,
            "auth",
            "auth requires an https URL, or http on localhost, 127.0.0.1, or [::1]",
        ));
    }
    Ok(())
}
