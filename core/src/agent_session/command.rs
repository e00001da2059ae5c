//! Extension commands (Pi 1.5.2's `_tryExecuteExtensionCommand`): a prompt whose text is
//! `/name args`, `name` one of the extensions' commands (the session configuration's
//! [`Resources::commands`]), runs that command's handler instead of becoming a message, before
//! the `input` handlers and before any `/skill:` or template expansion, even while the agent
//! streams. The run is an effect ([`HookPayload::Command`]) and its answer an input (the
//! actions the handler asked for), so a recording replays it without the extension. A queued
//! text (steer, follow-up) naming a command is refused as Pi refuses it.
//!
//! A handler that calls its context for what only the session does (`ctx.navigateTree`) stops
//! there: its run's decision is a [`CommandAsk`], which the session carries out as the front
//! end's call would, hooks and all, while the command still counts as running; then the command
//! goes on ([`HookPayload::CommandResume`]) with Pi's result, until its run ends.
//!
//! `ctx.newSession`, `ctx.fork` and `ctx.switchSession` ask `session_before_switch` or
//! `session_before_fork` here; let go on, the command leaves this
//! session ([`Reply::CommandReplacing`]) and the front end, having built the new session,
//! resumes it there ([`SessionInput::ResumeCommand`](super::SessionInput::ResumeCommand)) with
//! [`CommandAnswer::Replaced`]: its `withSession` runs with the new session's context, whose
//! `sendUserMessage` waits for the run it starts to settle ([`CommandAsk::SendUserMessage`]).
//! `ctx.reload` leaves it the same way, the front end reloading the extensions in this session
//! ([`CommandAsk::Reload`]).
//!
//! [`Resources::commands`]: crate::resources::Resources::commands

use serde_json::json;

use crate::agent::hooks::{
    CommandAnswer, CommandAsk, HookAction, HookDecision, HookError, HookEvent, HookOutcome,
    HookPayload, SessionAppend,
};
use crate::agent::CallId;

use super::contract::{NavigateRequest, Navigated, Reply, SessionError, SessionRejection};
use super::machine::SessionMachine;

/// A command's answer held until the `input` handlers of the user messages it sent while idle
/// have decided (and the actions asked after them are applied): Pi 1.5.2 runs them within the
/// handler's `sendUserMessage` call, so their effects come before the prompt is answered
/// `handled`.
#[derive(Debug)]
pub(super) struct HeldReply(Reply);

/// A command whose handler waits for what it asked of the session: its name and the host's
/// number for its run.
#[derive(Clone, Debug)]
pub(super) struct AskingCommand {
    name: String,
    run: u64,
    /// The session's answer, held while the notifications it told (`session_tree`) are heard:
    /// Pi's call returns once their handlers are done.
    answer: Option<CommandAnswer>,
    /// What the call waits for.
    waits: Waits,
}

/// What a command's call waits for before the session answers it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Waits {
    /// A navigation's end (`ctx.navigateTree`).
    Navigation,
    /// The `session_before_switch` handlers' answer to a replacement (`ctx.newSession`).
    Replacement,
    /// The end of the run a message started (the replaced session's `ctx.sendUserMessage`):
    /// the session's `agent_settled`.
    Settled,
}

/// A command whose handler waits in a session that is being replaced: the front end carries
/// it over to the new session ([`SessionInput::ResumeCommand`](super::SessionInput)).
#[derive(Clone, Debug, PartialEq)]
pub struct CarriedCommand {
    /// The command's name.
    pub name: String,
    /// The host's number for the handler's run.
    pub run: u64,
    /// What the handler asked for.
    pub ask: CommandAsk,
}

impl SessionMachine {
    /// Whether `text`, prompted, would run an extension command rather than reach the model
    /// (what a front end answers such a prompt by: Pi's `handled` disposition).
    pub fn is_extension_command(&self, text: &str) -> bool {
        self.resources.command(text).is_some()
    }

    /// Starts the command `text` names, if it names one: the machine waits for its run.
    pub(super) fn run_extension_command(&mut self, text: &str) -> bool {
        let Some((name, args)) = self.resources.command(text) else {
            return false;
        };
        let payload = HookPayload::Command {
            name: name.to_owned(),
            args: args.to_owned(),
            idle: !self.agent.is_streaming(),
        };
        let call = self.agent.reserve_call();
        self.pending_commands.push((call, name.to_owned()));
        self.push_hook(call, payload);
        true
    }

    /// Pi's refusal of a steer or follow-up whose text names an extension command.
    pub(super) fn refuse_queued_command(&self, text: &str) -> Result<(), SessionError> {
        match self.resources.command(text) {
            Some((name, _)) => Err(SessionRejection::CommandQueued(name.to_owned()).into()),
            None => Ok(()),
        }
    }

    /// Whether `call` is a command's run.
    pub(super) fn awaits_command(&self, call: CallId) -> bool {
        self.pending_commands.iter().any(|(c, _)| *c == call)
    }

    /// Whether a command runs (the session is busy meanwhile, as Pi's `prompt` awaits it).
    pub(super) fn commands_pending(&self) -> bool {
        !self.pending_commands.is_empty() || self.command_asking.is_some()
    }

    /// A command's run ended (`call`, which [`Self::awaits_command`] checked): what its handler
    /// asked for is applied as a hook point's actions are, then the front end learns the
    /// prompt was handled, and what the handler threw, reported as Pi reports it
    /// (`command:<name>`, at the `command` event).
    pub(super) fn command_ran(
        &mut self,
        call: CallId,
        outcome: HookOutcome,
    ) -> Result<(), SessionError> {
        let Some(at) = self.pending_commands.iter().position(|(c, _)| *c == call) else {
            return Ok(());
        };
        let (_, name) = self.pending_commands.remove(at);
        self.apply_asked_actions(&outcome.actions)?;
        if let HookDecision::CommandAsked { run, ask } = outcome.decision {
            let errors: Vec<HookError> = command_errors(&name, outcome.errors);
            self.report_hook_errors(&errors);
            self.command_asking = Some(AskingCommand {
                name,
                run,
                answer: None,
                waits: Waits::Navigation,
            });
            return self.carry_out(ask);
        }
        // Pi's `ctx.abort()` is `AgentSession.abort()`: a command sent while the agent streams
        // aborts its run (and a running compaction); `ctx.compact()` aborts the same way
        // before it compacts.
        if outcome.actions.iter().any(HookAction::aborts) {
            self.abort()?;
        }
        let errors = command_errors(&name, outcome.errors);
        let reply = Reply::CommandRan { errors };
        match self.idle_inputs_pending() {
            false => self.reply(reply),
            true => self.held_reply = Some(HeldReply(reply)),
        }
        Ok(())
    }

    /// An input was decided: a command's answer held for its user messages goes out once none
    /// of them waits for its decision, and the runs they asked for may start.
    pub(super) fn release_held_reply(&mut self) {
        if self.idle_inputs_pending() {
            return;
        }
        if let Some(HeldReply(reply)) = self.held_reply.take() {
            self.reply(reply);
        }
        self.arm_idle_runs();
    }

    /// Carries out what a command asked of the session; a refusal is the error its call throws.
    fn carry_out(&mut self, ask: CommandAsk) -> Result<(), SessionError> {
        let asked = match ask {
            CommandAsk::NavigateTree {
                target_id,
                summarize,
                custom_instructions,
                replace_instructions,
                label,
            } => self.navigate(NavigateRequest {
                target_id,
                summarize: summarize.unwrap_or(false),
                custom_instructions,
                replace_instructions: replace_instructions.unwrap_or(false),
                label,
            }),
            CommandAsk::NewSession { .. }
            | CommandAsk::Fork { .. }
            | CommandAsk::SwitchSession { .. } => {
                let payload = before_replacing(&ask);
                self.set_waits(Waits::Replacement, Some(ask));
                if self.hears(payload.event()) {
                    self.tell_session(payload);
                } else {
                    self.command_replacement_answered(false);
                }
                Ok(())
            }
            CommandAsk::Reload => {
                self.command_reloading();
                Ok(())
            }
            CommandAsk::SendUserMessage {
                content,
                deliver_as,
                expand_prompt_templates,
            } => {
                self.set_waits(Waits::Settled, None);
                let sent = self.apply_asked_actions(&[HookAction::SendUserMessage {
                    content,
                    deliver_as,
                    expand_prompt_templates,
                }]);
                self.arm_idle_runs();
                sent
            }
            CommandAsk::SendMessage {
                message,
                deliver_as,
                trigger_turn,
            } => {
                // A message that starts a run returns once it settled; any other returns at
                // once, appended or held as Pi's `sendCustomMessage` has it.
                let starts =
                    trigger_turn == Some(true) && deliver_as.as_deref() != Some("nextTurn");
                if starts {
                    self.set_waits(Waits::Settled, None);
                }
                let sent = self.apply_asked_actions(&[HookAction::SendMessage {
                    message,
                    deliver_as,
                    trigger_turn,
                }]);
                if sent.is_ok() && !starts {
                    self.resume_command(CommandAnswer::Result(serde_json::Value::Null));
                }
                sent
            }
            CommandAsk::SetupSession { appends } => {
                let set_up = self.set_up(appends);
                if set_up.is_ok() {
                    self.resume_command(CommandAnswer::Result(serde_json::Value::Null));
                }
                set_up
            }
        };
        match asked {
            Err(SessionError::Rejected(refused)) => {
                self.resume_command(CommandAnswer::Error(refused.to_string()));
                Ok(())
            }
            other => other,
        }
    }

    /// Pi's `newSession({setup})` once the new session started: what the callback wrote
    /// through its `SessionManager`, appended as written (no event announces it), then the
    /// agent's context rebuilt from the session (`refreshContext`). A label on an entry that
    /// does not exist is Pi's error, which the call throws.
    fn set_up(&mut self, appends: Vec<SessionAppend>) -> Result<(), SessionError> {
        for append in appends {
            let decision = match append {
                SessionAppend::AppendMessage { message } => {
                    self.tree.append_message(message, self.now, &mut self.ids).1
                }
                SessionAppend::AppendCustomEntry { custom_type, data } => {
                    let tree = &mut self.tree;
                    tree.append_custom_entry(&custom_type, data, self.now, &mut self.ids)
                        .1
                }
                SessionAppend::AppendCustomMessageEntry {
                    custom_type,
                    content,
                    display,
                    details,
                } => {
                    let (now, ids) = (self.now, &mut self.ids);
                    let tree = &mut self.tree;
                    tree.append_custom_message_entry(
                        &custom_type,
                        content,
                        display,
                        details,
                        now,
                        ids,
                    )
                    .1
                }
                SessionAppend::AppendSessionInfo { name } => {
                    self.tree
                        .append_session_info(&name, self.now, &mut self.ids)
                        .1
                }
                SessionAppend::AppendLabelChange { target_id, label } => {
                    let (now, ids) = (self.now, &mut self.ids);
                    self.tree
                        .append_label_change(&target_id, label.as_deref(), now, ids)
                        .map_err(|e| SessionRejection::Entry(e.to_string()))?
                        .1
                }
            };
            self.persist(decision);
        }
        let messages = self.tree.context().into_messages();
        self.replace_messages(messages)
    }

    /// What the waiting command waits for, and the replacement it asked for, if any.
    fn set_waits(&mut self, waits: Waits, replacement: Option<CommandAsk>) {
        if let Some(asking) = self.command_asking.as_mut() {
            asking.waits = waits;
        }
        self.command_replacement = replacement;
    }

    /// Whether the `session_before_switch` handlers now heard were asked by a command's
    /// replacement rather than by the front end.
    pub(super) fn command_replacement_asked(&self) -> bool {
        self.command_asking
            .as_ref()
            .is_some_and(|asking| asking.waits == Waits::Replacement && asking.answer.is_none())
    }

    /// The replacement a command asked for was answered: cancelled, the handler goes on with
    /// Pi's `{cancelled: true}`; else the command leaves this session for the front end to
    /// carry over to the new one ([`Reply::CommandReplacing`]).
    pub(super) fn command_replacement_answered(&mut self, cancelled: bool) {
        let ask = self.command_replacement.take();
        if cancelled {
            self.resume_command(CommandAnswer::Result(json!({"cancelled": true})));
            return;
        }
        let (Some(asking), Some(ask)) = (self.command_asking.take(), ask) else {
            return;
        };
        self.reply(Reply::CommandReplacing(CarriedCommand {
            name: asking.name,
            run: asking.run,
            ask,
        }));
    }

    /// `ctx.reload()`: refused with Pi's error while the agent streams or compacts; else the
    /// command leaves the session's hands ([`Reply::CommandReplacing`] with
    /// [`CommandAsk::Reload`]) for the front end to reload the extensions
    /// ([`SessionInput::Reloaded`](super::SessionInput::Reloaded)) and resume it.
    fn command_reloading(&mut self) {
        let refused = if self.agent.is_streaming() {
            Some("Wait for the current response to finish before reloading.")
        } else if self.is_compacting() {
            Some("Wait for compaction to finish before reloading.")
        } else {
            None
        };
        if let Some(refused) = refused {
            self.resume_command(CommandAnswer::Error(refused.into()));
            return;
        }
        let Some(asking) = self.command_asking.take() else {
            return;
        };
        self.command_carried = Some((asking.name.clone(), asking.run));
        self.reply(Reply::CommandReplacing(CarriedCommand {
            name: asking.name,
            run: asking.run,
            ask: CommandAsk::Reload,
        }));
    }

    /// The session's `agent_settled` went out: a command whose message started that run goes
    /// on (Pi's `sendUserMessage` of a replaced session's context has returned).
    pub(super) fn command_settled(&mut self) {
        let settled = self
            .command_asking
            .as_ref()
            .is_some_and(|asking| asking.waits == Waits::Settled && asking.answer.is_none());
        if settled {
            self.resume_command(CommandAnswer::Result(serde_json::Value::Null));
        }
    }

    /// A command carried over from the replaced session goes on here with `answer`, once the
    /// notifications told so far are heard.
    pub(super) fn resume_carried(
        &mut self,
        name: String,
        run: u64,
        answer: CommandAnswer,
    ) -> Result<(), SessionRejection> {
        if let Some((carried, carried_run)) = self.command_carried.take() {
            if (carried.as_str(), carried_run) != (name.as_str(), run) {
                self.command_carried = Some((carried.clone(), carried_run));
                return Err(SessionRejection::NotCarried(format!(
                    "/{name} (run {run}), where /{carried} (run {carried_run}) was carried out"
                )));
            }
        }
        self.command_asking = Some(AskingCommand {
            name,
            run,
            answer: Some(answer),
            waits: Waits::Navigation,
        });
        self.release_command_answer();
        Ok(())
    }

    /// A navigation ended: a command that asked for it goes on with Pi's result (`{cancelled}`,
    /// as RPC mode's command context gives it); else nothing was waiting in a command
    /// (`false`: the front end gets the reply).
    pub(super) fn command_navigated(&mut self, result: &Result<Navigated, String>) -> bool {
        if !self
            .command_asking
            .as_ref()
            .is_some_and(|asking| asking.waits == Waits::Navigation)
        {
            return false;
        }
        let answer = match result {
            Ok(navigated) => CommandAnswer::Result(json!({"cancelled": navigated.cancelled})),
            Err(error) => CommandAnswer::Error(error.clone()),
        };
        self.resume_command(answer);
        true
    }

    /// The waiting command's run goes on with `answer`, as a hook point of its own, once the
    /// session's notifications told meanwhile are heard ([`Self::release_command_answer`]).
    fn resume_command(&mut self, answer: CommandAnswer) {
        if let Some(asking) = self.command_asking.as_mut() {
            asking.answer = Some(answer);
        }
        self.release_command_answer();
    }

    /// A session notification's handlers are done: a command's answer held for them goes on
    /// when none is left.
    pub(super) fn release_command_answer(&mut self) {
        if self.session_notifications_pending() {
            return;
        }
        let Some(AskingCommand {
            name,
            run,
            answer: Some(answer),
            ..
        }) = self
            .command_asking
            .take_if(|asking| asking.answer.is_some())
        else {
            return;
        };
        let call = self.agent.reserve_call();
        self.pending_commands.push((call, name.clone()));
        self.push_hook(call, HookPayload::CommandResume { name, run, answer });
    }
}

/// The event Pi's runtime asks before it carries out the replacement `ask`
/// (`emitBeforeSwitch`, `emitBeforeFork`).
fn before_replacing(ask: &CommandAsk) -> HookPayload {
    match ask {
        CommandAsk::Fork {
            entry_id, position, ..
        } => HookPayload::SessionBeforeFork {
            entry_id: entry_id.clone(),
            position: position.clone().unwrap_or_else(|| "before".into()),
        },
        CommandAsk::SwitchSession { session_path, .. } => HookPayload::SessionBeforeSwitch {
            reason: "resume".into(),
            target_session_file: Some(session_path.clone()),
        },
        _ => HookPayload::SessionBeforeSwitch {
            reason: "new".into(),
            target_session_file: None,
        },
    }
}

/// The errors of the command `name`'s run as Pi reports them: its handler's as
/// [`command_error`], those reported at another event (Pi's `register_mcp_server` for a server
/// the handler registered that nothing connects) as they are.
fn command_errors(name: &str, errors: Vec<HookError>) -> Vec<HookError> {
    errors
        .into_iter()
        .map(|e| match e.event {
            HookEvent::Command => command_error(name, e.error),
            _ => e,
        })
        .collect()
}

/// A command's error as Pi reports it (`command:<name>`, at the `command` event).
fn command_error(name: &str, error: String) -> HookError {
    HookError {
        extension: format!("command:{name}"),
        event: HookEvent::Command,
        error,
    }
}
