//! The credentials of this machine (the user's agent dir and the environment), for the files
//! written outside a recording that can hold them: imported cassettes and eval reports. Both
//! go through the recorder's redaction, so a key reads the same placeholder-shaped way
//! everywhere.

use pi_cassettes::redact::{Rules, Secrets, MIN_SCRUBBED_LEN};
use pi_effects::host::process_environment;
use pi_effects::registry_files::{load_auth, load_models};
use pi_effects::session::agent_dir;
use pi_providers::catalog;
use serde_json::Value;

/// Every credential this machine's user could send (see `ModelRegistry::credentials`), the
/// agent dir's `mcp.json` hands its servers and its `settings.json` keeps, with where it came
/// from.
pub fn machine_credentials() -> Vec<(String, String)> {
    let dir = agent_dir();
    let registry = load_models(catalog::builtin(), &dir.join("models.json"));
    let (auth, _) = load_auth(&dir.join("auth.json"));
    // The agent dir's files only: no project is trusted here, so none is read.
    let here = std::path::Path::new(".");
    pi_mcp::machine_credentials(
        &registry,
        &auth,
        &process_environment(),
        &pi_mcp::load_mcp_config(&dir, here, false),
        crate::settings::Settings::load(&dir, here, false).credentials(),
    )
}

/// The user's own redaction rules (settings `redact`, global then the current project's: a
/// project's rules only add redactions, so they are read whether or not it is trusted).
pub fn machine_rules() -> Result<Rules, String> {
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current directory: {e}"))?;
    crate::settings::Settings::load(&agent_dir(), &cwd, true).redact_rules()
}

/// Redacts `credentials`, and what `rules`' patterns find, from every string in `value` (keys
/// of objects too); whether any was there.
pub fn redact_json(value: &mut Value, credentials: &[(String, String)], rules: &Rules) -> bool {
    let mut secrets = Secrets::of(credentials);
    let found = rules.replace_in_value(value, &mut |m, _| secrets.placeholder_for(m).0);
    redact_strings(value, &secrets) | found
}

fn redact_strings(value: &mut Value, secrets: &Secrets) -> bool {
    match value {
        Value::String(text) => {
            let redacted = secrets.replace(text, MIN_SCRUBBED_LEN);
            let changed = redacted != *text;
            *text = redacted;
            changed
        }
        Value::Array(items) => {
            let mut changed = false;
            for item in items {
                changed |= redact_strings(item, secrets);
            }
            changed
        }
        Value::Object(map) => {
            let mut changed = false;
            for (key, mut item) in std::mem::take(map) {
                changed |= redact_strings(&mut item, secrets);
                let redacted = secrets.replace(&key, MIN_SCRUBBED_LEN);
                changed |= redacted != key;
                map.insert(redacted, item);
            }
            changed
        }
        _ => false,
    }
}
