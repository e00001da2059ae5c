//! `tool_search` against Pi 1.5.2's own: the same tools (descriptions, schemas with local
//! `$ref`s, namespaces, camel-case and plural names) and the same calls through the original's
//! `tool_search` in Node and through `run_search`, the texts, loaded names and errors compared
//! byte for byte. Needs Pi 1.5.2's install (`PI_EXTENSION_HOST_PI_DIR`, its Node in `node/bin`);
//! skipped without it unless `PI_REQUIRE_EXTENSIONS=1`. (Here, not in `pi-core`, which runs no
//! process even in its tests.)

use std::io::Write;
use std::path::PathBuf;

use std::process::{Command, Stdio};

use pi_core::tools::custom::CustomToolDefinition;
use pi_core::tools::tool_search::{run_search, SearchableTool};
use serde_json::{json, Value};

fn tools() -> Value {
    let github = json!({"name": "mcp__github", "description": "GitHub issues and pull requests",
        "instructions": "Use for repositories.\nAlways paginate."});
    let files = json!({"name": "mcp__files"});
    json!([
        {"name": "mcp__github__list_issues", "description": "List issues of a repository.\nPaginated.",
         "parameters": {"type": "object", "properties": {"repo": {"type": "string", "description": "owner/name"},
            "state": {"$ref": "#/$defs/state"}}, "$defs": {"state": {"description": "Open or closed issues", "enum": ["open", "closed"]}}},
         "namespace": github},
        {"name": "mcp__github__create_pull_request", "description": "  Create a pull request from a branch.  ",
         "parameters": {"type": "object", "properties": {"head": {"type": "string"}, "base": {"type": "string", "description": "The branch to merge into"}}},
         "namespace": github},
        {"name": "mcp__github__searchCode", "description": "Searches code with the HTTPServer index",
         "parameters": {"type": "object", "properties": {"query": {"anyOf": [{"type": "string", "description": "Code search queries"}, {"type": "null"}]}}},
         "namespace": github},
        {"name": "mcp__files__read_file", "description": "Read a file's contents",
         "parameters": {"type": "object", "properties": {"path": {"type": "string", "description": "Path of the file"},
            "node": {"$ref": "#/$defs/node"}}, "$defs": {"node": {"description": "A tree node", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}},
         "namespace": files},
        {"name": "mcp__files__write_file", "description": "Write contents to a file, replacing it",
         "parameters": {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}},
         "namespace": files},
        {"name": "mcp__files__thread_read", "description": "", "parameters": {"type": "object", "properties": {}}, "namespace": files},
        {"name": "mcp__files__résumé", "description": "Über café files", "parameters": {"type": "object", "properties": {}}}
    ])
}

fn calls() -> Vec<Value> {
    [
        json!({"query": "issues"}),
        json!({"query": "list issues"}),
        json!({"query": "github"}),
        json!({"query": "pull request"}),
        json!({"query": "thread_read"}),
        json!({"query": "files__THREAD-read"}),
        json!({"query": "read file", "limit": 1}),
        json!({"query": "file", "limit": 2}),
        json!({"query": "HTTP server"}),
        json!({"query": "search queries"}),
        json!({"query": "tree node children"}),
        json!({"query": "branch merge"}),
        json!({"query": "the of and"}),
        json!({"query": "nothing matches zzz"}),
        json!({"query": "café über"}),
        json!({"query": "résumé"}),
        json!({"query": "   "}),
        json!({"query": "file", "limit": 0}),
        json!({"query": "file", "limit": 2.5}),
        json!({"query": "paginate repositories"}),
    ]
    .into()
}

#[test]
#[allow(clippy::expect_used)]
fn tool_search_answers_as_pi_1_5_2s() {
    let Some(dir) = pi_testkit::extension_host_install() else {
        return;
    };
    let chunks = dir.join("node_modules/@earendil-works/pi-coding-agent/dist/bundle/chunks");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/tool_search/original.mjs");
    let tools = tools();
    let calls = calls();
    let mut child = Command::new(dir.join("node/bin/node"))
        .arg(&script)
        .arg(&chunks)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("node runs");
    let input = json!({"tools": tools, "calls": calls}).to_string();
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("written");
    let output = child.wait_with_output().expect("node finishes");
    assert!(output.status.success(), "the original failed");
    let expected: Vec<Value> = String::from_utf8(output.stdout)
        .expect("utf-8")
        .lines()
        .map(|line| serde_json::from_str(line).expect("json line"))
        .collect();
    assert_eq!(expected.len(), calls.len());

    let candidates: Vec<SearchableTool> = tools
        .as_array()
        .expect("list")
        .iter()
        .map(|t| SearchableTool {
            tool: CustomToolDefinition::new(
                t["name"].as_str().expect("name"),
                t["description"].as_str().expect("description"),
                t["parameters"].clone(),
            ),
            namespace: t
                .get("namespace")
                .map(|n| serde_json::from_value(n.clone()).expect("namespace")),
        })
        .collect();
    let mut loaded_some = 0;
    for (args, expected) in calls.iter().zip(&expected) {
        let ours = match run_search(args, &candidates) {
            Ok(outcome) => {
                loaded_some += usize::from(!outcome.loaded.is_empty());
                json!({"ok": {"text": outcome.text, "loaded": outcome.loaded, "active": outcome.loaded}})
            }
            Err(message) => json!({"err": message}),
        };
        assert_eq!(&ours, expected, "tool_search {args}");
    }
    assert!(loaded_some >= 10, "the calls exercise the ranking");
}
