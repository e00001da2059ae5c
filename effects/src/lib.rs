//! The harness's IO. Today: Pi's session files on disk. The pure decisions (what an entry is,
//! where it hangs in the tree, when the file must be written) live in `pi-core`; this crate
//! carries them out.

pub mod agent_session;
pub mod driver;
pub mod live;
pub mod session;
pub mod tools;
