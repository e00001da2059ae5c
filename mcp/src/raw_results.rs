//! The raw JSON of a stdio server's resource results, as it sent them. rmcp reads each answer
//! into its own types, which put the fields in their order and drop the ones they do not model,
//! while Pi 1.5.2 shows a resource listing to the model as the server wrote it. So the server's
//! stdout is read through [`Tap`], which passes every byte on to rmcp unchanged and keeps, by
//! request id, the `result` of each answer that holds resources (`resources`,
//! `resourceTemplates` or `contents`), the last few only.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use serde_json::Value;
use tokio::io::{AsyncRead, ReadBuf};

/// How many results are kept: more than the requests one session has in flight.
const KEPT: usize = 32;

/// A line longer than this is not looked at (it is still passed on).
const MAX_LINE: usize = 16 * 1024 * 1024;

/// The results kept, shared by the tap and the connection that asks for them.
#[derive(Clone, Debug, Default)]
pub struct RawResults {
    kept: Arc<Mutex<VecDeque<(String, Value)>>>,
}

impl RawResults {
    /// The result of the answer to request `id` (its JSON-RPC id as text), taken out.
    pub fn take(&self, id: &str) -> Option<Value> {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let at = kept.iter().position(|(kept_id, _)| kept_id == id)?;
        kept.remove(at).map(|(_, result)| result)
    }

    fn keep(&self, line: &[u8]) {
        // Parsed only when it may hold resources: every other answer is rmcp's alone.
        let named = |key: &str| memchr::memmem::find(line, key.as_bytes()).is_some();
        if !(named("\"resources\"") || named("\"resourceTemplates\"") || named("\"contents\"")) {
            return;
        }
        let Ok(message) = serde_json::from_slice::<Value>(line) else {
            return;
        };
        let (Some(id), Some(result)) = (message.get("id"), message.get("result")) else {
            return;
        };
        let holds_resources = ["resources", "resourceTemplates", "contents"]
            .iter()
            .any(|key| result.get(key).is_some());
        if !holds_resources {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.push_back((id.to_string(), result.clone()));
        while kept.len() > KEPT {
            kept.pop_front();
        }
    }
}

/// A reader that passes `inner`'s bytes on and hands each whole line to [`RawResults`].
pub struct Tap<R> {
    inner: R,
    line: Vec<u8>,
    results: RawResults,
}

impl<R> std::fmt::Debug for Tap<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tap").finish_non_exhaustive()
    }
}

impl<R> Tap<R> {
    /// `inner` read through, its resource results kept in `results`.
    pub fn new(inner: R, results: RawResults) -> Self {
        Tap {
            inner,
            line: Vec::new(),
            results,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Tap<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        let polled = Pin::new(&mut this.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            for &byte in &buf.filled()[before..] {
                if byte == b'\n' {
                    this.results.keep(&this.line);
                    this.line.clear();
                } else if this.line.len() < MAX_LINE {
                    this.line.push(byte);
                }
            }
        }
        polled
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use tokio::io::AsyncReadExt;

    #[tokio::test]
    async fn every_byte_passes_and_resource_results_are_kept_as_sent() {
        let text = concat!(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[]}}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"resources\":[{\"name\":\"a\",\"uri\":\"x://a\",\"extra\":1}]}}\n",
            "{\"partial\":"
        );
        let results = RawResults::default();
        let mut tap = Tap::new(text.as_bytes(), results.clone());
        let mut out = String::new();
        tap.read_to_string(&mut out).await.unwrap();
        assert_eq!(out, text);
        assert!(results.take("1").is_none(), "only results with resources");
        let kept = results.take("2").unwrap();
        assert_eq!(
            kept.to_string(),
            r#"{"resources":[{"name":"a","uri":"x://a","extra":1}]}"#
        );
        assert!(results.take("2").is_none(), "taken once");
    }
}
