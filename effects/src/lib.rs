//! The harness's IO: the interpreter that performs the core's effects for real (model calls,
//! Pi's tools on files and processes, timers), the driver that feeds it, and Pi's session files
//! on disk. What to do is decided in `pi-core`; this crate carries it out.

pub mod agent_session;
pub mod clock;
pub mod driver;
pub mod flock;
pub mod live;
pub mod run_config;
pub mod session;
pub mod tools;
