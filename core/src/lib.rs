//! The pure core of the harness: Pi's types, the agent loop as a state machine, and session data.
//!
//! Nothing here performs IO, reads a clock or draws randomness: time arrives with every input and
//! everything else the loop needs from the world is asked for as an effect. That is what makes a
//! recorded run replay exactly.
//!
//! ```
//! use pi_core::agent::{AgentConfig, AgentMachine, Effect, Input, Prompt, StreamEvent};
//! use pi_core::message::{AssistantMessage, ContentBlock, StopReason};
//!
//! let mut agent = AgentMachine::new(AgentConfig::default());
//! let step = agent.step(1_000, Input::Prompt(Prompt::text("Say hello"))).unwrap();
//! let Effect::CallModel { call, .. } = &step.effects[0] else { unreachable!() };
//! // ... a provider streams the answer back; here it arrives whole:
//! let message = AssistantMessage { content: vec![ContentBlock::text("Hello!")], ..Default::default() };
//! let event = StreamEvent::Done { reason: StopReason::Stop, message };
//! let step = agent.step(1_250, Input::Model { call: *call, event }).unwrap();
//! let kinds: Vec<String> = step.events.iter()
//!     .map(|e| serde_json::to_value(e).unwrap()["type"].as_str().unwrap().to_owned())
//!     .collect();
//! assert_eq!(kinds, ["message_start", "message_end", "turn_end", "agent_end"]);
//! assert!(!agent.is_streaming());
//! ```

pub mod agent;
pub mod agent_session;
pub mod atif;
pub mod compaction;
pub mod cost;
pub mod event;
pub mod extra;
pub mod json;
pub mod json_error;
pub mod message;
pub mod model;
pub mod nullable;
pub mod overflow;
pub mod partial;
pub mod partial_json;
pub mod resources;
pub mod rpc;
pub mod script;
pub mod session;
pub mod system_prompt;
mod tagged;
pub mod tools;
pub mod validate;
