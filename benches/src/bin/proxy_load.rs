//! `pi proxy --replay` under load: concurrent streaming clients on 127.0.0.1 against the proxy
//! replaying a folder of cassettes, and against a plain HTTP server sending the same bytes in
//! the same chunks from memory (no parsing, no matching: the ceiling). Prints requests per
//! second, time to first byte (p50, p99), errors and memory for each. The two alternate for
//! `--rounds` rounds of `--seconds` each, so that a busy machine slows both alike.
//!
//! ```text
//! cargo run --release -p pi-benches --bin proxy_load -- [--clients 64] [--seconds 3]
//!     [--rounds 4] [--chunks 100] [--body-kb 16] [--pi PATH]
//! ```
//!
//! With `--pi PATH` the proxy is that binary's `pi proxy --replay` in its own process (its
//! peak resident memory is reported); without it, the proxy runs in this process.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::VecDeque;
use std::convert::Infallible;
use std::io::BufRead;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::Response;
use hyper_util::rt::TokioIo;
use pi_cassettes::format::{Line, RecordedEnd};
use pi_cassettes::write::RequestParts;
use pi_cassettes::{ProxyHeader, Recorder, PROXY_FORMAT_VERSION};
use pi_proxy::body::ProxyBody;
use pi_proxy::{IgnoreRule, Proxy, ReplayingProxy, Server};
use serde_json::{json, Value};

struct Options {
    clients: usize,
    seconds: u64,
    rounds: usize,
    chunks: usize,
    body_kb: usize,
    pi: Option<String>,
}

fn options() -> Options {
    let mut o = Options {
        clients: 64,
        seconds: 3,
        rounds: 4,
        chunks: 100,
        body_kb: 16,
        pi: None,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let value = pair.get(1).cloned().unwrap_or_default();
        let number = || value.parse::<usize>().expect("a number");
        match pair[0].as_str() {
            "--clients" => o.clients = number(),
            "--seconds" => o.seconds = number() as u64,
            "--rounds" => o.rounds = number(),
            "--chunks" => o.chunks = number(),
            "--body-kb" => o.body_kb = number(),
            "--pi" => o.pi = Some(value),
            other => panic!("unknown flag {other}"),
        }
    }
    o
}

/// Client `i`'s request body: a conversation of about `kb` KiB.
fn request_body(i: usize, kb: usize) -> Value {
    let filler = "x".repeat(1024);
    let mut messages = vec![json!({"role": "system", "content": "You are a benchmark."})];
    for turn in 0..kb {
        messages.push(
            json!({"role": if turn % 2 == 0 { "user" } else { "assistant" }, "content": filler}),
        );
    }
    messages.push(json!({"role": "user", "content": format!("client {i}")}));
    json!({"model": "bench-model", "messages": messages, "stream": true})
}

/// Client `i`'s streamed answer: `n` SSE chunks.
fn answer_chunks(i: usize, n: usize) -> Vec<Bytes> {
    (0..n)
        .map(|k| {
            let data = json!({"id": format!("c{i}"), "choices": [{"index": 0, "delta": {"content": format!("token {k} ")}}]});
            Bytes::from(format!("data: {data}\n\n"))
        })
        .chain(std::iter::once(Bytes::from_static(b"data: [DONE]\n\n")))
        .collect()
}

/// One cassette per client: its request and its streamed answer.
fn write_cassettes(dir: &Path, o: &Options) {
    for i in 0..o.clients {
        let header = ProxyHeader {
            format: PROXY_FORMAT_VERSION,
            features: Vec::new(),
            harness: "bench".into(),
            upstream: "http://127.0.0.1:1".into(),
            ignore: IgnoreRule::default().fields().to_vec(),
            redactions: vec![],
        };
        let path = dir.join(format!("{:04}-v1-chat-completions.jsonl", i + 1));
        let recorder = Recorder::create_proxy(&path, &header, &[]).unwrap();
        let parts = RequestParts {
            call: 1,
            dt: 0,
            method: "POST".into(),
            url: "/v1/chat/completions".into(),
            headers: vec![("content-type".into(), "application/json".into())],
        };
        recorder.write_request(parts, &request_body(i, o.body_kb));
        recorder.write(Line::Response {
            call: 1,
            dt: 1,
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
        });
        for chunk in answer_chunks(i, o.chunks) {
            recorder.write(Line::chunk(1, 1, &chunk));
        }
        recorder.write(Line::End {
            call: 1,
            dt: 1,
            end: RecordedEnd::Complete,
        });
    }
}

/// The ceiling: the same chunks from memory, picked by the `x-bench-client` header.
async fn plain_server(answers: Arc<Vec<Vec<Bytes>>>) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let _ = stream.set_nodelay(true);
            let answers = Arc::clone(&answers);
            tokio::spawn(async move {
                let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                    let answers = Arc::clone(&answers);
                    async move {
                        let client: usize = request
                            .headers()
                            .get("x-bench-client")
                            .and_then(|v| v.to_str().ok()?.parse().ok())
                            .unwrap_or(0);
                        let _ = request.into_body().collect().await;
                        let chunks: VecDeque<Bytes> = answers[client].iter().cloned().collect();
                        let mut response = Response::new(ProxyBody::Chunks {
                            chunks,
                            broken: None,
                        });
                        response
                            .headers_mut()
                            .insert("content-type", "text/event-stream".parse().unwrap());
                        Ok::<_, Infallible>(response)
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

struct Result_ {
    requests: u64,
    errors: u64,
    seconds: f64,
    ttfb_us: Vec<u64>,
}

/// `clients` tasks posting their request in a loop for `seconds`, each reading the whole
/// stream; the time to the first body bytes of every request.
async fn load(base: &str, o: &Options, expected_len: Arc<Vec<usize>>) -> Result_ {
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(o.clients)
        .build()
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let errors = Arc::new(AtomicU64::new(0));
    let bodies: Vec<Bytes> = (0..o.clients)
        .map(|i| Bytes::from(request_body(i, o.body_kb).to_string()))
        .collect();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (i, body) in bodies.into_iter().enumerate() {
        let client = client.clone();
        let url = format!("{base}/v1/chat/completions");
        let stop = Arc::clone(&stop);
        let errors = Arc::clone(&errors);
        let expected = expected_len[i];
        tasks.push(tokio::spawn(async move {
            let mut ttfb = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let sent = Instant::now();
                let response = client
                    .post(&url)
                    .header("content-type", "application/json")
                    .header("x-bench-client", i.to_string())
                    .body(body.clone())
                    .send()
                    .await;
                let Ok(mut response) = response else {
                    errors.fetch_add(1, Ordering::Relaxed);
                    continue;
                };
                if response.status() != 200 {
                    errors.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
                let mut len = 0;
                let mut first = true;
                loop {
                    match response.chunk().await {
                        Ok(Some(chunk)) => {
                            if first {
                                ttfb.push(sent.elapsed().as_micros() as u64);
                                first = false;
                            }
                            len += chunk.len();
                        }
                        Ok(None) => break,
                        Err(_) => {
                            errors.fetch_add(1, Ordering::Relaxed);
                            break;
                        }
                    }
                }
                if len != expected {
                    errors.fetch_add(1, Ordering::Relaxed);
                }
            }
            ttfb
        }));
    }
    tokio::time::sleep(Duration::from_secs(o.seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let mut ttfb_us = Vec::new();
    for task in tasks {
        ttfb_us.extend(task.await.unwrap());
    }
    let seconds = started.elapsed().as_secs_f64();
    Result_ {
        requests: ttfb_us.len() as u64,
        errors: errors.load(Ordering::Relaxed),
        seconds,
        ttfb_us,
    }
}

impl Result_ {
    fn empty() -> Self {
        Result_ {
            requests: 0,
            errors: 0,
            seconds: 0.0,
            ttfb_us: Vec::new(),
        }
    }

    fn add(&mut self, other: Result_) {
        self.requests += other.requests;
        self.errors += other.errors;
        self.seconds += other.seconds;
        self.ttfb_us.extend(other.ttfb_us);
        self.ttfb_us.sort_unstable();
    }
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index] as f64 / 1000.0
}

/// A line of /proc/PID/status, in MiB.
fn memory_mib(pid: &str, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn report(name: &str, r: &Result_, memory: String) -> f64 {
    let rps = r.requests as f64 / r.seconds;
    println!(
        "{name:<22} {rps:>9.0} req/s   TTFB p50 {:>7.2} ms  p99 {:>7.2} ms   errors {}   {memory}",
        percentile(&r.ttfb_us, 0.50),
        percentile(&r.ttfb_us, 0.99),
        r.errors
    );
    rps
}

fn main() {
    let o = options();
    let dir = tempfile::tempdir().unwrap();
    write_cassettes(dir.path(), &o);
    let answers: Arc<Vec<Vec<Bytes>>> =
        Arc::new((0..o.clients).map(|i| answer_chunks(i, o.chunks)).collect());
    let expected: Arc<Vec<usize>> = Arc::new(
        answers
            .iter()
            .map(|c| c.iter().map(Bytes::len).sum())
            .collect(),
    );
    println!(
        "{} clients, {} rounds of {} s each, requests of {} KiB, answers of {} chunks ({} bytes)",
        o.clients,
        o.rounds,
        o.seconds,
        o.body_kb,
        o.chunks + 1,
        expected[0]
    );

    // The servers run on their own runtime, the clients on another.
    let servers = tokio::runtime::Runtime::new().unwrap();
    let clients = tokio::runtime::Runtime::new().unwrap();
    let plain = servers.block_on(plain_server(Arc::clone(&answers)));

    let mut child = None;
    let proxy_base = match &o.pi {
        Some(pi) => {
            let mut process = Command::new(pi)
                .args(["proxy", "--listen", "127.0.0.1:0", "--repeat", "--replay"])
                .arg(dir.path())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let mut line = String::new();
            std::io::BufReader::new(process.stdout.take().unwrap())
                .read_line(&mut line)
                .unwrap();
            child = Some(process);
            line.trim().to_owned()
        }
        None => {
            // Each client asks its conversation again and again.
            let replaying = ReplayingProxy::load(dir.path(), IgnoreRule::default(), false)
                .unwrap()
                .repeating(true);
            let server = servers
                .block_on(Server::bind("127.0.0.1:0", Proxy::Replay(replaying)))
                .unwrap();
            let addr = server.local_addr().unwrap();
            servers.spawn(server.run_until(std::future::pending()));
            format!("http://{addr}")
        }
    };

    let me = std::process::id().to_string();
    let (mut ceiling, mut proxied) = (Result_::empty(), Result_::empty());
    for _ in 0..o.rounds {
        let plain_base = format!("http://{plain}");
        ceiling.add(clients.block_on(load(&plain_base, &o, Arc::clone(&expected))));
        proxied.add(clients.block_on(load(&proxy_base, &o, Arc::clone(&expected))));
    }
    let ceiling_rps = report(
        "plain server (ceiling)",
        &ceiling,
        format!("this process RSS {:.0} MiB", memory_mib(&me, "VmRSS:")),
    );
    let memory = match &child {
        Some(process) => {
            let pid = process.id().to_string();
            format!(
                "proxy RSS {:.0} MiB, peak {:.0} MiB",
                memory_mib(&pid, "VmRSS:"),
                memory_mib(&pid, "VmHWM:")
            )
        }
        None => format!("this process RSS {:.0} MiB", memory_mib(&me, "VmRSS:")),
    };
    let proxy_rps = report("pi proxy --replay", &proxied, memory);
    println!("proxy / ceiling: {:.2}", proxy_rps / ceiling_rps);
    if let Some(mut process) = child {
        let _ = process.kill();
        let _ = process.wait();
    }
}
