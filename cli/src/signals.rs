//! SIGTERM and SIGHUP: Pi's print and RPC modes kill the commands their tools started and exit
//! with 143 or 129. Here the run is aborted, which kills every tool's process group. SIGINT
//! too (exit 130), where Pi dies at once and leaves its tools' commands running in their own
//! process groups: an eval's Ctrl-C reaches an unconfined agent as SIGINT.

use pi_core::agent_session::SessionInput;
use pi_core::event::Event;
use pi_effects::agent_session::AgentSession;
use pi_effects::driver::Interpreter;
use tokio::signal::unix::{signal, Signal, SignalKind};

/// SIGTERM, SIGHUP and SIGINT, which end a run as Pi ends it on the first two: exit 143, 129
/// or 130.
pub struct Signals {
    term: Option<Signal>,
    hup: Option<Signal>,
    int: Option<Signal>,
}

impl Signals {
    /// Listens from now on (a signal that cannot be listened to is never reported).
    pub fn new() -> Self {
        Signals {
            term: signal(SignalKind::terminate()).ok(),
            hup: signal(SignalKind::hangup()).ok(),
            int: signal(SignalKind::interrupt()).ok(),
        }
    }

    /// The exit code for the next signal that arrives.
    pub async fn received(&mut self) -> i32 {
        let term = async {
            match self.term.as_mut() {
                Some(term) => term.recv().await,
                None => std::future::pending().await,
            }
        };
        let hup = async {
            match self.hup.as_mut() {
                Some(hup) => hup.recv().await,
                None => std::future::pending().await,
            }
        };
        let int = async {
            match self.int.as_mut() {
                Some(int) => int.recv().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = term => 143,
            _ = hup => 129,
            _ = int => 130,
        }
    }
}

/// Aborts the run so every tool's process group is killed (Pi kills its detached children),
/// giving the aborted run up to two seconds to end. The abort is driven as every input is (the
/// interpreter stamps and records it, and answers the machine until it is idle); a refused
/// abort, an error or the deadline ends the wait.
pub async fn stop<I: Interpreter + Send>(
    session: &mut AgentSession<I>,
    print: &mut impl FnMut(&Event),
) {
    let aborted = session.run(SessionInput::Abort, &mut *print);
    let _ = tokio::time::timeout(std::time::Duration::from_secs(2), aborted).await;
}
