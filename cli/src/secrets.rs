//! The credentials of this machine (the user's agent dir and the environment), for the files
//! written outside a recording that can hold them: imported cassettes and eval reports. Both
//! go through the recorder's redaction, so a key reads the same placeholder-shaped way
//! everywhere.

use pi_cassettes::redact::{Secrets, MIN_SCRUBBED_LEN};
use pi_effects::session::agent_dir;
use pi_providers::catalog;
use pi_providers::registry::{AuthStorage, Environment, ModelRegistry};
use serde_json::Value;

/// Every credential this machine's user could send (see `ModelRegistry::credentials`), with
/// where it came from.
pub fn machine_credentials() -> Vec<(String, String)> {
    let dir = agent_dir();
    let registry = ModelRegistry::load(catalog::builtin(), &dir.join("models.json"));
    let (auth, _) = AuthStorage::load(&dir.join("auth.json"));
    registry
        .credentials(&auth, &Environment::from_process())
        .into_iter()
        .map(|c| (c.value, c.source))
        .collect()
}

/// `value` with every string in it (keys of objects too) redacted of `credentials`.
pub fn redact_json(value: &mut Value, credentials: &[(String, String)]) {
    let mut secrets = Secrets::default();
    for (secret, _) in credentials {
        if secrets.placeholder(secret).is_none() {
            secrets.add(secret);
        }
    }
    redact_strings(value, &secrets);
}

fn redact_strings(value: &mut Value, secrets: &Secrets) {
    match value {
        Value::String(text) => {
            let redacted = secrets.replace(text, MIN_SCRUBBED_LEN);
            if redacted != *text {
                *text = redacted;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact_strings(v, secrets)),
        Value::Object(map) => {
            let entries = std::mem::take(map);
            for (key, mut item) in entries {
                redact_strings(&mut item, secrets);
                map.insert(secrets.replace(&key, MIN_SCRUBBED_LEN), item);
            }
        }
        _ => {}
    }
}
