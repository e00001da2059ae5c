//! Retry and recovery as Pi 1.5.2 does them, through the binary against the kit's mock: a
//! retried attempt is omitted from the context by a `context_edit` entry (announced as
//! `entry_appended`) and stays in the file; error texts are `"<status>: <body>"`; a stream cut
//! without a finish reason is an error and retried; the wait is capped at 60 s; the retryable
//! and never-retryable patterns; a timeout's text; an answer cut at the output limit runs none
//! of its tool calls.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use crate::common::{Env, MockLlm};
use serde_json::{json, Value};

fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn session_lines(env: &Env) -> Vec<Value> {
    let files = env.session_files();
    assert_eq!(files.len(), 1, "{files:?}");
    lines(&std::fs::read_to_string(&files[0]).unwrap())
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

const JSON_RUN: [&str; 6] = [
    "--provider",
    "mock",
    "--model",
    "mock-model",
    "--mode",
    "json",
];

/// Retries after 1 ms, so that a test waits for nothing.
fn quick_retries(env: &Env) {
    env.write_agent(
        "settings.json",
        &json!({"retry": {"enabled": true, "baseDelayMs": 1}}).to_string(),
    );
}

#[test]
fn a_retried_attempt_is_omitted_by_a_context_edit_and_kept_in_the_file() {
    let mock = MockLlm::start(&json!([
        {"status": 500},
        {"status": 429, "error_body": {"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}},
        {"text": ["Recovered."]}
    ]));
    let env = Env::new(&mock);
    quick_retries(&env);
    let out = env.run(&[&JSON_RUN[..], &["-p", "Hello"]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = lines(&out.stdout);

    // The texts are "<status>: <the body's error object as JSON>".
    let retries = of_type(&events, "auto_retry_start");
    let texts: Vec<&str> = retries
        .iter()
        .map(|e| e["errorMessage"].as_str().unwrap())
        .collect();
    assert_eq!(
        texts,
        [
            r#"500: {"message":"mock error 500","type":"server_error","code":null}"#,
            r#"429: {"message":"Rate limit reached","type":"rate_limit_error"}"#,
        ]
    );

    // Each failed attempt gets one context_edit, written right after it and announced right
    // after its auto_retry_start as it stands in the file.
    let file = session_lines(&env);
    let kinds: Vec<&str> = file.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "session",
            "model_change",
            "thinking_level_change",
            "message",
            "message",
            "message",
            "context_edit",
            "message",
            "context_edit",
            "message"
        ]
    );
    let appended = of_type(&events, "entry_appended");
    assert_eq!(appended.len(), 2, "{}", out.stdout);
    for (i, at) in [5usize, 7].into_iter().enumerate() {
        let (failed, edit) = (&file[at], &file[at + 1]);
        assert_eq!(failed["message"]["stopReason"], "error");
        assert_eq!(
            edit.as_object().unwrap().keys().collect::<Vec<_>>(),
            [
                "type",
                "id",
                "parentId",
                "timestamp",
                "targetId",
                "replacement"
            ]
        );
        assert_eq!(edit["targetId"], failed["id"]);
        assert_eq!(edit["parentId"], failed["id"]);
        assert_eq!(edit["replacement"], Value::Null);
        assert_eq!(appended[i]["entry"], *edit);
    }
    let order: Vec<&str> = events
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .filter(|t| matches!(*t, "auto_retry_start" | "entry_appended" | "agent_start"))
        .collect();
    assert_eq!(
        order,
        [
            "agent_start",
            "auto_retry_start",
            "entry_appended",
            "agent_start",
            "auto_retry_start",
            "entry_appended",
            "agent_start"
        ]
    );

    // Opened again, the context leaves the omitted attempts out, while the statistics still
    // count every assistant message of the file.
    let mut rpc = Rpc::start(&env, &["-c"]);
    let state = rpc.call(json!({"id": "s", "type": "get_state"}));
    assert_eq!(state["data"]["messageCount"], 3, "{state}");
    let stats = rpc.call(json!({"id": "t", "type": "get_session_stats"}));
    assert_eq!(stats["data"]["assistantMessages"], 3, "{stats}");
    assert_eq!(stats["data"]["totalMessages"], 5, "{stats}");
    rpc.close();
}

#[test]
fn a_stream_cut_without_a_finish_reason_is_an_error_and_retried() {
    let chunk = |delta: Value| {
        format!(
            "data: {}\n\n",
            json!({"id": "chatcmpl-cut", "object": "chat.completion.chunk", "created": 1,
                   "model": "mock-model",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
        )
    };
    let mock = MockLlm::start(&json!([
        {"raw_sse": [chunk(json!({"role": "assistant", "content": ""})),
                     chunk(json!({"content": "Partial answer "})), "data: [DONE]\n\n"]},
        {"raw_sse": [chunk(json!({"role": "assistant", "content": ""})),
                     chunk(json!({"content": "Cut "}))]},
        {"text": ["Complete answer."]}
    ]));
    let env = Env::new(&mock);
    quick_retries(&env);
    let out = env.run(&[&JSON_RUN[..], &["-p", "Hello"]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let events = lines(&out.stdout);
    let ends: Vec<(&Value, &Value, &Value)> = of_type(&events, "message_end")
        .into_iter()
        .filter(|e| e["message"]["role"] == "assistant")
        .map(|e| {
            let m = &e["message"];
            (
                &m["stopReason"],
                &m["errorMessage"],
                &m["content"][0]["text"],
            )
        })
        .collect();
    let cut = json!("Stream ended without finish_reason");
    assert_eq!(
        ends,
        [
            (&json!("error"), &cut, &json!("Partial answer ")),
            (&json!("error"), &cut, &json!("Cut ")),
            (&json!("stop"), &Value::Null, &json!("Complete answer."))
        ]
    );
    assert_eq!(of_type(&events, "entry_appended").len(), 2);
    assert_eq!(mock.requests().len(), 3);
}

#[test]
fn failures_are_retried_by_1_5_2_s_patterns() {
    // A 520 (Cloudflare) is retried; an exhausted quota is not, although it is a 429.
    let mock = MockLlm::start(&json!([
        {"status": 520, "error_body": {"error": {"message": "web server returned an unknown error", "type": "server_error"}}},
        {"text": ["After the 520."]},
        {"status": 429, "error_body": {"error": {"message": "You exceeded your current quota", "type": "insufficient_quota"}}},
        {"text": ["Not reached."]}
    ]));
    let env = Env::new(&mock);
    quick_retries(&env);
    let out = env.run(&[&JSON_RUN[..], &["-p", "One"]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(of_type(&lines(&out.stdout), "auto_retry_start").len(), 1);
    let out = env.run(&[&JSON_RUN[..], &["-p", "Two"]].concat());
    let events = lines(&out.stdout);
    assert!(
        of_type(&events, "auto_retry_start").is_empty(),
        "{}",
        out.stdout
    );
    assert_eq!(mock.requests().len(), 3);
}

#[test]
fn the_wait_before_a_retry_is_capped_at_60_seconds() {
    let mock = MockLlm::start(&json!([{"status": 500}, {"text": ["Not reached."]}]));
    let env = Env::new(&mock);
    env.write_agent(
        "settings.json",
        &json!({"retry": {"enabled": true, "baseDelayMs": 100_000}}).to_string(),
    );
    let mut rpc = Rpc::start(&env, &[]);
    rpc.call(json!({"id": "p", "type": "prompt", "message": "Hello"}));
    let start = rpc.wait(|e| e["type"] == "auto_retry_start");
    assert_eq!(start["delayMs"], 60_000, "{start}");
    rpc.send(json!({"id": "a", "type": "abort_retry"}));
    let end = rpc.wait(|e| e["type"] == "auto_retry_end");
    assert_eq!(end["finalError"], "Retry cancelled", "{end}");
    rpc.close();
    assert_eq!(mock.requests().len(), 1);
}

#[test]
fn a_timed_out_request_says_the_operation_was_aborted() {
    let mock = MockLlm::start(&json!([{"delay_ms": 1500, "text": ["Too late."]}]));
    let env = Env::new(&mock);
    env.write_agent(
        "settings.json",
        &json!({"retry": {"enabled": false, "provider": {"timeoutMs": 200}}}).to_string(),
    );
    let out = env.run(&[&JSON_RUN[..], &["-p", "Slow"]].concat());
    let events = lines(&out.stdout);
    let end = of_type(&events, "message_end")
        .into_iter()
        .rfind(|e| e["message"]["role"] == "assistant")
        .unwrap();
    assert_eq!(
        end["message"]["errorMessage"],
        "Request timed out.: This operation was aborted (20)"
    );
}

#[test]
fn an_answer_cut_at_the_output_limit_runs_none_of_its_tool_calls() {
    let mock = MockLlm::start(&json!([
        {"text": ["Writing files"],
         "tool_calls": [
            {"id": "call_len1", "name": "write", "arguments": {"path": "one.txt", "content": "one"}},
            {"id": "call_len2", "name": "bash", "arguments": {"command": "echo ran > ran.txt"}}
         ],
         "finish_reason": "length"},
        {"text": ["Done."]}
    ]));
    let env = Env::new(&mock);
    let out = env.run(&[&JSON_RUN[..], &["-p", "Write"]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!env.cwd().join("one.txt").exists());
    assert!(!env.cwd().join("ran.txt").exists());
    let events = lines(&out.stdout);
    let results: Vec<&Value> = of_type(&events, "tool_execution_end");
    assert_eq!(results.len(), 2, "{}", out.stdout);
    for (result, name) in results.iter().zip(["write", "bash"]) {
        assert_eq!(result["isError"], true);
        assert_eq!(
            result["result"]["content"][0]["text"],
            format!(
                "Tool call \"{name}\" was not executed: the response hit the output token limit, \
                 so its arguments may be truncated. Re-issue the tool call with complete arguments."
            )
        );
    }
    // Both error results reach the next request, and the loop ends on its answer.
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    let sent: Vec<&Value> = requests[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(sent.len(), 2, "{}", requests[1]);
    assert!(of_type(&events, "entry_appended").is_empty());
}

#[test]
fn a_usage_entry_is_kept_and_counted_but_never_sent() {
    let mock = MockLlm::start(&json!([{"text": ["One."]}, {"text": ["Two."]}]));
    let env = Env::new(&mock);
    let out = env.run(&[&JSON_RUN[..], &["-p", "First"]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    // A cache-warming charge, as Pi 1.5 appends it.
    let file = env.session_files().remove(0);
    let before = std::fs::read_to_string(&file).unwrap();
    let last = lines(&before).last().unwrap()["id"].clone();
    let usage = json!({
        "type": "usage", "id": "cafe0001", "parentId": last,
        "timestamp": "2026-11-20T10:00:00.000Z", "kind": "cache_warm",
        "provider": "mock", "model": "mock-model",
        "usage": {"input": 100, "output": 0, "cacheRead": 900, "cacheWrite": 0,
                  "cacheWrite1h": 0, "totalTokens": 1000,
                  "cost": {"input": 0.25, "output": 0, "cacheRead": 0.5, "cacheWrite": 0,
                           "total": 0.75}},
        "note": "kept warm"
    });
    let line = format!("{}\n", serde_json::to_string(&usage).unwrap());
    std::fs::write(&file, format!("{before}{line}")).unwrap();

    let mut rpc = Rpc::start(&env, &["-c"]);
    let stats = rpc.call(json!({"id": "t", "type": "get_session_stats"}));
    assert_eq!(stats["data"]["tokens"]["input"], 110, "{stats}");
    assert_eq!(stats["data"]["tokens"]["cacheRead"], 900, "{stats}");
    assert_eq!(stats["data"]["totalMessages"], 3, "{stats}");
    let state = rpc.call(json!({"id": "s", "type": "get_state"}));
    assert_eq!(state["data"]["messageCount"], 3, "{state}");
    rpc.call(json!({"id": "p", "type": "prompt", "message": "Second"}));
    rpc.wait(|e| e["type"] == "agent_end");
    rpc.close();

    let after = std::fs::read_to_string(&file).unwrap();
    assert!(after.starts_with(&format!("{before}{line}")), "{after}");
    let next = lines(&after[before.len() + line.len()..]);
    assert_eq!(next[0]["parentId"], "cafe0001");
    let sent = &mock.requests()[1]["messages"];
    let roles: Vec<&str> = sent
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "user"], "{sent}");
    assert!(!sent.to_string().contains("kept warm"));
}

/// `pi --mode rpc` in `env`, read line by line on a thread.
struct Rpc {
    child: std::process::Child,
    lines: mpsc::Receiver<Value>,
}

impl Rpc {
    fn start(env: &Env, extra: &[&str]) -> Rpc {
        let mut command = env.rpc_command();
        command
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(value) = serde_json::from_str::<Value>(&line) {
                    if tx.send(value).is_err() {
                        break;
                    }
                }
            }
        });
        Rpc { child, lines: rx }
    }

    fn wait(&mut self, wanted: impl Fn(&Value) -> bool) -> Value {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(30))
                .expect("pi answered within 30 s");
            if wanted(&line) {
                return line;
            }
        }
    }

    fn send(&mut self, command: Value) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{command}").unwrap();
        stdin.flush().unwrap();
    }

    fn call(&mut self, command: Value) -> Value {
        let id = command["id"].clone();
        self.send(command);
        self.wait(|l| l["type"] == "response" && l["id"] == id)
    }

    fn close(mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}
