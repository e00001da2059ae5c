//! The HTTP/1.1 server around a [`Proxy`]: one task per connection, keep-alive, `TCP_NODELAY`
//! (a stream's small chunks leave at once), until the shutdown future completes.
//!
//! Within [`Limits`]: a connection that sends nothing, part of a request's head, or nothing
//! more on keep-alive for the idle time is closed (hyper's header read timeout, which runs
//! from the moment the server waits for a head); a request's body is read here, within the
//! size limit and the idle time, before the proxy sees the request.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

use crate::body::ProxyBody;
use crate::limits::{read_body, Limits, Refusal};
use crate::record::RecordingProxy;
use crate::replay::ReplayingProxy;
use crate::ProxyError;
use pi_cassette_format::diff::clip;

/// How long to wait before accepting again after an accept failed.
const ACCEPT_RETRY: Duration = Duration::from_millis(10);

/// What the proxy does with each request.
#[derive(Debug)]
pub enum Proxy {
    Record(RecordingProxy),
    Replay(ReplayingProxy),
}

impl Proxy {
    /// Reads `request`'s body within `limits` and answers it.
    async fn handle(&self, request: Request<Incoming>, limits: &Limits) -> Response<ProxyBody> {
        let start = Instant::now();
        let (parts, body) = request.into_parts();
        let body = match read_body(body, limits).await {
            Ok(body) => body,
            Err(refusal) => return self.refuse(&parts, &refusal),
        };
        match self {
            Proxy::Record(recording) => recording.handle(parts, body, start).await,
            Proxy::Replay(replaying) => replaying.handle(parts, body, start).await,
        }
    }

    /// The answer to a request whose body was refused, after saying so on stderr; a replay
    /// counts it among the requests it had no recording for.
    fn refuse(
        &self,
        parts: &hyper::http::request::Parts,
        refusal: &Refusal,
    ) -> Response<ProxyBody> {
        let path = parts.uri.path();
        let unmatched = match self {
            Proxy::Replay(replaying) => {
                format!(" (unmatched request {})", replaying.count_unmatched())
            }
            Proxy::Record(_) => String::new(),
        };
        eprintln!(
            "pi proxy: refused {} {}: {}{unmatched}",
            parts.method,
            clip(path),
            refusal.reason()
        );
        refusal.answer(path)
    }
}

/// What a server did, once stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Requests answered.
    pub requests: u64,
    /// Requests a replay had no recording for.
    pub unmatched: u64,
}

/// A proxy listening on its address.
#[derive(Debug)]
pub struct Server {
    listener: TcpListener,
    proxy: Arc<Proxy>,
    requests: Arc<AtomicU64>,
    limits: Limits,
}

impl Server {
    /// Listens on `addr` (`127.0.0.1:0` picks a free port).
    pub async fn bind(addr: &str, proxy: Proxy) -> Result<Server, ProxyError> {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|source| ProxyError::Listen {
                addr: addr.to_owned(),
                source,
            })?;
        Ok(Server {
            listener,
            proxy: Arc::new(proxy),
            requests: Arc::new(AtomicU64::new(0)),
            limits: Limits::default(),
        })
    }

    /// Serves within `limits` instead of the default ones.
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> Result<SocketAddr, ProxyError> {
        self.listener
            .local_addr()
            .map_err(|source| ProxyError::Listen {
                addr: "the bound socket".into(),
                source,
            })
    }

    /// Serves until `shutdown` completes; connections still open are closed with the runtime.
    pub async fn run_until(self, shutdown: impl Future<Output = ()>) -> Summary {
        tokio::pin!(shutdown);
        loop {
            let accepted = tokio::select! {
                () = &mut shutdown => break,
                accepted = self.listener.accept() => accepted,
            };
            let Ok((stream, _)) = accepted else {
                // Out of file descriptors and the like: a later accept may succeed, once some
                // connection has closed.
                tokio::time::sleep(ACCEPT_RETRY).await;
                continue;
            };
            let _ = stream.set_nodelay(true);
            let proxy = Arc::clone(&self.proxy);
            let requests = Arc::clone(&self.requests);
            let limits = self.limits;
            tokio::spawn(async move {
                let service = service_fn(move |request| {
                    let proxy = Arc::clone(&proxy);
                    requests.fetch_add(1, Ordering::Relaxed);
                    async move { Ok::<_, Infallible>(proxy.handle(request, &limits).await) }
                });
                // A connection that fails (the client went away mid-request, or sent nothing
                // for the idle time) ends alone.
                let _ = http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(limits.idle)
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
        Summary {
            requests: self.requests.load(Ordering::Relaxed),
            unmatched: match &*self.proxy {
                Proxy::Replay(replaying) => replaying.unmatched(),
                Proxy::Record(_) => 0,
            },
        }
    }
}
