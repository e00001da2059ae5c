//! The `powershell` tool (Pi 1.5.2's `tools/powershell.ts`), Windows' shell. Pi registers it on
//! every platform; elsewhere its operations refuse before anything runs, so a call gives the
//! shell tools' first (empty) partial result and then throws Pi's refusal, whatever its
//! arguments (the refusal comes before the timeout is checked).

use pi_core::event::ToolResult;
use pi_core::message::Extra;

use super::ToolContext;

/// Pi's refusal outside Windows (its `getPowerShellConfig`).
const ONLY_ON_WINDOWS: &str = "The powershell tool is only available on Windows.";

/// Runs one call as Pi does on a platform other than Windows.
pub(super) fn run(cx: &ToolContext) -> Result<ToolResult, String> {
    // Nobody listening is not an error: updates are optional.
    let _ = cx.updates.send(ToolResult {
        content: Vec::new(),
        details: None,
        terminate: None,
        extra: Extra::new(),
    });
    Err(ONLY_ON_WINDOWS.to_owned())
}
