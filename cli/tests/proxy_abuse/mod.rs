//! `pi proxy` under abuse, end to end: the real binary on 127.0.0.1, raw TCP clients that
//! misbehave. A body over the limit is refused with a 413 before the client has sent it all; an
//! unmatched request with a huge body prints a bounded report; connections that send half a
//! request, nothing, a stalled body, or idle on keep-alive are closed; a request whose
//! recordings are used up is a 404 and makes the replay exit 1, unless `--repeat`.
//!
//! Reads carry a generous timeout only so that a proxy that never answers fails the test
//! instead of hanging it; no test asserts how fast anything was.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use pi_testkit::MockLlm;
use serde_json::{json, Value};

use super::ProxyProcess;

/// How long a read waits before the test calls the proxy hung.
const HANG: Duration = Duration::from_secs(15);

/// The default body limit, 32 MiB.
const DEFAULT_LIMIT: usize = 32 << 20;

impl ProxyProcess {
    fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(&self.addr).unwrap();
        stream.set_read_timeout(Some(HANG)).unwrap();
        stream
    }
}

/// The request body of the one recording [`one_recording`] holds.
fn recorded_body() -> Value {
    json!({"model": "mock-model", "messages": [{"role": "user", "content": "Say hello"}]})
}

/// A folder with one proxy cassette of one exchange: [`recorded_body`] answered 200.
fn one_recording(dir: &Path) {
    let lines = [
        json!({"type": "proxy", "format": 1, "harness": "0.1.0", "upstream": "http://127.0.0.1:1",
            "ignore": [], "redactions": []}),
        json!({"type": "request", "call": 1, "dt": 0, "method": "POST",
            "url": "/v1/chat/completions", "headers": [["content-type", "application/json"]],
            "body": recorded_body()}),
        json!({"type": "response", "call": 1, "dt": 1, "status": 200,
            "headers": [["content-type", "application/json"]]}),
        json!({"type": "chunk", "call": 1, "dt": 1, "text": "{\"answer\":\"hello\"}"}),
        json!({"type": "end", "call": 1, "dt": 1, "end": "complete"}),
    ];
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(dir.join("0001-v1-chat-completions.jsonl"), text).unwrap();
}

/// The head of a POST to the chat completions path, with `framing` (a content-length or
/// transfer-encoding header) and `extra` headers.
fn head(framing: &str, extra: &str) -> String {
    format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n{framing}\r\n{extra}\r\n"
    )
}

/// Reads a whole response from `stream` (to the end of the connection), failing on a hang.
fn read_response(stream: &mut TcpStream) -> String {
    let mut raw = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            // The proxy closed a connection whose request it did not read to the end; what it
            // answered before that is in `raw`.
            Err(e) if e.kind() == ErrorKind::ConnectionReset && !raw.is_empty() => break,
            Err(e) => panic!(
                "no answer ({e}) after {} bytes: {:?}",
                raw.len(),
                String::from_utf8_lossy(&raw)
            ),
        }
    }
    String::from_utf8_lossy(&raw).into_owned()
}

/// POSTs `body` with a content-length on a fresh connection and reads the answer.
fn post(proxy: &ProxyProcess, body: &[u8]) -> String {
    let mut stream = proxy.connect();
    let head = head(
        &format!("content-length: {}", body.len()),
        "connection: close\r\n",
    );
    stream.write_all(head.as_bytes()).unwrap();
    // A body the proxy refuses by its declared length may find the connection closed.
    let _ = stream.write_all(body);
    read_response(&mut stream)
}

/// The JSON body of a whole (not chunked) response.
fn json_body(response: &str) -> Value {
    let (_, body) = response.split_once("\r\n\r\n").unwrap();
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {response}"))
}

/// Sends a body over the limit twice: declared by content-length (of which only 1 MiB is sent,
/// then the client waits), and chunked (more than the limit in chunks, never the last chunk).
/// Both must be answered 413 in the OpenAI error shape.
fn assert_oversized_bodies_are_refused(proxy: &ProxyProcess, limit: usize) {
    let mut declared = proxy.connect();
    let head_ = head(&format!("content-length: {}", 2 * limit), "");
    declared.write_all(head_.as_bytes()).unwrap();
    // A proxy that answers at once may close before this is all written.
    let _ = declared.write_all(&vec![b' '; 1 << 20]);
    let answer = read_response(&mut declared);
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    let error = json_body(&answer);
    assert_eq!(error["error"]["type"], "proxy_body_too_large", "{error}");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!("{} MiB", limit >> 20)),
        "{message}"
    );

    let mut chunked = proxy.connect();
    let writer_stream = chunked.try_clone().unwrap();
    let writer = std::thread::spawn(move || {
        let mut stream = writer_stream;
        stream
            .write_all(head("transfer-encoding: chunked", "").as_bytes())
            .unwrap();
        let chunk = vec![b' '; 64 * 1024];
        let mut sent = 0;
        // A little more than the limit, and then no terminating chunk: the proxy must answer
        // without waiting for an end that never comes. A write fails once the proxy closes.
        while sent <= limit + chunk.len() {
            let framed = [format!("{:x}\r\n", chunk.len()).as_bytes(), &chunk, b"\r\n"].concat();
            if stream.write_all(&framed).is_err() {
                break;
            }
            sent += chunk.len();
        }
    });
    let answer = read_response(&mut chunked);
    writer.join().unwrap();
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert_eq!(json_body(&answer)["error"]["type"], "proxy_body_too_large");
}

#[test]
fn a_body_over_the_limit_is_refused_with_413_before_the_client_has_sent_it() {
    let dir = tempfile::tempdir().unwrap();
    one_recording(dir.path());
    let replay = ProxyProcess::start(&["--replay", dir.path().to_str().unwrap()]);
    assert_oversized_bodies_are_refused(&replay, DEFAULT_LIMIT);
    // The connection of a refused body is closed, and the proxy still serves others.
    let ok = post(&replay, recorded_body().to_string().as_bytes());
    assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
    let (code, stderr) = replay.stop();
    assert_eq!(code, 1, "refused requests had no recording: {stderr}");
    assert!(stderr.contains("over the limit"), "{stderr}");

    // Recording: nothing reaches the upstream or the cassette folder.
    let mock = MockLlm::start(&json!([{"text": ["hi"]}]));
    let cassettes = tempfile::tempdir().unwrap();
    let record = ProxyProcess::start(&[
        "--record",
        cassettes.path().to_str().unwrap(),
        "--upstream",
        &mock.url(""),
        "--max-body-mb",
        "1",
    ]);
    assert_oversized_bodies_are_refused(&record, 1 << 20);
    let (code, stderr) = record.stop();
    assert_eq!(code, 0, "{stderr}");
    assert!(mock.requests().is_empty(), "{:?}", mock.requests());
    assert_eq!(std::fs::read_dir(cassettes.path()).unwrap().count(), 0);
}

#[test]
fn a_body_under_a_lowered_limit_still_gets_its_answer() {
    let dir = tempfile::tempdir().unwrap();
    one_recording(dir.path());
    let replay = ProxyProcess::start(&[
        "--replay",
        dir.path().to_str().unwrap(),
        "--max-body-mb",
        "1",
    ]);
    let mut padded = recorded_body();
    padded["metadata"] = json!({"pad": " ".repeat(900 * 1024)});
    let ok = post(&replay, padded.to_string().as_bytes());
    assert!(ok.starts_with("HTTP/1.1 200"), "an ignored field: {ok}");
    let over = post(&replay, &vec![b' '; (1 << 20) + 1]);
    assert!(over.starts_with("HTTP/1.1 413"), "{over}");
    replay.stop();
}

#[test]
fn an_unmatched_request_with_a_huge_body_prints_a_bounded_report() {
    const BOUND: usize = 64 * 1024;
    let dir = tempfile::tempdir().unwrap();
    one_recording(dir.path());
    let replay = ProxyProcess::start(&["--replay", dir.path().to_str().unwrap()]);
    // One text of many lines (a diff line each) and one of a single 4 MiB line.
    let many_lines = "a line of the conversation\n".repeat(160_000);
    let one_line = "x".repeat(4 << 20);
    for content in [many_lines, one_line] {
        let body =
            json!({"model": "mock-model", "messages": [{"role": "user", "content": content}]});
        let answer = post(&replay, body.to_string().as_bytes());
        assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    }
    let (code, stderr) = replay.stop();
    let text = &stderr;
    assert_eq!(code, 1);
    assert!(
        stderr.len() < BOUND,
        "{} bytes of stderr; it starts: {}",
        stderr.len(),
        &text[..text.len().min(2000)]
    );
    assert!(
        text.matches("no recording of POST /v1/chat/completions")
            .count()
            == 2,
        "{text}"
    );
    assert!(text.contains("nearest recording: "), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with('-') && l.contains("Say hello")),
        "{text}"
    );
    assert!(text.contains("more lines not shown"), "{text}");
    assert!(text.contains("more bytes"), "{text}");
}

/// Whether the proxy closed `stream` (reading what it still sends, such as a 408).
fn closed_by_the_proxy(stream: &mut TcpStream) -> Result<String, String> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return Ok(String::from_utf8_lossy(&raw).into_owned()),
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::ConnectionReset => {
                return Ok(String::from_utf8_lossy(&raw).into_owned())
            }
            Err(e) => return Err(format!("still open ({e})")),
        }
    }
}

#[test]
fn idle_and_half_sent_connections_are_closed_after_the_idle_timeout() {
    const EACH: usize = 8;
    let dir = tempfile::tempdir().unwrap();
    one_recording(dir.path());
    let replay = ProxyProcess::start(&[
        "--replay",
        dir.path().to_str().unwrap(),
        "--idle-timeout",
        "1",
    ]);
    let mut kinds: Vec<(&str, TcpStream)> = Vec::new();
    for _ in 0..EACH {
        kinds.push(("nothing sent", replay.connect()));
        let mut half_line = replay.connect();
        half_line.write_all(b"POST /v1/chat/compl").unwrap();
        kinds.push(("half a request line", half_line));
        let mut half_head = replay.connect();
        half_head
            .write_all(b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-ty")
            .unwrap();
        kinds.push(("half the headers", half_head));
        let mut stalled = replay.connect();
        stalled
            .write_all(head("content-length: 100", "").as_bytes())
            .unwrap();
        stalled.write_all(b"{\"model\":").unwrap();
        kinds.push(("a stalled body", stalled));
    }
    // A whole request on a kept-alive connection, and then silence.
    let mut kept = replay.connect();
    let body = recorded_body().to_string();
    kept.write_all(head(&format!("content-length: {}", body.len()), "").as_bytes())
        .unwrap();
    kept.write_all(body.as_bytes()).unwrap();
    let mut first = vec![0u8; 4096];
    let n = kept.read(&mut first).unwrap();
    assert!(first[..n].starts_with(b"HTTP/1.1 200"));
    kinds.push(("idle on keep-alive", kept));

    for (kind, stream) in &mut kinds {
        match closed_by_the_proxy(stream) {
            Ok(sent) if *kind == "a stalled body" => {
                assert!(sent.starts_with("HTTP/1.1 408"), "{kind}: {sent}")
            }
            Ok(_) => {}
            Err(why) => panic!("{kind}: {why}"),
        }
    }
    let (_, stderr) = replay.stop();
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_request_whose_recordings_are_used_up_is_a_404_and_exit_1_unless_repeat() {
    let dir = tempfile::tempdir().unwrap();
    one_recording(dir.path());
    let body = recorded_body().to_string();

    let replay = ProxyProcess::start(&["--replay", dir.path().to_str().unwrap()]);
    let first = post(&replay, body.as_bytes());
    assert!(first.starts_with("HTTP/1.1 200"), "{first}");
    let again = post(&replay, body.as_bytes());
    assert!(again.starts_with("HTTP/1.1 404"), "{again}");
    let error = json_body(&again);
    assert_eq!(
        error["error"]["type"], "proxy_recordings_used_up",
        "{error}"
    );
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("used up") && message.contains("1 recording"),
        "{message}"
    );
    let (code, stderr) = replay.stop();
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("used up"), "{stderr}");
    assert!(stderr.contains("1 without a recording"), "{stderr}");

    let repeating = ProxyProcess::start(&["--replay", dir.path().to_str().unwrap(), "--repeat"]);
    for _ in 0..3 {
        let answer = post(&repeating, body.as_bytes());
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.contains("{\"answer\":\"hello\"}"), "{answer}");
    }
    let (code, stderr) = repeating.stop();
    assert_eq!(code, 0, "{stderr}");
}
