//! Mid-conversation effort (Pi 1.5.2's `supportsMidConvoEffort`, `insertThinkingLevelMessages`):
//! for the models whose compat says so, the thinking level does not change the request's
//! settings but goes as a trailing `system` message with an `output_config`, and each earlier
//! answer that recorded the effort it was asked for is preceded by one with that effort. The
//! settings (and so a message thread's key) stay the same when the level changes between
//! requests of one conversation, and the answer records the effort (`providerThinkingLevel`).

use pi_core::agent::ModelRequest;
use pi_core::message::AssistantMessage;
use serde_json::{json, Value};

use crate::compat_flag;

/// The betas a model with mid-conversation effort asks for, in this order.
pub(crate) const BETAS: [&str; 2] = [
    "mid-conversation-output-config-2026-07-01",
    "thinking-binding-controls-2026-08-01",
];

/// The effort the request's own settings ask for; the level travels in the messages.
const SETTINGS_EFFORT: &str = "low";

/// The effort of a request whose thinking names none (Pi's `options.effort ?? "high"`).
const DEFAULT_EFFORT: &str = "high";

/// Whether the model takes effort changes mid-conversation (betas, no `temperature`).
pub(crate) fn supported(request: &ModelRequest) -> bool {
    compat_flag(&request.model, "supportsMidConvoEffort", false)
}

/// The effort this request asks for in its messages: none unless the model takes effort
/// changes and thinking is not turned off (`thinking_disabled`); else `adaptive`'s effort, or
/// the default one.
pub(crate) fn active(
    request: &ModelRequest,
    thinking_disabled: bool,
    adaptive: Option<&str>,
) -> Option<String> {
    (supported(request) && !thinking_disabled)
        .then(|| adaptive.unwrap_or(DEFAULT_EFFORT).to_owned())
}

/// The effort `message` recorded, when a request to `provider` sends it again (an Anthropic
/// answer of the same provider, with one of Anthropic's efforts).
pub(crate) fn recorded<'a>(message: &'a AssistantMessage, provider: &str) -> Option<&'a str> {
    let level = message.provider_thinking_level.as_deref()?;
    let effort = matches!(level, "low" | "medium" | "high" | "xhigh" | "max");
    (message.api == "anthropic-messages" && message.provider == provider && effort).then_some(level)
}

/// The thinking settings that stay the same whatever the level.
pub(crate) fn thinking() -> Value {
    json!({
        "type": "adaptive",
        "display": "summarized",
        "block_binding": {"prefix_mismatch_behavior": "drop_block"},
    })
}

/// The `output_config` of the settings.
pub(crate) fn output_config() -> Value {
    json!({"effort": SETTINGS_EFFORT})
}

fn level_message(effort: &str) -> Value {
    json!({"role": "system", "content": [], "output_config": {"effort": effort}})
}

/// `messages` with a level message before each one `levels` names (by index) and one with
/// `active` at the end.
pub(crate) fn with_level_messages(
    messages: Vec<Value>,
    levels: &[(usize, String)],
    active: &str,
) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len() + levels.len() + 1);
    for (index, message) in messages.into_iter().enumerate() {
        if let Some((_, effort)) = levels.iter().find(|(at, _)| *at == index) {
            out.push(level_message(effort));
        }
        out.push(message);
    }
    out.push(level_message(active));
    out
}
