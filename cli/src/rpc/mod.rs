//! RPC mode (being written).

use crate::setup::{Runtime, SessionChoice};
use crate::CliError;

/// Runs RPC mode until stdin ends; returns the exit code.
pub async fn run(_runtime: Runtime, _choice: SessionChoice) -> Result<i32, CliError> {
    Err(CliError::Usage("rpc mode is not available yet".into()))
}
