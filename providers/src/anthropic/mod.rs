//! The Anthropic Messages API (`anthropic-messages`). The decoder is here; the request encoder
//! follows.

mod decode;

pub use decode::{map_stop_reason, Decoder};
