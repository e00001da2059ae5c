//! The system prompt as a transcript message (Pi 1.5.2): recorded before the first request,
//! sent as the request's system prompt, not recorded again while it is unchanged, patched
//! (changed sections by name, tools removed by name) when it changes, and given to a session an
//! older Pi wrote at its first new request.

use crate::common::{Env, MockLlm};
use crate::text_script;
use serde_json::{json, Value};

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The `role: "system"` messages of a run's `message_end` events.
fn system_messages(stdout: &str) -> Vec<Value> {
    lines(stdout)
        .into_iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "system")
        .map(|e| e["message"].clone())
        .collect()
}

fn keys(value: &Value) -> Vec<String> {
    value.as_object().unwrap().keys().cloned().collect()
}

/// The system prompt a request body sent (the chat completions body's leading message).
fn sent_prompt(request: &Value) -> String {
    let first = &request["messages"][0];
    assert_eq!(first["role"], "system", "{request}");
    first["content"].as_str().unwrap().to_owned()
}

fn session_messages(env: &Env) -> Vec<Value> {
    let files = env.session_files();
    assert_eq!(files.len(), 1, "{files:?}");
    lines(&std::fs::read_to_string(&files[0]).unwrap())
        .into_iter()
        .filter(|e| e["type"] == "message")
        .map(|e| e["message"].clone())
        .collect()
}

const JSON_RUN: [&str; 6] = [
    "--provider",
    "mock",
    "--model",
    "mock-model",
    "--mode",
    "json",
];

#[test]
fn the_prompt_is_recorded_once_sent_from_the_transcript_and_patched_when_it_changes() {
    let mock = MockLlm::start(&text_script(&["one", "two", "three"]));
    let env = Env::new(&mock);

    // First run: the whole prompt and the four tools, right after the first turn_start.
    let out = env.run(&[&JSON_RUN[..], &["-p", "hi"]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = lines(&out.stdout);
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types[..6],
        [
            "session",
            "agent_start",
            "turn_start",
            "message_start",
            "message_end",
            "message_start"
        ]
    );
    assert_eq!(events[3]["message"]["role"], "system");
    assert_eq!(events[5]["message"]["role"], "user");
    let first = events[4]["message"].clone();
    assert_eq!(
        keys(&first),
        ["role", "content", "sections", "timestamp", "toolsAdded"]
    );
    assert_eq!(
        keys(&first["sections"]),
        ["preamble", "tools", "rules", "docs", "cwd"]
    );
    let cwd = env.cwd().to_string_lossy().into_owned();
    assert_eq!(first["sections"]["cwd"], format!("<cwd>\n{cwd}\n</cwd>"));
    let tools: Vec<&str> = first["toolsAdded"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tools, ["read", "bash", "edit", "write"]);
    assert_eq!(
        first["toolsAdded"][0]["constrainedSampling"],
        json!({"type": "json_schema", "strict": "prefer"})
    );
    let agent_end = events.iter().find(|e| e["type"] == "agent_end").unwrap();
    assert_eq!(agent_end["messages"][0], first);
    let rendered: Vec<&str> = first["sections"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_str().unwrap())
        .collect();
    let requests = mock.requests();
    assert_eq!(sent_prompt(&requests[0]), rendered.join("\n\n"));
    assert!(!sent_prompt(&requests[0]).contains("Current date"));
    let stored = session_messages(&env);
    assert_eq!(stored[0], first);
    assert_eq!(stored[1]["role"], "user");

    // Resumed with the same prompt: nothing new is recorded, the same prompt is sent.
    let out = env.run(&[&JSON_RUN[..], &["--continue", "-p", "again"]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(system_messages(&out.stdout), Vec::<Value>::new());
    let requests = mock.requests();
    assert_eq!(sent_prompt(&requests[1]), sent_prompt(&requests[0]));

    // Resumed with another prompt and fewer tools: only the difference is recorded.
    let out = env.run(
        &[
            &JSON_RUN[..],
            &[
                "--continue",
                "--tools",
                "read,bash",
                "--append-system-prompt",
                "Be brief.",
                "-p",
                "third",
            ],
        ]
        .concat(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let patches = system_messages(&out.stdout);
    assert_eq!(patches.len(), 1, "{patches:?}");
    let patch = &patches[0];
    assert_eq!(
        keys(patch),
        ["role", "content", "sections", "timestamp", "toolsRemoved"]
    );
    assert_eq!(keys(&patch["sections"]), ["tools", "rules", "addendum"]);
    assert_eq!(
        patch["sections"]["addendum"],
        "<addendum>\nBe brief.\n</addendum>"
    );
    assert_eq!(
        patch["toolsRemoved"],
        json!([{"name": "edit"}, {"name": "write"}])
    );
    let sent = sent_prompt(&mock.requests()[2]);
    // A section a patch adds goes last, as in pi-ai's fold of the system messages (a Map).
    assert!(
        sent.ends_with("</cwd>\n\n<addendum>\nBe brief.\n</addendum>"),
        "{sent}"
    );
    assert!(!sent.contains("- edit:"), "{sent}");
    let stored = session_messages(&env);
    let systems: Vec<&Value> = stored.iter().filter(|m| m["role"] == "system").collect();
    assert_eq!(systems, [&first, patch]);
}

#[test]
fn a_session_an_older_pi_wrote_gets_its_system_message_at_its_first_new_request() {
    let mock = MockLlm::start(&text_script(&["later"]));
    let env = Env::new(&mock);
    let cwd = env.cwd().to_string_lossy().into_owned();
    let old = [
        json!({"type":"session","version":3,"id":"0199a000-0000-7000-8000-000000000001","timestamp":"2026-01-01T00:00:00.000Z","cwd":cwd}),
        json!({"type":"model_change","id":"a0000001","parentId":null,"timestamp":"2026-01-01T00:00:00.001Z","provider":"mock","modelId":"mock-model"}),
        json!({"type":"thinking_level_change","id":"a0000002","parentId":"a0000001","timestamp":"2026-01-01T00:00:00.001Z","thinkingLevel":"off"}),
        json!({"type":"message","id":"a0000003","parentId":"a0000002","timestamp":"2026-01-01T00:00:00.002Z","message":{"role":"user","content":[{"type":"text","text":"hi"}],"timestamp":1767225600002_u64}}),
        json!({"type":"message","id":"a0000004","parentId":"a0000003","timestamp":"2026-01-01T00:00:00.003Z","message":{"role":"assistant","content":[{"type":"text","text":"hello"}],"api":"openai-completions","provider":"mock","model":"mock-model","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":1767225600003_u64}}),
    ];
    let text: String = old.iter().map(|l| format!("{l}\n")).collect();
    let file = env.path("old.jsonl");
    std::fs::write(&file, &text).unwrap();

    let out = env.run(
        &[
            &JSON_RUN[..],
            &["--session", file.to_str().unwrap(), "-p", "more"],
        ]
        .concat(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let recorded = system_messages(&out.stdout);
    assert_eq!(recorded.len(), 1, "{}", out.stdout);
    assert_eq!(
        keys(&recorded[0]["sections"]),
        ["preamble", "tools", "rules", "docs", "cwd"]
    );
    let after = std::fs::read_to_string(&file).unwrap();
    assert!(
        after.starts_with(&text),
        "the old lines are kept as they were"
    );
    let added = lines(&after[text.len()..]);
    assert_eq!(added[0]["message"], recorded[0]);
    assert_eq!(added[0]["parentId"], "a0000004");
    assert_eq!(added[1]["message"]["role"], "user");
    let request = &mock.requests()[0];
    let roles: Vec<&str> = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"]);
}
