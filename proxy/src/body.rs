//! The body of a response the proxy sends: one frame per recorded read, so a client sees the
//! stream cut where the provider cut it (each frame is one chunk of HTTP/1.1 chunked encoding).

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::sync::mpsc;

/// Why a body stopped before its end: the client's connection is closed where the upstream's
/// (or the recording's) was.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BodyError(pub String);

/// A response body: whole, a recorded list of chunks, or chunks arriving from a task (the
/// upstream while recording, or a replay keeping its recorded pace).
#[derive(Debug)]
pub enum ProxyBody {
    /// The whole body at once (error answers).
    Whole(Option<Bytes>),
    /// Recorded chunks, each its own frame, then the end (or a broken connection).
    Chunks {
        chunks: VecDeque<Bytes>,
        broken: Option<String>,
    },
    /// Chunks as a task sends them; an `Err` breaks the connection.
    Channel(mpsc::Receiver<Result<Bytes, BodyError>>),
}

impl ProxyBody {
    /// A whole body.
    pub fn whole(bytes: impl Into<Bytes>) -> Self {
        ProxyBody::Whole(Some(bytes.into()))
    }
}

impl Body for ProxyBody {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        match self.get_mut() {
            ProxyBody::Whole(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            ProxyBody::Chunks { chunks, broken } => Poll::Ready(match chunks.pop_front() {
                Some(chunk) => Some(Ok(Frame::data(chunk))),
                None => broken.take().map(|why| Err(BodyError(why))),
            }),
            ProxyBody::Channel(receiver) => receiver
                .poll_recv(cx)
                .map(|next| next.map(|chunk| chunk.map(Frame::data))),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            ProxyBody::Whole(bytes) => bytes.is_none(),
            ProxyBody::Chunks { chunks, broken } => chunks.is_empty() && broken.is_none(),
            ProxyBody::Channel(_) => false,
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            ProxyBody::Whole(Some(bytes)) => SizeHint::with_exact(bytes.len() as u64),
            ProxyBody::Whole(None) => SizeHint::with_exact(0),
            _ => SizeHint::default(),
        }
    }
}
