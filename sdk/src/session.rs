//! [`Session`]: the handle of a running session (Pi's `AgentSession`). The session machine and
//! its interpreter sit behind one async lock held for the length of a run, so `prompt` and
//! `wait_idle` queue behind the run in progress, while `steer`, `follow_up` and `abort` go
//! through the interpreter's command channel and reach the run without waiting for it.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex as StdMutex, MutexGuard, PoisonError};

use pi_cassettes::convert::to_json;
use pi_cassettes::format::SessionStart;
use pi_cassettes::replay::ReplayedSession;
use pi_cassettes::{recording_transport, sha256_hex};
use pi_core::agent::hooks::{HookEvent, HookPayload};
use pi_core::agent_session::{NavigateRequest, Reply, SessionInput};
use pi_core::event::{Event, SessionEvent};
use pi_core::message::{AgentMessage, ImageContent};
use pi_core::model::{Model, ThinkingLevel};
use pi_effects::agent_session::AgentSession;
use pi_effects::driver::{Driven, Interpreter, RunEnding};
use pi_effects::session::{plan_fork, ForkPosition, ForkTarget};
use tokio::sync::{broadcast, mpsc::UnboundedSender, Mutex};

use crate::builder::{Reopen, Target};
use crate::io::Io;
use crate::printed::Printed;
use crate::Error;

/// How many events a subscriber may fall behind before it misses some
/// ([`broadcast::error::RecvError::Lagged`] says how many): a whole turn's streamed deltas.
const EVENT_BUFFER: usize = 65_536;

/// A coding-agent session: send prompts, steer and abort runs, watch their events. Cheap to
/// clone; the clones drive the same session (one task prompts, another steers or aborts).
#[derive(Clone, Debug)]
pub struct Session {
    shared: Arc<Shared>,
}

/// The refusal of a replacement in a replay whose recording holds no session after this one
/// (the recorded run did not replace it here, or was recorded before recordings went on
/// across replacements).
const NOT_RECORDED: &str = "The recording holds no session after this one: the recorded run did not replace its session here";

/// A replacement's new session, built and not yet in place.
struct Next {
    session: AgentSession<Io>,
    commands: Option<UnboundedSender<SessionInput>>,
    /// What a recording's `replaced` line holds of it: its config and its start.
    recorded: Option<(serde_json::Value, SessionStart)>,
}

#[derive(Debug)]
struct Shared {
    session: Mutex<AgentSession<Io>>,
    /// The interpreter's command channel (none in a replay, whose commands are recorded);
    /// replaced with the session.
    commands: StdMutex<Option<UnboundedSender<SessionInput>>>,
    events: broadcast::Sender<Event>,
    session_id: StdMutex<String>,
    /// The queues as the last `queue_update` showed them: what [`Session::clear_queue`]
    /// hands back while a run holds the session.
    queued: StdMutex<(Vec<String>, Vec<String>)>,
    /// Where a replacement's new session comes from.
    reopen: Reopen,
    /// How many sessions were replaced so far: a seeded builder's next ids start from it.
    generation: AtomicU64,
    /// The `session_start` the next [`Session::bind_extensions`] tells once the session was
    /// replaced: the replacement's reason and the old session's file.
    start: StdMutex<Option<(String, Option<String>)>>,
    /// A recording's: what `pi --mode json` would have printed so far, digested (taken when
    /// the recording ends).
    printed: StdMutex<Option<Printed>>,
}

/// The value behind `mutex`, whether or not a thread panicked holding it (every value kept so
/// is whole after each write).
fn locked<T>(mutex: &StdMutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Session {
    pub(crate) fn new(
        session: AgentSession<Io>,
        commands: Option<UnboundedSender<SessionInput>>,
        reopen: Reopen,
        mut printed: Option<Printed>,
    ) -> Session {
        let session_id = session.machine().tree().id().to_owned();
        if let Some(printed) = &mut printed {
            printed.line(session.machine().tree().header());
        }
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        Session {
            shared: Arc::new(Shared {
                session: Mutex::new(session),
                commands: StdMutex::new(commands),
                events,
                session_id: StdMutex::new(session_id),
                queued: StdMutex::default(),
                reopen,
                generation: AtomicU64::new(0),
                start: StdMutex::new(None),
                printed: StdMutex::new(printed),
            }),
        }
    }

    /// The session's id (the session file's header `id`), e.g. to name a log per session. A
    /// replacement ([`new_session`](Self::new_session) and the others) changes it.
    pub fn session_id(&self) -> String {
        locked(&self.shared.session_id).clone()
    }

    /// Every event from now on, in order, as `pi --mode json` prints them (Pi's `subscribe`).
    /// Dropping the receiver unsubscribes. A receiver that falls more than a run's worth of
    /// events behind is told how many it missed.
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.shared.events.subscribe()
    }

    /// Sends a user message and runs until the session is idle again: every turn, tool call,
    /// queued steering and follow-up message, retry and compaction (Pi's `prompt`). Waits for a
    /// run in progress to end first. The extensions' `input` handlers see the text as given;
    /// `/skill:name args` and `/template args` expand after them, as in Pi.
    pub async fn prompt(&self, text: &str) -> Result<Driven, Error> {
        self.prompt_with_images(text, Vec::new()).await
    }

    /// [`prompt`](Self::prompt) with images attached to the message.
    pub async fn prompt_with_images(
        &self,
        text: &str,
        images: Vec<ImageContent>,
    ) -> Result<Driven, Error> {
        self.run(SessionInput::Prompt {
            text: text.to_owned(),
            images,
            streaming_behavior: None,
        })
        .await
    }

    /// Queues a message delivered after the current turn's tools, before the next model call
    /// (Pi's `steer`): redirects an agent while it works. Sent while idle, it waits for the
    /// next run. In a replay the recorded steering is used and this does nothing.
    pub fn steer(&self, text: &str) {
        self.command(SessionInput::Steer {
            text: text.to_owned(),
            images: Vec::new(),
        });
    }

    /// Queues a message delivered only when the agent would otherwise stop (Pi's `followUp`):
    /// chains a next task onto the run.
    pub fn follow_up(&self, text: &str) {
        self.command(SessionInput::FollowUp {
            text: text.to_owned(),
            images: Vec::new(),
        });
    }

    /// Aborts the run in progress: the model call is cancelled, running tools are stopped, and
    /// the run ends with `agent_end` (Pi's `abort`). The `prompt` that started it returns.
    pub fn abort(&self) {
        self.command(SessionInput::Abort);
    }

    fn command(&self, input: SessionInput) {
        if let Some(commands) = &*locked(&self.shared.commands) {
            // The receiver lives as long as the session, which `self` holds.
            let _ = commands.send(input);
        }
    }

    /// Empties both queues and returns what they held, steering then follow-up texts (Pi
    /// 1.5.2's `clearQueue`, the RPC `clear_queue`): the cleared messages are never delivered,
    /// and a `queue_update` with empty queues follows. Reaches a run in progress without
    /// waiting for it; a steering or follow-up message sent while idle waits in no queue yet
    /// (it starts the next run) and is not cleared.
    pub async fn clear_queue(&self) -> (Vec<String>, Vec<String>) {
        if let Ok(session) = self.shared.session.try_lock() {
            let (steering, follow_up) = session.machine().queued_texts();
            let queued = (steering.to_vec(), follow_up.to_vec());
            drop(session);
            // An idle session takes the input at once; it only fails when the session is gone.
            let _ = self.run(SessionInput::ClearQueue).await;
            return queued;
        }
        let queued = locked(&self.shared.queued).clone();
        self.command(SessionInput::ClearQueue);
        queued
    }

    /// Returns once no run is in progress (Pi's `waitForIdle`).
    pub async fn wait_idle(&self) {
        drop(self.shared.session.lock().await);
    }

    /// Switches the model for the next calls, and the thinking level as Pi's `setModel` does
    /// (the settings' level for the model, else the current one clamped). Waits for idle.
    pub async fn set_model(&self, model: Model) -> Result<(), Error> {
        self.run(SessionInput::SetModel(model)).await.map(drop)
    }

    /// Sets the thinking level, clamped to the model (Pi's `setThinkingLevel`). Waits for idle.
    pub async fn set_thinking_level(&self, level: ThinkingLevel) -> Result<(), Error> {
        self.run(SessionInput::SetThinkingLevel(level))
            .await
            .map(drop)
    }

    /// Moves the session's leaf to another entry, optionally summarising the branch left (Pi's
    /// `navigateTree`): the next prompt continues from there, the old branch stays in the tree.
    /// Waits for idle; returns Pi's error text when the target does not exist, and
    /// [`Error::Cancelled`] when an extension's `session_before_tree` handler cancelled it
    /// (the extensions hear `session_tree` once the leaf moved).
    pub async fn navigate(&self, request: NavigateRequest) -> Result<(), Error> {
        let driven = self.run(SessionInput::Navigate(request)).await?;
        for reply in driven.replies {
            match reply {
                Reply::Navigated(Err(message)) => return Err(Error::Refused(message)),
                Reply::Navigated(Ok(navigated)) if navigated.cancelled && !navigated.aborted => {
                    return Err(Error::Cancelled)
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// The transcript (Pi's `state.messages`), once the run in progress ended.
    pub async fn messages(&self) -> Vec<AgentMessage> {
        let session = self.shared.session.lock().await;
        session.machine().agent().messages().to_vec()
    }

    /// The ids of the entries on the active branch, root first: the targets of
    /// [`navigate`](Self::navigate).
    pub async fn branch_ids(&self) -> Vec<String> {
        let session = self.shared.session.lock().await;
        session
            .machine()
            .tree()
            .branch_path(None)
            .iter()
            .map(|entry| entry.id().to_owned())
            .collect()
    }

    /// The session file, `None` when kept in memory (a replay's: the file it writes).
    pub async fn session_file(&self) -> Option<PathBuf> {
        let session = self.shared.session.lock().await;
        session.written_file().map(PathBuf::from)
    }

    /// Leaves this session for a new, empty one (Pi's `AgentSessionRuntime.newSession`), in
    /// memory or in the session dir as the builder said, its header naming `parent_session`
    /// when given. Waits for idle. Everything of the old session stays with it: the transcript,
    /// the queues, the model calls' thread state; the new one starts from the builder's options.
    /// A recording goes on into the same cassette (a `replaced` line says how this session
    /// left its file and what the new one was built from); a replay checks this session's
    /// part of its recording and goes on in the recording's next session. Subscribers keep
    /// receiving the new session's events.
    pub async fn new_session(&self, parent_session: Option<&str>) -> Result<(), Error> {
        let asked = HookPayload::SessionBeforeSwitch {
            reason: "new".into(),
            target_session_file: None,
        };
        self.ask_replace(asked).await?;
        self.replace(
            Target::New {
                parent: parent_session.map(str::to_owned),
            },
            "new",
        )
        .await
    }

    /// Leaves this session for the one in `path` (relative to the builder's `cwd`; a missing
    /// file starts a new session there), its transcript and model restored from the file
    /// (Pi's `switchSession`). Otherwise as [`new_session`](Self::new_session).
    pub async fn switch_session(&self, path: impl AsRef<Path>) -> Result<(), Error> {
        let asked = HookPayload::SessionBeforeSwitch {
            reason: "resume".into(),
            target_session_file: Some(path.as_ref().display().to_string()),
        };
        self.ask_replace(asked).await?;
        let path = match &self.shared.reopen {
            Reopen::Build(builder) => builder.resolve(path.as_ref()),
            Reopen::Replay(_) => path.as_ref().to_path_buf(),
        };
        self.replace(Target::Open(path), "resume").await
    }

    /// Leaves this session for a new one holding its branch up to just before the user message
    /// `entry_id` (Pi's `fork`), and returns that message's text for editing: a new file in
    /// the session dir, or a new session in memory for one kept in memory. At the first message
    /// the new session is empty and its header names this one's file. Pi's error text when the
    /// entry is not a user message, and when this session's file is not written yet. Otherwise
    /// as [`new_session`](Self::new_session).
    pub async fn fork(&self, entry_id: &str) -> Result<String, Error> {
        let asked = HookPayload::SessionBeforeFork {
            entry_id: entry_id.to_owned(),
            position: "before".into(),
        };
        self.ask_replace(asked).await?;
        let (target, text) = {
            let session = self.shared.session.lock().await;
            let tree = session.machine().tree();
            let saved = session.is_saved();
            let plan = plan_fork(tree, session.file(), saved, entry_id, ForkPosition::Before)
                .map_err(|refusal| Error::Refused(refusal.into()))?;
            let target = match plan.target {
                ForkTarget::New { parent } => Target::New { parent },
                ForkTarget::BranchInMemory { leaf } => Target::BranchInMemory {
                    tree: Box::new(tree.clone()),
                    leaf,
                },
                ForkTarget::Branch { from, leaf } => Target::Branch { from, leaf },
            };
            (target, plan.text.unwrap_or_default())
        };
        self.replace(target, "fork").await?;
        Ok(text)
    }

    /// Asks the extensions that handle it whether the replacement `asked` may go on (Pi's
    /// `emitBeforeSwitch`/`emitBeforeFork`), once idle: [`Error::Cancelled`] when one
    /// cancelled it. A recording keeps their answer (a replay gives it back without them).
    async fn ask_replace(&self, asked: HookPayload) -> Result<(), Error> {
        let hears = {
            let session = self.shared.session.lock().await;
            session.machine().hears(asked.event())
        };
        if !hears {
            return Ok(());
        }
        let driven = self.run(SessionInput::AskReplace(asked)).await?;
        let cancelled = driven
            .replies
            .iter()
            .any(|reply| matches!(reply, Reply::Replacing { cancelled: true }));
        if cancelled {
            return Err(Error::Cancelled);
        }
        Ok(())
    }

    /// Builds the session `target` names and puts it in place of this one, once idle: the
    /// old session's extensions hear `session_shutdown` with `reason` and the new file, and the
    /// next [`bind_extensions`](Self::bind_extensions) tells the new one's `session_start` with
    /// `reason` and the old file, as Pi's runtime gives its new session. A recording goes on
    /// into the same cassette once the old session is gone (what it started with it), with a
    /// `replaced` line; a replay checks the old session's part of its recording and goes on in
    /// the next part.
    async fn replace(&self, target: Target, reason: &str) -> Result<(), Error> {
        let mut session = self.shared.session.lock().await;
        let generation = self.shared.generation.load(Ordering::SeqCst) + 1;
        let next = self.next_session(&session, &target, generation)?;
        let previous = session.file().map(|f| f.display().to_string());
        if session.machine().hears(HookEvent::SessionShutdown) {
            let leave = SessionInput::Leave {
                reason: reason.to_owned(),
                target_session_file: next.session.file().map(|f| f.display().to_string()),
            };
            self.run_in(&mut session, leave).await?;
        }
        *locked(&self.shared.start) = Some((reason.to_owned(), previous));
        self.shared.generation.store(generation, Ordering::SeqCst);
        *locked(&self.shared.session_id) = next.session.machine().tree().id().to_owned();
        *locked(&self.shared.commands) = next.commands;
        *locked(&self.shared.queued) = (Vec::new(), Vec::new());
        let old = std::mem::replace(&mut *session, next.session);
        let left_file = old.written_file().map(Path::to_path_buf);
        match (old.into_interpreter(), next.recorded) {
            (Io::Record(recording), Some((config, start))) => {
                recording.replaced(reason, left_file.as_deref(), config, start);
            }
            (Io::Replay(replay), _) => replay
                .left(reason, left_file.as_deref())
                .map_err(|divergence| Error::Cassette(divergence.to_string()))?,
            _ => {}
        }
        Ok(())
    }

    /// The session a replacement puts in place of `session`: built from the builder's
    /// options (recorded beside `session` when it records), or the recording's next part.
    fn next_session(
        &self,
        session: &AgentSession<Io>,
        target: &Target,
        generation: u64,
    ) -> Result<Next, Error> {
        let builder = match (&self.shared.reopen, session.interpreter()) {
            (Reopen::Replay(dir), Io::Replay(replay)) => {
                let next = replay
                    .cassette()
                    .next_session()
                    .ok_or_else(|| Error::Refused(NOT_RECORDED.into()))?;
                let rebuilt = ReplayedSession::rebuild(next, dir)
                    .map_err(|divergence| Error::Cassette(divergence.to_string()))?;
                return Ok(Next {
                    session: rebuilt.into_session(|replay| Io::Replay(Box::new(replay))),
                    commands: None,
                    recorded: None,
                });
            }
            (Reopen::Replay(_), _) => return Err(Error::Refused(NOT_RECORDED.into())),
            (Reopen::Build(builder), _) => builder,
        };
        let opened = builder.open(target, generation)?;
        let (io, recorded) = match session.interpreter() {
            Io::Record(recording) => {
                crate::builder::learn_keys(opened.later.as_ref(), recording.recorder());
                let live = opened.live.with_call_transport(recording_transport(
                    recording.recorder().clone(),
                    Arc::clone(&opened.clock),
                ));
                let recorded = (to_json(&opened.config), opened.start);
                (Io::Record(recording.beside(live)), Some(recorded))
            }
            _ => (Io::Live(opened.live), None),
        };
        Ok(Next {
            session: AgentSession::from_parts(opened.machine, io, opened.file),
            commands: Some(opened.commands),
            recorded,
        })
    }

    /// Tells the extensions the session has started (`session_start`, reason `startup`), as
    /// Pi's SDK asks its callers to with `bindExtensions()`: call it once, before the first
    /// prompt, when an extension sets itself up there. Their handlers' actions are applied and
    /// recorded; nothing happens when no extension handles the event.
    pub async fn bind_extensions(&self) -> Result<(), Error> {
        let start = match locked(&self.shared.start).clone() {
            Some((reason, previous_session_file)) => SessionInput::Replaced {
                reason,
                previous_session_file,
                loaded: None,
            },
            None => SessionInput::Start,
        };
        let hears = self.shared.session.lock().await.machine().hears_start();
        self.tell(hears, start).await
    }

    /// Tells the extensions the session is ending (`session_shutdown`, reason `quit`), as Pi's
    /// runtime does before the process exits; call it before [`finish`](Self::finish).
    pub async fn shutdown(&self) -> Result<(), Error> {
        let hears = (self.shared.session.lock().await.machine()).hears(HookEvent::SessionShutdown);
        self.tell(hears, SessionInput::Shutdown).await
    }

    async fn tell(&self, hears: bool, input: SessionInput) -> Result<(), Error> {
        if hears {
            self.run(input).await?;
        }
        Ok(())
    }

    /// Ends the session: a recording writes its outcome line (and is complete only then); a
    /// replay reports whether it used its whole recording (a divergence otherwise). The MCP
    /// servers the builder started are stopped, together, as Pi stops them.
    pub async fn finish(&self) -> Result<(), Error> {
        let ended = {
            let mut session = self.shared.session.lock().await;
            end(&mut session, locked(&self.shared.printed).take())
        };
        if let Reopen::Build(builder) = &self.shared.reopen {
            for background in builder.mcp_background() {
                background.stop().await;
            }
            builder.mcp_later().stop().await;
            pi_mcp::stop_servers(builder.mcp_connections()).await;
        }
        ended
    }

    /// Feeds `input` and drives the session until idle, publishing its events.
    async fn run(&self, input: SessionInput) -> Result<Driven, Error> {
        let mut session = self.shared.session.lock().await;
        self.run_in(&mut session, input).await
    }

    /// [`run`](Self::run) on the session already locked.
    async fn run_in(
        &self,
        session: &mut AgentSession<Io>,
        input: SessionInput,
    ) -> Result<Driven, Error> {
        let events = &self.shared.events;
        let queued = &self.shared.queued;
        let printed = &self.shared.printed;
        // What `pi --mode json` prints of the run, as a replay of the recording prints it.
        let prints = pi_cassettes::printed::prints_events(&input);
        session
            .run(input, |event| {
                if prints && pi_cassettes::printed::is_printed(event) {
                    if let Some(printed) = locked(printed).as_mut() {
                        printed.line(event);
                    }
                }
                if let Event::Session(SessionEvent::QueueUpdate {
                    steering,
                    follow_up,
                }) = event
                {
                    *locked(queued) = (steering.clone(), follow_up.clone());
                }
                // Without a subscriber the event is not copied (a turn streams thousands of
                // deltas); the session's state is applied either way.
                if events.receiver_count() > 0 {
                    let _ = events.send(event.clone());
                }
            })
            .await
            .map_err(Error::from)
    }
}

/// Ends `session`'s interpreter: a recording's outcome line, a replay's check that it used
/// its whole recording.
fn end(session: &mut AgentSession<Io>, printed: Option<Printed>) -> Result<(), Error> {
    let file = session.written_file().map(PathBuf::from);
    let digest = printed.map_or_else(|| sha256_hex(b""), |p| p.digest());
    let ending = RunEnding {
        exit: 0,
        stdout: &digest,
        events: None,
        stdout_text: None,
        events_text: None,
        session_file: file.as_deref(),
    };
    let io = session.interpreter_mut();
    if let Io::Replay(replay) = io {
        replay
            .finish()
            .map_err(|d| Error::Cassette(d.to_string()))?;
    }
    io.end(&ending).map_err(|e| Error::Cassette(e.to_string()))
}
