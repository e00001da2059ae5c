//! The harness's IO: the interpreter that performs the core's effects for real (model calls,
//! Pi's tools on files and processes, timers), the driver that feeds it, Pi's session files on
//! disk, and what the pure providers need from the world (the network transport, the registry's
//! files, the environment and `!command` values). What to do is decided in `pi-core` and
//! `pi-providers`; this crate carries it out.

pub mod agent_session;
pub mod clock;
pub mod custom_tool;
pub mod driver;
pub mod extension;
/// The exclusive file lock of session files, shared with the cassette format's recorder.
pub use pi_cassette_format::flock;
pub mod host;
pub mod live;
pub mod network;
pub mod packages;
pub mod registry_files;
pub mod resource_files;
pub mod resources;
pub mod run_config;
pub mod secrets;
pub mod session;
pub mod settings;
pub mod tools;
