//! The model registry against what Pi 1.5.2's model runtime made of the same models.json,
//! auth.json and environment (fixtures from `scripts/gen-registry-fixtures.mjs`): load errors,
//! the resulting models, availability, and the key and headers of each probed request. The
//! files are read and the `!command` values run by pi-effects, as in the binary. The registry
//! is built over the catalog the binary ships, Pi 1.5.2's, which the fixtures were made over.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Tests read fixtures and run servers; the providers' IO ban applies to the library, not to its
// tests.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::fs;
use std::path::Path;
use std::sync::Arc;

use pi_core::validate::js_equal;
use pi_effects::host::SystemHost;
use pi_effects::registry_files::{load_auth, load_models};
use pi_providers::catalog::Catalog;
use pi_providers::registry::{request_auth_json, AuthStorage, Environment, ModelRegistry};
use serde_json::Value;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/registry");

/// Far enough from every fixture token's expiry (2100-01-01) to be stable.
const NOW_MS: i64 = 1_800_000_000_000;

/// The catalog the fixtures were made over: Pi 1.5.2's, the one the binary ships.
fn builtin() -> &'static Catalog {
    pi_providers::catalog::builtin()
}

fn load(name: &str) -> Vec<Value> {
    let text = fs::read_to_string(Path::new(FIXTURES).join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn strings(value: Option<&Value>) -> Vec<(String, String)> {
    value
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
        .collect()
}

/// Compares one case; returns what differs.
fn run_case(case: &Value, expected: &Value, dir: &Path) -> Vec<String> {
    let name = case["name"].as_str().unwrap();
    let path = dir.join(format!("{name}.models.json"));
    if let Some(text) = case["modelsJson"].as_str() {
        fs::write(&path, text).unwrap();
    }
    let registry = load_models(builtin(), &path);
    let mut vars = strings(case.get("env"));
    vars.extend(std::env::var("PATH").map(|p| ("PATH".to_owned(), p)));
    let env = Environment::from_vars(vars).with_host(Arc::new(SystemHost));
    let auth_json = case.get("auth").map_or(String::new(), Value::to_string);
    let (mut auth, auth_error) = AuthStorage::from_json(&auth_json);
    assert!(auth_error.is_none(), "{name}: auth.json");
    for (provider, key) in strings(case.get("runtimeKeys")) {
        auth.set_runtime_api_key(&provider, &key);
    }

    let mut diffs = Vec::new();
    let error = registry.error().map(|e| {
        e.to_string()
            .replace(&path.display().to_string(), "<models.json>")
    });
    let want_error = expected["error"].as_str().map(str::to_owned);
    let error_matches = match (&error, &want_error) {
        // JSON syntax errors are worded by the JavaScript engine; only the frame is compared.
        (Some(ours), Some(theirs)) if theirs.starts_with("Failed to parse models.json: ") => {
            ours.starts_with("Failed to parse models.json: ")
                && ours.ends_with("\n\nFile: <models.json>")
        }
        _ => error == want_error,
    };
    if !error_matches {
        diffs.push(format!(
            "{name}: error\n  ours:   {error:?}\n  theirs: {want_error:?}"
        ));
    }

    let listed: Vec<&str> = case["listProviders"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let ours: Vec<Value> = registry
        .all()
        .iter()
        .filter(|m| listed.contains(&m.provider.as_str()))
        .map(|m| serde_json::to_value(m).unwrap())
        .collect();
    let theirs = expected["models"].as_array().unwrap();
    if ours.len() != theirs.len() {
        diffs.push(format!(
            "{name}: {} models, original has {}",
            ours.len(),
            theirs.len()
        ));
    }
    for (o, t) in ours.iter().zip(theirs) {
        if !js_equal(o, t) {
            diffs.push(format!("{name}: model\n  ours:   {o}\n  theirs: {t}"));
        }
    }

    let probes = case["probe"].as_array().cloned().unwrap_or_default();
    for (probe, want) in probes.iter().zip(expected["requests"].as_array().unwrap()) {
        let (provider, id) = (probe[0].as_str().unwrap(), probe[1].as_str().unwrap());
        let Some(model) = registry.find(provider, id) else {
            if want["found"] != Value::Bool(false) {
                diffs.push(format!("{name}: {provider}/{id} not found"));
            }
            continue;
        };
        let available = registry.has_configured_auth(model, &auth, &env);
        if Value::Bool(available) != want["available"] {
            diffs.push(format!("{name}: {provider}/{id} available = {available}"));
        }
        let got = request_auth_json(&registry.request_auth(model, &auth, &env, NOW_MS));
        if got != want["auth"] {
            diffs.push(format!(
                "{name}: {provider}/{id} auth\n  ours:   {got}\n  theirs: {}",
                want["auth"]
            ));
        }
    }
    diffs
}

#[test]
fn registry_matches_the_original_on_every_case() {
    let cases = load("cases.json");
    let expected = load("expected.json");
    assert_eq!(cases.len(), expected.len());
    let dir = tempfile::tempdir().unwrap();
    let diffs: Vec<String> = cases
        .iter()
        .zip(&expected)
        .flat_map(|(case, want)| run_case(case, want, dir.path()))
        .collect();
    let (known, unexpected): (Vec<_>, Vec<_>) = diffs
        .iter()
        .partition(|d| KNOWN_DIFFERENCES.iter().any(|k| d.starts_with(k)));
    assert!(unexpected.is_empty(), "{}", diffs.join("\n"));
    assert_eq!(
        known.len(),
        KNOWN_DIFFERENCES.len(),
        "a known difference is gone; remove it from the list: {known:?}"
    );
}

/// Where ours still differs from 1.5.2, each the start of its difference: the schema is
/// 0.73.1's (1.5.2 checks `compat` before `authHeader` and words an unknown input modality
/// "must be equal to one of the allowed values"). Each must still differ, so the list cannot
/// outlive its differences.
const KNOWN_DIFFERENCES: [&str; 1] = ["schema-many-errors: error\n"];

#[test]
fn unreadable_auth_json_means_no_stored_credentials_and_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("auth.json");
    fs::write(&path, "{\"openai\": {\"type\": \"api_key\", \"key\": ").unwrap();
    let (auth, error) = load_auth(&path);
    assert!(error.is_some());
    let env = Environment::from_vars([("OPENAI_API_KEY", "from-env")]);
    assert_eq!(
        auth.api_key("openai", &env, NOW_MS).unwrap().as_deref(),
        Some("from-env")
    );
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        "{\"openai\": {\"type\": \"api_key\", \"key\": ",
        "a broken auth.json is left as it was"
    );
    let (_, missing) = load_auth(&dir.path().join("absent.json"));
    assert!(missing.is_none());
}

#[test]
fn an_expired_oauth_token_is_reported_not_sent() {
    let (auth, _) = AuthStorage::from_json(
        r#"{"anthropic": {"type": "oauth", "access": "old", "refresh": "r", "expires": 1000}}"#,
    );
    let registry = ModelRegistry::builtin(builtin());
    let model = &builtin().get_models("anthropic")[0];
    let model = registry.find("anthropic", &model.id).unwrap();
    let env = Environment::from_vars([("ANTHROPIC_API_KEY", "unused")]);
    let result = registry.request_auth(model, &auth, &env, NOW_MS);
    assert_eq!(
        request_auth_json(&result)["error"],
        "OAuth token for \"anthropic\" expired; log in again to refresh it"
    );
    assert_eq!(
        request_auth_json(&registry.request_auth(model, &auth, &env, 999))["apiKey"],
        "old"
    );
}

/// A key command that leaves a background process holding its output open does not hold up
/// the caller beyond the command's time limit; like the original (which waits for the output to
/// close, then times out), it yields no key.
#[test]
fn a_lingering_background_process_does_not_block_key_resolution() {
    let mut vars: Vec<(String, String)> = Vec::new();
    vars.extend(std::env::var("PATH").map(|p| ("PATH".to_owned(), p)));
    let env = Environment::from_vars(vars).with_host(Arc::new(SystemHost));
    let started = std::time::Instant::now();
    let key = env.resolve("!echo key-now; sleep 30 &");
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
    assert!(
        key.is_none() || key.as_deref() == Some("key-now"),
        "{key:?}"
    );
}

/// Every credential a run could send is found, whatever its source (for a recording to replace),
/// and values that are not credentials are left alone.
#[test]
fn every_source_of_a_credential_is_found() {
    let text = r#"{"providers": {"gw": {
        "baseUrl": "http://127.0.0.1:1/v1", "api": "openai-completions",
        "apiKey": "$GW_KEY_VAR",
        "headers": {"X-Portkey-Api-Key": "${PORTKEY_VALUE}", "cf-aig-authorization": "!printf cf-command-secret",
                    "X-Title": "my-app-title", "X-Trace": "trace:$TRACE_VAR"},
        "models": [{"id": "m", "headers": {"x-model-auth": "model-header-secret"}}]}}}"#;
    let registry = ModelRegistry::from_text(builtin(), text, Path::new("models.json"));
    assert!(registry.error().is_none(), "{:?}", registry.error());
    let (mut auth, _) = AuthStorage::from_json(
        r#"{"groq": {"type": "api_key", "key": "groq-stored-secret"},
            "anthropic": {"type": "oauth", "access": "oauth-access-secret", "refresh": "oauth-refresh-secret", "expires": 0}}"#,
    );
    auth.set_runtime_api_key("openai", "cli-key-secret");
    let env = Environment::from_vars([
        ("GW_KEY_VAR", "gateway-key-secret"),
        ("PORTKEY_VALUE", "portkey-value-secret"),
        ("TRACE_VAR", "trace-from-variable"),
        ("OPENAI_API_KEY", "openai-env-secret"),
        ("AUTH_MODE", "none"),
        ("HOME", "/home/someone/with/a/long/path"),
        ("GIT_AUTHOR_NAME", "Somebody Longname"),
        ("SSH_AUTH_SOCK", "/tmp/ssh-agent/agent.1234"),
        ("KEYBOARD_LAYOUT", "dvorak-programmer"),
        ("PGPASSWORD", "postgres-password-secret"),
    ])
    .with_host(Arc::new(SystemHost));
    let values: Vec<String> = registry
        .credentials(&auth, &env)
        .into_iter()
        .map(|c| c.value)
        .collect();
    for expected in [
        "cli-key-secret",
        "groq-stored-secret",
        "oauth-access-secret",
        "oauth-refresh-secret",
        "openai-env-secret",
        "gateway-key-secret",
        "portkey-value-secret",
        "cf-command-secret",
        "trace-from-variable",
        "model-header-secret",
        "postgres-password-secret",
    ] {
        assert!(
            values.iter().any(|v| v == expected),
            "{expected} missing from {values:?}"
        );
    }
    for not_secret in [
        "my-app-title",
        "none",
        "/home/someone/with/a/long/path",
        "Somebody Longname",
        "/tmp/ssh-agent/agent.1234",
        "dvorak-programmer",
    ] {
        assert!(
            !values.iter().any(|v| v == not_secret),
            "{not_secret} taken as a credential"
        );
    }
}

/// Pi 1.5.2's `promptCache` (which cache warming times its warms by): a custom model keeps its
/// own, and a model override merges its keys into the built-in model's.
#[test]
fn prompt_cache_lifetimes_are_kept_and_overridden() {
    let catalog = builtin();
    let builtin_id = catalog.get_models("anthropic")[0].id.clone();
    let text = serde_json::json!({"providers": {
        "local": {"baseUrl": "http://127.0.0.1:1/v1", "api": "openai-completions", "apiKey": "k",
                  "models": [{"id": "cached", "promptCache": {"short": 12}}]},
        "anthropic": {"modelOverrides": {builtin_id.clone(): {"promptCache": {"long": 7200}}}}
    }})
    .to_string();
    let registry = ModelRegistry::from_text(catalog, &text, Path::new("models.json"));
    let custom = registry.find("local", "cached").unwrap();
    assert_eq!(
        custom.extra.get("promptCache"),
        Some(&serde_json::json!({"short": 12}))
    );
    let overridden = registry.find("anthropic", &builtin_id).unwrap();
    let mut merged = catalog.get_models("anthropic")[0]
        .extra
        .get("promptCache")
        .and_then(serde_json::Value::as_object)
        .cloned()
        .unwrap_or_default();
    merged.insert("long".into(), 7200.into());
    assert_eq!(
        overridden.extra.get("promptCache"),
        Some(&serde_json::Value::Object(merged))
    );
}
