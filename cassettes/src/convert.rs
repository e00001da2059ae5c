//! Between the cassette format's own types and the harness's: a line holds what it records of
//! the harness (a run's configuration, models, messages, tool results, a call's options) as
//! JSON, written from the harness's types when recording and read back into them when a
//! cassette is loaded. A value that does not read back makes the cassette unusable, with an
//! error naming the line and the field.

use pi_core::agent::hook_state::HookState;
use pi_core::agent::hooks::HookPayload;
use pi_core::agent::{CallId, Effect, Input, ToolOutcome};
use pi_core::agent_session::{ExtensionEntry, NavigateRequest, SessionInput, StreamingBehavior};
use pi_effects::run_config::tool_spec;
use pi_providers::transport::TransportError;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::format::{Behavior, RecordedEffect, RecordedInput, RecordedTransportError};

/// A value of a line that does not read as the harness's type: the field and why.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("field `{field}`: {message}")]
pub struct Unconvertible {
    pub field: String,
    pub message: String,
}

/// Why an input cannot be written to a cassette: a model event (its bytes are recorded
/// instead), a timer (its own line) or an agent-level input no session receives.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a {0} input has no cassette form")]
pub struct NotRecordable(pub String);

/// `value` as the JSON a line holds. The harness's types are plain data with string keys,
/// which always serialize; `null` stands for one that would not.
pub fn to_json<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// A name-like value (a thinking level, a queue mode) as the string a line holds.
pub fn to_name<T: Serialize>(value: &T) -> String {
    match to_json(value) {
        Value::String(name) => name,
        other => other.to_string(),
    }
}

/// The JSON of `field` read as the harness's `T`.
pub fn from_json<T: DeserializeOwned>(value: &Value, field: &str) -> Result<T, Unconvertible> {
    T::deserialize(value).map_err(|e| Unconvertible {
        field: field.to_owned(),
        message: e.to_string(),
    })
}

/// The string of `field` read as the harness's name-like `T`.
pub fn from_name<T: DeserializeOwned>(name: &str, field: &str) -> Result<T, Unconvertible> {
    from_json(&Value::String(name.to_owned()), field)
}

/// Every JSON value of `field` read as the harness's `T`.
fn from_json_list<T: DeserializeOwned>(
    values: &[Value],
    field: &str,
) -> Result<Vec<T>, Unconvertible> {
    values
        .iter()
        .enumerate()
        .map(|(i, v)| from_json(v, &format!("{field}[{i}]")))
        .collect()
}

/// The transport error a recorded end stands for.
pub fn transport_error(error: &RecordedTransportError) -> TransportError {
    match error.clone() {
        RecordedTransportError::Connect(m) => TransportError::Connect(m),
        RecordedTransportError::Timeout => TransportError::Timeout,
        RecordedTransportError::Body(m) => TransportError::Body(m),
        RecordedTransportError::Invalid(m) => TransportError::Invalid(m),
    }
}

/// A transport error as a cassette records it.
pub fn recorded_transport_error(error: &TransportError) -> RecordedTransportError {
    match error {
        TransportError::Connect(m) => RecordedTransportError::Connect(m.clone()),
        TransportError::Timeout => RecordedTransportError::Timeout,
        TransportError::Body(m) => RecordedTransportError::Body(m.clone()),
        TransportError::Invalid(m) => RecordedTransportError::Invalid(m.clone()),
    }
}

/// An effect as a cassette records it (a model call's request is in its own lines).
pub fn recorded_effect(effect: &Effect) -> RecordedEffect {
    match effect {
        Effect::CallModel { call, request } => RecordedEffect::CallModel {
            call: call.0,
            provider: request.model.provider.clone(),
            model: request.model.id.clone(),
        },
        Effect::RunTool {
            call, tool, args, ..
        } => RecordedEffect::RunTool {
            call: call.0,
            tool: tool.clone(),
            args: args.clone(),
        },
        Effect::Cancel { call } => RecordedEffect::Cancel { call: call.0 },
        Effect::Hook {
            call,
            payload,
            state,
        } => RecordedEffect::Hook {
            call: call.0,
            payload: recorded_payload(payload),
            state: state
                .as_deref()
                .map(|state| state_digest(state, |json| json.to_owned())),
        },
        Effect::AnswerNested {
            call,
            tool_call_id,
            outcome,
        } => RecordedEffect::AnswerNested {
            call: call.0,
            tool_call_id: tool_call_id.clone(),
            outcome: outcome.clone(),
        },
    }
}

/// The digest a hook effect's line holds of the state its handlers' getters read: the state's
/// JSON as `scrub` leaves it (a recording replaces its secrets, as a replay, fed the
/// placeholders, computes it), hashed, 16 hex digits.
pub fn state_digest(state: &HookState, scrub: impl Fn(&str) -> String) -> String {
    let json = serde_json::to_string(state).unwrap_or_default();
    let mut digest = crate::sha256_hex(scrub(&json).as_bytes());
    digest.truncate(16);
    digest
}

/// A hook point's payload as its effect line records it: without what the model's stream gave
/// it (see [`without_streamed`]).
fn recorded_payload(payload: &HookPayload) -> Value {
    let mut json = to_json(payload);
    without_streamed(&mut json);
    json
}

/// A recorded hook point's `payload` without what the model's stream gave it, which the
/// model's own lines give: a `message_update`'s message so far (a response of n updates would
/// otherwise write its text n times over) and its event's text (`delta`, `content`, the tool
/// call; its `type` and `contentIndex` stay), and a `provider_stream_event`'s `data`. Written as
/// each event comes, these would hold the pieces of a key the model streams, which the chunk
/// lines hold back until the key is whole and then replace. A replay reads older cassettes'
/// effect lines through it too, so that theirs compare alike.
pub fn without_streamed(payload: &mut Value) {
    let Value::Object(fields) = payload else {
        return;
    };
    match fields.get("type").and_then(Value::as_str) {
        Some("message_update") => {
            fields.remove("message");
            if let Some(Value::Object(event)) = fields.get_mut("assistantMessageEvent") {
                event.retain(|name, _| name == "type" || name == "contentIndex");
            }
        }
        Some("provider_stream_event") => {
            fields.remove("data");
        }
        _ => {}
    }
}

/// A session input as a cassette records it.
pub fn recorded_input(input: &SessionInput) -> Result<RecordedInput, NotRecordable> {
    let images = |images: &[pi_core::message::ImageContent]| images.iter().map(to_json).collect();
    Ok(match input {
        SessionInput::Prompt {
            text,
            images: list,
            streaming_behavior,
        } => RecordedInput::Prompt {
            text: text.clone(),
            images: images(list),
            streaming_behavior: streaming_behavior.map(|b| match b {
                StreamingBehavior::Steer => Behavior::Steer,
                StreamingBehavior::FollowUp => Behavior::FollowUp,
            }),
        },
        SessionInput::Steer { text, images: list } => RecordedInput::Steer {
            text: text.clone(),
            images: images(list),
        },
        SessionInput::FollowUp { text, images: list } => RecordedInput::FollowUp {
            text: text.clone(),
            images: images(list),
        },
        SessionInput::PromptWithMessages {
            text,
            images: list,
            messages,
        } => RecordedInput::PromptWithMessages {
            text: text.clone(),
            images: images(list),
            messages: messages.iter().map(to_json).collect(),
        },
        SessionInput::Extension(ExtensionEntry::Custom { custom_type, data }) => {
            RecordedInput::Custom {
                custom_type: custom_type.clone(),
                data: data.clone(),
            }
        }
        SessionInput::Extension(ExtensionEntry::Message(message)) => RecordedInput::CustomMessage {
            message: to_json(message),
        },
        SessionInput::Extension(ExtensionEntry::Label { target_id, label }) => {
            RecordedInput::Label {
                target_id: target_id.clone(),
                label: label.clone(),
            }
        }
        SessionInput::Abort => RecordedInput::Abort,
        SessionInput::SetModel(model) => RecordedInput::SetModel {
            model: to_json(model),
        },
        SessionInput::CycleModel(model) => RecordedInput::CycleModel {
            model: to_json(model),
        },
        SessionInput::SetScopedModel(model, level) => RecordedInput::SetScopedModel {
            model: to_json(model),
            thinking_level: to_name(level),
        },
        SessionInput::SetThinkingLevel(level) => RecordedInput::SetThinkingLevel {
            level: to_name(level),
        },
        SessionInput::Compact {
            custom_instructions,
        } => RecordedInput::Compact {
            custom_instructions: custom_instructions.clone(),
        },
        SessionInput::Navigate(request) => RecordedInput::Navigate {
            target_id: request.target_id.clone(),
            summarize: request.summarize,
            custom_instructions: request.custom_instructions.clone(),
            replace_instructions: request.replace_instructions,
            label: request.label.clone(),
        },
        SessionInput::BashResult(message) => RecordedInput::BashResult {
            message: to_json(message),
        },
        SessionInput::SetSteeringMode(mode) => RecordedInput::SetSteeringMode {
            mode: to_name(mode),
        },
        SessionInput::SetFollowUpMode(mode) => RecordedInput::SetFollowUpMode {
            mode: to_name(mode),
        },
        SessionInput::SetAutoCompaction(enabled) => {
            RecordedInput::SetAutoCompaction { enabled: *enabled }
        }
        SessionInput::SetAutoRetry(enabled) => RecordedInput::SetAutoRetry { enabled: *enabled },
        SessionInput::AbortRetry => RecordedInput::AbortRetry,
        SessionInput::ClearQueue => RecordedInput::ClearQueue,
        SessionInput::Start => RecordedInput::Start,
        SessionInput::Shutdown => RecordedInput::Shutdown,
        SessionInput::AskReplace(payload) => RecordedInput::AskReplace {
            event: to_json(payload),
        },
        SessionInput::UserBash {
            command,
            exclude_from_context,
        } => RecordedInput::AskUserBash {
            command: command.clone(),
            exclude_from_context: *exclude_from_context,
        },
        SessionInput::AbortUserBash => RecordedInput::AbortUserBash,
        SessionInput::Leave {
            reason,
            target_session_file,
        } => RecordedInput::Leave {
            reason: reason.clone(),
            target_session_file: target_session_file.clone(),
        },
        SessionInput::Replaced {
            reason,
            previous_session_file,
            loaded,
        } => RecordedInput::Replaced {
            reason: reason.clone(),
            previous_session_file: previous_session_file.clone(),
            loaded: loaded.as_deref().map(to_json),
        },
        SessionInput::Reloaded(loaded) => RecordedInput::Reloaded {
            loaded: loaded.as_deref().map(to_json),
        },
        SessionInput::ResumeCommand { name, run, answer } => RecordedInput::ResumeCommand {
            name: name.clone(),
            run: *run,
            answer: to_json(answer),
        },
        SessionInput::SetSessionName(name) => RecordedInput::SetSessionName { name: name.clone() },
        SessionInput::SetSystem { sections, tools } => RecordedInput::SetSystem {
            sections: sections.clone(),
            tools: tools.iter().map(|tool| tool.name.clone()).collect(),
        },
        SessionInput::Answer(Input::ModelFailed { call, error }) => RecordedInput::ModelFailed {
            call: call.0,
            error: error.clone(),
        },
        SessionInput::Answer(Input::ToolUpdate { call, partial }) => RecordedInput::ToolUpdate {
            call: call.0,
            partial: to_json(partial),
        },
        SessionInput::Answer(Input::ToolActed { call, action }) => RecordedInput::ToolActed {
            call: call.0,
            action: to_json(action),
        },
        SessionInput::Answer(Input::ToolNested { call, name, args }) => RecordedInput::ToolNested {
            call: call.0,
            name: name.clone(),
            args: args.clone(),
        },
        SessionInput::Answer(Input::ToolFinished { call, outcome }) => {
            let (result, thrown) = match outcome {
                ToolOutcome::Ok(result) => (Some(to_json(result)), None),
                ToolOutcome::Thrown(error) => (None, Some(error.clone())),
            };
            RecordedInput::ToolFinished {
                call: call.0,
                result,
                thrown,
            }
        }
        SessionInput::Answer(Input::HookDecided { call, outcome }) => RecordedInput::HookDecided {
            call: call.0,
            outcome: to_json(outcome),
        },
        SessionInput::Answer(other) => return Err(NotRecordable(other.name())),
        SessionInput::Wake => return Err(NotRecordable("wake".into())),
    })
}

/// The session input a recorded input stands for. A tool result with neither a result nor an
/// error is read as an empty result.
pub fn session_input(input: &RecordedInput) -> Result<SessionInput, Unconvertible> {
    let images = |list: &[Value]| from_json_list(list, "input.images");
    Ok(match input {
        RecordedInput::Prompt {
            text,
            images: list,
            streaming_behavior,
        } => SessionInput::Prompt {
            text: text.clone(),
            images: images(list)?,
            streaming_behavior: streaming_behavior.map(|b| match b {
                Behavior::Steer => StreamingBehavior::Steer,
                Behavior::FollowUp => StreamingBehavior::FollowUp,
            }),
        },
        RecordedInput::Steer { text, images: list } => SessionInput::Steer {
            text: text.clone(),
            images: images(list)?,
        },
        RecordedInput::FollowUp { text, images: list } => SessionInput::FollowUp {
            text: text.clone(),
            images: images(list)?,
        },
        RecordedInput::PromptWithMessages {
            text,
            images: list,
            messages,
        } => SessionInput::PromptWithMessages {
            text: text.clone(),
            images: images(list)?,
            messages: from_json_list(messages, "input.messages")?,
        },
        RecordedInput::Custom { custom_type, data } => {
            SessionInput::Extension(ExtensionEntry::Custom {
                custom_type: custom_type.clone(),
                data: data.clone(),
            })
        }
        RecordedInput::CustomMessage { message } => SessionInput::Extension(
            ExtensionEntry::Message(from_json(message, "input.message")?),
        ),
        RecordedInput::Label { target_id, label } => {
            SessionInput::Extension(ExtensionEntry::Label {
                target_id: target_id.clone(),
                label: label.clone(),
            })
        }
        RecordedInput::Abort => SessionInput::Abort,
        RecordedInput::SetModel { model } => {
            SessionInput::SetModel(from_json(model, "input.model")?)
        }
        RecordedInput::CycleModel { model } => {
            SessionInput::CycleModel(from_json(model, "input.model")?)
        }
        RecordedInput::SetScopedModel {
            model,
            thinking_level,
        } => SessionInput::SetScopedModel(
            from_json(model, "input.model")?,
            from_name(thinking_level, "input.thinking_level")?,
        ),
        RecordedInput::SetThinkingLevel { level } => {
            SessionInput::SetThinkingLevel(from_name(level, "input.level")?)
        }
        RecordedInput::Compact {
            custom_instructions,
        } => SessionInput::Compact {
            custom_instructions: custom_instructions.clone(),
        },
        RecordedInput::Navigate {
            target_id,
            summarize,
            custom_instructions,
            replace_instructions,
            label,
        } => SessionInput::Navigate(NavigateRequest {
            target_id: target_id.clone(),
            summarize: *summarize,
            custom_instructions: custom_instructions.clone(),
            replace_instructions: *replace_instructions,
            label: label.clone(),
        }),
        RecordedInput::BashResult { message } => {
            SessionInput::BashResult(from_json(message, "input.message")?)
        }
        RecordedInput::SetSteeringMode { mode } => {
            SessionInput::SetSteeringMode(from_name(mode, "input.mode")?)
        }
        RecordedInput::SetFollowUpMode { mode } => {
            SessionInput::SetFollowUpMode(from_name(mode, "input.mode")?)
        }
        RecordedInput::SetAutoCompaction { enabled } => SessionInput::SetAutoCompaction(*enabled),
        RecordedInput::SetAutoRetry { enabled } => SessionInput::SetAutoRetry(*enabled),
        RecordedInput::AbortRetry => SessionInput::AbortRetry,
        RecordedInput::ClearQueue => SessionInput::ClearQueue,
        RecordedInput::Start => SessionInput::Start,
        RecordedInput::Shutdown => SessionInput::Shutdown,
        RecordedInput::AskReplace { event } => {
            SessionInput::AskReplace(from_json(event, "input.event")?)
        }
        RecordedInput::AskUserBash {
            command,
            exclude_from_context,
        } => SessionInput::UserBash {
            command: command.clone(),
            exclude_from_context: *exclude_from_context,
        },
        RecordedInput::AbortUserBash => SessionInput::AbortUserBash,
        RecordedInput::Leave {
            reason,
            target_session_file,
        } => SessionInput::Leave {
            reason: reason.clone(),
            target_session_file: target_session_file.clone(),
        },
        RecordedInput::Replaced {
            reason,
            previous_session_file,
            loaded,
        } => SessionInput::Replaced {
            reason: reason.clone(),
            previous_session_file: previous_session_file.clone(),
            loaded: match loaded {
                Some(loaded) => Some(Box::new(from_json(loaded, "input.loaded")?)),
                None => None,
            },
        },
        RecordedInput::Reloaded { loaded } => SessionInput::Reloaded(match loaded {
            Some(loaded) => Some(Box::new(from_json(loaded, "input.loaded")?)),
            None => None,
        }),
        RecordedInput::ResumeCommand { name, run, answer } => SessionInput::ResumeCommand {
            name: name.clone(),
            run: *run,
            answer: from_json(answer, "input.answer")?,
        },
        RecordedInput::SetSessionName { name } => SessionInput::SetSessionName(name.clone()),
        RecordedInput::SetSystem { sections, tools } => SessionInput::SetSystem {
            sections: sections.clone(),
            tools: tools.iter().map(|name| tool_spec(name)).collect(),
        },
        RecordedInput::ModelFailed { call, error } => SessionInput::Answer(Input::ModelFailed {
            call: CallId(*call),
            error: error.clone(),
        }),
        RecordedInput::ToolUpdate { call, partial } => SessionInput::Answer(Input::ToolUpdate {
            call: CallId(*call),
            partial: from_json(partial, "input.partial")?,
        }),
        RecordedInput::ToolActed { call, action } => SessionInput::Answer(Input::ToolActed {
            call: CallId(*call),
            action: from_json(action, "input.action")?,
        }),
        RecordedInput::ToolNested { call, name, args } => SessionInput::Answer(Input::ToolNested {
            call: CallId(*call),
            name: name.clone(),
            args: args.clone(),
        }),
        RecordedInput::ToolFinished {
            call,
            result,
            thrown,
        } => {
            let outcome = match (result, thrown) {
                (_, Some(error)) => ToolOutcome::Thrown(error.clone()),
                (Some(result), None) => ToolOutcome::Ok(from_json(result, "input.result")?),
                (None, None) => ToolOutcome::Ok(Default::default()),
            };
            SessionInput::Answer(Input::ToolFinished {
                call: CallId(*call),
                outcome,
            })
        }
        RecordedInput::HookDecided { call, outcome } => SessionInput::Answer(Input::HookDecided {
            call: CallId(*call),
            outcome: from_json(outcome, "input.outcome")?,
        }),
    })
}

/// `input.to_input()`: the session input a recorded input stands for (see [`session_input`]).
pub trait ToInput {
    /// The session input this line stands for.
    fn to_input(&self) -> Result<SessionInput, Unconvertible>;
}

impl ToInput for RecordedInput {
    fn to_input(&self) -> Result<SessionInput, Unconvertible> {
        session_input(self)
    }
}
