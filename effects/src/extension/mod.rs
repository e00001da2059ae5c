//! Extensions: programs that hook into the loop (Pi 1.5.2's extension events), in Rust, or Pi's
//! TypeScript ones run by the Node host of [`sidecar`] (their tools and event handlers).
//! An extension says which hook points it handles
//! ([`RustExtension::handles`]); an interpreter asks the [`ExtensionRegistry`] for the decision at
//! a point where the machine waits, and the registry calls the handlers in Pi's order (load order,
//! then registration order) and composes their answers with the core's [`Composer`]. The decision
//! and the actions the handlers asked for come back as one [`HookOutcome`], which is what a
//! cassette records: a replay answers the hook point from it without running the extension.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use futures_util::FutureExt;
use tokio_util::sync::CancellationToken;

pub mod runtime_providers;
pub mod sidecar;
mod world;

pub use world::World;

pub use pi_providers::registry::ProviderRegistration;

pub use pi_core::agent::hook_state::HookState;
pub use pi_core::agent::hooks::{
    Composer, DiscoveredPath, DiscoveredResources, ExecRun, HandledHooks, HandlerResult,
    HookAction, HookDecision, HookError, HookEvent, HookOutcome, HookPayload, InjectedMessage,
    InputAction, SuppliedCompaction, SuppliedSummary, ToolCallVerdict, TreeAnswer, UserBashAnswer,
    UserBashHandled, WarmAction, TOOL_BLOCKED,
};

/// A run continued live (a hybrid replay) reached a hook point its recording's extensions
/// handled and no extension loaded now does: it stops, as composing no handler would decide
/// what the recording's extensions may have refused.
#[derive(Debug, thiserror::Error)]
#[error("the recording's extensions handle `{}`, but no extension loaded here does: load the extension to go on live (a replay answers the hook point from the recording)", .event.name())]
pub struct MissingExtension {
    /// The hook point reached.
    pub event: HookEvent,
}

/// What a handler returns: its result (`None`: nothing to say), or the text of the error it threw.
pub type HookFuture<'a> =
    Pin<Box<dyn Future<Output = Result<Option<HandlerResult>, String>> + Send + 'a>>;

/// An extension a program (or the sidecar, for Pi's TypeScript extensions) provides. One value
/// is one of Pi's extensions: its handlers for an event run in the order it registered them, so
/// an extension with several handlers for one event answers for all of them in
/// [`RustExtension::handle`] or is registered as several extensions, which composes the same.
pub trait RustExtension: Send + Sync {
    /// The extension's name in error reports (Pi's `extensionPath`).
    fn name(&self) -> &str;

    /// The hook points it handles; it is called at those only (Pi's `hasHandlers`).
    fn handles(&self) -> HandledHooks;

    /// Whether it is called at the hook points of [`RustExtension::handles`] only where
    /// another extension makes them hook points, adding none of its own for the machine to
    /// wait at: an extension with something to do before whatever the others' handlers can
    /// observe, and nothing to do where no handler runs. `false` by default.
    fn rides_along(&self) -> bool {
        false
    }

    /// Handles one event: `payload` is Pi's event object with the changes of the handlers before
    /// it; actions go through `cx` (Pi's `pi`/`ctx` methods) and are applied after the decision.
    fn handle<'a>(&'a self, payload: &'a HookPayload, cx: &'a HookContext) -> HookFuture<'a>;

    /// Takes in the session's state at every hook point, in the order the machine asked,
    /// whether or not this extension handles it (the state's entries come as a delta since
    /// the previous hook point, so a mirror of them must see every one). Nothing by default.
    fn observe(&self, _state: &HookState) {}

    /// The shared mirror of the session's state this extension's getters read, if any: the
    /// registry feeds each mirror once per hook point, however many extensions share it,
    /// instead of calling [`RustExtension::observe`].
    fn mirror(&self) -> Option<&sidecar::StateMirror> {
        None
    }

    /// The model providers it registers (Pi's `pi.registerProvider(name, config)` while it
    /// loads), merged into the model catalog before the session's model is looked up, in load
    /// order: a gateway of the program's own. None by default.
    fn providers(&self) -> Vec<ProviderRegistration> {
        Vec::new()
    }
}

/// A handler's throw a [`HookContext`] collected: its error, and the extension and event it is
/// reported at when they are not the hook point's own.
#[derive(Debug)]
struct Thrown {
    error: String,
    by: Option<(String, HookEvent)>,
}

/// What a handler may do besides answering: the extension API's actions, collected in the order
/// asked and returned with the decision.
#[derive(Debug, Default)]
pub struct HookContext {
    actions: Mutex<Vec<HookAction>>,
    thrown: Mutex<Vec<Thrown>>,
    state: Option<Arc<HookState>>,
    signal: CancellationToken,
}

impl HookContext {
    /// Cancelled when the session gives up waiting for what this hook point decides (Pi's
    /// `signal` of `session_before_compact`, fired by an abort of that compaction) or the run
    /// is aborted (Pi's `ctx.signal`); the handlers' answer is still awaited.
    pub fn signal(&self) -> &CancellationToken {
        &self.signal
    }

    /// The session's state at this hook point (what Pi's getters read there), when the session
    /// machine asked.
    pub fn state(&self) -> Option<&HookState> {
        self.state.as_deref()
    }

    /// Ends once [`signal`](Self::signal) is cancelled, so that a handler waiting for
    /// something outside the session stops waiting.
    pub async fn aborted(&self) {
        self.signal.cancelled().await
    }

    /// Asks for `action` (Pi's `pi.sendMessage`, `pi.appendEntry`, `pi.setActiveTools`,
    /// `pi.setModel`, `ctx.abort`, `ctx.compact`, and the other [`HookAction`]s).
    pub fn act(&self, action: HookAction) {
        self.lock().push(action);
    }

    /// `ctx.abort()`: ends the run after the hook point (at `turn_end`, the turn cap pattern).
    pub fn abort(&self) {
        self.act(HookAction::Abort);
    }

    /// One of the extension's handlers threw and its runner went on to the next (Pi catches
    /// each handler's error at most hook points): reported as a [`HookError`] of this
    /// extension, whatever the extension answers.
    pub fn threw(&self, error: String) {
        self.push_thrown(Thrown { error, by: None });
    }

    /// A handler of another extension, or of another event, threw while this hook point's
    /// handlers ran (one told of a dialog they opened, Pi's `ui_prompt_start`): reported as
    /// that extension's error at that event, never as this extension's answer.
    pub fn threw_at(&self, extension: String, event: HookEvent, error: String) {
        self.push_thrown(Thrown {
            error,
            by: Some((extension, event)),
        });
    }

    fn push_thrown(&self, thrown: Thrown) {
        self.thrown
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(thrown);
    }

    fn take_thrown(&self) -> Vec<Thrown> {
        std::mem::take(
            &mut *self
                .thrown
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<HookAction>> {
        // A handler that panicked while holding the lock left a complete list behind.
        self.actions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn take(&self) -> Vec<HookAction> {
        std::mem::take(&mut *self.lock())
    }

    /// Shows the handlers to come the deferred tools registered by the actions asked from
    /// position `from` on: Pi's `registerTool` is synchronous, so the handlers after the one
    /// that registered a tool list it in `pi.getAllTools()` at the same hook point.
    fn show_registered(&mut self, from: usize) {
        let registered: Vec<_> = self
            .lock()
            .iter()
            .skip(from)
            .filter_map(|action| match action {
                HookAction::RegisterDeferredTools { tools, .. } => Some(tools.clone()),
                _ => None,
            })
            .flatten()
            .collect();
        if registered.is_empty() {
            return;
        }
        if let Some(state) = &self.state {
            self.state = Some(Arc::new(state.with_deferred_tools(&registered)));
        }
    }
}

/// The extensions of a session, in load order. Cheap to clone: they are shared.
#[derive(Clone, Default)]
pub struct ExtensionRegistry {
    extensions: Vec<Arc<dyn RustExtension>>,
    /// The model registry the providers registered after loading go to (none: such a
    /// change is refused as the asking extension's error).
    providers: Option<Arc<dyn runtime_providers::RuntimeProviders>>,
}

impl fmt::Debug for ExtensionRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.extensions.iter().map(|e| e.name().to_owned()))
            .finish()
    }
}

impl ExtensionRegistry {
    /// No extension.
    pub fn new() -> Self {
        ExtensionRegistry::default()
    }

    /// Loads `extension` after those already loaded.
    pub fn load(&mut self, extension: Arc<dyn RustExtension>) {
        self.extensions.push(extension);
    }

    /// Loads `extension` before those already loaded: its handlers run first at every hook
    /// point, and what it registers there is what the handlers after it read.
    pub fn load_first(&mut self, extension: Arc<dyn RustExtension>) {
        self.extensions.insert(0, extension);
    }

    /// This registry with the extensions `replaced` picks (a previous load's) replaced by
    /// `loaded`, where the first of them was (after the others when none is): the extensions
    /// a reload loaded again, the others (of other origins) kept in their places.
    pub fn reloaded(
        &self,
        replaced: impl Fn(&dyn RustExtension) -> bool,
        loaded: Vec<Arc<dyn RustExtension>>,
    ) -> ExtensionRegistry {
        let first = self.extensions.iter().position(|e| replaced(e.as_ref()));
        let mut extensions: Vec<Arc<dyn RustExtension>> = Vec::new();
        let mut loaded = Some(loaded);
        for (at, extension) in self.extensions.iter().enumerate() {
            if Some(at) == first {
                extensions.extend(loaded.take().unwrap_or_default());
            }
            if !replaced(extension.as_ref()) {
                extensions.push(Arc::clone(extension));
            }
        }
        extensions.extend(loaded.unwrap_or_default());
        ExtensionRegistry {
            extensions,
            providers: self.providers.clone(),
        }
    }

    /// Hands the providers the extensions register or unregister once loaded to `providers`
    /// (the front end's model registry), before their decision is recorded.
    pub fn take_provider_changes(
        &mut self,
        providers: Arc<dyn runtime_providers::RuntimeProviders>,
    ) {
        self.providers = Some(providers);
    }

    /// Applies a provider change a running tool's `execute` asked for to the front end's
    /// registry, as a handler's is applied before its decision is recorded (see
    /// [`runtime_providers::apply_one`]); any other action is left as it is.
    pub fn apply_tool_action(
        &self,
        action: &mut HookAction,
    ) -> Result<(), runtime_providers::Refused> {
        runtime_providers::apply_one(self.providers.as_ref(), action)
    }

    /// The providers the extensions register ([`RustExtension::providers`]), in load order.
    pub fn providers(&self) -> Vec<ProviderRegistration> {
        self.extensions.iter().flat_map(|e| e.providers()).collect()
    }

    /// Whether no extension is loaded.
    pub fn is_empty(&self) -> bool {
        self.extensions.is_empty()
    }

    /// The hook points some extension handles: what the run's configuration records, and where
    /// the machine waits. Those only an extension that rides along handles are not among them.
    pub fn handled(&self) -> HandledHooks {
        HandledHooks::of(
            self.extensions
                .iter()
                .filter(|e| !e.rides_along())
                .flat_map(|e| e.handles().iter().collect::<Vec<_>>()),
        )
    }

    /// Gives every extension the session's state at a hook point ([`RustExtension::observe`]);
    /// an interpreter calls it for each hook point, in the order the machine asked, before it
    /// asks for the decision (and for a hook point it answers without the extensions).
    pub fn observe(&self, state: &HookState) {
        let mut fed: Vec<&sidecar::StateMirror> = Vec::new();
        for extension in &self.extensions {
            match extension.mirror() {
                Some(mirror) if fed.iter().any(|m| m.same(mirror)) => {}
                Some(mirror) => {
                    mirror.observe(state);
                    fed.push(mirror);
                }
                None => extension.observe(state),
            }
        }
    }

    /// Runs the handlers of `payload`'s hook point in load order and composes their answers as
    /// Pi does; a gate that blocks, or an input handled, ends the round.
    pub async fn decide(&self, payload: HookPayload) -> HookOutcome {
        self.decide_at(payload, None).await
    }

    /// [`decide`](Self::decide), the handlers reading `state` through [`HookContext::state`].
    pub async fn decide_at(
        &self,
        payload: HookPayload,
        state: Option<Arc<HookState>>,
    ) -> HookOutcome {
        self.decide_with(payload, state, CancellationToken::new())
            .await
    }

    /// [`decide_at`](Self::decide_at), the handlers' [`HookContext::signal`] being `signal`
    /// (which an interpreter cancels when the session cancels the hook point's call, or the
    /// run is aborted).
    pub async fn decide_with(
        &self,
        payload: HookPayload,
        state: Option<Arc<HookState>>,
        signal: CancellationToken,
    ) -> HookOutcome {
        let event = payload.event();
        let mut cx = HookContext {
            state,
            signal,
            ..HookContext::default()
        };
        let mut fold = Composer::new(payload);
        let mut errors = Vec::new();
        for extension in &self.extensions {
            if fold.stopped() {
                break;
            }
            if !extension.handles().contains(event) {
                continue;
            }
            let shown = fold.payload().clone();
            let asked = cx.lock().len();
            let answer = handled(extension.as_ref(), &shown, &cx).await;
            cx.show_registered(asked);
            let error = |error: String| HookError {
                extension: extension.name().to_owned(),
                event,
                error,
            };
            let reported = |thrown: Thrown| match thrown.by {
                Some((extension, event)) => HookError {
                    extension,
                    event,
                    error: thrown.error,
                },
                None => error(thrown.error),
            };
            match answer {
                Ok(result) => {
                    errors.extend(cx.take_thrown().into_iter().map(reported));
                    fold.apply_from(extension.name(), result);
                    errors.extend(fold.take_rejected().map(error));
                }
                Err(thrown) => {
                    errors.push(error(thrown.clone()));
                    errors.extend(cx.take_thrown().into_iter().map(reported));
                    fold.thrown(thrown);
                }
            }
        }
        let decision = fold.finish();
        let mut outcome = HookOutcome {
            decision,
            actions: cx.take(),
            errors,
        };
        runtime_providers::apply(self.providers.as_ref(), event, &mut outcome);
        outcome
    }
}

/// Extension `extension`'s handler for `payload`, a panic (while it is called or awaited)
/// answered as a throw whose message is the panic's text, as Pi's runner catches a handler's
/// throw: the round goes on and a live run and a replay running the extensions again answer alike.
async fn handled(
    extension: &dyn RustExtension,
    payload: &HookPayload,
    cx: &HookContext,
) -> Result<Option<HandlerResult>, String> {
    let called = std::panic::catch_unwind(AssertUnwindSafe(|| extension.handle(payload, cx)));
    match called {
        Ok(answer) => AssertUnwindSafe(answer)
            .catch_unwind()
            .await
            .unwrap_or_else(|panic| Err(panic_text(panic.as_ref()))),
        Err(panic) => Err(panic_text(panic.as_ref())),
    }
}

/// What a panic said (`panic!` with a message gives a `&str` or a `String`).
fn panic_text(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "the handler panicked".to_owned())
}

#[cfg(test)]
mod tests;
