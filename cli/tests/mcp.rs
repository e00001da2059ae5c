//! MCP servers in a run of the real binary, as Pi 1.5.2's built-in MCP extension runs them: the
//! agent dir's `mcp.json` starts the crate's test server (a real process over stdio, or over
//! streamable HTTP on 127.0.0.1) before the first prompt, its `direct` tools are declared to the
//! mock LLM and called; the cassette of that run replays byte for byte with the server's binary
//! deleted, and `pi replay --tools live` starts the server again to run the call. A server that
//! fails to start is one notice and the run goes on; an untrusted project's `mcp.json` is never
//! read, so a command in it never runs, nor one a cassette names; keys in `mcp.json` reach no
//! cassette.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use pi_testkit::MockLlm;
use serde_json::{json, Value};

#[path = "mcp/tool_search.rs"]
mod tool_search;

#[path = "mcp/lazy.rs"]
mod lazy;

#[path = "mcp/settle_order.rs"]
mod settle_order;

#[path = "mcp/abort.rs"]
mod abort;

#[path = "mcp/live_replay.rs"]
mod live_replay;

#[path = "mcp/tool_filters.rs"]
mod tool_filters;

#[path = "mcp/resources.rs"]
mod resources;

/// The test server's binary, built by the `pi-mcp` package next to this test (CI builds the
/// workspace's binaries first; a lone `cargo test` of this package builds it here).
fn test_server() -> PathBuf {
    pi_testkit::workspace_binary("pi-mcp", "pi-mcp-test-server")
}

/// A scratch folder: home, agent dir (models.json at the mock), workspace and sessions.
struct Scratch {
    root: tempfile::TempDir,
}

impl Scratch {
    fn new(mock: &MockLlm) -> Scratch {
        let root = tempfile::tempdir().unwrap();
        for dir in ["home", "agent", "cwd"] {
            std::fs::create_dir_all(root.path().join(dir)).unwrap();
        }
        let models = pi_testkit::demo::models_json(mock.port);
        std::fs::write(root.path().join("agent/models.json"), models.to_string()).unwrap();
        Scratch { root }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    /// The agent dir's `mcp.json` with these servers.
    fn servers(&self, servers: Value) {
        let config = json!({ "mcpServers": servers });
        std::fs::write(self.path("agent/mcp.json"), config.to_string()).unwrap();
    }

    /// A copy of the test server that the test may delete.
    fn server_copy(&self) -> PathBuf {
        let copy = self.path("mcp-server");
        std::fs::copy(test_server(), &copy).unwrap();
        copy
    }

    fn pi(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_pi"));
        command
            .args(args)
            .current_dir(self.path("cwd"))
            .env("HOME", self.path("home"))
            .env("PI_CODING_AGENT_DIR", self.path("agent"))
            .env("PI_OFFLINE", "1")
            .stdin(Stdio::null());
        command
    }

    /// A json-mode run of `prompt` with `read` and whatever MCP provides, recorded into
    /// `cassette` when given.
    fn run(&self, prompt: &str, cassette: Option<&Path>) -> Output {
        let mut command = self.pi(&["--mode", "json", "--tools", "read,mcp__*"]);
        command.args([
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--session-dir",
        ]);
        command.arg(self.path("sessions"));
        if let Some(cassette) = cassette {
            command.arg("--record").arg(cassette);
        }
        command.args(["-p", prompt]).output().unwrap()
    }
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn events(output: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The result of the run's one tool call.
fn tool_result(output: &Output) -> Value {
    let ends: Vec<Value> = events(output)
        .into_iter()
        .filter(|e| e["type"] == "tool_execution_end")
        .collect();
    assert_eq!(ends.len(), 1, "one tool call: {}", stderr(output));
    ends[0].clone()
}

fn calls(tool: &str, arguments: &str) -> Value {
    json!([
        {"tool_calls": [{"name": tool, "arguments": arguments}]},
        {"text": ["Done."]},
    ])
}

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
fn a_run_calls_a_stdio_servers_tool_and_its_cassette_replays_without_the_server() {
    let mock = MockLlm::start(&calls("mcp__t__echo", r#"{"text":"hello mcp"}"#));
    let scratch = Scratch::new(&mock);
    let server = scratch.server_copy();
    scratch.servers(json!({"t": {"command": server, "exposure": "direct",
                                 "toolExposure": {"slow": "hidden"}}}));
    let cassette = scratch.path("run.jsonl");
    let recorded = scratch.run("echo it", Some(&cassette));
    assert!(recorded.status.success(), "{}", stderr(&recorded));
    assert_eq!(stderr(&recorded), "", "a server that started says nothing");
    let end = tool_result(&recorded);
    assert_eq!(end["toolName"], "mcp__t__echo");
    assert_eq!(end["isError"], false);
    assert_eq!(end["result"]["content"][0]["text"], "hello mcp");
    // The first request declared the server's direct tools beside read.
    let first = &mock.requests()[0];
    let names: Vec<&str> = first["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"read") && names.contains(&"mcp__t__echo"),
        "{names:?}"
    );

    assert!(
        !names.contains(&"mcp__t__slow"),
        "a hidden tool is not offered: {names:?}"
    );
    // The cassette's configuration holds each server's whole tool list as it answered,
    // annotations and the tools not offered to the model included.
    let text = std::fs::read_to_string(&cassette).unwrap();
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let servers = &header["config"]["mcpServers"];
    assert_eq!(servers[0]["name"], "t", "{servers}");
    let listed = servers[0]["tools"].as_array().unwrap();
    assert_eq!(listed.len(), 7, "{servers}");
    assert_eq!(listed[0]["name"], "echo");
    assert_eq!(listed[0]["annotations"]["readOnlyHint"], true);

    std::fs::remove_file(&server).unwrap();
    let replay = |dir: &Path, live: bool| {
        let mut command = scratch.pi(&["replay", "--mode", "json"]);
        if live {
            command.args(["--tools", "live"]);
        }
        command.arg("--session-dir").arg(dir).arg(&cassette);
        command.output().unwrap()
    };
    let replayed = replay(&scratch.path("replayed"), false);
    assert!(replayed.status.success(), "{}", stderr(&replayed));
    assert_eq!(
        String::from_utf8_lossy(&replayed.stdout),
        String::from_utf8_lossy(&recorded.stdout)
    );
    assert_eq!(
        session_file(&scratch.path("replayed")),
        session_file(&scratch.path("sessions"))
    );

    // Going live needs the server again: the agent dir's mcp.json starts it for the replay.
    let refused = replay(&scratch.path("refused"), true);
    assert!(!refused.status.success(), "no server, no live replay");
    scratch.server_copy();
    let live = replay(&scratch.path("live"), true);
    assert!(live.status.success(), "{}", stderr(&live));
    assert_eq!(
        String::from_utf8_lossy(&live.stdout),
        String::from_utf8_lossy(&recorded.stdout)
    );
}

#[test]
fn a_run_calls_a_streamable_http_servers_tool() {
    let mut server = Command::new(test_server())
        .arg("--http")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .parse()
        .unwrap();
    let mock = MockLlm::start(&calls("mcp__h__echo", r#"{"text":"over http"}"#));
    let scratch = Scratch::new(&mock);
    let url = format!("http://127.0.0.1:{port}/mcp");
    scratch.servers(json!({"h": {"url": url, "exposure": "direct"}}));
    let output = scratch.run("echo it", None);
    let _ = server.kill();
    let _ = server.wait();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        tool_result(&output)["result"]["content"][0]["text"],
        "over http"
    );
}

#[test]
fn a_server_that_fails_to_start_is_one_notice_and_the_run_goes_on() {
    let mock = MockLlm::start(&calls("mcp__good__echo", r#"{"text":"still here"}"#));
    let scratch = Scratch::new(&mock);
    let server = test_server();
    scratch.servers(json!({
        "bad": {"command": server, "args": ["--fail-start"], "exposure": "direct"},
        "good": {"command": server, "exposure": "direct"},
    }));
    let output = scratch.run("echo it", None);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stderr(&output);
    assert_eq!(
        text.matches("MCP servers need attention:\n").count(),
        1,
        "{text}"
    );
    assert!(text.contains("\n  bad: failed: "), "{text}");
    assert!(text.contains("\nRun /mcp to fix.\n"), "{text}");
    assert!(!text.contains("good"), "{text}");
    assert_eq!(
        tool_result(&output)["result"]["content"][0]["text"],
        "still here"
    );
}

#[test]
fn no_mcp_starts_no_server() {
    let mock = MockLlm::start(&json!([{"text": ["Hi."]}]));
    let scratch = Scratch::new(&mock);
    let marker = scratch.path("started");
    let script = format!("touch '{}'", marker.display());
    scratch.servers(json!({"m": {"command": "sh", "args": ["-c", script]}}));
    let mut command = scratch.pi(&["--mode", "json", "--no-mcp", "--provider", "mock"]);
    command.args(["--model", "mock-model", "--no-session", "-p", "hi"]);
    let output = command.output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(!marker.exists(), "--no-mcp started a server");
    assert_eq!(stderr(&output), "");
}

/// The attack: a project folder whose `.pi/mcp.json` runs a command. Untrusted (no terminal to
/// ask in, no decision remembered), the command must not run; trusted with `--approve`, it runs,
/// which shows the marker is what the command would write.
#[test]
fn an_untrusted_projects_mcp_json_never_runs_its_command() {
    let mock = MockLlm::start(&json!([{"text": ["Hi."]}, {"text": ["Hi."]}]));
    let scratch = Scratch::new(&mock);
    let marker = scratch.path("pwned");
    let script = format!("touch '{}'", marker.display());
    std::fs::create_dir_all(scratch.path("cwd/.pi")).unwrap();
    let config = json!({"mcpServers": {"evil": {"command": "sh", "args": ["-c", script]}}});
    std::fs::write(scratch.path("cwd/.pi/mcp.json"), config.to_string()).unwrap();
    let run = |extra: &[&str]| {
        let mut command = scratch.pi(&["--mode", "json", "--provider", "mock"]);
        command.args(["--model", "mock-model", "--no-session"]);
        command.args(extra).args(["-p", "hi"]);
        command.output().unwrap()
    };
    let untrusted = run(&[]);
    assert!(untrusted.status.success(), "{}", stderr(&untrusted));
    assert!(
        !marker.exists(),
        "an untrusted project's mcp.json ran a command"
    );
    let trusted = run(&["--approve"]);
    assert!(trusted.status.success(), "{}", stderr(&trusted));
    assert!(
        marker.exists(),
        "a trusted project's mcp.json starts its servers"
    );
}

/// A tool result with `isError: true` is a failed call that keeps the server's content, as Pi's
/// loop reads a returned `isError` (recorded so, and replayed so).
#[test]
fn an_mcp_error_result_is_a_failed_call_keeping_its_content() {
    let mock = MockLlm::start(&calls("mcp__t__fail", "{}"));
    let scratch = Scratch::new(&mock);
    scratch.servers(json!({"t": {"command": test_server(), "exposure": "direct"}}));
    let cassette = scratch.path("run.jsonl");
    let output = scratch.run("fail", Some(&cassette));
    assert!(output.status.success(), "{}", stderr(&output));
    let end = tool_result(&output);
    assert_eq!(end["isError"], true, "{end}");
    assert_eq!(end["result"]["details"]["server"], "t", "{end}");
    let text = &end["result"]["content"][0]["text"];
    assert_eq!(text, "the tool failed on purpose", "{end}");
    let sent = &mock.requests()[1]["messages"];
    let last = &sent[sent.as_array().unwrap().len() - 1];
    assert_eq!(last["role"], "tool", "{last}");
    let replayed = scratch
        .pi(&["replay", "--mode", "json", "--session-dir"])
        .arg(scratch.path("replayed"))
        .arg(&cassette)
        .output()
        .unwrap();
    assert!(replayed.status.success(), "{}", stderr(&replayed));
    assert_eq!(replayed.stdout, output.stdout);
}

/// Another user of the temp folder plants a link where a long MCP result's full output is
/// saved (Pi's `pi-mcp-…` name, from the tool call's id): the run must not write through it
/// into the file it points to.
#[cfg(unix)]
#[test]
fn a_long_results_saved_output_does_not_follow_a_planted_link() {
    let long = "x".repeat(30_000);
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"id": "call_1", "name": "mcp__t__echo",
                         "arguments": json!({"text": long}).to_string()}]},
        {"text": ["Done."]},
    ]));
    let scratch = Scratch::new(&mock);
    scratch.servers(json!({"t": {"command": test_server(), "exposure": "direct"}}));
    let tmp = scratch.path("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let victim = scratch.path("victim.txt");
    std::fs::write(&victim, "precious\n").unwrap();
    std::os::unix::fs::symlink(&victim, tmp.join("pi-mcp-call1-1.txt")).unwrap();
    let mut command = scratch.pi(&["--mode", "json", "--tools", "read,mcp__*"]);
    command.args([
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--no-session",
    ]);
    let output = command
        .env("TMPDIR", &tmp)
        .args(["-p", "echo"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let end = tool_result(&output);
    let text = end["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("chars truncated"), "{text}");
    let after = std::fs::read_to_string(&victim).unwrap();
    assert!(
        after == "precious\n",
        "the link was followed: {} bytes",
        after.len()
    );
}

/// The attack: keys in the agent dir's `mcp.json` (a stdio server's `env`, one literal and one
/// `${VAR}` of a variable whose name says nothing, and an HTTP server's `Authorization`
/// header) that a tool call repeats. The cassette, and every file the run wrote but Pi's
/// session file (which keeps the conversation as Pi writes it), must hold none of them, and the
/// cassette still checks.
#[test]
fn keys_in_mcp_json_reach_no_cassette() {
    const ENV_KEY: &str = "mcp-env-literal-key-0123456789";
    const VAR_KEY: &str = "mcp-env-variable-key-0123456789";
    const HEADER_KEY: &str = "mcp-http-bearer-key-0123456789";
    let mut server = Command::new(test_server())
        .arg("--http")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_owned();
    let text = format!("{ENV_KEY} {VAR_KEY} {HEADER_KEY}");
    let mock = MockLlm::start(&calls("mcp__t__echo", &json!({ "text": text }).to_string()));
    let scratch = Scratch::new(&mock);
    scratch.servers(json!({
        "t": {"command": test_server(), "exposure": "direct",
              "env": {"SERVICE_API_KEY": ENV_KEY, "UPSTREAM": "${PLANTED_UPSTREAM}"}},
        "h": {"url": format!("http://127.0.0.1:{port}/mcp"), "exposure": "direct",
              "headers": {"Authorization": format!("Bearer {HEADER_KEY}")}},
    }));
    let cassette = scratch.path("run.jsonl");
    let output = scratch
        .pi(&[
            "--mode",
            "json",
            "--tools",
            "read,mcp__*",
            "--provider",
            "mock",
        ])
        .args(["--model", "mock-model", "--session-dir"])
        .arg(scratch.path("sessions"))
        .arg("--record")
        .arg(&cassette)
        .args(["-p", "echo it"])
        .env("PLANTED_UPSTREAM", VAR_KEY)
        .output()
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stderr(&output), "", "both servers started");
    // The keys went where the test planted them: the server echoed them to the model.
    assert_eq!(tool_result(&output)["result"]["content"][0]["text"], text);

    let recorded = std::fs::read_to_string(&cassette).unwrap();
    assert!(recorded.contains("<<secret-"), "placeholders written");
    for path in pi_testkit::files_under(scratch.root.path()) {
        let name = path.to_string_lossy();
        if name.ends_with("mcp.json") || name.contains("/sessions/") {
            continue;
        }
        let written = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        for key in [ENV_KEY, VAR_KEY, HEADER_KEY] {
            assert!(!written.contains(key), "{key} reached {}", path.display());
        }
    }
    let check = scratch
        .pi(&["replay", "--check"])
        .arg(&cassette)
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", stderr(&check));
}

/// The attack: an untrusted cassette replayed with its tools run again. Its header lists the
/// MCP server with a command that writes a marker (`mcpServers`, which no replay reads back),
/// the project it is replayed in has a `.pi/mcp.json` whose server of the same name writes
/// another, and the agent dir has no `mcp.json`: `pi replay --tools live` must start neither
/// command and refuse, naming the tool it has no server for; a plain replay starts nothing.
#[test]
fn a_live_replay_never_starts_a_command_the_cassette_or_the_project_names() {
    let mock = MockLlm::start(&calls("mcp__t__echo", r#"{"text":"hi"}"#));
    let scratch = Scratch::new(&mock);
    scratch.servers(json!({"t": {"command": test_server(), "exposure": "direct"}}));
    let recorded = scratch.path("run.jsonl");
    let output = scratch.run("echo it", Some(&recorded));
    assert!(output.status.success(), "{}", stderr(&output));
    std::fs::remove_file(scratch.path("agent/mcp.json")).unwrap();

    let touching = |marker: &Path| {
        let script = format!("touch '{}'", marker.display());
        json!({"command": "sh", "args": ["-c", script], "exposure": "direct"})
    };
    let from_cassette = scratch.path("from-cassette");
    let from_project = scratch.path("from-project");
    let text = std::fs::read_to_string(&recorded).unwrap();
    let mut lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let server = &mut lines[0]["config"]["mcpServers"][0];
    for (key, value) in touching(&from_cassette).as_object().unwrap() {
        server[key] = value.clone();
    }
    let hostile = scratch.path("hostile.jsonl");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&hostile, text).unwrap();
    std::fs::create_dir_all(scratch.path("cwd/.pi")).unwrap();
    let project = json!({"mcpServers": {"t": touching(&from_project)}});
    std::fs::write(scratch.path("cwd/.pi/mcp.json"), project.to_string()).unwrap();

    let replay = |live: bool| {
        let mut command = scratch.pi(&["replay", "--mode", "json"]);
        if live {
            command.args(["--tools", "live"]);
        }
        command.arg("--session-dir").arg(scratch.path("replayed"));
        command.arg(&hostile).output().unwrap()
    };
    let live = replay(true);
    assert!(!live.status.success(), "no server, no live replay");
    assert!(stderr(&live).contains("mcp__t__echo"), "{}", stderr(&live));
    let plain = replay(false);
    assert!(plain.status.success(), "{}", stderr(&plain));
    for marker in [&from_cassette, &from_project] {
        assert!(!marker.exists(), "a replay ran {}", marker.display());
    }
}

/// The system message of the mock's first request.
fn first_system_message(mock: &MockLlm) -> String {
    let first = &mock.requests()[0];
    let system = first["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "system" || m["role"] == "developer")
        .expect("a system message");
    match &system["content"] {
        Value::String(text) => text.clone(),
        other => other[0]["text"].as_str().unwrap().to_owned(),
    }
}

/// A server whose tools the model reaches only through codemode or `tool_search` (the default
/// exposure is `codemode`) is listed in Pi 1.5.2's `mcp_servers` section of the system prompt,
/// by its configured description (its instructions are not known yet: the first prompt does
/// not wait for it), and a direct-only or disabled server is not; neither tool exists here, and
/// Pi's warning that those tools cannot be called is a notice print mode does not show (as
/// 1.5.2's shows none): nothing is said on stderr. The section is in the cassette's
/// configuration: the replay matches.
#[test]
fn servers_reached_indirectly_are_listed_in_the_system_prompt() {
    let mock = MockLlm::start(&json!([{"text": ["Hi."]}]));
    let scratch = Scratch::new(&mock);
    let server = test_server();
    scratch.servers(json!({
        "plain": {"command": server},
        "described": {"command": server, "exposure": "deferred",
                      "description": "Echoes for the tests\nnot this line"},
        "direct-only": {"command": server, "exposure": "direct"},
        "off": {"command": server, "enabled": false},
    }));
    let cassette = scratch.path("run.jsonl");
    let recorded = scratch.run("hi", Some(&cassette));
    assert!(recorded.status.success(), "{}", stderr(&recorded));
    let section = "<mcp_servers>\nMCP servers whose tools are not declared to you. \
        Call the tools of `codemode` servers from codemode scripts. \
        Load the tools of `tool_search` servers with `tool_search`.\n\
        - mcp__described (tool_search): Echoes for the tests\n\
        - mcp__plain (codemode)\n</mcp_servers>";
    let system = first_system_message(&mock);
    assert!(system.ends_with(section), "{system}");
    assert_eq!(stderr(&recorded), "");
    let replayed = scratch
        .pi(&["replay", "--mode", "json", "--session-dir"])
        .arg(scratch.path("replayed"))
        .arg(&cassette)
        .output()
        .unwrap();
    assert!(replayed.status.success(), "{}", stderr(&replayed));
    assert_eq!(
        session_file(&scratch.path("replayed")),
        session_file(&scratch.path("sessions"))
    );
}

/// Only `direct` servers: no section and nothing said.
#[test]
fn direct_servers_add_no_section() {
    let mock = MockLlm::start(&json!([{"text": ["Hi."]}]));
    let scratch = Scratch::new(&mock);
    scratch.servers(json!({"d": {"command": test_server(), "exposure": "direct"}}));
    let output = scratch.run("hi", None);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stderr(&output), "");
    assert!(!first_system_message(&mock).contains("<mcp_servers>"));
}

/// Whether process `pid` still runs (gone, or a zombie no one reaped yet, is not running).
fn running(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|s| !s.trim_start().starts_with('Z'))
    })
}

/// The attack: a server started through a wrapper (as `npx` and `uvx` start theirs) whose
/// wrapper leaves a process of its own behind. As Pi 1.5.2 stops a stdio server, the run's end
/// stops the server's whole process group, so nothing it started outlives the run.
#[cfg(target_os = "linux")]
#[test]
fn a_run_stops_everything_its_servers_started() {
    let mock = MockLlm::start(&calls("mcp__w__echo", r#"{"text":"wrapped"}"#));
    let scratch = Scratch::new(&mock);
    let pid_file = scratch.path("left-behind.pid");
    let script = format!(
        "sleep 300 & echo $! > '{}'; exec \"$0\"",
        pid_file.display()
    );
    scratch.servers(
        json!({"w": {"command": "sh", "args": ["-c", script, test_server()],
                                 "exposure": "direct"}}),
    );
    let output = scratch.run("echo it", None);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        tool_result(&output)["result"]["content"][0]["text"],
        "wrapped"
    );
    let pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_owned();
    // Stopping is asynchronous: look a bounded number of times.
    let mut alive = running(&pid);
    for _ in 0..50 {
        if !alive {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        alive = running(&pid);
    }
    if alive {
        let _ = Command::new("kill").arg(&pid).status();
    }
    assert!(!alive, "the server's wrapper left process {pid} running");
}

/// A run's servers stop together when it ends, as Pi stops them: three servers that ignore
/// SIGTERM (and whose children do too) are killed one grace (2.5 s) after their stdin closed,
/// all at once, so the run ends after about one grace, not three; and when it has ended, none
/// of their processes runs.
#[cfg(target_os = "linux")]
#[test]
fn a_runs_stubborn_servers_stop_together_before_it_ends() {
    let mock = MockLlm::start(&json!([{"text": ["done"]}]));
    let scratch = Scratch::new(&mock);
    let stubborn = r#"trap '' TERM; echo $$ >> "$1"; "$0"; sleep 600 & echo $! >> "$1"; wait"#;
    let pids = scratch.path("pids");
    let server = |_| json!({"command": "sh", "args": ["-c", stubborn, test_server(), pids], "exposure": "direct"});
    scratch.servers(json!({"a": server(0), "b": server(1), "c": server(2)}));
    let started = std::time::Instant::now();
    let output = scratch.run("hi", None);
    let took = started.elapsed();
    assert!(output.status.success(), "{}", stderr(&output));
    let all: Vec<String> = std::fs::read_to_string(&pids)
        .unwrap()
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let left: Vec<&String> = all.iter().filter(|pid| running(pid)).collect();
    for pid in &left {
        let _ = Command::new("kill").args(["-9", pid]).status();
    }
    assert_eq!(all.len(), 6, "{all:?}");
    assert!(left.is_empty(), "left running after the run: {left:?}");
    assert!(
        took >= std::time::Duration::from_millis(2_500),
        "the servers were not given their grace: {took:?}"
    );
    assert!(
        took < std::time::Duration::from_millis(5_000),
        "the servers were stopped one after another: {took:?}"
    );
}

/// The attack: a recorded cassette's header edited where it says what the run's tools were.
/// The MCP servers' tool lists (`config.mcpServers`: a tool's description changed, a tool
/// removed), the declarations the model was given (`config.customTools`) and the hook points
/// the machine waited at (`config.handledHooks`): `pi replay --check` must fail every time, and
/// an edit of the servers' lists must be refused naming `mcpServers`.
#[test]
fn a_header_edited_where_it_lists_the_tools_fails_the_check() {
    let mock = MockLlm::start(&calls("mcp__t__echo", r#"{"text":"hi"}"#));
    let scratch = Scratch::new(&mock);
    scratch.servers(json!({"t": {"command": test_server(), "exposure": "direct"}}));
    let recorded = scratch.path("run.jsonl");
    let output = scratch.run("echo it", Some(&recorded));
    assert!(output.status.success(), "{}", stderr(&output));
    let check = |name: &str, edit: &dyn Fn(&mut Value)| {
        let text = std::fs::read_to_string(&recorded).unwrap();
        let mut lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        edit(&mut lines[0]["config"]);
        let path = scratch.path(&format!("{name}.jsonl"));
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&path, text).unwrap();
        scratch
            .pi(&["replay", "--check"])
            .arg(&path)
            .output()
            .unwrap()
    };
    let untouched = check("untouched", &|_| {});
    assert!(untouched.status.success(), "{}", stderr(&untouched));

    let echo_index = |config: &Value| {
        config["mcpServers"][0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .position(|t| t["name"] == "echo")
            .unwrap()
    };
    let described = check("described", &|config| {
        let i = echo_index(config);
        config["mcpServers"][0]["tools"][i]["description"] = json!("Echoes, and more.");
    });
    assert!(!described.status.success(), "a description edit passed");
    assert!(
        stderr(&described).contains("mcpServers"),
        "{}",
        stderr(&described)
    );
    let removed = check("removed", &|config| {
        let i = echo_index(config);
        config["mcpServers"][0]["tools"]
            .as_array_mut()
            .unwrap()
            .remove(i);
    });
    assert!(!removed.status.success(), "a removed tool passed");
    assert!(
        stderr(&removed).contains("mcpServers"),
        "{}",
        stderr(&removed)
    );

    let declared = check("declared", &|config| {
        let tools = config["customTools"].as_array_mut().unwrap();
        let echo = tools
            .iter_mut()
            .find(|t| t["name"] == "mcp__t__echo")
            .unwrap();
        echo["description"] = json!("Echoes, and more.");
    });
    assert!(!declared.status.success(), "a declaration edit passed");
    let hooked = check("hooked", &|config| {
        config["handledHooks"] = json!(["tool_call"]);
    });
    assert!(!hooked.status.success(), "a hook point added passed");
}

/// A live replay starts only the servers the recording declares, from the agent dir the user
/// names (`PI_CODING_AGENT_DIR`): the user's `mcp.json` also names a server the recorded run
/// never had, whose command writes a marker. The replay runs the recorded server's tool again
/// and matches, and the other command never runs.
#[test]
fn a_live_replay_starts_only_the_servers_the_recording_declares() {
    let mock = MockLlm::start(&calls("mcp__t__echo", r#"{"text":"hi"}"#));
    let scratch = Scratch::new(&mock);
    scratch.servers(json!({"t": {"command": test_server(), "exposure": "direct"}}));
    let recorded = scratch.path("run.jsonl");
    let output = scratch.run("echo it", Some(&recorded));
    assert!(output.status.success(), "{}", stderr(&output));

    let marker = scratch.path("undeclared-ran");
    let script = format!("touch '{}'", marker.display());
    scratch.servers(json!({
        "t": {"command": test_server(), "exposure": "direct"},
        "other": {"command": "sh", "args": ["-c", script], "exposure": "direct"},
    }));
    let live = scratch
        .pi(&["replay", "--mode", "json", "--tools", "live", "--workspace"])
        .arg(scratch.path("cwd"))
        .arg("--session-dir")
        .arg(scratch.path("replayed"))
        .arg(&recorded)
        .output()
        .unwrap();
    assert!(live.status.success(), "{}", stderr(&live));
    assert_eq!(tool_result(&live)["isError"], false, "{}", stderr(&live));
    assert!(
        !marker.exists(),
        "a live replay started a server the run never had"
    );
}
