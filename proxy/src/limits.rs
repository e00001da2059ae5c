//! What one client may cost the proxy: the size of a request body it sends, and how long its
//! connection may sit sending nothing while the proxy waits for it.
//!
//! A body is read no further than the limit: one whose declared length is over it is refused
//! before any of it is read, a chunked one as soon as its chunks pass it. So the memory a
//! request costs is bounded however large a body a client announces or streams, and a refused
//! connection is closed rather than drained. A body that stops coming is refused after the idle
//! time; a connection that stops before its request's head is complete, or idles on keep-alive,
//! is closed by the server (`server.rs`) after the same time.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body::Body;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONNECTION};
use hyper::{Response, StatusCode};

use crate::answer;
use crate::body::ProxyBody;

/// The default limit of a request body: 32 MiB, some hundred times a long agent conversation.
pub const DEFAULT_MAX_BODY: u64 = 32 << 20;

/// The default idle time of a connection.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(30);

const MIB: u64 = 1 << 20;

/// What one client may cost the proxy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// The largest request body read, in bytes; a larger one is answered 413.
    pub max_body: u64,
    /// How long a connection may send nothing while the proxy waits for its request (the head,
    /// the body, or the next request on keep-alive) before it is closed.
    pub idle: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body: DEFAULT_MAX_BODY,
            idle: DEFAULT_IDLE,
        }
    }
}

/// Why a request's body was not read to its end.
#[derive(Debug)]
pub enum Refusal {
    /// Over [`Limits::max_body`], declared or counted.
    TooLarge { limit: u64 },
    /// Nothing came for [`Limits::idle`].
    Stalled { idle: Duration },
    /// The connection failed or the framing was bad.
    Broken(String),
}

impl Refusal {
    /// What it is, for the proxy's stderr and the client's error message.
    pub fn reason(&self) -> String {
        match self {
            Refusal::TooLarge { limit } => format!(
                "the request body is over the limit of {} (--max-body-mb)",
                size(*limit)
            ),
            Refusal::Stalled { idle } => format!(
                "the request body stopped coming: nothing for {} s (--idle-timeout)",
                idle.as_secs()
            ),
            Refusal::Broken(why) => format!("cannot read the request body: {why}"),
        }
    }

    /// The answer to a request for `path` refused so, in its API's error shape; the connection
    /// closes after it (the rest of the body is never read).
    pub fn answer(&self, path: &str) -> Response<ProxyBody> {
        let (status, kind) = match self {
            Refusal::TooLarge { .. } => (StatusCode::PAYLOAD_TOO_LARGE, "proxy_body_too_large"),
            Refusal::Stalled { .. } => (StatusCode::REQUEST_TIMEOUT, "proxy_request_timeout"),
            Refusal::Broken(_) => (StatusCode::BAD_REQUEST, "proxy_bad_request"),
        };
        let message = format!("pi proxy: {}", self.reason());
        let mut response = answer::error(path, status, kind, &message);
        response
            .headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
        response
    }
}

/// Reads `body` whole within `limits`: refused at once when its declared length is over the
/// limit, as soon as what came passes it, or when nothing comes for the idle time.
pub async fn read_body(mut body: Incoming, limits: &Limits) -> Result<Bytes, Refusal> {
    let too_large = Refusal::TooLarge {
        limit: limits.max_body,
    };
    let declared = body.size_hint().lower();
    if declared > limits.max_body {
        return Err(too_large);
    }
    let mut pieces: Vec<Bytes> = Vec::new();
    let mut total: u64 = 0;
    loop {
        let frame = match tokio::time::timeout(limits.idle, body.frame()).await {
            Err(_) => return Err(Refusal::Stalled { idle: limits.idle }),
            Ok(None) => break,
            Ok(Some(Err(e))) => return Err(Refusal::Broken(e.to_string())),
            Ok(Some(Ok(frame))) => frame,
        };
        if let Ok(data) = frame.into_data() {
            total += data.len() as u64;
            if total > limits.max_body {
                return Err(too_large);
            }
            pieces.push(data);
        }
    }
    Ok(match pieces.len() {
        0 => Bytes::new(),
        1 => pieces.swap_remove(0),
        _ => {
            let mut whole = BytesMut::with_capacity(usize::try_from(total).unwrap_or(0));
            for piece in pieces {
                whole.extend_from_slice(&piece);
            }
            whole.freeze()
        }
    })
}

/// `bytes` for a person: whole MiB as such, else bytes.
fn size(bytes: u64) -> String {
    if bytes % MIB == 0 {
        format!("{} MiB", bytes / MIB)
    } else {
        format!("{bytes} bytes")
    }
}
