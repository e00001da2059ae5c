//! The machine reproduces the agent events of Pi 1.5.2's reference traces.
//!
//! For each trace, the model's stream events, the tool results, the queued messages and the abort
//! are read back out of Pi's stdout and fed to the machine as inputs; everything the machine emits
//! must then equal Pi's own agent events, in order, field for field. Like the oracle's compare.py,
//! timestamps and durations are not compared, nor the values of `message_update`'s `usage` (Pi
//! serializes it late; ours is exact and is pinned by the scenario snapshots instead). The
//! system message (which this bare machine, without the prompt's sections, does not record) and
//! `agent_end.willRetry` (which the session machine fills in) are checked by the binary's tests.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Tests read fixtures and run cargo; the core's IO ban applies to the library, not to its tests.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::path::Path;

use pi_core::agent::{
    AgentConfig, AgentMachine, CallId, Effect, Input, Prompt, StreamEvent, ToolOutcome,
};
use pi_core::event::ToolResult;
use pi_core::message::{
    AgentMessage, AssistantMessage, ContentBlock, StopReason, TextContent, ThinkingContent,
    ToolCall, UserMessage,
};
use serde_json::Value;

fn trace_lines(name: &str) -> Vec<Value> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/traces-1.5.2")
        .join(name)
        .join("stdout.jsonl");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

const AGENT_EVENTS: &[&str] = &[
    "agent_start",
    "agent_end",
    "turn_start",
    "turn_end",
    "message_start",
    "message_update",
    "message_end",
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
];

/// Drops what is not compared: timestamps, durations, message_update usage, the system
/// message among a run's messages and `willRetry`.
fn normalize(mut event: Value) -> Value {
    fn strip_times(v: &mut Value) {
        match v {
            Value::Object(map) => {
                map.remove("timestamp");
                map.remove("durationMs");
                map.values_mut().for_each(strip_times);
            }
            Value::Array(items) => items.iter_mut().for_each(strip_times),
            _ => {}
        }
    }
    if let Value::Object(map) = &mut event {
        if map["type"] == "message_update" {
            map.remove("usage");
        }
        if map["type"] == "agent_end" {
            map.remove("willRetry");
            if let Some(Value::Array(messages)) = map.get_mut("messages") {
                messages.retain(|m| m["role"] != "system");
            }
        }
    }
    strip_times(&mut event);
    event
}

/// A system message's `message_start`/`_end`, which this machine does not record.
fn is_system(line: &Value) -> bool {
    line["message"]["role"] == "system"
}

struct Replay {
    machine: AgentMachine,
    now: u64,
    emitted: Vec<Value>,
    model_call: Option<CallId>,
    tools: Vec<(CallId, String)>,
}

impl Replay {
    fn feed(&mut self, input: Input) {
        self.now += 1;
        let step = self.machine.step(self.now, input).unwrap();
        for event in &step.events {
            let json = pi_core::json::to_string(event).unwrap();
            self.emitted
                .push(normalize(serde_json::from_str(&json).unwrap()));
        }
        for effect in step.effects {
            match effect {
                Effect::CallModel { call, .. } => self.model_call = Some(call),
                Effect::RunTool {
                    call, tool_call_id, ..
                } => self.tools.push((call, tool_call_id)),
                Effect::Cancel { .. } | Effect::Hook { .. } | Effect::AnswerNested { .. } => {}
            }
        }
    }

    fn stream(&mut self, event: StreamEvent) {
        let call = self.model_call.expect("a model call is open");
        self.feed(Input::Model { call, event });
    }
}

fn user(text: &str) -> AgentMessage {
    AgentMessage::User(UserMessage::from_text(text, Vec::new(), 0))
}

/// The final assistant message of the response whose events start at `from`.
fn final_message(lines: &[Value], from: usize) -> AssistantMessage {
    let end = lines[from..]
        .iter()
        .find(|l| l["type"] == "message_end" && l["message"]["role"] == "assistant")
        .expect("the response ends");
    serde_json::from_value(end["message"].clone()).unwrap()
}

fn replay(name: &str) {
    let lines = trace_lines(name);
    let mut replay = Replay {
        machine: AgentMachine::new(AgentConfig {
            tools: ["bash", "read"]
                .iter()
                .map(|t| pi_core::script::tool(t, false))
                .collect(),
            ..AgentConfig::default()
        }),
        now: 0,
        emitted: Vec::new(),
        model_call: None,
        tools: Vec::new(),
    };
    let (mut steering, mut follow_up) = (0, 0);
    let mut expected = Vec::new();
    let mut awaiting_prompt = false;
    for (i, line) in lines.iter().enumerate() {
        let kind = line["type"].as_str().unwrap_or("");
        if AGENT_EVENTS.contains(&kind) && !is_system(line) {
            expected.push(normalize(line.clone()));
        }
        if kind == "agent_start" {
            awaiting_prompt = true;
        }
        let role = line["message"]["role"].as_str().unwrap_or("");
        match kind {
            "queue_update" => {
                let s = line["steering"].as_array().map_or(0, Vec::len);
                let f = line["followUp"].as_array().map_or(0, Vec::len);
                if s > steering {
                    let text = line["steering"][s - 1].as_str().unwrap();
                    replay.feed(Input::Steer(user(text)));
                }
                if f > follow_up {
                    let text = line["followUp"][f - 1].as_str().unwrap();
                    replay.feed(Input::FollowUp(user(text)));
                }
                (steering, follow_up) = (s, f);
            }
            "message_start" if role == "user" && awaiting_prompt => {
                awaiting_prompt = false;
                let text = line["message"]["content"][0]["text"].as_str().unwrap();
                replay.feed(Input::Prompt(Prompt::text(text)));
            }
            "message_start" if role == "assistant" => {
                let mut head: AssistantMessage =
                    serde_json::from_value(line["message"].clone()).unwrap();
                head.content.clear();
                replay.stream(StreamEvent::Start { partial: head });
            }
            "message_update" => {
                let event = &line["assistantMessageEvent"];
                let index = event["contentIndex"].as_u64().unwrap() as usize;
                let delta = event["delta"].as_str().unwrap_or("").to_owned();
                let last = final_message(&lines, i);
                let aborted = last.stop_reason == StopReason::Aborted;
                let ending = event["type"].as_str().unwrap().ends_with("_end");
                if aborted
                    && ending
                    && !matches!(lines[i - 1]["assistantMessageEvent"]["type"].as_str(), Some(t) if t.ends_with("_end"))
                {
                    replay.feed(Input::Abort);
                }
                let stream = match event["type"].as_str().unwrap() {
                    "text_start" => StreamEvent::TextStart {
                        content_index: index,
                        block: TextContent::default(),
                    },
                    "text_delta" => StreamEvent::TextDelta {
                        content_index: index,
                        delta,
                    },
                    "text_end" => StreamEvent::TextEnd {
                        content_index: index,
                        content: event["content"].as_str().unwrap().to_owned(),
                    },
                    "thinking_start" => StreamEvent::ThinkingStart {
                        content_index: index,
                        block: ThinkingContent::default(),
                    },
                    "thinking_delta" => StreamEvent::ThinkingDelta {
                        content_index: index,
                        delta,
                    },
                    "thinking_end" => StreamEvent::ThinkingEnd {
                        content_index: index,
                        content: event["content"].as_str().unwrap().to_owned(),
                    },
                    "toolcall_start" => {
                        let ContentBlock::ToolCall(call) = &last.content[index] else {
                            panic!("not a tool call")
                        };
                        StreamEvent::ToolCallStart {
                            content_index: index,
                            block: ToolCall {
                                id: call.id.clone(),
                                name: call.name.clone(),
                                arguments: Value::Object(Default::default()),
                                ..ToolCall::default()
                            },
                        }
                    }
                    "toolcall_delta" => StreamEvent::ToolCallDelta {
                        content_index: index,
                        delta,
                    },
                    "toolcall_end" => StreamEvent::ToolCallEnd {
                        content_index: index,
                        tool_call: serde_json::from_value(event["toolCall"].clone()).unwrap(),
                    },
                    other => panic!("unexpected stream event {other}"),
                };
                replay.stream(stream);
            }
            "message_end" if role == "assistant" => {
                let message: AssistantMessage =
                    serde_json::from_value(line["message"].clone()).unwrap();
                let reason = message.stop_reason;
                let event = if reason.ends_run() {
                    StreamEvent::Error {
                        reason,
                        error: message,
                    }
                } else {
                    StreamEvent::Done { reason, message }
                };
                replay.stream(event);
            }
            "tool_execution_update" | "tool_execution_end" => {
                let id = line["toolCallId"].as_str().unwrap();
                let Some(position) = replay.tools.iter().position(|(_, t)| t == id) else {
                    continue;
                };
                let call = replay.tools[position].0;
                if kind == "tool_execution_update" {
                    let partial: ToolResult =
                        serde_json::from_value(line["partialResult"].clone()).unwrap();
                    replay.feed(Input::ToolUpdate { call, partial });
                } else {
                    replay.tools.remove(position);
                    let result: ToolResult =
                        serde_json::from_value(line["result"].clone()).unwrap();
                    let outcome = if line["isError"] == true {
                        let text = result.content.iter().find_map(|b| match b {
                            ContentBlock::Text(t) => Some(t.text.clone()),
                            _ => None,
                        });
                        ToolOutcome::Thrown(text.unwrap_or_default())
                    } else {
                        ToolOutcome::Ok(result)
                    };
                    replay.feed(Input::ToolFinished { call, outcome });
                }
            }
            _ => {}
        }
    }
    assert!(expected.len() > 10, "{name}: too few events in the trace");
    for (n, (ours, theirs)) in replay.emitted.iter().zip(&expected).enumerate() {
        assert_eq!(ours, theirs, "{name}: event {n} differs");
    }
    assert_eq!(
        replay.emitted.len(),
        expected.len(),
        "{name}: event count differs"
    );
}

#[test]
fn a_plain_text() {
    replay("a_plain_text");
}

#[test]
fn b_tool_read() {
    replay("b_tool_read");
}

#[test]
fn c_two_tools() {
    replay("c_two_tools");
}

#[test]
fn e_rpc() {
    replay("e_rpc");
}
