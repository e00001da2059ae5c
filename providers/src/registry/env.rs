//! The environment credentials come from: variables (a snapshot, so a run can say exactly what
//! it saw) and shell commands for `!command` values.

use std::collections::BTreeMap;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a `!command` may run before it counts as failed (the original's limit).
const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// Environment variables as seen by credential resolution.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Environment {
    vars: BTreeMap<String, String>,
}

impl Environment {
    /// This process's variables (those that are valid Unicode).
    pub fn from_process() -> Self {
        Environment {
            vars: std::env::vars().collect(),
        }
    }

    /// Exactly these variables.
    pub fn from_vars<K: Into<String>, V: Into<String>>(
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Environment {
            vars: vars
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }

    /// Every variable, by name.
    pub fn vars(&self) -> impl Iterator<Item = (&str, &str)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The variable's value when it is set, even empty (JavaScript's `!== undefined` test).
    pub fn get_raw(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// The variable's value when it is set and not empty (JavaScript's truthiness test).
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars
            .get(name)
            .map(String::as_str)
            .filter(|v| !v.is_empty())
    }

    /// Runs `command` with `sh -c` in this environment; its trimmed stdout, or `None` when it
    /// fails, times out (10 s, output included) or prints nothing.
    pub fn run(&self, command: &str) -> Option<String> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(command)
            .env_clear()
            .envs(&self.vars)
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

    /// A configured value: `!command` runs it, a set variable's name gives its value, anything
    /// else is the value itself.
    pub fn resolve(&self, config: &str) -> Option<String> {
        match config.strip_prefix('!') {
            Some(command) => self.run(command),
            None => Some(self.get(config).unwrap_or(config).to_owned()),
        }
    }
}
