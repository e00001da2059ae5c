//! A custom tool's declaration as data (the part of Pi 1.5.2's `ToolDefinition` that shapes the
//! model request and the system prompt): what a run's configuration, and so a cassette, holds of
//! a tool defined by a program (an SDK user, an MCP server, an extension), so that a replay
//! declares it exactly as the run did without the program that defined it. Running it is the
//! interpreter's job.

pub use crate::agent::custom_tool::CustomToolDefinition;
use crate::agent::ToolSpec;
use crate::tools::definitions::builtin_tool;

/// The tools a run declares, in order, as Pi 1.5.2 composes them: the built-ins named in
/// `builtins`, each replaced in its place by a custom tool of its name, then the other custom
/// tools in their order. `Err` names a built-in that does not exist.
pub fn compose_tools(
    builtins: &[String],
    custom: &[CustomToolDefinition],
) -> Result<Vec<ToolSpec>, String> {
    let named = |name: &str| custom.iter().find(|t| t.name == name);
    builtins
        .iter()
        .map(|name| match named(name) {
            Some(tool) => Ok(tool.spec()),
            None => builtin_tool(name)
                .map(|t| t.spec())
                .ok_or_else(|| name.clone()),
        })
        .chain(
            custom
                .iter()
                .filter(|t| !builtins.contains(&t.name))
                .map(|t| Ok(t.spec())),
        )
        .collect()
}
