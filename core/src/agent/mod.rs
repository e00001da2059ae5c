//! pi-agent-core: the agent loop and the `Agent` around it, as a pure state machine.

pub mod assemble;
pub mod boundary;
pub mod command_ask;
mod compose;
pub mod config;
pub mod contract;
pub mod convert;
pub mod custom_tool;
pub mod hook_payload;
pub mod hook_state;
pub mod hooks;
mod machine;
pub mod model_route;
mod nested;
pub mod system;
pub mod tool_info;
mod tools;
pub mod user_bash;

pub use config::*;
pub use contract::*;
pub use machine::{AgentMachine, StreamingMessage, ABORTED_REQUEST};
