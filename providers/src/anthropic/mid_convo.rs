//! Pi 1.5.2's mid-conversation system messages on the Messages API
//! (`compat.supportsMidConvoSystemMessages`, pi-ai's `resolveTranscript` keeping them): the
//! first system message of the transcript is the request's `system` (and, with
//! `supportsMidConvoToolChanges`, its tools the request's `tools`, beside a deferred
//! placeholder); each later one goes as a `system` message before the next answer, or last,
//! holding its rendered update and its tool changes as `tool_removal`/`tool_addition` blocks.
//! Without the compat the request sends the folded prompt and tools, as every provider does.

use pi_core::agent::system::{tool_definitions, update_text};
use pi_core::agent::{ModelRequest, ToolDefinition};
use pi_core::message::{Message, StopReason, SystemMessage};
use serde_json::{json, Value};

use crate::compat_flag;

/// The beta a request whose tools change inline asks for.
pub(crate) const INLINE_TOOLS_BETA: &str = "inline-tools-2026-09-15";

/// The tool Pi 1.5.2 declares after the initial ones when tools change inline.
pub(crate) fn deferred_placeholder() -> Value {
    json!({
        "name": "__pi_deferred_placeholder__",
        "description": "Reserved placeholder. Never available. Never call this.",
        "input_schema": {"type": "object", "properties": {}, "required": []},
        "defer_loading": true,
    })
}

/// The transcript's system messages as a request of a model with the compat sends them.
pub(crate) struct Transcript<'a> {
    /// The system message heading the conversation: the request's `system`.
    pub initial: Option<&'a SystemMessage>,
    /// Each later one, with how many answers the request keeps before it (it goes before the
    /// next answer that converts to something).
    pub updates: Vec<(usize, &'a SystemMessage)>,
    /// Whether tool changes go inline (`supportsMidConvoToolChanges` and initial tools).
    pub inline_tools: bool,
}

/// The request's transcript when its model keeps system messages in it; `None` sends the
/// folded prompt and tools.
pub(crate) fn transcript(request: &ModelRequest) -> Option<Transcript<'_>> {
    let model = &request.model;
    if !compat_flag(model, "supportsMidConvoSystemMessages", false)
        || request.system_messages.is_empty()
    {
        return None;
    }
    let mut placed = request.system_messages.iter().peekable();
    let initial = placed.next_if(|p| p.at == 0).map(|p| &p.message);
    let updates = placed
        .map(|p| {
            let before = &request.messages[..p.at.min(request.messages.len())];
            (answers_kept(before), &p.message)
        })
        .collect();
    let inline_tools = compat_flag(model, "supportsMidConvoToolChanges", false)
        && initial
            .and_then(|i| i.tools_added.as_ref())
            .is_some_and(|tools| !tools.is_empty());
    Some(Transcript {
        initial,
        updates,
        inline_tools,
    })
}

/// How many of `messages`' answers the request keeps (Pi drops failed and aborted ones).
fn answers_kept(messages: &[Message]) -> usize {
    messages
        .iter()
        .filter(|m| {
            matches!(m, Message::Assistant(a)
                if !matches!(a.stop_reason, StopReason::Error | StopReason::Aborted))
        })
        .count()
}

/// How a request whose tools change inline converts added tools and names a removed one.
pub(crate) type InlineTools<'a> = (
    &'a dyn Fn(&[ToolDefinition]) -> Value,
    &'a dyn Fn(&str) -> String,
);

/// A later system message as the `system` message the request sends, `None` when it holds
/// nothing to send. With `inline_tools`, `convert` converts its added tools, and each removed
/// tool not added again goes as a `tool_removal` named by `name`.
pub(crate) fn update_message(
    message: &SystemMessage,
    inline_tools: Option<InlineTools<'_>>,
) -> Option<Value> {
    let mut blocks = Vec::new();
    let text = update_text(message);
    if !text.is_empty() {
        blocks.push(json!({"type": "text", "text": text}));
    }
    if let Some((convert, name)) = inline_tools {
        let added = message.tools_added.as_deref().unwrap_or_default();
        let redefined = |removed: &str| added.iter().any(|tool| tool["name"] == removed);
        for removed in message.tools_removed.iter().flatten() {
            let removed = removed["name"].as_str().unwrap_or_default();
            if !redefined(removed) {
                blocks.push(json!({"type": "tool_removal",
                    "tool": {"type": "tool_reference", "name": name(removed)}}));
            }
        }
        if let Value::Array(definitions) = convert(&tool_definitions(added)) {
            for definition in definitions {
                blocks.push(json!({"type": "tool_addition",
                    "tool": {"type": "tool_definition", "definition": definition}}));
            }
        }
    }
    (!blocks.is_empty()).then(|| json!({"role": "system", "content": blocks}))
}
