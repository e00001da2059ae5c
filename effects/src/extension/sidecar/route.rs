//! The routers of the virtual models extensions registered (Pi 1.5.2's
//! `pi.registerVirtualModel`), as one [`RustExtension`] at the [`HookEvent::RouteModel`]
//! point: the session machine asks, before a request for a virtual model goes out, where it
//! goes; the extension host runs the model's `route` (`model.route`) and answers with the
//! physical model, its thinking level and the router's new state, or Pi's error text (with
//! what the router asked of the session, `pi.appendEntry` say, as the outcome's actions). The
//! answer is the hook point's decision, recorded like any other, so a replay needs no Node.

use std::sync::Arc;

use serde_json::Value;

use super::acted::round_trip;
use super::host::{ExtensionHost, Registrations};
use super::mirror::StateMirror;
use crate::extension::{
    HandledHooks, HandlerResult, HookContext, HookEvent, HookFuture, HookPayload, RustExtension,
};
use pi_core::agent::hooks::HookAction;
use pi_core::agent::model_route::RouteDecision;

/// What the routers' failures are reported as, when the host cannot answer.
const NAME: &str = "virtual model router";

struct SidecarRouters {
    host: Arc<ExtensionHost>,
    /// The session's state as the host last heard it: a router's context reads it.
    state: StateMirror,
}

impl RustExtension for SidecarRouters {
    fn name(&self) -> &str {
        NAME
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::RouteModel])
    }

    fn mirror(&self) -> Option<&StateMirror> {
        Some(&self.state)
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, cx: &'a HookContext) -> HookFuture<'a> {
        Box::pin(async move {
            let HookPayload::RouteModel(question) = payload else {
                return Ok(None);
            };
            // The question apart from the session's state the mirror adds (`state`, `unset`).
            let request = serde_json::json!({"type": "model.route", "question": question});
            let what = "the virtual model's router";
            let mut data = round_trip(&self.host, &self.state, payload, cx, request, what).await?;
            let actions = match &mut data {
                Value::Object(fields) => fields.remove("actions"),
                _ => None,
            };
            let actions: Vec<HookAction> = match actions {
                Some(actions) => serde_json::from_value(actions).map_err(|e| {
                    format!("the extension host's answer to {what} is not Pi's: {e}")
                })?,
                None => Vec::new(),
            };
            for action in actions {
                cx.act(action);
            }
            let decision = match data.get("error").and_then(Value::as_str) {
                Some(error) => RouteDecision::Failed {
                    error: error.to_owned(),
                },
                None => {
                    let mut routed = data;
                    if let Value::Object(fields) = &mut routed {
                        fields.insert("outcome".into(), Value::String("routed".into()));
                    }
                    serde_json::from_value(routed).map_err(|e| {
                        format!("the extension host's answer to {what} is not Pi's: {e}")
                    })?
                }
            };
            Ok(Some(HandlerResult::RouteModel(decision)))
        })
    }
}

/// The extension that runs the registered virtual models' routers in `host`, with `state`
/// mirrored into what their context reads; none when no extension loaded (any loaded one may
/// register a virtual model later, from a handler, a command or a tool).
pub fn route_extension(
    registrations: &Registrations,
    host: &Arc<ExtensionHost>,
    state: &StateMirror,
) -> Option<Arc<dyn RustExtension>> {
    if registrations.virtual_models.is_empty() && registrations.extensions.is_empty() {
        return None;
    }
    Some(Arc::new(SidecarRouters {
        host: Arc::clone(host),
        state: state.clone(),
    }))
}
