//! Tool names as Pi 1.5.2 gives them: `mcp__<server>__<tool>` with every character other than
//! ASCII letters, digits and `_` replaced by `_`, and a hash suffix when the name is too long or
//! taken (pi-mcp's `createMcpToolName`, the MCP extension's `assignName`).

use sha2::{Digest, Sha256};

/// The longest tool name Pi gives an MCP tool (the providers' limit).
pub const MAX_TOOL_NAME_LENGTH: usize = 64;

/// The name of `tool` of `server`; `is_taken` says whether a candidate is already used, in which
/// case the name gets the first 8 hex digits of sha256(`server\0tool`) as a suffix.
pub fn create_tool_name(server: &str, tool: &str, is_taken: impl Fn(&str) -> bool) -> String {
    let name: String = format!("mcp__{server}__{tool}")
        .chars()
        .flat_map(|c| {
            // JavaScript replaces each UTF-16 code unit: a character outside the BMP becomes `__`.
            let kept = c.is_ascii_alphanumeric() || c == '_';
            let (c, units) = if kept { (c, 1) } else { ('_', c.len_utf16()) };
            std::iter::repeat_n(c, units)
        })
        .collect();
    if name.chars().count() <= MAX_TOOL_NAME_LENGTH && !is_taken(&name) {
        return name;
    }
    let digest = Sha256::digest(format!("{server}\0{tool}").as_bytes());
    let hash: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    // The name is ASCII by now, so byte and character counts agree.
    let keep = name.len().min(MAX_TOOL_NAME_LENGTH - hash.len() - 1);
    format!("{}_{hash}", &name[..keep])
}

/// The namespace of a server (`mcp__<server>` with `-` as `_`): two server names that differ only
/// in `-` and `_` are the same server to Pi.
pub fn mcp_namespace(server: &str) -> String {
    format!("mcp__{}", server.replace('-', "_"))
}

/// The names of one server's tools, in list order. As Pi (and Codex) do, every tool whose plain
/// name collides with another's gets the hash suffix, so which one keeps the plain name does not
/// depend on the order of the list.
pub fn assign_tool_names(server: &str, tools: &[&str]) -> Vec<String> {
    let mut unique: Vec<&str> = Vec::new();
    for tool in tools {
        if !unique.contains(tool) {
            unique.push(tool);
        }
    }
    let plain: Vec<String> = unique
        .iter()
        .map(|tool| create_tool_name(server, tool, |_| false))
        .collect();
    let mut assigned: Vec<String> = Vec::new();
    for tool in tools {
        let name = create_tool_name(server, tool, |candidate| {
            assigned.iter().any(|a| a == candidate)
                || plain.iter().filter(|p| p.as_str() == candidate).count() > 1
        });
        assigned.push(name);
    }
    assigned
}
