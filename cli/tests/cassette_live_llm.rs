//! The live round trip: a run of the real binary against the real local LLM is recorded, then
//! replayed with nothing listening (the replay has no transport at all), and the replay prints
//! the recorded run's events and writes its session file byte for byte. Skipped without
//! `LLM_BASE_URL`; CI requires it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;

use serde_json::json;

fn session_file(dir: &Path) -> Vec<u8> {
    let files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(files.len(), 1, "one session file in {}", dir.display());
    std::fs::read(&files[0]).unwrap()
}

#[test]
fn a_run_recorded_from_the_local_llm_replays_byte_for_byte_offline() {
    let Some(base_url) = pi_testkit::live_llm_base_url() else {
        return;
    };
    let root = tempfile::tempdir().unwrap();
    let (home, agent, cwd, sessions) = (
        root.path().join("home"),
        root.path().join("agent"),
        root.path().join("cwd"),
        root.path().join("sessions"),
    );
    for dir in [&home, &agent, &cwd] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let models = json!({"providers": {"local": {
        "baseUrl": base_url, "api": "openai-completions", "apiKey": "local",
        "compat": {"maxTokensField": "max_tokens"},
        "models": [{"id": "smollm2-135m-instruct", "name": "SmolLM2 135M",
                    "contextWindow": pi_testkit::LIVE_LLM_CONTEXT_WINDOW, "maxTokens": 48}]}}});
    std::fs::write(agent.join("models.json"), models.to_string()).unwrap();
    let cassette = root.path().join("live.jsonl");
    let recorded = Command::new(env!("CARGO_BIN_EXE_pi"))
        .args(["--mode", "json", "--no-tools", "--provider", "local"])
        .args(["--model", "smollm2-135m-instruct", "--session-dir"])
        .arg(&sessions)
        .arg("--record")
        .arg(&cassette)
        .args(["-p", "Say hello in five words."])
        .current_dir(&cwd)
        .env("HOME", &home)
        .env("PI_CODING_AGENT_DIR", &agent)
        .env("PI_OFFLINE", "1")
        .output()
        .unwrap();
    assert!(
        recorded.status.success(),
        "{}",
        String::from_utf8_lossy(&recorded.stderr)
    );

    let replayed_sessions = root.path().join("replayed");
    let replay = |dir: &Path| {
        Command::new(env!("CARGO_BIN_EXE_pi"))
            .args(["replay", "--mode", "json", "--session-dir"])
            .arg(dir)
            .arg(&cassette)
            // Nothing the replay could reach: no agent dir, no models, no network settings.
            .env("HOME", root.path().join("nowhere"))
            .env("PI_CODING_AGENT_DIR", root.path().join("nowhere"))
            .env("HTTP_PROXY", "http://127.0.0.1:9")
            .env("HTTPS_PROXY", "http://127.0.0.1:9")
            .output()
            .unwrap()
    };
    let first = replay(&replayed_sessions);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&first.stdout),
        String::from_utf8_lossy(&recorded.stdout),
        "the replay prints the recorded events"
    );
    assert_eq!(session_file(&replayed_sessions), session_file(&sessions));

    let again = root.path().join("again");
    let second = replay(&again);
    assert_eq!(second.stdout, first.stdout, "replaying twice is identical");
    assert_eq!(session_file(&again), session_file(&replayed_sessions));
}
