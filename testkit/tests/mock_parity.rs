//! The Rust mock (`pi_testkit::mock`) against the kit's Python mock (`conformance/mock/mock_llm.py`,
//! which the original Pi runs against): the same scripts and requests, sent over raw TCP so nothing
//! normalises the bytes, must get the same status lines, headers (but `Date` and `Server`) and
//! bodies byte for byte, and leave the same request logs (but timestamps and durations). Only the
//! OpenAI chunks' `created` and Responses' `created_at` (the current second) are masked. Skipped when python3 is absent.

#![allow(clippy::unwrap_used, clippy::panic)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use pi_testkit::mock::{Script, Server};
use serde_json::{json, Value};

/// One request's bytes, Host fixed so the two mocks' logs agree.
fn post(path: &str, body: &Value, close: bool) -> Vec<u8> {
    post_raw(path, body.to_string().as_bytes(), close)
}

fn post_raw(path: &str, body: &[u8], close: bool) -> Vec<u8> {
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: mock\r\nContent-Type: application/json\r\nAuthorization: Bearer k\r\nContent-Length: {}\r\n",
        body.len()
    );
    if close {
        request.push_str("Connection: close\r\n");
    }
    request.push_str("\r\n");
    let mut bytes = request.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

fn get(path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: mock\r\nX-Probe: 1\r\n\r\n").into_bytes()
}

const OPENAI: &str = "/v1/chat/completions";
const ANTHROPIC: &str = "/v1/messages";
const RESPONSES: &str = "/v1/responses";

/// A script and the connections made to it, each a list of requests sent in one go; the last
/// request of each connection makes the server close it, so the reply is read to its end.
struct Case {
    name: &'static str,
    script: Value,
    connections: Vec<Vec<Vec<u8>>>,
}

fn cases() -> Vec<Case> {
    let openai_usage = json!({"model": "mock-model", "stream": true, "stream_options": {"include_usage": true},
                              "messages": [{"role": "user", "content": "héllo ☃"}]});
    let openai = json!({"model": "mock-model", "stream": true, "messages": []});
    let anthropic =
        json!({"model": "mock-claude", "stream": true, "max_tokens": 100, "messages": []});
    vec![
        Case {
            name: "openai text and reasoning, with and without include_usage, paced",
            script: json!([
                {"reasoning": ["Let me ", "think."], "text": "Plain ☃ text 😀 \"quoted\"\n", "usage": {"input": 21, "output": 8}},
                {"text": ["one ", "two"], "finish_reason": "length", "delay_ms": 10, "chunk_delay_ms": 5, "hang_ms": 20, "hang_until_file": "released"},
            ]),
            connections: vec![
                vec![post(OPENAI, &openai_usage, false)],
                vec![post("/v1/chat/completions?api-version=1", &openai, false)],
            ],
        },
        Case {
            name: "openai tool calls, chunked and split in two",
            script: json!([{"tool_calls": [
                {"id": "call_1", "name": "read", "arguments": {"path": "a.txt"}, "chunks": ["{\"pa", "th\": \"a", ".txt\"}"]},
                {"name": "write", "arguments": {"path": "é.txt", "content": "x\ny", "n": 1.5}},
                {"id": "call_3", "name": "ls", "arguments": "{}"},
            ]}]),
            connections: vec![vec![post(OPENAI, &openai_usage, false)]],
        },
        Case {
            name: "anthropic reasoning, text and tool calls",
            script: json!([
                {"reasoning": ["Hmm"], "text": ["Reading ", "it."],
                 "tool_calls": [{"id": "toolu_1", "name": "read", "arguments": {"path": "a.txt"}, "chunks": ["{\"path\": ", "\"a.txt\"}"]},
                                {"name": "bash", "arguments": {"command": "ls"}}],
                 "usage": {"input": 30, "output": 12}},
                {"text": "done", "finish_reason": "length"},
                {"text": [], "finish_reason": "content_filter"},
            ]),
            connections: vec![
                vec![post(ANTHROPIC, &anthropic, false)],
                vec![post(ANTHROPIC, &json!({"stream": true}), false)],
                vec![post(ANTHROPIC, &anthropic, false)],
            ],
        },
        Case {
            name: "error statuses with headers and bodies, kept alive",
            script: json!([
                {"status": 429, "headers": {"retry-after": "0", "x-count": 3, "x-flag": true},
                 "error_body": {"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}},
                {"status": 500},
                {"status": "529"},
                {"status": 503, "error_body": null, "headers": {"connection": "close"}},
            ]),
            connections: vec![
                vec![
                    post(OPENAI, &openai, false),
                    post(OPENAI, &openai, false),
                    post(ANTHROPIC, &anthropic, true),
                ],
                vec![post(OPENAI, &openai, false)],
            ],
        },
        Case {
            name: "drop_after, raw_sse and the exhausted script",
            script: json!([
                {"text": ["one ", "two ", "three"], "drop_after": 2},
                {"text": ["x"], "drop_after": 0},
                {"raw_sse": ["data: not json\n\n", "event: odd\n", "garbage ☃"], "headers": {"x-raw": "yes"}},
            ]),
            connections: vec![
                vec![post(OPENAI, &openai, false)],
                vec![post(ANTHROPIC, &anthropic, false)],
                vec![post(OPENAI, &openai, false)],
                vec![post(OPENAI, &openai_usage, false)],
                vec![post(ANTHROPIC, &anthropic, false)],
            ],
        },
        Case {
            name: "responses: reasoning, text, function and custom calls, no deltas, incomplete",
            script: json!([
                {"reasoning": ["Let me ", "think."], "text": ["Plain ☃ ", "text 😀 \"quoted\"\n"],
                 "tool_calls": [
                    {"id": "call_1", "name": "read", "arguments": {"path": "a.txt"}, "chunks": ["{\"pa", "th\": \"a.txt\"}"]},
                    {"name": "codemode", "input": "return 1;\n\u{2028}é"},
                    {"id": "call_3", "name": "codemode", "input": "x", "arguments": {"ignored": true}, "chunks": []},
                    {"name": "write", "arguments": "{}", "chunks": []}],
                 "usage": {"input": 21, "output": 8}},
                {"text": "cut", "finish_reason": "length", "hang_ms": 5},
                {"tool_calls": [{"name": "codemode", "input": "streamed as arguments elsewhere"}]},
            ]),
            connections: vec![
                vec![post(
                    RESPONSES,
                    &json!({"model": "mock-gpt", "stream": true, "input": []}),
                    false,
                )],
                vec![post(
                    "/v1/responses?api-version=1",
                    &json!({"stream": true}),
                    false,
                )],
                vec![post(OPENAI, &openai, false)],
            ],
        },
        Case {
            name: "unknown paths, GET, and bodies that are not JSON objects",
            script: json!([{"text": "a"}, {"text": "b"}]),
            connections: vec![
                vec![
                    get("/v1/models"),
                    post("/v1/embeddings", &openai, false),
                    post(OPENAI, &openai, false),
                ],
                vec![post_raw(OPENAI, b"not json {", false)],
                vec![post_raw(ANTHROPIC, b"", false)],
            ],
        },
    ]
}

/// A response as served: status line, headers in order, body.
#[derive(Debug, PartialEq)]
struct Response {
    status: String,
    headers: Vec<(String, String)>,
    body: String,
}

/// Splits what one connection received into responses: a Content-Length body, or the rest.
fn responses(mut bytes: &[u8]) -> Vec<Response> {
    let mut out = Vec::new();
    while !bytes.is_empty() {
        let end = bytes
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("no end of head in {:?}", String::from_utf8_lossy(bytes)));
        let head = String::from_utf8(bytes[..end].to_vec()).unwrap();
        bytes = &bytes[end + 4..];
        let mut lines = head.split("\r\n");
        let status = lines.next().unwrap().to_string();
        let mut headers = Vec::new();
        let mut length = None;
        for line in lines {
            let (name, value) = line.split_once(": ").unwrap();
            if name.eq_ignore_ascii_case("content-length") {
                length = Some(value.parse::<usize>().unwrap());
            }
            if !name.eq_ignore_ascii_case("date") && !name.eq_ignore_ascii_case("server") {
                headers.push((name.to_string(), value.to_string()));
            }
        }
        let length = length.unwrap_or(bytes.len());
        let body = String::from_utf8(bytes[..length].to_vec()).unwrap();
        bytes = &bytes[length..];
        out.push(Response {
            status,
            headers,
            body: mask(&mask(&body, "created"), "created_at"),
        });
    }
    out
}

/// `text` with the number after each `"key": ` replaced by 0: `created` in OpenAI chunks and
/// `created_at` in Responses events (the current second) are all that is masked in replies; `ts` and `duration_ms` in the logs.
fn mask(text: &str, key: &str) -> String {
    let key = format!("\"{key}\": ");
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(&key) {
        let (before, after) = rest.split_at(at + key.len());
        out.push_str(before);
        out.push('0');
        rest = after.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    out.push_str(rest);
    out
}

/// Sends each connection's requests and reads until the server closes it.
fn exchange(port: u16, case: &Case) -> Vec<Vec<Response>> {
    case.connections
        .iter()
        .map(|requests| {
            let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(20)))
                .unwrap();
            for request in requests {
                stream.write_all(request).unwrap();
            }
            let mut bytes = Vec::new();
            stream
                .read_to_end(&mut bytes)
                .unwrap_or_else(|e| panic!("{}: reading the reply: {e}", case.name));
            responses(&bytes)
        })
        .collect()
}

/// The log's lines as written, but for what differs from run to run (timestamps, durations).
fn log_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|line| mask(&mask(line, "ts"), "duration_ms"))
        .collect()
}

/// The Python mock as a child process, killed when dropped.
struct PythonMock(Child);

impl Drop for PythonMock {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start_python(script: &Path, log: &Path, dir: &Path) -> (PythonMock, u16) {
    let port_file = dir.join("port");
    let child = Command::new("python3")
        .arg(pi_testkit::kit_dir().join("mock/mock_llm.py"))
        .arg("--script")
        .arg(script)
        .arg("--log")
        .arg(log)
        .arg("--port-file")
        .arg(&port_file)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mock = PythonMock(child);
    for _ in 0..400 {
        if let Some(port) = std::fs::read_to_string(&port_file)
            .ok()
            .and_then(|p| p.trim().parse().ok())
        {
            return (mock, port);
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("the Python mock did not start");
}

#[test]
fn rust_mock_serves_the_python_mocks_bytes() {
    if Command::new("python3")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_err()
    {
        pi_testkit::skip("python3 is absent: the Rust mock is not compared with the Python one");
        return;
    }
    for case in cases() {
        let dir = tempfile::tempdir().unwrap();
        let script_path = dir.path().join("script.json");
        std::fs::write(&script_path, case.script.to_string()).unwrap();
        // A step holding its reply open until this file exists finds it there already.
        std::fs::write(dir.path().join("released"), "").unwrap();

        let (python, python_port) =
            start_python(&script_path, &dir.path().join("py.jsonl"), dir.path());
        let python_replies = exchange(python_port, &case);
        drop(python);

        let rust = Server::start(
            Script::parse(&case.script).unwrap(),
            &dir.path().join("rs.jsonl"),
        )
        .unwrap();
        let rust_replies = exchange(rust.port(), &case);
        drop(rust);

        assert_eq!(rust_replies.len(), python_replies.len(), "{}", case.name);
        for (i, (ours, theirs)) in rust_replies.iter().zip(&python_replies).enumerate() {
            assert!(
                !theirs.is_empty(),
                "{}: connection {i} got no reply from the Python mock",
                case.name
            );
            assert_eq!(ours, theirs, "{}: connection {i}", case.name);
        }
        let (ours, theirs) = (
            log_lines(&dir.path().join("rs.jsonl")),
            log_lines(&dir.path().join("py.jsonl")),
        );
        assert!(
            !theirs.is_empty(),
            "{}: the Python mock logged nothing",
            case.name
        );
        assert_eq!(ours, theirs, "{}: request logs", case.name);
    }
}
