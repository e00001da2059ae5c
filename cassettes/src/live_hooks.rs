//! Replaying with extensions run again (`pi replay --extensions live`): the model's side and
//! the tools come from the cassette, but at each hook point the extensions' handlers run for
//! real and their decision is what the machine gets, at the recorded time. An extension that
//! now decides differently shows up as a divergence at the next effect the decision changes
//! (the request whose system prompt it rewrote, the call it no longer blocks) — which is how a
//! user tests a change to an extension against a corpus.

use std::collections::HashMap;

use std::sync::Arc;

use pi_core::agent::hook_state::HookState;
use pi_core::agent::hooks::{HookOutcome, HookPayload};
use pi_effects::extension::{ExtensionRegistry, World};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The extensions asked at a replay's hook points.
#[derive(Debug)]
pub struct LiveHooks {
    extensions: ExtensionRegistry,
    running: HashMap<u64, (JoinHandle<HookOutcome>, CancellationToken)>,
}

impl LiveHooks {
    /// Asks `extensions` instead of the recording.
    pub fn new(extensions: ExtensionRegistry) -> Self {
        LiveHooks {
            extensions,
            running: HashMap::new(),
        }
    }

    /// Starts the handlers of hook point `call`, their getters reading `state` (needs a tokio
    /// runtime).
    pub fn start(&mut self, call: u64, payload: HookPayload, state: Option<Box<HookState>>) {
        let state: Option<Arc<HookState>> = state.map(Arc::from);
        if let Some(state) = &state {
            self.extensions.observe(state);
        }
        let extensions = self.extensions.clone();
        let signal = CancellationToken::new();
        let theirs = signal.clone();
        let task = tokio::spawn(async move {
            let world = World::of(&payload);
            let outcome = extensions.decide_with(payload, state, theirs).await;
            world.carry_out(outcome).await
        });
        self.running.insert(call, (task, signal));
    }

    /// Takes in the state a tool's call carried, in effect order, as a hook point's.
    pub fn observe(&self, state: &HookState) {
        self.extensions.observe(state);
    }

    /// The session cancelled hook point `call` (an aborted compaction's): its handlers' signal
    /// fires.
    pub fn cancel(&self, call: u64) {
        if let Some((_, signal)) = self.running.get(&call) {
            signal.cancel();
        }
    }

    /// Whether hook point `call` is answered by the extensions rather than the recording.
    pub fn runs(&self, call: u64) -> bool {
        self.running.contains_key(&call)
    }

    /// The extensions' decision at hook point `call`, once their handlers ended.
    pub async fn decision(&mut self, call: u64) -> Option<HookOutcome> {
        self.running.remove(&call)?.0.await.ok()
    }
}
