//! The Node extension host as a process and the channel to it. The channel is full-duplex: a
//! reader thread takes every line the host writes and hands it to the request waiting for it
//! (by `id`), and requests are written whole under a lock, so a tool running in the host never
//! holds up the harness's own input loop, and several requests may be in flight at once.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use crate::custom_tool::CustomToolDefinition;

/// The command run as Node.
const NODE: &str = "node";

/// What the harness says when no Node can be started for configured extensions.
pub const NODE_MISSING: &str =
    "Node.js >= 22.19 is required to run extensions, and no `node` could be started";

/// Why the extension host could not be started or answered.
#[derive(Debug)]
pub enum HostError {
    /// Node could not be started.
    NodeMissing(std::io::Error),
    /// The host ended, or wrote what is not its protocol.
    Protocol(String),
    /// The host refused a request (its error text).
    Refused(String),
}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostError::NodeMissing(error) => write!(f, "{NODE_MISSING} ({error})"),
            HostError::Protocol(text) => write!(f, "the extension host failed: {text}"),
            HostError::Refused(text) => f.write_str(text),
        }
    }
}

impl std::error::Error for HostError {}

/// One extension that failed to load: its path and Pi's error text.
#[derive(Clone, Debug, Deserialize)]
pub struct LoadError {
    pub path: String,
    pub error: String,
}

/// What the extensions registered while loading (`init`'s answer): what the harness uses of it.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Registrations {
    /// Their tools' declarations.
    pub tools: Vec<CustomToolDefinition>,
    /// Their commands as RPC `get_commands` lists them (`name`, `description`, `source`,
    /// `sourceInfo`), in Pi's runner's order; `command.rs` runs them.
    #[serde(default)]
    pub commands: Vec<Value>,
    /// Their flags, in load order.
    #[serde(default)]
    pub flags: Vec<super::flags::FlagDeclaration>,
    /// Their model providers (`pi.registerProvider`), in registration order, as plain data:
    /// the harness merges them into its model catalog where Pi's registry does.
    #[serde(default)]
    pub providers: Vec<pi_providers::registry::ProviderRegistration>,
    /// Their MCP servers (`pi.registerMcpServer`), in registration order, each config as Pi's
    /// loader validated it: the harness connects them next to `mcp.json`'s.
    #[serde(default, rename = "mcpServers")]
    pub mcp_servers: Vec<RegisteredMcpServer>,
    /// Their virtual models (`pi.registerVirtualModel`), in registration order, as plain data:
    /// the harness lists them in its model catalog; their routers stay in the host.
    #[serde(default, rename = "virtualModels")]
    pub virtual_models: Vec<pi_providers::registry::VirtualModelDefinition>,
    /// The extensions that loaded, in load order, with the events they handle.
    #[serde(default)]
    pub extensions: Vec<super::events::LoadedExtension>,
    /// The extensions that failed to load.
    #[serde(default)]
    pub errors: Vec<LoadError>,
}

/// One MCP server an extension registered while loading.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegisteredMcpServer {
    pub name: String,
    /// The `mcpServers` entry as Pi validated it (exposure aliases resolved).
    pub config: Value,
    /// The registering extension's path, which Pi names as the server's source.
    pub extension_path: String,
}

/// The run's models as the extensions' `ctx.modelRegistry` reads them, and the providers with
/// auth configured, by which the host answers `pi.setModel` as Pi does (`false` for a provider
/// without auth). No key is ever sent.
#[derive(Clone, Debug, Default)]
pub struct HostModels {
    /// The catalog's models (Pi's model objects).
    pub models: Vec<pi_core::model::Model>,
    /// The providers some credential is configured for.
    pub auth_providers: Vec<String>,
    /// The providers logged in with OAuth, whose typed models a subscription may not reach.
    pub oauth_providers: Vec<String>,
}

/// Where the lines for one request go: an async task's channel, or a thread blocked on
/// `init` (which may run inside the async runtime, where an async channel cannot be waited on
/// by blocking).
#[derive(Clone)]
pub(super) enum Waiter {
    Task(UnboundedSender<Value>),
    Thread(std::sync::mpsc::Sender<Value>),
}

impl Waiter {
    fn send(&self, message: Value) {
        // A receiver gone means the request's answers are no longer wanted.
        let _ = match self {
            Waiter::Task(sender) => sender.send(message).map_err(|_| ()),
            Waiter::Thread(sender) => sender.send(message).map_err(|_| ()),
        };
    }
}

/// The longest line the host may write (a tool's result, images and all); a longer one is a
/// broken host, not a reason to hold ever more of its output.
const MAX_LINE: u64 = 64 << 20;

/// The name of the host's stand-in folder in the system's temp dir, before its random part.
const STAND_IN_PREFIX: &str = "pi-extension-host-";

/// The start of the name of the folder, in the system's temp folder, that keeps the built-in
/// extensions' module files across runs (followed by the user's id).
const BUILTINS_PREFIX: &str = "pi-harness-builtins-";

/// A folder of this user's own for the built-in extensions' module files, kept across runs: the
/// loader's transpile cache is keyed by a module's path, so a file at the same path each run is
/// transpiled once (a file in each run's stand-in folder cost every host start its transpiler).
/// Made private to the user; `None` (the stand-in folder is used) when it is anything else: a
/// link, or a folder another user owns or can write to.
/// `made` is a folder this process made, whose owner is this user.
fn builtins_folder(made: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    let uid = std::fs::metadata(made).ok()?.uid();
    let folder = std::env::temp_dir().join(format!("{BUILTINS_PREFIX}{uid}"));
    let _ = std::fs::DirBuilder::new().mode(0o700).create(&folder);
    let meta = std::fs::symlink_metadata(&folder).ok()?;
    let private = meta.is_dir() && meta.uid() == uid && meta.mode() & 0o022 == 0;
    private.then_some(folder)
}
/// The host's script, written in its stand-in folder for Node to run.
const HOST_FILE: &str = "pi-extension-host.mjs";

/// How long a dropped host has to end by itself before it is stopped.
const EXIT_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// The requests waiting for lines, and once the host's output ended, why.
#[derive(Default)]
pub(super) struct Routes {
    waiting: HashMap<u64, Waiter>,
    ended: Option<String>,
    /// Where the extensions' UI requests go, once the run has a UI (`ui.rs`).
    pub(super) ui: Option<UnboundedSender<Value>>,
}

/// The running host. Dropping the last handle closes its stdin, stops it, then removes its
/// stand-in folder.
pub struct ExtensionHost {
    child: Arc<Mutex<Child>>,
    stdin: Mutex<Option<ChildStdin>>,
    pub(super) routes: Arc<Mutex<Routes>>,
    next_id: AtomicU64,
    /// The empty folder Pi's loader is given as the agent directory (and as the project when
    /// an untrusted project's extensions are left out, so the extensions' cwd while the host
    /// runs). The harness makes and removes it, so no way the host ends leaves it behind;
    /// dropped after [`Drop::drop`] has waited for the host.
    stand_in: tempfile::TempDir,
}

impl std::fmt::Debug for ExtensionHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtensionHost").finish_non_exhaustive()
    }
}

/// A line as the host writes it, U+2028/U+2029 escaped as Pi's RPC escapes them.
fn frame(message: &Value) -> String {
    let text = message
        .to_string()
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029");
    format!("{text}\n")
}

impl ExtensionHost {
    /// Starts the host in `cwd` and loads `paths` (the project's own among them only when
    /// `project_trusted`); the registrations of those that loaded, and Pi's error for each that
    /// did not, come back.
    pub fn start(
        paths: &[PathBuf],
        cwd: &Path,
        project_trusted: bool,
    ) -> Result<(Arc<ExtensionHost>, Registrations), HostError> {
        Self::start_with_flags(paths, cwd, project_trusted, &[])
    }

    /// [`start`](Self::start), the registered flags among `flags` (the command line's options
    /// Pi's own do not know) set for `pi.getFlag`.
    pub fn start_with_flags(
        paths: &[PathBuf],
        cwd: &Path,
        project_trusted: bool,
        flags: &[super::flags::GivenFlag],
    ) -> Result<(Arc<ExtensionHost>, Registrations), HostError> {
        Self::start_with_models(paths, cwd, project_trusted, flags, &HostModels::default())
    }

    /// [`start_with_flags`](Self::start_with_flags), the extensions' model registry answering
    /// from `models` (no model, and no provider with auth, without it).
    pub fn start_with_models(
        paths: &[PathBuf],
        cwd: &Path,
        project_trusted: bool,
        flags: &[super::flags::GivenFlag],
        models: &HostModels,
    ) -> Result<(Arc<ExtensionHost>, Registrations), HostError> {
        let stand_in = tempfile::Builder::new()
            .prefix(STAND_IN_PREFIX)
            .tempdir()
            .map_err(|e| HostError::Protocol(format!("its empty folder: {e}")))?;
        // The host's source goes to a file of that folder, which the host removes as it starts
        // (before the loader reads the folder): a program given on the command line is bound
        // by the system's limit on one argument, which the host's modules outgrow.
        let script = stand_in.path().join(HOST_FILE);
        std::fs::write(&script, super::ui::host_source())
            .map_err(|e| HostError::Protocol(format!("its script {}: {e}", script.display())))?;
        let mut child = Command::new(NODE)
            .arg(&script)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(HostError::NodeMissing)?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(HostError::Protocol("its pipes could not be opened".into()));
        };
        let host = Arc::new(ExtensionHost {
            child: Arc::new(Mutex::new(child)),
            stdin: Mutex::new(Some(stdin)),
            routes: Arc::new(Mutex::new(Routes::default())),
            next_id: AtomicU64::new(0),
            stand_in,
        });
        host.spawn_reader(stdout);
        let paths: Vec<String> = paths
            .iter()
            .map(|p| p.to_string_lossy().into_owned())
            .collect();
        let (sender, answers) = std::sync::mpsc::channel();
        let sent = host.send_request(
            json!({"type": "init", "paths": paths, "cwd": cwd, "projectTrusted": project_trusted,
                "standIn": host.stand_in.path(), "builtinsFolder": builtins_folder(host.stand_in.path()),
                "flagValues": super::flags::flag_values(flags),
                "models": models.models, "authProviders": models.auth_providers,
                "oauthProviders": models.oauth_providers,
                "typedModels": pi_providers::catalog::builtin_typed()}),
            Waiter::Thread(sender),
        );
        let id = match sent {
            Ok(id) => id,
            // `init` (the catalog with it) outgrows the pipe: a host that broke the protocol
            // meanwhile was stopped by the reader, whose reason is the error, not the write's.
            Err(written) => {
                let _ = answers.recv();
                let broke = host.routes.lock().is_ok_and(|r| r.ended.is_some());
                return Err(if broke { host.ended("init") } else { written });
            }
        };
        let answer = answers.recv().map_err(|_| host.ended("init"))?;
        host.forget(id);
        let data = response_data(answer)?;
        let registrations = serde_json::from_value(data)
            .map_err(|e| HostError::Protocol(format!("init's answer: {e}")))?;
        Ok((host, registrations))
    }

    /// Gives the host the run's catalog anew (`models`), once the providers its extensions
    /// registered are merged into it, for `ctx.modelRegistry` and `pi.setModel` to see them.
    pub fn set_catalog(&self, models: &HostModels) -> Result<(), HostError> {
        let (sender, answers) = std::sync::mpsc::channel();
        let id = self.send_request(
            json!({"type": "catalog", "models": models.models, "authProviders": models.auth_providers,
                "oauthProviders": models.oauth_providers}),
            Waiter::Thread(sender),
        )?;
        let answer = answers.recv().map_err(|_| self.ended("catalog"));
        self.forget(id);
        response_data(answer?).map(|_| ())
    }

    /// Gives the host the run's settings, which the extensions' `pi.getSettings()` answers
    /// (Pi's codemode reads its mode there).
    pub fn set_settings(&self, settings: &serde_json::Map<String, Value>) -> Result<(), HostError> {
        let (sender, answers) = std::sync::mpsc::channel();
        let id = self.send_request(
            json!({"type": "settings", "settings": settings}),
            Waiter::Thread(sender),
        )?;
        let answer = answers.recv().map_err(|_| self.ended("settings"));
        self.forget(id);
        response_data(answer?).map(|_| ())
    }

    /// Tells the host that nothing connects the MCP servers extensions register (`--no-mcp`):
    /// each one registered from now on is Pi's `register_mcp_server` error once, within the
    /// handler that registered it (those registered while loading are the session's start
    /// errors).
    pub fn mcp_unconnected(&self) -> Result<(), HostError> {
        let (sender, answers) = std::sync::mpsc::channel();
        let id = self.send_request(json!({"type": "mcp.unconnected"}), Waiter::Thread(sender))?;
        let answer = answers.recv().map_err(|_| self.ended("mcp.unconnected"));
        self.forget(id);
        response_data(answer?).map(|_| ())
    }

    /// Loads the extensions again, as Pi's runtime does for a session that replaces another
    /// (`new_session`, `switch_session`, `fork`, `clone`): their factories run again with a
    /// fresh API (what they keep in their modules stays), before the new session's
    /// `session_start`; or for a command's `ctx.reload()`. What the new load registered comes
    /// back as `init`'s answer does (the providers: those registered at the start, kept).
    /// `paths`, the extensions found again (in Pi's order), are loaded in place of the
    /// previous load's.
    pub fn reload(&self, paths: &[PathBuf]) -> Result<Registrations, HostError> {
        let (sender, answers) = std::sync::mpsc::channel();
        let request = json!({"type": "reload", "paths": paths});
        let id = self.send_request(request, Waiter::Thread(sender))?;
        let answer = answers.recv().map_err(|_| self.ended("reload"));
        self.forget(id);
        let data = response_data(answer?)?;
        serde_json::from_value(data)
            .map_err(|e| HostError::Protocol(format!("reload's answer: {e}")))
    }

    /// Routes the host's lines until its output ends or breaks the protocol (a line that is not
    /// JSON with a numeric `id`, or one longer than [`MAX_LINE`]): then the host is stopped, and
    /// every request waiting learns why from its closed channel.
    fn spawn_reader(&self, stdout: ChildStdout) {
        let routes = Arc::clone(&self.routes);
        let child = Arc::clone(&self.child);
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let why = route_lines(&mut reader, &routes);
            if let Ok(mut child) = child.lock() {
                let _ = child.kill();
            }
            if let Ok(mut routes) = routes.lock() {
                routes.waiting.clear();
                routes.ended = Some(why);
            }
        });
    }

    /// The error of a request whose answers stopped coming (`what`, e.g. `init`).
    pub(crate) fn ended(&self, what: &str) -> HostError {
        let why = self.routes.lock().ok().and_then(|r| r.ended.clone());
        HostError::Protocol(match why {
            Some(why) => format!("{why} before answering {what}"),
            None => format!("it stopped answering {what}"),
        })
    }

    /// Sends `message` with a fresh id; the receiver gets every line the host writes for it.
    pub fn request(&self, message: Value) -> Result<(u64, UnboundedReceiver<Value>), HostError> {
        let (sender, receiver) = unbounded_channel();
        let id = self.send_request(message, Waiter::Task(sender))?;
        Ok((id, receiver))
    }

    pub(super) fn send_request(
        &self,
        mut message: Value,
        waiter: Waiter,
    ) -> Result<u64, HostError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        message["id"] = json!(id);
        {
            let mut routes = self
                .routes
                .lock()
                .map_err(|_| HostError::Protocol("poisoned".into()))?;
            if let Some(why) = &routes.ended {
                return Err(HostError::Protocol(why.clone()));
            }
            routes.waiting.insert(id, waiter);
        }
        self.send(&message)?;
        Ok(id)
    }

    /// Writes one line to the host.
    pub fn send(&self, message: &Value) -> Result<(), HostError> {
        let mut stdin = self
            .stdin
            .lock()
            .map_err(|_| HostError::Protocol("poisoned".into()))?;
        let pipe = stdin
            .as_mut()
            .ok_or_else(|| HostError::Protocol("its input is closed".into()))?;
        pipe.write_all(frame(message).as_bytes())
            .and_then(|()| pipe.flush())
            .map_err(|e| HostError::Protocol(format!("writing to it: {e}")))
    }

    /// Stops routing lines for request `id`.
    pub fn forget(&self, id: u64) {
        if let Ok(mut routes) = self.routes.lock() {
            routes.waiting.remove(&id);
        }
    }
}

impl Drop for ExtensionHost {
    fn drop(&mut self) {
        if let Ok(mut stdin) = self.stdin.lock() {
            stdin.take();
        }
        // The host ends on its input's end (its exit handlers run); one busy in an extension's
        // code that does not end within the grace is stopped.
        let deadline = std::time::Instant::now() + EXIT_GRACE;
        while std::time::Instant::now() < deadline {
            match self.child.lock().map(|mut child| child.try_wait()) {
                Ok(Ok(None)) => std::thread::sleep(std::time::Duration::from_millis(10)),
                _ => break,
            }
        }
        if let Ok(mut child) = self.child.lock() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Hands each line `reader` gives to the request it names, until the output ends or breaks
/// the protocol; says which.
fn route_lines(reader: &mut impl BufRead, routes: &Mutex<Routes>) -> String {
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader
            .by_ref()
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut line)
        {
            Ok(0) => return "it ended".to_owned(),
            Err(error) => return format!("reading its output: {error}"),
            Ok(_) => {}
        }
        if !line.ends_with(b"\n") {
            if line.len() as u64 > MAX_LINE {
                return format!("it wrote a line longer than {MAX_LINE} bytes");
            }
            return "it ended in the middle of a line".to_owned();
        }
        let id = serde_json::from_slice::<Value>(&line)
            .ok()
            .and_then(|message| Some((message["id"].as_u64()?, message)));
        let Some((id, message)) = id else {
            let shown: String = String::from_utf8_lossy(&line).chars().take(200).collect();
            return format!("it wrote what is not its protocol: {:?}", shown.trim_end());
        };
        if super::ui::divert(&message, routes) {
            continue;
        }
        let waiting = routes.lock().ok().and_then(|r| r.waiting.get(&id).cloned());
        if let Some(sender) = waiting {
            sender.send(message);
        }
    }
}

/// A response's `data`, or the host's error as [`HostError::Refused`].
pub(crate) fn response_data(answer: Value) -> Result<Value, HostError> {
    if answer["success"] == json!(true) {
        Ok(answer["data"].clone())
    } else {
        Err(HostError::Refused(
            answer["error"]
                .as_str()
                .unwrap_or("unknown error")
                .to_owned(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_escapes_the_javascript_line_separators() {
        let line = frame(&json!({"text": "a\u{2028}b\u{2029}c\nd"}));
        assert_eq!(line, "{\"text\":\"a\\u2028b\\u2029c\\nd\"}\n");
    }
}
