//! One recorded run whose model calls three kinds of tool a program can add: a Rust custom tool
//! (`write_note`), a tool of an MCP server (the `pi-mcp` crate's test server, a real process over
//! stdio) and a tool of a TypeScript extension (run in Node by the extension host, Pi 1.5.2's
//! loader). The recording then replays byte for byte with none of them there — no custom tool
//! registered, no Node on PATH, the server's binary deleted — through the SDK and through
//! `pi replay --check`; a result of each kind altered in the cassette is a divergence that names
//! its line.
//!
//! This needs Node and Pi 1.5.2's install (`PI_EXTENSION_HOST_PI_DIR`, its Node in `node/bin`);
//! without them it is skipped with a line, unless `PI_REQUIRE_EXTENSIONS=1` (CI) makes that a
//! failure.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};

use common::{builder, prompt_once};
use pi_cassettes::test_support::{WriteNote, NOTE};
use pi_sdk::mcp::load_mcp_config;
use pi_sdk::SessionBuilder;
use pi_testkit::MockLlm;
use serde_json::{json, Value};

const PROMPT: &str = "Note, echo and shout.";

/// The file the extension's `shout` leaves in the session's directory.
const SHOUTED: &str = "shouted.txt";

/// What each tool answers in the recorded run: `(tool, text)`.
const ANSWERS: [(&str, &str); 3] = [
    ("write_note", "Wrote 10 bytes"),
    ("mcp__t__echo", "hello mcp"),
    ("shout", "HEY!"),
];

/// The mock's script: one call of each tool, a turn each, then the answer.
fn script() -> Value {
    json!([
        {"tool_calls": [{"id": "call_note", "name": "write_note", "arguments": {"text": "hello note"}}]},
        {"tool_calls": [{"id": "call_echo", "name": "mcp__t__echo", "arguments": {"text": "hello mcp"}}]},
        {"tool_calls": [{"id": "call_shout", "name": "shout", "arguments": {"word": "hey"}}]},
        {"text": ["Done."]}
    ])
}

/// The events as the text they serialize to, one line each (key order kept).
fn lines(events: &[Value]) -> String {
    events.iter().map(|e| format!("{e}\n")).collect()
}

/// `pi replay --check cassette` with no Node on PATH and a home of its own: its exit code and
/// what it said (stdout, then stderr).
fn pi_check(dir: &Path, cassette: &Path) -> (Option<i32>, String) {
    let (path, home, agent) = (
        dir.join("bare-path"),
        dir.join("home"),
        dir.join("home-agent"),
    );
    let envs = [
        ("PATH", path.as_path()),
        ("HOME", &home),
        ("PI_CODING_AGENT_DIR", &agent),
    ];
    common::pi_check_with(cassette, &envs)
}

/// Records the run in `workspace` (agent dir, MCP server and extension under `dir`); the
/// cassette and the events.
async fn record(dir: &Path, workspace: &Path, install: &Path) -> (PathBuf, Vec<Value>) {
    // The extension host runs the install's Node (Pi 1.5.2 needs Node >= 22.19).
    let path = std::env::var("PATH").unwrap_or_default();
    std::env::set_var(
        "PATH",
        format!("{}:{path}", install.join("node/bin").display()),
    );
    let server = dir.join("mcp-server");
    std::fs::copy(
        pi_testkit::workspace_binary("pi-mcp", "pi-mcp-test-server"),
        &server,
    )
    .unwrap();
    let agent = workspace.join(".agent");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::write(
        agent.join("mcp.json"),
        json!({"mcpServers": {"t": {"command": server, "exposure": "direct"}}}).to_string(),
    )
    .unwrap();
    let extension = dir.join("shout.ts");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/three_tools/shout.ts"),
        &extension,
    )
    .unwrap();
    let cassette = dir.join("three.cassette.jsonl");
    let mock = MockLlm::start(&script());
    let (session_builder, notice) = builder(&mock, workspace)
        .read_only_tools()
        .custom_tool(WriteNote::new())
        .typescript_extensions([&extension])
        .record(&cassette)
        .mcp_config(&load_mcp_config(&agent, workspace, false))
        .await;
    assert_eq!(notice, None);
    let events = prompt_once(session_builder, PROMPT).await;
    let requests = mock.requests();
    assert_eq!(requests.len(), 4, "{requests:#?}");
    let declared: Vec<&Value> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| &t["function"]["name"])
        .collect();
    for (tool, _) in ANSWERS {
        assert!(declared.contains(&&json!(tool)), "{tool}: {declared:?}");
    }
    std::fs::remove_file(&server).unwrap();
    std::env::set_var("PATH", dir.join("bare-path"));
    (cassette, events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_using_a_rust_an_mcp_and_an_extension_tool_replays_byte_for_byte_without_them() {
    let Some(install) = pi_testkit::extension_host_install() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let workspace = dir.path().join("work");
    std::fs::create_dir_all(dir.path().join("bare-path")).unwrap();
    std::fs::create_dir_all(&workspace).unwrap();
    let (cassette, recorded) = record(dir.path(), &workspace, &install).await;

    // Each tool really ran, and answered as its kind answers.
    let ends: Vec<&Value> = recorded
        .iter()
        .filter(|e| e["type"] == "tool_execution_end")
        .collect();
    assert_eq!(ends.len(), 3, "{recorded:#?}");
    for (end, (tool, text)) in ends.iter().zip(ANSWERS) {
        assert_eq!(end["toolName"], tool);
        assert_eq!(end["isError"], false, "{end}");
        assert_eq!(end["result"]["content"][0]["text"], text, "{end}");
    }
    assert_eq!(
        std::fs::read_to_string(workspace.join(NOTE)).unwrap(),
        "hello note"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.join(SHOUTED)).unwrap(),
        "hey"
    );
    std::fs::remove_file(workspace.join(NOTE)).unwrap();
    std::fs::remove_file(workspace.join(SHOUTED)).unwrap();

    // (a) The SDK, with no tool registered, no Node and no server: the same bytes.
    let replayed = prompt_once(SessionBuilder::new(&workspace).replay(&cassette), PROMPT).await;
    assert_eq!(lines(&replayed), lines(&recorded));
    // (b) The binary, under the same conditions.
    let (code, said) = pi_check(dir.path(), &cassette);
    assert_eq!(code, Some(0), "{said}");
    assert!(!workspace.join(NOTE).exists(), "a replay ran write_note");
    assert!(!workspace.join(SHOUTED).exists(), "a replay ran shout");

    // A result of each kind altered: each replay reports a divergence naming the line where
    // the recording contradicts it (the model request that carried the recorded result), with
    // the recorded text and the altered one.
    let text = std::fs::read_to_string(&cassette).unwrap();
    for (tool, answer) in ANSWERS {
        let (line, tampered) = tamper(&text, tool, answer);
        let path = dir.path().join(format!("{tool}.cassette.jsonl"));
        std::fs::write(&path, tampered).unwrap();
        let at = format!("{}:{line}:", path.display());
        let replayed = SessionBuilder::new(&workspace)
            .replay(&path)
            .build()
            .unwrap();
        let ended = match replayed.prompt(PROMPT).await {
            Ok(_) => replayed.finish().await,
            Err(error) => Err(error),
        };
        let error = ended.expect_err(tool).to_string();
        let names = |said: &str| {
            said.contains(&format!("{at} diverged at step"))
                && said.contains(answer)
                && said.contains("tampered")
        };
        assert!(names(&error), "{tool}: the SDK said {error}");
        let (code, said) = pi_check(dir.path(), &path);
        assert_eq!(code, Some(1), "{tool}: {said}");
        assert!(names(&said), "{tool}: the binary said {said}");
    }
}

/// `text` with the recorded result of `tool`'s call (whose text is `answer`) changed, and the
/// 1-based number of the first model request after it, the line that contradicts it.
fn tamper(text: &str, tool: &str, answer: &str) -> (usize, String) {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let parsed: Vec<Value> = lines
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let call = &parsed
        .iter()
        .find(|l| l["effect"]["kind"] == "run_tool" && l["effect"]["tool"] == tool)
        .unwrap()["effect"]["call"];
    let result = parsed
        .iter()
        .position(|l| l["input"]["kind"] == "tool_finished" && &l["input"]["call"] == call)
        .unwrap();
    let request = result
        + parsed[result..]
            .iter()
            .position(|l| l["type"] == "request")
            .unwrap();
    let needle = format!("\"text\":\"{answer}\"");
    assert!(lines[result].contains(&needle), "{}", lines[result]);
    lines[result] = lines[result].replacen(&needle, "\"text\":\"tampered\"", 1);
    let tampered = lines.iter().map(|l| format!("{l}\n")).collect();
    (request + 1, tampered)
}
