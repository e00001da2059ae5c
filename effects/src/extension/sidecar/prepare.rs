//! The `prepareArguments` shims of the extensions' tools (Pi's compatibility hook that rewrites
//! a call's arguments before they are validated), as one [`RustExtension`] at the
//! [`HookEvent::PrepareArguments`] point: the session machine asks, for each call of such a
//! tool, what the shim makes of the model's arguments; the extension host runs the registered
//! definition's `prepareArguments` on them (`tool.prepare_arguments`) and answers with the
//! arguments it returned or the message it threw. The answer is the hook point's decision,
//! recorded like any other, so a replay needs no Node.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};

use super::host::{response_data, ExtensionHost, Registrations};
use crate::extension::{
    HandledHooks, HandlerResult, HookContext, HookEvent, HookFuture, HookPayload, RustExtension,
};
use pi_core::agent::hooks::PreparedArguments;

/// What the shims' failures are reported as, when the host cannot answer.
const NAME: &str = "prepareArguments";

struct SidecarShims {
    host: Arc<ExtensionHost>,
}

/// The host's answer: the arguments the shim returned (absent: `undefined`), or the message
/// it threw.
#[derive(Debug, Deserialize)]
struct ShimAnswer {
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(default)]
    error: Option<String>,
    /// The arguments it was given as it left them, when it changed them in place.
    #[serde(default, rename = "modelArguments")]
    model_arguments: Option<Value>,
}

impl RustExtension for SidecarShims {
    fn name(&self) -> &str {
        NAME
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::PrepareArguments])
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, _cx: &'a HookContext) -> HookFuture<'a> {
        Box::pin(async move {
            let HookPayload::PrepareArguments {
                tool_name,
                arguments,
                ..
            } = payload
            else {
                return Ok(None);
            };
            let request = json!({
                "type": "tool.prepare_arguments",
                "name": tool_name,
                "arguments": arguments,
            });
            let what = "the tool's prepareArguments";
            let (id, mut answers) = self.host.request(request).map_err(|e| e.to_string())?;
            let answer = answers.recv().await;
            self.host.forget(id);
            let answer = answer.ok_or_else(|| self.host.ended(what).to_string())?;
            let data = response_data(answer).map_err(|e| e.to_string())?;
            let answer: ShimAnswer = serde_json::from_value(data)
                .map_err(|e| format!("the extension host's answer to {what} is not Pi's: {e}"))?;
            let prepared = match (answer.error, answer.arguments) {
                (Some(error), _) => PreparedArguments::Thrown {
                    error,
                    model_arguments: answer.model_arguments,
                },
                (None, arguments) => PreparedArguments::Prepared {
                    arguments,
                    model_arguments: answer.model_arguments,
                },
            };
            Ok(Some(HandlerResult::PrepareArguments(prepared)))
        })
    }
}

/// The extension that runs the registered tools' `prepareArguments` in `host`; none when no
/// tool has one.
pub fn prepare_arguments_extension(
    registrations: &Registrations,
    host: &Arc<ExtensionHost>,
) -> Option<Arc<dyn RustExtension>> {
    if !registrations.tools.iter().any(|t| t.prepare_arguments) {
        return None;
    }
    Some(Arc::new(SidecarShims {
        host: Arc::clone(host),
    }))
}
