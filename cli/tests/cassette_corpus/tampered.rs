//! Every single change to a corpus cassette, checked: each line dropped, and each value in each
//! line changed (a string lengthened, a number raised, a flag flipped, a null made a number),
//! one at a time, then all the copies checked by one `pi replay --check`. A copy may reproduce
//! only where the change is to something a replay does not read or that did not matter to that
//! run (a timing, a response header, the record of the command line, another model of the
//! catalog ...): those places are listed here, each with its reason, and a change anywhere
//! else (an input, a request, a response's body, a decision, an outcome's digest, the header's
//! mode) must be a divergence or make the cassette unusable. A build whose check stopped
//! reading some line would say "reproduced" for it, and fail here. The extension corpus's
//! runs hold the lines extensions put in a cassette (hook points and their
//! decisions, a registered tool's actions, dialogs, a command's replacement and reload, MCP
//! servers registered later).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::{corpus, extension_corpus, pi};

/// The cassettes changed: a print run with a tool, an RPC session (bash, steering, queues), an
/// RPC run across session replacements and a compaction, which between them hold every kind of
/// line the corpus has.
const CHANGED: [&str; 4] = [
    "one_tool.jsonl",
    "rpc_session.jsonl",
    "rpc_sessions.jsonl",
    "threshold_compaction.jsonl",
];

/// The extension corpus's cassettes changed: a registered tool's actions, RPC dialogs, a
/// command's replacement and its reload (the context files read again), MCP servers
/// registered later, provider hooks, `user_bash` handlers and tools of every exposure, some
/// inactive (the other runs of these cases repeat their kinds of line).
const EXTENSION_CHANGED: [&str; 10] = [
    "tool_context.1.jsonl",
    "confirm_gate.1.jsonl",
    "command_new_session.1.jsonl",
    "command_reload.1.jsonl",
    "command_reload.2.jsonl",
    "command_reload_context.2.jsonl",
    "mcp_register_later.2.jsonl",
    "provider_hooks.1.jsonl",
    "user_bash.1.jsonl",
    "tool_exposures.3.jsonl",
];

/// One change to one line.
#[derive(Clone, Debug)]
struct Change {
    /// The changed line's `type`.
    kind: String,
    /// The changed value's place in the line (`/`-joined, indices as `N`), empty for a dropped line.
    place: String,
    /// The same place with its indices.
    at: Vec<String>,
    /// The line as it was.
    line: Value,
    /// The next line's `type`.
    next: String,
    /// What the changed line's run did, as its cassette holds it.
    run: RunFacts,
}

/// What a cassette's run did that decides whether a part of it was read.
#[derive(Clone, Debug, Default)]
struct RunFacts {
    /// Its first session was kept in memory: no file shows its start, ids or working directory.
    in_memory: bool,
    /// An extension changed the active tools, which builds the system prompt again from the
    /// loadout's inputs (the header's recorded sections are then not read).
    loadout_changed: bool,
    /// Every request line's text: a tool whose name is in none was never declared to the model.
    requests: String,
    /// The text of the request lines after the first change of the active tools: those whose
    /// system prompt was built from the loadout's inputs.
    rebuilt_requests: String,
    /// The front end it was recorded through (`text`, `json`, `rpc`).
    mode: String,
    /// An extension's `before_provider_request` handler was asked for each request's payload
    /// (what it returned is the payload sent).
    payload_hooked: bool,
    /// Every line RPC mode read.
    stdin: String,
    /// The text of the request lines before the first reload that said what it registered
    /// (every request's when none did): a tool of the first load the reload registered again
    /// was declared by these alone.
    requests_before_reload: Option<String>,
    /// Some extension handles `session_shutdown` (the header's handled hook points).
    hears_shutdown: bool,
    /// The decisions of commands that asked for a replacement the `session_before_*` handlers
    /// then cancelled (the ask replaced nothing).
    cancelled_asks: Vec<Value>,
    /// A `tool_search` call ran, which reads the deferred tools' declarations and namespaces.
    tool_searched: bool,
    /// The session reloaded its extensions, which reads whether registering a tool activates it.
    reloaded: bool,
}

impl RunFacts {
    fn of(lines: &[Value]) -> Self {
        let loadout_actions = ["registerTools", "setActiveTools", "registerDeferredTools"];
        let changes_loadout = |line: &Value| {
            line["input"]["outcome"]["actions"]
                .as_array()
                .is_some_and(|actions| {
                    actions
                        .iter()
                        .any(|a| loadout_actions.contains(&a["action"].as_str().unwrap_or("")))
                })
        };
        let requests = |lines: &[Value]| -> String {
            lines
                .iter()
                .filter(|line| line["type"] == "request")
                .map(Value::to_string)
                .collect()
        };
        let first_change = lines.iter().position(changes_loadout);
        let decision = |line: &Value| line["input"]["outcome"]["decision"].clone();
        let cancelled_asks = lines
            .windows(3)
            .filter(|w| {
                decision(&w[0])["type"] == "command_asked" && decision(&w[2])["cancel"] == true
            })
            .map(|w| w[0].clone())
            .collect();
        RunFacts {
            in_memory: lines[0]["session"]["kind"] == "memory",
            loadout_changed: first_change.is_some(),
            requests: requests(lines),
            rebuilt_requests: first_change.map_or_else(String::new, |at| requests(&lines[at..])),
            mode: lines[0]["mode"].as_str().unwrap_or_default().to_owned(),
            payload_hooked: lines
                .iter()
                .any(|line| line["effect"]["payload"]["type"] == "before_provider_request"),
            stdin: lines
                .iter()
                .filter_map(|line| line["line"].as_str())
                .collect(),
            cancelled_asks,
            tool_searched: lines.iter().any(|line| {
                line["effect"]["kind"] == "run_tool" && line["effect"]["tool"] == "tool_search"
            }),
            reloaded: lines.iter().any(|line| line["input"]["kind"] == "reloaded"),
            requests_before_reload: lines
                .iter()
                .position(|line| line["input"]["loaded"].is_object())
                .map(|at| requests(&lines[..at])),
            hears_shutdown: lines[0]["config"]["handledHooks"]
                .as_array()
                .is_some_and(|hooks| hooks.iter().any(|h| h == "session_shutdown")),
        }
    }
}

/// Where a change may leave the run reproducing, and why.
fn may_reproduce(change: &Change) -> bool {
    let place = change.place.as_str();
    match (change.kind.as_str(), place) {
        // Readings of the clock between steps and the byte timings of a call are what the run
        // took, not what it did: a replay is fed the steps, not the waits.
        (_, "t" | "dt") => true,
        // A session kept in memory shows its start time, id generator and working directory
        // nowhere (events carry the clock's readings, the system prompt its own `cwd`).
        ("cassette", "config/startedAt" | "config/seed" | "config/cwd" | "session/idState") => {
            change.run.in_memory || change.line["session"]["content"].is_string()
        }
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
        // Extension runs. What the extensions' own context lists of the tools is the host's
        // (a replay runs no extension); a tool's label is for Pi's interactive display (no
        // request, event or entry holds it).
        ("cassette", p) if p.starts_with("config/contextTools/") => true,
        ("cassette", "config/customTools/N/label") => true,
        // A custom tool's snippet and guidelines build the prompt's inputs, which the
        // configuration holds built (`systemSections`, `toolLoadout.prompt`); whether
        // registering it activates it is read when the session reloads.
        (
            "cassette",
            "config/customTools/N/promptSnippet" | "config/customTools/N/promptGuidelines/N",
        ) => true,
        ("cassette", "config/customTools/N/defaultActive") => {
            !change.run.reloaded || reloaded_before_declared(change)
        }
        // A deferred tool's label and snippet, which neither a request nor the extensions'
        // getters hold until it is loaded (the state digested at each hook point lists its
        // description, namespace and exposure).
        ("cassette", p)
            if [
                "config/toolLoadout/deferredTools/N/tool/label",
                "config/toolLoadout/deferredTools/N/tool/promptSnippet",
            ]
            .contains(&p) =>
        {
            !change.run.tool_searched
        }
        // A tool of the first load that a reload registered again before any request declared
        // it: the reload's declaration is the one sent.
        ("cassette", p) if p.starts_with("config/customTools/N/") => {
            reloaded_before_declared(change)
        }
        ("answer", p) if p.starts_with("input/outcome/actions/N/tools/N/") => {
            p.ends_with("/label") || !declared(change)
        }
        // Tools no run here activated, and the tool list the loadout's prompt inputs start with
        // (each change of the active tools replaces it before it is read).
        ("cassette" | "replaced", p)
            if p.starts_with("config/toolLoadout/inactiveBuiltins/")
                || p.starts_with("config/toolLoadout/inactiveTools/")
                || p == "config/toolLoadout/prompt/selectedTools/N" =>
        {
            true
        }
        // The system prompt is the recorded sections until an extension changes the active
        // tools, and built from the loadout's inputs from then on: one of the two is read.
        // Once built from them, the prompt lists the snippets and guidelines of the active
        // tools only: one no request sent from then on was not read.
        ("cassette" | "replaced", p) if p.starts_with("config/toolLoadout/prompt/") => {
            !change.run.loadout_changed || !listed_text_sent(change)
        }
        ("cassette", p) if p.starts_with("config/systemSections/") => change.run.loadout_changed,
        // What a `before_provider_request` handler returned is the request sent: the options
        // and output limit the payload was made from, the handler replaced.
        ("call", "options/temperature" | "options/toolChoice")
        | ("cassette", "config/model/maxTokens") => change.run.payload_hooked,
        // An entry an extension appended to a session kept in memory, which RPC mode prints
        // nowhere (no later handler here read it).
        ("answer", p)
            if p.starts_with("input/outcome/actions/N/customType")
                || p.starts_with("input/outcome/actions/N/data/") =>
        {
            change.run.in_memory && change.run.mode == "rpc"
        }
        // A command's error is printed under the command's name (Pi's `command:<name>`), not
        // the field's; print mode says it on stderr, which a check does not compare.
        ("answer", "input/outcome/errors/N/extension") => {
            errored_event(change) == "command" || change.run.mode != "rpc"
        }
        ("answer", "input/outcome/errors/N/error") => change.run.mode != "rpc",
        // Whether the command passed `withSession` is the host's to know: what the handler did
        // next is its recorded decisions.
        ("answer", "input/outcome/decision/ask/withSession") => true,
        // An ask its `session_before_*` handlers cancelled opened no session.
        ("answer", p) if p.starts_with("input/outcome/decision/ask/") => {
            change.run.cancelled_asks.contains(&change.line)
        }
        // A dialog's answer from RPC's client goes to the extension, whose decision the
        // recording holds.
        ("stdin", "") => {
            change.next == "user_bash"
                || change.line["line"]
                    .as_str()
                    .is_some_and(|l| l.contains(r#""type": "extension_ui_response""#))
        }
        // A session's end (a reload's) told where no extension handles `session_shutdown`:
        // nothing hears it.
        ("outside", "" | "input/reason") if change.line["input"]["kind"] == "leave" => {
            !change.run.hears_shutdown
        }
        // What a reload's new load registered: a tool's label (as above), and its commands,
        // which no prompt after the reload invokes in these runs.
        ("outside", "input/loaded/tools/N/label") => true,
        ("outside", p) if p.starts_with("input/loaded/commands/") => true,
        // The commands a session lists, read only by RPC `get_commands`.
        // A deferred tool's namespace beside its declaration's own (the declaration's is the
        // one listed), and the last name of the registration order (whatever it names, that
        // tool comes last).
        ("cassette", p) if p.starts_with("config/toolLoadout/deferredTools/N/namespace/") => {
            declares_namespace(change)
        }
        ("cassette", "config/toolLoadout/registrationOrder/N") => last_in_order(change),
        // The commands as RPC `get_commands` lists them, which only that command reads.
        ("cassette" | "replaced", p) if p.starts_with("config/resources/commandListing/") => {
            !change.run.stdin.contains("get_commands")
        }
        ("outside", p) if p.starts_with("input/loaded/commandListing/") => {
            !change.run.stdin.contains("get_commands")
        }
        ("replaced", p) if p.starts_with("config/resources/commands/") => {
            !change.run.stdin.contains("get_commands")
        }
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
        _ => false,
    }
}

/// Whether the tool a registering action's changed place is in was declared to the model by
/// a request of the run (one withdrawn before any request never was).
fn declared(change: &Change) -> bool {
    let [_, _, _, action, _, tool, ..] = change.at.as_slice() else {
        return true;
    };
    let actions = &change.line["input"]["outcome"]["actions"];
    let name =
        &actions[action.parse::<usize>().unwrap()]["tools"][tool.parse::<usize>().unwrap()]["name"];
    change.run.requests.contains(&name.to_string())
}

/// Whether the header's custom tool the changed place is in was registered again by a reload
/// (which said what it registered) before any request declared it.
/// Whether the deferred tool the changed place is in declares a namespace of its own.
fn declares_namespace(change: &Change) -> bool {
    let [_, _, _, index, ..] = change.at.as_slice() else {
        return false;
    };
    let Ok(index) = index.parse::<usize>() else {
        return false;
    };
    change.line["config"]["toolLoadout"]["deferredTools"][index]["tool"]["namespace"].is_object()
}

/// Whether the changed place is the registration order's last name.
fn last_in_order(change: &Change) -> bool {
    let order = &change.line["config"]["toolLoadout"]["registrationOrder"];
    let last = order.as_array().map_or(0, Vec::len).saturating_sub(1);
    change.at.get(3).and_then(|i| i.parse::<usize>().ok()) == Some(last)
}

fn reloaded_before_declared(change: &Change) -> bool {
    let (Some(before), [_, _, tool, ..]) =
        (&change.run.requests_before_reload, change.at.as_slice())
    else {
        return false;
    };
    let name = &change.line["config"]["customTools"][tool.parse::<usize>().unwrap()]["name"];
    !before.contains(&name.to_string())
}

/// Whether the prompt snippet or guidelines the changed place is in (a tool's name, or its
/// text) were sent in a system prompt built from the loadout's inputs: some request after the
/// active tools changed holds their text.
fn listed_text_sent(change: &Change) -> bool {
    let [_, _, _, list, index, ..] = change.at.as_slice() else {
        return true;
    };
    let Ok(index) = index.parse::<usize>() else {
        return true;
    };
    let entry = &change.line["config"]["toolLoadout"]["prompt"][list.as_str()][index][1];
    let texts: Vec<&Value> = match entry {
        Value::Array(lines) => lines.iter().collect(),
        text => vec![text],
    };
    texts.iter().any(|text| {
        let quoted = text.to_string();
        let inner = quoted.trim_matches('"');
        !inner.is_empty() && change.run.rebuilt_requests.contains(inner)
    })
}

/// The event of the handler error the changed place is in.
fn errored_event(change: &Change) -> &str {
    let index = change.at.get(3).and_then(|i| i.parse::<usize>().ok());
    index
        .and_then(|i| change.line["input"]["outcome"]["errors"][i]["event"].as_str())
        .unwrap_or_default()
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
    let changed_cassettes = CHANGED.iter().map(|name| corpus().join(name)).chain(
        EXTENSION_CHANGED
            .iter()
            .map(|name| extension_corpus().join(name)),
    );
    for path in changed_cassettes {
        let name = path.file_stem().unwrap().to_str().unwrap().to_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let parsed: Vec<Value> = lines
            .iter()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let run = RunFacts::of(&parsed);
        let kind_at = |index: usize| -> String {
            parsed
                .get(index)
                .map_or("", |l| l["type"].as_str().unwrap_or_default())
                .to_owned()
        };
        for (index, line) in parsed.iter().enumerate() {
            let kind = kind_at(index);
            let mut variants = vec![(String::new(), Vec::new(), None)];
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
                    .map(|(path, place)| {
                        let new = changed(line, &path);
                        (place, path, Some(new))
                    }),
            );
            if kind == "chunk" {
                variants.extend(
                    content_changed(line).map(|c| (CONTENT_CHANGE.to_owned(), Vec::new(), Some(c))),
                );
            }
            for (place, at, replaced) in variants {
                let mut copy: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
                match replaced {
                    Some(new) => copy[index] = new.to_string(),
                    None => drop(copy.remove(index)),
                }
                let file = format!("{name}-{:05}.jsonl", changes.len());
                std::fs::write(dir.path().join(&file), copy.join("\n") + "\n").unwrap();
                let change = Change {
                    kind: kind.clone(),
                    place,
                    at,
                    line: line.clone(),
                    next: kind_at(index + 1),
                    run: run.clone(),
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
