//! `--no-tools`, `--tools` and `--exclude-tools` over an MCP server's tools, as Pi 1.5.2 applies
//! them (`_isAllowedTool`): a tool they leave out is not registered at all, so it is neither
//! declared to the model nor run when the model calls it anyway; each run's cassette checks.

use std::path::Path;
use std::process::Output;

use pi_testkit::MockLlm;
use serde_json::{json, Value};

use super::{events, stderr, Scratch};

/// A json run of the server `t` (the test server, `direct`) under `flags`, whose model calls
/// `called` with no arguments: the names the first request declared, and the call's result.
fn run_calling(flags: &[&str], called: &str) -> (Vec<String>, Value, Output, Scratch) {
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": called, "arguments": "{\"text\":\"hi\"}"}]},
        {"text": ["Done."]},
    ]));
    let scratch = Scratch::new(&mock);
    let server = scratch.server_copy();
    scratch.servers(json!({"t": {"command": server, "exposure": "direct"}}));
    let cassette = scratch.path("run.jsonl");
    let mut command = scratch.pi(&["--mode", "json"]);
    command.args(flags);
    command.args([
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--session-dir",
    ]);
    command
        .arg(scratch.path("sessions"))
        .arg("--record")
        .arg(&cassette);
    let output = command.args(["-p", "go"]).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let declared = mock.requests()[0]["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default();
    let end = events(&output)
        .into_iter()
        .find(|e| e["type"] == "tool_execution_end")
        .expect("the call ended");
    (declared, end["result"].clone(), output, scratch)
}

fn checks(scratch: &Scratch, cassette: &Path) {
    let check = scratch
        .pi(&["replay", "--check"])
        .arg(cassette)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        stderr(&check)
    );
}

fn not_found(result: &Value, tool: &str) -> bool {
    result["content"][0]["text"] == format!("Tool {tool} not found")
}

/// A model offered no tool under `--no-tools` cannot run an MCP server's tool by naming it.
#[test]
fn no_tools_registers_no_mcp_tool() {
    let (declared, result, _, scratch) = run_calling(&["--no-tools"], "mcp__t__echo");
    assert_eq!(declared, Vec::<String>::new());
    assert!(not_found(&result, "mcp__t__echo"), "{result}");
    checks(&scratch, &scratch.path("run.jsonl"));
}

/// An allowlist naming one MCP tool declares that one only, and another of the server's tools
/// cannot be called; one naming none declares none of them. (Which are registered, which only
/// `pi.getAllTools()` and `ctx.executeTool` see, is conformance case
/// `mcp_register_allowlist_filters`: no recording holds a tool registered and inactive.)
#[test]
fn an_allowlist_naming_an_mcp_tool_declares_and_runs_only_the_ones_it_names() {
    let (declared, result, _, scratch) =
        run_calling(&["--tools", "read,mcp__t__echo"], "mcp__t__data");
    assert_eq!(declared, ["read", "mcp__t__echo"]);
    assert!(not_found(&result, "mcp__t__data"), "{result}");
    checks(&scratch, &scratch.path("run.jsonl"));

    let (declared, _, _, _) = run_calling(&["--tools", "read"], "mcp__t__echo");
    assert_eq!(declared, ["read"]);
}

/// `--exclude-tools` unregisters the MCP tool it names.
#[test]
fn an_excluded_mcp_tool_is_not_run() {
    let (declared, result, _, scratch) =
        run_calling(&["--exclude-tools", "mcp__t__echo"], "mcp__t__echo");
    assert!(
        !declared.iter().any(|name| name == "mcp__t__echo"),
        "{declared:?}"
    );
    assert!(
        declared.iter().any(|name| name == "mcp__t__data"),
        "{declared:?}"
    );
    assert!(not_found(&result, "mcp__t__echo"), "{result}");
    checks(&scratch, &scratch.path("run.jsonl"));
}
