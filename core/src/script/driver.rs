//! Runs a scenario against an [`AgentMachine`], playing the model and the tools, and writes what
//! happened as a transcript.

use std::collections::VecDeque;
use std::sync::Arc;

use serde_json::Value;

use super::hooks::{tool, ScriptHooks};
use super::parse::{parse, BlockSpec, Command, Ending, Line, ScriptError, ToolReply};
use super::render;
use super::session::SessionScenario;
use crate::agent::{
    AgentConfig, AgentMachine, CallId, Change, Effect, Input, Patch, Prompt, QueueMode, Step,
    StreamEvent, ToolExecution, ToolOutcome, ToolSpec,
};
use crate::agent_session::{feed, SessionInput};
use crate::event::ToolResult;
use crate::message::{
    AgentMessage, AssistantMessage, ContentBlock, StopReason, TextContent, ThinkingContent,
    ToolCall, Usage, UserMessage,
};
use crate::model::{Model, ThinkingLevel};
use crate::partial_json::parse_streaming_json;

/// The clock of a scenario starts here (ms); `tick` moves it on.
pub const START_TIME: u64 = 1_000;

/// The model scenarios talk to unless configured otherwise.
pub fn mock_model() -> Model {
    Model {
        id: "mock-model".into(),
        name: "Mock Model".into(),
        api: "openai-completions".into(),
        provider: "mock".into(),
        base_url: "http://127.0.0.1/v1".into(),
        input: vec!["text".into()],
        context_window: 128_000,
        max_tokens: 16_384,
        ..Model::default()
    }
}

/// A block of the response being streamed, as the script's provider tracks it.
#[derive(Debug)]
struct OpenBlock {
    kind: BlockKind,
    text: String,
    open: bool,
}

#[derive(Debug, Clone, PartialEq)]
enum BlockKind {
    Text,
    Thinking,
    Tool { id: String, name: String },
}

/// A model call that was asked for and not finished.
#[derive(Debug)]
pub(super) struct OpenCall {
    pub(super) call: CallId,
    head: Option<AssistantMessage>,
    blocks: Vec<OpenBlock>,
}

/// Runs scenarios. Also usable step by step from property tests.
pub struct Driver {
    pub(super) config: AgentConfig,
    pub(super) hooks: ScriptHooks,
    machine: Option<AgentMachine>,
    /// Set by a `session:` line: the session machine drives the loop.
    pub(super) session: Option<SessionScenario>,
    pub(super) now: u64,
    pub(super) model_calls: VecDeque<OpenCall>,
    pub(super) running_tools: Vec<(CallId, String)>,
    next_tool_id: u64,
    pub(super) log: Vec<String>,
    /// Every step's output, in order (for property checks).
    pub steps: Vec<Step>,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver")
            .field("now", &self.now)
            .finish_non_exhaustive()
    }
}

impl Default for Driver {
    fn default() -> Self {
        Driver {
            config: AgentConfig {
                model: mock_model(),
                ..AgentConfig::default()
            },
            hooks: ScriptHooks::default(),
            machine: None,
            session: None,
            now: START_TIME,
            model_calls: VecDeque::new(),
            running_tools: Vec::new(),
            next_tool_id: 1,
            log: Vec::new(),
            steps: Vec::new(),
        }
    }
}

/// Runs `script` from a fresh driver and returns the transcript.
pub fn run(script: &str) -> Result<String, ScriptError> {
    let mut driver = Driver::default();
    for line in parse(script)? {
        driver.line(&line)?;
    }
    driver.finish();
    Ok(driver.log.join("\n") + "\n")
}

impl Driver {
    /// The machine, created from the configuration so far on first use.
    pub fn machine(&mut self) -> &mut AgentMachine {
        let config = &self.config;
        let hooks = &self.hooks;
        self.machine.get_or_insert_with(|| {
            let mut config = config.clone();
            config.hooks = Arc::new(hooks.clone());
            AgentMachine::new(config)
        })
    }

    /// Whether the machine exists and a run is in progress.
    pub fn machine_is_running(&self) -> bool {
        self.machine
            .as_ref()
            .is_some_and(AgentMachine::is_streaming)
    }

    /// Whether a model call waits for an answer.
    pub fn model_waiting(&self) -> bool {
        !self.model_calls.is_empty()
    }

    /// Tool-call ids of the tools running, oldest first.
    pub fn running_tools(&self) -> Vec<String> {
        self.running_tools
            .iter()
            .map(|(_, id)| id.clone())
            .collect()
    }

    /// Runs one parsed line.
    pub fn line(&mut self, line: &Line) -> Result<(), ScriptError> {
        self.log.push(format!("> {}", line.text));
        self.command(&line.command).map_err(|message| ScriptError {
            line: line.number,
            message,
        })
    }

    fn finish(&mut self) {
        if self.session.is_some() {
            return self.finish_session();
        }
        let Some(machine) = &self.machine else { return };
        let roles: Vec<&str> = machine.messages().iter().map(AgentMessage::role).collect();
        self.log.push(format!(
            "= {} | messages [{}] | queued steering={} followUp={}{}",
            machine.describe(),
            roles.join(", "),
            machine.steering_queue().len(),
            machine.follow_up_queue().len(),
            machine
                .error_message()
                .map(|e| format!(" | error {}", serde_json::json!(e)))
                .unwrap_or_default()
        ));
    }

    /// Runs one command.
    pub fn command(&mut self, command: &Command) -> Result<(), String> {
        if self.session.is_some() {
            if let Some(result) = self.session_command(command) {
                return result;
            }
        }
        match command {
            Command::Config(pairs) => {
                for (key, value) in pairs {
                    let change = config_change(key, value)?;
                    if self.machine.is_some() {
                        self.input(Input::Change(change));
                    } else {
                        apply_to_config(&mut self.config, change);
                    }
                }
            }
            Command::Tools(names) => {
                let tools: Vec<ToolSpec> = names.iter().map(|(n, seq)| tool(n, *seq)).collect();
                if self.machine.is_some() {
                    self.input(Input::Change(Change::Tools(tools)));
                } else {
                    self.config.tools = tools;
                }
            }
            Command::Hook(rule) => {
                if self.machine.is_some() {
                    return Err("hooks must be set before the first input".into());
                }
                self.hooks.add(rule)?;
            }
            Command::User(text) => self.input(Input::Prompt(Prompt::text(text.clone()))),
            Command::Prompt(value) => {
                let messages = messages(value)?;
                self.input(Input::Prompt(Prompt::Messages(messages)));
            }
            Command::History(value) => {
                let messages = messages(value)?;
                self.input(Input::Change(Change::Messages(messages)));
            }
            Command::Continue => self.input(Input::Continue),
            Command::Abort => self.input(Input::Abort),
            Command::Reset => self.input(Input::Change(Change::Reset)),
            Command::Tick(ms) => self.now += ms,
            Command::Steer(text) => {
                let message = self.user_message(text);
                self.input(Input::Steer(message));
            }
            Command::FollowUp(text) => {
                let message = self.user_message(text);
                self.input(Input::FollowUp(message));
            }
            Command::Model {
                blocks,
                usage,
                ending,
            } => self.model(blocks, *usage, ending)?,
            Command::Tool { id, reply } => self.tool(id.as_deref(), reply)?,
            Command::Session(pairs) => {
                if self.machine.is_some() {
                    return Err("session: must come before the first input".into());
                }
                self.session = Some(SessionScenario::from_pairs(pairs)?);
            }
            Command::UserQueued { .. }
            | Command::Compact(_)
            | Command::Thinking(_)
            | Command::Navigate { .. }
            | Command::BashResult(_)
            | Command::SetModel { .. } => {
                return Err("needs session mode (a `session:` line first)".into());
            }
            Command::ModelThrows(error) => {
                let open = self
                    .model_calls
                    .pop_front()
                    .ok_or("no model call is waiting")?;
                self.input(Input::ModelFailed {
                    call: open.call,
                    error: error.clone(),
                });
            }
        }
        Ok(())
    }

    fn user_message(&self, text: &str) -> AgentMessage {
        AgentMessage::User(UserMessage::from_text(text, Vec::new(), self.now))
    }

    /// Feeds one input and logs what came out.
    pub fn input(&mut self, input: Input) {
        if self.session.is_some() {
            return self.session_input(SessionInput::Answer(input));
        }
        let now = self.now;
        match feed(self.machine(), now, input) {
            Ok(step) => self.absorb(step),
            Err(refused) => self.log.push(format!("  ! {}", refused.into_error())),
        }
    }

    fn absorb(&mut self, step: Step) {
        for event in &step.events {
            self.log.push(format!("  {}", render::event(event)));
        }
        self.absorb_effects(&step.effects);
        self.steps.push(step);
    }

    /// Logs effects and tracks the calls they open; a cancelled model call is answered at once.
    pub(super) fn absorb_effects(&mut self, effects: &[Effect]) {
        let mut cancelled = Vec::new();
        for effect in effects {
            self.log.push(format!("  -> {}", render::effect(effect)));
            match effect {
                Effect::CallModel { call, .. } => self.model_calls.push_back(OpenCall {
                    call: *call,
                    head: None,
                    blocks: Vec::new(),
                }),
                Effect::RunTool {
                    call, tool_call_id, ..
                } => self.running_tools.push((*call, tool_call_id.clone())),
                Effect::Cancel { call } => cancelled.push(*call),
                // Scripts load no extension, so their machines handle no hook point, and
                // their tools make no nested call.
                Effect::Hook { .. } | Effect::AnswerNested { .. } => {}
            }
        }
        for call in cancelled {
            if self.model_calls.iter().any(|c| c.call == call) {
                self.log.push("  (the provider answers the cancel)".into());
                self.answer_model(
                    call,
                    &[],
                    None,
                    &Ending::Error("Request was aborted".into()),
                    true,
                );
            }
        }
    }

    fn model(
        &mut self,
        blocks: &[BlockSpec],
        usage: Option<(u64, u64)>,
        ending: &Ending,
    ) -> Result<(), String> {
        let call = self
            .model_calls
            .front()
            .map(|c| c.call)
            .ok_or("no model call is waiting")?;
        self.answer_model(call, blocks, usage, ending, false);
        Ok(())
    }

    /// Streams `blocks` for `call` and ends the response as `ending` says.
    fn answer_model(
        &mut self,
        call: CallId,
        blocks: &[BlockSpec],
        usage: Option<(u64, u64)>,
        ending: &Ending,
        aborted: bool,
    ) {
        let Some(position) = self.model_calls.iter().position(|c| c.call == call) else {
            return;
        };
        let mut events = Vec::new();
        let model = match &self.session {
            Some(session) => session.model(&self.config),
            None => self.machine().model().clone(),
        };
        let now = self.now;
        let open = &mut self.model_calls[position];
        let fails_before_start =
            matches!(ending, Ending::Error(_)) && open.head.is_none() && blocks.is_empty();
        if open.head.is_none() && !fails_before_start {
            let head = AssistantMessage {
                api: model.api.clone(),
                provider: model.provider.clone(),
                model: model.id.clone(),
                timestamp: now,
                ..AssistantMessage::default()
            };
            events.push(StreamEvent::Start {
                partial: head.clone(),
            });
            open.head = Some(head);
        }
        for spec in blocks {
            stream_block(open, spec, &mut self.next_tool_id, &mut events);
        }
        if let Some((input, output)) = usage {
            let usage = Usage {
                input,
                output,
                total_tokens: input + output,
                ..Usage::default()
            };
            events.push(StreamEvent::Patch(Patch::Usage(usage.clone())));
            if let Some(head) = &mut open.head {
                head.usage = usage;
            }
        }
        match ending {
            Ending::Open => {}
            Ending::Done { stop } => {
                let has_tools = open
                    .blocks
                    .iter()
                    .any(|b| matches!(b.kind, BlockKind::Tool { .. }));
                let reason = match stop.as_deref() {
                    Some("length") => StopReason::Length,
                    Some("stop") => StopReason::Stop,
                    Some("toolUse") => StopReason::ToolUse,
                    _ if has_tools => StopReason::ToolUse,
                    _ => StopReason::Stop,
                };
                events.push(StreamEvent::Patch(Patch::StopReason(reason)));
                close_blocks(open, &mut events);
                let mut message = final_message(open, &model, now);
                message.stop_reason = reason;
                events.push(StreamEvent::Done { reason, message });
            }
            Ending::Error(text) => {
                let reason = if aborted {
                    StopReason::Aborted
                } else {
                    StopReason::Error
                };
                close_blocks(open, &mut events);
                let mut message = final_message(open, &model, now);
                message.stop_reason = reason;
                message.error_message = Some(if open.head.is_none() && aborted {
                    crate::agent::ABORTED_REQUEST.to_owned()
                } else {
                    text.clone()
                });
                events.push(StreamEvent::Error {
                    reason,
                    error: message,
                });
            }
        }
        if !matches!(ending, Ending::Open) {
            self.model_calls.remove(position);
        }
        for event in events {
            self.input(Input::Model { call, event });
        }
    }

    fn tool(&mut self, id: Option<&str>, reply: &ToolReply) -> Result<(), String> {
        let position = match id {
            Some(id) => self.running_tools.iter().position(|(_, t)| t == id),
            None => (!self.running_tools.is_empty()).then_some(0),
        }
        .ok_or_else(|| format!("no tool call {} is running", id.unwrap_or("")))?;
        let call = self.running_tools[position].0;
        let input = match reply {
            ToolReply::Update(value) => Input::ToolUpdate {
                call,
                partial: tool_result(value)?,
            },
            ToolReply::Ok(value) => {
                self.running_tools.remove(position);
                Input::ToolFinished {
                    call,
                    outcome: ToolOutcome::Ok(tool_result(value)?),
                }
            }
            ToolReply::Error(message) => {
                self.running_tools.remove(position);
                Input::ToolFinished {
                    call,
                    outcome: ToolOutcome::Thrown(message.clone()),
                }
            }
        };
        self.input(input);
        Ok(())
    }
}

fn messages(value: &Value) -> Result<Vec<AgentMessage>, String> {
    match value {
        Value::Array(_) => serde_json::from_value(value.clone()),
        _ => serde_json::from_value(value.clone()).map(|m| vec![m]),
    }
    .map_err(|e| format!("messages: {e}"))
}

fn tool_result(value: &Value) -> Result<ToolResult, String> {
    serde_json::from_value(value.clone()).map_err(|e| format!("tool result: {e}"))
}

fn stream_block(
    open: &mut OpenCall,
    spec: &BlockSpec,
    next_id: &mut u64,
    events: &mut Vec<StreamEvent>,
) {
    let continues = |open: &OpenCall, kind: &BlockKind| {
        open.blocks
            .last()
            .is_some_and(|b| b.open && &b.kind == kind && !matches!(kind, BlockKind::Tool { .. }))
    };
    match spec {
        BlockSpec::Text(deltas) | BlockSpec::Thinking(deltas) => {
            let kind = if matches!(spec, BlockSpec::Text(_)) {
                BlockKind::Text
            } else {
                BlockKind::Thinking
            };
            if !continues(open, &kind) {
                let index = open.blocks.len();
                events.push(match kind {
                    BlockKind::Text => StreamEvent::TextStart {
                        content_index: index,
                        block: TextContent::default(),
                    },
                    _ => StreamEvent::ThinkingStart {
                        content_index: index,
                        block: ThinkingContent::default(),
                    },
                });
                open.blocks.push(OpenBlock {
                    kind: kind.clone(),
                    text: String::new(),
                    open: true,
                });
            }
            let index = open.blocks.len() - 1;
            for delta in deltas {
                open.blocks[index].text.push_str(delta);
                events.push(match kind {
                    BlockKind::Text => StreamEvent::TextDelta {
                        content_index: index,
                        delta: delta.clone(),
                    },
                    _ => StreamEvent::ThinkingDelta {
                        content_index: index,
                        delta: delta.clone(),
                    },
                });
            }
        }
        BlockSpec::Tool {
            name,
            id,
            args,
            chunks,
        } => {
            let id = id.clone().unwrap_or_else(|| {
                let id = format!("call_{next_id}");
                *next_id += 1;
                id
            });
            let index = open.blocks.len();
            events.push(StreamEvent::ToolCallStart {
                content_index: index,
                block: ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: Value::Object(Default::default()),
                    ..ToolCall::default()
                },
            });
            let pieces = if chunks.is_empty() {
                vec![args.clone()]
            } else {
                chunks.clone()
            };
            for piece in pieces {
                events.push(StreamEvent::ToolCallDelta {
                    content_index: index,
                    delta: piece,
                });
            }
            open.blocks.push(OpenBlock {
                kind: BlockKind::Tool {
                    id,
                    name: name.clone(),
                },
                text: args.clone(),
                open: true,
            });
        }
    }
}

/// Ends every open block in content order, as the OpenAI-compatible decoder does.
fn close_blocks(open: &mut OpenCall, events: &mut Vec<StreamEvent>) {
    for (index, block) in open.blocks.iter_mut().enumerate().filter(|(_, b)| b.open) {
        block.open = false;
        events.push(match &block.kind {
            BlockKind::Text => StreamEvent::TextEnd {
                content_index: index,
                content: block.text.clone(),
            },
            BlockKind::Thinking => StreamEvent::ThinkingEnd {
                content_index: index,
                content: block.text.clone(),
            },
            BlockKind::Tool { id, name } => StreamEvent::ToolCallEnd {
                content_index: index,
                tool_call: ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: parse_streaming_json(&block.text),
                    ..ToolCall::default()
                },
            },
        });
    }
}

fn final_message(open: &OpenCall, model: &Model, now: u64) -> AssistantMessage {
    let mut message = open.head.clone().unwrap_or_else(|| AssistantMessage {
        api: model.api.clone(),
        provider: model.provider.clone(),
        model: model.id.clone(),
        timestamp: now,
        ..AssistantMessage::default()
    });
    message.content = open
        .blocks
        .iter()
        .map(|b| match &b.kind {
            BlockKind::Text => ContentBlock::text(b.text.clone()),
            BlockKind::Thinking => ContentBlock::Thinking(ThinkingContent {
                thinking: b.text.clone(),
                ..ThinkingContent::default()
            }),
            BlockKind::Tool { id, name } => ContentBlock::ToolCall(ToolCall {
                id: id.clone(),
                name: name.clone(),
                arguments: parse_streaming_json(&b.text),
                ..ToolCall::default()
            }),
        })
        .collect();
    message
}

fn queue_mode(value: &str) -> Result<QueueMode, String> {
    match value {
        "all" => Ok(QueueMode::All),
        "one-at-a-time" => Ok(QueueMode::OneAtATime),
        other => Err(format!("unknown queue mode {other:?}")),
    }
}

fn config_change(key: &str, value: &str) -> Result<Change, String> {
    Ok(match key {
        "toolExecution" => Change::ToolExecution(match value {
            "parallel" => ToolExecution::Parallel,
            "sequential" => ToolExecution::Sequential,
            other => return Err(format!("unknown tool execution {other:?}")),
        }),
        "steeringMode" => Change::SteeringMode(queue_mode(value)?),
        "followUpMode" => Change::FollowUpMode(queue_mode(value)?),
        "thinking" => Change::ThinkingLevel(
            serde_json::from_value::<ThinkingLevel>(Value::String(value.into()))
                .map_err(|e| format!("thinking: {e}"))?,
        ),
        "systemPrompt" => Change::SystemPrompt(value.replace('_', " ")),
        "sessionId" => Change::SessionId(Some(value.to_owned())),
        other => return Err(format!("unknown config key {other:?}")),
    })
}

fn apply_to_config(config: &mut AgentConfig, change: Change) {
    match change {
        Change::ToolExecution(mode) => config.tool_execution = mode,
        Change::SteeringMode(mode) => config.steering_mode = mode,
        Change::FollowUpMode(mode) => config.follow_up_mode = mode,
        Change::ThinkingLevel(level) => config.thinking_level = level,
        Change::SystemPrompt(prompt) => config.system_prompt = prompt,
        Change::SessionId(id) => config.session_id = id,
        _ => {}
    }
}
