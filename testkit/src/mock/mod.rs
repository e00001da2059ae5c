//! The conformance kit's scripted mock LLM served from Rust: the same scripts, the same bytes on
//! the wire and the same request log as `conformance/mock/mock_llm.py`, without Python.
//!
//! `script` reads and checks a script, `openai`, `anthropic` and `responses` turn a step into the
//! stream each API expects, `http` reads requests and writes response heads, `log` writes the request log,
//! `server` accepts connections and plays the steps in order; `pyjson` spells JSON as Python does.

mod anthropic;
mod http;
mod log;
mod openai;
pub mod pyjson;
mod responses;
mod script;
mod server;

use std::time::Duration;

use serde_json::Value;

pub use script::{Script, ScriptError};
pub use server::Server;

/// A piece of a streamed reply: a chunk written in one go, a pause (`hang_ms`), or a wait until a
/// file exists (`hang_until_file`, relative to the mock's folder).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Chunk(String),
    Hang(Duration),
    HangUntilFile(String),
}

/// The pauses after a step's content: `hang_ms`, then `hang_until_file`.
fn hangs(step: &script::Step) -> impl Iterator<Item = Piece> + '_ {
    let pause = (!step.hang.is_zero()).then_some(Piece::Hang(step.hang));
    let until = step.hang_until_file.clone().map(Piece::HangUntilFile);
    pause.into_iter().chain(until)
}

/// Python's truthiness of a JSON value, as the Python mock tests its options.
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}
