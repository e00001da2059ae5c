//! The loop's invariants, checked online as a run goes: feed a [`Checker`] every input the
//! machine takes, every event it emits and every effect it asks for, in that order, then call
//! [`Checker::finish`] once the session is idle. Each broken invariant is a [`Violation`]
//! naming what broke and where. It knows nothing of cassettes: a driver of one's own (scripted
//! tools, other hooks) can feed it too.
//!
//! The request check is also a function of its own, for a conversation as it is sent:
//!
//! ```
//! use pi_chaos::check_pairing;
//! use pi_core::message::Message;
//!
//! // What a compaction that kept a result but summarized its call away would send.
//! let sent: Vec<Message> = serde_json::from_str(
//!     r#"[{"role":"user","content":"Go on","timestamp":1},
//!         {"role":"toolResult","toolCallId":"call_1","toolName":"read",
//!          "content":[{"type":"text","text":"stale"}],"isError":false,"timestamp":2}]"#,
//! )?;
//! let error = check_pairing(&sent).unwrap_err();
//! assert_eq!(error, "message 1: tool result call_1 follows no call of that id");
//! # Ok::<(), serde_json::Error>(())
//! ```

use std::collections::{BTreeSet, HashSet};
use std::fmt;

use pi_core::agent::{Effect, Input};
use pi_core::agent_session::retry::RetrySettings;
use pi_core::agent_session::SessionInput;
use pi_core::event::{AgentEvent, CompactionReason, Event, SessionEvent};
use pi_core::message::{AgentMessage, Message, StopReason};
use pi_providers::transform::transform_messages;

/// Which invariant broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Invariant {
    /// Every tool call is answered exactly once, before the next model call.
    ToolAnsweredOnce,
    /// In every request sent, each tool result follows its tool call, and no call is left
    /// without a result.
    RequestPairing,
    /// Runs, turns, messages, tool executions and compactions open and close in pairs.
    Balanced,
    /// Automatic retries stay within the settings.
    RetriesBounded,
    /// The machine never panics and never refuses an answer (a contract error).
    NoPanicNoContractError,
    /// The session file loads, and its context is the machine's.
    SessionFile,
    /// The run ends: the session comes back to idle.
    Settles,
    /// An unperturbed replay is byte-exact (the recorded effects, requests and outputs).
    ByteExact,
}

impl fmt::Display for Invariant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Invariant::ToolAnsweredOnce => "tool call answered exactly once",
            Invariant::RequestPairing => "tool results paired in requests",
            Invariant::Balanced => "runs, turns and messages balanced",
            Invariant::RetriesBounded => "retries bounded",
            Invariant::NoPanicNoContractError => "no panic, no contract error",
            Invariant::SessionFile => "session file loads with the machine's context",
            Invariant::Settles => "the run settles",
            Invariant::ByteExact => "unperturbed replay byte-exact",
        })
    }
}

/// A broken invariant.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{invariant}: {detail}")]
pub struct Violation {
    pub invariant: Invariant,
    /// What happened, with ids and the step.
    pub detail: String,
}

impl Violation {
    pub fn new(invariant: Invariant, detail: impl Into<String>) -> Self {
        Violation {
            invariant,
            detail: detail.into(),
        }
    }
}

/// Checks the invariants over one session's inputs, events and effects (see the module doc).
#[derive(Debug)]
pub struct Checker {
    retry: RetrySettings,
    /// Inputs taken so far (for messages).
    step: usize,
    /// Tool executions asked for and not yet answered, by call.
    running_tools: BTreeSet<u64>,
    /// Tool calls of finished assistant messages without a result message yet.
    unanswered: BTreeSet<String>,
    /// Results already given, by tool call id (a second is a violation).
    answered: HashSet<String>,
    agents: u32,
    turns: u32,
    message_open: bool,
    executing: BTreeSet<String>,
    compacting: u32,
    violations: Vec<Violation>,
}

impl Checker {
    /// A checker for a session with these retry settings.
    pub fn new(retry: RetrySettings) -> Self {
        Checker {
            retry,
            step: 0,
            running_tools: BTreeSet::new(),
            unanswered: BTreeSet::new(),
            answered: HashSet::new(),
            agents: 0,
            turns: 0,
            message_open: false,
            executing: BTreeSet::new(),
            compacting: 0,
            violations: Vec::new(),
        }
    }

    fn violate(&mut self, invariant: Invariant, detail: String) {
        let detail = format!("{detail} (input {})", self.step);
        self.violations.push(Violation::new(invariant, detail));
    }

    /// An input the machine is about to take.
    pub fn on_input(&mut self, input: &SessionInput) {
        self.step += 1;
        if let SessionInput::Answer(Input::ToolFinished { call, .. }) = input {
            if !self.running_tools.remove(&call.0) {
                self.violate(
                    Invariant::ToolAnsweredOnce,
                    format!("tool call #{} answered twice or never asked", call.0),
                );
            }
        }
    }

    /// An effect the machine asked for.
    pub fn on_effect(&mut self, effect: &Effect) {
        match effect {
            Effect::RunTool { call, .. } => {
                self.running_tools.insert(call.0);
            }
            Effect::CallModel { call, request } => {
                if let Some(running) = self.running_tools.first() {
                    let detail = format!(
                        "model call #{} asked while tool call #{running} runs",
                        call.0
                    );
                    self.violate(Invariant::ToolAnsweredOnce, detail);
                }
                if let Some(id) = self.unanswered.first() {
                    let detail = format!(
                        "model call #{} asked before tool call {id} has its result",
                        call.0
                    );
                    self.violate(Invariant::ToolAnsweredOnce, detail);
                }
                // What is sent: the conversation after pi-ai's transformation (errored turns
                // dropped, missing results supplied).
                let sent = transform_messages(
                    &request.messages,
                    &request.model,
                    &|id, _| id.to_owned(),
                    0,
                );
                if let Err(why) = check_pairing(sent.iter().map(|m| &**m)) {
                    self.violate(
                        Invariant::RequestPairing,
                        format!("request of model call #{}: {why}", call.0),
                    );
                }
            }
            Effect::Cancel { .. } | Effect::Hook { .. } | Effect::AnswerNested { .. } => {}
        }
    }

    /// An event the machine emitted.
    pub fn on_event(&mut self, event: &Event) {
        match event {
            Event::Agent(event) => self.on_agent_event(event),
            Event::Session(SessionEvent::AutoRetryStart {
                attempt,
                max_attempts,
                ..
            }) => {
                if !self.retry.enabled
                    || *attempt > self.retry.max_retries
                    || *max_attempts != self.retry.max_retries
                {
                    let detail = format!(
                        "retry {attempt} of {max_attempts} with settings {:?}",
                        self.retry
                    );
                    self.violate(Invariant::RetriesBounded, detail);
                }
            }
            Event::Session(SessionEvent::CompactionStart { reason }) => {
                self.compacting += 1;
                if *reason == CompactionReason::Manual {
                    // Pi's `compact()` stops listening to the agent before aborting its run: the
                    // run's remaining events (its `agent_end` too) never reach the session's
                    // listeners, nor its last messages the session.
                    self.agents = 0;
                    self.turns = 0;
                    self.message_open = false;
                    self.executing.clear();
                    self.unanswered.clear();
                }
            }
            Event::Session(SessionEvent::CompactionEnd { .. }) => {
                if self.compacting == 0 {
                    self.violate(Invariant::Balanced, "compaction_end without start".into());
                } else {
                    self.compacting -= 1;
                }
            }
            Event::Session(_) => {}
        }
    }

    fn on_agent_event(&mut self, event: &AgentEvent) {
        let broken = |what: &str, this: &mut Self| {
            this.violate(Invariant::Balanced, what.to_owned());
        };
        match event {
            AgentEvent::AgentStart => {
                if self.agents > 0 {
                    broken("agent_start inside a run", self);
                }
                self.agents += 1;
            }
            AgentEvent::AgentEnd { .. } => {
                if self.agents == 0 || self.turns > 0 || self.message_open {
                    broken(
                        "agent_end outside a run or with a turn or message open",
                        self,
                    );
                }
                self.agents = self.agents.saturating_sub(1);
            }
            AgentEvent::TurnStart => {
                if self.agents == 0 || self.turns > 0 {
                    broken("turn_start outside a run or inside a turn", self);
                }
                self.turns += 1;
            }
            AgentEvent::TurnEnd { .. } => {
                if self.turns == 0 || self.message_open {
                    broken("turn_end outside a turn or with a message open", self);
                }
                self.turns = self.turns.saturating_sub(1);
            }
            AgentEvent::MessageStart { .. } => {
                if self.message_open {
                    broken("message_start inside a message", self);
                }
                self.message_open = true;
            }
            AgentEvent::MessageUpdate { .. } => {
                if !self.message_open {
                    broken("message_update outside a message", self);
                }
            }
            AgentEvent::MessageEnd { message } => {
                if !self.message_open {
                    broken("message_end outside a message", self);
                }
                self.message_open = false;
                self.on_message(message);
            }
            AgentEvent::ToolExecutionStart { tool_call_id, .. } => {
                if !self.executing.insert(tool_call_id.clone()) {
                    broken("tool_execution_start twice", self);
                }
            }
            AgentEvent::ToolExecutionUpdate { tool_call_id, .. } => {
                if !self.executing.contains(tool_call_id) {
                    broken("tool_execution_update outside its execution", self);
                }
            }
            AgentEvent::ToolExecutionEnd { tool_call_id, .. } => {
                // Pi ends a call that never started (an unknown tool, bad arguments) at once.
                self.executing.remove(tool_call_id);
            }
        }
    }

    fn on_message(&mut self, message: &AgentMessage) {
        match message {
            AgentMessage::Assistant(a)
                if !matches!(a.stop_reason, StopReason::Error | StopReason::Aborted) =>
            {
                for call in a.tool_calls() {
                    self.unanswered.insert(call.id.clone());
                }
            }
            AgentMessage::ToolResult(r) => {
                if !self.answered.insert(r.tool_call_id.clone()) {
                    let detail = format!("tool call {} has a second result", r.tool_call_id);
                    self.violate(Invariant::ToolAnsweredOnce, detail);
                }
                self.unanswered.remove(&r.tool_call_id);
            }
            _ => {}
        }
    }

    /// Records a violation found outside the stream (a contract error, a session file).
    pub fn record(&mut self, violation: Violation) {
        self.violations.push(violation);
    }

    /// The checks of an idle session: everything opened is closed. Returns every violation
    /// found during the run, in order.
    pub fn finish(mut self) -> Vec<Violation> {
        if self.agents > 0 || self.turns > 0 || self.message_open || self.compacting > 0 {
            let detail = format!(
                "idle with {} run(s), {} turn(s), message open: {}, {} compaction(s) open",
                self.agents, self.turns, self.message_open, self.compacting
            );
            self.violate(Invariant::Balanced, detail);
        }
        if let Some(id) = self.executing.first().cloned() {
            self.violate(
                Invariant::Balanced,
                format!("idle with tool execution {id} open"),
            );
        }
        if let Some(call) = self.running_tools.first().copied() {
            self.violate(
                Invariant::ToolAnsweredOnce,
                format!("idle with tool call #{call} unanswered"),
            );
        }
        self.violations
    }
}

/// Whether, in `messages` as sent, each tool result follows its call in the latest assistant
/// message and each call of that message has exactly one result before the conversation goes
/// on. The error names the first offending tool call id.
pub fn check_pairing<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Result<(), String> {
    let mut pending: Vec<String> = Vec::new();
    let mut answered: HashSet<String> = HashSet::new();
    let close = |pending: &mut Vec<String>, answered: &mut HashSet<String>| {
        let missing = pending.iter().find(|id| !answered.contains(*id)).cloned();
        pending.clear();
        answered.clear();
        match missing {
            Some(id) => Err(format!("tool call {id} has no result")),
            None => Ok(()),
        }
    };
    for (i, message) in messages.into_iter().enumerate() {
        match message {
            Message::Assistant(a) => {
                close(&mut pending, &mut answered)?;
                pending = a.tool_calls().map(|c| c.id.clone()).collect();
            }
            Message::User(_) => close(&mut pending, &mut answered)?,
            Message::ToolResult(r) => {
                if !pending.contains(&r.tool_call_id) {
                    return Err(format!(
                        "message {i}: tool result {} follows no call of that id",
                        r.tool_call_id
                    ));
                }
                if !answered.insert(r.tool_call_id.clone()) {
                    return Err(format!(
                        "message {i}: a second result for tool call {}",
                        r.tool_call_id
                    ));
                }
            }
        }
    }
    close(&mut pending, &mut answered)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_core::agent::{CallId, ModelRequest, ToolOutcome};
    use pi_core::event::ToolResult;
    use pi_core::message::{
        AssistantMessage, ContentBlock, ToolCall, ToolResultMessage, UserMessage,
    };
    use serde_json::json;

    fn assistant(calls: &[&str]) -> AssistantMessage {
        AssistantMessage {
            content: calls
                .iter()
                .map(|id| {
                    ContentBlock::ToolCall(ToolCall {
                        id: (*id).into(),
                        name: "read".into(),
                        arguments: json!({}),
                        ..ToolCall::default()
                    })
                })
                .collect(),
            stop_reason: StopReason::ToolUse,
            ..AssistantMessage::default()
        }
    }

    fn result(id: &str) -> ToolResultMessage {
        ToolResultMessage {
            tool_call_id: id.into(),
            tool_name: "read".into(),
            content: vec![ContentBlock::text("ok")],
            details: None,
            usage: None,
            is_error: false,
            duration_ms: None,
            timestamp: 0,
            extra: Default::default(),
        }
    }

    fn user() -> Message {
        Message::User(UserMessage::from_text("hi", Vec::new(), 0))
    }

    #[test]
    fn pairing_accepts_calls_with_their_results() {
        let messages = [
            user(),
            Message::Assistant(assistant(&["a", "b"])),
            Message::ToolResult(result("b")),
            Message::ToolResult(result("a")),
            Message::Assistant(assistant(&[])),
        ];
        assert_eq!(check_pairing(&messages), Ok(()));
    }

    #[test]
    fn pairing_refuses_an_orphaned_result() {
        // The compaction bug: the call was summarized away, its result kept.
        let messages = [user(), Message::ToolResult(result("a")), user()];
        assert!(matches!(check_pairing(&messages), Err(e) if e.contains("follows no call")));
    }

    #[test]
    fn pairing_refuses_a_missing_and_a_doubled_result() {
        let missing = [user(), Message::Assistant(assistant(&["a"])), user()];
        assert!(matches!(check_pairing(&missing), Err(e) if e.contains("has no result")));
        let doubled = [
            Message::Assistant(assistant(&["a"])),
            Message::ToolResult(result("a")),
            Message::ToolResult(result("a")),
        ];
        assert!(matches!(check_pairing(&doubled), Err(e) if e.contains("second result")));
    }

    fn call_model(call: u64, messages: Vec<Message>) -> Effect {
        Effect::CallModel {
            call: CallId(call),
            request: ModelRequest {
                model: pi_core::model::Model::default(),
                system_prompt: String::new(),
                messages: messages.into(),
                tools: Vec::new(),
                reasoning: None,
                session_id: None,
                max_tokens: None,
                thread: None,
                session_diagnostics: Default::default(),
                system_messages: Default::default(),
                max_retries: None,
                provider_hooked: None,
            },
        }
    }

    fn finished(call: u64) -> SessionInput {
        SessionInput::Answer(Input::ToolFinished {
            call: CallId(call),
            outcome: ToolOutcome::Ok(ToolResult::default()),
        })
    }

    fn run_tool(call: u64) -> Effect {
        Effect::RunTool {
            call: CallId(call),
            tool_call_id: format!("t{call}"),
            tool: "read".into(),
            args: json!({}),
            search: None,
            state: None,
        }
    }

    #[test]
    fn a_model_call_while_a_tool_runs_is_caught() {
        let mut checker = Checker::new(RetrySettings::default());
        checker.on_effect(&run_tool(2));
        checker.on_effect(&call_model(3, vec![user()]));
        let found = checker.finish();
        assert!(found
            .iter()
            .all(|v| v.invariant == Invariant::ToolAnsweredOnce));
        assert_eq!(found.len(), 2, "{found:?}");
    }

    #[test]
    fn a_second_answer_is_caught() {
        let mut checker = Checker::new(RetrySettings::default());
        checker.on_effect(&run_tool(2));
        checker.on_input(&finished(2));
        assert!(checker.violations.is_empty());
        checker.on_input(&finished(2));
        assert_eq!(checker.finish()[0].invariant, Invariant::ToolAnsweredOnce);
    }

    #[test]
    fn an_orphan_in_a_request_is_caught() {
        let mut checker = Checker::new(RetrySettings::default());
        checker.on_effect(&call_model(
            1,
            vec![user(), Message::ToolResult(result("x"))],
        ));
        assert_eq!(checker.finish()[0].invariant, Invariant::RequestPairing);
    }

    #[test]
    fn unbalanced_events_are_caught() {
        let mut checker = Checker::new(RetrySettings::default());
        checker.on_event(&Event::Agent(AgentEvent::AgentStart));
        checker.on_event(&Event::Agent(AgentEvent::TurnStart));
        checker.on_event(&Event::Agent(AgentEvent::AgentEnd {
            messages: Vec::new(),
            will_retry: None,
        }));
        let found = checker.finish();
        assert!(!found.is_empty());
        assert!(found.iter().all(|v| v.invariant == Invariant::Balanced));
    }

    #[test]
    fn a_balanced_run_passes() {
        let mut checker = Checker::new(RetrySettings::default());
        for event in [
            AgentEvent::AgentStart,
            AgentEvent::TurnStart,
            AgentEvent::MessageStart {
                message: AgentMessage::Assistant(assistant(&[])),
            },
            AgentEvent::MessageEnd {
                message: AgentMessage::Assistant(assistant(&[])),
            },
            AgentEvent::TurnEnd {
                message: AgentMessage::Assistant(assistant(&[])),
                tool_results: Vec::new(),
            },
            AgentEvent::AgentEnd {
                messages: Vec::new(),
                will_retry: None,
            },
        ] {
            checker.on_event(&Event::Agent(event));
        }
        assert_eq!(checker.finish(), Vec::new());
    }

    #[test]
    fn retries_beyond_the_settings_are_caught() {
        let mut checker = Checker::new(RetrySettings::default());
        let retry = |attempt| {
            Event::Session(SessionEvent::AutoRetryStart {
                attempt,
                max_attempts: 3,
                delay_ms: 2000,
                error_message: "overloaded".into(),
            })
        };
        checker.on_event(&retry(3));
        assert!(checker.violations.is_empty());
        checker.on_event(&retry(4));
        assert_eq!(checker.finish()[0].invariant, Invariant::RetriesBounded);
    }
}
