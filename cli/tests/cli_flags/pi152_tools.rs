//! What Pi 1.5.2's tools give and see (checked against 1.5.2's `core/tools/bash.js`,
//! `core/tools/read.js`, `cli/setup.js` and the kit's tools_152 and b_tool_read traces): the
//! bash tool's commands see `AI_AGENT`, `PI_CODING_AGENT` and the session's `PI_SESSION_ID`,
//! `PI_SESSION_FILE`, `PI_PROVIDER`, `PI_MODEL` and `PI_REASONING_LEVEL`, whatever stale values
//! pi itself was started with; read and bash results carry `structuredContent`; a non-zero
//! exit is an error result with no details.

use std::process::Stdio;

use crate::common::{Env, MockLlm};
use serde_json::{json, Value};

const ENV_COMMAND: &str = "env | grep -E '^(PI_|AI_AGENT)' | sort";

/// A json-mode run with extra flags, started with stale session variables; its events.
fn run(env: &Env, flags: &[&str]) -> Vec<Value> {
    let mut args = vec![
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--mode",
        "json",
    ];
    args.extend(flags);
    args.extend(["-p", "Use the tools"]);
    let out = env
        .command(&args)
        .env("PI_SESSION_ID", "stale-id")
        .env("PI_SESSION_FILE", "/stale/file.jsonl")
        .env("PI_MODEL", "stale-model")
        .env("PI_REASONING_LEVEL", "stale-level")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The `tool_execution_end` events in the order of their calls (they end in any order).
fn tool_ends(events: &[Value]) -> Vec<&Value> {
    let mut ends: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_execution_end")
        .collect();
    let order = ["call_r", "call_e", "call_x", "call_m"];
    ends.sort_by_key(|e| order.iter().position(|id| e["toolCallId"] == *id));
    ends
}

#[test]
fn bash_commands_see_the_session_and_results_carry_structured_content() {
    let mock = MockLlm::start(&json!([
        {"tool_calls": [
            {"id": "call_r", "name": "read", "arguments": {"path": "a.txt"}},
            {"id": "call_e", "name": "bash", "arguments": {"command": ENV_COMMAND}},
            {"id": "call_x", "name": "bash", "arguments": {"command": "exit 3"}},
        ]},
        {"text": ["Done."]},
        {"tool_calls": [{"id": "call_m", "name": "bash", "arguments": {"command": ENV_COMMAND}}]},
        {"text": ["Done again."]},
    ]));
    let env = Env::new(&mock);
    env.write("a.txt", b"hi there\n");
    let events = run(&env, &[]);
    let header = &events[0];
    let ends = tool_ends(&events);
    assert_eq!(ends.len(), 3);

    assert_eq!(
        ends[0]["result"],
        json!({"content": [{"type": "text", "text": "hi there\n"}], "structuredContent": "hi there\n"})
    );

    let file = env.session_files()[0].display().to_string();
    let id = header["id"].as_str().unwrap();
    let expected = format!(
        "AI_AGENT=pi\nPI_CODING_AGENT=true\nPI_CODING_AGENT_DIR={}\nPI_MODEL=mock-model\n\
         PI_PACKAGE_DIR={}\nPI_PROVIDER=mock\nPI_REASONING_LEVEL=off\nPI_SESSION_FILE={file}\n\
         PI_SESSION_ID={id}\nPI_TELEMETRY=0\n",
        env.path("agent").display(),
        env.path("pkg").display()
    );
    let result = &ends[1]["result"];
    assert_eq!(result["content"][0]["text"], expected.as_str());
    let structured = &result["structuredContent"];
    assert_eq!(structured["output"], expected.as_str());
    assert_eq!(structured["truncated"], false);
    assert_eq!(structured["exit_code"], 0);
    assert!(structured["wall_time_seconds"].is_number(), "{structured}");
    assert_eq!(ends[1]["isError"], false);

    let failed = &ends[2];
    assert_eq!(failed["isError"], true);
    assert_eq!(
        failed["result"]["content"],
        json!([{"type": "text", "text": "(no output)\n\nCommand exited with code 3"}])
    );
    assert_eq!(failed["result"]["details"], Value::Null);
    assert_eq!(failed["result"]["structuredContent"]["exit_code"], 3);
    assert_eq!(failed["result"]["structuredContent"]["output"], "");
    let message = events
        .iter()
        .find(|e| e["type"] == "message_end" && e["message"]["toolCallId"] == "call_x")
        .unwrap();
    assert_eq!(message["message"]["isError"], true);
    assert!(message["message"].get("details").is_none(), "{message}");
    assert!(
        message["message"].get("structuredContent").is_none(),
        "{message}"
    );

    // Without a session file, no PI_SESSION_FILE: the stale one is cleared, not passed on.
    let events = run(&env, &["--no-session"]);
    let text = tool_ends(&events)[0]["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!text.contains("PI_SESSION_FILE"), "{text}");
    assert!(!text.contains("stale"), "{text}");
    let id = events[0]["id"].as_str().unwrap();
    assert!(text.contains(&format!("PI_SESSION_ID={id}\n")), "{text}");
}

#[test]
fn grep_globs_are_relative_to_the_searched_folder() {
    let calls: Vec<Value> = ["*.txt", "deep/*.txt", "./deep/*.txt", "!*.txt"]
        .iter()
        .enumerate()
        .map(|(i, glob)| {
            json!({"id": format!("call_{i}"), "name": "grep",
                   "arguments": {"pattern": "needle", "path": "sub", "glob": glob}})
        })
        .collect();
    let mock = MockLlm::start(&json!([{"tool_calls": calls}, {"text": ["Done."]}]));
    let env = Env::new(&mock);
    std::fs::create_dir_all(env.cwd().join("sub/deep")).unwrap();
    env.write("sub/a.txt", b"needle in a\n");
    env.write("sub/deep/b.txt", b"needle in b\n");
    env.write("sub/c.md", b"needle in c\n");
    env.write("top.txt", b"needle at top\n");
    let events = run(&env, &["--no-session", "--tools", "grep"]);
    let text = |id: &str| {
        events
            .iter()
            .find(|e| e["type"] == "tool_execution_end" && e["toolCallId"] == id)
            .map(|e| {
                e["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .unwrap()
    };
    assert_eq!(
        text("call_0"),
        "a.txt:1: needle in a\ndeep/b.txt:1: needle in b"
    );
    assert_eq!(text("call_1"), "deep/b.txt:1: needle in b");
    assert_eq!(text("call_2"), "deep/b.txt:1: needle in b");
    assert_eq!(text("call_3"), "c.md:1: needle in c");
}

/// Arguments that stream in cut off (here without their closing brace) are not guessed at: as in
/// Pi 1.5.2 (pi-ai's `parseToolCallArguments` and `validateToolArguments`), the call keeps `{}`
/// and an `argumentsError` with Node's `JSON.parse` message, and the tool is not run: its result
/// is the `Invalid arguments` error. A call whose arguments parse runs beside it.
#[test]
fn arguments_that_do_not_parse_give_invalid_arguments() {
    let cut = r#"{"path": "a.txt", "offset": 1"#;
    let mock = MockLlm::start(&json!([
        {"tool_calls": [
            {"id": "call_cut", "name": "read", "arguments": cut},
            {"id": "call_ok", "name": "read", "arguments": {"path": "a.txt"}}
        ]},
        {"text": ["Done."]}
    ]));
    let env = Env::new(&mock);
    env.write("a.txt", b"hello\n");
    let events = run(&env, &["--no-session", "--tools", "read"]);
    let end = |id: &str| {
        events
            .iter()
            .find(|e| e["type"] == "tool_execution_end" && e["toolCallId"] == id)
            .unwrap()
    };
    let node_error =
        "Expected ',' or '}' after property value in JSON at position 29 (line 1 column 30)";
    assert_eq!(end("call_cut")["isError"], true);
    assert_eq!(
        end("call_cut")["result"]["content"][0]["text"],
        format!("Invalid arguments for tool \"read\": {node_error}\n\nReceived arguments:\n{cut}")
    );
    assert_eq!(end("call_ok")["isError"], false);
    let assistant = events
        .iter()
        .find(|e| e["type"] == "message_end" && e["message"]["role"] == "assistant")
        .unwrap();
    let call = &assistant["message"]["content"][0];
    assert_eq!(call["arguments"], json!({}));
    assert_eq!(
        call["argumentsError"],
        format!("{node_error}\n\nReceived arguments:\n{cut}")
    );
}
