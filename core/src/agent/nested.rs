//! Tool calls a running tool makes (Pi 1.5's `ctx.executeTool`), as the batch runs them.
//!
//! The model never sees these calls. Each goes through the batch's pipeline of its own: a
//! `tool_execution_start` carrying `parentToolCallId`, preparation and the `tool_call` gate,
//! the run as an effect of its own, the `tool_result` transform, `tool_execution_end`, and then
//! the answer to the caller (an effect the interpreter hands the waiting tool; a replay checks
//! it and hands nothing). A call gets the id `<caller's id>/<n>`, `n` counting the caller's
//! calls from 1. Where the agent runs tools one at a time, or the called tool asks to, a call
//! waits for the one ahead of it to end (calls made inside that call excepted, which would
//! otherwise wait for their own caller).
//!
//! Every call made on behalf of one model-issued call, however deep, is recorded on that
//! call's result message as `nestedCalls` (`{calls, complete}`, Pi's `NestedCallRecorder`
//! with its limits), and the usage the nested results report is added to the message's
//! `usage`. Every `durationMs` is a difference of the times the machine's inputs came with
//! (the event's from the run's start to its end, as for the model's calls; the record's from
//! the caller's request on), never a clock read, so a replay reproduces them.

use std::collections::{BTreeMap, VecDeque};

use serde_json::{json, Map, Value};

use super::contract::{CallId, ToolOutcome};
use super::hooks::{HookDecision, HookEvent, HookPayload, ToolCallVerdict};
use super::tools::{
    after_hook, changed_in_place, outcome_result, prepare_for, prepare_shimmed, BatchContext,
    Preparation, OPERATION_ABORTED,
};
use crate::cost::combine_usage;
use crate::event::{AgentEvent, ToolResult};
use crate::message::{ContentBlock, ToolCall};

/// Pi 1.5's `NESTED_CALL_LIMITS`: calls beyond `MAX_CALLS` are left out of the record,
/// arguments over the per-call or total size are replaced by their size, and an error's text
/// is cut; the record is then marked incomplete.
pub const MAX_CALLS: usize = 256;
pub const MAX_ARGUMENT_BYTES_PER_CALL: usize = 8 * 1024;
pub const MAX_ARGUMENT_BYTES_TOTAL: usize = 32 * 1024;
pub const MAX_ERROR_CHARS: usize = 500;

/// What a waiting tool is told of its nested call (Pi's `ToolCallOutcome`).
#[derive(Clone, Debug, PartialEq)]
pub struct NestedAnswer {
    /// The call as made: id, name and the arguments as given.
    pub tool_call: ToolCall,
    pub result: ToolResult,
    pub is_error: bool,
    /// How long the tool ran; absent when it never ran.
    pub duration_ms: Option<u64>,
}

impl NestedAnswer {
    /// Pi's outcome object, as `ctx.executeTool` resolves it.
    pub fn to_value(&self) -> Value {
        let mut outcome = json!({
            "toolCall": {
                "type": "toolCall",
                "id": self.tool_call.id,
                "name": self.tool_call.name,
                "arguments": self.tool_call.arguments,
            },
            "result": self.result,
            "isError": self.is_error,
        });
        if let (Some(ms), Some(map)) = (self.duration_ms, outcome.as_object_mut()) {
            map.insert("durationMs".into(), json!(ms));
        }
        outcome
    }
}

#[derive(Clone, Debug)]
enum State {
    /// Waiting for the call ahead of it to end (one at a time).
    Queued,
    /// Waiting for its `tool_call` gate, asked as `call` once the machine named it.
    Gating {
        call: Option<CallId>,
    },
    /// Waiting for its tool's `prepareArguments` shim, asked as `call` once the machine named
    /// it.
    Shimming {
        call: Option<CallId>,
    },
    /// Prepared with these arguments, to be started by the machine.
    Prepared {
        args: Value,
    },
    Running {
        call: CallId,
        args: Value,
        started_at: u64,
    },
    /// Waiting for its `tool_result` transform.
    Transforming {
        call: Option<CallId>,
        result: ToolResult,
        is_error: bool,
        duration_ms: u64,
    },
    Done,
}

#[derive(Clone, Debug)]
struct Nested {
    tool_call: ToolCall,
    /// The caller's tool-call id (`parentToolCallId`).
    parent: String,
    /// The machine's call that waits for the answer.
    caller: CallId,
    /// The model-issued call this one is made on behalf of (its index in the batch).
    root: usize,
    /// Its place in the root's record, when the record kept it.
    record: Option<usize>,
    /// Runs alone: the agent or the tool is sequential, and no caller of it holds the queue.
    exclusive: bool,
    /// Its own calls skip the queue (it, or a caller of it, holds it).
    holds_queue: bool,
    /// When the caller asked for it: its record's `durationMs` counts from here, as Pi's
    /// counts from the call's start (waiting for the queue and the gate included).
    asked_at: u64,
    state: State,
}

/// Pi's `NestedCallRecorder` for one model-issued call.
#[derive(Clone, Debug, Default)]
struct Recorder {
    calls: Vec<Map<String, Value>>,
    incomplete: bool,
    argument_bytes: usize,
    usage: Option<Value>,
}

impl Recorder {
    fn start(&mut self, call: &ToolCall) -> Option<usize> {
        if self.calls.len() >= MAX_CALLS {
            self.incomplete = true;
            return None;
        }
        let mut record = Map::new();
        record.insert("id".into(), json!(call.id));
        record.insert("name".into(), json!(call.name));
        record.insert("status".into(), json!("unfinished"));
        let bytes = crate::json::to_string(&call.arguments)
            .map(|text| text.len())
            .unwrap_or(0);
        if bytes > MAX_ARGUMENT_BYTES_PER_CALL
            || self.argument_bytes + bytes > MAX_ARGUMENT_BYTES_TOTAL
        {
            record.insert("argumentsBytes".into(), json!(bytes));
            self.incomplete = true;
        } else {
            record.insert("arguments".into(), call.arguments.clone());
            self.argument_bytes += bytes;
        }
        self.calls.push(record);
        Some(self.calls.len() - 1)
    }

    fn finish(&mut self, index: usize, answer: &NestedAnswer, duration_ms: u64) {
        let Some(record) = self.calls.get_mut(index) else {
            return;
        };
        let status = if answer.is_error { "error" } else { "ok" };
        record.insert("status".into(), json!(status));
        record.insert("durationMs".into(), json!(duration_ms));
        let text = text_of(&answer.result);
        if answer.is_error && !text.is_empty() {
            record.insert("error".into(), json!(js_prefix(&text, MAX_ERROR_CHARS)));
        }
    }

    fn add_usage(&mut self, usage: &Value) {
        self.usage = Some(match &self.usage {
            Some(sum) => combine_usage(sum, usage),
            None => usage.clone(),
        });
    }

    /// `nestedCalls`, or none when no call was made.
    fn snapshot(&self) -> Option<Value> {
        if self.calls.is_empty() && !self.incomplete {
            return None;
        }
        let finished = self.calls.iter().all(|c| c["status"] != "unfinished");
        Some(json!({"calls": self.calls, "complete": !self.incomplete && finished}))
    }
}

/// The first `max` UTF-16 code units of `text` (JavaScript's `slice(0, max)`; a surrogate
/// pair cut in half is left out whole).
fn js_prefix(text: &str, max: usize) -> String {
    let mut units = 0;
    let mut end = 0;
    for (at, c) in text.char_indices() {
        units += c.len_utf16();
        if units > max {
            break;
        }
        end = at + c.len_utf8();
    }
    text[..end].to_owned()
}

fn text_of(result: &ToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(text) => Some(text.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// What the nested calls want the machine to do.
#[derive(Debug, Default)]
pub struct NestedOutput {
    pub events: Vec<AgentEvent>,
    /// Prepared calls to start: (nested index, tool name, id, validated args).
    pub start: Vec<(usize, String, String, Value)>,
    /// Hook points to ask: (nested index, Pi's event).
    pub gates: Vec<(usize, HookPayload)>,
    /// Answers for waiting callers.
    pub answers: Vec<(CallId, NestedAnswer)>,
}

/// The nested calls of one batch.
#[derive(Debug, Default)]
pub struct NestedCalls {
    calls: Vec<Nested>,
    /// The next number of each caller's calls, by the caller's tool-call id.
    next_id: BTreeMap<String, u32>,
    records: BTreeMap<usize, Recorder>,
    /// The exclusive call running now, and those waiting behind it.
    holder: Option<usize>,
    waiting: VecDeque<usize>,
}

impl NestedCalls {
    /// The caller `call` (a model-issued call `root` with tool-call id `parent`, or a nested
    /// call) asks to run `name` with `args`. `holds_queue` says the caller holds the queue.
    #[allow(clippy::too_many_arguments)]
    fn begin(
        &mut self,
        caller: CallId,
        parent: String,
        root: usize,
        holds_queue: bool,
        name: String,
        args: Value,
        sequential: bool,
        cx: &BatchContext<'_>,
    ) -> NestedOutput {
        let mut out = NestedOutput::default();
        let n = self.next_id.entry(parent.clone()).or_insert(1);
        let id = format!("{parent}/{n}");
        *n += 1;
        let tool_call = ToolCall {
            id: id.clone(),
            name: name.clone(),
            arguments: args.clone(),
            ..ToolCall::default()
        };
        let record = self.records.entry(root).or_default().start(&tool_call);
        out.events.push(AgentEvent::ToolExecutionStart {
            tool_call_id: id,
            tool_name: name.clone(),
            args,
            parent_tool_call_id: Some(parent.clone()),
        });
        let tool_sequential = cx.tools.iter().any(|t| {
            t.name == name && t.execution_mode == Some(super::config::ToolExecution::Sequential)
        });
        let exclusive = !holds_queue && (sequential || tool_sequential);
        let index = self.calls.len();
        self.calls.push(Nested {
            tool_call,
            parent,
            caller,
            root,
            record,
            exclusive,
            holds_queue: holds_queue || exclusive,
            asked_at: cx.now,
            state: State::Queued,
        });
        if exclusive && self.holder.is_some() {
            self.waiting.push_back(index);
            return out;
        }
        if exclusive {
            self.holder = Some(index);
        }
        self.prepare(index, cx, &mut out);
        out
    }

    /// Pi's `prepareToolCall` for call `index`, then its shim, its gate or its start.
    fn prepare(&mut self, index: usize, cx: &BatchContext<'_>, out: &mut NestedOutput) {
        let nested = &self.calls[index];
        let prepared = prepare_for(cx, &nested.tool_call, Some(&nested.parent));
        self.prepared(index, prepared, cx, out);
    }

    /// Carries out call `index`'s preparation as far as it went.
    fn prepared(
        &mut self,
        index: usize,
        prepared: Result<Preparation, ToolResult>,
        cx: &BatchContext<'_>,
        out: &mut NestedOutput,
    ) {
        let nested = &self.calls[index];
        match prepared {
            Ok(Preparation::Shim(payload)) => {
                out.gates.push((index, payload));
                self.calls[index].state = State::Shimming { call: None };
            }
            Ok(Preparation::Ready(args)) if cx.handled.contains(HookEvent::ToolCall) => {
                out.gates.push((
                    index,
                    HookPayload::ToolCall {
                        tool_name: nested.tool_call.name.clone(),
                        tool_call_id: nested.tool_call.id.clone(),
                        parent_tool_call_id: Some(nested.parent.clone()),
                        input: args,
                    },
                ));
                self.calls[index].state = State::Gating { call: None };
            }
            Ok(Preparation::Ready(args)) => self.start(index, args, out),
            Err(result) => self.end(index, result, true, None, cx, out),
        }
    }

    fn start(&mut self, index: usize, args: Value, out: &mut NestedOutput) {
        let nested = &mut self.calls[index];
        out.start.push((
            index,
            nested.tool_call.name.clone(),
            nested.tool_call.id.clone(),
            args.clone(),
        ));
        nested.state = State::Prepared { args };
    }

    /// Names the hook point call `index` waits at.
    pub fn gating(&mut self, index: usize, asked: CallId) {
        if let Some(Nested {
            state:
                State::Gating { call } | State::Shimming { call } | State::Transforming { call, .. },
            ..
        }) = self.calls.get_mut(index)
        {
            *call = Some(asked);
        }
    }

    /// Marks call `index` as running under `call` from `now`.
    pub fn started(&mut self, index: usize, call: CallId, now: u64) {
        if let Some(nested) = self.calls.get_mut(index) {
            if let State::Prepared { args } = &nested.state {
                nested.state = State::Running {
                    call,
                    args: args.clone(),
                    started_at: now,
                };
            }
        }
    }

    /// The nested call running as `call`.
    pub fn running_index(&self, call: CallId) -> Option<usize> {
        self.calls
            .iter()
            .position(|n| matches!(n.state, State::Running { call: c, .. } if c == call))
    }

    /// Every running nested call, for cancellation.
    pub fn running_calls(&self) -> impl Iterator<Item = CallId> + '_ {
        self.calls.iter().filter_map(|n| match n.state {
            State::Running { call, .. } => Some(call),
            _ => None,
        })
    }

    /// Whether a nested call's hook point asked as `call` waits for `decision`.
    pub fn gating_index(&self, call: CallId, decision: &HookDecision) -> Option<usize> {
        self.calls.iter().position(|n| match (&n.state, decision) {
            (State::Gating { call: Some(c) }, HookDecision::ToolCall(_)) => *c == call,
            (State::Shimming { call: Some(c) }, HookDecision::PrepareArguments(_)) => *c == call,
            (State::Transforming { call: Some(c), .. }, HookDecision::ToolResult { .. }) => {
                *c == call
            }
            _ => false,
        })
    }

    /// `tool_execution_update` of running call `index`.
    pub fn update_event(&self, index: usize, partial: ToolResult) -> Option<AgentEvent> {
        let nested = self.calls.get(index)?;
        Some(AgentEvent::ToolExecutionUpdate {
            tool_call_id: nested.tool_call.id.clone(),
            tool_name: nested.tool_call.name.clone(),
            args: nested.tool_call.arguments.clone(),
            partial_result: partial,
            parent_tool_call_id: Some(nested.parent.clone()),
        })
    }

    /// The caller and place of running nested call `index`: its id, its root, and whether it
    /// holds the queue (for the calls it makes in turn).
    fn caller_of(&self, call: CallId) -> Option<(String, usize, bool)> {
        let index = self.running_index(call)?;
        let nested = &self.calls[index];
        Some((nested.tool_call.id.clone(), nested.root, nested.holds_queue))
    }

    /// The extensions' decision for call `index`.
    pub fn decided(
        &mut self,
        index: usize,
        decision: HookDecision,
        cx: &BatchContext<'_>,
    ) -> NestedOutput {
        let mut out = NestedOutput::default();
        let state = self.calls.get(index).map(|n| n.state.clone());
        match (state, decision) {
            (Some(State::Shimming { .. }), HookDecision::PrepareArguments(verdict)) => {
                if let Some(changed) = changed_in_place(&verdict) {
                    self.calls[index].tool_call.arguments = changed;
                }
                let prepared = prepare_shimmed(cx, &self.calls[index].tool_call, verdict);
                self.prepared(index, prepared.map(Preparation::Ready), cx, &mut out);
            }
            (Some(State::Gating { .. }), HookDecision::ToolCall(verdict)) => {
                match (cx.aborted, verdict) {
                    (true, _) => {
                        let result = ToolResult::error(OPERATION_ABORTED);
                        self.end(index, result, true, None, cx, &mut out)
                    }
                    (false, ToolCallVerdict::Run { input }) => self.start(index, input, &mut out),
                    (false, ToolCallVerdict::Block { reason, terminate }) => {
                        let block = super::config::Block {
                            reason: Some(reason),
                            terminate,
                        };
                        self.end(index, block.into_result(), true, None, cx, &mut out)
                    }
                    (false, ToolCallVerdict::Thrown { error }) => {
                        self.end(index, ToolResult::error(error), true, None, cx, &mut out)
                    }
                }
            }
            (
                Some(State::Transforming {
                    result,
                    is_error,
                    duration_ms,
                    ..
                }),
                HookDecision::ToolResult {
                    content,
                    details,
                    is_error: error,
                },
            ) => {
                let result = ToolResult {
                    content: content.unwrap_or(result.content),
                    details: details.or(result.details),
                    ..result
                };
                let is_error = error.unwrap_or(is_error);
                self.end(index, result, is_error, Some(duration_ms), cx, &mut out);
            }
            _ => {}
        }
        out
    }

    /// Running call `index` ended with `outcome`.
    pub fn complete(
        &mut self,
        index: usize,
        outcome: ToolOutcome,
        cx: &BatchContext<'_>,
    ) -> NestedOutput {
        let mut out = NestedOutput::default();
        let Some(State::Running {
            args, started_at, ..
        }) = self.calls.get(index).map(|n| n.state.clone())
        else {
            return out;
        };
        let duration_ms = cx.now.saturating_sub(started_at);
        let (result, is_error) = outcome_result(outcome);
        let nested = &self.calls[index];
        let (result, is_error) = after_hook(cx, &nested.tool_call, &args, result, is_error);
        if cx.handled.contains(HookEvent::ToolResult) {
            out.gates.push((
                index,
                HookPayload::ToolResult {
                    tool_name: nested.tool_call.name.clone(),
                    tool_call_id: nested.tool_call.id.clone(),
                    parent_tool_call_id: Some(nested.parent.clone()),
                    input: args,
                    content: result.content.clone(),
                    details: result.details.clone(),
                    is_error,
                },
            ));
            self.calls[index].state = State::Transforming {
                call: None,
                result,
                is_error,
                duration_ms,
            };
            return out;
        }
        self.end(index, result, is_error, Some(duration_ms), cx, &mut out);
        out
    }

    /// Call `index` has its outcome: the queue moves on, the record and usage are kept, its
    /// `tool_execution_end` goes out and its caller is answered.
    fn end(
        &mut self,
        index: usize,
        result: ToolResult,
        is_error: bool,
        duration_ms: Option<u64>,
        cx: &BatchContext<'_>,
        out: &mut NestedOutput,
    ) {
        let nested = &mut self.calls[index];
        nested.state = State::Done;
        let nested = nested.clone();
        let answer = NestedAnswer {
            tool_call: nested.tool_call.clone(),
            result,
            is_error,
            duration_ms,
        };
        let recorder = self.records.entry(nested.root).or_default();
        if let Some(record) = nested.record {
            recorder.finish(record, &answer, cx.now.saturating_sub(nested.asked_at));
        }
        if let Some(usage) = answer.result.extra.get("usage") {
            recorder.add_usage(usage);
        }
        out.events.push(AgentEvent::ToolExecutionEnd {
            tool_call_id: nested.tool_call.id.clone(),
            tool_name: nested.tool_call.name.clone(),
            result: answer.result.clone(),
            is_error,
            duration_ms,
            parent_tool_call_id: Some(nested.parent.clone()),
        });
        out.answers.push((nested.caller, answer));
        if nested.exclusive && self.holder == Some(index) {
            self.holder = self.waiting.pop_front();
            if let Some(next) = self.holder {
                self.prepare(next, cx, out);
            }
        }
    }

    /// Whether a call made on behalf of model-issued call `root` has not ended: the batch holds
    /// that call's result message until it has, so that no answer comes after its batch.
    pub fn busy(&self, root: usize) -> bool {
        self.calls
            .iter()
            .any(|n| n.root == root && !matches!(n.state, State::Done))
    }

    /// Takes the record of the calls made on behalf of model-issued call `root`:
    /// `nestedCalls` and the usage to add to its result message.
    pub fn take_record(&mut self, root: usize) -> (Option<Value>, Option<Value>) {
        match self.records.remove(&root) {
            Some(recorder) => (recorder.snapshot(), recorder.usage),
            None => (None, None),
        }
    }
}

/// Where a caller asking for a nested call stands in the batch.
#[derive(Debug)]
pub struct Caller {
    pub tool_call_id: String,
    pub root: usize,
    pub holds_queue: bool,
}

impl NestedCalls {
    /// A nested call running as `call`, as a caller.
    pub fn caller(&self, call: CallId) -> Option<Caller> {
        self.caller_of(call)
            .map(|(tool_call_id, root, holds_queue)| Caller {
                tool_call_id,
                root,
                holds_queue,
            })
    }

    /// `caller` asks for `name` with `args` (see [`NestedCalls::begin`]).
    pub fn request(
        &mut self,
        call: CallId,
        caller: Caller,
        name: String,
        args: Value,
        sequential: bool,
        cx: &BatchContext<'_>,
    ) -> NestedOutput {
        self.begin(
            call,
            caller.tool_call_id,
            caller.root,
            caller.holds_queue,
            name,
            args,
            sequential,
            cx,
        )
    }
}

#[cfg(test)]
#[path = "nested_tests.rs"]
mod tests;
