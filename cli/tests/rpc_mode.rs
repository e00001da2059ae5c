//! End-to-end tests of `pi --mode rpc`: the real binary, the conformance kit's mock LLM on
//! 127.0.0.1, and temporary HOME / agent / working directories.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // a test fails loudly

mod common;
mod compaction_152;
mod hostile_replay;
mod rpc_152;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use common::{Env, MockLlm};
use serde_json::{json, Value};

/// `pi --mode rpc` with its own directories, talking to a mock.
struct Pi {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    /// Every line read so far.
    seen: Vec<Value>,
    /// Keeps the run's directories alive.
    _env: Env,
    mock: MockLlm,
}

impl Pi {
    fn start(script: Value) -> Pi {
        Pi::start_with(script, &[])
    }

    fn start_with(script: Value, extra_args: &[&str]) -> Pi {
        Pi::start_configured(script, extra_args, None)
    }

    /// A run with `settings` as the agent's settings.json; `extra_args` follow the mock model's
    /// RPC command line, unless they start with `--provider`, which then replaces the model.
    fn start_configured(script: Value, extra_args: &[&str], settings: Option<&Value>) -> Pi {
        let mock = MockLlm::start(&script);
        let env = Env::new(&mock);
        if let Some(settings) = settings {
            env.write_agent("settings.json", &settings.to_string());
        }
        let mut args = Vec::new();
        if extra_args.first() == Some(&"--provider") {
            args.extend_from_slice(extra_args);
            args.extend_from_slice(&["--mode", "rpc"]);
        } else {
            args.extend_from_slice(&[
                "--provider",
                "mock",
                "--model",
                "mock-model",
                "--mode",
                "rpc",
            ]);
            args.extend_from_slice(extra_args);
        }
        Pi::start_in(env, mock, &args)
    }

    /// `pi ARGS` in `env` (prepared beforehand), talking to `mock`.
    fn start_in(env: Env, mock: MockLlm, args: &[&str]) -> Pi {
        let mut child = env
            .command(args)
            .env("PI_OFFLINE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Pi {
            stdin: child.stdin.take(),
            child,
            lines,
            seen: Vec::new(),
            _env: env,
            mock,
        }
    }

    /// The run's directories.
    fn env(&self) -> &Env {
        &self._env
    }

    fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, command: Value) {
        self.send_raw(&command.to_string());
    }

    /// Sends `commands` in one write, as one read will take them.
    fn send_together(&mut self, commands: &[Value]) {
        let text: String = commands.iter().map(|c| format!("{c}\n")).collect();
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(text.as_bytes()).unwrap();
        stdin.flush().unwrap();
    }

    /// The next line that `wanted` accepts (earlier lines are kept in `seen`).
    fn wait(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("timed out; seen: {:#?}", self.seen));
            let value: Value = serde_json::from_str(&line).unwrap();
            self.seen.push(value.clone());
            if wanted(&value) {
                return value;
            }
        }
    }

    /// The response to the command with this id.
    fn response(&mut self, id: Value) -> Value {
        self.wait(|v| v["type"] == "response" && v["id"] == id)
    }

    /// Sends a command with `id` and returns its response.
    fn call(&mut self, id: &str, mut command: Value) -> Value {
        command["id"] = json!(id);
        self.send(command);
        self.response(json!(id))
    }

    fn wait_type(&mut self, kind: &str) -> Value {
        self.wait(|v| v["type"] == kind)
    }

    /// Closes stdin and returns the exit code.
    fn finish(mut self) -> i32 {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            assert!(
                Instant::now() < deadline,
                "pi did not exit after stdin closed"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Pi {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn position(seen: &[Value], wanted: impl Fn(&Value) -> bool) -> usize {
    seen.iter().position(wanted).expect("line not seen")
}

#[test]
fn prompt_is_acknowledged_before_the_run_and_ids_are_echoed_as_sent() {
    let mut pi = Pi::start(json!([{"text": ["Hello ", "there."]}]));
    pi.send(json!({"id": 42, "type": "prompt", "message": "Say hello"}));
    pi.wait_type("agent_end");
    let ack = position(&pi.seen, |v| v["id"] == 42);
    let start = position(&pi.seen, |v| v["type"] == "agent_start");
    assert!(
        ack < start,
        "the prompt's response comes before agent_start"
    );
    assert_eq!(
        pi.seen[ack],
        json!({"id": 42, "type": "response", "command": "prompt", "success": true,
               "data": {"disposition": "started"}})
    );
    let state = pi.call("s", json!({"type": "get_state"}));
    let data = &state["data"];
    assert_eq!(data["model"]["id"], "mock-model");
    assert_eq!(data["thinkingLevel"], "off");
    assert_eq!(data["isStreaming"], false);
    assert_eq!(data["isCompacting"], false);
    assert_eq!(data["steeringMode"], "one-at-a-time");
    assert_eq!(data["followUpMode"], "one-at-a-time");
    assert_eq!(data["autoCompactionEnabled"], true);
    // The system message Pi 1.5.2 records before the first request counts.
    assert_eq!(data["messageCount"], 3);
    assert_eq!(data["pendingMessageCount"], 0);
    assert!(data["sessionFile"].as_str().unwrap().ends_with(".jsonl"));
    assert!(data.get("sessionName").is_none());
    let text = pi.call("t", json!({"type": "get_last_assistant_text"}));
    assert_eq!(text["data"], json!({"text": "Hello there."}));
    assert_eq!(pi.finish(), 0);
}

#[test]
fn bad_lines_are_answered_as_pi_answers_them() {
    let mut pi = Pi::start(json!([]));
    pi.send_raw("this is not json");
    let parse = pi.wait(|v| v["command"] == "parse");
    assert_eq!(
        parse,
        json!({"type": "response", "command": "parse", "success": false,
               "error": "Failed to parse command: Unexpected token 'h', \"this is not json\" is not valid JSON"})
    );
    // Pi 1.5.2 runs on Node 22, whose message names the line and column after the position.
    pi.send_raw("{\"type\" 1}");
    let positioned = pi.wait(|v| v["command"] == "parse" && v != &parse);
    assert_eq!(
        positioned["error"],
        "Failed to parse command: Expected ':' after property name in JSON at position 8 (line 1 column 9)"
    );
    pi.send_raw("{\"type\": \"no_such_command\"}\r");
    let unknown = pi.wait(|v| v["command"] == "no_such_command");
    assert_eq!(
        unknown,
        json!({"type": "response", "command": "no_such_command", "success": false,
               "error": "Unknown command: no_such_command"})
    );
    let empty = pi.call("n", json!({"type": "set_session_name", "name": "   "}));
    assert_eq!(empty["error"], "Session name cannot be empty");
    let missing = pi.call(
        "m",
        json!({"type": "set_model", "provider": "mock", "modelId": "nope"}),
    );
    assert_eq!(missing["error"], "Model not found: mock/nope");
    let commands = pi.call("c", json!({"type": "get_commands"}));
    // Pi 1.5.2's own commands (llama, mcp) are its only ones here.
    assert_eq!(commands["data"]["commands"].as_array().unwrap().len(), 2);
    let text = pi.call("t", json!({"type": "get_last_assistant_text"}));
    assert_eq!(text["data"], json!({}));
    assert_eq!(pi.finish(), 0);
}

/// Every error answer carries the id its line had, string or number (Pi 0.73.1 leaves it out
/// of the unknown-command answer; clients that match answers by id would wait forever).
#[test]
fn error_answers_carry_the_id_of_their_line() {
    let mut pi = Pi::start(json!([]));
    for id in [json!("e1"), json!(7), json!(-2.5)] {
        let text = id.to_string();
        // Not valid JSON, but the id is readable: a cut line, a missing value, a stray comma.
        for line in [
            format!("{{\"id\": {text}, \"type\": \"get_state\""),
            format!("{{\"id\": {text}, \"type\": }}"),
            format!("{{\"id\": {text}, \"type\": \"get_state\",}}"),
        ] {
            pi.send_raw(&line);
            let answer = pi.response(id.clone());
            assert_eq!(answer["command"], "parse", "{line}");
            assert_eq!(answer["success"], false);
            assert!(
                answer["error"]
                    .as_str()
                    .unwrap()
                    .starts_with("Failed to parse command: "),
                "{answer}"
            );
        }
        // No type, or a type that is not a string: Pi's texts, with the id.
        pi.send(json!({"id": id}));
        assert_eq!(
            pi.response(id.clone()),
            json!({"id": id, "type": "response", "success": false, "error": "Unknown command: undefined"})
        );
        pi.send(json!({"id": id, "type": 5}));
        assert_eq!(
            pi.response(id.clone()),
            json!({"id": id, "type": "response", "command": 5, "success": false, "error": "Unknown command: 5"})
        );
        pi.send(json!({"id": id, "type": ["a", null, 1]}));
        assert_eq!(pi.response(id.clone())["error"], "Unknown command: a,,1");
        // An unknown command.
        pi.send(json!({"id": id, "type": "no_such_command"}));
        assert_eq!(
            pi.response(id.clone()),
            json!({"id": id, "type": "response", "command": "no_such_command", "success": false,
                   "error": "Unknown command: no_such_command"})
        );
        // Fields of the wrong type.
        for (command, field) in [
            (json!({"type": "prompt", "message": 5}), "message"),
            (json!({"type": "steer"}), "message"),
            (json!({"type": "set_session_name", "name": false}), "name"),
            (json!({"type": "set_steering_mode", "mode": 3}), "mode"),
            (
                json!({"type": "set_auto_compaction", "enabled": "yes"}),
                "enabled",
            ),
        ] {
            let mut command = command;
            command["id"] = id.clone();
            let kind = command["type"].clone();
            pi.send(command);
            assert_eq!(
                pi.response(id.clone()),
                json!({"id": id, "type": "response", "command": kind, "success": false,
                       "error": format!("Missing or invalid field: {field}")})
            );
        }
    }
    // A line without a readable id is answered without one.
    pi.send_raw("{\"type\": \"get_state\"");
    let parse = pi.wait(|v| v["command"] == "parse");
    assert!(parse.get("id").is_none(), "{parse}");
    pi.send(json!({"type": "no_such_command"}));
    let unknown = pi.wait(|v| v["command"] == "no_such_command");
    assert!(unknown.get("id").is_none(), "{unknown}");
    assert_eq!(pi.finish(), 0);
}

#[test]
fn steering_follow_up_and_abort_work_while_a_run_streams() {
    // The first reply is held open until the commands below are answered; the third never ends.
    let mut pi = Pi::start(json!([
        {"text": ["One ", "two ", "three."], "hang_until_file": "counted"},
        {"text": ["Steered."]},
        {"text": ["This ", "is ", "long."], "hang_ms": 60000}
    ]));
    pi.send(json!({"id": "p", "type": "prompt", "message": "Count"}));
    pi.wait(|v| v["assistantMessageEvent"]["delta"] == "three.");
    let refused = pi.call("bad", json!({"type": "prompt", "message": "again"}));
    assert_eq!(
        refused["error"],
        "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message."
    );
    let steer = pi.call("st", json!({"type": "steer", "message": "Also this."}));
    assert_eq!(steer["success"], true);
    let state = pi.call("s", json!({"type": "get_state"}));
    assert_eq!(state["data"]["isStreaming"], true);
    assert_eq!(state["data"]["pendingMessageCount"], 1);
    pi.mock.release("counted");
    pi.wait_type("agent_end");
    let messages = pi.call("m", json!({"type": "get_messages"}));
    let roles: Vec<&str> = messages["data"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user", "assistant"]);

    pi.send(json!({"id": "p2", "type": "prompt", "message": "Long"}));
    pi.wait(|v| v["assistantMessageEvent"]["delta"] == "long.");
    pi.send(json!({"id": "ab", "type": "abort"}));
    pi.response(json!("ab"));
    let end = position(&pi.seen, |v| {
        v["type"] == "agent_end" && v["messages"][1]["stopReason"] == "aborted"
    });
    let answered = position(&pi.seen, |v| v["id"] == "ab");
    assert!(end < answered, "abort is answered once the run ended");
    assert_eq!(pi.finish(), 0);
}

#[test]
fn bash_runs_beside_the_session_and_reaches_the_next_prompt() {
    let mut pi = Pi::start(json!([{"text": ["Saw it."]}]));
    let bash = pi.call(
        "b",
        json!({"type": "bash", "command": "echo from-bash; exit 3"}),
    );
    assert_eq!(
        bash,
        json!({"id": "b", "type": "response", "command": "bash", "success": true,
               "data": {"output": "from-bash\n", "exitCode": 3, "cancelled": false, "truncated": false}})
    );
    pi.send(json!({"id": "p", "type": "prompt", "message": "What did it print?"}));
    pi.wait_type("agent_end");
    let messages = pi.call("m", json!({"type": "get_messages"}));
    let first = &messages["data"]["messages"][0];
    assert_eq!(first["role"], "bashExecution");
    assert_eq!(first["command"], "echo from-bash; exit 3");
    assert_eq!(first["exitCode"], 3);
    assert_eq!(pi.finish(), 0);
}

#[test]
fn session_settings_names_and_compaction() {
    let mut pi = Pi::start(json!([
        {"text": ["First answer."]}
    ]));
    pi.send(json!({"id": "p", "type": "prompt", "message": "Question"}));
    pi.wait_type("agent_end");
    let named = pi.call("n", json!({"type": "set_session_name", "name": "  Work  "}));
    assert_eq!(
        named,
        json!({"id": "n", "type": "response", "command": "set_session_name", "success": true})
    );
    assert!(pi
        .seen
        .contains(&json!({"type": "session_info_changed", "name": "Work"})));
    pi.call("q", json!({"type": "set_steering_mode", "mode": "all"}));
    pi.call(
        "a",
        json!({"type": "set_auto_compaction", "enabled": false}),
    );
    let model = pi.call(
        "sm",
        json!({"type": "set_model", "provider": "mock", "modelId": "mock-reasoner"}),
    );
    assert_eq!(model["data"]["id"], "mock-reasoner");
    // Pi 1.5.2 carries the current level (off on mock-model) when no default is set.
    assert!(!pi
        .seen
        .iter()
        .any(|v| v["type"] == "thinking_level_changed"));
    let level = pi.call("ct", json!({"type": "cycle_thinking_level"}));
    assert_eq!(level["data"], json!({"level": "minimal"}));
    let state = pi.call("s", json!({"type": "get_state"}));
    assert_eq!(state["data"]["sessionName"], "Work");
    assert_eq!(state["data"]["steeringMode"], "all");
    assert_eq!(state["data"]["autoCompactionEnabled"], false);
    assert_eq!(state["data"]["thinkingLevel"], "minimal");

    // One exchange leaves nothing before the cut: Pi 1.5.2 refuses to compact it (as in its
    // rpc_settings trace); compaction_152 compacts longer sessions.
    let compacted = pi.call("c", json!({"type": "compact"}));
    assert_eq!(compacted["success"], false, "{compacted}");
    assert_eq!(compacted["error"], "Nothing to compact (session too small)");
    assert!(pi
        .seen
        .iter()
        .any(|v| v["type"] == "compaction_start" && v["reason"] == "manual"));
    assert_eq!(pi.finish(), 0);
}

#[test]
fn fork_clone_new_and_switch_replace_the_session() {
    let mut pi = Pi::start(json!([{"text": ["First."]}, {"text": ["Second."]}]));
    for (id, text) in [("p1", "one"), ("p2", "two")] {
        pi.send(json!({"id": id, "type": "prompt", "message": text}));
        pi.wait_type("agent_end");
    }
    let first_file = pi.call("s0", json!({"type": "get_state"}))["data"]["sessionFile"].clone();
    let forks = pi.call("fm", json!({"type": "get_fork_messages"}));
    let entries = forks["data"]["messages"].as_array().unwrap().clone();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[1]["text"], "two");

    let invalid = pi.call("fx", json!({"type": "fork", "entryId": "nope"}));
    assert_eq!(invalid["error"], "Invalid entry ID for forking");
    let fork = pi.call(
        "f",
        json!({"type": "fork", "entryId": entries[1]["entryId"]}),
    );
    assert_eq!(fork["data"], json!({"text": "two", "cancelled": false}));
    let state = pi.call("s1", json!({"type": "get_state"}));
    assert_ne!(state["data"]["sessionFile"], first_file);
    // The system message, the first prompt and its answer (as 1.5.2's rpc_sessions trace).
    assert_eq!(state["data"]["messageCount"], 3);

    let clone = pi.call("cl", json!({"type": "clone"}));
    assert_eq!(clone["data"], json!({"cancelled": false}));
    assert_eq!(
        pi.call("s2", json!({"type": "get_state"}))["data"]["messageCount"],
        3
    );

    let new = pi.call("ns", json!({"type": "new_session"}));
    assert_eq!(new["data"], json!({"cancelled": false}));
    assert_eq!(
        pi.call("s3", json!({"type": "get_state"}))["data"]["messageCount"],
        0
    );

    let switched = pi.call(
        "sw",
        json!({"type": "switch_session", "sessionPath": first_file}),
    );
    assert_eq!(switched["data"], json!({"cancelled": false}));
    let state = pi.call("s4", json!({"type": "get_state"}));
    assert_eq!(state["data"]["sessionFile"], first_file);
    assert_eq!(state["data"]["messageCount"], 5);
    assert_eq!(pi.finish(), 0);
}

/// A `type` that is not a string finds no command in Pi: the answer names it as sent and says
/// it as JavaScript's `String()` does; a line that is not an object has no type at all. The
/// lines are the original's answers, key order and number format included.
#[test]
fn types_that_are_not_strings_are_answered_as_pi_answers_them() {
    let mut pi = Pi::start(json!([]));
    let cases = [
        (
            r#"{"type":7}"#,
            r#"{"type":"response","command":7,"success":false,"error":"Unknown command: 7"}"#,
        ),
        (
            r#"{"type":null}"#,
            r#"{"type":"response","command":null,"success":false,"error":"Unknown command: null"}"#,
        ),
        (
            r#"{"type":true}"#,
            r#"{"type":"response","command":true,"success":false,"error":"Unknown command: true"}"#,
        ),
        (
            r#"{"type":[1,"a",null,[2,3]]}"#,
            r#"{"type":"response","command":[1,"a",null,[2,3]],"success":false,"error":"Unknown command: 1,a,,2,3"}"#,
        ),
        (
            r#"{"type":{"a":1}}"#,
            r#"{"type":"response","command":{"a":1},"success":false,"error":"Unknown command: [object Object]"}"#,
        ),
        (
            r#"{"type":1.5}"#,
            r#"{"type":"response","command":1.5,"success":false,"error":"Unknown command: 1.5"}"#,
        ),
        (
            r#"{"type":1e21}"#,
            r#"{"type":"response","command":1e+21,"success":false,"error":"Unknown command: 1e+21"}"#,
        ),
        (
            "{}",
            r#"{"type":"response","success":false,"error":"Unknown command: undefined"}"#,
        ),
        (
            "[1]",
            r#"{"type":"response","success":false,"error":"Unknown command: undefined"}"#,
        ),
        (
            "5",
            r#"{"type":"response","success":false,"error":"Unknown command: undefined"}"#,
        ),
    ];
    for (line, answer) in cases {
        pi.send_raw(line);
        let response = pi.wait(|v| v["type"] == "response");
        assert_eq!(
            pi_core::json::to_string(&response).unwrap(),
            answer,
            "{line}"
        );
    }
    assert_eq!(pi.finish(), 0);
}
