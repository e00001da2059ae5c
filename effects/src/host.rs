//! The host credential resolution asks about: this process's environment variables, `!command`
//! values run with a real shell, and whether a credentials file exists. The providers decide
//! what to ask (pi-providers' `registry::Environment`); this is the one place that asks the
//! world.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use pi_providers::registry::{Environment, Host};

/// How long a `!command` may run before it counts as failed (the original's limit).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// This process's variables (those that are valid Unicode), with [`SystemHost`] running
/// commands and looking at files.
pub fn process_environment() -> Environment {
    Environment::from_vars(std::env::vars()).with_host(Arc::new(SystemHost))
}

/// The real host: `sh -c` for commands, the file system for files.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemHost;

/// What each `!command` gave, by its text, for the life of the process (Pi 1.5.2's
/// `commandResultCache`): a password manager's prompt or a slow vault is asked once, not
/// before every request, and a failure is not retried.
fn command_results() -> &'static Mutex<HashMap<String, Option<String>>> {
    static RESULTS: OnceLock<Mutex<HashMap<String, Option<String>>>> = OnceLock::new();
    RESULTS.get_or_init(Mutex::default)
}

impl Host for SystemHost {
    fn run(&self, command: &str, vars: &BTreeMap<String, String>) -> Option<String> {
        // A panic elsewhere while the map was held leaves it as it was: still usable.
        let results = || command_results().lock().unwrap_or_else(|e| e.into_inner());
        if let Some(known) = results().get(command) {
            return known.clone();
        }
        let result = run_command(command, vars);
        results().insert(command.to_owned(), result.clone());
        result
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }
}

/// Runs `command` with `sh -c` and exactly `vars`: its trimmed stdout, or `None` when it
/// fails, times out or prints nothing.
fn run_command(command: &str, vars: &BTreeMap<String, String>) -> Option<String> {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .env_clear()
        .envs(vars)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let mut stdout = child.stdout.take()?;
    let (sender, output) = std::sync::mpsc::channel();
    // Detached: a background process the command started may hold stdout open for longer
    // than we wait, and must not hold up the caller.
    std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = sender.send(stdout.read_to_end(&mut out).map(|_| out));
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() < COMMAND_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(5));
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
        }
    };
    let remaining = COMMAND_TIMEOUT.saturating_sub(started.elapsed());
    let out = output.recv_timeout(remaining).ok()?.ok()?;
    if !status?.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out).trim().to_owned();
    (!text.is_empty()).then_some(text)
}
