//! Pi 1.5.2's `tool_search` over MCP servers' deferred tools, in runs of the real binary
//! compared with the original's (`PI_ORIGINAL`) and replayed from their cassettes.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use pi_testkit::MockLlm;
use serde_json::{json, Value};

use super::{events, session_file, stderr, Scratch};

/// What a run's requests said to the model, apart from the system prompt's machine paths: each
/// request's tools, its messages after the system prompt, and the prompt's `mcp_servers` section.
pub(super) fn requests_seen(mock: &MockLlm) -> Vec<Value> {
    mock.requests()
        .iter()
        .map(|request| {
            let messages = request["messages"].as_array().unwrap();
            let system = messages[0]["content"].as_str().unwrap_or_default();
            let section = system.find("<mcp_servers>").map(|at| &system[at..]);
            json!({"tools": request["tools"], "messages": messages[1..], "section": section})
        })
        .collect()
}

/// The tool results of a json run's events.
fn tool_results(output: &Output) -> Vec<Value> {
    events(output)
        .into_iter()
        .filter(|e| e["type"] == "tool_execution_end")
        .map(|e| json!([e["toolName"], e["result"], e["isError"]]))
        .collect()
}

/// A server whose tools are `deferred`: as in Pi 1.5.2, `tool_search` is active from the start
/// (the server needs it), the server is listed for it in the system prompt and nothing is
/// said on stderr; the model searches, the match is declared by the very next request and
/// called. Under the original Pi 1.5.2 (`PI_ORIGINAL`, its Node from
/// `PI_EXTENSION_HOST_PI_DIR`) the same script gives the same requests and tool results. The
/// cassette replays byte for byte, session file included, with the server's binary deleted.
#[test]
fn tool_search_loads_a_deferred_servers_tool_as_pi_1_5_2_does() {
    let script = json!([
        {"tool_calls": [{"id": "call_1", "name": "tool_search",
                         "arguments": {"query": "echo text"}}]},
        {"tool_calls": [{"id": "call_2", "name": "mcp__t__echo",
                         "arguments": {"text": "found it"}}]},
        {"text": ["Done."]},
    ]);
    let servers = |server: &Path| {
        json!({"t": {"command": server, "exposure": "deferred",
                     "description": "Tools for the tests"}})
    };
    let run = |original| run_pi(&script, &servers, &[], original);
    let (ours, requests, scratch, server) = run(None);
    assert_eq!(
        stderr(&ours),
        "",
        "tool_search reaches the tools: no warning"
    );
    let results = tool_results(&ours);
    assert_eq!(
        results[0],
        json!(["tool_search", {"content": [{"type": "text", "text":
            "Loaded 1 tool. They are available from your next call:\n- mcp__t__echo: Echo the text back"}],
            "details": {"loaded": ["mcp__t__echo"]}}, false])
    );
    assert_eq!(results[1][1]["content"][0]["text"], "found it");
    let declared = |request: &Value| -> Vec<String> {
        let tools = request["tools"].as_array().unwrap();
        tools
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        declared(&requests[0]),
        ["read", "bash", "edit", "write", "tool_search"]
    );
    assert_eq!(
        declared(&requests[1]),
        [
            "read",
            "bash",
            "edit",
            "write",
            "tool_search",
            "mcp__t__echo"
        ]
    );
    assert_eq!(
        requests[0]["section"],
        "<mcp_servers>\nMCP servers whose tools are not declared to you. Load the tools of \
         `tool_search` servers with `tool_search`.\n- mcp__t (tool_search): Tools for the \
         tests\n</mcp_servers>"
    );

    std::fs::remove_file(&server).unwrap();
    let replayed = scratch
        .pi(&["replay", "--mode", "json", "--session-dir"])
        .arg(scratch.path("replayed"))
        .arg(scratch.path("run.jsonl"))
        .output()
        .unwrap();
    // The attack: the deferred tool the search loads (what the next request declares), which
    // came to the session with the search's hook decision (the server connected in the
    // background), edited; the replay refuses it, the request it makes differing from the
    // recorded one.
    let text = std::fs::read_to_string(scratch.path("run.jsonl")).unwrap();
    let mut lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let decision = lines
        .iter_mut()
        .find(|l| {
            l["input"]["kind"] == "hook_decided"
                && l["input"]["outcome"]["actions"][0]["action"] == "registerDeferredTools"
        })
        .expect("the search's hook decision");
    let action = &mut decision["input"]["outcome"]["actions"][0];
    assert_eq!(action["action"], "registerDeferredTools", "{action}");
    let loaded = &mut action["tools"][0];
    assert_eq!(loaded["tool"]["name"], "mcp__t__echo", "{loaded}");
    assert_eq!(loaded["namespace"]["description"], "Tools for the tests");
    loaded["tool"]["description"] = json!("Echoes, and more.");
    let edited: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(scratch.path("edited.jsonl"), edited).unwrap();
    let refused = scratch
        .pi(&["replay", "--check"])
        .arg(scratch.path("edited.jsonl"))
        .output()
        .unwrap();
    assert!(!refused.status.success(), "an edited deferred tool passed");
    assert!(
        stderr(&refused).contains("Echoes, and more."),
        "{}",
        stderr(&refused)
    );
    assert!(replayed.status.success(), "{}", stderr(&replayed));
    assert_eq!(
        String::from_utf8_lossy(&replayed.stdout),
        String::from_utf8_lossy(&ours.stdout)
    );
    assert_eq!(
        session_file(&scratch.path("replayed")),
        session_file(&scratch.path("sessions"))
    );
    // Running the tools again: the search is the session's own, the loaded tool the server's,
    // started again from the agent dir's mcp.json.
    scratch.server_copy();
    let live = scratch
        .pi(&[
            "replay",
            "--mode",
            "json",
            "--tools",
            "live",
            "--session-dir",
        ])
        .arg(scratch.path("live"))
        .arg(scratch.path("run.jsonl"))
        .output()
        .unwrap();
    assert!(live.status.success(), "{}", stderr(&live));
    assert_eq!(
        String::from_utf8_lossy(&live.stdout),
        String::from_utf8_lossy(&ours.stdout)
    );

    let (Some(original), Some(install)) = (
        pi_testkit::original_pi(),
        pi_testkit::extension_host_install(),
    ) else {
        return;
    };
    let (theirs, their_requests, _, _) = run(Some((&original, &install.join("node/bin"))));
    assert_eq!(stderr(&theirs), "");
    assert_eq!(tool_results(&theirs).len(), 2);
    for (ours, theirs) in results.iter().zip(tool_results(&theirs)) {
        assert_eq!(ours[0], theirs[0]);
        assert_eq!(ours[1]["content"], theirs[1]["content"]);
        assert_eq!(ours[2], theirs[2]);
    }
    assert_eq!(results[0], tool_results(&theirs)[0]);
    assert_eq!(requests, their_requests);
}

/// A json run of `args` against `script`, the test server configured by `servers` (given the
/// path of its copy), recorded into the scratch folder's `run.jsonl`; or, given the original's
/// `pi` and Node's folder, the same run under the original (nothing recorded). Returns the
/// output, the requests as [`requests_seen`] reads them, the scratch folder and the server copy.
pub(super) fn run_pi(
    script: &Value,
    servers: &dyn Fn(&Path) -> Value,
    args: &[&str],
    original: Option<(&Path, &Path)>,
) -> (Output, Vec<Value>, Scratch, PathBuf) {
    let mock = MockLlm::start(script);
    let scratch = Scratch::new(&mock);
    let server = scratch.server_copy();
    scratch.servers(servers(&server));
    let mut command = scratch.pi(&[
        "--mode",
        "json",
        "--provider",
        "mock",
        "--model",
        "mock-model",
    ]);
    command.args(args);
    command.arg("--session-dir").arg(scratch.path("sessions"));
    if let Some((pi, node_bin)) = original {
        let args: Vec<_> = command.get_args().map(|a| a.to_owned()).collect();
        let envs: Vec<_> = command
            .get_envs()
            .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned())))
            .collect();
        let path = format!(
            "{}:{}",
            node_bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        command = Command::new(pi);
        command.args(args).envs(envs).env("PATH", path);
        command
            .current_dir(scratch.path("cwd"))
            .stdin(Stdio::null());
    } else {
        command.arg("--record").arg(scratch.path("run.jsonl"));
    }
    let output = command.args(["-p", "echo something"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    (output, requests_seen(&mock), scratch, server)
}

/// A server of the default (`codemode`) exposure, with `tool_search` named by `--tools`: Pi
/// 1.5.2 registers the server's tools as deferred and, `tool_search` being active, says no
/// warning; the search loads the tool and the next request declares it. Ours and the original
/// (`PI_ORIGINAL`) give the same requests, results and stderr.
#[test]
fn tool_search_named_by_tools_reaches_a_codemode_servers_tools() {
    let script = json!([
        {"tool_calls": [{"id": "call_1", "name": "tool_search",
                         "arguments": {"query": "pixel", "limit": 2}}]},
        {"tool_calls": [{"id": "call_2", "name": "tool_search",
                         "arguments": {"query": "zzz"}}]},
        {"text": ["Done."]},
    ]);
    let servers = |server: &Path| json!({"t": {"command": server}});
    let args = ["--tools", "read,tool_search"];
    let (ours, requests, _, _) = run_pi(&script, &servers, &args, None);
    assert_eq!(
        stderr(&ours),
        "",
        "tool_search reaches the tools: no warning"
    );
    let results = tool_results(&ours);
    assert_eq!(
        results[1][1]["content"][0]["text"],
        "No matching tools found."
    );
    let names: Vec<&str> = requests[1]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert!(names.starts_with(&["read", "tool_search"]), "{names:?}");
    assert!(names.len() > 2, "the search loaded tools: {names:?}");
    let (Some(original), Some(install)) = (
        pi_testkit::original_pi(),
        pi_testkit::extension_host_install(),
    ) else {
        return;
    };
    let (theirs, their_requests, _, _) = run_pi(
        &script,
        &servers,
        &args,
        Some((&original, &install.join("node/bin"))),
    );
    assert_eq!(stderr(&theirs), "");
    assert_eq!(results, tool_results(&theirs));
    assert_eq!(requests, their_requests);
}

/// Two `tool_search` calls in one answer: as in Pi 1.5.2, the second searches what the first
/// left, so a tool is loaded once. Ours and the original (`PI_ORIGINAL`) give the same results
/// and requests.
#[test]
fn two_searches_in_one_answer_load_a_tool_once() {
    let script = json!([
        {"tool_calls": [
            {"id": "call_1", "name": "tool_search", "arguments": {"query": "echo"}},
            {"id": "call_2", "name": "tool_search", "arguments": {"query": "echo text"}}]},
        {"text": ["Done."]},
    ]);
    let servers = |server: &Path| json!({"t": {"command": server, "exposure": "deferred"}});
    let (ours, requests, _, _) = run_pi(&script, &servers, &[], None);
    let results = tool_results(&ours);
    assert_eq!(
        results[0][1]["details"],
        json!({"loaded": ["mcp__t__echo"]})
    );
    assert_eq!(
        results[1][1],
        json!({"content": [{"type": "text", "text": "No matching tools found."}],
               "details": {"loaded": []}})
    );
    let (Some(original), Some(install)) = (
        pi_testkit::original_pi(),
        pi_testkit::extension_host_install(),
    ) else {
        return;
    };
    let (theirs, their_requests, _, _) = run_pi(
        &script,
        &servers,
        &[],
        Some((&original, &install.join("node/bin"))),
    );
    assert_eq!(results, tool_results(&theirs));
    assert_eq!(requests, their_requests);
}
