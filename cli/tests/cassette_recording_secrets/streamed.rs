//! A key the model itself streams a few characters per event, in its text and in a tool call's
//! arguments, in the Chat Completions and Anthropic formats: no byte run of the body holds it
//! whole, yet the deltas the cassette's chunk lines hold do not put it back together.

use super::super::*;

/// Known to the recorder through a variable whose name says it holds a key.
const STREAMED_KEY: &str = "sk-streamed-key-0123456789abcdef";

/// `text` in pieces of one, two and three characters, in turn.
fn in_small_pieces(text: &str) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let mut pieces = Vec::new();
    let mut at = 0;
    for size in [1, 2, 3].into_iter().cycle() {
        if at >= chars.len() {
            break;
        }
        let end = (at + size).min(chars.len());
        pieces.push(chars[at..end].iter().collect());
        at = end;
    }
    pieces
}

/// The delta strings of each call's events, as the cassette's chunk lines hold them, put
/// together per call (each call streams one block here).
fn streamed_texts(cassette: &str) -> Vec<String> {
    let mut bodies: Vec<(u64, Vec<u8>)> = Vec::new();
    for line in cassette.lines() {
        let line: Value = serde_json::from_str(line).unwrap();
        if line["type"] != "chunk" {
            continue;
        }
        let call = line["call"].as_u64().unwrap();
        // A text body is written as text: a base64 chunk would escape this search.
        let bytes = line["text"].as_str().unwrap().as_bytes().to_vec();
        match bodies.iter_mut().find(|(c, _)| *c == call) {
            Some((_, body)) => body.extend(bytes),
            None => bodies.push((call, bytes)),
        }
    }
    bodies
        .into_iter()
        .map(|(_, body)| {
            let body = String::from_utf8(body).unwrap();
            let mut text = String::new();
            for data in body.lines().filter_map(|l| l.strip_prefix("data:")) {
                if let Ok(event) = serde_json::from_str::<Value>(data.trim()) {
                    delta_strings(&event, &mut text);
                }
            }
            text
        })
        .collect()
}

/// The placeholder the cassette's `redaction` lines give the variable holding the key.
fn placeholder_of(cassette: &str) -> String {
    cassette
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|line| {
            line["type"] == "redaction"
                && line["what"].as_str().unwrap().contains("STREAMED_API_KEY")
        })
        .map(|line| line["placeholder"].as_str().unwrap().to_owned())
        .unwrap()
}

fn delta_strings(value: &Value, out: &mut String) {
    pi_testkit::field_strings(
        value,
        &["content", "text", "partial_json", "arguments"],
        out,
    );
}

#[test]
fn a_key_the_model_streams_in_pieces_is_not_put_back_together_from_the_cassette() {
    let arguments = json!({"path": format!("{STREAMED_KEY}.txt")}).to_string();
    let said = format!("The key is {STREAMED_KEY}.");
    for (provider, model) in [("mock", "mock-model"), ("mock-anthropic", "mock-claude")] {
        let ws = workspace(json!({"script": [
            {"tool_calls": [{"name": "read", "arguments": arguments,
                             "chunks": in_small_pieces(&arguments)}]},
            {"text": in_small_pieces(&said)},
        ]}));
        let cassette = ws.root().join("cwd").join("streamed.jsonl");
        let args = super::recording(&cassette, provider, model, &["-p", "say the key"]);
        let out = ws
            .command(pi().as_ref(), &args)
            .env("STREAMED_API_KEY", STREAMED_KEY)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{provider}: {stderr}");
        // The run itself saw the key, whole, in the text and in the tool call.
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains(&said), "{provider}: {stdout}");

        let text = std::fs::read_to_string(&cassette).unwrap();
        let streamed = streamed_texts(&text);
        assert_eq!(streamed.len(), 2, "{provider}: two calls streamed");
        // The deltas read the placeholder where the key was, and nothing of the key.
        let placeholder = placeholder_of(&text);
        let expected = [&arguments, &said].map(|t| t.replace(STREAMED_KEY, &placeholder));
        assert_eq!(streamed, expected, "{provider}");
        // The key came in more pieces than the placeholder has characters: some deltas were
        // emptied, and their events say so (the replay below allows for them).
        assert!(text.contains(r#"\"pi:emptied\":true"#), "{provider}");
        super::nowhere_but_planted(
            ws.root(),
            STREAMED_KEY,
            super::planted_by_the_test,
            provider,
        );

        // The recording replays and checks, offline, though the run printed the key's pieces.
        super::replays_and_checks(&cassette);
    }
}

/// A key a tool prints in two writes a second apart: the tool's updates, each written to the
/// cassette as it comes, show its output so far, so the first would hold the key's start.
#[test]
fn a_key_a_tool_prints_in_two_writes_is_not_in_its_updates() {
    let command = "head -c 14 key.txt; sleep 1; tail -c +15 key.txt";
    let ws = workspace(json!({
        "files": {"key.txt": format!("{STREAMED_KEY}\n")},
        "script": [
            {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
            {"text": ["Printed."]},
        ]
    }));
    let cassette = ws.root().join("cwd").join("printed.jsonl");
    let args = super::recording(&cassette, "mock", "mock-model", &["-p", "print the key"]);
    let out = ws
        .command(pi().as_ref(), &args)
        .env("STREAMED_API_KEY", STREAMED_KEY)
        .output()
        .unwrap();
    super::succeeded(&out, "pi");
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(
        text.contains(r#""kind":"tool_update""#),
        "the tool's output came as updates"
    );
    for window in STREAMED_KEY.as_bytes().windows(8) {
        let window = std::str::from_utf8(window).unwrap();
        let line = text.lines().find(|l| l.contains(window));
        assert_eq!(line, None, "{window:?} of the key reached the cassette");
    }
    super::replays_and_checks(&cassette);
}
