//! The coding agent's session runtime (pi-coding-agent's `AgentSession`), as pure policies the
//! session machine applies. So far: automatic retry of failed model calls.

pub mod retry;
