//! One line per event or effect, compact enough to read a whole run at a glance and exact
//! enough to pin it in a snapshot.

use crate::agent::Effect;
use crate::event::{AgentEvent, AssistantMessageEvent, ToolResult};
use crate::message::{AgentMessage, ContentBlock, Message, UserContent};
use crate::partial::PartialMessage;

/// A value as compact JSON (what scenario transcripts show for data).
pub fn json(value: &impl serde::Serialize) -> String {
    crate::json::to_string(value).unwrap_or_default()
}

fn quoted(text: &str) -> String {
    json(&text)
}

fn blocks(content: &[ContentBlock]) -> String {
    let parts: Vec<String> = content
        .iter()
        .map(|b| match b {
            ContentBlock::Text(t) => format!("text {}", quoted(&t.text)),
            ContentBlock::Thinking(t) => format!("thinking {}", quoted(&t.thinking)),
            ContentBlock::Image(i) => format!("image {}", i.mime_type),
            ContentBlock::ToolCall(c) => format!("tool {}#{} {}", c.name, c.id, json(&c.arguments)),
        })
        .collect();
    format!("[{}]", parts.join(", "))
}

/// A message in one line: role, content, and the fields that matter for its role.
pub fn message(message: &AgentMessage) -> String {
    match message {
        AgentMessage::User(m) => match &m.content {
            UserContent::Text(text) => format!("user {}", quoted(text)),
            UserContent::Blocks(content) => format!("user {}", blocks(content)),
        },
        AgentMessage::Assistant(m) => {
            let mut line = format!("assistant {} {}", blocks(&m.content), json(&m.stop_reason));
            if let Some(error) = &m.error_message {
                line.push_str(&format!(" error={}", quoted(error)));
            }
            line
        }
        AgentMessage::ToolResult(m) => format!(
            "toolResult {}#{} {}{}",
            m.tool_name,
            m.tool_call_id,
            blocks(&m.content),
            if m.is_error { " isError" } else { "" }
        ),
        other => format!("{} {}", other.role(), json(other)),
    }
}

fn partial(snapshot: &PartialMessage) -> String {
    blocks(&snapshot.to_message().content)
}

fn result(result: &ToolResult) -> String {
    let mut line = blocks(&result.content);
    if let Some(details) = &result.details {
        line.push_str(&format!(" details={}", json(details)));
    }
    if result.terminate == Some(true) {
        line.push_str(" terminate");
    }
    line
}

/// An event in one line.
pub fn event(event: &AgentEvent) -> String {
    match event {
        AgentEvent::AgentStart => "agent_start".into(),
        AgentEvent::AgentEnd {
            messages,
            will_retry,
        } => {
            let roles: Vec<&str> = messages.iter().map(AgentMessage::role).collect();
            let retry = will_retry.map_or(String::new(), |r| format!(" willRetry={r}"));
            format!("agent_end [{}]{retry}", roles.join(", "))
        }
        AgentEvent::TurnStart => "turn_start".into(),
        AgentEvent::TurnEnd {
            message: m,
            tool_results,
        } => {
            let ids: Vec<String> = tool_results
                .iter()
                .map(|r| match r {
                    AgentMessage::ToolResult(r) => r.tool_call_id.clone(),
                    other => other.role().to_owned(),
                })
                .collect();
            format!("turn_end {} results=[{}]", message(m), ids.join(", "))
        }
        AgentEvent::MessageStart { message: m } => format!("message_start {}", message(m)),
        AgentEvent::MessageEnd { message: m } => format!("message_end {}", message(m)),
        AgentEvent::MessageUpdate {
            assistant_message_event: e,
            message: snapshot,
            ..
        } => {
            let what = match e {
                AssistantMessageEvent::TextStart { content_index, .. } => {
                    format!("text_start {content_index}")
                }
                AssistantMessageEvent::TextDelta {
                    content_index,
                    delta,
                    ..
                } => {
                    format!("text_delta {content_index} {}", quoted(delta))
                }
                AssistantMessageEvent::TextEnd { content_index, .. } => {
                    format!("text_end {content_index}")
                }
                AssistantMessageEvent::ThinkingStart { content_index, .. } => {
                    format!("thinking_start {content_index}")
                }
                AssistantMessageEvent::ThinkingDelta {
                    content_index,
                    delta,
                    ..
                } => {
                    format!("thinking_delta {content_index} {}", quoted(delta))
                }
                AssistantMessageEvent::ThinkingEnd { content_index, .. } => {
                    format!("thinking_end {content_index}")
                }
                AssistantMessageEvent::ToolCallStart { content_index, .. } => {
                    format!("toolcall_start {content_index}")
                }
                AssistantMessageEvent::ToolCallDelta {
                    content_index,
                    delta,
                    ..
                } => {
                    format!("toolcall_delta {content_index} {}", quoted(delta))
                }
                AssistantMessageEvent::ToolCallEnd { content_index, .. } => {
                    format!("toolcall_end {content_index}")
                }
                AssistantMessageEvent::Start { .. } => "start".into(),
                AssistantMessageEvent::Done { .. } => "done".into(),
                AssistantMessageEvent::Error { .. } => "error".into(),
            };
            format!("message_update {what} => {}", partial(snapshot))
        }
        AgentEvent::ToolExecutionStart {
            tool_call_id,
            tool_name,
            args,
            ..
        } => format!(
            "tool_execution_start {tool_name}#{tool_call_id} {}",
            json(args)
        ),
        AgentEvent::ToolExecutionUpdate {
            tool_call_id,
            tool_name,
            partial_result,
            ..
        } => format!(
            "tool_execution_update {tool_name}#{tool_call_id} {}",
            result(partial_result)
        ),
        AgentEvent::ToolExecutionEnd {
            tool_call_id,
            tool_name,
            result: r,
            is_error,
            ..
        } => format!(
            "tool_execution_end {tool_name}#{tool_call_id} {}{}",
            result(r),
            if *is_error { " isError" } else { "" }
        ),
    }
}

fn llm_message(m: &Message) -> String {
    message(&AgentMessage::from(m.clone()))
}

/// An effect in one line (a model call lists what the model is sent).
pub fn effect(effect: &Effect) -> String {
    match effect {
        Effect::CallModel { call, request } => {
            let messages: Vec<String> = request.messages.iter().map(llm_message).collect();
            let tools: Vec<&str> = request.tools.iter().map(|t| t.name.as_str()).collect();
            let mut line = format!("call_model {call} tools=[{}]", tools.join(", "));
            if !request.system_prompt.is_empty() {
                line.push_str(&format!(" system={}", quoted(&request.system_prompt)));
            }
            if let Some(level) = request.reasoning {
                line.push_str(&format!(" reasoning={}", level.as_str()));
            }
            if let Some(session) = &request.session_id {
                line.push_str(&format!(" session={session}"));
            }
            for m in messages {
                line.push_str(&format!("\n      | {m}"));
            }
            line
        }
        Effect::RunTool {
            call,
            tool_call_id,
            tool,
            args,
            ..
        } => format!("run_tool {call} {tool}#{tool_call_id} {}", json(args)),
        Effect::Cancel { call } => format!("cancel {call}"),
        Effect::Hook { call, payload, .. } => format!("hook {call} {}", json(payload)),
        Effect::AnswerNested {
            call,
            tool_call_id,
            outcome,
        } => format!("answer_nested {call} {tool_call_id} {}", json(outcome)),
    }
}
