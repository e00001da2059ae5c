//! `pi replay --rerecord`: corpus cassettes stamped with another Pi edition are recorded again
//! by this build against their scenario's scripted mock, replay clean, carry this build's
//! edition and hold the shipped run again (the same inputs, effects, tool results, requests and
//! response bytes, apart from what varies between any two recordings); a cassette no scenario
//! makes is reported and left byte for byte, and a re-recording that fails leaves the old
//! cassette as it was.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::editions::restamped;
use super::{corpus, pi};

const OTHER: &str = "0.0.9";

/// A folder holding the corpus cassettes `names`, stamped with another edition, and their
/// scenarios.
fn stale_corpus(names: &[&str]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("scenarios")).unwrap();
    for name in names {
        restamped(&format!("{name}.jsonl"), dir.path(), OTHER);
        let scenario = corpus().join("scenarios").join(format!("{name}.json"));
        if scenario.exists() {
            std::fs::copy(
                scenario,
                dir.path().join("scenarios").join(format!("{name}.json")),
            )
            .unwrap();
        }
    }
    dir
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `text` with the digits, dots and dashes after each `marker` replaced by `@`.
fn masked_after(text: &str, marker: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(marker) {
        let end = at + marker.len();
        out.push_str(&rest[..end]);
        out.push('@');
        rest = rest[end..].trim_start_matches(|c: char| c.is_ascii_digit() || c == '-' || c == '.');
    }
    out.push_str(rest);
    out
}

/// What a recording holds of its run, without what varies between any two recordings of it:
/// the clock (`t`, `dt`, the start time, the date in the system prompt, the mock's `created`
/// and `date`, the seconds a bash command took), the seed (and the ids and session file name drawn from it), the scratch
/// folders and the mock's port, how the response bytes were cut into reads (the bytes of each
/// call are joined, its events counted), the order in which stdin lines and a running tool's
/// updates arrived (two processes racing: each stream keeps its own order), the digests of
/// outputs holding times and ids, which
/// mock served it (`server`), and the redaction lines (the build lists the credentials it may
/// meet, which it did not when the corpus was recorded).
fn run_of(path: &Path) -> String {
    let all = lines(path);
    let header = &all[0];
    let cwd = header["config"]["cwd"].as_str().unwrap();
    let root = Path::new(cwd)
        .parent()
        .unwrap()
        .to_str()
        .unwrap()
        .to_owned();
    let base = header["config"]["model"]["baseUrl"].as_str().unwrap();
    let port = base.rsplit(':').next().unwrap().trim_end_matches("/v1");
    let mut config = header["config"].as_object().unwrap().clone();
    for varies in ["startedAt", "seed"] {
        config.remove(varies);
    }
    let mut from_outside_lines: [Vec<Value>; 2] = [Vec::new(), Vec::new()];
    let mut requests = Vec::new();
    let mut bodies: BTreeMap<u64, String> = BTreeMap::new();
    let mut events: BTreeMap<u64, usize> = BTreeMap::new();
    let mut last_body = Value::Null;
    let mut exit = None;
    for line in &all[1..] {
        let call = line["call"].as_u64().unwrap_or(0);
        match line["type"].as_str().unwrap() {
            "chunk" => bodies
                .entry(call)
                .or_default()
                .push_str(line["text"].as_str().unwrap()),
            "event" => *events.entry(call).or_default() += 1,
            "request" => {
                let body = match line.get("body") {
                    Some(body) => body.clone(),
                    None => {
                        let delta = &line["delta"];
                        let array = delta["array"].as_str().unwrap();
                        let keep = usize::try_from(delta["keep"].as_u64().unwrap()).unwrap();
                        let mut body = last_body.clone();
                        let items = body[array].as_array_mut().unwrap();
                        items.truncate(keep);
                        items.extend(delta["append"].as_array().unwrap().iter().cloned());
                        body
                    }
                };
                last_body = body.clone();
                requests.push(json!([
                    call,
                    line["method"],
                    line["url"],
                    line["headers"],
                    body
                ]));
            }
            "response" => {
                let headers: Vec<&Value> = line["headers"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|h| h[0] != "date" && h[0] != "server")
                    .collect();
                requests.push(json!([call, line["status"], headers]));
            }
            "redaction" => {}
            "outcome" => exit = Some(line["exit"].clone()),
            kind => {
                let mut line: Map<String, Value> = line.as_object().unwrap().clone();
                line.remove("t");
                line.remove("dt");
                let from_outside = matches!(kind, "stdin" | "outside" | "command" | "user_bash");
                from_outside_lines[usize::from(from_outside)].push(Value::Object(line));
            }
        }
    }
    let run = json!({
        "mode": header["mode"], "command": header["command"], "config": config,
        "models": header["models"], "session": header["session"]["kind"],
        "machine": from_outside_lines, "requests": requests, "bodies": bodies, "events": events,
        "exit": exit,
    });
    // The date in the system prompt, and the second the mock stamps on its chunks (in the
    // JSON text of the run, where the bodies' quotes are escaped).
    let text = masked_after(&run.to_string(), "Current date: ");
    let text = masked_after(&text, "\"wall_time_seconds\":");
    masked_after(&text, "created\\\": ")
        .replace(&root, "@ROOT@")
        .replace(&format!("127.0.0.1:{port}"), "127.0.0.1:@PORT@")
}

fn edition_of(path: &Path) -> String {
    lines(path)[0]["pi"].as_str().unwrap().to_owned()
}

#[test]
fn a_stale_corpus_is_recorded_again_and_holds_the_shipped_runs() {
    let servable = ["plain_text", "one_tool", "resumed_session", "steering"];
    let dir = stale_corpus(&[&servable[..], &["navigation"]].concat());
    let navigation = dir.path().join("navigation.jsonl");
    let before = std::fs::read(&navigation).unwrap();

    let out = pi(&["replay", "--rerecord"], &[dir.path()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains("5 cassettes: 4 re-recorded, 1 skipped"),
        "{stdout}"
    );
    assert!(stdout.contains("SKIPPED     "), "{stdout}");
    assert!(stderr.contains("navigation.jsonl: its model side cannot be served again"));
    assert_eq!(
        std::fs::read(&navigation).unwrap(),
        before,
        "left as it was"
    );

    let build = lines(&corpus().join("plain_text.jsonl"))[0]["pi"].clone();
    let mut made: Vec<PathBuf> = Vec::new();
    for name in servable {
        let path = dir.path().join(format!("{name}.jsonl"));
        assert!(
            stdout.contains(&format!(
                "re-recorded {} (made with Pi {OTHER}",
                path.display()
            )),
            "{stdout}"
        );
        assert_eq!(edition_of(&path), build, "{name}");
        made.push(path);
    }
    let refs: Vec<&Path> = made.iter().map(PathBuf::as_path).collect();
    let out = pi(&["replay", "--check"], &refs);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for (name, path) in servable.iter().zip(&made) {
        let shipped = run_of(&corpus().join(format!("{name}.jsonl")));
        let again = run_of(path);
        let parts = shipped
            .char_indices()
            .zip(again.chars())
            .find(|((_, a), b)| a != b)
            .map(|((at, _), _)| at);
        if let Some(at) = parts.or((shipped.len() != again.len()).then_some(0)) {
            let from = at.saturating_sub(300);
            let near = |text: &str| {
                text.get(from..(at + 300).min(text.len()))
                    .map(str::to_owned)
            };
            panic!(
                "{name}: the re-recorded run differs from the shipped one at byte {at}:\nshipped: {:?}\nagain:   {:?}",
                near(&shipped),
                near(&again)
            );
        }
    }
    // Nothing but the cassettes changed in the folder.
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), servable.len() + 2, "{names:?}");

    // Every cassette servable: exit 0.
    let out = pi(&["replay", "--rerecord"], &[&made[0]]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_rerecording_that_fails_leaves_the_cassette_as_it_was() {
    let dir = stale_corpus(&["abort", "plain_text"]);
    let scenarios = dir.path().join("scenarios");
    // The abort scenario now waits for a line the run never prints; the plain one's run is
    // no longer the recorded command line.
    let edit = |name: &str, change: &dyn Fn(&mut Value)| {
        let file = scenarios.join(format!("{name}.json"));
        let mut scenario: Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        change(&mut scenario);
        std::fs::write(&file, scenario.to_string()).unwrap();
    };
    edit("abort", &|s| {
        let steps = s["runs"][0]["rpc"].as_array_mut().unwrap();
        steps.insert(
            1,
            json!({"wait": {"type": "never printed"}, "timeout_s": 1}),
        );
    });
    edit("plain_text", &|s| {
        s["runs"][0]["args"]
            .as_array_mut()
            .unwrap()
            .push(json!("--no-tools"));
    });
    let before: Vec<Vec<u8>> = ["abort", "plain_text"]
        .iter()
        .map(|n| std::fs::read(dir.path().join(format!("{n}.jsonl"))).unwrap())
        .collect();

    let out = pi(&["replay", "--rerecord"], &[dir.path()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("0 re-recorded, 0 skipped"), "{stdout}");
    assert!(stdout.contains("2 failed"), "{stdout}");
    assert!(
        stderr.contains("timed out after 1 s waiting for"),
        "{stderr}"
    );
    assert!(
        stderr.contains("not the command line the cassette recorded"),
        "{stderr}"
    );
    for (name, bytes) in ["abort", "plain_text"].iter().zip(before) {
        let path = dir.path().join(format!("{name}.jsonl"));
        assert_eq!(
            std::fs::read(&path).unwrap(),
            bytes,
            "{name} left as it was"
        );
    }
    let count = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(count, 3, "no file left beside them");
}
