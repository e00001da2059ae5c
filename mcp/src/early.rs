//! The background servers' tools registered before the other handlers of a hook point run.
//! Pi 1.5.2's MCP extension registers a server's tools the moment it connects, outside any
//! handler, so whatever a handler reads after that (`pi.getAllTools()` at `tool_result`,
//! `turn_end`, `agent_end`, ...) lists them. Here a registration is an action of a recorded hook
//! decision, so a replay brings the same tools at the same point with no server: this extension
//! runs first at every hook point of a run where another extension's handler may read the
//! tools ([`OBSERVED`]), and registers those of the servers that connected since the last
//! delivery ([`Background`]'s, in the order they connected); the handlers after it read them
//! at once (the registry shows a handler's deferred registrations to those after it). It rides
//! along: where no other handler runs nobody can see the tools, so it adds no hook point.
//! Nothing is registered before the first prompt's run has started, whose `mcp_servers`
//! section is the one rendered when the session started.

use std::sync::Arc;

use pi_effects::extension::{
    HandledHooks, HookContext, HookEvent, HookFuture, HookPayload, RustExtension,
};

use crate::background::Background;

/// The hook points of a run whose handlers may read the registered tools, where the servers
/// connected by then are registered first.
pub const OBSERVED: [HookEvent; 17] = [
    HookEvent::Input,
    HookEvent::BeforeAgentStart,
    HookEvent::AgentStart,
    HookEvent::TurnStart,
    HookEvent::Context,
    HookEvent::MessageStart,
    HookEvent::MessageUpdate,
    HookEvent::MessageEnd,
    HookEvent::ToolCall,
    HookEvent::ToolExecutionStart,
    HookEvent::ToolExecutionUpdate,
    HookEvent::ToolResult,
    HookEvent::ToolExecutionEnd,
    HookEvent::TurnEnd,
    HookEvent::AgentEnd,
    HookEvent::AgentBeforeSettle,
    HookEvent::AgentSettled,
];

/// Registers the tools of the background servers that connected, ahead of the other handlers
/// (load it first: [`pi_effects::extension::ExtensionRegistry::load_first`]).
#[derive(Debug)]
pub struct EarlyRegistration {
    background: Arc<Background>,
}

impl EarlyRegistration {
    /// The early registration of `background`'s servers.
    pub fn new(background: Arc<Background>) -> Self {
        EarlyRegistration { background }
    }
}

impl RustExtension for EarlyRegistration {
    fn name(&self) -> &str {
        "builtin:mcp"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of(OBSERVED)
    }

    fn rides_along(&self) -> bool {
        true
    }

    fn handle<'a>(&'a self, _payload: &'a HookPayload, cx: &'a HookContext) -> HookFuture<'a> {
        Box::pin(async move {
            if self.background.prompted() {
                for action in self.background.deliver() {
                    cx.act(action);
                }
            }
            Ok(None)
        })
    }
}
