//! The provider hooks through the binary: `before_provider_headers` adds a header and
//! `before_provider_request` changes each body, what goes over HTTP is what they decided, the
//! cassette records it, a replay with no Node sends the same, and a recording whose decision was
//! changed no longer replays (the replay still checks what it sends against the recording).

use serde_json::{json, Value};

use crate::common::{Env, MockLlm};
use crate::support::{
    assert_replays_without_node, fixture, node_path, replay_without_node, run, with_extension,
    with_host,
};

/// Each request the mock received: its headers and body.
fn received(mock: &MockLlm) -> Vec<(Value, Value)> {
    std::fs::read_to_string(&mock.log)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("event").is_none())
        .map(|v| (v["headers"].clone(), v["body"].clone()))
        .collect()
}

#[test]
fn provider_hooks_change_what_is_sent_and_replay_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "read", "arguments": "{\"path\":\"a.txt\"}"}]},
        {"text": ["It says alpha."]},
    ]));
    let env = Env::new(&mock);
    std::fs::write(env.cwd().join("a.txt"), "alpha\n").unwrap();
    let cassette = env.path("provider.jsonl");
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &fixture("provider.ts"),
        "What does a.txt say?",
    );
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        !stderr.contains("before_provider"),
        "the hooks are delivered: {stderr}"
    );
    let sent = received(&mock);
    assert_eq!(sent.len(), 2);
    for (turn, (headers, body)) in sent.iter().enumerate() {
        assert_eq!(headers["x-gate"], "hooked", "{headers}");
        let messages = body["messages"].as_array().unwrap().len();
        assert_eq!(body["metadata"], json!({"turn": messages}), "turn {turn}");
    }
    // The handlers see the provider's headers as Pi merges them: none for the mock provider.
    let entries: Vec<Value> = recorded
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "entry_appended")
        .map(|e| e["entry"]["data"].clone())
        .collect();
    assert_eq!(entries, [json!({"names": []}), json!({"names": []})]);

    assert_replays_without_node(&env, &cassette, &recorded);

    // A recording whose body decision no longer matches the request it recorded is refused.
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(text.contains("\"metadata\":{\"turn\":2}"), "{text}");
    let tampered = env.path("tampered.jsonl");
    std::fs::write(
        &tampered,
        text.replacen("\"metadata\":{\"turn\":2}", "\"metadata\":{\"turn\":9}", 1),
    )
    .unwrap();
    let (code, _, stderr) = replay_without_node(&env, &tampered);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("the model request differs"), "{stderr}");
}

/// The provider's answer told to an extension (as in case `provider_hooks`): the response's status
/// and headers, then each stream event's data, each handler's entry written before the stream
/// goes on; the cassette holds the questions and their decisions, so a replay with no Node
/// prints the same bytes.
#[test]
fn the_answer_is_told_to_the_extension_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "read", "arguments": "{\"path\":\"a.txt\"}"}]},
        {"text": ["It says alpha."]},
    ]));
    let env = Env::new(&mock);
    std::fs::write(env.cwd().join("a.txt"), "alpha\n").unwrap();
    let cassette = env.path("answer.jsonl");
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &fixture("answer.ts"),
        "What does a.txt say?",
    );
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert!(!stderr.contains("provider_stream_event"), "{stderr}");
    let told: Vec<Value> = recorded
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| {
            e["type"] == "entry_appended"
                && ["response", "finish"].contains(&e["entry"]["customType"].as_str().unwrap_or(""))
        })
        .map(|e| e["entry"]["data"].clone())
        .collect();
    let finish = |finish: &str| json!({"finish": finish, "provider": "mock", "api": "openai-completions", "model": "mock-model"});
    let response = json!({"status": 200, "json": "text/event-stream"});
    assert_eq!(
        told,
        [
            response.clone(),
            finish("tool_calls"),
            response,
            finish("stop")
        ]
    );
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(
        text.contains("\"type\":\"provider_stream_event\""),
        "{text}"
    );
    assert!(
        text.contains("\"type\":\"after_provider_response\""),
        "{text}"
    );

    assert_replays_without_node(&env, &cassette, &recorded);
}

/// A key an extension's `before_provider_headers` hands the provider, and a cookie the
/// provider's answer sets, which `after_provider_response` is told of: the cassette holds
/// neither (short or long), in no line, and the recording still replays with no Node.
#[test]
fn a_key_a_handler_sends_and_a_cookie_it_is_told_of_reach_no_cassette() {
    let Some(path) = node_path() else { return };
    let cookie = json!({"set-cookie": "session=k9; Path=/"});
    let mock = MockLlm::start(&json!([{"text": ["Hi."], "headers": cookie}]));
    let env = Env::new(&mock);
    let cassette = env.path("gateway.jsonl");
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &fixture("gateway_secret.ts"),
        "Hello",
    );
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    let sent = received(&mock);
    assert_eq!(sent[0].0["x-api-key"], "gw-planted-key-0123456789");
    let text = std::fs::read_to_string(&cassette).unwrap();
    for planted in [
        "gw-planted-key-0123456789",
        "Bearer gw\"",
        "planted-cookie-0123456789",
    ] {
        let line = text.lines().find(|l| l.contains(planted));
        assert_eq!(line, None, "{planted} reached the cassette");
    }
    assert_replays_without_node(&env, &cassette, &recorded);
}

/// A body field the user's `redact.jsonPaths` rule names, which a `before_provider_request`
/// handler fills: the request line holds its placeholder, and so must the handler's recorded
/// decision, written before it; the run replays with no Node.
#[test]
fn a_body_field_a_redaction_rule_names_reaches_no_cassette_through_the_hooks_decision() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hi."]}]));
    let env = Env::new(&mock);
    env.write_agent(
        "settings.json",
        &json!({"redact": {"jsonPaths": ["$.metadata.token"]}}).to_string(),
    );
    let cassette = env.path("tagged.jsonl");
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &fixture("tagged_body.ts"),
        "Hello",
    );
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(received(&mock)[0].1["metadata"], json!({"token": "t0k"}));
    let text = std::fs::read_to_string(&cassette).unwrap();
    let line = text.lines().find(|l| l.contains("t0k"));
    assert_eq!(line, None, "the token reached the cassette");
    assert_replays_without_node(&env, &cassette, &recorded);
}

/// A key the model streams a few characters per event, heard by `message_update` and
/// `provider_stream_event` handlers: the hook points' lines, written as each event comes, must
/// not hold its pieces (the chunk lines read the placeholder once the key is whole, and the
/// hooks' questions are asked of the same events), and the recording replays with no Node.
#[test]
fn a_key_the_model_streams_in_pieces_is_not_in_the_hooks_lines() {
    const KEY: &str = "sk-streamed-key-0123456789abcdef";
    let Some(path) = node_path() else { return };
    let said = format!("The key is {KEY}.");
    let pieces: Vec<String> = said
        .chars()
        .collect::<Vec<_>>()
        .chunks(2)
        .map(|c| c.iter().collect())
        .collect();
    let mock = MockLlm::start(&json!([{ "text": pieces }]));
    let env = Env::new(&mock);
    let cassette = env.path("streamed.jsonl");
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &fixture("stream_observer.ts"),
        "Say the key",
    );
    with_host(&mut command, &path);
    command.env("STREAMED_API_KEY", KEY);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert!(recorded.contains(&said), "the run saw the key whole");
    let text = std::fs::read_to_string(&cassette).unwrap();
    let hooks: Vec<&str> = text
        .lines()
        .filter(|l| l.contains(r#""kind":"hook""#))
        .collect();
    assert!(hooks.iter().any(|l| l.contains("provider_stream_event")));
    // Put together, the streamed texts of the hook lines, in order, hold no run of the key.
    let mut joined = String::new();
    for line in &hooks {
        let line: Value = serde_json::from_str(line).unwrap();
        pi_testkit::field_strings(
            &line["effect"]["payload"],
            &["delta", "content", "text"],
            &mut joined,
        );
    }
    for start in ["sk-st", "0123", "cdef"] {
        assert!(!joined.contains(start), "the hooks' lines hold {start:?}");
    }
    // The replay, with no Node, checks (the run printed the key's pieces in its updates, which
    // the check leaves out) and prints every other line as the run did, the key redacted.
    let (code, replayed, stderr) = replay_without_node(&env, &cassette);
    assert_eq!(code, 0, "{stderr}");
    let placeholder = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["type"] == "redaction" && l["what"].as_str().unwrap().contains("STREAMED"))
        .map(|l| l["placeholder"].as_str().unwrap().to_owned())
        .unwrap();
    let recorded = recorded.replace(KEY, &placeholder);
    let updates_left_out = |out: &str| -> Vec<String> {
        out.lines()
            .filter(|l| !l.contains(r#""type":"message_update""#))
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(updates_left_out(&replayed), updates_left_out(&recorded));
}
