//! An RPC run whose client replaces the session: keys in the environment (a header's
//! `${NAME}`) and in auth.json reach no file the run wrote, the `replaced` line and the
//! second session's calls included, and the cassette still checks.

use super::super::*;
use super::{nowhere_but_planted, planted_by_the_test, replays_and_checks};
use crate::sessions::{Driver, AGENT_END};

const AUTH_KEY: &str = "sk-planted-auth-replaced-0123456789";
const ENV_SECRET: &str = "planted-env-replaced-0123456789";

#[test]
fn keys_reach_no_file_of_an_rpc_run_that_replaced_its_session() {
    let ws = workspace(json!({"script": [{"text": ["One."]}, {"text": ["Two."]}]}));
    let agent = ws.root().join("agent");
    let mut models = models_json(ws.port());
    let provider = &mut models["providers"]["mock"];
    provider["headers"] = json!({"x-api-key": "hdr-${PLANTED_HEADER}"});
    // auth.json's key is the one sent (as in the single-session test).
    provider["apiKey"] = json!("unused-placeholder-key");
    std::fs::write(agent.join("models.json"), models.to_string()).unwrap();
    let auth = json!({"mock": {"type": "api_key", "key": AUTH_KEY}});
    std::fs::write(agent.join("auth.json"), auth.to_string()).unwrap();

    let cassette = ws.root().join("cwd").join("replaced.jsonl");
    let args = words(&[
        "--mode",
        "rpc",
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--record",
        cassette.to_str().unwrap(),
    ]);
    let child = ws
        .command(pi().as_ref(), &args)
        .env("PLANTED_HEADER", ENV_SECRET)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut run = Driver::new(child);
    run.ask(
        json!({"id": "p1", "type": "prompt", "message": "one"}),
        AGENT_END,
    );
    run.ask(json!({"id": "ns", "type": "new_session"}), r#""id":"ns""#);
    run.ask(
        json!({"id": "p2", "type": "prompt", "message": "two"}),
        AGENT_END,
    );
    let (status, seen, stderr) = run.close();
    assert_eq!(status.code(), Some(0), "{stderr}");

    // Both sessions' requests carried the keys (so the test plants them where they are used).
    let requests = std::fs::read_to_string(ws.root().join("requests.jsonl")).unwrap();
    let sent: Vec<Value> = requests
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v.get("event").is_none())
        .collect();
    assert_eq!(sent.len(), 2, "{requests}");
    for request in &sent {
        assert_eq!(
            request["headers"]["authorization"],
            format!("Bearer {AUTH_KEY}")
        );
        assert_eq!(request["headers"]["x-api-key"], format!("hdr-{ENV_SECRET}"));
    }
    assert!(!seen.contains(AUTH_KEY) && !seen.contains(ENV_SECRET));
    assert!(!stderr.contains(AUTH_KEY) && !stderr.contains(ENV_SECRET));
    // The second session is recorded: its configuration (the header it resolved) and its call.
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(
        text.contains(r#"{"type":"replaced","reason":"new""#),
        "{text}"
    );
    assert!(text.contains(r#"\"message\":\"two\""#), "{text}");
    for key in [AUTH_KEY, ENV_SECRET] {
        nowhere_but_planted(ws.root(), key, planted_by_the_test, "replaced session");
    }
    replays_and_checks(&cassette);
}
