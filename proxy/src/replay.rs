//! Replay mode: every exchange of every proxy cassette in a folder, indexed by its request's
//! canonical form, served back with its recorded status, headers and chunk boundaries (and,
//! with `--timing`, at its recorded pace).
//!
//! Repeated identical requests get their recordings in recorded order (files by name, then
//! line). Once they are used up, the request is answered as one without a recording (a client
//! that calls the model more often than it did while recording is caught, not served an old
//! answer), unless the replay repeats: then the first again, so one replay server can serve the
//! same scenario several times. A request without a recording gets a 404 in its API's error
//! shape (not retried by SDKs, so the client reports it at once) and a divergence report on
//! stderr: the nearest recorded request and a line diff of the two, bounded (`pi_cassette_format::diff::line_diff`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use hyper::http::request::Parts;
use hyper::{Response, StatusCode};
use pi_cassette_format::diff::pretty_json;
use pi_cassette_format::format::RecordedEnd;
use pi_cassette_format::ProxyCassette;
use similar::TextDiff;
use tokio::sync::mpsc;

use crate::answer::{self, passes_through};
use crate::body::{BodyError, ProxyBody};
use crate::canonical::{body_value, raw_digest, CanonicalRequest, IgnoreRule};
use crate::ProxyError;
use pi_cassette_format::diff::{clip, line_diff, DIFF_DEADLINE};

/// Recordings compared with an unmatched request to find the nearest (those of its route, the
/// most recent first); each comparison stops after [`DIFF_DEADLINE`].
const NEAREST_CANDIDATES: usize = 64;

/// The replaying proxy.
#[derive(Debug)]
pub struct ReplayingProxy {
    entries: Vec<Entry>,
    /// Canonical digest -> the recordings of that request.
    index: HashMap<[u8; 32], Slot>,
    /// Digest of a recorded request's bytes (body as compact JSON) -> its canonical digest: a
    /// request that comes with the same bytes is found without parsing its body.
    by_bytes: HashMap<[u8; 32], [u8; 32]>,
    rule: IgnoreRule,
    timing: bool,
    /// Whether used-up recordings are served again from the first.
    repeat: bool,
    unmatched: AtomicU64,
}

/// One recorded exchange, ready to serve.
#[derive(Debug)]
struct Entry {
    file: PathBuf,
    line: usize,
    request: CanonicalRequest,
    status: StatusCode,
    /// When the response's headers came (ms after the request).
    response_dt: u64,
    headers: Vec<(HeaderName, HeaderValue)>,
    chunks: Vec<(u64, Bytes)>,
    /// Why the body broke off, when it did not end normally.
    broken: Option<String>,
}

/// The recordings of one canonical request, served in turn.
#[derive(Debug)]
struct Slot {
    entries: Vec<usize>,
    /// How many times the request was asked so far.
    next: AtomicUsize,
}

impl ReplayingProxy {
    /// Loads every `*.jsonl` proxy cassette in `dir`; requests are matched with `rule`, and
    /// served at their recorded pace with `timing`.
    pub fn load(dir: &Path, rule: IgnoreRule, timing: bool) -> Result<Self, ProxyError> {
        let folder = |source| ProxyError::Folder {
            path: dir.to_path_buf(),
            source,
        };
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(folder)?
            .map(|entry| entry.map(|e| e.path()))
            .collect::<Result<_, _>>()
            .map_err(folder)?;
        files.retain(|f| f.extension().is_some_and(|e| e == "jsonl"));
        files.sort();
        if files.is_empty() {
            return Err(ProxyError::NoCassettes(dir.to_path_buf()));
        }
        let mut entries = Vec::new();
        let mut by_bytes = HashMap::new();
        for file in files {
            let cassette = ProxyCassette::load(&file).map_err(ProxyError::Load)?;
            for exchange in cassette.exchanges {
                let content_type = exchange
                    .headers
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
                    .map(|(_, v)| v.as_str());
                // The bytes a client writing compact JSON sends (the body as recorded).
                let bytes = serde_json::to_vec(&exchange.body).ok();
                let request = CanonicalRequest::new(
                    &exchange.method,
                    &exchange.url,
                    content_type,
                    exchange.body,
                    &rule,
                );
                if let Some(bytes) = bytes {
                    let raw = raw_digest(&exchange.method, &exchange.url, content_type, &bytes);
                    by_bytes.insert(raw, request.digest());
                }
                let (status, headers, broken) = match exchange.response {
                    Some((status, headers)) => {
                        let broken = match exchange.end {
                            Some(RecordedEnd::Complete) => None,
                            Some(RecordedEnd::Dropped) => {
                                Some("the client went away while recording".to_owned())
                            }
                            Some(RecordedEnd::Error(e)) => Some(format!("recorded: {e:?}")),
                            None => Some("the recording stops inside this body".to_owned()),
                        };
                        (status, headers, broken)
                    }
                    None => (599, Vec::new(), Some("no response was recorded".to_owned())),
                };
                entries.push(Entry {
                    file: file.clone(),
                    line: exchange.line,
                    request,
                    status: StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY),
                    response_dt: exchange.response_dt,
                    headers: headers
                        .iter()
                        .filter(|(n, _)| passes_through(n))
                        .filter_map(|(n, v)| {
                            Some((
                                HeaderName::from_bytes(n.as_bytes()).ok()?,
                                HeaderValue::from_str(v).ok()?,
                            ))
                        })
                        .collect(),
                    chunks: exchange.chunks,
                    broken,
                });
            }
        }
        let mut index: HashMap<[u8; 32], Slot> = HashMap::new();
        for (i, entry) in entries.iter().enumerate() {
            index
                .entry(entry.request.digest())
                .or_insert_with(|| Slot {
                    entries: Vec::new(),
                    next: AtomicUsize::new(0),
                })
                .entries
                .push(i);
        }
        Ok(ReplayingProxy {
            entries,
            index,
            by_bytes,
            rule,
            timing,
            repeat: false,
            unmatched: AtomicU64::new(0),
        })
    }

    /// With `repeat`, a request whose recordings are used up gets them again from the first,
    /// instead of the 404 of a request without a recording.
    pub fn repeating(mut self, repeat: bool) -> Self {
        self.repeat = repeat;
        self
    }

    /// The number of recorded exchanges.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Requests answered without a recording so far.
    pub fn unmatched(&self) -> u64 {
        self.unmatched.load(Ordering::Relaxed)
    }

    /// Counts one more request answered without a recording; its number.
    pub(crate) fn count_unmatched(&self) -> u64 {
        self.unmatched.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Answers the request of `parts` and `bytes` (its body, read whole), received at `start`,
    /// from its recording.
    pub async fn handle(&self, parts: Parts, bytes: Bytes, start: Instant) -> Response<ProxyBody> {
        let url = parts.uri.path_and_query().map_or("/", |p| p.as_str());
        let content_type = parts
            .headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        let method = parts.method.as_str();
        let known = self
            .by_bytes
            .get(&raw_digest(method, url, content_type, &bytes))
            .and_then(|digest| self.index.get(digest));
        let slot = match known {
            Some(slot) => slot,
            None => {
                let body = body_value(&bytes);
                let canonical = CanonicalRequest::new(method, url, content_type, body, &self.rule);
                match self.index.get(&canonical.digest()) {
                    Some(slot) => slot,
                    None => return self.no_recording(&canonical),
                }
            }
        };
        let asked = slot.next.fetch_add(1, Ordering::Relaxed);
        let turn = match asked.checked_sub(slot.entries.len()) {
            None => asked,
            Some(_) if self.repeat => asked % slot.entries.len(),
            Some(_) => return self.used_up(&parts, slot.entries.len(), asked + 1),
        };
        self.serve(&self.entries[slot.entries[turn]], start).await
    }

    /// The answer to the `asked`th request for recordings of which there are `recorded`, after
    /// reporting it on stderr.
    fn used_up(&self, parts: &Parts, recorded: usize, asked: usize) -> Response<ProxyBody> {
        let count = self.count_unmatched();
        let path = parts.uri.path();
        let (method, shown) = (&parts.method, clip(path));
        let (recordings, are) = match recorded {
            1 => ("1 recording".to_owned(), "is"),
            n => (format!("{n} recordings"), "are"),
        };
        eprintln!(
            "pi proxy: the {recordings} of {method} {shown} {are} used up: this is its request {asked} (unmatched request {count})"
        );
        let message = format!(
            "pi proxy: the {recordings} of this request ({method} {shown}) {are} used up: this is its request {asked}; the client calls more often than it did while recording (--repeat serves them again from the first)"
        );
        answer::error(
            path,
            StatusCode::NOT_FOUND,
            "proxy_recordings_used_up",
            &message,
        )
    }

    async fn serve(&self, entry: &Entry, start: Instant) -> Response<ProxyBody> {
        let body = if self.timing {
            let headers_at = start + Duration::from_millis(entry.response_dt);
            tokio::time::sleep_until(headers_at.into()).await;
            let (sender, receiver) = mpsc::channel(16);
            let chunks = entry.chunks.clone();
            let broken = entry.broken.clone();
            tokio::spawn(async move {
                for (dt, chunk) in chunks {
                    tokio::time::sleep_until((start + Duration::from_millis(dt)).into()).await;
                    if sender.send(Ok(chunk)).await.is_err() {
                        return;
                    }
                }
                if let Some(why) = broken {
                    let _ = sender.send(Err(BodyError(why))).await;
                }
            });
            ProxyBody::Channel(receiver)
        } else {
            ProxyBody::Chunks {
                chunks: entry.chunks.iter().map(|(_, c)| c.clone()).collect(),
                broken: entry.broken.clone(),
            }
        };
        let mut response = Response::new(body);
        *response.status_mut() = entry.status;
        let headers = response.headers_mut();
        for (name, value) in &entry.headers {
            headers.append(name, value.clone());
        }
        response
    }

    /// The answer to a request without a recording, after reporting it on stderr.
    fn no_recording(&self, request: &CanonicalRequest) -> Response<ProxyBody> {
        let count = self.count_unmatched();
        let (method, path) = request.route();
        let path = clip(path);
        let mut report =
            format!("pi proxy: no recording of {method} {path} (unmatched request {count})\n");
        match self.nearest(request) {
            Some(entry) => {
                let recorded = pretty_json(&entry.request.to_value());
                let asked = pretty_json(&request.to_value());
                report.push_str(&format!(
                    "nearest recording: {}:{}\n--- recorded\n+++ requested\n{}",
                    entry.file.display(),
                    entry.line,
                    line_diff(&recorded, &asked)
                ));
            }
            None => report.push_str("no recording at all\n"),
        }
        eprint!("{report}");
        let message = format!(
            "pi proxy: no recording of this request ({method} {path}); the proxy's stderr shows the nearest recorded request and how they differ"
        );
        answer::error(
            &request.path,
            StatusCode::NOT_FOUND,
            "proxy_no_recording",
            &message,
        )
    }

    /// The recorded request most like `request`: among those of its route (else all), the one
    /// whose JSON has the most lines in common with it.
    fn nearest(&self, request: &CanonicalRequest) -> Option<&Entry> {
        let route = request.route();
        let same_route: Vec<&Entry> = self
            .entries
            .iter()
            .rev()
            .filter(|e| e.request.route() == route)
            .take(NEAREST_CANDIDATES)
            .collect();
        let candidates = if same_route.is_empty() {
            self.entries.iter().rev().take(NEAREST_CANDIDATES).collect()
        } else {
            same_route
        };
        let asked = pretty_json(&request.to_value());
        candidates
            .into_iter()
            .map(|entry| {
                let recorded = pretty_json(&entry.request.to_value());
                let ratio = TextDiff::configure()
                    .timeout(DIFF_DEADLINE)
                    .diff_lines(&recorded, &asked)
                    .ratio();
                (entry, ratio)
            })
            .fold(
                None,
                |best: Option<(&Entry, f32)>, (entry, ratio)| match best {
                    Some((_, r)) if r >= ratio => best,
                    _ => Some((entry, ratio)),
                },
            )
            .map(|(entry, _)| entry)
    }
}
