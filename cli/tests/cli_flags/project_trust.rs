//! Project trust as Pi 1.5.2 resolves it without a terminal to ask in (checked against its
//! `core/project-trust.js`, `core/trust-manager.js` and the kit's project_trust_152 trace): a
//! project's `.pi/settings.json` is ignored unless the run is approved (`--approve`/`-a`, undone
//! by a later `--no-approve`/`-na`), the agent directory's `trust.json` trusts it (or a parent),
//! or the global `defaultProjectTrust` is `always`; `--no-mcp` and `--tui-mode` are accepted,
//! a missing or unknown TUI mode refused in Pi's words.

use crate::common::{Env, MockLlm};
use serde_json::json;

/// A project whose settings choose mock-reasoner, under global settings choosing mock-model
/// (plus `global`'s keys).
fn project(mock: &MockLlm, global: serde_json::Value) -> Env {
    let env = Env::new(mock);
    let mut settings = json!({"defaultProvider": "mock", "defaultModel": "mock-model"});
    for (key, value) in global.as_object().unwrap() {
        settings[key] = value.clone();
    }
    env.write_agent("settings.json", &settings.to_string());
    std::fs::create_dir_all(env.cwd().join(".pi")).unwrap();
    env.write(
        ".pi/settings.json",
        br#"{"defaultProvider": "mock", "defaultModel": "mock-reasoner", "defaultProjectTrust": "always"}"#,
    );
    env
}

/// The model the run's request asked for, after checking that it succeeded.
fn model_of(env: &Env, mock: &MockLlm, flags: &[&str]) -> String {
    let mut args = flags.to_vec();
    args.extend(["--mode", "json", "-p", "Which model?"]);
    let out = env.run(&args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let requests = mock.requests();
    requests.last().unwrap()["model"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[test]
fn an_untrusted_projects_settings_are_ignored_unless_the_run_is_approved() {
    let mock = MockLlm::start(&json!([
        {"text": ["1"]}, {"text": ["2"]}, {"text": ["3"]}, {"text": ["4"]}, {"text": ["5"]}
    ]));
    let env = project(&mock, json!({}));
    // The project's own `defaultProjectTrust` does not let it trust itself.
    assert_eq!(model_of(&env, &mock, &[]), "mock-model");
    assert_eq!(model_of(&env, &mock, &["--approve"]), "mock-reasoner");
    assert_eq!(model_of(&env, &mock, &["-a"]), "mock-reasoner");
    assert_eq!(model_of(&env, &mock, &["-a", "-na"]), "mock-model");
    assert_eq!(
        model_of(
            &env,
            &mock,
            &["--no-mcp", "--tui-mode", "regular", "--approve"]
        ),
        "mock-reasoner"
    );
}

#[test]
fn a_remembered_decision_or_the_global_default_trusts_the_project() {
    let mock = MockLlm::start(&json!([
        {"text": ["1"]}, {"text": ["2"]}, {"text": ["3"]}, {"text": ["4"]}
    ]));
    let env = project(&mock, json!({}));
    let parent = std::fs::canonicalize(env.cwd().parent().unwrap()).unwrap();
    env.write_agent(
        "trust.json",
        &json!({ parent.display().to_string(): true }).to_string(),
    );
    assert_eq!(
        model_of(&env, &mock, &[]),
        "mock-reasoner",
        "a parent's decision"
    );
    assert_eq!(model_of(&env, &mock, &["--no-approve"]), "mock-model");
    let env = project(&mock, json!({"defaultProjectTrust": "always"}));
    assert_eq!(model_of(&env, &mock, &[]), "mock-reasoner");
    let cwd = std::fs::canonicalize(env.cwd()).unwrap();
    env.write_agent(
        "trust.json",
        &json!({ cwd.display().to_string(): false }).to_string(),
    );
    assert_eq!(
        model_of(&env, &mock, &[]),
        "mock-model",
        "remembered before the default"
    );
}

#[test]
fn a_bad_trust_store_or_tui_mode_is_refused_before_any_request() {
    let mock = MockLlm::start(&json!([{"text": ["never"]}]));
    let env = project(&mock, json!({}));
    let run = |flags: &[&str]| {
        let mut args = flags.to_vec();
        args.extend(["--mode", "json", "-p", "x"]);
        let out = env.run(&args);
        (out.code, out.stdout, out.stderr)
    };
    let refused = |text: &str| (1, String::new(), format!("Error: {text}\n"));
    assert_eq!(
        run(&["--tui-mode", "sideways"]),
        refused("Invalid TUI mode \"sideways\". Valid values: regular, fullscreen")
    );
    assert_eq!(
        run(&["--tui-mode"]),
        refused("--tui-mode requires regular or fullscreen")
    );
    env.write_agent("trust.json", r#"{"x": 1}"#);
    let store = env.path("agent").join("trust.json");
    assert_eq!(
        run(&[]),
        refused(&format!(
            "Invalid trust store {}: value for \"x\" must be true, false, or null",
            store.display()
        ))
    );
    assert!(mock.requests().is_empty());
}
