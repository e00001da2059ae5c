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
//! [`Resources::commands`]: crate::resources::Resources::commands

use serde_json::json;

use crate::agent::hooks::{
    CommandAnswer, CommandAsk, HookAction, HookDecision, HookError, HookEvent, HookOutcome,
    HookPayload,
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
            let errors: Vec<HookError> = outcome
                .errors
                .into_iter()
                .map(|e| command_error(&name, e.error))
                .collect();
            self.report_hook_errors(&errors);
            self.command_asking = Some(AskingCommand {
                name,
                run,
                answer: None,
            });
            return self.carry_out(ask);
        }
        // Pi's `ctx.compact()` aborts a compaction that runs before it compacts.
        if outcome
            .actions
            .iter()
            .any(|a| matches!(a, HookAction::Compact { .. }))
        {
            self.abort_compaction()?;
        }
        let errors = outcome
            .errors
            .into_iter()
            .map(|e| command_error(&name, e.error))
            .collect();
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
        };
        match asked {
            Err(SessionError::Rejected(refused)) => {
                self.resume_command(CommandAnswer::Error(refused.to_string()));
                Ok(())
            }
            other => other,
        }
    }

    /// A navigation ended: a command that asked for it goes on with Pi's result (`{cancelled}`,
    /// as RPC mode's command context gives it); else nothing was waiting in a command
    /// (`false`: the front end gets the reply).
    pub(super) fn command_navigated(&mut self, result: &Result<Navigated, String>) -> bool {
        if self.command_asking.is_none() {
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

/// A command's error as Pi reports it (`command:<name>`, at the `command` event).
fn command_error(name: &str, error: String) -> HookError {
    HookError {
        extension: format!("command:{name}"),
        event: HookEvent::Command,
        error,
    }
}
