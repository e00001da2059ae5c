//! The commands that replace the session (Pi's `AgentSessionRuntime`: `new_session`,
//! `switch_session`, `fork`, `clone`) and `export_html` (through [`crate::export`]). A
//! replacement is taken by the loop once its line was read ([`Rpc::replace_pending`]), since it
//! waits for the extensions, as Pi 1.5.2's runtime does: `session_before_switch` or
//! `session_before_fork` may cancel it (answered `cancelled: true`, nothing replaced); then
//! the new session is built through [`Runtime::open`](crate::setup::Runtime::open), which claims
//! the new file first (a file another process writes is refused, and the old session stays),
//! the old one hears `session_shutdown` with the replacement's reason and the new file, and is
//! dropped (its interpreter says how it was left: [`crate::replacement`]), the extensions are loaded again and the new session hears
//! `session_start` with the reason and the old file, twice, as Pi's RPC mode binds them twice
//! (its printer subscribed only for the second).

use std::path::PathBuf;

use pi_cassettes::Divergence;
use pi_core::agent::hooks::{HookEvent, HookPayload};
use pi_core::agent_session::{Reply, SessionError, SessionInput};
use pi_core::event::{Event, SessionEvent};
use pi_effects::agent_session::AgentSession;
use pi_effects::driver::{DriveError, FrontEndInput};
use pi_effects::session::ForkPosition;
use serde_json::{json, Value};
use tokio::sync::mpsc::UnboundedReceiver;

use super::commands::{text_field, Failure};
use super::{failure, success, Ended, Front, Rpc};
use crate::replacement::{self, fork_choice, Refused, Replacer};
use crate::setup::{Runtime, SessionChoice};

/// A replacing command read, waiting for the loop to carry it out (those read meanwhile wait
/// their turn, as Pi's runtime replaces one session at a time).
pub(super) struct PendingReplace {
    id: Option<Value>,
    kind: String,
    command: Value,
    state: Asking,
}

/// Where a replacing command stands with the extensions' `session_before_*` handlers.
enum Asking {
    /// Read: not asked yet.
    Read,
    /// Asked with this event; the loop runs on (stdin read, an extension's dialog answered)
    /// until the session's [`Reply::Replacing`].
    Asked(HookPayload),
    /// Answered (`true`: cancelled), or nobody to ask; the event asked, if any.
    Answered(bool, Option<HookPayload>),
}

/// How Pi's RPC replacing commands bind the new session's extensions: within the runtime's
/// replacement (before the printer subscribes), then again.
const COMMAND_BINDS: &[bool] = &[false, true];

/// Why a replacement stopped: Pi's error, or the replay parted from its recording.
pub(super) enum Stop {
    Failed(Failure),
    Ended(Ended),
}

impl From<Failure> for Stop {
    fn from(failure: Failure) -> Self {
        Stop::Failed(failure)
    }
}

impl<I: Front> Rpc<I> {
    /// Runs `export_html` (its data), or keeps a session-replacing command for the loop
    /// ([`Rpc::replace_pending`]): `None`, answered later.
    pub(super) fn replace_command(
        &mut self,
        kind: &str,
        command: &Value,
    ) -> Result<Option<Option<Value>>, Failure> {
        if kind == "export_html" {
            return self.export_html(command).map(|data| Some(Some(data)));
        }
        // Refused before anything is read or written (no clock, no session file) where no
        // session is built (a hybrid run). Where the recorded run's extensions were asked
        // first, such a run asks them too (a cancel is recorded).
        if self.reopen.is_none() && !self.session.machine().hears(before_event(kind)) {
            return Err(not_while_replaying());
        }
        self.pending_replace.push_back(PendingReplace {
            id: command.get("id").cloned(),
            kind: kind.to_owned(),
            command: command.clone(),
            state: Asking::Read,
        });
        Ok(None)
    }

    /// An extension's UI request: a notice sent while a replacement is asked, or while the
    /// tree hooks are heard, waits for the answer ([`Rpc::held_ui`]); anything else goes out
    /// now.
    pub(super) fn ui_request(&mut self, request: Value) {
        let dialog = matches!(
            request["method"].as_str(),
            Some("select" | "confirm" | "input" | "editor")
        );
        let tree_hook = self.session.machine().tree_hook_heard();
        if dialog || !(self.replacement_asked() || tree_hook.is_some()) {
            self.arrived(FrontEndInput::ExtensionUi(request));
            return;
        }
        if tree_hook.is_some() {
            self.held_for_tree = tree_hook;
        }
        self.held_ui.push(request);
    }

    /// Whether a replacement's `session_before_*` handlers are heard.
    fn replacement_asked(&self) -> bool {
        self.pending_replace
            .front()
            .is_some_and(|p| matches!(p.state, Asking::Asked(_)))
    }

    /// The session went on: notices held for a tree hook point go out once its answer is
    /// applied.
    pub(super) fn release_held_ui(&mut self) {
        let Some(call) = self.held_for_tree else {
            return;
        };
        if self.replacement_asked() || self.session.machine().tree_hook_heard() == Some(call) {
            return;
        }
        self.held_for_tree = None;
        for request in std::mem::take(&mut self.held_ui) {
            self.arrived(FrontEndInput::ExtensionUi(request));
        }
    }

    /// The session's answer to the replacement asked: the loop carries it out next.
    pub(super) fn replacement_answered(&mut self, cancelled: bool) {
        if let Some(pending) = self.pending_replace.front_mut() {
            if let Asking::Asked(asked) = &pending.state {
                pending.state = Asking::Answered(cancelled, Some(asked.clone()));
            }
        }
    }

    /// The event a replacing command asks the extensions about (Pi's `emitBeforeSwitch`,
    /// `emitBeforeFork`), its fields read from the command (or Pi's error).
    fn before_asked(&self, kind: &str, command: &Value) -> Result<HookPayload, Failure> {
        Ok(match kind {
            "new_session" => HookPayload::SessionBeforeSwitch {
                reason: "new".into(),
                target_session_file: None,
            },
            "switch_session" => HookPayload::SessionBeforeSwitch {
                reason: "resume".into(),
                target_session_file: Some(text_field(command, "sessionPath")?),
            },
            "fork" => HookPayload::SessionBeforeFork {
                entry_id: text_field(command, "entryId")?,
                position: "before".into(),
            },
            _ => {
                let leaf = self.session.machine().tree().leaf_id().map(str::to_owned);
                let Some(leaf) = leaf else {
                    return Err(Failure::Message(
                        "Cannot clone session: no current entry selected".into(),
                    ));
                };
                HookPayload::SessionBeforeFork {
                    entry_id: leaf,
                    position: "at".into(),
                }
            }
        })
    }
}

/// The "before" event a replacing command asks.
fn before_event(kind: &str) -> HookEvent {
    match kind {
        "fork" | "clone" => HookEvent::SessionBeforeFork,
        _ => HookEvent::SessionBeforeSwitch,
    }
}

impl<I: Front> Rpc<I> {
    /// Moves the replacing commands read, oldest first, on: asks the extensions that handle
    /// one's `session_before_*` event (the loop then runs on until their answer), and once
    /// answered carries it out and answers it, then the next; `Some` when the replay parted
    /// from its recording. `ui`: the extensions' UI requests, printed as their handlers ask
    /// (before the answer).
    pub(super) async fn replace_pending(
        &mut self,
        ui: &mut Option<UnboundedReceiver<Value>>,
    ) -> Option<Ended> {
        while self
            .pending_replace
            .front()
            .is_some_and(|p| !matches!(p.state, Asking::Asked(_)))
        {
            if let Some(ended) = self.replace_next(ui).await {
                return Some(ended);
            }
        }
        None
    }

    /// Moves the oldest replacing command one step on: asked, or carried out and answered.
    async fn replace_next(&mut self, ui: &mut Option<UnboundedReceiver<Value>>) -> Option<Ended> {
        let pending = self.pending_replace.front()?;
        if let Asking::Read = pending.state {
            let (kind, command) = (pending.kind.clone(), pending.command.clone());
            let asked = match self.before_asked(&kind, &command) {
                Ok(asked) => asked,
                Err(refusal) => {
                    let PendingReplace { id, kind, .. } = self.pending_replace.pop_front()?;
                    let message = match refusal {
                        Failure::Message(message) => message,
                        Failure::Unknown => "Unknown command".into(),
                    };
                    self.respond(&failure(id, &kind, message));
                    return None;
                }
            };
            if let Err(Stop::Ended(ended)) = self.ask(asked, ui) {
                return Some(ended);
            }
        }
        if !matches!(self.pending_replace.front()?.state, Asking::Answered(..)) {
            // Still with the handlers.
            return None;
        }
        let PendingReplace {
            id,
            kind,
            state,
            command,
        } = self.pending_replace.pop_front()?;
        let Asking::Answered(cancelled, asked) = state else {
            return None;
        };
        self.held_for_tree = None;
        for request in std::mem::take(&mut self.held_ui) {
            self.arrived(FrontEndInput::ExtensionUi(request));
        }
        self.print_ui(ui);
        let response = match self
            .replace_now(&kind, &command, cancelled, asked, ui)
            .await
        {
            Ok(data) => success(id, &kind, Some(data)),
            Err(Stop::Failed(Failure::Message(message))) => failure(id, &kind, message),
            Err(Stop::Failed(Failure::Unknown)) => failure(id, &kind, "Unknown command"),
            Err(Stop::Ended(ended)) => return Some(ended),
        };
        self.print_ui(ui);
        self.respond(&response);
        self.out.flush();
        None
    }

    /// Asks the extensions that handle it whether the replacement `asked` may go on (Pi's
    /// `emitBeforeSwitch`/`emitBeforeFork`): the session's [`Reply::Replacing`] comes through
    /// the loop, which reads on meanwhile (a handler's dialog is answered), as Pi's handlers
    /// run beside a run that streams on; nobody to ask is an answer at once.
    fn ask(
        &mut self,
        asked: HookPayload,
        ui: &mut Option<UnboundedReceiver<Value>>,
    ) -> Result<(), Stop> {
        let Some(pending) = self.pending_replace.front_mut() else {
            return Ok(());
        };
        if !self.session.machine().hears(asked.event()) {
            pending.state = Asking::Answered(false, None);
            return Ok(());
        }
        pending.state = Asking::Asked(asked.clone());
        let submitted = {
            let (out, waiting) = (&mut self.out, &mut self.started_waiters);
            self.session
                .submit(SessionInput::AskReplace(asked), |event| {
                    super::started::print_event(out, waiting, event)
                })
        };
        let replies = self.settled(submitted.map(Ok))?;
        self.replies(replies);
        self.print_ui(ui);
        Ok(())
    }

    async fn replace_now(
        &mut self,
        kind: &str,
        command: &Value,
        cancelled: bool,
        asked: Option<HookPayload>,
        ui: &mut Option<UnboundedReceiver<Value>>,
    ) -> Result<Value, Stop> {
        if cancelled {
            return Ok(json!({ "cancelled": true }));
        }
        match kind {
            "new_session" => {
                let choice = match command.get("parentSession").and_then(Value::as_str) {
                    Some(parent) => SessionChoice::Child(parent.to_owned()),
                    None => SessionChoice::New,
                };
                self.replace(&choice, "new", COMMAND_BINDS, ui).await?;
                Ok(json!({ "cancelled": false }))
            }
            "switch_session" => {
                let given = text_field(command, "sessionPath")?;
                let path = PathBuf::from(given);
                let path = if path.is_absolute() {
                    path
                } else {
                    self.runtime.cwd.join(path)
                };
                self.replace(&SessionChoice::Open(path), "resume", COMMAND_BINDS, ui)
                    .await?;
                Ok(json!({ "cancelled": false }))
            }
            _ => {
                // The entry asked about (a clone's leaf as it was when asked).
                let asked = match asked {
                    Some(asked) => asked,
                    None => self.before_asked(kind, command)?,
                };
                let HookPayload::SessionBeforeFork { entry_id, .. } = asked else {
                    return Err(Stop::Failed(Failure::Unknown));
                };
                let position = match kind {
                    "fork" => ForkPosition::Before,
                    _ => ForkPosition::At,
                };
                let text = self.fork(&entry_id, position, COMMAND_BINDS, ui).await?;
                // Pi answers a fork `{text, cancelled}` (`text` left out when undefined), a
                // clone `{cancelled}`.
                Ok(match (kind, text) {
                    ("fork", Some(text)) => json!({ "text": text, "cancelled": false }),
                    _ => json!({ "cancelled": false }),
                })
            }
        }
    }

    /// Pi's `AgentSessionRuntime.fork` once `session_before_fork` let it go on: the text of the
    /// user message forked before, if any. A session kept in memory forks in memory.
    pub(super) async fn fork(
        &mut self,
        entry_id: &str,
        position: ForkPosition,
        binds: &[bool],
        ui: &mut Option<UnboundedReceiver<Value>>,
    ) -> Result<Option<String>, Stop> {
        let (choice, text) =
            fork_choice(&self.session, entry_id, position).map_err(Failure::Message)?;
        self.replace(&choice, "fork", binds, ui).await?;
        Ok(text)
    }

    /// The replies of a step driven for a replacement; an error is reported (the replay
    /// parted from its recording: the loop ends).
    pub(super) fn settled(
        &mut self,
        driven: Result<Result<Vec<Reply>, SessionError>, DriveError>,
    ) -> Result<Vec<Reply>, Stop> {
        match driven {
            Ok(Ok(replies)) => Ok(replies),
            Ok(Err(error)) => {
                self.out.say(&error);
                Ok(Vec::new())
            }
            Err(error) => {
                if let Some(divergence) = self.session.interpreter().diverged(Some(&error)) {
                    return Err(Stop::Ended(Ended::Diverged(divergence)));
                }
                self.out.say(&error);
                Ok(Vec::new())
            }
        }
    }

    /// Feeds `input` (one of the session's own notifications) and drives the session until
    /// it is idle; every event printed when `print_all`, else only the handlers' errors.
    pub(super) async fn told(
        &mut self,
        input: SessionInput,
        print_all: bool,
        ui: &mut Option<UnboundedReceiver<Value>>,
    ) -> Result<(), Stop> {
        let out = &mut self.out;
        let print = |event: &Event| {
            if print_all || matches!(event, Event::Session(SessionEvent::ExtensionError { .. })) {
                out.json_line(event);
            }
        };
        let told = self.session.run(input, print).await;
        self.print_ui(ui);
        match told {
            Ok(driven) => {
                self.replies(driven.replies);
                Ok(())
            }
            Err(error) => {
                if let Some(divergence) = self.session.interpreter().diverged(Some(&error)) {
                    return Err(Stop::Ended(Ended::Diverged(divergence)));
                }
                self.out.say(&error);
                Ok(())
            }
        }
    }

    /// A replay prints the UI requests its recording goes on with, where the recorded run
    /// printed those its handlers sent as the front end drove the session itself.
    fn print_recorded_ui(&mut self) {
        while let Some((t, request)) = self.session.interpreter_mut().recorded_ui() {
            self.front_end_input(t, FrontEndInput::ExtensionUi(request));
        }
    }

    /// Prints the extensions' UI requests that came so far (a notice sent while a replacement
    /// is asked waits for its answer); a replay, those its recording goes on with.
    pub(super) fn print_ui(&mut self, ui: &mut Option<UnboundedReceiver<Value>>) {
        let Some(requests) = ui else {
            self.print_recorded_ui();
            return;
        };
        while let Ok(request) = requests.try_recv() {
            // A notice a handler of the replacement being asked sent waits for its answer,
            // as one the loop reads does.
            self.ui_request(request);
        }
        self.release_held_ui();
    }

    /// Builds the new session and replaces the old one with it ([`replacement::replace`]),
    /// the new session's extensions bound once for each of `binds` (Pi binds them once within
    /// the runtime's replacement and again for an RPC command; its printer subscribes after
    /// each bind, so `true`: what that one's handlers do is printed). Commands still waiting on
    /// the old session are answered: an abort as done, a compaction as cancelled.
    pub(super) async fn replace(
        &mut self,
        choice: &SessionChoice,
        reason: &str,
        binds: &[bool],
        ui: &mut Option<UnboundedReceiver<Value>>,
    ) -> Result<(), Stop> {
        let Some(reopen) = self.reopen.as_ref() else {
            return Err(Stop::Failed(not_while_replaying()));
        };
        // A replay whose recording ends here (made before recordings went on across
        // replacements, or replayed in place) holds the recorded session up to here.
        let reopened = match reopen(&self.runtime, choice, self.session.interpreter()) {
            Ok(Some(reopened)) => reopened,
            Ok(None) => return Err(Stop::Ended(Ended::Replaced)),
            Err(Refused::Failed(message)) => return Err(Stop::Failed(Failure::Message(message))),
            Err(Refused::Diverged(divergence)) => {
                return Err(Stop::Ended(Ended::Diverged(divergence)))
            }
        };
        let (mut session, opened) = reopened;
        session.set_input_source(pi_core::agent_session::RPC_SOURCE);
        self.later_steps += session.interpreter().steps();
        let mut front = Replacing { rpc: self, ui };
        // Boxed: the replacement's drives would make every future that awaits it larger.
        Box::pin(replacement::replace(
            &mut front,
            (session, opened),
            reason,
            binds,
        ))
        .await
    }
}

/// The RPC loop while it replaces its session: the session's notifications told with the
/// extensions' UI requests printed as they come.
struct Replacing<'a, I: Front> {
    rpc: &'a mut Rpc<I>,
    ui: &'a mut Option<UnboundedReceiver<Value>>,
}

impl<I: Front> Replacer for Replacing<'_, I> {
    type Io = I;
    type Stop = Stop;

    fn runtime(&self) -> &Runtime {
        &self.rpc.runtime
    }

    fn session(&mut self) -> &mut AgentSession<I> {
        &mut self.rpc.session
    }

    fn runtime_and_session(&mut self) -> (&Runtime, &mut AgentSession<I>) {
        (&self.rpc.runtime, &mut self.rpc.session)
    }

    async fn tell(&mut self, input: SessionInput, print_all: bool) -> Result<(), Stop> {
        self.rpc.told(input, print_all, self.ui).await
    }

    fn extensions_loaded(&mut self) {
        // A host started for the new session's load (the run had none) gets RPC mode's UI.
        if self.ui.is_none() {
            *self.ui = self.rpc.enable_extension_ui();
        }
    }

    fn diverged(divergence: Divergence) -> Stop {
        Stop::Ended(Ended::Diverged(divergence))
    }

    fn say(&mut self, error: &dyn std::fmt::Display) {
        self.rpc.out.say(error);
    }

    fn left_old(&mut self) {
        let rpc = &mut *self.rpc;
        rpc.bash = None;
        rpc.generation += 1;
        for id in std::mem::take(&mut rpc.abort_waiters) {
            rpc.respond(&success(id, "abort", None));
        }
        for (_, id) in std::mem::take(&mut rpc.compact_waiters) {
            rpc.respond(&failure(id, "compact", "Compaction cancelled"));
        }
    }
}

impl<I: Front> Rpc<I> {
    /// `export_html`. Replaying, it is answered as the recorded run was (the path derived from
    /// the recorded working directory and session file) and nothing is read or written: the
    /// page the recorded run wrote is not this replay's to write, wherever the line points.
    fn export_html(&self, command: &Value) -> Result<Value, Failure> {
        let Some(file) = self.session.file() else {
            return Err(Failure::Message(
                "Cannot export in-memory session to HTML".into(),
            ));
        };
        let replaying = matches!(self.role, super::Role::Replaying);
        // The file written so far: the replay's own copy stands for the recorded one.
        let written = if replaying {
            self.session.written_file().unwrap_or(file)
        } else {
            file
        };
        if !written.exists() {
            return Err(Failure::Message(
                "Nothing to export yet - start a conversation first".into(),
            ));
        }
        let out = command.get("outputPath").and_then(Value::as_str).map(|p| {
            let path = PathBuf::from(p);
            if path.is_absolute() {
                path
            } else {
                self.runtime.cwd.join(path)
            }
        });
        let path = if replaying {
            crate::export::export_path(file, out.as_deref())
        } else {
            crate::export::export_html(file, out.as_deref()).map_err(Failure::Message)?
        };
        Ok(json!({ "path": path.display().to_string() }))
    }
}

/// The answer to a replacing command where none can be built (a replay, a hybrid run).
fn not_while_replaying() -> Failure {
    Failure::Message(replacement::NOT_WHILE_REPLAYING.into())
}
