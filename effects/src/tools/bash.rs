//! The `bash` tool (being written).

use pi_core::event::ToolResult;
use serde_json::Value;

use super::{ToolContext, ToolEnv};

pub(super) async fn run(
    _env: &ToolEnv,
    _args: &Value,
    _cx: &ToolContext,
) -> Result<ToolResult, String> {
    Err("not yet available".into())
}
