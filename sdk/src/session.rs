//! [`Session`]: the handle of a running session (Pi's `AgentSession`). The session machine and
//! its interpreter sit behind one async lock held for the length of a run, so `prompt` and
//! `wait_idle` queue behind the run in progress, while `steer`, `follow_up` and `abort` go
//! through the interpreter's command channel and reach the run without waiting for it.

use std::path::PathBuf;
use std::sync::Arc;

use pi_cassettes::sha256_hex;
use pi_core::agent_session::{NavigateRequest, Reply, SessionInput, SessionMachine};
use pi_core::event::Event;
use pi_core::message::{AgentMessage, ImageContent};
use pi_core::model::{Model, ThinkingLevel};
use pi_effects::agent_session::AgentSession;
use pi_effects::driver::{Driven, Interpreter, RunEnding};
use pi_effects::session::SessionFile;
use tokio::sync::{broadcast, mpsc::UnboundedSender, Mutex};

use crate::io::Io;
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

#[derive(Debug)]
struct Shared {
    session: Mutex<AgentSession<Io>>,
    /// The interpreter's command channel (none in a replay, whose commands are recorded).
    commands: Option<UnboundedSender<SessionInput>>,
    events: broadcast::Sender<Event>,
    session_id: String,
}

impl Session {
    pub(crate) fn new(
        machine: SessionMachine,
        io: Io,
        file: SessionFile,
        commands: Option<UnboundedSender<SessionInput>>,
    ) -> Session {
        let session_id = machine.tree().id().to_owned();
        let (events, _) = broadcast::channel(EVENT_BUFFER);
        Session {
            shared: Arc::new(Shared {
                session: Mutex::new(AgentSession::from_parts(machine, io, file)),
                commands,
                events,
                session_id,
            }),
        }
    }

    /// The session's id (the session file's header `id`), e.g. to name a log per session.
    pub fn session_id(&self) -> &str {
        &self.shared.session_id
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
        if let Some(commands) = &self.shared.commands {
            // The receiver lives as long as the session, which `self` holds.
            let _ = commands.send(input);
        }
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
    /// Waits for idle; returns Pi's error text when the target does not exist.
    pub async fn navigate(&self, request: NavigateRequest) -> Result<(), Error> {
        let driven = self.run(SessionInput::Navigate(request)).await?;
        for reply in driven.replies {
            if let Reply::Navigated(Err(message)) = reply {
                return Err(Error::Refused(message));
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

    /// The session file, `None` when kept in memory.
    pub async fn session_file(&self) -> Option<PathBuf> {
        let session = self.shared.session.lock().await;
        session.file().map(PathBuf::from)
    }

    /// Ends the session: a recording writes its outcome line (and is complete only then); a
    /// replay reports whether it used its whole recording (a divergence otherwise).
    pub async fn finish(&self) -> Result<(), Error> {
        let mut session = self.shared.session.lock().await;
        let file = session.written_file().map(PathBuf::from);
        let digest = sha256_hex(b"");
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

    /// Feeds `input` and drives the session until idle, publishing its events.
    async fn run(&self, input: SessionInput) -> Result<Driven, Error> {
        let events = &self.shared.events;
        let mut session = self.shared.session.lock().await;
        session
            .run(input, |event| {
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
