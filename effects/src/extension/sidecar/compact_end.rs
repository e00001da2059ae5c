//! The end of a compaction an extension's `ctx.compact()` asked for with `onComplete`/`onError`,
//! as one [`RustExtension`] at the [`HookEvent::CompactEnd`] point: the host keeps the callbacks
//! under the number the `compact` action carries, and the session machine, once that compaction
//! has ended, asks for them to be called with its result or error (`compact_end`). What they ask
//! for (`pi.sendMessage`, `pi.appendEntry`, ...) comes back as the outcome's actions, recorded
//! like a hook point's decision, so a replay needs no Node.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;

use super::host::{response_data, ExtensionHost};
use super::mirror::StateMirror;
use crate::extension::{
    HandledHooks, HookAction, HookContext, HookEvent, HookFuture, HookPayload, RustExtension,
};

/// What the callbacks' errors are reported as (Pi leaves a throwing `onError` unhandled).
const NAME: &str = "ctx.compact";

/// The host's answer to `compact_end`.
#[derive(Debug, Deserialize)]
struct CallbackAnswer {
    #[serde(default)]
    actions: Vec<HookAction>,
    #[serde(default)]
    errors: Vec<Thrown>,
}

#[derive(Debug, Deserialize)]
struct Thrown {
    error: String,
}

struct SidecarCompactEnd {
    host: Arc<ExtensionHost>,
    state: StateMirror,
}

impl RustExtension for SidecarCompactEnd {
    fn name(&self) -> &str {
        NAME
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::CompactEnd])
    }

    fn mirror(&self) -> Option<&StateMirror> {
        Some(&self.state)
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, cx: &'a HookContext) -> HookFuture<'a> {
        Box::pin(async move {
            let HookPayload::CompactEnd {
                callback,
                result,
                error,
            } = payload
            else {
                return Ok(None);
            };
            let (id, mut answers) = {
                // Held until the request is written, as an event's (`events.rs`).
                let mut mirror = self.state.lock();
                let mut request = json!({
                    "type": "compact_end",
                    "callback": callback,
                    "result": result,
                    "error": error,
                });
                let (event, told) = mirror.for_event(payload, cx.state())?;
                event.into_request(&mut request);
                let asked = self.host.request(request).map_err(|e| e.to_string())?;
                mirror.sent(told);
                asked
            };
            let answer = answers.recv().await;
            self.host.forget(id);
            let answer =
                answer.ok_or_else(|| self.host.ended("the compaction's end").to_string())?;
            let data = response_data(answer).map_err(|e| e.to_string())?;
            let answer: CallbackAnswer = serde_json::from_value(data).map_err(|e| {
                format!("the extension host's answer to a compaction's end is not Pi's: {e}")
            })?;
            for action in answer.actions {
                cx.act(action);
            }
            match answer.errors.into_iter().next() {
                Some(thrown) => Err(thrown.error),
                None => Ok(None),
            }
        })
    }
}

/// The extension that calls `ctx.compact()`'s callbacks in `host`, with `state` mirrored into
/// what they read.
pub fn compact_end_extension(
    host: &Arc<ExtensionHost>,
    state: &StateMirror,
) -> Arc<dyn RustExtension> {
    Arc::new(SidecarCompactEnd {
        host: Arc::clone(host),
        state: state.clone(),
    })
}
