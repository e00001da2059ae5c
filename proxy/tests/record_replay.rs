//! The proxy over real HTTP on 127.0.0.1, in front of the kit's mock LLM: what reaches the
//! cassette, what a replay sends back (bytes, chunk boundaries, order of repeated requests,
//! pace), and what an unreachable upstream becomes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use pi_cassette_format::ProxyCassette;
use pi_proxy::{IgnoreRule, Proxy, RecordingProxy, ReplayingProxy, Server};
use pi_testkit::MockLlm;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::oneshot;

/// A proxy served on a free port until the sender is dropped or fired.
async fn serve(proxy: Proxy) -> (SocketAddr, oneshot::Sender<()>) {
    let server = Server::bind("127.0.0.1:0", proxy).await.unwrap();
    let addr = server.local_addr().unwrap();
    let (stop, stopped) = oneshot::channel::<()>();
    tokio::spawn(server.run_until(async move {
        let _ = stopped.await;
    }));
    (addr, stop)
}

fn recording(dir: &Path, upstream: &str) -> Proxy {
    Proxy::Record(RecordingProxy::new(dir, upstream, IgnoreRule::default()).unwrap())
}

fn replaying(dir: &Path, timing: bool) -> Proxy {
    Proxy::Replay(ReplayingProxy::load(dir, IgnoreRule::default(), timing).unwrap())
}

fn repeating(dir: &Path) -> Proxy {
    Proxy::Replay(
        ReplayingProxy::load(dir, IgnoreRule::default(), false)
            .unwrap()
            .repeating(true),
    )
}

fn chat_body(user: &str) -> Value {
    json!({"model": "mock-model", "messages": [{"role": "user", "content": user}], "stream": true})
}

/// A response read off the wire: status line and headers, and the body's chunks as the
/// chunked encoding cut them.
struct Wire {
    head: String,
    chunks: Vec<Vec<u8>>,
}

/// POSTs `body` to `path` over a fresh connection and reads the raw response.
async fn post_raw(addr: SocketAddr, path: &str, body: &Value) -> Wire {
    let body = body.to_string();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.unwrap();
    let split = raw.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut rest = &raw[split + 4..];
    let mut chunks = Vec::new();
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        loop {
            let end = rest.windows(2).position(|w| w == b"\r\n").unwrap();
            let size =
                usize::from_str_radix(std::str::from_utf8(&rest[..end]).unwrap(), 16).unwrap();
            if size == 0 {
                break;
            }
            chunks.push(rest[end + 2..end + 2 + size].to_vec());
            rest = &rest[end + 2 + size + 2..];
        }
    } else {
        chunks.push(rest.to_vec());
    }
    Wire { head, chunks }
}

fn only_cassette(dir: &Path) -> ProxyCassette {
    let files: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
    assert_eq!(files.len(), 1, "{files:?}");
    ProxyCassette::load(&files[0].path()).unwrap()
}

#[tokio::test]
async fn credentials_in_headers_and_query_never_reach_the_cassette_and_replay_matches_without_them()
{
    let mock = MockLlm::start(&json!([{"text": ["hi"]}]));
    let dir = tempfile::tempdir().unwrap();
    let (addr, _stop) = serve(recording(dir.path(), &mock.url(""))).await;
    let client = reqwest::Client::new();
    let secrets = [
        "bearer-secret-0123456789",
        "header-secret-0123456789",
        "query-secret-0123456789",
    ];
    let sent = client
        .post(format!("http://{addr}/v1/chat/completions?key={}&beta=1", secrets[2]))
        .header("authorization", format!("Bearer {}", secrets[0]))
        .header("x-api-key", secrets[1])
        .header("content-type", "application/json")
        .body(json!({"model": "mock-model", "messages": [{"role": "user", "content": "hi"}], "stream": true, "metadata": {"user_id": "u-1"}}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(sent.status(), 200);
    let recorded = sent.text().await.unwrap();
    assert!(recorded.contains("[DONE]"));
    let file = std::fs::read_dir(dir.path())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let text = std::fs::read_to_string(&file).unwrap();
    for secret in secrets {
        assert!(
            !text.contains(secret),
            "{secret} reached the cassette:\n{text}"
        );
    }
    assert!(
        text.contains("\"url\":\"/v1/chat/completions?key=<<secret-"),
        "{text}"
    );
    // The mock saw what the client sent.
    let log = std::fs::read_to_string(&mock.log).unwrap();
    assert!(log.contains(secrets[0]) && log.contains(secrets[1]));

    drop(mock);
    let (addr, _stop) = serve(replaying(dir.path(), false)).await;
    let replayed = client
        .post(format!("http://{addr}/v1/chat/completions?beta=1&key=another-key"))
        .header("authorization", "Bearer another-key")
        .header("content-type", "application/json")
        .body(json!({"stream": true, "messages": [{"content": "hi", "role": "user"}], "model": "mock-model", "metadata": {"user_id": "u-2"}}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(replayed.status(), 200);
    assert_eq!(replayed.text().await.unwrap(), recorded);
}

#[tokio::test]
async fn replay_keeps_chunk_boundaries_and_serves_repeated_requests_in_recorded_order_then_404_unless_repeating(
) {
    let mock = MockLlm::start(&json!([
        {"text": ["first ", "answer"], "chunk_delay_ms": 5},
        {"text": ["second ", "answer"], "chunk_delay_ms": 5}
    ]));
    let dir = tempfile::tempdir().unwrap();
    let (addr, _stop) = serve(recording(dir.path(), &mock.url(""))).await;
    let body = chat_body("again");
    let first = post_raw(addr, "/v1/chat/completions", &body).await;
    let second = post_raw(addr, "/v1/chat/completions", &body).await;
    assert!(first.head.starts_with("HTTP/1.1 200"), "{}", first.head);
    let cassette = only_cassette(dir.path());
    assert_eq!(
        cassette.exchanges.len(),
        2,
        "a repeated request continues its conversation"
    );
    for (exchange, wire) in cassette.exchanges.iter().zip([&first, &second]) {
        let recorded: Vec<Vec<u8>> = exchange.chunks.iter().map(|(_, c)| c.to_vec()).collect();
        assert_eq!(recorded.concat(), wire.chunks.concat());
        assert!(recorded.len() > 2, "{recorded:?}");
    }
    drop(mock);

    // Once used up, a request is unmatched; repeating, the first recording comes again.
    let (addr, _stop) = serve(replaying(dir.path(), false)).await;
    let mut served = Vec::new();
    for _ in 0..2 {
        served.push(post_raw(addr, "/v1/chat/completions", &body).await);
    }
    let used_up = post_raw(addr, "/v1/chat/completions", &body).await;
    assert!(used_up.head.starts_with("HTTP/1.1 404"), "{}", used_up.head);
    let (addr, _stop) = serve(repeating(dir.path())).await;
    for _ in 0..3 {
        served.push(post_raw(addr, "/v1/chat/completions", &body).await);
    }
    for (wire, exchange) in served.iter().zip([0, 1, 0, 1, 0]) {
        let recorded: Vec<Vec<u8>> = cassette.exchanges[exchange]
            .chunks
            .iter()
            .map(|(_, c)| c.to_vec())
            .collect();
        assert_eq!(
            wire.chunks, recorded,
            "the recorded chunks, cut where they were cut"
        );
        assert!(wire.head.contains("text/event-stream"), "{}", wire.head);
    }
}

#[tokio::test]
async fn with_timing_a_replay_keeps_the_recorded_pace() {
    let mock = MockLlm::start(&json!([
        {"delay_ms": 60, "text": ["a", "b", "c", "d"], "chunk_delay_ms": 40}
    ]));
    let dir = tempfile::tempdir().unwrap();
    let (addr, _stop) = serve(recording(dir.path(), &mock.url(""))).await;
    let body = chat_body("slowly");
    post_raw(addr, "/v1/chat/completions", &body).await;
    let cassette = only_cassette(dir.path());
    let last = cassette.exchanges[0].chunks.last().unwrap().0;
    assert!(last >= 180, "recorded over {last} ms");
    let headers_at = cassette.exchanges[0].response_dt;
    drop(mock);

    let (fast, _stop) = serve(replaying(dir.path(), false)).await;
    let started = Instant::now();
    post_raw(fast, "/v1/chat/completions", &body).await;
    let fast_took = started.elapsed();
    let (paced, _stop) = serve(replaying(dir.path(), true)).await;
    let started = Instant::now();
    post_raw(paced, "/v1/chat/completions", &body).await;
    let paced_took = started.elapsed();
    assert!(
        paced_took >= Duration::from_millis(last),
        "{paced_took:?} < {last} ms"
    );
    assert!(fast_took < Duration::from_millis(last / 2), "{fast_took:?}");
    // The headers too: a client waits as long for the status as it did while recording.
    assert!(headers_at >= 60, "the mock's delay: {headers_at} ms");
    let (paced, _stop) = serve(replaying(dir.path(), true)).await;
    let started = Instant::now();
    let response = reqwest::Client::new()
        .post(format!("http://{paced}/v1/chat/completions"))
        .header("content-type", "application/json")
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(
        started.elapsed() >= Duration::from_millis(headers_at),
        "{headers_at} ms"
    );
}

#[tokio::test]
async fn an_unreachable_upstream_is_a_502_the_replay_gives_again() {
    // A port nothing listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let (addr, _stop) = serve(recording(dir.path(), &format!("http://127.0.0.1:{port}"))).await;
    let body = json!({"model": "claude", "messages": [{"role": "user", "content": "hi"}]});
    let recorded = post_raw(addr, "/v1/messages", &body).await;
    assert!(
        recorded.head.starts_with("HTTP/1.1 502"),
        "{}",
        recorded.head
    );
    let error: Value = serde_json::from_slice(&recorded.chunks.concat()).unwrap();
    assert_eq!(error["type"], "error", "Anthropic's error shape: {error}");
    assert_eq!(error["error"]["type"], "proxy_upstream_error");

    let (addr, _stop) = serve(replaying(dir.path(), false)).await;
    let replayed = post_raw(addr, "/v1/messages", &body).await;
    assert!(
        replayed.head.starts_with("HTTP/1.1 502"),
        "{}",
        replayed.head
    );
    assert_eq!(replayed.chunks.concat(), recorded.chunks.concat());
}

#[tokio::test]
async fn a_folder_without_cassettes_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let error = ReplayingProxy::load(dir.path(), IgnoreRule::default(), false).unwrap_err();
    assert!(error.to_string().contains("no proxy cassettes"), "{error}");
}
