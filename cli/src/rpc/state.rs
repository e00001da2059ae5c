//! What the read-only commands report (`get_state`, `get_session_stats`, `get_fork_messages`,
//! `get_last_assistant_text`), computed from the session as Pi's `AgentSession` getters do.

use pi_core::agent::QueueMode;
use pi_core::agent_session::SessionMachine;
use pi_core::compaction::tokens::{calculate_context_tokens, estimate_context_tokens};
use pi_core::message::{AgentMessage, ContentBlock, StopReason};
use pi_core::session::entry::SessionEntry;
use pi_effects::agent_session::AgentSession;
use pi_effects::driver::Interpreter;
use serde_json::{json, Map, Value};

/// Pi's queue-mode spelling.
pub fn queue_mode_name(mode: QueueMode) -> &'static str {
    match mode {
        QueueMode::OneAtATime => "one-at-a-time",
        QueueMode::All => "all",
    }
}

/// `get_state`'s data (`RpcSessionState`); absent values are left out, as `JSON.stringify` does.
pub fn session_state<I: Interpreter>(session: &AgentSession<I>) -> Value {
    let machine = session.machine();
    let agent = machine.agent();
    let (steering, follow_up) = machine.queued_texts();
    let mut state = Map::new();
    state.insert("model".into(), to_value(agent.model()));
    state.insert(
        "thinkingLevel".into(),
        json!(agent.thinking_level().as_str()),
    );
    state.insert("isStreaming".into(), json!(agent.is_streaming()));
    state.insert("isCompacting".into(), json!(machine.is_compacting()));
    state.insert(
        "steeringMode".into(),
        json!(queue_mode_name(machine.steering_mode())),
    );
    state.insert(
        "followUpMode".into(),
        json!(queue_mode_name(machine.follow_up_mode())),
    );
    if let Some(file) = session.file() {
        state.insert("sessionFile".into(), json!(file.display().to_string()));
    }
    state.insert("sessionId".into(), json!(machine.tree().id()));
    if let Some(name) = machine.session_name() {
        state.insert("sessionName".into(), json!(name));
    }
    state.insert(
        "autoCompactionEnabled".into(),
        json!(machine.auto_compaction_enabled()),
    );
    state.insert("messageCount".into(), json!(agent.messages().len()));
    state.insert(
        "pendingMessageCount".into(),
        json!(steering.len() + follow_up.len()),
    );
    Value::Object(state)
}

/// `get_session_stats`'s data (Pi 1.5's `getSessionStats`): counted over every entry of the
/// file, so that what a retry omitted from the context or a compaction summarised away is still
/// counted, with the tokens of `usage` entries (spent outside the conversation) added.
pub fn session_stats<I: Interpreter>(session: &AgentSession<I>) -> Value {
    let machine = session.machine();
    let entries = machine.tree().entries();
    let messages: Vec<&AgentMessage> = entries.iter().filter_map(SessionEntry::message).collect();
    let count = |role: &str| messages.iter().filter(|m| m.role() == role).count();
    let (mut tool_calls, mut input, mut output, mut cache_read, mut cache_write) = (0, 0, 0, 0, 0);
    let mut cost = 0.0;
    let mut add = |usage: &pi_core::message::Usage| {
        input += usage.input;
        output += usage.output;
        cache_read += usage.cache_read;
        cache_write += usage.cache_write;
        cost += usage.cost.total;
    };
    for entry in entries {
        match entry {
            SessionEntry::Usage(spent) => add(&spent.usage),
            SessionEntry::Message(m) => {
                if let AgentMessage::Assistant(assistant) = &m.message {
                    tool_calls += assistant
                        .content
                        .iter()
                        .filter(|b| matches!(b, ContentBlock::ToolCall(_)))
                        .count();
                    add(&assistant.usage);
                }
            }
            _ => {}
        }
    }
    let mut stats = Map::new();
    if let Some(file) = session.file() {
        stats.insert("sessionFile".into(), json!(file.display().to_string()));
    }
    stats.insert("sessionId".into(), json!(machine.tree().id()));
    stats.insert("userMessages".into(), json!(count("user")));
    stats.insert("assistantMessages".into(), json!(count("assistant")));
    stats.insert("toolCalls".into(), json!(tool_calls));
    stats.insert("toolResults".into(), json!(count("toolResult")));
    stats.insert("totalMessages".into(), json!(messages.len()));
    stats.insert(
        "tokens".into(),
        json!({
            "input": input,
            "output": output,
            "cacheRead": cache_read,
            "cacheWrite": cache_write,
            "total": input + output + cache_read + cache_write,
        }),
    );
    stats.insert("cost".into(), json!(cost));
    if let Some(usage) = context_usage(machine) {
        stats.insert("contextUsage".into(), usage);
    }
    Value::Object(stats)
}

/// Pi's `getContextUsage`: unknown (`null`s) right after a compaction until a response reports
/// usage again, else the estimate over the agent's messages.
fn context_usage(machine: &SessionMachine) -> Option<Value> {
    let context_window = machine.agent().model().context_window;
    if context_window == 0 {
        return None;
    }
    let branch = machine.tree().branch_path(None);
    let compaction = branch
        .iter()
        .rposition(|e| matches!(e, SessionEntry::Compaction(_)));
    if let Some(index) = compaction {
        let after = branch[index + 1..]
            .iter()
            .rev()
            .find_map(|entry| match entry {
                SessionEntry::Message(m) => match &m.message {
                    AgentMessage::Assistant(a) if !a.stop_reason.ends_run() => Some(a),
                    _ => None,
                },
                _ => None,
            });
        if after.is_none_or(|a| calculate_context_tokens(&a.usage) == 0) {
            return Some(json!({"tokens": null, "contextWindow": context_window, "percent": null}));
        }
    }
    let tokens = estimate_context_tokens(machine.agent().messages()).tokens;
    // Token counts stay far below 2^53, where the conversion is exact.
    #[allow(clippy::cast_precision_loss)]
    let percent = tokens as f64 / context_window as f64 * 100.0;
    Some(json!({"tokens": tokens, "contextWindow": context_window, "percent": percent}))
}

/// `get_fork_messages`: every user message of the file with text, in file order.
pub fn fork_messages(machine: &SessionMachine) -> Value {
    let messages: Vec<Value> = machine
        .tree()
        .entries()
        .iter()
        .filter_map(|entry| match entry {
            SessionEntry::Message(m) => match &m.message {
                AgentMessage::User(user) => {
                    let text = user.content.text();
                    (!text.is_empty()).then(|| json!({"entryId": m.id, "text": text}))
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    json!({ "messages": messages })
}

/// `get_last_assistant_text`: the last answer's text, trimmed; `{}` when there is none (Pi's
/// `{text: undefined}`).
pub fn last_assistant_text(machine: &SessionMachine) -> Value {
    let last = machine
        .agent()
        .messages()
        .iter()
        .rev()
        .find_map(|m| match m {
            AgentMessage::Assistant(a)
                if !(a.stop_reason == StopReason::Aborted && a.content.is_empty()) =>
            {
                Some(a)
            }
            _ => None,
        });
    let text: String = last
        .map(|a| {
            a.content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text(t) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    let text = text.trim();
    if text.is_empty() {
        json!({})
    } else {
        json!({ "text": text })
    }
}

/// A value as JSON (`null` if it cannot be, which Pi's types never are).
pub fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}
