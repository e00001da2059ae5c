//! Cassettes: everything nondeterministic about one run in a versioned JSONL file, so that the
//! pure core reproduces the run exactly, offline, in milliseconds.
//!
//! The format itself — the lines, the checked reader, the writer with redaction, proxy
//! cassettes — is `pi-cassette-format`, re-exported here; this crate reads what the lines hold
//! into the harness's types ([`convert`], [`read`]) and runs them. A cassette's header holds
//! the run's configuration ([`pi_effects::run_config::RunConfig`]) and the session it started
//! in; its lines hold, in the order they happened, every input that
//! reached the machine, every effect it asked for, and each model call's HTTP requests and raw
//! response bytes. [`Record`] writes one around any interpreter; [`Replay`] answers the machine
//! from one, checking that every effect and request is the recorded one, and reports a
//! [`Divergence`] where it is not. A proxy cassette ([`ProxyCassette`], written by `pi proxy`)
//! holds the same HTTP lines under a [`ProxyHeader`], without a run around them. The format is
//! documented in `docs/cassette-format.md`.

pub mod body;
pub mod convert;
pub mod divergence;
mod hook_redact;
pub mod hybrid;
pub mod import;
pub mod live_hooks;
pub mod live_tools;
pub mod memory;
pub mod printed;
pub mod read;
pub mod record;
pub mod replay;
mod replay_transport;
#[cfg(feature = "test-support")]
pub mod test_support;

pub use pi_cassette_format::{format, proxy, redact, version, write};
pub use pi_cassette_format::{hex, sha256_hex};

pub use convert::{NotRecordable, ToInput, Unconvertible};
pub use divergence::{Divergence, DivergenceKind};
pub use format::{
    Header, Line, ProxyHeader, RecordedMode, RecordedOutcome, SessionStart, FORMAT_VERSION,
    PROXY_FORMAT_VERSION,
};
pub use hybrid::Hybrid;
pub use memory::replay_in_memory;
pub use pi_cassette_format::CheckedCassette;
pub use proxy::ProxyCassette;
pub use read::{Cassette, LoadError};
pub use record::{recording_transport, Record};
pub use replay::Replay;
pub use write::{CreateError, Recorder};

/// The Pi version whose behaviour this build reproduces: `pi --version` prints it, every
/// cassette's header records it (`pi`), and a replay refuses a cassette made with another (its
/// run says nothing about this build; `pi replay --rerecord` makes it again). The one place it
/// is written.
pub const PI_EDITION: &str = "1.5.2";
