//! Record mode: each request is forwarded to the upstream as the client sent it, and the
//! exchange is written to its conversation's cassette as it happens: the request (credentials
//! redacted), the response's status and headers, each read of the body with its time, and how
//! it ended. The client gets the upstream's bytes as they arrive.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::header::CONTENT_TYPE;
use hyper::http::request::Parts;
use hyper::{Response, StatusCode};
use pi_cassette_format::format::{Line, RecordedEnd, RecordedTransportError};
use pi_cassette_format::redact::PROXY_REDACTIONS;
use pi_cassette_format::write::RequestParts;
use pi_cassette_format::{ProxyHeader, Recorder, PROXY_FORMAT_VERSION};
use tokio::sync::mpsc;

use crate::answer::{self, passes_through};
use crate::body::{BodyError, ProxyBody};
use crate::canonical::{body_value, CanonicalRequest, IgnoreRule};
use crate::conversation::{Conversations, Placement};
use crate::ProxyError;

/// How long the upstream may stay silent (before its headers, between chunks).
const IDLE: Duration = Duration::from_secs(600);

/// Headers whose value is `<scheme> <credential>`: the credential alone becomes a secret, so it
/// is also found where it appears without its scheme.
const SCHEMED_CREDENTIALS: [&str; 2] = ["authorization", "proxy-authorization"];

/// The recording proxy.
#[derive(Debug)]
pub struct RecordingProxy {
    client: reqwest::Client,
    /// The upstream's base URL, without a trailing `/`.
    upstream: String,
    rule: IgnoreRule,
    conversations: Mutex<Conversations<Recorder>>,
}

impl RecordingProxy {
    /// Records into `dir` (created if needed) what goes to `upstream`, matching later with
    /// `rule` (written into each cassette's header).
    pub fn new(dir: &Path, upstream: &str, rule: IgnoreRule) -> Result<Self, ProxyError> {
        if !(upstream.starts_with("http://") || upstream.starts_with("https://")) {
            return Err(ProxyError::Upstream(upstream.to_owned()));
        }
        std::fs::create_dir_all(dir).map_err(|source| ProxyError::Folder {
            path: dir.to_path_buf(),
            source,
        })?;
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(30))
            .build()
            .map_err(|e| ProxyError::Client(e.to_string()))?;
        Ok(RecordingProxy {
            client,
            upstream: upstream.trim_end_matches('/').to_owned(),
            rule,
            conversations: Mutex::new(Conversations::new(dir)),
        })
    }

    /// Forwards the request of `parts` and `bytes` (its body, read whole), received at `start`,
    /// and records the exchange.
    pub async fn handle(&self, parts: Parts, bytes: Bytes, start: Instant) -> Response<ProxyBody> {
        let url = parts
            .uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
        let content_type = parts
            .headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        let body = body_value(&bytes);
        let canonical = CanonicalRequest::new(
            parts.method.as_str(),
            &url,
            content_type,
            body.clone(),
            &self.rule,
        );
        let (cassette, call) = match self.place(&canonical) {
            Ok(placed) => placed,
            Err(e) => {
                let message = format!("pi proxy: cannot record: {e}");
                return answer::error(
                    &url,
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "proxy_record_failed",
                    &message,
                );
            }
        };
        let headers: Vec<(String, String)> = parts
            .headers
            .iter()
            .filter(|(name, _)| passes_through(name.as_str()))
            .map(|(name, value)| {
                let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                (name.as_str().to_owned(), value)
            })
            .collect();
        for (name, value) in &headers {
            if SCHEMED_CREDENTIALS.contains(&name.as_str()) {
                if let Some((_, credential)) = value.split_once(' ') {
                    cassette.secret(credential.trim(), &format!("header {name}"));
                }
            }
        }
        let parts_line = RequestParts {
            call,
            dt: millis(start),
            method: parts.method.as_str().to_owned(),
            url: cassette.redact_url(&url),
            headers: cassette.redact_headers(&headers),
        };
        cassette.write_request(parts_line, &body);

        let mut forward = self
            .client
            .request(parts.method.clone(), format!("{}{url}", self.upstream));
        for (name, value) in &parts.headers {
            // Without `accept-encoding` the upstream answers uncompressed, so the cassette holds
            // readable text.
            if passes_through(name.as_str()) && name != "accept-encoding" {
                forward = forward.header(name, value);
            }
        }
        let sent = tokio::time::timeout(IDLE, forward.body(bytes).send()).await;
        let upstream = match sent {
            Ok(Ok(response)) => response,
            failed => {
                let why = match failed {
                    Ok(Err(e)) => error_chain(&e),
                    _ => "no answer in time".to_owned(),
                };
                let message = format!("pi proxy: upstream {}: {why}", self.upstream);
                let answer = answer::error(
                    &url,
                    StatusCode::BAD_GATEWAY,
                    "proxy_upstream_error",
                    &message,
                );
                record_answer(&cassette, call, start, &answer);
                return answer;
            }
        };
        let status = upstream.status();
        let headers: Vec<(String, String)> = upstream
            .headers()
            .iter()
            .filter(|(name, _)| passes_through(name.as_str()))
            .map(|(n, v)| {
                let value = String::from_utf8_lossy(v.as_bytes()).into_owned();
                (n.as_str().to_owned(), value)
            })
            .collect();
        cassette.write(Line::Response {
            call,
            dt: millis(start),
            status: status.as_u16(),
            headers: cassette.redact_headers(&headers),
        });
        let (sender, receiver) = mpsc::channel(64);
        let mut response = Response::new(ProxyBody::Channel(receiver));
        *response.status_mut() = status;
        for (name, value) in upstream.headers() {
            if passes_through(name.as_str()) {
                response.headers_mut().append(name, value.clone());
            }
        }
        tokio::spawn(pump(upstream, sender, cassette, call, start));
        response
    }

    /// The cassette and exchange number of `request`, opening a new cassette for a new
    /// conversation.
    fn place(&self, request: &CanonicalRequest) -> Result<(Recorder, u64), ProxyError> {
        let mut conversations = self
            .conversations
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let file: PathBuf = match conversations.place(request) {
            Placement::Continues { sink, exchange } => return Ok((sink.clone(), exchange)),
            Placement::New { file } => file,
        };
        let header = ProxyHeader {
            format: PROXY_FORMAT_VERSION,
            features: Vec::new(),
            harness: env!("CARGO_PKG_VERSION").to_owned(),
            upstream: crate::canonical::without_secret_params(&self.upstream),
            ignore: self.rule.fields().to_vec(),
            redactions: PROXY_REDACTIONS.iter().map(|r| (*r).to_owned()).collect(),
        };
        let recorder = Recorder::create_proxy(&file, &header, &[]).map_err(ProxyError::Record)?;
        Ok((conversations.open(request, recorder).clone(), 1))
    }
}

/// Copies the upstream's body to the client, recording each read, until it ends, fails, or the
/// client goes away.
async fn pump(
    mut upstream: reqwest::Response,
    sender: mpsc::Sender<Result<Bytes, BodyError>>,
    cassette: Recorder,
    call: u64,
    start: Instant,
) {
    let end = loop {
        match tokio::time::timeout(IDLE, upstream.chunk()).await {
            Ok(Ok(Some(bytes))) => {
                cassette.write(Line::chunk(call, millis(start), &bytes));
                if sender.send(Ok(bytes)).await.is_err() {
                    break RecordedEnd::Dropped;
                }
            }
            Ok(Ok(None)) => break RecordedEnd::Complete,
            failed => {
                let error = match failed {
                    Ok(Err(e)) => RecordedTransportError::Body(error_chain(&e)),
                    _ => RecordedTransportError::Timeout,
                };
                let _ = sender
                    .send(Err(BodyError(format!("upstream body: {error:?}"))))
                    .await;
                break RecordedEnd::Error(error);
            }
        }
    };
    cassette.write(Line::End {
        call,
        dt: millis(start),
        end,
    });
}

/// Records the proxy's own `answer`, sent when the upstream could not be reached, so that a
/// replay answers the same (the exchange is complete as the client saw it).
fn record_answer(cassette: &Recorder, call: u64, start: Instant, answer: &Response<ProxyBody>) {
    let headers = answer
        .headers()
        .iter()
        .map(|(n, v)| {
            let value = String::from_utf8_lossy(v.as_bytes()).into_owned();
            (n.as_str().to_owned(), value)
        })
        .collect();
    cassette.write(Line::Response {
        call,
        dt: millis(start),
        status: answer.status().as_u16(),
        headers,
    });
    if let ProxyBody::Whole(Some(bytes)) = answer.body() {
        cassette.write(Line::chunk(call, millis(start), bytes));
    }
    cassette.write(Line::End {
        call,
        dt: millis(start),
        end: RecordedEnd::Complete,
    });
}

/// Milliseconds since `start`.
fn millis(start: Instant) -> u64 {
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// The error and its causes, as one line.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
