//! A small language for agent scenarios, and a driver that plays the model and the tools.
//!
//! Tests (ours and users') describe a run as lines — `user: …`, `model: text …`,
//! `model: tool read {…}`, `tool: ok …`, `steer: …`, `abort`, `tick 2000` — and get back a
//! transcript of every event and effect, one line each, fit for snapshot testing. The driver
//! answers a cancelled model call the way Pi's OpenAI-compatible provider does (open blocks end,
//! then an aborted error), so abort scenarios read like real ones.

mod driver;
mod hooks;
mod parse;
pub mod render;
mod session;

pub use driver::{mock_model, run, Driver, START_TIME};
pub use hooks::{tool, ScriptHooks};
pub use parse::{parse, BlockSpec, Command, Ending, Line, ScriptError, ToolReply};
