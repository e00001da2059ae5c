//! MCP servers that a TypeScript extension registers (`pi.registerMcpServer`), in a run of the
//! real binary: the extension host's `init` hands them over, they start next to `mcp.json`'s
//! (which wins a shared name), their tools are declared and called as `mcp__<server>__<tool>`,
//! and the run's cassette replays byte for byte with the server's binary and Node both absent.
//! Needs Pi 1.5.2's install (`PI_EXTENSION_HOST_PI_DIR`); skipped with a line without it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use pi_testkit::MockLlm;
use serde_json::{json, Value};

struct Scratch {
    root: tempfile::TempDir,
    node_bin: PathBuf,
}

impl Scratch {
    fn new(mock: &MockLlm, install: &Path) -> Scratch {
        let root = tempfile::tempdir().unwrap();
        for dir in ["home", "agent", "cwd"] {
            std::fs::create_dir_all(root.path().join(dir)).unwrap();
        }
        let models = pi_testkit::demo::models_json(mock.port);
        std::fs::write(root.path().join("agent/models.json"), models.to_string()).unwrap();
        Scratch {
            root,
            node_bin: install.join("node/bin"),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.path().join(name)
    }

    /// A copy of the crate's test server that the test may delete.
    fn server_copy(&self) -> PathBuf {
        let copy = self.path("mcp-server");
        std::fs::copy(
            pi_testkit::workspace_binary("pi-mcp", "pi-mcp-test-server"),
            &copy,
        )
        .unwrap();
        copy
    }

    /// An extension registering `name` with `config`.
    fn extension(&self, name: &str, config: &Value) -> PathBuf {
        let path = self.path("register.ts");
        let source = format!(
            "export default function (pi: any) {{\n  pi.registerMcpServer({}, {config});\n}}\n",
            json!(name)
        );
        std::fs::write(&path, source).unwrap();
        path
    }

    /// An extension registering `name` with `config` in its `session_start` handler, after
    /// loading, and unregistering it in its `/drop` command; it appends the names each
    /// `mcp_servers_change` brings as a `seen` entry.
    fn later_extension(&self, name: &str, config: &Value) -> PathBuf {
        let path = self.path("later.ts");
        let source = format!(
            "export default function (pi: any) {{\n  \
             pi.on(\"mcp_servers_change\", (event: any) => pi.appendEntry(\"seen\", \
             event.servers.map((s: any) => s.name)));\n  \
             pi.on(\"session_start\", () => pi.registerMcpServer({name}, {config}));\n  \
             pi.registerCommand(\"drop\", {{ handler: async () => pi.unregisterMcpServer({name}) }});\n}}\n",
            name = json!(name)
        );
        std::fs::write(&path, source).unwrap();
        path
    }

    /// `pi` with the install's Node on PATH when `node`, else without any install.
    fn pi(&self, args: &[&str], node: bool) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_pi"));
        command
            .args(args)
            .current_dir(self.path("cwd"))
            .env("HOME", self.path("home"))
            .env("PI_CODING_AGENT_DIR", self.path("agent"))
            .env("PI_OFFLINE", "1")
            .env_remove("PI_EXTENSION_HOST_PI_DIR")
            .stdin(Stdio::null());
        if node {
            let path = std::env::var("PATH").unwrap_or_default();
            command
                .env("PATH", format!("{}:{path}", self.node_bin.display()))
                .env(
                    "PI_EXTENSION_HOST_PI_DIR",
                    std::env::var("PI_EXTENSION_HOST_PI_DIR").unwrap(),
                );
        } else {
            command.env("PATH", "/usr/bin:/bin");
        }
        command
    }

    /// A json-mode run of `prompt` with `extension` loaded, recorded into `cassette`.
    fn run(&self, extension: &Path, cassette: &Path, extra: &[&str]) -> Output {
        self.run_prompts(extension, cassette, extra, &["echo it"])
    }

    /// A json-mode run of `prompts` with `extension` loaded, recorded into `cassette`.
    fn run_prompts(
        &self,
        extension: &Path,
        cassette: &Path,
        extra: &[&str],
        prompts: &[&str],
    ) -> Output {
        let mut args = vec![
            "--mode",
            "json",
            "--tools",
            "read,mcp__*",
            "--provider",
            "mock",
        ];
        args.extend(["--model", "mock-model", "-e", extension.to_str().unwrap()]);
        args.extend(extra);
        let mut command = self.pi(&args, true);
        command.arg("--session-dir").arg(self.path("sessions"));
        command.arg("--record").arg(cassette);
        command.arg("-p").args(prompts).output().unwrap()
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

fn tool_ends(output: &Output) -> Vec<Value> {
    events(output)
        .into_iter()
        .filter(|e| e["type"] == "tool_execution_end")
        .collect()
}

fn calls(tool: &str) -> Value {
    json!([
        {"tool_calls": [{"name": tool, "arguments": r#"{"text":"hello mcp"}"#}]},
        {"text": ["Done."]},
    ])
}

#[test]
fn a_registered_servers_tool_is_called_recorded_and_replayed_without_node_or_server() {
    let Some(install) = pi_testkit::extension_host_install() else {
        return;
    };
    let mock = MockLlm::start(&calls("mcp__reg__echo"));
    let scratch = Scratch::new(&mock, &install);
    let server = scratch.server_copy();
    let extension = scratch.extension("reg", &json!({"command": server, "exposure": "direct"}));
    let cassette = scratch.path("run.jsonl");
    let recorded = scratch.run(&extension, &cassette, &[]);
    assert!(recorded.status.success(), "{}", stderr(&recorded));
    assert_eq!(stderr(&recorded), "");
    let ends = tool_ends(&recorded);
    assert_eq!(ends.len(), 1, "{}", stderr(&recorded));
    assert_eq!(ends[0]["toolName"], "mcp__reg__echo");
    assert_eq!(ends[0]["isError"], false);
    assert_eq!(ends[0]["result"]["content"][0]["text"], "hello mcp");
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(&cassette)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(header["config"]["mcpServers"][0]["name"], "reg", "{header}");

    std::fs::remove_file(&server).unwrap();
    let mut replay = scratch.pi(&["replay", "--mode", "json"], false);
    replay.arg("--session-dir").arg(scratch.path("replayed"));
    let replayed = replay.arg(&cassette).output().unwrap();
    assert!(replayed.status.success(), "{}", stderr(&replayed));
    assert_eq!(
        String::from_utf8_lossy(&replayed.stdout),
        String::from_utf8_lossy(&recorded.stdout)
    );
    assert_tools_live_refused(&scratch, &cassette, &extension);
}

/// A server registered after loading (in `session_start`) is connected by the MCP extension's
/// `mcp_servers_change` handler: its tool is declared in the next request and called; the
/// extension's own handler hears of the change (its entries in the session file). Unregistered
/// by a command, its tool is withdrawn: the next prompt's request no longer declares it. The
/// cassette replays byte for byte, and `--check`s, with the server's binary and Node absent,
/// and holds no line of the server's configuration.
#[test]
fn a_server_registered_after_loading_is_connected_called_withdrawn_and_replayed_without_node() {
    let Some(install) = pi_testkit::extension_host_install() else {
        return;
    };
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "mcp__reg__echo", "arguments": r#"{"text":"hello later"}"#}]},
        {"text": ["Done."]},
        {"text": ["Gone."]},
    ]));
    let scratch = Scratch::new(&mock, &install);
    let server = scratch.server_copy();
    let extension =
        scratch.later_extension("reg", &json!({"command": server, "exposure": "direct"}));
    let cassette = scratch.path("run.jsonl");
    let recorded = scratch.run_prompts(&extension, &cassette, &[], &["echo it", "/drop", "again"]);
    assert!(recorded.status.success(), "{}", stderr(&recorded));
    assert_eq!(stderr(&recorded), "");
    let ends = tool_ends(&recorded);
    assert_eq!(
        ends.len(),
        1,
        "{}",
        String::from_utf8_lossy(&recorded.stdout)
    );
    assert_eq!(ends[0]["toolName"], "mcp__reg__echo");
    assert_eq!(ends[0]["isError"], false, "{}", ends[0]);
    assert_eq!(ends[0]["result"]["content"][0]["text"], "hello later");
    let declared = mock.declared_tools();
    let echo = |tools: &Vec<String>| tools.iter().any(|t| t == "mcp__reg__echo");
    assert_eq!(declared.len(), 3);
    assert!(echo(&declared[0]) && echo(&declared[1]), "{declared:?}");
    assert_eq!(declared[2], ["read"]);
    let sessions = pi_testkit::files_under(&scratch.path("sessions"));
    let session = std::fs::read_to_string(&sessions[0]).unwrap();
    let seen: Vec<Value> = session
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|entry| entry["customType"] == "seen")
        .map(|entry| entry["data"].clone())
        .collect();
    assert_eq!(seen, [json!(["reg"]), json!([])]);
    let written = std::fs::read_to_string(&cassette).unwrap();
    assert!(
        !written.contains(server.to_str().unwrap()),
        "the registered configuration reached the cassette"
    );

    std::fs::remove_file(&server).unwrap();
    let mut replay = scratch.pi(&["replay", "--mode", "json"], false);
    replay.arg("--session-dir").arg(scratch.path("replayed"));
    let replayed = replay.arg(&cassette).output().unwrap();
    assert!(replayed.status.success(), "{}", stderr(&replayed));
    assert_eq!(
        String::from_utf8_lossy(&replayed.stdout),
        String::from_utf8_lossy(&recorded.stdout)
    );
    let check = scratch
        .pi(&["replay", "--check"], false)
        .arg(&cassette)
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", stderr(&check));
    assert_tools_live_refused(&scratch, &cassette, &extension);

    // The extensions run again register the server again; the MCP extension's recorded
    // decisions bring its tools, so the replay still prints the same bytes.
    let mut live = scratch.pi(&["replay", "--extensions", "live", "--mode", "json"], true);
    live.arg("--session-dir")
        .arg(scratch.path("live-extensions"));
    let replayed = live.arg(&cassette).output().unwrap();
    assert!(replayed.status.success(), "{}", stderr(&replayed));
    assert_eq!(
        String::from_utf8_lossy(&replayed.stdout),
        String::from_utf8_lossy(&recorded.stdout)
    );
}

/// A server with resources registered after loading: the MCP extension's decision brings its
/// tool and, after it, Pi 1.5.2's resource tools (direct, as the server is), and its tool's
/// resource link says how to read it; the model reads the resource. Unregistered by a command,
/// the resource tools are withdrawn with its tool: the next prompt's request declares neither.
/// The cassette replays byte for byte, and `--check`s, with the server's binary and Node
/// absent; an edited resource tool declaration in the decision fails the check.
#[test]
fn a_later_servers_resource_tools_come_and_go_with_it_and_replay_without_node() {
    let Some(install) = pi_testkit::extension_host_install() else {
        return;
    };
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "mcp__reg__link", "arguments": "{}"}]},
        {"tool_calls": [{"name": "read_mcp_resource",
                         "arguments": r#"{"server":"reg","uri":"notes://first"}"#}]},
        {"text": ["Done."]},
        {"text": ["Gone."]},
    ]));
    let scratch = Scratch::new(&mock, &install);
    let server = scratch.server_copy();
    let config = json!({"command": server, "exposure": "direct",
                        "env": {"MCP_TEST_RESOURCES": "1", "MCP_TEST_LINK": "1"}});
    let extension = scratch.later_extension("reg", &config);
    let cassette = scratch.path("run.jsonl");
    let mut command = scratch.pi(&["--mode", "json"], true);
    command
        .args(["--provider", "mock", "--model", "mock-model", "-e"])
        .arg(&extension)
        .arg("--session-dir")
        .arg(scratch.path("sessions"))
        .arg("--record")
        .arg(&cassette)
        .args(["-p", "link it", "/drop", "again"]);
    let recorded = command.output().unwrap();
    assert!(recorded.status.success(), "{}", stderr(&recorded));
    assert_eq!(stderr(&recorded), "");
    let ends = tool_ends(&recorded);
    assert_eq!(
        ends.len(),
        2,
        "{}",
        String::from_utf8_lossy(&recorded.stdout)
    );
    assert_eq!(
        ends[0]["result"]["content"][1]["text"],
        "[Resource notes://first \"The first note\" (text/plain, 2.0KB): What came first. \
         Read it with read_mcp_resource (server \"reg\")]"
    );
    assert_eq!(ends[1]["toolName"], "read_mcp_resource");
    assert_eq!(ends[1]["result"]["content"][0]["text"], "The first note.");
    let declared = mock.declared_tools();
    assert_eq!(declared.len(), 4, "{declared:?}");
    let defaults = ["read", "bash", "edit", "write"];
    let resources = [
        "list_mcp_resources",
        "list_mcp_resource_templates",
        "read_mcp_resource",
    ];
    let mut last: Vec<&str> = vec!["mcp__reg__link"];
    last.extend(resources);
    assert_eq!(
        declared[0][declared[0].len() - 4..],
        last,
        "the resource tools after the server's tools"
    );
    assert_eq!(declared[3], defaults);

    std::fs::remove_file(&server).unwrap();
    let mut replay = scratch.pi(&["replay", "--mode", "json"], false);
    replay.arg("--session-dir").arg(scratch.path("replayed"));
    let replayed = replay.arg(&cassette).output().unwrap();
    assert!(replayed.status.success(), "{}", stderr(&replayed));
    assert_eq!(
        String::from_utf8_lossy(&replayed.stdout),
        String::from_utf8_lossy(&recorded.stdout)
    );
    let check = |path: &Path| {
        scratch
            .pi(&["replay", "--check"], false)
            .arg(path)
            .output()
            .unwrap()
    };
    let checked = check(&cassette);
    assert!(checked.status.success(), "{}", stderr(&checked));

    // The attack: the resource tool's declaration the decision brought, edited.
    let text = std::fs::read_to_string(&cassette).unwrap();
    let edited = text.replacen(
        "Read a specific resource from an MCP server",
        "Read any resource from an MCP server",
        1,
    );
    assert_ne!(edited, text, "no resource tool declaration in the cassette");
    let tampered = scratch.path("edited.jsonl");
    std::fs::write(&tampered, edited).unwrap();
    assert!(
        !check(&tampered).status.success(),
        "an edited resource tool passed"
    );
}

/// `pi replay --tools live` of a run whose extension registered the server `reg` says it
/// cannot start it (the recording keeps no registered configuration), naming the server.
fn assert_tools_live_refused(scratch: &Scratch, cassette: &Path, extension: &Path) {
    let mut live = scratch.pi(&["replay", "--tools", "live", "--mode", "json"], false);
    live.arg("--session-dir").arg(scratch.path("live"));
    let refused = live.arg(cassette).output().unwrap();
    assert!(!refused.status.success());
    let expected = format!(
        "--tools live cannot start the MCP server \"reg\", which the extension \"{}\" \
         registered: a recording keeps no registered server's configuration (its env or \
         headers may hold keys). Replay without --tools live.",
        extension.display()
    );
    assert!(stderr(&refused).contains(&expected), "{}", stderr(&refused));
}

/// `mcp.json`'s server of the same name wins: the registered one's command never runs.
#[test]
fn a_configured_server_of_the_same_name_wins_over_a_registered_one() {
    let Some(install) = pi_testkit::extension_host_install() else {
        return;
    };
    let mock = MockLlm::start(&calls("mcp__reg__echo"));
    let scratch = Scratch::new(&mock, &install);
    let server = scratch.server_copy();
    let marker = scratch.path("registered-ran");
    let script = format!("touch '{}'", marker.display());
    let extension = scratch.extension("reg", &json!({"command": "sh", "args": ["-c", script]}));
    let configured = json!({"mcpServers": {"reg": {"command": server, "exposure": "direct"}}});
    std::fs::write(scratch.path("agent/mcp.json"), configured.to_string()).unwrap();
    let recorded = scratch.run(&extension, &scratch.path("run.jsonl"), &[]);
    assert!(recorded.status.success(), "{}", stderr(&recorded));
    assert_eq!(tool_ends(&recorded)[0]["isError"], false);
    assert!(!marker.exists(), "the overridden registration started");
}

/// `--no-mcp` leaves nothing to connect a registered server: Pi 1.5.2's one
/// `register_mcp_server` error on stderr, its command never run; the replay, without Node,
/// says it again from the recording.
#[test]
fn no_mcp_reports_each_registered_server_and_its_replay_says_it_again() {
    let Some(install) = pi_testkit::extension_host_install() else {
        return;
    };
    assert_no_mcp_reports_the_server_and_its_replay_says_it_again(&install, |scratch, config| {
        scratch.extension("reg", config)
    });
}

/// Records, with `--no-mcp`, a run whose extension (`extension` writes it) registers the
/// server `reg`, whose command would leave a marker: Pi 1.5.2's `register_mcp_server` error
/// is the run's stderr, the command never ran, and the replay without Node prints the same.
fn assert_no_mcp_reports_the_server_and_its_replay_says_it_again(
    install: &Path,
    extension: impl FnOnce(&Scratch, &Value) -> PathBuf,
) {
    let mock = MockLlm::start(&json!([{"text": ["Hi."]}]));
    let scratch = Scratch::new(&mock, install);
    let marker = scratch.path("registered-ran");
    let script = format!("touch '{}'", marker.display());
    let extension = extension(&scratch, &json!({"command": "sh", "args": ["-c", script]}));
    let cassette = scratch.path("run.jsonl");
    let recorded = scratch.run(&extension, &cassette, &["--no-mcp"]);
    assert!(recorded.status.success(), "{}", stderr(&recorded));
    let expected = format!(
        "Extension error ({}): MCP server \"reg\" is registered, but no loaded extension \
         connects MCP servers; another extension may have replaced the built-in MCP support\n",
        extension.display()
    );
    assert_eq!(stderr(&recorded), expected);
    assert!(!marker.exists(), "--no-mcp started a registered server");

    let mut replay = scratch.pi(&["replay", "--mode", "json"], false);
    replay.arg("--session-dir").arg(scratch.path("replayed"));
    let replayed = replay.arg(&cassette).output().unwrap();
    assert!(replayed.status.success(), "{}", stderr(&replayed));
    assert_eq!(stderr(&replayed), expected);
    assert_eq!(
        String::from_utf8_lossy(&replayed.stdout),
        String::from_utf8_lossy(&recorded.stdout)
    );
}

/// The attack: a key in the `env` of a server an extension registers, which a tool call
/// repeats. As for `mcp.json`'s servers, the cassette and every file the run wrote but the
/// extension's source and Pi's session file must hold none of it, and the cassette checks.
#[test]
fn a_key_in_a_registered_servers_env_reaches_no_cassette() {
    assert_a_servers_env_key_reaches_no_cassette(
        "registered-env-key-0123456789",
        Scratch::extension,
    );
}

/// The attack on a server registered after loading: a key in its `env`, which a tool call
/// repeats. The recording learns the key when the server is connected, so the cassette and
/// every file the run wrote but the extension's source and Pi's session file hold none of it,
/// and the cassette checks.
#[test]
fn a_key_in_the_env_of_a_server_registered_after_loading_reaches_no_cassette() {
    assert_a_servers_env_key_reaches_no_cassette(
        "later-registered-env-key-0123456789",
        Scratch::later_extension,
    );
}

/// Records a run whose extension (made by `register`) registers a server with `key` in its
/// `env` and the model has the server's tool repeat it: no file the run wrote but the
/// extension's source and Pi's session file holds the key, and the cassette checks.
fn assert_a_servers_env_key_reaches_no_cassette(
    key: &str,
    register: fn(&Scratch, &str, &Value) -> std::path::PathBuf,
) {
    let Some(install) = pi_testkit::extension_host_install() else {
        return;
    };
    let text = format!("the key is {key}");
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "mcp__reg__echo", "arguments": json!({"text": text}).to_string()}]},
        {"text": ["Done."]},
    ]));
    let scratch = Scratch::new(&mock, &install);
    let server = scratch.server_copy();
    let extension = register(
        &scratch,
        "reg",
        &json!({"command": server, "exposure": "direct", "env": {"SERVICE_API_KEY": key}}),
    );
    let cassette = scratch.path("run.jsonl");
    let recorded = scratch.run(&extension, &cassette, &[]);
    assert!(recorded.status.success(), "{}", stderr(&recorded));
    assert_eq!(
        tool_ends(&recorded)[0]["result"]["content"][0]["text"],
        text
    );
    for path in pi_testkit::files_under(scratch.root.path()) {
        let name = path.to_string_lossy();
        if path == extension || name.contains("/sessions/") {
            continue;
        }
        let written = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        assert!(!written.contains(key), "the key reached {}", path.display());
    }
    let check = scratch
        .pi(&["replay", "--check"], false)
        .arg(&cassette)
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", stderr(&check));
}

/// `--no-mcp` and a server registered after loading (in `session_start`) by an extension with no
/// `mcp_servers_change` handler: Pi 1.5.2's `register_mcp_server` error once, reported with
/// that handler's; the replay, without Node, says it again from the recording.
#[test]
fn no_mcp_reports_a_server_registered_after_loading_and_its_replay_says_it_again() {
    let Some(install) = pi_testkit::extension_host_install() else {
        return;
    };
    assert_no_mcp_reports_the_server_and_its_replay_says_it_again(&install, |scratch, config| {
        let extension = scratch.path("late.ts");
        let source = format!(
            "export default function (pi: any) {{\n  \
             pi.on(\"session_start\", () => pi.registerMcpServer(\"reg\", {config}));\n}}\n"
        );
        std::fs::write(&extension, source).unwrap();
        extension
    });
}
