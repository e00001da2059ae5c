//! Every single change to a corpus cassette, checked: each line dropped, and each value in each
//! line changed (a string lengthened, a number raised, a flag flipped, a null made a number),
//! one at a time, then all the copies checked by one `pi replay --check`. A copy may reproduce
//! only where the change is to something a replay does not read or that did not matter to that
//! run (a timing, a response header, the record of the command line, another model of the
//! catalog ...): those places are listed here, each with its reason, and a change anywhere
//! else (an input, a request, a response's body, a decision, an outcome's digest, the header's
//! mode) must be a divergence or make the cassette unusable. A build whose check stopped
//! reading some line would say "reproduced" for it, and fail here.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::{corpus, pi};

/// The cassettes changed: a print run with a tool, an RPC session (bash, steering, queues), an
/// RPC run across session replacements and a compaction, which between them hold every kind of
/// line the corpus has.
const CHANGED: [&str; 4] = [
    "one_tool.jsonl",
    "rpc_session.jsonl",
    "rpc_sessions.jsonl",
    "threshold_compaction.jsonl",
];

/// One change to one line.
#[derive(Clone, Debug)]
struct Change {
    /// The changed line's `type`.
    kind: String,
    /// The changed value's place in the line (`/`-joined, indices as `N`), empty for a dropped line.
    place: String,
    /// The line as it was.
    line: Value,
    /// The next line's `type`.
    next: String,
}

/// Where a change may leave the run reproducing, and why.
fn may_reproduce(change: &Change) -> bool {
    let place = change.place.as_str();
    match (change.kind.as_str(), place) {
        // Readings of the clock between steps and the byte timings of a call are what the run
        // took, not what it did: a replay is fed the steps, not the waits.
        (_, "t" | "dt") => true,
        // The record of the run for people (the command line to record it again, the session
        // file's name, which secrets were redacted) is not replayed.
        ("cassette", "harness" | "session/file" | "session/path") => true,
        ("replaced", "session/file" | "session/path") => true,
        // A session that starts from recorded content (a clone's entries) takes its header's
        // time and working directory from it, and its ids from `idState`.
        ("replaced", "config/startedAt" | "config/seed" | "config/cwd") => {
            change.line["session"]["content"].is_string()
        }
        ("cassette", p) if p.starts_with("command/") || p.starts_with("redactions/") => true,
        ("redaction", _) => true,
        // The catalog the run could switch to: a model it never used changes nothing.
        ("cassette", p) if p.starts_with("models/") => true,
        // Settings that did not come into play in these runs (no retry, compaction settings
        // off the reached threshold, documentation paths, images).
        ("cassette" | "replaced", p)
            if p.starts_with("config/docs/")
                || p.starts_with("config/retry/")
                || p.starts_with("config/compaction/")
                || p == "config/blockImages" =>
        {
            true
        }
        // The model's fields these runs never read: its display name, its input kinds (no
        // image was sent), the prices of cache tokens (none were reported), and its context
        // window raised (the compaction's threshold is crossed all the same); its id, provider,
        // API, address, other prices and output limit are all sent or reported.
        (
            "cassette" | "replaced",
            "config/model/name"
            | "config/model/input/N"
            | "config/model/cost/cacheRead"
            | "config/model/cost/cacheWrite"
            | "config/model/contextWindow",
        ) => true,
        // A call's client settings (retries, timeout) that no response in these runs met.
        ("call", "options/timeoutMs" | "options/maxRetries") => true,
        // A response's status and headers: the body is what a replay decodes; a 2xx is a 2xx.
        ("response", p) if p == "status" || p.starts_with("headers/") => true,
        // Text added to a chunk joins the stream's next line, which the decoder then drops as a
        // field it does not know: only where that line carried something does the run change
        // (a chunk's content changed, below, always does).
        ("chunk", "text") => true,
        // A chunk that only opens the message, or only says `[DONE]`, dropped; and the end
        // line of a stream: nothing decodes from them.
        ("chunk", "") => opens_or_ends_only(&change.line),
        ("end", "") => true,
        // The outcome's copies of the output, kept to show a divergence as lines: the digests
        // are what is checked.
        ("outcome", "stdoutText" | "sessionText") => true,
        ("replaced", "left/sessionText") => true,
        // An RPC `bash` line, which the recorded `user_bash` line after it carries again.
        ("stdin", "") => change.next == "user_bash",
        _ => false,
    }
}

/// Whether each of a chunk's data lines only opens the message (an empty content) or says
/// `[DONE]`.
fn opens_or_ends_only(chunk: &Value) -> bool {
    let text = chunk["text"].as_str().unwrap_or_default();
    text.split("\n\n").filter(|l| !l.is_empty()).all(|line| {
        line == "data: [DONE]" || line.contains(r#""delta": {"role": "assistant", "content": ""}"#)
    })
}

/// A chunk with the text of each delta's content changed (`CONTENT_CHANGE`), where it has one.
fn content_changed(chunk: &Value) -> Option<Value> {
    let text = chunk["text"].as_str()?;
    let changed = text.replace(r#""content": ""#, r#""content": "~"#);
    (changed != text).then(|| {
        let mut chunk = chunk.clone();
        chunk["text"] = Value::String(changed);
        chunk
    })
}

/// The place a chunk's content change is listed under.
const CONTENT_CHANGE: &str = "text: content";

/// Each value of `value` with its place, indices written `N`.
fn leaves(value: &Value, place: &str, out: &mut Vec<(Vec<String>, String)>) {
    let join = |key: &str| match place {
        "" => key.to_owned(),
        _ => format!("{place}/{key}"),
    };
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                leaves(child, &join(key), out);
            }
        }
        Value::Array(items) => {
            for (index, child) in items.iter().enumerate() {
                leaves(child, &join(&index.to_string()), out);
            }
        }
        _ => out.push((place.split('/').map(str::to_owned).collect(), shape(place))),
    }
}

/// `place` with its indices written `N`.
fn shape(place: &str) -> String {
    place
        .split('/')
        .map(|part| match part.parse::<usize>() {
            Ok(_) => "N",
            Err(_) => part,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// `line` with the value at `path` changed.
fn changed(line: &Value, path: &[String]) -> Value {
    let mut line = line.clone();
    let mut at = &mut line;
    for key in path {
        at = match at {
            Value::Object(map) => map.get_mut(key).unwrap(),
            Value::Array(items) => &mut items[key.parse::<usize>().unwrap()],
            _ => unreachable!("a leaf has no children"),
        };
    }
    *at = match at.take() {
        Value::String(text) => Value::String(format!("{text}x")),
        Value::Number(n) => match n.as_u64() {
            Some(n) => Value::from(n + 1),
            None => Value::from(n.as_f64().unwrap_or_default() + 1.0),
        },
        Value::Bool(flag) => Value::Bool(!flag),
        _ => Value::from(0),
    };
    line
}

#[test]
fn every_single_change_to_a_cassette_diverges_unless_the_run_never_read_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut changes: BTreeMap<String, Change> = BTreeMap::new();
    for name in CHANGED {
        let text = std::fs::read_to_string(corpus().join(name)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let parsed: Vec<Value> = lines
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let kind_at = |index: usize| -> String {
            parsed
                .get(index)
                .map_or("", |l| l["type"].as_str().unwrap_or_default())
                .to_owned()
        };
        for (index, line) in parsed.iter().enumerate() {
            let kind = kind_at(index);
            let mut variants = vec![(String::new(), None)];
            let mut found = Vec::new();
            leaves(line, "", &mut found);
            // The catalog's first models stand for the rest (the header holds dozens).
            let catalog_rest = |path: &[String]| {
                path[0] == "models" && path[1].parse::<usize>().is_ok_and(|n| n >= 2)
            };
            variants.extend(
                found
                    .into_iter()
                    .filter(|(path, _)| !catalog_rest(path))
                    .map(|(path, place)| (place, Some(changed(line, &path)))),
            );
            if kind == "chunk" {
                variants
                    .extend(content_changed(line).map(|c| (CONTENT_CHANGE.to_owned(), Some(c))));
            }
            for (place, replaced) in variants {
                let mut copy: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
                match replaced {
                    Some(new) => copy[index] = new.to_string(),
                    None => drop(copy.remove(index)),
                }
                let file = format!(
                    "{}-{:05}.jsonl",
                    name.trim_end_matches(".jsonl"),
                    changes.len()
                );
                std::fs::write(dir.path().join(&file), copy.join("\n") + "\n").unwrap();
                let change = Change {
                    kind: kind.clone(),
                    place,
                    line: line.clone(),
                    next: kind_at(index + 1),
                };
                changes.insert(file, change);
            }
        }
    }
    let out = pi(&["replay", "--check"], &[dir.path()]);
    let report = String::from_utf8_lossy(&out.stdout);
    let reproduced: Vec<&str> = report
        .lines()
        .filter_map(|l| l.strip_prefix("ok"))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    // Every copy is a damaged cassette, its header's type changed or its header gone: none may
    // pass for a stray file and be skipped, or a damaged corpus would check.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let skipped: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("skipped "))
        .collect();
    assert!(skipped.is_empty(), "damaged cassettes skipped: {skipped:?}");
    assert!(
        report.contains(&format!("{} cassettes:", changes.len())),
        "every copy is checked: {}",
        report.lines().last().unwrap_or_default()
    );
    let mut unexplained: Vec<String> = reproduced
        .iter()
        .map(|path| {
            let file = Path::new(path).file_name().unwrap().to_str().unwrap();
            (file, &changes[file])
        })
        .filter(|(_, change)| !may_reproduce(change))
        .map(|(file, change)| format!("{file}: {} line, {:?}", change.kind, change.place))
        .collect();
    unexplained.sort();
    assert!(
        unexplained.is_empty(),
        "{} changes reproduced where the run read what changed:\n{}",
        unexplained.len(),
        unexplained.join("\n")
    );
    assert!(
        reproduced.len() * 2 < changes.len(),
        "most changes must diverge: {} of {} reproduced",
        reproduced.len(),
        changes.len()
    );
}
