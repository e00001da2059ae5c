//! The credentials `mcp.json` hands its servers, so a recording can replace them wherever a
//! server or the model repeats one: a stdio server's `env` entries and an HTTP server's
//! `headers` whose names say they hold one or whose values use a `${VAR}`, resolved as a
//! connection resolves them.

use pi_credential_names::{bare_token, is_credential_name, is_credential_variable};
use pi_providers::registry::{AuthStorage, Environment, ModelRegistry};

use crate::client::resolve_value;
use crate::config::{McpConfig, Scope, Transport};

/// Values shorter than this are not taken as credentials (as the model registry's rule):
/// `DEBUG=1` must not rewrite every "1" of a conversation.
const MIN_LEN: usize = 8;

/// Every credential of this machine a recording scrubs (`pi_effects::secrets::credentials`):
/// the model registry's, then those `mcp` (the run's `mcp.json` files, [`crate::load_mcp_config`])
/// hands its servers, then `others`. The `pi` binary and the SDK both call this, so they
/// scrub the same set.
pub fn machine_credentials(
    registry: &ModelRegistry,
    auth: &AuthStorage,
    env: &Environment,
    mcp: &McpConfig,
    others: impl IntoIterator<Item = (String, String)>,
) -> Vec<(String, String)> {
    let mcp = credentials(mcp);
    pi_effects::secrets::credentials(registry, auth, env, mcp.into_iter().chain(others))
}

/// Each credential of `config`'s servers, with where it came from (for the cassette's
/// `redaction` line, never the value). An `Authorization: Bearer KEY` header gives the whole
/// value and `KEY` alone, which a server or the model may repeat without its scheme.
pub fn credentials(config: &McpConfig) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for server in &config.servers {
        let (what, entries, named): (&str, _, fn(&str) -> bool) = match &server.transport {
            Transport::Stdio { env, .. } => ("env", env, is_credential_variable),
            Transport::Http { headers, .. } => ("header", headers, is_credential_name),
        };
        for (name, configured) in entries {
            if !(configured.contains("${") || named(name)) {
                continue;
            }
            let Ok(value) = resolve_value(configured) else {
                continue;
            };
            let source = match server.scope {
                Scope::Extension => {
                    format!("registered MCP server {what} {name} of {}", server.name)
                }
                _ => format!("mcp.json {what} {name} of {}", server.name),
            };
            let token = bare_token(&value).unwrap_or_default();
            for value in [value.trim(), token] {
                let new = !found.iter().any(|(v, _): &(String, String)| v == value);
                if value.len() >= MIN_LEN && new {
                    found.push((value.to_owned(), source.clone()));
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::config::load_mcp_config;

    /// What is taken: credential-named entries and `${VAR}` values, a bearer's token alone too;
    /// what is not: other literals (a path, a flag) and short values.
    #[test]
    fn named_and_variable_entries_are_credentials_other_literals_are_not() {
        let dir = tempfile::tempdir().unwrap();
        std::env::set_var("PI_MCP_CREDENTIALS_TEST_VALUE", "from-a-variable-42");
        let config = serde_json::json!({"mcpServers": {
            "s": {"command": "server", "env": {
                "SERVICE_API_KEY": "literal-key-12345",
                "UPSTREAM": "${PI_MCP_CREDENTIALS_TEST_VALUE}",
                "DATA_DIR": "/var/lib/server/data",
                "GH_TOKEN": "short"
            }},
            "h": {"url": "https://example.com/mcp", "headers": {
                "Authorization": "Bearer bearer-token-12345",
                "Accept-Language": "en-US,en;q=0.9"
            }}
        }});
        std::fs::write(dir.path().join("mcp.json"), config.to_string()).unwrap();
        let config = load_mcp_config(dir.path(), dir.path(), false);
        let values: Vec<String> = credentials(&config).into_iter().map(|(v, _)| v).collect();
        assert_eq!(
            values,
            [
                "literal-key-12345",
                "from-a-variable-42",
                "Bearer bearer-token-12345",
                "bearer-token-12345"
            ],
        );
    }
}
