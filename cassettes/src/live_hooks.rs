//! Replaying with extensions run again (`pi replay --extensions live`): the model's side and
//! the tools come from the cassette, but at each hook point the extensions' handlers run for
//! real and their decision is what the machine gets, at the recorded time. An extension that
//! now decides differently shows up as a divergence at the next effect the decision changes
//! (the request whose system prompt it rewrote, the call it no longer blocks) — which is how a
//! user tests a change to an extension against a corpus. The built-in MCP extension is not run
//! again (a replay connects no server): the tools it registered at a hook point (its
//! `registerTools` and `registerDeferredTools` actions of the recorded decision) are registered
//! again there ahead of the handlers, as it registered them, so they read them as recorded.

use std::collections::HashMap;

use std::sync::Arc;

use pi_core::agent::hook_state::HookState;
use pi_core::agent::hooks::{HandledHooks, HookAction, HookOutcome, HookPayload};
use pi_effects::extension::{ExtensionRegistry, HookContext, HookFuture, RustExtension, World};
use serde_json::Value;
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
    /// runtime), after the built-in MCP extension's registrations of `recorded` (the recorded
    /// decision's outcome, if the recording has one).
    pub fn start(
        &mut self,
        call: u64,
        payload: HookPayload,
        state: Option<Box<HookState>>,
        recorded: Option<&Value>,
    ) {
        let state: Option<Arc<HookState>> = state.map(Arc::from);
        if let Some(state) = &state {
            self.extensions.observe(state);
        }
        let mut extensions = self.extensions.clone();
        let registered = mcp_registrations(recorded);
        if !registered.is_empty() {
            extensions.load_first(Arc::new(RecordedMcp {
                handles: HandledHooks::of([payload.event()]),
                actions: registered,
            }));
        }
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

/// The built-in MCP extension's registrations among a recorded decision's actions (only it
/// registers tools with actions).
fn mcp_registrations(recorded: Option<&Value>) -> Vec<HookAction> {
    recorded
        .and_then(|outcome| outcome.get("actions"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|action| serde_json::from_value::<HookAction>(action.clone()).ok())
        .filter(|action| {
            matches!(
                action,
                HookAction::RegisterTools { .. } | HookAction::RegisterDeferredTools { .. }
            )
        })
        .collect()
}

/// The built-in MCP extension at one hook point of a replay: its recorded registrations asked
/// for again, ahead of the other handlers.
#[derive(Debug)]
struct RecordedMcp {
    handles: HandledHooks,
    actions: Vec<HookAction>,
}

impl RustExtension for RecordedMcp {
    fn name(&self) -> &str {
        "builtin:mcp"
    }

    fn handles(&self) -> HandledHooks {
        self.handles.clone()
    }

    fn handle<'a>(&'a self, _payload: &'a HookPayload, cx: &'a HookContext) -> HookFuture<'a> {
        Box::pin(async move {
            for action in &self.actions {
                cx.act(action.clone());
            }
            Ok(None)
        })
    }
}
