//! Which tools a run starts with (Pi 1.5.2's `createAgentSession` tool options and
//! `AgentSession`'s first activation): `--tools` is either an allowlist of names and `*`
//! patterns, or only `+name`/`-name` entries that change the defaults; `--exclude-tools` removes
//! names and pattern matches from whatever that gives; `--no-tools` and `--no-builtin-tools`
//! start from no defaults, and `--no-tools` registers only what `--tools` names.

use pi_core::tools::definitions::builtin_tools;
use pi_core::tools::selection::matches;

/// The name of Pi 1.5.2's built-in codemode tool, which the extension host runs.
pub(crate) const CODEMODE_TOOL_NAME: &str = "codemode";

/// The `--tools` problem Pi reports (`getToolListError`), without the flag's name.
pub fn tool_list_error(entries: &[String]) -> Option<String> {
    let modifiers: Vec<&String> = entries.iter().filter(|e| is_modifier(e)).collect();
    if modifiers.is_empty() {
        return None;
    }
    if modifiers.len() < entries.len() {
        return Some("tool names cannot be mixed with +name or -name entries".into());
    }
    modifiers.iter().find(|e| e.contains('*')).map(|pattern| {
        format!("+name and -name entries take exact tool names, not patterns: {pattern}")
    })
}

/// The active tools, in Pi's order: `defaults` changed by `+name`/`-name` entries; or the
/// allowlist's exact names in its order, then the built-in tools a pattern matches in the
/// registry's order (read, bash, powershell, edit, write, grep, find, ls); then without the excluded ones.
/// `tools` must have passed [`tool_list_error`].
pub fn select_tools(
    defaults: &[String],
    tools: Option<&[String]>,
    exclude: Option<&[String]>,
) -> Vec<String> {
    let selected: Vec<String> = match tools {
        Some(entries) if entries.iter().any(|e| is_modifier(e)) => {
            let mut names = defaults.to_vec();
            for entry in entries {
                let (adds, name) = match (entry.strip_prefix('+'), entry.strip_prefix('-')) {
                    (Some(name), _) => (true, name),
                    (None, Some(name)) => (false, name),
                    (None, None) => continue,
                };
                let position = names.iter().position(|n| n == name);
                match (adds, position) {
                    (true, None) if !name.is_empty() => names.push(name.to_owned()),
                    (false, Some(index)) => {
                        names.remove(index);
                    }
                    _ => {}
                }
            }
            names
        }
        Some(entries) => {
            let mut names: Vec<String> = entries
                .iter()
                .filter(|e| !e.contains('*'))
                .cloned()
                .collect();
            for tool in builtin_tools() {
                if matches(entries, &tool.name) {
                    names.push(tool.name.clone());
                }
            }
            names
        }
        None => defaults.to_vec(),
    };
    let mut active: Vec<String> = Vec::new();
    for name in selected {
        let excluded = exclude.is_some_and(|entries| matches(entries, &name));
        if !excluded && !active.contains(&name) {
            active.push(name);
        }
    }
    active
}

/// The built-in tools registered, in the registry's order (Pi 1.5.2's `_isAllowedTool`): those
/// the run's `allowlist` (see [`allowed_tools`]) names or matches, every one without it, less
/// the excluded ones. An extension's `pi.setActiveTools` chooses among these.
pub fn registered(allowlist: Option<&[String]>, exclude: Option<&[String]>) -> Vec<String> {
    builtin_tools()
        .iter()
        .map(|tool| tool.name.clone())
        .filter(|name| allows(allowlist, exclude, name))
        .collect()
}

/// Pi 1.5.2's `allowedToolNames` (its `createAgentSession`): `--tools` when it is an allowlist;
/// with `--no-tools`, its `+name` entries applied to nothing, or else an empty list that allows
/// nothing; none otherwise (`--no-builtin-tools` filters nothing).
pub fn allowed_tools(tools: Option<&[String]>, no_tools: bool) -> Option<Vec<String>> {
    match tools {
        Some(entries) if entries.iter().any(|e| is_modifier(e)) => {
            no_tools.then(|| select_tools(&[], Some(entries), None))
        }
        Some(entries) => Some(entries.to_vec()),
        None => no_tools.then(Vec::new),
    }
}

/// Whether the run's `allowlist` (see [`allowed_tools`]) and `--exclude-tools` keep the tool
/// `name` registered (Pi 1.5.2's `_isAllowedTool`): no exclusion may match it, and an allowlist
/// must, except that an MCP server's tool (`mcp__…`) stays registered unless the allowlist
/// filters MCP tools too: when it is empty or has an `mcp__` entry.
pub fn allows(allowlist: Option<&[String]>, exclude: Option<&[String]>, name: &str) -> bool {
    if exclude.is_some_and(|entries| matches(entries, name)) {
        return false;
    }
    match allowlist {
        None => true,
        Some(entries) if matches(entries, name) => true,
        Some(entries) => !filters_mcp(entries) && is_mcp_tool(name),
    }
}

/// Whether an allowlist decides which MCP tools stay registered (Pi's `_allowlistFiltersMcp`).
fn filters_mcp(allowlist: &[String]) -> bool {
    allowlist.is_empty() || allowlist.iter().any(|e| e.starts_with(MCP_PREFIX))
}

/// The prefix of every MCP server's tool name (`mcp__<server>__<tool>`).
const MCP_PREFIX: &str = "mcp__";

fn is_mcp_tool(name: &str) -> bool {
    name.starts_with(MCP_PREFIX)
}

fn is_modifier(entry: &str) -> bool {
    entry.starts_with('+') || entry.starts_with('-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use pi_core::tools::selection::pattern_matches;

    fn list(names: &str) -> Vec<String> {
        names.split(',').map(str::to_owned).collect()
    }

    #[test]
    fn the_registered_built_ins_are_those_an_allowlist_allows_less_the_excluded() {
        let all = list("read,bash,powershell,edit,write,grep,find,ls");
        assert_eq!(registered(None, None), all);
        assert_eq!(registered(Some(&list("ls,re*")), None), list("read,ls"));
        assert_eq!(registered(Some(&[]), None), Vec::<String>::new());
        assert_eq!(
            registered(None, Some(&list("bash,e*"))),
            list("read,powershell,write,grep,find,ls")
        );
    }

    #[test]
    fn patterns_match_whole_names() {
        assert!(pattern_matches("re*", "read"));
        assert!(!pattern_matches("re*", "bread"));
        assert!(pattern_matches("*", "ls"));
        assert!(pattern_matches("*e*d*", "read"));
        assert!(!pattern_matches("e*t", "edit_"));
        assert!(pattern_matches("a*a", "aa"));
        assert!(!pattern_matches("a*a", "a"));
    }

    #[test]
    fn modifiers_change_the_defaults_and_exclusions_come_last() {
        let defaults = list("read,bash,edit,write");
        assert_eq!(
            select_tools(&defaults, Some(&list("+grep,-write,-nosuch")), None),
            list("read,bash,edit,grep")
        );
        assert_eq!(
            select_tools(&defaults, Some(&list("re*,bash")), Some(&list("nothing"))),
            list("bash,read")
        );
        assert_eq!(
            select_tools(&defaults, None, Some(&list("*i*"))),
            list("read,bash")
        );
        assert!(tool_list_error(&list("read,+grep")).is_some());
        assert_eq!(
            tool_list_error(&list("+g*")),
            Some("+name and -name entries take exact tool names, not patterns: +g*".into())
        );
        assert_eq!(tool_list_error(&list("re*,bash")), None);
    }

    #[test]
    fn a_tool_is_allowed_unless_an_allowlist_misses_it_or_an_exclusion_matches_it() {
        assert!(allows(None, None, "tool_search"));
        assert!(allows(Some(&list("read,tool_search")), None, "tool_search"));
        assert!(allows(Some(&list("tool_*")), None, "tool_search"));
        assert!(!allows(Some(&list("read")), None, "tool_search"));
        assert!(!allows(None, Some(&list("tool_search")), "tool_search"));
    }

    #[test]
    fn an_allowlist_keeps_mcp_tools_unless_it_names_one_or_is_empty() {
        let tool = "mcp__srv__one";
        assert!(allows(Some(&list("read")), None, tool));
        assert!(allows(Some(&list("read,mcp__srv__one")), None, tool));
        assert!(!allows(Some(&list("read,mcp__srv__two")), None, tool));
        assert!(!allows(Some(&list("mcp__other__*")), None, tool));
        assert!(!allows(Some(&[]), None, tool));
        assert!(!allows(Some(&list("read")), Some(&list("mcp__*")), tool));
    }

    #[test]
    fn no_tools_allows_only_what_tools_names() {
        assert_eq!(allowed_tools(None, false), None);
        assert_eq!(allowed_tools(None, true), Some(Vec::new()));
        assert_eq!(allowed_tools(Some(&list("+ls,-bash")), false), None);
        assert_eq!(
            allowed_tools(Some(&list("+ls,-bash")), true),
            Some(list("ls"))
        );
        assert_eq!(
            allowed_tools(Some(&list("read,g*")), true),
            Some(list("read,g*"))
        );
        assert_eq!(
            allowed_tools(Some(&list("read")), false),
            Some(list("read"))
        );
    }
}
