//! An extension's event handlers as a [`RustExtension`]: at a hook point the machine waits on,
//! the payload (Pi's event object) and what changed in the [`StateMirror`] go to the extension
//! host (`event`),
//! which runs the handlers with Pi 1.5.2's own `ExtensionRunner` and answers with the composed
//! result, the actions the handlers took (`ctx.abort()`, `pi.appendEntry`, ...) and the errors
//! they threw. Each loaded extension is one [`RustExtension`], so the registry composes them in
//! load order as Pi's runner does; their decisions are recorded, so a replay needs no Node.

use std::sync::Arc;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde::Deserialize;
use serde_json::json;

use super::host::{response_data, ExtensionHost, Registrations};
use super::mirror::StateMirror;
use crate::extension::{
    HandledHooks, HandlerResult, HookAction, HookContext, HookEvent, HookFuture, HookPayload,
    RustExtension,
};
use crate::tools::user_bash::ChunkCleaner;

/// One loaded extension as `init` names it: its path and the events it has handlers for.
#[derive(Clone, Debug, Deserialize)]
pub struct LoadedExtension {
    pub path: String,
    #[serde(default)]
    pub events: Vec<String>,
}

impl LoadedExtension {
    /// The hook points among its events: what the machine asks it about (an event it does not
    /// handle, `message_update` above all, costs no round trip; those told in the host it is
    /// never asked about).
    fn hooks(&self) -> HandledHooks {
        HandledHooks::of(
            self.events
                .iter()
                .filter_map(|e| serde_json::from_value::<HookEvent>(json!(e)).ok())
                .filter(|e| !TOLD_IN_THE_HOST.contains(e)),
        )
    }
}

/// The events the extension host delivers itself, within the hook point or command whose
/// handler opened a dialog: Pi's runner tells every extension of its dialogs (only where there
/// is a UI, RPC mode), and what their handlers ask for is that answer's.
const TOLD_IN_THE_HOST: [HookEvent; 4] = [
    HookEvent::UiPromptStart,
    HookEvent::UiPromptEnd,
    HookEvent::McpServersChange,
    HookEvent::RegisterMcpServer,
];

/// The events asked before any session exists, outside the machine's hook points:
/// `project_trust`, asked while the run decides whether the project is trusted (`trust.rs`).
const ASKED_BEFORE_THE_SESSION: [&str; 1] = ["project_trust"];

impl LoadedExtension {
    /// The events it handles that this harness does not deliver to extensions yet (those that
    /// are no hook point, nor told in the host, nor asked before the session), in the order
    /// `init` named them.
    pub fn undelivered(&self) -> Vec<&str> {
        self.events
            .iter()
            .filter(|e| serde_json::from_value::<HookEvent>(json!(e)).is_err())
            .filter(|e| !ASKED_BEFORE_THE_SESSION.contains(&e.as_str()))
            .map(String::as_str)
            .collect()
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

/// A handler's error in the host's answer.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct ThrownError {
    pub(super) error: String,
    /// The event whose handler threw (Pi's), and its extension: those told of a dialog
    /// (`ui_prompt_start`, `ui_prompt_end`) are another event's, and maybe another extension's.
    #[serde(default)]
    event: Option<String>,
    #[serde(default)]
    extension_path: Option<String>,
}

impl ThrownError {
    /// The extension and event it is reported at when it is another event's (a dialog's, or
    /// Pi's report of a registered MCP server nothing connects).
    pub(super) fn told(&self) -> Option<(String, HookEvent)> {
        let event = serde_json::from_value::<HookEvent>(json!(self.event.as_deref()?)).ok()?;
        let path = self.extension_path.clone()?;
        TOLD_IN_THE_HOST.contains(&event).then_some((path, event))
    }
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

    fn mirror(&self) -> Option<&StateMirror> {
        Some(&self.state)
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, cx: &'a HookContext) -> HookFuture<'a> {
        Box::pin(async move {
            let (id, mut answers) = {
                // Held until the request is written: the host applies the changes in the
                // order they were worked out.
                let mut mirror = self.state.lock();
                let mut request = json!({
                    "type": "event",
                    "extension": self.index,
                    "payload": payload,
                });
                let (event, told) = mirror.for_event(payload, cx.state())?;
                event.into_request(&mut request);
                let asked = self.host.request(request).map_err(|e| e.to_string())?;
                mirror.sent(told);
                asked
            };
            let mut aborted = false;
            let mut exec = ChunkCleaner::default();
            let answer = loop {
                tokio::select! {
                    message = answers.recv() => match message {
                        Some(message) if message["type"] == "exec.chunk" => {
                            self.stream_exec_chunk(&mut exec, &message);
                        }
                        answer => break answer,
                    },
                    () = cx.signal().cancelled(), if !aborted => {
                        aborted = true;
                        // The event's signal fires; the handlers decide how they end, and
                        // their answer is still awaited.
                        let _ = self.host.send(&json!({"type": "abort", "target": id}));
                    }
                }
            };
            self.host.forget(id);
            let answer = answer.ok_or_else(|| self.host.ended("the event").to_string())?;
            let data = response_data(answer).map_err(|e| e.to_string())?;
            let answer: EventAnswer = serde_json::from_value(data)
                .map_err(|e| format!("the extension host's answer to an event is not Pi's: {e}"))?;
            for action in answer.actions {
                cx.act(action);
            }
            // Every handler that threw is reported; when none left a result, the first error
            // of the event's own handlers is the extension's answer (a `tool_call` gate's error
            // fails the call).
            let mut own = Vec::new();
            for error in answer.errors {
                match error.told() {
                    Some((path, event)) => cx.threw_at(path, event, error.error),
                    None => own.push(error.error),
                }
            }
            let mut errors = own.into_iter();
            let failed = match answer.result {
                None => errors.next(),
                Some(_) => None,
            };
            for error in errors {
                cx.threw(error);
            }
            match failed {
                Some(error) => Err(error),
                None => Ok(answer.result),
            }
        })
    }
}

impl SidecarExtension {
    /// A raw chunk a `user_bash` handler's `exec` gave while it runs, shown at once as Pi
    /// streams it: cleaned, as the front end's `bash_execution_update` (without the command's
    /// id, which the front end knows). The decision still carries every chunk, so a replay shows
    /// the same with no `exec`.
    fn stream_exec_chunk(&self, cleaner: &mut ChunkCleaner, message: &serde_json::Value) {
        let Some(Ok(bytes)) = message["data"].as_str().map(|data| STANDARD.decode(data)) else {
            return;
        };
        let delta = cleaner.append(&bytes);
        if !delta.is_empty() {
            self.host
                .tell_ui(json!({"type": "bash_execution_update", "delta": delta}));
        }
    }
}

/// The extensions of `registrations` that handle a hook point, in load order, each answered by
/// `host` with `state` mirrored into its handlers' getters; then, where a tool has one, what
/// runs the tools' `prepareArguments` shims, and what runs their `prepareLoadout` hooks.
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
        .chain(super::prepare::prepare_arguments_extension(
            registrations,
            host,
        ))
        .chain(super::loadout::prepare_loadout_extension(
            registrations,
            host,
        ))
        .chain(super::route::route_extension(registrations, host, state))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_events_the_harness_delivers_make_the_machine_ask() {
        let loaded = LoadedExtension {
            path: "a.ts".into(),
            events: [
                "message_update",
                "turn_end",
                "user_bash",
                "before_provider_request",
                "provider_stream_event",
                "project_trust",
                "session_start",
                "session_before_switch",
                "session_before_fork",
                "session_before_tree",
                "session_tree",
                "tool_call",
                "ui_prompt_start",
                "ui_prompt_end",
                "some_later_event",
            ]
            .map(String::from)
            .to_vec(),
        };
        assert_eq!(
            loaded.hooks().iter().collect::<Vec<_>>(),
            [
                HookEvent::ToolCall,
                HookEvent::TurnEnd,
                HookEvent::MessageUpdate,
                HookEvent::SessionStart,
                HookEvent::SessionBeforeSwitch,
                HookEvent::SessionBeforeFork,
                HookEvent::SessionBeforeTree,
                HookEvent::SessionTree,
                HookEvent::BeforeProviderRequest,
                HookEvent::UserBash,
                HookEvent::ProviderStreamEvent
            ]
        );
        assert_eq!(loaded.undelivered(), ["some_later_event"]);
    }
}
