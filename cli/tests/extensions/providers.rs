//! Providers an extension registers (`pi.registerProvider`): a model of theirs is chosen with
//! `--provider/--model`, its requests go over real HTTP with the registered key and headers and
//! are recorded, the replay needs no Node, and the key written in the extension reaches no file
//! the run wrote. A provider whose requests stream through the extension's own JavaScript is
//! refused when chosen, naming the extension and the provider.

use serde_json::{json, Value};

use crate::common::{Env, MockLlm};
use crate::support::{assert_replays_without_node, fixture, node_path, run, with_host};

/// The key `gateway.ts` writes literally in its registration.
const PLANTED: &str = "gw-planted-literal-0123456789abcdef";

/// The headers of each request the mock received.
fn request_headers(mock: &MockLlm) -> Vec<Value> {
    std::fs::read_to_string(&mock.log)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("event").is_none())
        .map(|v| v["headers"].clone())
        .collect()
}

#[test]
fn a_registered_providers_model_is_recorded_over_http_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"text": ["Hello from the gateway."]},
        {"text": [format!("The key is {PLANTED}.")]},
    ]));
    let env = Env::new(&mock);
    let cassette = env.path("gateway.jsonl");
    let extension = fixture("gateway.ts");
    let recording = |cassette: &std::path::Path, prompt: &str| {
        let mut command = env.command(&[
            "--mode",
            "json",
            "--record",
            cassette.to_str().unwrap(),
            "--provider",
            "gateway",
            "--model",
            "gw-model",
            "-e",
            extension.to_str().unwrap(),
            "-p",
            prompt,
        ]);
        with_host(&mut command, &path);
        run(&mut command)
    };
    let (code, recorded, stderr) = recording(&cassette, "Say hello.");
    assert_eq!(code, 0, "{stderr}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 1, "{recorded}");
    assert_eq!(requests[0]["model"], "gw-model");
    let headers = &request_headers(&mock)[0];
    assert_eq!(headers["authorization"], format!("Bearer {PLANTED}"));
    assert_eq!(headers["x-gateway"], "e2e");
    assert!(
        recorded.contains("\"provider\":\"gateway\""),
        "the answer is not the gateway's: {recorded}"
    );

    // The key the extension wrote reaches no file the run wrote, nor its output.
    let mut leaks: Vec<String> = pi_testkit::files_under(&env.path(""))
        .into_iter()
        .filter(|p| String::from_utf8_lossy(&std::fs::read(p).unwrap()).contains(PLANTED))
        .map(|p| p.display().to_string())
        .collect();
    for (name, text) in [("stdout", &recorded), ("stderr", &stderr)] {
        if text.contains(PLANTED) {
            leaks.push(name.to_owned());
        }
    }
    assert!(leaks.is_empty(), "the planted key reached {leaks:?}");
    let cassette_text = std::fs::read_to_string(&cassette).unwrap();
    assert!(
        cassette_text.contains("<<secret-"),
        "the key was not scrubbed"
    );
    assert!(
        cassette_text.contains("x-gateway"),
        "the header was not recorded"
    );

    assert_replays_without_node(&env, &cassette, &recorded);
    assert_eq!(mock.requests().len(), 1, "the replay sent a request");

    // The prompt names the key (written before any request shows it) and the model says it:
    // only Pi's own session file and printed events hold it (as Pi writes them); the cassette
    // scrubs it and still checks.
    let said = env.path("said.jsonl");
    let (code, printed, stderr) = recording(&said, &format!("Is {PLANTED} the key?"));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        printed.contains(PLANTED),
        "the model did not say it: {printed}"
    );
    let leaks: Vec<String> = pi_testkit::files_under(&env.path(""))
        .into_iter()
        .filter(|p| !p.to_string_lossy().contains("/sessions/"))
        .filter(|p| String::from_utf8_lossy(&std::fs::read(p).unwrap()).contains(PLANTED))
        .map(|p| p.display().to_string())
        .collect();
    assert!(leaks.is_empty(), "the key the model said reached {leaks:?}");
    let (code, _, stderr) = run(std::process::Command::new(env!("CARGO_BIN_EXE_pi"))
        .args(["replay", "--check"])
        .arg(&said)
        .env("PATH", env.path("no-node"))
        .env("HOME", env.path("home")));
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn a_provider_streamed_by_its_extension_is_refused_naming_both() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["unreached"]}]));
    let env = Env::new(&mock);
    let extension = fixture("gateway.ts");
    for (provider, model, what) in [
        ("scripted", "scripted-model", "a custom streamSimple"),
        ("native", "native-model", "a provider object"),
    ] {
        let mut command = env.command(&[
            "--provider",
            provider,
            "--model",
            model,
            "-e",
            extension.to_str().unwrap(),
            "-p",
            "Say hello.",
        ]);
        with_host(&mut command, &path);
        let (code, stdout, stderr) = run(&mut command);
        assert_eq!(code, 1, "{stdout}{stderr}");
        let expected = format!(
            "Error: Extension \"{}\" registered provider \"{provider}\" with {what}, which runs in JavaScript",
            extension.display()
        );
        assert!(stderr.contains(&expected), "{stderr}");
        assert_eq!(
            stderr.matches(what).count(),
            1,
            "said more than once: {stderr}"
        );
    }
    assert!(mock.requests().is_empty(), "a request was sent");
}

#[test]
fn the_registered_models_are_listed() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    let extension = fixture("gateway.ts");
    let mut command = env.command(&["-e", extension.to_str().unwrap(), "--list-models", "gw"]);
    with_host(&mut command, &path);
    let (code, stdout, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("gateway") && l.contains("gw-model")),
        "{stdout}"
    );
}
