//! The extension API's actions that come back with a hook point's decision, applied as Pi 1.5.2's
//! `AgentSession` applies them when a handler calls them (`bindCore`): in the order asked, at
//! once, mid run too, before the decision lets the loop go on.
//!
//! Applied: `pi.appendEntry`, `pi.sendMessage`, `pi.setThinkingLevel`, `pi.setSessionName`,
//! `pi.setLabel`, `pi.setModel`, `pi.sendUserMessage` (while idle, in a run started once the
//! hook point has gone on: `idle_run`), and
//! `pi.setActiveTools` when the run's configuration holds its tool loadout (`loadout`);
//! `ctx.abort()` is applied by the caller after the decision. Each needs only what the machine
//! holds (the model, the entries, the queues, the resources, the registered tools) or what the
//! action carries (`setModel` holds the whole model; the extension host, which knows the
//! providers with auth, asks for none Pi would refuse), so a replay reproduces the same entries,
//! events and requests from the recorded actions with no extension loaded and no catalog.
//! `ctx.compact()` aborts the run as `abort` does and compacts once no run is active, as Pi's
//! `AgentSession.compact` does after its `abort()` has waited for idle: the aborted run is heard
//! to its end, `agent_settled` comes before `compaction_start`, and while idle (a command's)
//! the compaction starts within the hook point's step, before the command is answered. It is a
//! manual compaction with the custom instructions, whose summary request is an effect like any
//! other's, so a replay reproduces it; its end answers no RPC `compact`. Its end reaches the
//! extension's `onComplete`/`onError` as a hook point of its own (`compact_end`, named by the
//! number the host gave the callbacks), whose actions are recorded like any hook point's. One
//! asked while another compaction runs aborts it (Pi's `compact()` calls `abort()` first) and
//! starts once it has ended, its `session_compact_failed` handlers too.

use crate::agent::hooks::{HookAction, HookPayload};
use crate::agent::{CallId, Input};
use crate::event::{CompactionReason, CompactionResult};
use crate::message::{ContentBlock, ImageContent, UserContent};

use super::contract::{Reply, SessionError, StreamingBehavior};
use super::input::{InputKind, EXTENSION_SOURCE};
use super::machine::{AskedCompaction, SessionMachine};

/// A hook point's decision waiting for the `input` decisions of the user messages its handlers
/// sent. Pi runs the `input` handlers of an extension's `sendUserMessage` and queues its text
/// before the hook point's own continuation resumes the loop (the handlers' promises settle
/// first), so the message is queued before, say, `turn_end` is emitted; here the decision goes
/// on once they are decided.
#[derive(Debug)]
pub(super) struct HeldDecision {
    input: Input,
    aborts: bool,
    /// The inputs still to be decided.
    waiting: Vec<CallId>,
}

/// Pi's `deliverAs` that queues a user message as a follow-up (any other queues it as steering).
const FOLLOW_UP: &str = "followUp";

impl SessionMachine {
    /// Applies the actions a hook point's handlers asked for, in the order asked.
    pub(super) fn apply_asked_actions(
        &mut self,
        actions: &[HookAction],
    ) -> Result<(), SessionError> {
        for (index, action) in actions.iter().enumerate() {
            match action {
                HookAction::AppendEntry { custom_type, data } => {
                    self.append_custom(custom_type, data.clone())
                }
                HookAction::SendMessage {
                    message,
                    deliver_as,
                    trigger_turn,
                } => self.send_asked_message(message, deliver_as.as_deref(), *trigger_turn)?,
                // Pi's `setThinkingLevel`: clamped to the model, written and announced only
                // when it changes; the run's next turn asks with it.
                HookAction::SetThinkingLevel { level } => self.set_thinking_level(*level)?,
                // Pi's `setSessionName`: a `session_info` entry and `session_info_changed`.
                HookAction::SetSessionName { name } => self.set_session_name(name),
                HookAction::SetLabel { entry_id, label } => {
                    self.set_asked_label(entry_id, label.as_deref())
                }
                HookAction::SendUserMessage {
                    content,
                    deliver_as,
                    expand_prompt_templates,
                } => {
                    let before = self.pending_inputs.len();
                    let idle = !self.streaming();
                    self.send_user_message(
                        content,
                        deliver_as.as_deref(),
                        expand_prompt_templates.unwrap_or(false),
                    )?;
                    // Pi runs an idle message's `input` handlers within the call: the actions
                    // asked after it wait for their decision.
                    if let (true, Some(asked)) = (idle, self.pending_inputs.get(before)) {
                        let rest = actions[index + 1..].to_vec();
                        if !rest.is_empty() {
                            self.stashed_actions = Some((asked.call, rest));
                        }
                        return Ok(());
                    }
                }
                HookAction::SetActiveTools { tools } => self.set_active_tools(tools),
                // Pi's `setModel` once auth was found: a `model_change` entry and the thinking
                // level carried over as a model switch carries it; mid run, the next request
                // goes to the new model.
                HookAction::SetModel { model } => {
                    self.set_model(model.as_ref().clone(), None, "set")?
                }
                // Pi's `ctx.compact()`: the run is aborted (by the caller, as for `abort`) and
                // compacted once it has settled. Each call is a compaction of its own: one
                // asked while no run is active (Pi's `abort()` then waits for nothing) goes
                // before those still waiting for the run to settle.
                HookAction::Compact {
                    custom_instructions,
                    callback,
                } => {
                    let asked = AskedCompaction {
                        custom_instructions: custom_instructions.clone(),
                        callback: *callback,
                        after_settle: self.run_active,
                    };
                    if asked.after_settle {
                        self.asked_compaction.push_back(asked);
                    } else {
                        self.asked_compaction.push_front(asked);
                    }
                }
                // Pi's registry tells the extensions that connect MCP servers of every change
                // after binding (it does not wait for them).
                HookAction::McpServersChange { servers } => {
                    self.tell_session(HookPayload::McpServersChange {
                        servers: servers.clone(),
                    })
                }
                HookAction::RegisterTools { tools, withdrawn } => {
                    self.register_direct(tools, withdrawn)
                }
                HookAction::RegisterDeferredTools {
                    tools,
                    later_sections,
                } => {
                    self.register_deferred(tools);
                    self.sections_decided(later_sections);
                }
                HookAction::RegisterProvider {
                    name,
                    models,
                    available,
                    keep_model,
                    ..
                }
                | HookAction::UnregisterProvider {
                    name,
                    models,
                    available,
                    keep_model,
                } => self.change_provider(name, models, *available, *keep_model)?,
                HookAction::RegisterVirtualModel {
                    name,
                    models,
                    available,
                    ..
                } => self.change_provider(name, models, *available, false)?,
                HookAction::Abort => {}
                HookAction::Shutdown => self.reply(Reply::ShutdownAsked),
            }
        }
        self.arm_idle_runs();
        Ok(())
    }

    /// Applies the actions stashed behind the idle user message `call` once it is decided.
    pub(super) fn resume_stashed_actions(&mut self, call: CallId) -> Result<(), SessionError> {
        match self.stashed_actions.take() {
            Some((waiting, rest)) if waiting == call => self.apply_asked_actions(&rest),
            other => {
                self.stashed_actions = other;
                Ok(())
            }
        }
    }

    /// Starts the next compaction an extension asked for once the session is idle: Pi's
    /// `AgentSession.compact` after its `abort()` has waited for idle, so the aborted run's last
    /// events and `agent_settled` (its handlers and the event) come before `compaction_start`,
    /// and the run is heard to its end (unlike a manual compaction's); one asked once the run
    /// was over starts first, and each starts after the callbacks of the one before. One asked while another compaction runs waits for
    /// its end (the asking aborted it, as Pi's `compact()` aborts first), the
    /// `session_compact_failed` handlers of a failed one included: Pi 1.5.2 starts it as soon as
    /// a manual one has ended, and the end of those handlers then clears the state the new one
    /// reads (it fails on it), a race not copied here. One asked while a tree navigation runs is
    /// dropped.
    pub(super) fn start_asked_compaction(&mut self) -> Result<(), SessionError> {
        self.start_held_compaction()?;
        // The callbacks of the compaction that ended run before the next starts (Pi calls them
        // as its promise settles, before the next `compact()` hears the session idle).
        if self.agent.is_streaming()
            || self.run_active
            || self.compaction.is_some()
            || !self.failing.is_empty()
            || !self.compact_callbacks.is_empty()
        {
            return Ok(());
        }
        // Pi's `compact()` waits for the session to be idle: a run that settles is once its
        // `agent_settled` is out, after its handlers.
        if self.settling()
            && self
                .asked_compaction
                .front()
                .is_some_and(|asked| asked.after_settle)
        {
            return Ok(());
        }
        let Some(AskedCompaction {
            custom_instructions,
            callback,
            ..
        }) = self.asked_compaction.pop_front()
        else {
            return Ok(());
        };
        if self.navigating() {
            return Ok(());
        }
        self.queue_compaction(CompactionReason::Manual, false, custom_instructions);
        if let Some(job) = self.compaction.as_mut() {
            job.asked = true;
            job.callback = callback;
        }
        self.begin_compaction_calls()
    }

    /// The end of a compaction `ctx.compact()` asked for with callbacks: the host calls
    /// `onComplete` with the result or `onError` with the error's message, after
    /// `compaction_end`, as Pi's promise settles after it. The session does not wait for them
    /// (Pi does not await them); what they ask for is applied when it comes back.
    pub(super) fn call_back(&mut self, callback: u64, ended: Result<CompactionResult, String>) {
        let (result, error) = match ended {
            Ok(result) => (Some(result), None),
            Err(error) => (None, Some(error)),
        };
        let call = self.agent.reserve_call();
        self.compact_callbacks.push(call);
        self.push_hook(
            call,
            HookPayload::CompactEnd {
                callback,
                result,
                error,
            },
        );
    }

    /// Whether `call` is a compaction's end the extension host is calling back for.
    pub(super) fn awaits_callback(&self, call: CallId) -> bool {
        self.compact_callbacks.contains(&call)
    }

    /// The callbacks of a compaction's end ran: what they asked for is applied.
    pub(super) fn called_back(
        &mut self,
        call: CallId,
        actions: &[HookAction],
    ) -> Result<(), SessionError> {
        self.compact_callbacks.retain(|c| *c != call);
        self.apply_asked_actions(actions)
    }

    /// Pi's `setLabel` (`appendLabelChange`): a `label` entry on `entry_id`, announced by no
    /// event; no label clears one. Pi throws for an entry the session does not hold, which
    /// fails the handler where it asked, after the actions before it; here nothing is written
    /// for it.
    fn set_asked_label(&mut self, entry_id: &str, label: Option<&str>) {
        if let Ok((_, decision)) =
            self.tree
                .append_label_change(entry_id, label, self.now, &mut self.ids)
        {
            self.persist(decision);
        }
    }

    /// Pi's `sendUserMessage` while the agent streams: the content's text parts joined by line
    /// breaks and its images go through `prompt` as typed by an extension (input `source`
    /// `"extension"`, the `input` handlers first where there are some; `/skill:` and templates
    /// expand only when asked) and are queued as a follow-up with `deliverAs: "followUp"`, else as
    /// steering, which the run delivers before it settles. Pi refuses one without `deliverAs`
    /// (its handler's error report), so nothing is queued for it. While idle its `input`
    /// handlers decide at once, as Pi runs them within the call, and Pi starts a run for it
    /// once the hook point has gone on (`idle_run`).
    fn send_user_message(
        &mut self,
        content: &UserContent,
        deliver_as: Option<&str>,
        expand: bool,
    ) -> Result<(), SessionError> {
        if !self.streaming() {
            let (text, images) = text_and_images(content);
            return self.input_from(
                text,
                images,
                InputKind::Idle,
                EXTENSION_SOURCE.to_owned(),
                expand,
            );
        }
        let Some(deliver_as) = deliver_as else {
            return Ok(());
        };
        let behavior = match deliver_as {
            FOLLOW_UP => StreamingBehavior::FollowUp,
            _ => StreamingBehavior::Steer,
        };
        let (text, images) = text_and_images(content);
        self.input_from(
            text,
            images,
            InputKind::Queue(behavior),
            EXTENSION_SOURCE.to_owned(),
            expand,
        )
    }
}

/// A user message's text (its text parts joined by line breaks) and images, as Pi's
/// `sendUserMessage` splits them.
fn text_and_images(content: &UserContent) -> (String, Vec<ImageContent>) {
    match content {
        UserContent::Text(text) => (text.clone(), Vec::new()),
        UserContent::Blocks(blocks) => {
            let mut texts = Vec::new();
            let mut images = Vec::new();
            for block in blocks {
                match block {
                    ContentBlock::Text(text) => texts.push(text.text.as_str()),
                    ContentBlock::Image(image) => images.push(image.clone()),
                    ContentBlock::Thinking(_) | ContentBlock::ToolCall(_) => {}
                }
            }
            (texts.join("\n"), images)
        }
    }
}

impl SessionMachine {
    /// Holds `input` (a decision whose actions were just applied) when they left user messages
    /// waiting for their `input` decision that were not waiting `before`; whether it is held.
    pub(super) fn hold_decision(&mut self, before: &[CallId], input: &Input, aborts: bool) -> bool {
        let waiting: Vec<CallId> = self
            .pending_input_calls()
            .into_iter()
            .filter(|call| !before.contains(call))
            .collect();
        if waiting.is_empty() {
            return false;
        }
        self.held_decision = Some(HeldDecision {
            input: input.clone(),
            aborts,
            waiting,
        });
        true
    }

    /// The input `call` was decided: the held decision goes on once none it waits for is left.
    /// One the agent no longer waits for (an abort came meanwhile) is dropped.
    pub(super) fn release_held_decision(&mut self, call: CallId) -> Result<(), SessionError> {
        let Some(held) = self.held_decision.as_mut() else {
            return Ok(());
        };
        held.waiting.retain(|c| *c != call);
        if !held.waiting.is_empty() {
            return Ok(());
        }
        let Some(held) = self.held_decision.take() else {
            return Ok(());
        };
        match &held.input {
            Input::HookDecided { call, outcome }
                if self.agent.awaits_decision(*call, &outcome.decision) =>
            {
                self.decision_step(held.input, held.aborts)
            }
            _ => Ok(()),
        }
    }
}
