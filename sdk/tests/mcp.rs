//! MCP servers through the SDK: `mcp_config` starts the `pi-mcp` crate's test server (a real
//! process over stdio) from an `mcp.json` read as Pi reads it, the mock LLM calls its tool, and
//! a server that fails to start is Pi's one notice while the session goes on; a server reached
//! only indirectly is listed in the system prompt's `mcp_servers` section; a key in `mcp.json`
//! reaches no recording; a recording whose servers' tool lists were edited is refused.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;

use pi_cassettes::test_support::mock_model;
use pi_sdk::mcp::load_mcp_config;
use pi_sdk::{SessionBuilder, ThinkingLevel};
use pi_testkit::MockLlm;
use serde_json::{json, Value};

/// The test server's binary, built by the `pi-mcp` package next to this test (CI builds the
/// workspace's binaries first; a lone `cargo test` of this package builds it here).
fn test_server() -> PathBuf {
    pi_testkit::workspace_binary("pi-mcp", "pi-mcp-test-server")
}

#[tokio::test]
async fn mcp_config_offers_a_servers_direct_tools_and_reports_one_that_failed() {
    let workspace = tempfile::tempdir().unwrap();
    let agent = workspace.path().join(".agent");
    std::fs::create_dir_all(&agent).unwrap();
    let server = test_server();
    let config = json!({"mcpServers": {
        "t": {"command": server, "exposure": "direct"},
        "bad": {"command": server, "args": ["--fail-start"], "exposure": "direct"},
    }});
    std::fs::write(agent.join("mcp.json"), config.to_string()).unwrap();
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "mcp__t__echo", "arguments": {"text": "from the sdk"}}]},
        {"text": ["Echoed."]}
    ]));
    let (builder, notice) = SessionBuilder::new(workspace.path())
        .agent_dir(&agent)
        .model(mock_model(&mock))
        .api_key("sk-test")
        .thinking_level(ThinkingLevel::Off)
        .read_only_tools()
        .mcp_config(&load_mcp_config(&agent, workspace.path(), false))
        .await;
    let notice = notice.unwrap();
    assert!(
        notice.starts_with("MCP servers need attention:\n  bad: failed: "),
        "{notice}"
    );
    let session = builder.build().unwrap();
    let mut events = session.subscribe();
    session.prompt("echo").await.unwrap();
    let mut result = Value::Null;
    while let Ok(event) = events.try_recv() {
        let event = serde_json::to_value(&event).unwrap();
        if event["type"] == "tool_execution_end" {
            result = event["result"].clone();
        }
    }
    assert_eq!(result["content"][0]["text"], "from the sdk", "{result}");
}

/// A server that starts but never answers the handshake does not hold the program: as the `pi`
/// binary does, `mcp_config` waits Pi's 10 s for the servers and then goes on without them,
/// saying so in Pi's words.
#[tokio::test]
async fn mcp_config_stops_waiting_for_a_server_that_never_answers() {
    let workspace = tempfile::tempdir().unwrap();
    let agent = workspace.path().join(".agent");
    std::fs::create_dir_all(&agent).unwrap();
    let config = json!({"mcpServers": {"mute": {"command": "sleep", "args": ["600"], "exposure": "direct"}}});
    std::fs::write(agent.join("mcp.json"), config.to_string()).unwrap();
    let config = load_mcp_config(&agent, workspace.path(), false);
    let started = SessionBuilder::new(workspace.path())
        .agent_dir(&agent)
        .mcp_config(&config);
    let (_, notice) = tokio::time::timeout(std::time::Duration::from_secs(30), started)
        .await
        .expect("mcp_config returns");
    assert_eq!(
        notice.as_deref(),
        Some("MCP servers are still connecting; their tools become available once connected.")
    );
}

/// The attack: a key in `mcp.json` (a stdio server's `env`) that the server echoes back to the
/// model, in a recorded SDK session: the cassette must not hold it.
#[tokio::test]
async fn a_key_in_mcp_json_reaches_no_cassette() {
    const KEY: &str = "sdk-mcp-env-key-0123456789";
    let workspace = tempfile::tempdir().unwrap();
    let agent = workspace.path().join(".agent");
    std::fs::create_dir_all(&agent).unwrap();
    let config = json!({"mcpServers": {
        "t": {"command": test_server(), "exposure": "direct", "env": {"SERVICE_API_KEY": KEY}},
    }});
    std::fs::write(agent.join("mcp.json"), config.to_string()).unwrap();
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "mcp__t__echo", "arguments": {"text": KEY}}]},
        {"text": ["Echoed."]}
    ]));
    let cassette = workspace.path().join("run.cassette.jsonl");
    let (builder, notice) = SessionBuilder::new(workspace.path())
        .agent_dir(&agent)
        .model(mock_model(&mock))
        .api_key("sk-test")
        .thinking_level(ThinkingLevel::Off)
        .read_only_tools()
        .record(&cassette)
        .mcp_config(&load_mcp_config(&agent, workspace.path(), false))
        .await;
    assert_eq!(notice, None);
    let session = builder.build().unwrap();
    session.prompt("echo").await.unwrap();
    session.finish().await.unwrap();
    assert!(
        mock.requests()[1].to_string().contains(KEY),
        "the server echoed the key to the model"
    );
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(!text.contains(KEY), "the key reached the cassette");
}

/// A server with the default (`codemode`) exposure is listed in the system prompt's
/// `mcp_servers` section as Pi 1.5.2's MCP extension lists it at the first prompt, which does
/// not wait for such a server (so without a summary from its instructions); since no tool here
/// reaches such tools, the notice starts with Pi's warning saying
/// they cannot be called.
#[tokio::test]
async fn mcp_config_lists_indirect_servers_in_the_system_prompt() {
    let workspace = tempfile::tempdir().unwrap();
    let agent = workspace.path().join(".agent");
    std::fs::create_dir_all(&agent).unwrap();
    let config = json!({"mcpServers": {"t": {"command": test_server()}}});
    std::fs::write(agent.join("mcp.json"), config.to_string()).unwrap();
    let mock = MockLlm::start(&json!([{"text": ["Hi."]}]));
    let (builder, notice) = common::builder(&mock, workspace.path())
        .mcp_config(&load_mcp_config(&agent, workspace.path(), false))
        .await;
    assert_eq!(
        notice.as_deref(),
        Some(
            "MCP tools are only reachable from the codemode or tool_search tool, but neither \
             is active; they cannot be called."
        )
    );
    common::prompt_once(builder, "hi").await;
    let system = mock.requests()[0]["messages"][0]["content"].to_string();
    assert!(
        system.contains(
            "<mcp_servers>\\nMCP servers whose tools are not declared to you. Call the tools \
             of `codemode` servers from codemode scripts.\\n- mcp__t (codemode)\\n\
             </mcp_servers>"
        ),
        "{system}"
    );
}

/// The attack: an SDK recording whose header was edited where it lists an MCP server's tools
/// (`config.mcpServers`: a tool's description or annotations changed, a tool removed), or where
/// it declares an MCP tool (its namespace naming another server, its source another
/// extension), no longer says the tools the run declared to the model;
/// `SessionBuilder::replay` refuses it before anything runs, with the typed error naming the field and the tool, as `pi replay` refuses it. The
/// untouched recording still replays.
#[tokio::test]
async fn a_recording_whose_server_list_was_edited_is_refused() {
    let workspace = tempfile::tempdir().unwrap();
    let agent = workspace.path().join(".agent");
    std::fs::create_dir_all(&agent).unwrap();
    let config = json!({"mcpServers": {"t": {"command": test_server(), "exposure": "direct"}}});
    std::fs::write(agent.join("mcp.json"), config.to_string()).unwrap();
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "mcp__t__echo", "arguments": {"text": "hi"}}]},
        {"text": ["Echoed."]}
    ]));
    let cassette = workspace.path().join("run.cassette.jsonl");
    let (builder, notice) = common::builder(&mock, workspace.path())
        .read_only_tools()
        .record(&cassette)
        .mcp_config(&load_mcp_config(&agent, workspace.path(), false))
        .await;
    assert_eq!(notice, None);
    common::prompt_once(builder, "echo").await;
    let text = std::fs::read_to_string(&cassette).unwrap();
    let edited_config = |name: &str, edit: &dyn Fn(&mut Value)| {
        let mut lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        edit(&mut lines[0]["config"]);
        let path = workspace.path().join(format!("{name}.cassette.jsonl"));
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&path, text).unwrap();
        SessionBuilder::new(workspace.path()).replay(path).build()
    };
    let edited = |name: &str, edit: &dyn Fn(&mut Vec<Value>)| {
        edited_config(name, &|config| {
            let mut tools: Vec<Value> = Vec::new();
            if let Some(list) = config["mcpServers"][0]["tools"].as_array() {
                tools.clone_from(list);
            }
            edit(&mut tools);
            config["mcpServers"][0]["tools"] = Value::Array(tools);
        })
    };
    let echo = |tools: &[Value]| tools.iter().position(|t| t["name"] == "echo").unwrap();
    // The declaration's namespace (which `pi.getAllTools()` reports) names the server.
    let declared_echo = |config: &mut Value| -> usize {
        let declared = config["customTools"].as_array().unwrap();
        let i = declared.iter().position(|t| t["name"] == "mcp__t__echo");
        let i = i.unwrap();
        assert_eq!(declared[i]["namespace"]["name"], "mcp__t");
        i
    };

    let untouched = edited("untouched", &|_| {}).unwrap();
    untouched.prompt("echo").await.unwrap();
    untouched.finish().await.unwrap();

    let refusals = [
        (
            edited("described", &|tools| {
                let i = echo(tools);
                tools[i]["description"] = json!("Echoes, and more.");
            }),
            "config.mcpServers[0] (t) lists the tool mcp__t__echo otherwise than config.customTools declares it",
        ),
        (
            edited("removed", &|tools| {
                let i = echo(tools);
                tools.remove(i);
            }),
            "config.mcpServers[0] (t) does not list the tool mcp__t__echo that config.customTools declares",
        ),
        (
            edited("annotated", &|tools| {
                let i = echo(tools);
                tools[i]["annotations"] = json!({"destructiveHint": true});
            }),
            "config.mcpServers[0] (t) lists the tool mcp__t__echo otherwise than config.customTools declares it",
        ),
        (
            edited_config("renamespaced", &|config| {
                let i = declared_echo(config);
                config["customTools"][i]["namespace"]["name"] = json!("mcp__other");
            }),
            "config.mcpServers[0] (t) lists the tool mcp__t__echo otherwise than config.customTools declares it",
        ),
        (
            edited_config("resourced", &|config| {
                let i = declared_echo(config);
                config["customTools"][i]["sourceInfo"]["path"] = json!("/elsewhere/ext.ts");
            }),
            "config.mcpServers[0] (t) lists the tool mcp__t__echo otherwise than config.customTools declares it",
        ),
    ];
    for (built, reason) in refusals {
        match built {
            Err(pi_sdk::Error::RecordedServers {
                cassette,
                reason: said,
            }) => {
                assert_eq!(said, reason);
                assert!(
                    cassette.starts_with(workspace.path()),
                    "{}",
                    cassette.display()
                );
            }
            Err(other) => panic!("refused otherwise: {other}"),
            Ok(_) => panic!("an edited server list was replayed ({reason})"),
        }
    }
}

/// Whether process `pid` still runs (gone, or a zombie no one reaped yet, is not running).
#[cfg(target_os = "linux")]
fn running(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|s| !s.trim_start().starts_with('Z'))
    })
}

/// The attack: a server that ignores SIGTERM and outlives its stdin (a shell leading its
/// process group, with a child of its own that ignores SIGTERM too). When the session ends,
/// it is stopped as Pi 1.5.2 stops one: SIGTERM half a second after its stdin closed, SIGKILL
/// two seconds later; nothing of it is left, and the end (`finish`, which stops the session's
/// servers) waits for that and no longer.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_ignores_sigterm_is_gone_when_the_session_ends() {
    let workspace = tempfile::tempdir().unwrap();
    let agent = workspace.path().join(".agent");
    std::fs::create_dir_all(&agent).unwrap();
    let pids = workspace.path().join("pids");
    let script = r#"trap '' TERM; echo $$ > "$1"; "$0"; sleep 600 & echo $! >> "$1"; wait"#;
    let config = json!({"mcpServers": {"t": {
        "command": "sh",
        "args": ["-c", script, test_server(), pids],
        "exposure": "direct",
    }}});
    std::fs::write(agent.join("mcp.json"), config.to_string()).unwrap();
    let mock = MockLlm::start(&json!([{"text": ["Hi."]}]));
    let (builder, notice) = common::builder(&mock, workspace.path())
        .mcp_config(&load_mcp_config(&agent, workspace.path(), false))
        .await;
    assert_eq!(notice, None);
    let session = builder.build().unwrap();
    session.prompt("hi").await.unwrap();
    let ending = std::time::Instant::now();
    session.finish().await.unwrap();
    drop(session);
    let took = ending.elapsed();
    let pids: Vec<String> = std::fs::read_to_string(&pids)
        .unwrap()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let left: Vec<&String> = pids.iter().filter(|pid| running(pid)).collect();
    for pid in &left {
        let _ = std::process::Command::new("kill")
            .args(["-9", pid])
            .status();
    }
    assert_eq!(pids.len(), 2, "{pids:?}");
    assert!(left.is_empty(), "left running: {left:?} after {took:?}");
    assert!(
        took >= std::time::Duration::from_millis(2_500),
        "killed early: {took:?}"
    );
    assert!(
        took < std::time::Duration::from_secs(10),
        "the end hung: {took:?}"
    );
}

/// A server whose tools are `deferred`, as the binary runs it: `mcp_config` activates Pi's
/// `tool_search` (nothing to warn about), the first request declares it, the model's search
/// loads the server's tool, the next request declares that tool and its call reaches the
/// server.
#[tokio::test]
async fn mcp_config_gives_deferred_tools_to_tool_search_as_the_binary_does() {
    let workspace = tempfile::tempdir().unwrap();
    let agent = workspace.path().join(".agent");
    std::fs::create_dir_all(&agent).unwrap();
    let config = json!({"mcpServers": {"t": {"command": test_server(), "exposure": "deferred"}}});
    std::fs::write(agent.join("mcp.json"), config.to_string()).unwrap();
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"id": "call_1", "name": "tool_search",
                         "arguments": {"query": "echo text"}}]},
        {"tool_calls": [{"id": "call_2", "name": "mcp__t__echo",
                         "arguments": {"text": "found it"}}]},
        {"text": ["Done."]},
    ]));
    let (builder, notice) = common::builder(&mock, workspace.path())
        .mcp_config(&load_mcp_config(&agent, workspace.path(), false))
        .await;
    assert_eq!(notice, None);
    let events = common::prompt_once(builder, "echo something").await;
    let declared = |at: usize| -> Vec<String> {
        mock.requests()[at]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        declared(0),
        ["read", "bash", "edit", "write", "tool_search"]
    );
    assert_eq!(
        declared(1),
        [
            "read",
            "bash",
            "edit",
            "write",
            "tool_search",
            "mcp__t__echo"
        ]
    );
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_execution_end")
        .collect();
    assert_eq!(
        results[0]["result"]["details"]["loaded"],
        json!(["mcp__t__echo"])
    );
    assert_eq!(
        results[1]["result"]["content"][0]["text"], "found it",
        "{results:?}"
    );
}

/// A deferred server that answers `initialize` 3 s late, as the binary (and Pi 1.5.2) runs it:
/// `mcp_config` does not wait for it (it connects in the background), the model's search waits
/// for it and loads its tool, whose call reaches the server. The recording replays to the same
/// events with the server's binary deleted: its tools came as the search's decision.
#[tokio::test]
async fn mcp_config_does_not_wait_for_a_deferred_server_but_its_search_does() {
    let workspace = tempfile::tempdir().unwrap();
    let agent = workspace.path().join(".agent");
    std::fs::create_dir_all(&agent).unwrap();
    let server = workspace.path().join("mcp-server");
    std::fs::copy(test_server(), &server).unwrap();
    let delay = std::time::Duration::from_secs(3);
    let config = json!({"mcpServers": {"t": {"command": server, "exposure": "deferred",
        "env": {"MCP_TEST_START_DELAY_MS": delay.as_millis().to_string()}}}});
    std::fs::write(agent.join("mcp.json"), config.to_string()).unwrap();
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"id": "call_1", "name": "tool_search",
                         "arguments": {"query": "echo text"}}]},
        {"tool_calls": [{"id": "call_2", "name": "mcp__t__echo",
                         "arguments": {"text": "found it"}}]},
        {"text": ["Done."]},
    ]));
    let cassette = workspace.path().join("run.cassette.jsonl");
    let started = std::time::Instant::now();
    let (builder, notice) = common::builder(&mock, workspace.path())
        .record(&cassette)
        .mcp_config(&load_mcp_config(&agent, workspace.path(), false))
        .await;
    let configured = started.elapsed();
    assert!(configured * 2 < delay, "mcp_config waited {configured:?}");
    assert_eq!(notice, None);
    let events = common::prompt_once(builder, "echo something").await;
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "tool_execution_end")
        .collect();
    assert_eq!(
        results[0]["result"]["details"]["loaded"],
        json!(["mcp__t__echo"])
    );
    assert_eq!(
        results[1]["result"]["content"][0]["text"], "found it",
        "{results:?}"
    );

    std::fs::remove_file(&server).unwrap();
    let replay = SessionBuilder::new(workspace.path()).replay(&cassette);
    assert_eq!(common::prompt_once(replay, "echo something").await, events);
}
