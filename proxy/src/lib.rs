//! `pi proxy`: an HTTP record/replay proxy for any LLM client, so that any program speaking
//! an OpenAI-compatible, Anthropic, Responses or Gemini API (the original Pi, another agent,
//! an SDK's test) can be recorded once against a real provider and replayed offline after.
//!
//! [`RecordingProxy`] forwards each request to the upstream and writes each conversation's traffic
//! to a proxy cassette ([`pi_cassette_format::ProxyCassette`]: the run cassette's HTTP lines under a
//! proxy header, secrets redacted); [`ReplayingProxy`] serves a folder of them back, matching
//! requests by their [`canonical`] form. [`Server`] is the HTTP/1.1 server around either, within
//! the [`Limits`] of what one client may cost (body size, idle time).

pub mod answer;
pub mod body;
pub mod canonical;
pub mod conversation;
pub mod limits;
pub mod record;
pub mod replay;
pub mod server;

use std::path::PathBuf;

pub use canonical::{CanonicalRequest, IgnoreRule, DEFAULT_IGNORE};
pub use limits::Limits;
pub use record::RecordingProxy;
pub use replay::ReplayingProxy;
pub use server::{Proxy, Server, Summary};

/// Why the proxy cannot start.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: String,
        source: std::io::Error,
    },
    #[error("the upstream {0:?} is not an http:// or https:// URL")]
    Upstream(String),
    #[error("cannot use the folder {}: {source}", path.display())]
    Folder {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("no proxy cassettes (*.jsonl) in {}", .0.display())]
    NoCassettes(PathBuf),
    #[error(transparent)]
    Load(pi_cassette_format::LoadError),
    #[error(transparent)]
    Record(pi_cassette_format::write::CreateError),
    #[error("cannot start the HTTP client: {0}")]
    Client(String),
}
