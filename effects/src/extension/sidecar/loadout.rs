//! The `prepareLoadout` hooks of the extensions' tools (Pi 1.5.2's: a declared tool changes how
//! the others are declared, as codemode describes how scripts call them), as one
//! [`RustExtension`] at the [`HookEvent::PrepareLoadout`] point: before a turn declares such a
//! tool, the extension host runs the hooks over the loadout the session describes
//! (`tool.prepare_loadout`) and answers with the descriptions they changed. The answer is the
//! hook point's decision, recorded like any other, so a replay needs no Node.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;

use super::host::{response_data, ExtensionHost, Registrations};
use crate::extension::{
    HandledHooks, HandlerResult, HookContext, HookEvent, HookFuture, HookPayload, RustExtension,
};
use pi_core::agent::hooks::LoadoutChanges;

/// What the hooks' failures are reported as, when the host cannot answer.
const NAME: &str = "prepareLoadout";

struct SidecarLoadout {
    host: Arc<ExtensionHost>,
}

/// A hook that threw, and the extension that registered its tool.
#[derive(Debug, Deserialize)]
struct HookError {
    error: String,
    #[serde(default, rename = "extensionPath")]
    extension_path: Option<String>,
}

/// The host's answer: the changes, and the hooks that threw.
#[derive(Debug, Deserialize)]
struct LoadoutAnswer {
    #[serde(flatten)]
    changes: LoadoutChanges,
    #[serde(default)]
    errors: Vec<HookError>,
}

impl RustExtension for SidecarLoadout {
    fn name(&self) -> &str {
        NAME
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::PrepareLoadout])
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, cx: &'a HookContext) -> HookFuture<'a> {
        Box::pin(async move {
            let HookPayload::PrepareLoadout {
                declared,
                registered,
            } = payload
            else {
                return Ok(None);
            };
            let request = json!({
                "type": "tool.prepare_loadout",
                "declared": declared,
                "registered": registered,
            });
            let what = "the tools' prepareLoadout";
            let (id, mut answers) = self.host.request(request).map_err(|e| e.to_string())?;
            let answer = answers.recv().await;
            self.host.forget(id);
            let answer = answer.ok_or_else(|| self.host.ended(what).to_string())?;
            let data = response_data(answer).map_err(|e| e.to_string())?;
            let answer: LoadoutAnswer = serde_json::from_value(data)
                .map_err(|e| format!("the extension host's answer to {what} is not Pi's: {e}"))?;
            // Pi's runner reports each hook that threw under its extension, and goes on.
            for error in answer.errors {
                match error.extension_path {
                    Some(path) => cx.threw_at(path, HookEvent::PrepareLoadout, error.error),
                    None => cx.threw(error.error),
                }
            }
            Ok(Some(HandlerResult::PrepareLoadout(answer.changes)))
        })
    }
}

/// The extension that runs the registered tools' `prepareLoadout` hooks in `host`; none when
/// no tool has one.
pub fn prepare_loadout_extension(
    registrations: &Registrations,
    host: &Arc<ExtensionHost>,
) -> Option<Arc<dyn RustExtension>> {
    if !registrations.tools.iter().any(|t| t.prepare_loadout) {
        return None;
    }
    Some(Arc::new(SidecarLoadout {
        host: Arc::clone(host),
    }))
}
