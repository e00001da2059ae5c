//! One batch of tool calls: preparation, scheduling (parallel or sequential) and finalisation, as
//! pi-agent-core 0.73.1 runs them.
//!
//! Each call is first prepared (tool lookup, `prepare_arguments`, schema validation,
//! `before_tool_call`, then the extensions' `tool_call` gate when one is registered: the batch
//! waits for its decision, one call at a time as Pi awaits it); a call that fails preparation
//! gets its result at once. Parallel batches
//! prepare every call in order, then run the prepared ones together: `tool_execution_end` comes as
//! each finishes, the toolResult messages all at the end in call order. Sequential batches run each
//! call to its result message before the next call starts. The calls of an answer cut at the
//! output limit are not run: each gets its error result in turn (Pi 1.5).

use serde_json::Value;

use crate::event::{AgentEvent, ToolResult};
use crate::message::{AgentMessage, AssistantMessage, StopReason, ToolCall, ToolResultMessage};
use crate::validate::messages::invalid_arguments;
use crate::validate::{validate_tool_arguments, validate_undefined_tool_arguments};

use super::config::{AfterToolCall, AgentHooks, BeforeToolCall, Block, ToolExecution, ToolSpec};
use super::contract::{CallId, ToolOutcome};
use super::hooks::{
    HandledHooks, HookDecision, HookEvent, HookPayload, PreparedArguments, ToolCallVerdict,
};
use super::nested::{Caller, NestedCalls};

/// Pi's result for a call whose run was aborted while it was being prepared (its gate
/// decided after the abort).
pub const OPERATION_ABORTED: &str = "Operation aborted";

/// Where one call of the batch stands.
#[derive(Clone, Debug)]
enum Slot {
    /// Not looked at yet (sequential batches only).
    Waiting,
    /// Prepared with these validated arguments, not started (parallel batches, between passes).
    Prepared { args: Value },
    /// Waiting for its tool's `prepareArguments` shim, asked as `call` once the machine named
    /// it.
    Shimming { call: Option<CallId> },
    /// Waiting for the extensions' `tool_call` decision, asked as `call` once the machine named
    /// it.
    Gating { call: Option<CallId> },
    /// Executed, waiting for the extensions' `tool_result` decision (asked as `call`).
    Transforming {
        call: Option<CallId>,
        result: ToolResult,
        is_error: bool,
        duration_ms: u64,
    },
    /// Running as this effect since `started_at`.
    Running {
        call: CallId,
        args: Value,
        started_at: u64,
    },
    /// Has its result; `duration_ms` when it ran (Pi 1.5's `durationMs`).
    Finished {
        result: ToolResult,
        is_error: bool,
        duration_ms: Option<u64>,
    },
}

/// A tool batch in progress.
#[derive(Debug)]
pub struct ToolBatch {
    /// Index of the assistant message in the transcript.
    pub assistant_index: usize,
    calls: Vec<ToolCall>,
    slots: Vec<Slot>,
    sequential: bool,
    /// The call being worked on: in sequential batches to its result, in parallel ones through
    /// its preparation.
    cursor: usize,
    /// Parallel batches: the prepared calls were started.
    launched: bool,
    /// Result messages emitted so far, in call order.
    emitted: Vec<ToolResultMessage>,
    /// The answer was cut at the output limit: no call runs, each gets [`NOT_EXECUTED`].
    truncated: bool,
    /// The calls the running tools make (`ctx.executeTool`).
    pub nested: NestedCalls,
}

/// Pi 1.5's result for each tool call of an answer cut at the output limit (`length`), whose
/// arguments may be cut too (`failToolCallsFromTruncatedMessage`); `{name}` is the tool's.
pub const NOT_EXECUTED: &str = "Tool call \"{name}\" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments.";

/// What the batch needs from the machine while it advances.
pub struct BatchContext<'a> {
    pub tools: &'a [ToolSpec],
    pub hooks: &'a dyn AgentHooks,
    /// The extension hook points with a handler.
    pub handled: &'a HandledHooks,
    /// The run was aborted.
    pub aborted: bool,
    pub assistant: &'a AssistantMessage,
    /// The loop's context: the transcript up to and including the assistant message.
    pub context: &'a [AgentMessage],
    pub now: u64,
}

/// What the batch wants the machine to do.
#[derive(Debug, Default)]
pub struct BatchOutput {
    pub events: Vec<AgentEvent>,
    /// Prepared calls to start: (call index, validated args).
    pub start: Vec<(usize, Value)>,
    /// A call whose `tool_call` gate to ask: (call index, Pi's event).
    pub gate: Option<(usize, HookPayload)>,
    /// The result messages of the whole batch once it is complete, in call order.
    pub done: Option<Vec<ToolResultMessage>>,
    /// Calls whose model arguments their shim changed in place: (call index, the arguments
    /// now), for the transcript's assistant message.
    pub rewritten: Vec<(usize, Value)>,
}

impl ToolBatch {
    /// A batch for the tool calls of `assistant`; `sequential` if the loop or any called tool asks.
    pub fn new(
        assistant_index: usize,
        assistant: &AssistantMessage,
        tools: &[ToolSpec],
        mode: ToolExecution,
    ) -> Self {
        let calls: Vec<ToolCall> = assistant.tool_calls().cloned().collect();
        let truncated = assistant.stop_reason == StopReason::Length;
        let sequential = truncated
            || mode == ToolExecution::Sequential
            || calls.iter().any(|c| {
                tools
                    .iter()
                    .find(|t| t.name == c.name)
                    .is_some_and(|t| t.execution_mode == Some(ToolExecution::Sequential))
            });
        ToolBatch {
            assistant_index,
            slots: vec![Slot::Waiting; calls.len()],
            calls,
            sequential,
            cursor: 0,
            launched: false,
            emitted: Vec::new(),
            truncated,
            nested: NestedCalls::default(),
        }
    }

    /// Runs everything that needs no answer from outside: preparation, immediate results, and
    /// (when nothing is left running) the batch's completion.
    pub fn advance(&mut self, cx: &BatchContext<'_>) -> BatchOutput {
        let mut out = BatchOutput::default();
        if self.sequential {
            self.advance_sequential(cx, &mut out);
        } else {
            self.advance_parallel(cx, &mut out);
        }
        out
    }

    fn advance_sequential(&mut self, cx: &BatchContext<'_>, out: &mut BatchOutput) {
        while self.cursor < self.calls.len() {
            let i = self.cursor;
            match &self.slots[i] {
                Slot::Waiting => {
                    out.events.push(self.start_event(i));
                    let prepared = match self.truncated {
                        true => Err(ToolResult::error(
                            NOT_EXECUTED.replace("{name}", &self.calls[i].name),
                        )),
                        false => prepare(cx, &self.calls[i]),
                    };
                    if self.prepared(i, prepared, cx, out) {
                        return;
                    }
                }
                Slot::Prepared { .. }
                | Slot::Running { .. }
                | Slot::Shimming { .. }
                | Slot::Gating { .. }
                | Slot::Transforming { .. } => return,
                Slot::Finished { .. } if self.nested.busy(i) => return,
                Slot::Finished { .. } => {
                    self.emit_result_message(i, cx.now, out);
                    self.cursor += 1;
                }
            }
        }
        out.done = Some(std::mem::take(&mut self.emitted));
    }

    fn advance_parallel(&mut self, cx: &BatchContext<'_>, out: &mut BatchOutput) {
        while self.cursor < self.calls.len() {
            let i = self.cursor;
            match &self.slots[i] {
                Slot::Waiting => {
                    out.events.push(self.start_event(i));
                    let prepared = prepare(cx, &self.calls[i]);
                    if self.prepared(i, prepared, cx, out) {
                        return;
                    }
                }
                Slot::Gating { .. } | Slot::Shimming { .. } => return,
                _ => {}
            }
            self.cursor += 1;
        }
        if !self.launched {
            self.launched = true;
            for (i, slot) in self.slots.iter().enumerate() {
                if let Slot::Prepared { args } = slot {
                    out.start.push((i, args.clone()));
                }
            }
        }
        let all_finished = self
            .slots
            .iter()
            .enumerate()
            .all(|(i, s)| matches!(s, Slot::Finished { .. }) && !self.nested.busy(i));
        if !all_finished {
            return;
        }
        for i in 0..self.calls.len() {
            self.emit_result_message(i, cx.now, out);
        }
        out.done = Some(std::mem::take(&mut self.emitted));
    }

    /// Carries out call `i`'s preparation as far as it went: its shim or its gate asked, or
    /// the call prepared (a sequential batch starts it), or its error result. Whether the
    /// batch now waits for call `i`.
    fn prepared(
        &mut self,
        i: usize,
        prepared: Result<Preparation, ToolResult>,
        cx: &BatchContext<'_>,
        out: &mut BatchOutput,
    ) -> bool {
        match prepared {
            Ok(Preparation::Shim(payload)) => {
                out.gate = Some((i, payload));
                self.slots[i] = Slot::Shimming { call: None };
                true
            }
            Ok(Preparation::Ready(args)) if cx.handled.contains(HookEvent::ToolCall) => {
                self.gate(i, args, out);
                true
            }
            Ok(Preparation::Ready(args)) if self.sequential => {
                self.slots[i] = Slot::Prepared { args: args.clone() };
                out.start.push((i, args));
                true
            }
            Ok(Preparation::Ready(args)) => {
                self.slots[i] = Slot::Prepared { args };
                false
            }
            Err(result) => {
                self.finish(i, result, true, None, out);
                false
            }
        }
    }

    /// Waits for call `i`'s `tool_call` gate, asked with its validated arguments.
    fn gate(&mut self, i: usize, args: Value, out: &mut BatchOutput) {
        let call = &self.calls[i];
        out.gate = Some((
            i,
            HookPayload::ToolCall {
                tool_name: call.name.clone(),
                tool_call_id: call.id.clone(),
                parent_tool_call_id: None,
                input: args,
            },
        ));
        self.slots[i] = Slot::Gating { call: None };
    }

    /// Names the hook point call `index` waits at as asked under `call`.
    pub fn gating(&mut self, index: usize, call: CallId) {
        if let Some(
            Slot::Gating { call: asked }
            | Slot::Shimming { call: asked }
            | Slot::Transforming { call: asked, .. },
        ) = self.slots.get_mut(index)
        {
            *asked = Some(call);
        }
    }

    /// The index of the call waiting at the hook point `call` asked, if `decision` answers
    /// that hook point.
    pub fn gating_index(&self, call: CallId, decision: &HookDecision) -> Option<usize> {
        self.slots.iter().position(|s| match (s, decision) {
            (Slot::Gating { call: Some(c) }, HookDecision::ToolCall(_)) => *c == call,
            (Slot::Shimming { call: Some(c) }, HookDecision::PrepareArguments(_)) => *c == call,
            (Slot::Transforming { call: Some(c), .. }, HookDecision::ToolResult { .. }) => {
                *c == call
            }
            _ => false,
        })
    }

    /// Takes the extensions' decision for call `index`, at its `tool_call` gate or its
    /// `tool_result` transform.
    pub fn decided(
        &mut self,
        index: usize,
        decision: HookDecision,
        cx: &BatchContext<'_>,
    ) -> BatchOutput {
        match decision {
            HookDecision::ToolCall(verdict) => self.gate_decided(index, verdict, cx),
            HookDecision::PrepareArguments(verdict) => self.shim_decided(index, verdict, cx),
            HookDecision::ToolResult {
                content,
                details,
                is_error: error,
            } => {
                let mut out = BatchOutput::default();
                let Some(Slot::Transforming {
                    result,
                    is_error,
                    duration_ms,
                    ..
                }) = self.slots.get(index).cloned()
                else {
                    return out;
                };
                // Pi's `finalizeExecutedToolCall`: each field the handlers set replaces the
                // executed one.
                let result = ToolResult {
                    content: content.unwrap_or(result.content),
                    details: details.or(result.details),
                    ..result
                };
                let is_error = error.unwrap_or(is_error);
                self.finish(index, result, is_error, Some(duration_ms), &mut out);
                let more = self.advance(cx);
                out.events.extend(more.events);
                out.start = more.start;
                out.gate = more.gate;
                out.done = more.done;
                out
            }
            _ => BatchOutput::default(),
        }
    }

    /// Takes what call `index`'s `prepareArguments` shim gave, and prepares the call on from
    /// there (Pi's `prepareToolCall` after `prepareToolCallArguments`).
    fn shim_decided(
        &mut self,
        index: usize,
        verdict: PreparedArguments,
        cx: &BatchContext<'_>,
    ) -> BatchOutput {
        let mut out = BatchOutput::default();
        if !matches!(self.slots.get(index), Some(Slot::Shimming { .. })) {
            return out;
        }
        if let Some(changed) = changed_in_place(&verdict) {
            self.calls[index].arguments = changed.clone();
            out.rewritten.push((index, changed));
        }
        let prepared = prepare_shimmed(cx, &self.calls[index], verdict).map(Preparation::Ready);
        self.prepared(index, prepared, cx, &mut out);
        // The cursor is still on the call: the batch goes on from it (or waits on it).
        let more = self.advance(cx);
        out.events.extend(more.events);
        out.start.extend(more.start);
        out.gate = out.gate.or(more.gate);
        out.done = more.done;
        out
    }

    /// Takes the extensions' `tool_call` decision for call `index` (Pi's `prepareToolCall` after
    /// `beforeToolCall`: an abort meanwhile wins, then a block, else the call is prepared with
    /// the arguments as the handlers left them).
    fn gate_decided(
        &mut self,
        index: usize,
        verdict: ToolCallVerdict,
        cx: &BatchContext<'_>,
    ) -> BatchOutput {
        let mut out = BatchOutput::default();
        if !matches!(self.slots.get(index), Some(Slot::Gating { .. })) {
            return out;
        }
        match (cx.aborted, verdict) {
            (true, _) => self.finish(
                index,
                ToolResult::error(OPERATION_ABORTED),
                true,
                None,
                &mut out,
            ),
            (false, ToolCallVerdict::Run { input }) => {
                self.slots[index] = Slot::Prepared {
                    args: input.clone(),
                };
                if self.sequential {
                    out.start.push((index, input));
                }
            }
            (false, ToolCallVerdict::Block { reason, terminate }) => {
                let block = Block {
                    reason: Some(reason),
                    terminate,
                };
                self.finish(index, block.into_result(), true, None, &mut out);
            }
            (false, ToolCallVerdict::Thrown { error }) => {
                self.finish(index, ToolResult::error(error), true, None, &mut out)
            }
        }
        let more = self.advance(cx);
        out.events.extend(more.events);
        out.start.extend(more.start);
        out.gate = more.gate;
        out.done = more.done;
        out
    }

    /// Marks a prepared call as running under `call` from time `now`.
    pub fn started(&mut self, index: usize, call: CallId, now: u64) {
        if let Some(Slot::Prepared { args }) = self.slots.get(index) {
            self.slots[index] = Slot::Running {
                call,
                args: args.clone(),
                started_at: now,
            };
        }
    }

    /// The index of the running call answered by `call`.
    pub fn running_index(&self, call: CallId) -> Option<usize> {
        self.slots
            .iter()
            .position(|s| matches!(s, Slot::Running { call: c, .. } if *c == call))
    }

    /// Whether `call` is a running call of the batch, model-issued or nested.
    pub fn runs(&self, call: CallId) -> bool {
        self.running_index(call).is_some() || self.nested.running_index(call).is_some()
    }

    /// Every running call, nested ones included, for cancellation.
    pub fn running_calls(&self) -> Vec<CallId> {
        self.slots
            .iter()
            .filter_map(|s| match s {
                Slot::Running { call, .. } => Some(*call),
                _ => None,
            })
            .chain(self.nested.running_calls())
            .collect()
    }

    /// The model-issued call running as `call`, as the caller of a nested call.
    pub fn caller(&self, call: CallId) -> Option<Caller> {
        if let Some(index) = self.running_index(call) {
            return Some(Caller {
                tool_call_id: self.calls[index].id.clone(),
                root: index,
                holds_queue: false,
            });
        }
        self.nested.caller(call)
    }

    /// `tool_execution_update` for a running call.
    pub fn update_event(&self, index: usize, partial: ToolResult) -> AgentEvent {
        let call = &self.calls[index];
        AgentEvent::ToolExecutionUpdate {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: call.arguments.clone(),
            partial_result: partial,
            parent_tool_call_id: None,
        }
    }

    /// Finalises a running call with its outcome (`after_tool_call` may override it).
    pub fn complete(
        &mut self,
        index: usize,
        outcome: ToolOutcome,
        cx: &BatchContext<'_>,
    ) -> BatchOutput {
        let mut out = BatchOutput::default();
        let Some(Slot::Running {
            args, started_at, ..
        }) = self.slots.get(index).cloned()
        else {
            return out;
        };
        // Pi times the tool's `execute` alone, before `after_tool_call`.
        let duration_ms = cx.now.saturating_sub(started_at);
        let (result, is_error) = outcome_result(outcome);
        let (result, is_error) = after_hook(cx, &self.calls[index], &args, result, is_error);
        if cx.handled.contains(HookEvent::ToolResult) {
            let call = &self.calls[index];
            out.gate = Some((
                index,
                HookPayload::ToolResult {
                    tool_name: call.name.clone(),
                    tool_call_id: call.id.clone(),
                    parent_tool_call_id: None,
                    input: args,
                    content: result.content.clone(),
                    details: result.details.clone(),
                    is_error,
                },
            ));
            self.slots[index] = Slot::Transforming {
                call: None,
                result,
                is_error,
                duration_ms,
            };
            return out;
        }
        self.finish(index, result, is_error, Some(duration_ms), &mut out);
        let more = self.advance(cx);
        out.events.extend(more.events);
        out.start = more.start;
        out.gate = more.gate;
        out.done = more.done;
        out
    }

    /// Whether every result asks to end the run (and there is at least one).
    /// Puts `message` in the place of the emitted result `original` (a `message_end` handler
    /// replaced it in place, as Pi does): the turn's end carries the replacement.
    pub fn replace_result(&mut self, original: &ToolResultMessage, message: &ToolResultMessage) {
        if let Some(place) = self.emitted.iter_mut().find(|m| *m == original) {
            *place = message.clone();
        }
    }

    pub fn terminates(&self) -> bool {
        !self.slots.is_empty()
            && self.slots.iter().all(
                |s| matches!(s, Slot::Finished { result, .. } if result.terminate == Some(true)),
            )
    }

    fn start_event(&self, index: usize) -> AgentEvent {
        let call = &self.calls[index];
        AgentEvent::ToolExecutionStart {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            args: call.arguments.clone(),
            parent_tool_call_id: None,
        }
    }

    fn finish(
        &mut self,
        index: usize,
        result: ToolResult,
        is_error: bool,
        duration_ms: Option<u64>,
        out: &mut BatchOutput,
    ) {
        let call = &self.calls[index];
        out.events.push(AgentEvent::ToolExecutionEnd {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            result: result.clone(),
            is_error,
            duration_ms,
            parent_tool_call_id: None,
        });
        self.slots[index] = Slot::Finished {
            result,
            is_error,
            duration_ms,
        };
    }

    /// Emits `message_start`/`message_end` for call `index`'s result message and keeps it.
    fn emit_result_message(&mut self, index: usize, now: u64, out: &mut BatchOutput) {
        let message = self.result_message(index, now);
        out.events.push(AgentEvent::MessageStart {
            message: AgentMessage::ToolResult(message.clone()),
        });
        out.events.push(AgentEvent::MessageEnd {
            message: AgentMessage::ToolResult(message.clone()),
        });
        self.emitted.push(message);
    }

    fn result_message(&mut self, index: usize, now: u64) -> ToolResultMessage {
        let call = &self.calls[index];
        let (result, is_error, duration_ms) = match &self.slots[index] {
            Slot::Finished {
                result,
                is_error,
                duration_ms,
            } => (result.clone(), *is_error, *duration_ms),
            _ => (ToolResult::default(), true, None),
        };
        let mut message = ToolResultMessage {
            tool_call_id: call.id.clone(),
            tool_name: call.name.clone(),
            content: result.content,
            details: result.details,
            usage: None,
            is_error,
            duration_ms,
            timestamp: now,
            extra: Default::default(),
        };
        // Pi 1.5 carries the usage the tool reports (codemode's `models.*` calls) on the
        // message, then adds the record of the calls the tool made, and their usage, as it
        // starts.
        let own = result.extra.get("usage").filter(|u| !u.is_null()).cloned();
        let (calls, nested) = self.nested.take_record(index);
        if let Some(calls) = calls {
            message.extra.insert("nestedCalls".into(), calls);
        }
        let usage = match (own, nested) {
            (Some(own), Some(nested)) => Some(crate::cost::combine_usage(&own, &nested)),
            (own, nested) => own.or(nested),
        };
        message.usage = usage;
        message
    }
}

/// How far a call's preparation goes without an answer from outside.
#[derive(Debug)]
pub(super) enum Preparation {
    /// Prepared: the validated arguments.
    Ready(Value),
    /// Its tool's `prepareArguments` runs outside the machine: the hook point to ask.
    Shim(HookPayload),
}

/// Pi's `prepareToolCall`: the validated arguments, the `prepareArguments` hook point to ask
/// first, or the immediate error result.
pub(super) fn prepare(cx: &BatchContext<'_>, call: &ToolCall) -> Result<Preparation, ToolResult> {
    prepare_for(cx, call, None)
}

/// [`prepare`] for a call another tool made (`parent`: the caller's tool-call id).
pub(super) fn prepare_for(
    cx: &BatchContext<'_>,
    call: &ToolCall,
    parent: Option<&str>,
) -> Result<Preparation, ToolResult> {
    let Some(tool) = cx.tools.iter().find(|t| t.name == call.name) else {
        return Err(ToolResult::error(format!("Tool {} not found", call.name)));
    };
    if tool.prepared_by_hook {
        return Ok(Preparation::Shim(HookPayload::PrepareArguments {
            tool_name: call.name.clone(),
            tool_call_id: call.id.clone(),
            parent_tool_call_id: parent.map(str::to_owned),
            arguments: call.arguments.clone(),
        }));
    }
    let raw = match &tool.prepare_arguments {
        Some(prepare) => prepare(&call.arguments).map_err(ToolResult::error)?,
        None => call.arguments.clone(),
    };
    validated(cx, tool, call, Some(raw)).map(Preparation::Ready)
}

/// The model's arguments as `verdict`'s shim left them, when it changed them in place (Pi's
/// call holds that object, so what reads the call later sees the change).
pub(super) fn changed_in_place(verdict: &PreparedArguments) -> Option<Value> {
    match verdict {
        PreparedArguments::Prepared {
            model_arguments, ..
        }
        | PreparedArguments::Thrown {
            model_arguments, ..
        } => model_arguments.clone(),
    }
}

/// The rest of Pi's `prepareToolCall` once the tool's shim outside gave `verdict`.
pub(super) fn prepare_shimmed(
    cx: &BatchContext<'_>,
    call: &ToolCall,
    verdict: PreparedArguments,
) -> Result<Value, ToolResult> {
    let Some(tool) = cx.tools.iter().find(|t| t.name == call.name) else {
        return Err(ToolResult::error(format!("Tool {} not found", call.name)));
    };
    let args = match verdict {
        PreparedArguments::Prepared { arguments, .. } => validated(cx, tool, call, arguments)?,
        PreparedArguments::Thrown { error, .. } => return Err(ToolResult::error(error)),
    };
    // Pi's shim runs at once; here the run may have been aborted while its hook point waited.
    // Pi's `prepareToolCall` answers a prepared call of an aborted run so (after the
    // `tool_call` gate, which then answers it).
    if cx.aborted && !cx.handled.contains(HookEvent::ToolCall) {
        return Err(ToolResult::error(OPERATION_ABORTED));
    }
    Ok(args)
}

/// Pi's `validateToolArguments` on the prepared arguments `raw` (`None`: `undefined`), then
/// `before_tool_call`.
fn validated(
    cx: &BatchContext<'_>,
    tool: &ToolSpec,
    call: &ToolCall,
    raw: Option<Value>,
) -> Result<Value, ToolResult> {
    // Pi checks the arguments that did not parse after `prepareArguments` ran on the `{}` in
    // their place.
    if let Some(error) = call.arguments_error() {
        return Err(ToolResult::error(invalid_arguments(&call.name, error)));
    }
    let args = match raw {
        Some(raw) => validate_tool_arguments(&call.name, &tool.parameters, &raw),
        None => validate_undefined_tool_arguments(&call.name, &tool.parameters),
    }
    .map_err(ToolResult::error)?;
    before(cx, call, args)
}

/// Pi's `beforeToolCall` on the validated arguments.
fn before(cx: &BatchContext<'_>, call: &ToolCall, args: Value) -> Result<Value, ToolResult> {
    let verdict = cx.hooks.before_tool_call(&BeforeToolCall {
        assistant_message: cx.assistant,
        tool_call: call,
        args: &args,
        context: cx.context,
    });
    match verdict {
        Ok(None) => Ok(args),
        Ok(Some(block)) => Err(block.into_result()),
        Err(thrown) => Err(ToolResult::error(thrown)),
    }
}

/// A tool's outcome as a result and whether it is an error: pi-agent-core 1.5's returned
/// result may say it is one (`isError: true`), a thrown error is one.
pub(super) fn outcome_result(outcome: ToolOutcome) -> (ToolResult, bool) {
    match outcome {
        ToolOutcome::Ok(result) => {
            let is_error = result.extra.get("isError") == Some(&Value::Bool(true));
            (result, is_error)
        }
        ToolOutcome::Thrown(message) => (ToolResult::error(message), true),
    }
}

/// Pi's `finalizeExecutedToolCall`: field-by-field overrides, or an error result if the hook threw.
pub(super) fn after_hook(
    cx: &BatchContext<'_>,
    call: &ToolCall,
    args: &Value,
    result: ToolResult,
    is_error: bool,
) -> (ToolResult, bool) {
    let verdict = cx.hooks.after_tool_call(&AfterToolCall {
        assistant_message: cx.assistant,
        tool_call: call,
        args,
        result: &result,
        is_error,
        context: cx.context,
    });
    match verdict {
        Ok(None) => (result, is_error),
        Ok(Some(over)) => (
            ToolResult {
                content: over.content.unwrap_or(result.content),
                details: over.details.or(result.details),
                terminate: over.terminate.or(result.terminate),
                extra: Default::default(),
            },
            over.is_error.unwrap_or(is_error),
        ),
        Err(thrown) => (ToolResult::error(thrown), true),
    }
}
