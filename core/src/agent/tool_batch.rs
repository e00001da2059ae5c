//! The loop's tool phase (pi-agent-core's `executeToolCalls`) as the machine runs it: an
//! assistant message with tool calls starts a [`ToolBatch`], and each step of the batch (a
//! call started, updated or finished, a `tool_call` gate decided) is carried out here as the
//! events it emits and the effects it asks for; the last result ends the turn. The calls a
//! running tool makes (`ctx.executeTool`, [`super::super::nested`]) are carried out here too.

use super::super::config::{ToolExecution, ToolSpec};
use super::super::contract::ToolOutcome;
use super::super::hooks::HookDecision;
use super::super::nested::{NestedCalls, NestedOutput};
use super::super::tools::{BatchContext, BatchOutput, ToolBatch};
use super::{AgentMachine, CallId, Effect, Phase, Run};
use crate::event::ToolResult;
use crate::message::{AgentMessage, AssistantMessage};

impl AgentMachine {
    /// Starts the tool batch of `assistant`, the transcript's last message.
    pub(super) fn start_tools(&mut self, assistant: &AssistantMessage) {
        let Some(run) = &mut self.run else { return };
        let index = self.messages.len() - 1;
        let batch = ToolBatch::new(
            index,
            assistant,
            &run.settings.tools,
            run.settings.tool_execution,
        );
        run.phase = Phase::Tools(batch);
        self.advance_batch(|batch, cx| batch.advance(cx));
    }

    /// Runs `f` on the tool batch with its context, then carries out what it asks for.
    fn advance_batch(&mut self, f: impl FnOnce(&mut ToolBatch, &BatchContext<'_>) -> BatchOutput) {
        let Some(run) = &mut self.run else { return };
        let Phase::Tools(batch) = &mut run.phase else {
            return;
        };
        let Some(AgentMessage::Assistant(assistant)) = self.messages.get(batch.assistant_index)
        else {
            return;
        };
        let cx = BatchContext {
            tools: &run.settings.tools,
            hooks: self.hooks.as_ref(),
            handled: &self.handled_hooks,
            aborted: run.aborted,
            assistant,
            context: &self.messages[..run.context_len],
            now: self.now,
        };
        let output = f(batch, &cx);
        let mut assistant = assistant.clone();
        if !output.rewritten.is_empty() {
            // A shim changed a call's arguments in place: Pi's transcript holds that very call,
            // so the turn's later events and requests carry the change.
            let calls = assistant.content.iter_mut().filter_map(|b| match b {
                crate::message::ContentBlock::ToolCall(call) => Some(call),
                _ => None,
            });
            for (i, call) in calls.enumerate() {
                if let Some((_, changed)) = output.rewritten.iter().find(|(index, _)| *index == i) {
                    call.arguments = changed.clone();
                }
            }
            if let Some(AgentMessage::Assistant(held)) =
                self.messages.get_mut(batch.assistant_index)
            {
                *held = assistant.clone();
            }
            self.llm_view = Default::default();
        }
        let terminate = batch.terminates();
        let aborted = run.aborted;
        let gate = output.gate.map(|(index, payload)| {
            let call = CallId(self.next_call);
            self.next_call += 1;
            batch.gating(index, call);
            (call, payload)
        });
        let mut starts = Vec::new();
        for (index, args) in output.start {
            let call = CallId(self.next_call);
            self.next_call += 1;
            batch.started(index, call, self.now);
            starts.push((call, index, args));
        }
        let calls: Vec<(CallId, String, String)> = starts
            .iter()
            .map(|(call, index, _)| {
                let tool_call = assistant.tool_calls().nth(*index);
                (
                    *call,
                    tool_call.map(|t| t.id.clone()).unwrap_or_default(),
                    tool_call.map(|t| t.name.clone()).unwrap_or_default(),
                )
            })
            .collect();
        for event in output.events {
            self.emit(event);
        }
        for ((call, tool_call_id, tool), (_, _, args)) in calls.into_iter().zip(starts) {
            self.effect(Effect::RunTool {
                call,
                tool_call_id,
                tool,
                args,
                search: None,
                state: None,
            });
            if aborted {
                self.effect(Effect::Cancel { call });
            }
        }
        if let Some((call, payload)) = gate {
            self.effect(Effect::Hook {
                call,
                payload,
                state: None,
            });
        }
        if let Some(results) = output.done {
            self.sync_context();
            let results = results.into_iter().map(AgentMessage::ToolResult).collect();
            self.finish_turn(assistant, results, terminate, false);
        }
    }

    /// A running call's partial result.
    pub(super) fn on_tool_update(&mut self, call: CallId, partial: ToolResult) {
        let Some(Run {
            phase: Phase::Tools(batch),
            ..
        }) = &self.run
        else {
            return;
        };
        let event = match batch.running_index(call) {
            Some(index) => Some(batch.update_event(index, partial)),
            None => batch
                .nested
                .running_index(call)
                .and_then(|index| batch.nested.update_event(index, partial)),
        };
        if let Some(event) = event {
            self.emit(event);
        }
    }

    /// A running call's outcome.
    pub(super) fn on_tool_finished(&mut self, call: CallId, outcome: ToolOutcome) {
        let index = match &self.run {
            Some(Run {
                phase: Phase::Tools(batch),
                ..
            }) => batch.running_index(call),
            _ => None,
        };
        if let Some(index) = index {
            return self.advance_batch(|batch, cx| batch.complete(index, outcome, cx));
        }
        self.advance_nested(|nested, cx, _| {
            let index = nested.running_index(call)?;
            Some(nested.complete(index, outcome, cx))
        });
    }

    /// The extensions decided the `tool_call` gate `call` of the batch, if it waits there.
    pub(super) fn tool_call_decided(&mut self, call: CallId, decision: HookDecision) {
        let index = match &self.run {
            Some(Run {
                phase: Phase::Tools(batch),
                ..
            }) => batch.gating_index(call, &decision),
            _ => None,
        };
        if let Some(index) = index {
            return self.advance_batch(|batch, cx| batch.decided(index, decision, cx));
        }
        self.advance_nested(|nested, cx, _| {
            let index = nested.gating_index(call, &decision)?;
            Some(nested.decided(index, decision, cx))
        });
    }

    /// The running tool `call` asks to run `name` with `args` (`ctx.executeTool`).
    pub(super) fn on_tool_nested(&mut self, call: CallId, name: String, args: serde_json::Value) {
        let sequential = matches!(
            &self.run,
            Some(run) if run.settings.tool_execution == ToolExecution::Sequential
        );
        let caller = match &self.run {
            Some(Run {
                phase: Phase::Tools(batch),
                ..
            }) => batch.caller(call),
            _ => None,
        };
        let Some(caller) = caller else { return };
        self.advance_nested(|nested, cx, _| {
            Some(nested.request(call, caller, name, args, sequential, cx))
        });
    }

    /// Runs `f` on the batch's nested calls with the batch's context, then carries out what it
    /// asks for: its events, the hook points and runs it starts, the answers to the callers.
    fn advance_nested(
        &mut self,
        f: impl FnOnce(&mut NestedCalls, &BatchContext<'_>, ()) -> Option<NestedOutput>,
    ) {
        let Some(run) = &mut self.run else { return };
        let Phase::Tools(batch) = &mut run.phase else {
            return;
        };
        let Some(AgentMessage::Assistant(assistant)) = self.messages.get(batch.assistant_index)
        else {
            return;
        };
        // Pi's callable tools: the active ones (not `model-only`), then the others a tool may
        // call.
        let callable: Vec<ToolSpec> = run
            .settings
            .tools
            .iter()
            .filter(|t| t.exposure.callable_when_active())
            .chain(
                self.nested_tools
                    .iter()
                    .filter(|t| !run.settings.tools.iter().any(|a| a.name == t.name)),
            )
            .cloned()
            .collect();
        let cx = BatchContext {
            tools: &callable,
            hooks: self.hooks.as_ref(),
            handled: &self.handled_hooks,
            aborted: run.aborted,
            assistant,
            context: &self.messages[..run.context_len],
            now: self.now,
        };
        let Some(output) = f(&mut batch.nested, &cx, ()) else {
            return;
        };
        let aborted = run.aborted;
        let mut effects = Vec::new();
        for (index, payload) in output.gates {
            let call = CallId(self.next_call);
            self.next_call += 1;
            batch.nested.gating(index, call);
            effects.push(Effect::Hook {
                call,
                payload,
                state: None,
            });
        }
        for (index, tool, tool_call_id, args) in output.start {
            let call = CallId(self.next_call);
            self.next_call += 1;
            batch.nested.started(index, call, self.now);
            effects.push(Effect::RunTool {
                call,
                tool_call_id,
                tool,
                args,
                search: None,
                state: None,
            });
            if aborted {
                effects.push(Effect::Cancel { call });
            }
        }
        let ended = !output.answers.is_empty();
        for (call, answer) in output.answers {
            effects.push(Effect::AnswerNested {
                call,
                tool_call_id: answer.tool_call.id.clone(),
                outcome: answer.to_value(),
            });
        }
        for event in output.events {
            self.emit(event);
        }
        for effect in effects {
            self.effect(effect);
        }
        // A tool that returned before its nested calls ended waits for them to end.
        if ended {
            self.advance_batch(|batch, cx| batch.advance(cx));
        }
    }
}
