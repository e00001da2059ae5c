//! Pi 1.5.2's routing of a request for a virtual model (`pi.registerVirtualModel`): before the
//! request goes out, the model's router picks the physical model and thinking level it goes to.
//! The router is the extension's; here are the question it is asked and its answer as data, so
//! that a recording holds the answer and a replay routes without the extension.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::AssistantMessage;
use crate::model::{Model, ThinkingLevel};

/// The `api` of a virtual model's catalog entry (Pi 1.5.2's `VIRTUAL_MODEL_API`): no provider
/// streams it, so a request for it is routed first; failed routing leaves it on its response.
pub const VIRTUAL_MODEL_API: &str = "pi-virtual";

/// Whether `model` is a virtual catalog entry, whose requests are routed.
pub fn is_virtual(model: &Model) -> bool {
    model.api == VIRTUAL_MODEL_API
}

/// The custom entry type that stores a router's state on the session branch (Pi 1.5.2's
/// `VIRTUAL_MODEL_STATE_ENTRY`).
pub const VIRTUAL_MODEL_STATE_ENTRY: &str = "pi.virtual-model-state";

/// Why a request is routed (Pi 1.5.2's `ModelRouteReason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RouteReason {
    /// The first request after a message the user wrote.
    User,
    /// Any other request of the agent loop (after tool results, say).
    Continuation,
    /// An automatic retry after a failed request.
    Retry,
    /// A request outside the agent loop (a summary).
    Direct,
}

/// What a router asks of the extension host: the virtual model selected, and the request.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteQuestion {
    pub provider: String,
    pub model_id: String,
    pub thinking_level: ThinkingLevel,
    pub reason: RouteReason,
    /// For a retry: the failed response, which `messages` no longer holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<Box<AssistantMessage>>,
    /// The router's state last stored on this branch (none before the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<Value>,
    /// The conversation the request sends, its system messages in place (Pi's
    /// `convertToLlm` of the request's context).
    pub messages: Vec<Value>,
}

/// The router's answer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "outcome")]
pub enum RouteDecision {
    /// The request goes to `model` (a physical catalog model with credentials) at
    /// `thinking_level` (clamped to it); `state` is the router's new state, when it gave one
    /// other than the one it was given.
    #[serde(rename_all = "camelCase")]
    Routed {
        model: Box<Model>,
        thinking_level: ThinkingLevel,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<Value>,
    },
    /// Routing failed (the router threw, or named a model it cannot use): Pi's message, which
    /// the request fails with.
    Failed { error: String },
}

impl RouteDecision {
    /// The decision when no router answers for the model (Pi's text for one not registered).
    pub fn unregistered(question: &RouteQuestion) -> Self {
        RouteDecision::Failed {
            error: format!(
                "Virtual model {}/{} is not registered.",
                question.provider, question.model_id
            ),
        }
    }
}
