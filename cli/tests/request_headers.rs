//! The headers that settings and variables add to model requests, beyond those the conformance
//! kit compares: Pi's attribution headers for OpenRouter and Cloudflare (on unless
//! `PI_TELEMETRY` or `enableInstallTelemetry` turns them off), as the original 0.73.1 sent them
//! to the mock LLM: only on the agent's turns (a compaction's summary request has none), and
//! under the provider's own headers.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{Env, MockLlm};
use serde_json::{json, Value};

/// The headers of every request the mock received, in order.
fn request_headers(mock: &MockLlm) -> Vec<Value> {
    std::fs::read_to_string(&mock.log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v.get("event").is_none())
        .map(|v| v["headers"].clone())
        .collect()
}

/// The attribution headers of one request, `None` where absent.
fn attribution(headers: &Value) -> [Option<&str>; 4] {
    [
        "http-referer",
        "x-openrouter-title",
        "x-openrouter-categories",
        "user-agent",
    ]
    .map(|name| headers.get(name).and_then(Value::as_str))
}

fn setup(mock: &MockLlm) -> Env {
    let env = Env::new(mock);
    let port = mock.port;
    let models = json!({"providers": {
        "openrouter": {"baseUrl": format!("http://127.0.0.1:{port}/v1"), "apiKey": "or-key"},
        "cloudflare-workers-ai": {"baseUrl": format!("http://127.0.0.1:{port}/v1"), "apiKey": "cf-key"},
        "custom": {"baseUrl": format!("http://127.0.0.1:{port}/openrouter.ai/v1"), "api": "openai-completions",
            "apiKey": "c-key", "headers": {"X-OpenRouter-Title": "mine"},
            "models": [{"id": "m1", "contextWindow": 1000, "maxTokens": 100}]}}});
    env.write_agent("models.json", &models.to_string());
    env
}

fn run(env: &Env, telemetry: Option<&str>, args: &[&str]) {
    let mut command = env.command(args);
    command.env_remove("PI_TELEMETRY");
    if let Some(value) = telemetry {
        command.env("PI_TELEMETRY", value);
    }
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn openrouter_and_cloudflare_requests_carry_pis_attribution_unless_telemetry_is_off() {
    let script: Vec<Value> = (0..9)
        .map(|i| json!({"text": [format!("answer {i}")]}))
        .collect();
    let mock = MockLlm::start(&Value::Array(script));
    let env = setup(&mock);
    let openrouter = [
        "--no-session",
        "--provider",
        "openrouter",
        "--model",
        "openrouter/auto",
        "-p",
        "hi",
    ];
    run(&env, None, &openrouter);
    run(&env, Some("0"), &openrouter);
    run(&env, Some("yes"), &openrouter);
    env.write_agent("settings.json", r#"{"enableInstallTelemetry": false}"#);
    run(&env, None, &openrouter);
    run(&env, Some("TRUE"), &openrouter);
    std::fs::remove_file(env.path("agent").join("settings.json")).unwrap();
    run(
        &env,
        None,
        &[
            "--no-session",
            "--provider",
            "cloudflare-workers-ai",
            "--model",
            "@cf/meta/llama-4-scout-17b-16e-instruct",
            "-p",
            "hi",
        ],
    );
    // A base URL naming openrouter.ai is enough; the provider's own header wins, and the
    // compaction after the second prompt (the context window is tiny; Pi 1.5.2 has nothing to
    // summarise after the first, whose exchange is kept) sends its summary without them.
    env.write_agent(
        "settings.json",
        r#"{"compaction": {"keepRecentTokens": 3}}"#,
    );
    run(
        &env,
        None,
        &[
            "--no-session",
            "--provider",
            "custom",
            "--model",
            "m1",
            "-p",
            "hi",
            "again",
        ],
    );

    let sent = request_headers(&mock);
    let pi = [Some("https://pi.dev"), Some("pi"), Some("cli-agent"), None];
    let none = [None; 4];
    assert_eq!(sent.len(), 9, "{sent:#?}");
    assert_eq!(attribution(&sent[0]), pi);
    assert_eq!(attribution(&sent[1]), none);
    assert_eq!(attribution(&sent[2]), pi);
    assert_eq!(attribution(&sent[3]), none);
    assert_eq!(attribution(&sent[4]), pi);
    assert_eq!(
        attribution(&sent[5]),
        [None, None, None, Some("pi-coding-agent")]
    );
    assert_eq!(
        attribution(&sent[6]),
        [
            Some("https://pi.dev"),
            Some("mine"),
            Some("cli-agent"),
            None
        ]
    );
    assert_eq!(attribution(&sent[7]), attribution(&sent[6]));
    assert_eq!(attribution(&sent[8]), [None, Some("mine"), None, None]);
    assert_eq!(sent[6]["authorization"], "Bearer c-key");
}

/// A `!command` key or header is run once for the life of the process, as Pi 1.5.2 caches
/// it: a run of two requests asks the password manager once, and both requests carry what it
/// printed.
#[test]
fn a_command_key_is_run_once_however_many_requests_carry_it() {
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "ls", "arguments": "{}"}]},
        {"text": ["Listed."]},
    ]));
    let env = Env::new(&mock);
    let counter = env.path("asked");
    let command = format!("!echo once >> '{}'; echo vault-key", counter.display());
    let models = json!({"providers": {"vault": {
        "baseUrl": format!("http://127.0.0.1:{}/v1", mock.port), "api": "openai-completions",
        "apiKey": command, "headers": {"X-Vault": command},
        "models": [{"id": "m1", "contextWindow": 100000, "maxTokens": 100}]}}});
    env.write_agent("models.json", &models.to_string());
    run(
        &env,
        None,
        &[
            "--no-session",
            "--provider",
            "vault",
            "--model",
            "m1",
            "-p",
            "list",
        ],
    );
    let headers = request_headers(&mock);
    assert_eq!(headers.len(), 2);
    for sent in &headers {
        assert_eq!(sent["authorization"], "Bearer vault-key", "{sent}");
        assert_eq!(sent["x-vault"], "vault-key", "{sent}");
    }
    assert_eq!(std::fs::read_to_string(&counter).unwrap(), "once\n");
}
