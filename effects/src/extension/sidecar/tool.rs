//! An extension's tool as a [`CustomTool`]: its call is sent to the extension host
//! (`tool.execute`) with the session's state at the call, as a hook point's event carries it
//! (the host runs `execute` with its extension's whole context over it), its `onUpdate`s come
//! back as partial results, what it asks of the session (`pi.appendEntry` ...) as actions the
//! session applies at once, the calls its `ctx.executeTool` makes as nested calls the session
//! runs and answers, and an abort reaches the tool's `AbortSignal`.

use std::sync::Arc;

use serde_json::{json, Value};

use super::host::{response_data, ExtensionHost, Registrations};
use super::mirror::StateMirror;
use crate::custom_tool::{
    CustomTool, CustomToolDefinition, ToolCallContext, ToolFuture, ToolRegistry,
};
use pi_core::agent::hooks::HookAction;
use pi_core::event::ToolResult;

struct ExtensionTool {
    definition: CustomToolDefinition,
    host: Arc<ExtensionHost>,
    state: StateMirror,
}

/// Registers every tool of `registrations` in `registry`, run by `host`; their contexts read
/// the session through `state`, the mirror the host's event handlers share.
pub fn register_tools(
    registry: &mut ToolRegistry,
    registrations: &Registrations,
    host: &Arc<ExtensionHost>,
    state: &StateMirror,
) {
    for definition in &registrations.tools {
        registry.register(Arc::new(ExtensionTool {
            definition: definition.clone(),
            host: Arc::clone(host),
            state: state.clone(),
        }));
    }
}

fn result(value: Value) -> Result<ToolResult, String> {
    serde_json::from_value(value)
        .map_err(|e| format!("the extension's tool result is not Pi's: {e}"))
}

impl CustomTool for ExtensionTool {
    fn definition(&self) -> &CustomToolDefinition {
        &self.definition
    }

    fn reads_session(&self) -> bool {
        true
    }

    fn execute<'a>(&'a self, args: Value, cx: ToolCallContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let mut request = json!({
                "type": "tool.execute",
                "name": self.definition.name,
                "toolCallId": cx.tool_call_id,
                "args": args,
                "cwd": cx.cwd,
            });
            // The mirror is held from working out the change until the request is written, as
            // for an event, so the host applies the changes in the order worked out.
            let (id, mut answers) = {
                let mut mirror = self.state.lock();
                let (state, told) = mirror.for_tool(cx.state.as_deref())?;
                state.into_request(&mut request);
                let asked = self.host.request(request).map_err(|e| e.to_string())?;
                mirror.sent(told);
                asked
            };
            let mut aborted = false;
            // The first action the session could not take: the call's error once it ends.
            let mut refused: Option<String> = None;
            let outcome = loop {
                let message = tokio::select! {
                    message = answers.recv() => message,
                    () = cx.signal.cancelled(), if !aborted => {
                        aborted = true;
                        // The tool decides how it ends; its answer is still awaited.
                        let _ = self.host.send(&json!({"type": "abort", "target": id}));
                        continue;
                    }
                };
                let Some(message) = message else {
                    break Err(self.host.ended("the call").to_string());
                };
                match message["type"].as_str() {
                    Some("tool.update") => {
                        if let Ok(partial) = result(message["partial"].clone()) {
                            cx.update(partial);
                        }
                    }
                    // An action `execute` asked for: the session applies it now, before the
                    // result, as Pi's does.
                    Some("tool.action") => {
                        let acted = serde_json::from_value::<HookAction>(message["action"].clone())
                            .map_err(|e| format!("the extension tool's action is not Pi's: {e}"))
                            .and_then(|action| cx.act(action));
                        if let Err(error) = acted {
                            refused.get_or_insert(error);
                        }
                    }
                    // A nested call (`ctx.executeTool`): the session runs it while this call
                    // waits; its outcome goes back to the host when the session has it.
                    Some("tool.nested") => {
                        let n = message["n"].clone();
                        let name = message["name"].as_str().unwrap_or_default().to_owned();
                        let asked = cx.nest(name, message["args"].clone());
                        let host = Arc::clone(&self.host);
                        tokio::spawn(async move {
                            let answer = match asked {
                                Ok(answered) => match answered.await {
                                    Ok(outcome) => json!({"outcome": outcome}),
                                    Err(_) => {
                                        json!({"error": "the session ended before the nested call"})
                                    }
                                },
                                Err(error) => json!({"error": error}),
                            };
                            let mut request = json!({"type": "tool.nested.answer", "n": n});
                            if let (Some(request), Some(answer)) =
                                (request.as_object_mut(), answer.as_object())
                            {
                                request.extend(answer.clone());
                            }
                            let _ = host.send(&request);
                        });
                    }
                    _ => {
                        break response_data(message)
                            .map_err(|e| e.to_string())
                            .and_then(result)
                    }
                }
            };
            self.host.forget(id);
            match refused {
                Some(error) => Err(error),
                None => outcome,
            }
        })
    }
}
