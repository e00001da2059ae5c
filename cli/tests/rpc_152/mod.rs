//! The RPC additions of Pi 1.5.2, through the binary: `data.disposition` on `prompt`, `steer`
//! and `follow_up`; `clear_queue`; `get_available_thinking_levels`; `get_entries {since?}`;
//! `get_tree`; `bash` with `excludeFromContext` and its `bash_execution_update` events;
//! `set_model` and `set_thinking_level` leaving settings.json alone; `get_commands`' built-in
//! commands.

mod cache_warm;
mod stats;

use serde_json::{json, Value};

use super::common::{Env, MockLlm};
use super::Pi;

/// The roles of `get_messages`.
fn roles(pi: &mut Pi, id: &str) -> Vec<String> {
    let messages = pi.call(id, json!({"type": "get_messages"}));
    messages["data"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn prompts_steers_and_follow_ups_answer_their_disposition_and_clear_queue_empties_the_queue() {
    let mut pi = Pi::start(json!([
        {"text": ["One ", "two."], "hang_until_file": "go"},
        {"text": ["Never asked."]}
    ]));
    let started = pi.call("p1", json!({"type": "prompt", "message": "Start"}));
    assert_eq!(
        started["data"],
        json!({"disposition": "started"}),
        "{started}"
    );
    pi.wait(|v| v["assistantMessageEvent"]["delta"] == "two.");
    for (id, command) in [
        (
            "p2",
            json!({"type": "prompt", "message": "as steer", "streamingBehavior": "steer"}),
        ),
        (
            "p3",
            json!({"type": "prompt", "message": "as follow-up", "streamingBehavior": "followUp"}),
        ),
        ("st", json!({"type": "steer", "message": "a steer"})),
        ("fu", json!({"type": "follow_up", "message": "a follow-up"})),
    ] {
        let answer = pi.call(id, command);
        assert_eq!(answer["data"], json!({"disposition": "queued"}), "{answer}");
    }
    let cleared = pi.call("cq", json!({"type": "clear_queue"}));
    assert_eq!(
        cleared["data"],
        json!({"steering": ["as steer", "a steer"], "followUp": ["as follow-up", "a follow-up"]}),
        "{cleared}"
    );
    let emptied = json!({"type": "queue_update", "steering": [], "followUp": []});
    let queue_empty = pi.seen.iter().position(|v| *v == emptied);
    let answered = pi.seen.iter().position(|v| v["id"] == "cq");
    assert!(
        queue_empty < answered,
        "the empty queue_update comes before the answer"
    );
    assert!(queue_empty.is_some());
    let state = pi.call("s1", json!({"type": "get_state"}));
    assert_eq!(state["data"]["pendingMessageCount"], 0);
    pi.mock.release("go");
    pi.wait_type("agent_end");
    // Nothing that was cleared runs.
    assert_eq!(roles(&mut pi, "m1"), ["system", "user", "assistant"]);
    assert_eq!(pi.mock.requests().len(), 1);

    // A follow-up sent while idle is queued, and stays queued.
    let idle = pi.call("fu2", json!({"type": "follow_up", "message": "later"}));
    assert_eq!(idle["data"], json!({"disposition": "queued"}), "{idle}");
    let state = pi.call("s2", json!({"type": "get_state"}));
    assert_eq!(state["data"]["pendingMessageCount"], 1);
    assert_eq!(state["data"]["isStreaming"], false);
    assert_eq!(pi.mock.requests().len(), 1);
    assert_eq!(pi.finish(), 0);
}

#[test]
fn thinking_levels_entries_and_tree_are_reported() {
    let mut pi = Pi::start(json!([{"text": ["First."]}, {"text": ["Second."]}]));
    let levels = pi.call("tl0", json!({"type": "get_available_thinking_levels"}));
    assert_eq!(levels["data"], json!({"levels": ["off"]}), "{levels}");

    let empty = pi.call("e-", json!({"type": "get_entries"}));
    assert_eq!(
        empty["data"]["entries"].as_array().unwrap().len(),
        2,
        "{empty}"
    );

    pi.send(json!({"id": "p1", "type": "prompt", "message": "First"}));
    pi.wait_type("agent_end");
    let all = pi.call("e0", json!({"type": "get_entries"}));
    let entries = all["data"]["entries"].as_array().unwrap().clone();
    let kinds: Vec<&str> = entries
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "model_change",
            "thinking_level_change",
            "message",
            "message",
            "message"
        ]
    );
    let leaf = all["data"]["leafId"].clone();
    assert_eq!(leaf, entries[4]["id"]);
    let none = pi.call("e1", json!({"type": "get_entries", "since": leaf}));
    assert_eq!(none["data"], json!({"entries": [], "leafId": leaf}));
    let after = pi.call(
        "e2",
        json!({"type": "get_entries", "since": entries[2]["id"]}),
    );
    assert_eq!(after["data"]["entries"], json!(entries[3..]));
    let unknown = pi.call("e3", json!({"type": "get_entries", "since": "nope"}));
    assert_eq!(unknown["success"], false);
    assert_eq!(unknown["error"], "Entry not found: nope");

    let tree = pi.call("t", json!({"type": "get_tree"}));
    assert_eq!(tree["data"]["leafId"], leaf);
    let roots = tree["data"]["tree"].as_array().unwrap();
    assert_eq!(roots.len(), 1);
    let mut node = &roots[0];
    for entry in &entries {
        assert_eq!(&node["entry"], entry);
        assert!(node.get("label").is_none());
        match node["children"].as_array().unwrap().as_slice() {
            [] => break,
            [child] => node = child,
            more => panic!("a chain has one child per node: {more:?}"),
        }
    }

    pi.call(
        "sm",
        json!({"type": "set_model", "provider": "mock", "modelId": "mock-reasoner"}),
    );
    let levels = pi.call("tl1", json!({"type": "get_available_thinking_levels"}));
    assert_eq!(
        levels["data"],
        json!({"levels": ["off", "minimal", "low", "medium", "high"]})
    );
    assert_eq!(pi.finish(), 0);
}

#[test]
fn bash_excluded_from_context_is_recorded_but_not_sent_and_streams_its_output() {
    let mut pi = Pi::start(json!([{"text": ["Saw it."]}]));
    let hidden = pi.call(
        "b1",
        json!({"type": "bash", "command": "echo hidden-output", "excludeFromContext": true}),
    );
    assert_eq!(hidden["data"]["output"], "hidden-output\n");
    pi.call(
        "b2",
        json!({"type": "bash", "command": "echo visible-output"}),
    );
    for (id, delta) in [("b1", "hidden-output\n"), ("b2", "visible-output\n")] {
        let update = json!({"type": "bash_execution_update", "id": id, "delta": delta});
        assert!(pi.seen.contains(&update), "{update} in {:#?}", pi.seen);
    }
    pi.send(json!({"id": "p", "type": "prompt", "message": "What did it print?"}));
    pi.wait_type("agent_end");
    let entries = pi.call("e", json!({"type": "get_entries"}));
    let bash: Vec<&Value> = entries["data"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["message"]["role"] == "bashExecution")
        .collect();
    assert_eq!(bash[0]["message"]["excludeFromContext"], true);
    assert!(bash[1]["message"].get("excludeFromContext").is_none());
    let request = pi.mock.requests()[0].to_string();
    assert!(!request.contains("hidden-output"), "{request}");
    assert!(request.contains("visible-output"), "{request}");
    assert_eq!(pi.finish(), 0);
}

#[test]
fn set_model_and_thinking_level_change_the_session_not_the_settings() {
    let mut pi = Pi::start(json!([{"text": ["First."]}]));
    let settings = pi.env().path("agent").join("settings.json");
    let before = std::fs::read(&settings).ok();
    pi.call(
        "sm",
        json!({"type": "set_model", "provider": "mock", "modelId": "mock-reasoner"}),
    );
    // 1.5.2 carries the current level (off on mock-model) to the new model: no change.
    assert!(!pi
        .seen
        .iter()
        .any(|v| v["type"] == "thinking_level_changed"));
    pi.call("tl", json!({"type": "set_thinking_level", "level": "high"}));
    let cycled = pi.call("ct", json!({"type": "cycle_thinking_level"}));
    assert_eq!(cycled["data"], json!({"level": "off"}));
    assert_eq!(std::fs::read(&settings).ok(), before);
    let commands = pi.call("c", json!({"type": "get_commands"}));
    let names: Vec<&str> = commands["data"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["llama", "mcp"]);
    assert_eq!(
        commands["data"]["commands"][1]["sourceInfo"]["path"],
        "builtin:mcp"
    );
    assert_eq!(pi.finish(), 0);
}

#[test]
fn another_models_thinking_is_dropped_not_sent_as_text() {
    let mut pi = Pi::start(json!([
        {"reasoning": ["Pondering the question."], "text": ["First answer."]},
        {"text": ["Second answer."]}
    ]));
    pi.call(
        "sm1",
        json!({"type": "set_model", "provider": "mock", "modelId": "mock-reasoner"}),
    );
    pi.send(json!({"id": "p1", "type": "prompt", "message": "Think"}));
    pi.wait_type("agent_end");
    let messages = pi.call("m", json!({"type": "get_messages"}));
    let answer = &messages["data"]["messages"][2];
    assert_eq!(answer["content"][0]["type"], "thinking", "{answer}");
    pi.call(
        "sm2",
        json!({"type": "set_model", "provider": "mock", "modelId": "mock-model"}),
    );
    pi.send(json!({"id": "p2", "type": "prompt", "message": "Again"}));
    pi.wait_type("agent_end");
    let second = pi.mock.requests()[1].to_string();
    assert!(!second.contains("Pondering"), "{second}");
    assert!(second.contains("First answer."), "{second}");
    assert_eq!(pi.finish(), 0);
}

#[test]
fn level_max_is_a_level_clamped_to_what_the_model_offers() {
    let mut pi = Pi::start(json!([]));
    pi.call(
        "sm",
        json!({"type": "set_model", "provider": "mock", "modelId": "mock-reasoner"}),
    );
    let set = pi.call("tl", json!({"type": "set_thinking_level", "level": "max"}));
    assert_eq!(set["success"], true, "{set}");
    // mock-reasoner's map names neither xhigh nor max: the nearest level below is high.
    assert!(pi
        .seen
        .contains(&json!({"type": "thinking_level_changed", "level": "high"})));
    let state = pi.call("s", json!({"type": "get_state"}));
    assert_eq!(state["data"]["thinkingLevel"], "high");
    // A name 1.5.2 does not know is clamped too: to the model's first level.
    let bogus = pi.call(
        "tb",
        json!({"type": "set_thinking_level", "level": "bogus"}),
    );
    assert_eq!(bogus["success"], true, "{bogus}");
    let state = pi.call("s2", json!({"type": "get_state"}));
    assert_eq!(state["data"]["thinkingLevel"], "off");
    assert_eq!(pi.finish(), 0);
}

#[test]
fn a_fork_before_the_first_user_message_keeps_the_entries_before_it() {
    let mut pi = Pi::start(json!([{"text": ["First."]}, {"text": ["After the fork."]}]));
    pi.send(json!({"id": "p1", "type": "prompt", "message": "First question"}));
    pi.wait_type("agent_end");
    let state = pi.call("s0", json!({"type": "get_state"}));
    let original = state["data"]["sessionFile"].as_str().unwrap().to_owned();
    let before = pi.call("e0", json!({"type": "get_entries"}));
    let first_user = before["data"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .position(|e| e["message"]["role"] == "user")
        .unwrap();
    let kept: Vec<Value> = before["data"]["entries"].as_array().unwrap()[..first_user].to_vec();
    let forked = pi.call(
        "f0",
        json!({"type": "fork", "entryId": before["data"]["entries"][first_user]["id"]}),
    );
    assert_eq!(forked["data"]["text"], "First question", "{forked}");
    let keys: Vec<&String> = forked["data"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["text", "cancelled"]);
    // The system message recorded before the first request stays, in memory.
    assert_eq!(roles(&mut pi, "m1"), ["system"]);
    pi.send(json!({"id": "p2", "type": "prompt", "message": "Question after the fork"}));
    pi.wait_type("agent_end");
    assert_eq!(roles(&mut pi, "m2"), ["system", "user", "assistant"]);
    let state = pi.call("s1", json!({"type": "get_state"}));
    let file = state["data"]["sessionFile"].as_str().unwrap().to_owned();
    assert_ne!(file, original);
    let lines: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["parentSession"], original.as_str());
    // The same entries as the original's before its first user message, and no second prompt.
    assert_eq!(lines[1..=kept.len()], kept[..]);
    let system = lines
        .iter()
        .filter(|l| l["message"]["role"] == "system")
        .count();
    assert_eq!(system, 1);
    assert_eq!(pi.finish(), 0);
}

/// The id of the `n`th (from 0) user message among `get_entries`.
fn user_entry(pi: &mut Pi, id: &str, n: usize) -> Value {
    let entries = pi.call(id, json!({"type": "get_entries"}));
    entries["data"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["message"]["role"] == "user")
        .nth(n)
        .unwrap()["id"]
        .clone()
}

#[test]
fn a_session_kept_in_memory_forks_and_clones_in_memory() {
    let mut pi = Pi::start_with(
        json!([{"text": ["One."]}, {"text": ["Two."]}, {"text": ["Three."]}]),
        &["--no-session"],
    );
    for (id, text) in [("p1", "First"), ("p2", "Second")] {
        pi.send(json!({"id": id, "type": "prompt", "message": text}));
        pi.wait_type("agent_end");
    }
    let second = user_entry(&mut pi, "e1", 1);
    let forked = pi.call("f", json!({"type": "fork", "entryId": second}));
    assert_eq!(
        forked["data"],
        json!({"text": "Second", "cancelled": false}),
        "{forked}"
    );
    assert_eq!(roles(&mut pi, "m1"), ["system", "user", "assistant"]);
    let state = pi.call("s1", json!({"type": "get_state"}));
    assert!(state["data"]["sessionFile"].is_null(), "{state}");
    let cloned = pi.call("c", json!({"type": "clone"}));
    assert_eq!(cloned["data"], json!({"cancelled": false}), "{cloned}");
    assert_eq!(roles(&mut pi, "m2"), ["system", "user", "assistant"]);
    pi.send(json!({"id": "p3", "type": "prompt", "message": "Third"}));
    pi.wait_type("agent_end");
    assert_eq!(
        roles(&mut pi, "m3"),
        ["system", "user", "assistant", "user", "assistant"]
    );
    let state = pi.call("s2", json!({"type": "get_state"}));
    assert!(state["data"]["sessionFile"].is_null(), "{state}");
    assert_eq!(pi.finish(), 0);
}

/// Pi writes a session's file at its first user message: before it, a `clone` (a fork at the
/// current entry) has a file to branch that is not there yet.
#[test]
fn a_fork_of_a_session_whose_file_is_not_written_yet_is_refused_with_pis_text() {
    let mut pi = Pi::start(json!([{"text": ["One."]}]));
    let state = pi.call("s0", json!({"type": "get_state"}));
    let file = state["data"]["sessionFile"].as_str().unwrap().to_owned();
    assert!(!std::path::Path::new(&file).exists());
    let refused = pi.call("c", json!({"type": "clone"}));
    assert_eq!(
        refused["error"],
        "This session has not been saved yet. Send a message before cloning or forking it.",
        "{refused}"
    );
    let state = pi.call("s1", json!({"type": "get_state"}));
    assert_eq!(
        state["data"]["sessionFile"],
        file.as_str(),
        "the session stays"
    );
    pi.send(json!({"id": "p1", "type": "prompt", "message": "First"}));
    pi.wait_type("agent_end");
    assert!(std::path::Path::new(&file).exists());
    assert_eq!(pi.finish(), 0);
}

#[test]
fn a_models_own_thinking_level_comes_before_the_default() {
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    env.write_agent(
        "settings.json",
        r#"{"defaultThinkingLevel": "minimal", "modelThinkingLevels": {"mock/mock-reasoner": "low"}}"#,
    );
    let mut pi = Pi::start_in(
        env,
        mock,
        &[
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--mode",
            "rpc",
        ],
    );
    pi.call(
        "sm",
        json!({"type": "set_model", "provider": "mock", "modelId": "mock-reasoner"}),
    );
    let state = pi.call("s", json!({"type": "get_state"}));
    assert_eq!(state["data"]["thinkingLevel"], "low");
    assert_eq!(pi.finish(), 0);
    // A new session on that model starts at its level.
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    env.write_agent(
        "settings.json",
        r#"{"defaultThinkingLevel": "minimal", "modelThinkingLevels": {"mock/mock-reasoner": "low"}}"#,
    );
    let mut pi = Pi::start_in(
        env,
        mock,
        &[
            "--provider",
            "mock",
            "--model",
            "mock-reasoner",
            "--mode",
            "rpc",
        ],
    );
    let state = pi.call("s", json!({"type": "get_state"}));
    assert_eq!(state["data"]["thinkingLevel"], "low");
    assert_eq!(pi.finish(), 0);
}

/// The lines of `seen` from the first queue_update on, as `kind:id` (or `queue_update:N`, N the
/// queued count), the way Pi 1.5.2's e_rpc trace shows them.
fn order_after_queueing(seen: &[Value]) -> Vec<String> {
    let first = seen
        .iter()
        .position(|v| v["type"] == "queue_update")
        .expect("a queue_update");
    seen[first..]
        .iter()
        .filter(|v| v["type"] == "queue_update" || v["type"] == "response")
        .map(|v| match v["type"].as_str() {
            Some("queue_update") => {
                let count = v["steering"].as_array().map_or(0, Vec::len)
                    + v["followUp"].as_array().map_or(0, Vec::len);
                format!("queue_update:{count}")
            }
            _ => format!("response:{}", v["id"].as_str().unwrap_or("")),
        })
        .collect()
}

/// A session whose first answer has streamed its text and then holds until the mock's file `go`
/// is released (a steer and a follow-up answered after it); with the index of the first line seen
/// after that.
fn streaming_until_released() -> (Pi, usize) {
    let mut pi = Pi::start(json!([
        {"text": ["One ", "two."], "hang_until_file": "go"},
        {"text": ["Steered."]},
        {"text": ["Followed."]}
    ]));
    pi.call("p1", json!({"type": "prompt", "message": "Start"}));
    pi.wait(|v| v["assistantMessageEvent"]["delta"] == "two.");
    let from = pi.seen.len();
    (pi, from)
}

/// Pi 1.5.2 queues a steer or follow-up after the input hooks' microtask, so the other commands
/// read in the same chunk are answered from the state before it (e_rpc `s1`): the queue_updates
/// come first, then the answers of the chunk's other commands, then the queued ones'.
#[test]
fn commands_read_in_one_write_are_answered_before_its_steers_take_effect() {
    let (mut pi, from) = streaming_until_released();
    pi.send_together(&[
        json!({"id": "st1", "type": "steer", "message": "a steer"}),
        json!({"id": "fu1", "type": "follow_up", "message": "a follow-up"}),
        json!({"id": "s1", "type": "get_state"}),
        json!({"id": "bad1", "type": "prompt", "message": "no behaviour"}),
    ]);
    pi.response(json!("fu1"));
    assert_eq!(
        order_after_queueing(&pi.seen[from..]),
        [
            "queue_update:1",
            "queue_update:2",
            "response:s1",
            "response:bad1",
            "response:st1",
            "response:fu1"
        ]
    );
    let s1 = pi.seen.iter().find(|v| v["id"] == "s1").unwrap();
    assert_eq!(s1["data"]["pendingMessageCount"], 0, "{s1}");
    // A command read on its own sees them queued.
    let s2 = pi.call("s2", json!({"type": "get_state"}));
    assert_eq!(s2["data"]["pendingMessageCount"], 2, "{s2}");
    pi.mock.release("go");
    pi.wait_type("agent_end");
    assert_eq!(pi.finish(), 0);
}

/// The same commands sent one write each: each is answered in turn, and `get_state` counts the
/// steer and the follow-up before it.
#[test]
fn commands_read_one_by_one_see_the_steers_before_them() {
    let (mut pi, from) = streaming_until_released();
    pi.call("st1", json!({"type": "steer", "message": "a steer"}));
    pi.call(
        "fu1",
        json!({"type": "follow_up", "message": "a follow-up"}),
    );
    let s1 = pi.call("s1", json!({"type": "get_state"}));
    assert_eq!(s1["data"]["pendingMessageCount"], 2, "{s1}");
    assert_eq!(
        order_after_queueing(&pi.seen[from..]),
        [
            "queue_update:1",
            "response:st1",
            "queue_update:2",
            "response:fu1",
            "response:s1"
        ]
    );
    pi.mock.release("go");
    pi.wait_type("agent_end");
    assert_eq!(pi.finish(), 0);
}

/// `pi replay --check PATH` in a fresh directory: its exit code and stderr.
fn replay_check(cassette: &std::path::Path) -> (Option<i32>, String) {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pi"))
        .args(["replay", "--check"])
        .arg(cassette)
        .current_dir(cassette.parent().unwrap())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A recording keeps which lines came in one read (`with_next` on each but the read's last), and
/// its replay orders the answers from that, not from how its own reads fall: the cassette
/// checks, and the same cassette with the marks taken out (every line read alone) prints
/// otherwise and is reported as diverged.
#[test]
fn a_recorded_read_of_several_lines_replays_in_its_order() {
    let dir = tempfile::tempdir().unwrap();
    let cassette = dir.path().join("batch.jsonl");
    let mut pi = Pi::start_with(
        json!([
            {"text": ["One ", "two."], "hang_until_file": "go"},
            {"text": ["Steered."]},
            {"text": ["Followed."]}
        ]),
        &["--record", cassette.to_str().unwrap()],
    );
    pi.call("p1", json!({"type": "prompt", "message": "Start"}));
    pi.wait(|v| v["assistantMessageEvent"]["delta"] == "two.");
    pi.send_together(&[
        json!({"id": "st1", "type": "steer", "message": "a steer"}),
        json!({"id": "fu1", "type": "follow_up", "message": "a follow-up"}),
        json!({"id": "s1", "type": "get_state"}),
    ]);
    let s1 = pi.response(json!("s1"));
    assert_eq!(s1["data"]["pendingMessageCount"], 0, "{s1}");
    pi.response(json!("fu1"));
    pi.mock.release("go");
    pi.wait_type("agent_end");
    assert_eq!(pi.finish(), 0);

    let text = std::fs::read_to_string(&cassette).unwrap();
    let marks: Vec<(String, bool)> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["type"] == "stdin")
        .map(|l| {
            let sent: Value = serde_json::from_str(l["line"].as_str().unwrap()).unwrap();
            let id = sent["id"].as_str().unwrap().to_owned();
            (id, l.get("with_next") == Some(&json!(true)))
        })
        .collect();
    assert_eq!(
        marks,
        [
            ("p1".to_owned(), false),
            ("st1".to_owned(), true),
            ("fu1".to_owned(), true),
            ("s1".to_owned(), false)
        ]
    );
    let (code, stderr) = replay_check(&cassette);
    assert_eq!(code, Some(0), "{stderr}");

    let alone = dir.path().join("alone.jsonl");
    std::fs::write(&alone, text.replace(r#","with_next":true"#, "")).unwrap();
    let (code, stderr) = replay_check(&alone);
    assert_eq!(
        code,
        Some(1),
        "read alone, the lines answer otherwise: {stderr}"
    );
    assert!(stderr.contains("diverge"), "{stderr}");
}

/// Prompts queued while streaming are queued in their place among the read's steers and
/// answered before them (1.5.2's rpc_dispositions trace: four `queue_update`s, then `p2`, `p3`,
/// `st1`, `fu1`), and the queue keeps the order the lines were sent in.
#[test]
fn prompts_read_with_steers_queue_in_line_order_and_answer_first() {
    let mut pi = Pi::start(json!([
        {"text": ["One ", "two."], "hang_until_file": "go"},
        {"text": ["Never asked."]}
    ]));
    pi.call("p1", json!({"type": "prompt", "message": "Start"}));
    pi.wait(|v| v["assistantMessageEvent"]["delta"] == "two.");
    let from = pi.seen.len();
    pi.send_together(&[
        json!({"id": "p2", "type": "prompt", "message": "as steer", "streamingBehavior": "steer"}),
        json!({"id": "p3", "type": "prompt", "message": "as follow-up", "streamingBehavior": "followUp"}),
        json!({"id": "st1", "type": "steer", "message": "a steer"}),
        json!({"id": "fu1", "type": "follow_up", "message": "a follow-up"}),
    ]);
    pi.response(json!("fu1"));
    assert_eq!(
        order_after_queueing(&pi.seen[from..]),
        [
            "queue_update:1",
            "queue_update:2",
            "queue_update:3",
            "queue_update:4",
            "response:p2",
            "response:p3",
            "response:st1",
            "response:fu1"
        ]
    );
    let cleared = pi.call("cq", json!({"type": "clear_queue"}));
    assert_eq!(
        cleared["data"],
        json!({"steering": ["as steer", "a steer"], "followUp": ["as follow-up", "a follow-up"]}),
        "{cleared}"
    );
    pi.mock.release("go");
    pi.wait_type("agent_end");
    assert_eq!(pi.finish(), 0);
}

/// A client that reads the session file as soon as `agent_settled` arrives finds the run's last
/// answer there: the binary writes a step's entries before its events (Pi appends an entry before
/// any later event). Through the library the order is pinned deterministically
/// (`effects/tests/scripted_session.rs`); here, through the real process, it is a guard.
#[test]
fn the_session_file_holds_the_answer_when_agent_settled_arrives() {
    let mut pi = Pi::start(json!([{"text": ["The answer."]}]));
    pi.call("p", json!({"type": "prompt", "message": "Ask"}));
    pi.wait_type("agent_settled");
    let files: Vec<_> = pi
        .env()
        .session_files()
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    assert!(text.contains("The answer."), "{text}");
    assert_eq!(pi.finish(), 0);
}
