//! The environment credentials come from: variables (a snapshot, so a run can say exactly what
//! it saw) and the [`Host`], which answers what only the world knows: the output of a
//! `!command` value and whether a credentials file exists. This crate does no IO; the host is
//! given by the caller (pi-effects' `host::SystemHost` runs real commands), and an environment
//! without one fails every command and sees no file.

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;

use pi_credential_names::{referenced_variables, template_parts, TemplatePart};

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

    /// These variables with `overlay`'s over them, where an overlay value is not empty (a
    /// credential's own `env`, which Pi 1.5.2 reads before the process's: `env?.[name] ||
    /// process.env[name]`).
    pub fn overlaid<'a>(&self, overlay: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut vars = self.vars.clone();
        for (name, value) in overlay {
            if !value.is_empty() {
                vars.insert(name.to_owned(), value.to_owned());
            }
        }
        Environment {
            vars,
            host: self.host.clone(),
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

    /// A configured value (Pi 1.5.2's `resolveConfigValue`): `!command` runs it; anything else
    /// is a template whose `$NAME` and `${NAME}` take the variable's value (`$$` and `$!` a
    /// literal `$` and `!`, a bare `NAME` itself). `None` when the command fails or a variable
    /// it names is unset or empty.
    pub fn resolve(&self, config: &str) -> Option<String> {
        if let Some(command) = config.strip_prefix('!') {
            return self.run(command);
        }
        let mut resolved = String::new();
        for part in template_parts(config) {
            match part {
                TemplatePart::Literal(text) => resolved.push_str(&text),
                TemplatePart::Variable(name) => resolved.push_str(self.get(name)?),
            }
        }
        Some(resolved)
    }

    /// The variables a configured value names that are unset or empty, each once (none for a
    /// `!command`): what keeps it from resolving.
    pub fn missing_variables<'a>(&self, config: &'a str) -> Vec<&'a str> {
        referenced_variables(config)
            .into_iter()
            .filter(|name| self.get(name).is_none())
            .collect()
    }

    /// Whether a configured value can be used without running anything (Pi 1.5.2's
    /// `isConfigValueConfigured`): a `!command`, a literal, or a template whose variables are
    /// all set.
    pub fn is_configured(&self, config: &str) -> bool {
        self.missing_variables(config).is_empty()
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
        assert!(env.is_configured("!printf key"));
        assert!(!env.exists(std::path::Path::new("/")));
    }

    /// Pi 1.5.2's templates: a bare name is the text itself, `$NAME` and `${NAME}` the
    /// variable's value, `$$` and `$!` a literal `$` and `!`.
    #[test]
    fn a_bare_name_is_literal_and_dollar_names_interpolate() {
        let env = Environment::from_vars([("KEY", "value"), ("OTHER", "x")]);
        assert_eq!(env.resolve("KEY").as_deref(), Some("KEY"));
        assert_eq!(env.resolve("$KEY").as_deref(), Some("value"));
        assert_eq!(
            env.resolve("Bearer ${KEY}-$OTHER").as_deref(),
            Some("Bearer value-x")
        );
        assert_eq!(env.resolve("$$KEY$!").as_deref(), Some("$KEY!"));
        assert_eq!(
            env.resolve("$ ${bad-name}").as_deref(),
            Some("$ ${bad-name}")
        );
        assert_eq!(env.resolve("").as_deref(), Some(""));
    }

    /// One unset or empty variable leaves the whole value unresolved (no partial key is sent),
    /// and the value is not configured.
    #[test]
    fn a_missing_or_empty_variable_leaves_the_value_unresolved() {
        let env = Environment::from_vars([("KEY", "value"), ("EMPTY", "")]);
        for config in ["$MISSING", "Bearer ${KEY}$EMPTY", "${MISSING}"] {
            assert_eq!(env.resolve(config), None, "{config}");
            assert!(!env.is_configured(config), "{config}");
        }
        assert_eq!(env.missing_variables("$A${KEY}$EMPTY$A"), ["A", "EMPTY"]);
        assert!(env.is_configured("literal"));
        assert!(env.is_configured("$KEY"));
    }
}
