//! The compaction hook points and `ctx.compact()`'s callbacks through the binary, recorded and
//! replayed with no Node: the conformance cases `compact_hooks` (`session_before_compact`
//! cancelling one compaction and supplying another's summary, `session_compact`),
//! `compact_auto_hooks` (the same at threshold and overflow compactions) and
//! `compact_callbacks` (`onError`, then `onComplete` sending a message) driven over RPC as their
//! scenarios drive them; the replay gives the same bytes.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;

use serde_json::{json, Value};

use crate::common::{Env, MockLlm};
use crate::support::{assert_replays_without_node, node_path, with_host};

/// Whether `obj` holds every field of `pattern` (the kit's `subset`).
fn subset(pattern: &Value, obj: &Value) -> bool {
    match pattern {
        Value::Object(fields) => fields
            .iter()
            .all(|(k, v)| obj.get(k).is_some_and(|o| subset(v, o))),
        _ => pattern == obj,
    }
}

/// Runs conformance case `case` over RPC, recorded into `cassette`: each `send` of its scenario
/// once the `wait` before it is seen. The output.
fn drive_case(env: &Env, case: &str, cassette: &Path) -> String {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/extensions");
    let scenario: Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join(case).join("scenario.json")).unwrap(),
    )
    .unwrap();
    env.write_agent("settings.json", &scenario["settings"].to_string());
    let extension = folder.join(case).join("extension.ts");
    let mut command = env.rpc_command();
    command.args([
        "--no-session",
        "-e",
        extension.to_str().unwrap(),
        "--record",
        cassette.to_str().unwrap(),
    ]);
    with_host(&mut command, &node_path().unwrap());
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = Some(child.stdin.take().unwrap());
    let mut steps = scenario["runs"][0]["rpc"].as_array().unwrap().iter();
    let mut next_wait = || -> Option<Value> {
        for step in steps.by_ref() {
            if let Some(line) = step.get("send") {
                writeln!(stdin.as_mut().unwrap(), "{line}").unwrap();
            } else {
                return Some(step["wait"].clone());
            }
        }
        stdin.take();
        None
    };
    let mut waiting = next_wait();
    let mut recorded = String::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        recorded.push_str(&line);
        recorded.push('\n');
        let event: Value = serde_json::from_str(&line).unwrap();
        if waiting.as_ref().is_some_and(|w| subset(w, &event)) {
            waiting = next_wait();
            if waiting.is_none() {
                break;
            }
        }
    }
    stdin.take();
    assert!(child.wait().unwrap().success(), "{recorded}");
    recorded
}

/// The mock answering case `case`'s script.
fn mock_of(case: &str) -> MockLlm {
    let scenario: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../conformance/extensions")
                .join(case)
                .join("scenario.json"),
        )
        .unwrap(),
    )
    .unwrap();
    MockLlm::start(&scenario["script"])
}

/// The `entry_appended` entries' custom types and the `compact` answers of `output`.
fn marks(output: &str) -> Vec<String> {
    output
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter_map(|e| match e["type"].as_str() {
            Some("entry_appended") => Some(e["entry"]["customType"].as_str()?.to_owned()),
            Some("response") if e["command"] == "compact" => Some(format!(
                "compact {}",
                e.get("error").unwrap_or(&json!("ok"))
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn compaction_hooks_cancel_and_supply_and_the_recording_replays_without_node() {
    if node_path().is_none() {
        return;
    }
    let mock = mock_of("compact_hooks");
    let env = Env::new(&mock);
    let cassette = env.path("compact-hooks.jsonl");
    let recorded = drive_case(&env, "compact_hooks", &cassette);
    assert_eq!(
        marks(&recorded),
        [
            "before_compact",
            "compact_failed",
            "compact \"Compaction cancelled\"",
            "before_compact",
            "compacted",
            "compact \"ok\"",
            "before_compact",
            "compacted",
            "compact \"ok\"",
        ],
        "{recorded}"
    );
    assert_eq!(
        mock.requests().len(),
        5,
        "three prompts, one summary (the supplied one asks none)"
    );

    assert_replays_without_node(&env, &cassette, &recorded);
}

#[test]
fn compact_callbacks_run_after_the_end_and_the_recording_replays_without_node() {
    if node_path().is_none() {
        return;
    }
    let mock = mock_of("compact_callbacks");
    let env = Env::new(&mock);
    let cassette = env.path("compact-callbacks.jsonl");
    let recorded = drive_case(&env, "compact_callbacks", &cassette);
    assert_eq!(marks(&recorded), ["compact_failed"], "{recorded}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 4);
    let last = requests[3]["messages"].to_string();
    assert!(
        last.contains("Compacted 15 tokens: ## Goal\\nSquashed summary."),
        "onComplete's message reaches the next request: {last}"
    );

    assert_replays_without_node(&env, &cassette, &recorded);
}

#[test]
fn automatic_compactions_wait_for_the_extension_and_the_recording_replays_without_node() {
    if node_path().is_none() {
        return;
    }
    let mock = mock_of("compact_auto_hooks");
    let env = Env::new(&mock);
    let cassette = env.path("compact-auto.jsonl");
    let recorded = drive_case(&env, "compact_auto_hooks", &cassette);
    assert_eq!(
        marks(&recorded),
        [
            "before_compact",
            "compacted",
            "before_compact",
            "compact_failed"
        ],
        "threshold supplied, overflow cancelled: {recorded}"
    );
    assert_eq!(
        mock.requests().len(),
        4,
        "no summary request, the overflowed turn not asked again"
    );

    assert_replays_without_node(&env, &cassette, &recorded);
}
