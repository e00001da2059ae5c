//! A running extension command that replaces the session (Pi 1.5.2's RPC command context:
//! `ctx.newSession`, `ctx.fork` and `ctx.switchSession` call the runtime's). The session machine asked the
//! `session_before_switch` handlers; once they let it go on, the command leaves the old
//! session ([`Reply::CommandReplacing`](pi_core::agent_session::Reply::CommandReplacing)) and
//! the loop replaces the session as `new_session`, `fork` or `switch_session` do (the old one's shutdown, the new one's
//! start), then resumes the command in the new session: its `withSession` runs there with the
//! new session's context, and the prompt that ran the command is answered once the command
//! ends. A recording goes on in the new session, as for `new_session`. `ctx.reload()` is
//! carried out here too: the session stays, its extensions loaded again.

use pi_core::agent::hooks::{CommandAnswer, CommandAsk};
use pi_core::agent_session::SessionInput;
use serde_json::{json, Value};
use tokio::sync::mpsc::UnboundedReceiver;

use super::commands::Failure;
use super::replace::Stop;
use super::{Ended, Front, Rpc};
use crate::replacement::asked_by_command;

impl<I: Front> Rpc<I> {
    /// Carries out the replacement a command asked for, if one waits: the session replaced,
    /// the command resumes in the new one (or, where the replacement failed, in the old one
    /// with Pi's error); `Some` when the run ends here (a replay holds one session).
    pub(super) async fn replace_for_command(
        &mut self,
        ui: &mut Option<UnboundedReceiver<Value>>,
    ) -> Option<Ended> {
        let carried = self.command_replacing.take()?;
        self.held_for_tree = None;
        for request in std::mem::take(&mut self.held_ui) {
            self.arrived(pi_effects::driver::FrontEndInput::ExtensionUi(request));
        }
        self.print_ui(ui);
        let carried_out = match carried.ask {
            CommandAsk::Reload => self.reload(ui).await,
            ref ask => self.replace_as_asked(ask, ui).await,
        };
        let answer = match carried_out {
            Ok(()) if carried.ask == CommandAsk::Reload => CommandAnswer::Result(Value::Null),
            Ok(()) => CommandAnswer::Replaced(json!({ "cancelled": false })),
            Err(Stop::Ended(ended)) => return Some(ended),
            Err(Stop::Failed(Failure::Message(message))) => CommandAnswer::Error(message),
            Err(Stop::Failed(Failure::Unknown)) => CommandAnswer::Error("Unknown command".into()),
        };
        let resume = SessionInput::ResumeCommand {
            name: carried.name,
            run: carried.run,
            answer,
        };
        let submitted = {
            let (out, waiting) = (&mut self.out, &mut self.started_waiters);
            self.session.submit(resume, |event| {
                super::started::print_event(out, waiting, event)
            })
        };
        match self.settled(submitted.map(Ok)) {
            Ok(replies) => self.replies(replies),
            Err(Stop::Ended(ended)) => return Some(ended),
            Err(Stop::Failed(_)) => {}
        }
        self.print_ui(ui);
        None
    }

    /// Pi's `AgentSession.reload` for a command's `ctx.reload()`: the extensions hear
    /// `session_shutdown` (reason `reload`), the extension host loads them again (their
    /// factories run again; the old contexts are stale), and the session goes on with its
    /// tools rebuilt and the new load told `session_start` and `resources_discover` (reason
    /// `reload`), what their handlers do printed as the session's. What the new load
    /// registered takes effect ([`crate::reload`]): its handlers, tools and commands (those
    /// `get_commands` lists), with the extensions found again (one the settings name since
    /// loaded) and the context files, skills, templates, prompt files and settings read again.
    async fn reload(&mut self, ui: &mut Option<UnboundedReceiver<Value>>) -> Result<(), Stop> {
        let leave = SessionInput::leave_for_reload();
        self.told(leave, true, ui).await?;
        let reloaded = match crate::reload::reload(&self.runtime, &mut self.session) {
            Ok((input, _)) => input,
            Err(error) => {
                self.out.say(&error);
                SessionInput::Reloaded(None)
            }
        };
        self.told(reloaded, true, ui).await
    }

    /// Replaces the session as `ask` says, Pi's runtime binding the new session's extensions
    /// once (its printer subscribes after that).
    async fn replace_as_asked(
        &mut self,
        ask: &CommandAsk,
        ui: &mut Option<UnboundedReceiver<Value>>,
    ) -> Result<(), Stop> {
        const BINDS: &[bool] = &[false];
        let Some(asked) = asked_by_command(ask, &self.session, &self.runtime.cwd) else {
            return Err(Stop::Failed(Failure::Unknown));
        };
        let (choice, reason) = asked.map_err(Failure::Message)?;
        self.replace(&choice, reason, BINDS, ui).await
    }
}
