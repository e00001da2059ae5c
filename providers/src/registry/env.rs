//! The environment credentials come from: variables (a snapshot, so a run can say exactly what
//! it saw) and the [`Host`], which answers what only the world knows: the output of a
//! `!command` value and whether a credentials file exists. This crate does no IO; the host is
//! given by the caller (pi-effects' `host::SystemHost` runs real commands), and an environment
//! without one fails every command and sees no file.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

/// What credential resolution asks of the world beyond the variables.
pub trait Host: fmt::Debug + Send + Sync {
    /// Runs `command` with `sh -c` and exactly `vars` as its environment; its trimmed stdout,
    /// or `None` when it fails, times out (the original's 10 s, output included) or prints
    /// nothing.
    fn run(&self, command: &str, vars: &BTreeMap<String, String>) -> Option<String>;

    /// Whether something exists at `path` (pi-ai's `existsSync`).
    fn exists(&self, path: &Path) -> bool;
}

/// Environment variables as seen by credential resolution, and the host that runs commands.
#[derive(Clone, Debug, Default)]
pub struct Environment {
    vars: BTreeMap<String, String>,
    host: Option<Arc<dyn Host>>,
}

impl Environment {
    /// Exactly these variables, with no host: commands fail and no file exists.
    pub fn from_vars<K: Into<String>, V: Into<String>>(
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        Environment {
            vars: vars
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
            host: None,
        }
    }

    /// The same variables, with `host` answering for commands and files.
    pub fn with_host(self, host: Arc<dyn Host>) -> Self {
        Environment {
            host: Some(host),
            ..self
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

    /// Runs `command` with `sh -c` in this environment, through the host; its trimmed stdout,
    /// or `None` when it fails, times out or prints nothing (or there is no host).
    pub fn run(&self, command: &str) -> Option<String> {
        self.host.as_ref()?.run(command, &self.vars)
    }

    /// Whether the host sees something at `path` (never, without a host).
    pub fn exists(&self, path: &Path) -> bool {
        self.host.as_ref().is_some_and(|host| host.exists(path))
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

#[cfg(test)]
mod tests {
    use super::Environment;

    /// Without a host nothing reaches the world: a `!command` value is a failed command (as one
    /// that printed nothing), not a value, and no credentials file is seen.
    #[test]
    fn without_a_host_commands_fail_and_no_file_exists() {
        let env = Environment::from_vars([("HOME", "/"), ("KEY", "value")]);
        assert_eq!(env.resolve("!printf key"), None);
        assert_eq!(env.resolve("KEY").as_deref(), Some("value"));
        assert_eq!(env.resolve("literal").as_deref(), Some("literal"));
        assert!(!env.exists(std::path::Path::new("/")));
    }
}
