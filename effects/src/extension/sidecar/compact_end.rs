//! The end of a compaction an extension's `ctx.compact()` asked for with `onComplete`/`onError`,
//! as one [`RustExtension`] at the [`HookEvent::CompactEnd`] point: the host keeps the callbacks
//! under the number the `compact` action carries, and the session machine, once that compaction
//! has ended, asks for them to be called with its result or error (`compact_end`). What they ask
//! for (`pi.sendMessage`, `pi.appendEntry`, ...) comes back as the outcome's actions, recorded
//! like a hook point's decision, so a replay needs no Node.

use std::sync::Arc;

use serde_json::json;

use super::acted::ask;
use super::host::ExtensionHost;
use super::mirror::StateMirror;
use crate::extension::{
    HandledHooks, HookContext, HookEvent, HookFuture, HookPayload, RustExtension,
};

/// What the callbacks' errors are reported as (Pi leaves a throwing `onError` unhandled).
const NAME: &str = "ctx.compact";

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
            let request = json!({
                "type": "compact_end",
                "callback": callback,
                "result": result,
                "error": error,
            });
            ask(
                &self.host,
                &self.state,
                payload,
                cx,
                request,
                "the compaction's end",
            )
            .await
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
