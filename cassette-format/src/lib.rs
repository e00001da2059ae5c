//! The cassette format (`docs/cassette-format.md`): the lines of a cassette and of a proxy
//! cassette, the checked reader, the writer that redacts secrets as it writes, and the line diff
//! a report shows. Its types are its own serialization types: where a line holds something of
//! the harness (a run's configuration, a model, a tool result, a call's options) it holds it as
//! JSON, which the harness (`pi-cassettes`) turns into its own types when it loads a cassette.
//! A reader of cassettes — `pi proxy`, or a tool of someone else's — depends on this crate
//! alone.

pub mod body;
pub mod diff;
pub mod flock;
pub mod format;
pub mod proxy;
pub mod read;
pub mod redact;
pub mod version;
pub mod write;

pub use format::{
    Header, Line, ProxyHeader, RecordedMode, RecordedOutcome, SessionStart, FORMAT_VERSION,
    PROXY_FORMAT_VERSION,
};
pub use proxy::ProxyCassette;
pub use read::{CheckedCassette, LoadError};
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
