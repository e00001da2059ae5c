//! An extension's event handlers as a [`RustExtension`]: at a hook point the machine waits on,
//! the payload (Pi's event object) and the [`StateMirror`] go to the extension host (`event`),
//! which runs the handlers with Pi 1.5.2's own `ExtensionRunner` and answers with the composed
//! result, the actions the handlers took (`ctx.abort()`, `pi.appendEntry`, ...) and the errors
//! they threw. Each loaded extension is one [`RustExtension`], so the registry composes them in
//! load order as Pi's runner does; their decisions are recorded, so a replay needs no Node.

use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::{json, Value};

use super::host::{response_data, ExtensionHost, Registrations};
use crate::extension::{
    HandledHooks, HandlerResult, HookAction, HookContext, HookEvent, HookFuture, HookPayload,
    RustExtension,
};

/// The state the handlers' synchronous getters read (`pi.getActiveTools()`, `ctx.model`,
/// `ctx.isIdle()`, `ctx.sessionManager`'s reads, `ctx.getContextUsage()`,
/// `ctx.getSystemPrompt()`), as Pi's field names in one JSON object sent with each event. The
/// program keeps it current; `systemPrompt` is the payload's at `before_agent_start`.
#[derive(Clone, Debug, Default)]
pub struct StateMirror(Arc<Mutex<Value>>);

impl StateMirror {
    /// Sets `field` (e.g. `"model"`, `"activeTools"`, `"session"`) for the events to come.
    pub fn set(&self, field: &str, value: Value) {
        let mut state = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !state.is_object() {
            *state = json!({});
        }
        state[field] = value;
    }

    /// The state as sent with an event about `payload`.
    pub(super) fn for_event(&self, payload: &HookPayload) -> Value {
        let mut state = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        if !state.is_object() {
            state = json!({});
        }
        if let HookPayload::BeforeAgentStart { system_prompt, .. } = payload {
            state["systemPrompt"] = json!(system_prompt);
        }
        state
    }
}

/// One loaded extension as `init` names it: its path and the events it has handlers for.
#[derive(Clone, Debug, Deserialize)]
pub struct LoadedExtension {
    pub path: String,
    #[serde(default)]
    pub events: Vec<String>,
}

impl LoadedExtension {
    /// The hook points among its events (the others, `message_update` above all, cost no
    /// round trip).
    fn hooks(&self) -> HandledHooks {
        HandledHooks::of(
            self.events
                .iter()
                .filter_map(|e| serde_json::from_value::<HookEvent>(json!(e)).ok()),
        )
    }
}

/// The host's answer to `event`.
#[derive(Debug, Deserialize)]
struct EventAnswer {
    result: Option<HandlerResult>,
    #[serde(default)]
    actions: Vec<HookAction>,
    #[serde(default)]
    errors: Vec<ThrownError>,
}

#[derive(Debug, Deserialize)]
struct ThrownError {
    error: String,
}

struct SidecarExtension {
    index: usize,
    path: String,
    hooks: HandledHooks,
    host: Arc<ExtensionHost>,
    state: StateMirror,
}

impl RustExtension for SidecarExtension {
    fn name(&self) -> &str {
        &self.path
    }

    fn handles(&self) -> HandledHooks {
        self.hooks.clone()
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, cx: &'a HookContext) -> HookFuture<'a> {
        Box::pin(async move {
            let (id, mut answers) = self
                .host
                .request(json!({
                    "type": "event",
                    "extension": self.index,
                    "payload": payload,
                    "state": self.state.for_event(payload),
                }))
                .map_err(|e| e.to_string())?;
            let answer = answers.recv().await;
            self.host.forget(id);
            let answer = answer.ok_or_else(|| self.host.ended("the event").to_string())?;
            let data = response_data(answer).map_err(|e| e.to_string())?;
            let answer: EventAnswer = serde_json::from_value(data)
                .map_err(|e| format!("the extension host's answer to an event is not Pi's: {e}"))?;
            for action in answer.actions {
                cx.act(action);
            }
            // A handler that threw is reported; one that threw and left no result fails as Pi's
            // runner reports it (a `tool_call` gate's error fails the call).
            match (answer.result, answer.errors.into_iter().next()) {
                (None, Some(thrown)) => Err(thrown.error),
                (result, _) => Ok(result),
            }
        })
    }
}

/// The extensions of `registrations` that handle a hook point, in load order, each answered by
/// `host` with `state` mirrored into its handlers' getters.
pub fn hook_extensions(
    registrations: &Registrations,
    host: &Arc<ExtensionHost>,
    state: &StateMirror,
) -> Vec<Arc<dyn RustExtension>> {
    registrations
        .extensions
        .iter()
        .enumerate()
        .filter(|(_, e)| !e.hooks().is_empty())
        .map(|(index, e)| {
            Arc::new(SidecarExtension {
                index,
                path: e.path.clone(),
                hooks: e.hooks(),
                host: Arc::clone(host),
                state: state.clone(),
            }) as Arc<dyn RustExtension>
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_hook_points_among_an_extensions_events_make_the_machine_wait() {
        let loaded = LoadedExtension {
            path: "a.ts".into(),
            events: ["message_update", "turn_end", "session_start", "tool_call"]
                .map(String::from)
                .to_vec(),
        };
        assert_eq!(
            loaded.hooks().iter().collect::<Vec<_>>(),
            [HookEvent::ToolCall, HookEvent::TurnEnd]
        );
    }

    #[test]
    fn the_mirror_carries_the_prompt_in_force_at_before_agent_start() {
        let state = StateMirror::default();
        state.set("activeTools", json!(["read"]));
        let start = HookPayload::BeforeAgentStart {
            message_type: "user".into(),
            prompt: "hi".into(),
            images: Vec::new(),
            system_prompt: "PROMPT".into(),
        };
        assert_eq!(
            state.for_event(&start),
            json!({"activeTools": ["read"], "systemPrompt": "PROMPT"})
        );
        let context = HookPayload::Context {
            messages: Vec::new(),
        };
        assert_eq!(state.for_event(&context), json!({"activeTools": ["read"]}));
    }
}
