//! The HTTP/1.1 server around a [`Proxy`]: one task per connection, keep-alive, `TCP_NODELAY`
//! (a stream's small chunks leave at once), until the shutdown future completes.

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use crate::body::ProxyBody;
use crate::record::Recording;
use crate::replay::Replaying;
use crate::ProxyError;

/// How long to wait before accepting again after an accept failed.
const ACCEPT_RETRY: Duration = Duration::from_millis(10);

/// What the proxy does with each request.
#[derive(Debug)]
pub enum Proxy {
    Record(Recording),
    Replay(Replaying),
}

impl Proxy {
    async fn handle(&self, request: Request<Incoming>) -> Response<ProxyBody> {
        match self {
            Proxy::Record(recording) => recording.handle(request).await,
            Proxy::Replay(replaying) => replaying.handle(request).await,
        }
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
        })
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
            tokio::spawn(async move {
                let service = service_fn(move |request| {
                    let proxy = Arc::clone(&proxy);
                    requests.fetch_add(1, Ordering::Relaxed);
                    async move { Ok::<_, Infallible>(proxy.handle(request).await) }
                });
                // A connection that fails (the client went away mid-request) ends alone.
                let _ = http1::Builder::new()
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
