//! The pure core of the harness: Pi's types, the agent loop as a state machine, and session data.
//!
//! Nothing here performs IO, reads a clock or draws randomness: time arrives with every input and
//! everything else the loop needs from the world is asked for as an effect. That is what makes a
//! recorded run replay exactly.

pub mod agent;
pub mod event;
pub mod json;
pub mod message;
pub mod model;
pub mod nullable;
pub mod partial;
pub mod partial_json;
pub mod rpc;
pub mod script;
pub mod session;
pub mod validate;
