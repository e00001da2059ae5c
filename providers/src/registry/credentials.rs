//! Every credential a run could send, gathered before anything is recorded, so that a cassette
//! can replace each one wherever it appears (a tool that prints another provider's key, a
//! resumed session that holds one, a header whose value came from a variable).

use serde_json::Value;

use super::auth::AuthStorage;
use super::config::HeaderConfig;
use super::env::Environment;
use super::ModelRegistry;
use pi_credential_names::{bare_token, referenced_variables};
pub use pi_credential_names::{is_credential_name, is_credential_variable};

/// Values shorter than this, found only by the shape of a variable's name, are not taken as
/// credentials: `AUTH_MODE=none` must not rewrite every "none" of a conversation.
const MIN_GUESSED_LEN: usize = 8;

/// A credential and where it came from (for the cassette's `redaction` line; never the value).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Credential {
    pub value: String,
    pub source: String,
}

impl ModelRegistry {
    /// Every credential this run could resolve: keys given for the run, auth.json's keys and
    /// tokens, the variables whose names say they hold one, and models.json's keys and headers
    /// (a header counts when its name says so or its value came from a variable or a
    /// `!command`). Runs the `!command`s, as resolving a request's credentials would.
    pub fn credentials(&self, auth: &AuthStorage, env: &Environment) -> Vec<Credential> {
        let mut found = Vec::new();
        let mut add = |value: &str, source: String| {
            let value = value.trim();
            if !value.is_empty() && !found.iter().any(|c: &Credential| c.value == value) {
                found.push(Credential {
                    value: value.to_owned(),
                    source,
                });
            }
        };
        for (provider, key) in auth.runtime_keys() {
            add(key, format!("--api-key for {provider}"));
        }
        for (provider, credential) in auth.stored() {
            for field in ["key", "access", "refresh"] {
                let Some(value) = credential.get(field).and_then(Value::as_str) else {
                    continue;
                };
                let value = if field == "key" {
                    env.resolve(value)
                } else {
                    Some(value.to_owned())
                };
                if let Some(value) = value {
                    add(&value, format!("auth.json {provider} {field}"));
                }
            }
        }
        for (name, value) in env.vars() {
            if is_credential_variable(name) && value.len() >= MIN_GUESSED_LEN {
                add(value, format!("environment variable {name}"));
            }
        }
        // A value, and what of it may be repeated alone: the token after a scheme, and the
        // variables it names as Pi 1.5.2 interpolates them.
        let mut add_configured = |configured: &str, value: &str, source: String| {
            add(value, source.clone());
            if let Some(token) = bare_token(value).filter(|t| t.len() >= MIN_GUESSED_LEN) {
                add(token, source.clone());
            }
            for name in referenced_variables(configured) {
                if let Some(value) = env.get(name).filter(|v| v.len() >= MIN_GUESSED_LEN) {
                    add(value, format!("{source} (variable {name})"));
                }
            }
        };
        for (provider, config) in &self.request_configs {
            if let Some(configured) = config.api_key.as_deref() {
                if let Some(value) = env.resolve(configured) {
                    add_configured(
                        configured,
                        &value,
                        format!("{} apiKey of {provider}", config.origin.as_str()),
                    );
                }
            }
            for (name, configured, value) in header_credentials(env, config.headers.as_ref()) {
                let source = format!("{} header {name} of {provider}", config.origin.as_str());
                add_configured(configured, &value, source);
            }
        }
        for ((provider, model), headers) in &self.model_headers {
            for (name, configured, value) in header_credentials(env, Some(headers)) {
                let source = format!("models.json header {name} of {provider}/{model}");
                add_configured(configured, &value, source);
            }
        }
        found
    }
}

/// The configured headers that hold credentials: name, configured value, resolved value. A
/// header counts when its name says so, its value is a `!command` or interpolates a variable
/// (`$NAME` or `${NAME}`).
fn header_credentials<'a>(
    env: &Environment,
    headers: Option<&'a HeaderConfig>,
) -> Vec<(&'a str, &'a str, String)> {
    let mut out = Vec::new();
    for (name, value) in headers.into_iter().flatten() {
        let Some(configured) = value.as_str() else {
            continue;
        };
        let indirect = configured.starts_with('!') || !referenced_variables(configured).is_empty();
        if !(indirect || is_credential_name(name)) {
            continue;
        }
        if let Some(resolved) = env.resolve(configured) {
            out.push((name.as_str(), configured, resolved));
        }
    }
    out
}
