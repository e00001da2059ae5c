//! Cassettes: everything nondeterministic about one run in a versioned JSONL file, so that the
//! pure core reproduces the run exactly, offline, in milliseconds.
//!
//! A cassette's header holds the run's configuration ([`pi_effects::run_config::RunConfig`])
//! and the session it started in; its lines hold, in the order they happened, every input that
//! reached the machine, every effect it asked for, and each model call's HTTP requests and raw
//! response bytes. [`Record`] writes one around any interpreter; [`Replay`] answers the machine
//! from one, checking that every effect and request is the recorded one, and reports a
//! [`Divergence`] where it is not. A proxy cassette ([`ProxyCassette`], written by `pi proxy`)
//! holds the same HTTP lines under a [`ProxyHeader`], without a run around them. The format is
//! documented in `docs/cassette-format.md`.

pub mod body;
pub mod divergence;
pub mod format;
pub mod hybrid;
pub mod import;
pub mod live_tools;
pub mod memory;
pub mod proxy;
pub mod read;
pub mod record;
pub mod redact;
pub mod replay;
mod replay_transport;
pub mod version;
pub mod write;

pub use divergence::{Divergence, DivergenceKind};
pub use format::{
    Header, Line, Outcome, ProxyHeader, SessionStart, FORMAT_VERSION, PROXY_FORMAT_VERSION,
};
pub use hybrid::Hybrid;
pub use memory::replay_in_memory;
pub use proxy::ProxyCassette;
pub use read::{Cassette, LoadError};
pub use record::{recording_transport, Record};
pub use replay::Replay;
pub use write::{CreateError, Recorder};

/// SHA-256 of `bytes` in lower-case hex: the digests of an outcome line.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex(&sha2::Sha256::digest(bytes))
}

/// `bytes` in lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
