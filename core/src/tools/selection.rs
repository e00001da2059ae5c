//! Which tools a session starts with when some are defined by a program (Pi 1.5.2's
//! `createAgentSession` tool options and `AgentSession`'s first activation): `tools` is either
//! an allow-list of names and `*` patterns or only `+name`/`-name` entries changing the
//! defaults; `no_tools` starts from no built-in (or, with `all`, allows nothing not named);
//! `exclude` removes names and pattern matches. An allow-list and the exclusions apply to the
//! custom tools as to the built-ins: a custom tool the allow-list does not name or match, or
//! one excluded, is neither declared nor run.

use crate::tools::custom::CustomToolDefinition;
use crate::tools::definitions::builtin_tools;

/// The tools active when nothing else is said (Pi's `DEFAULT_TOOL_NAMES`).
pub const DEFAULT_TOOL_NAMES: [&str; 4] = ["read", "bash", "edit", "write"];

/// Pi's `noTools` option.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NoTools {
    /// The default tools are active.
    #[default]
    None,
    /// No built-in tool is active unless named (`noTools: "builtin"`); custom tools are.
    Builtin,
    /// No tool is active unless named (`noTools: "all"`), custom tools included.
    All,
}

/// The tool options of a session.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolSelection {
    /// The built-ins active by default (Pi's `DEFAULT_TOOL_NAMES`, or the setting
    /// `defaultTools`).
    pub defaults: Vec<String>,
    /// `tools`: an allow-list, or `+name`/`-name` modifiers of the defaults.
    pub tools: Option<Vec<String>>,
    pub no_tools: NoTools,
    /// `excludeTools`: names and patterns never active.
    pub exclude: Option<Vec<String>>,
}

/// What a selection leaves: the active tool names in Pi's order (a name the selection gives
/// that no tool has is kept, for the caller to refuse), and the custom tools still registered.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Selected {
    pub active: Vec<String>,
    pub custom: Vec<CustomToolDefinition>,
}

impl ToolSelection {
    /// The tools active at the start, as Pi orders them: the selected names (the defaults,
    /// changed by modifiers, or the allow-list's exact names) kept when allowed, then with an
    /// allow-list every registered tool it names or matches (the built-ins in Pi's registry
    /// order, then the custom tools), else every allowed custom tool registering activates,
    /// in its order.
    pub fn select(&self, custom: &[CustomToolDefinition]) -> Selected {
        let defaults: &[String] = if self.no_tools == NoTools::None {
            &self.defaults
        } else {
            &[]
        };
        let modifiers = self
            .tools
            .as_deref()
            .filter(|entries| entries.iter().any(|e| is_modifier(e)));
        let (selected, allowed): (Vec<String>, Option<Vec<String>>) = match (modifiers, &self.tools)
        {
            (Some(entries), _) => {
                let names = apply_modifiers(defaults, entries);
                let allowed = (self.no_tools == NoTools::All).then(|| names.clone());
                (names, allowed)
            }
            (None, Some(list)) => (list.clone(), Some(list.clone())),
            (None, None) => (
                defaults.to_vec(),
                (self.no_tools == NoTools::All).then(Vec::new),
            ),
        };
        let excluded = |name: &str| self.exclude.as_deref().is_some_and(|e| matches(e, name));
        let is_allowed =
            |name: &str| !excluded(name) && allowed.as_deref().is_none_or(|a| matches(a, name));
        let kept: Vec<CustomToolDefinition> = custom
            .iter()
            .filter(|tool| is_allowed(&tool.name))
            .cloned()
            .collect();
        let mut active: Vec<String> = selected
            .into_iter()
            .filter(|name| !name.contains('*') && is_allowed(name))
            .collect();
        match &allowed {
            Some(list) => {
                let registry = builtin_tools()
                    .iter()
                    .map(|t| t.name.as_str())
                    .filter(|name| !excluded(name))
                    .chain(kept.iter().map(|t| t.name.as_str()));
                active.extend(
                    registry
                        .filter(|name| matches(list, name))
                        .map(str::to_owned),
                );
            }
            // Registering one activates it only as Pi's `_isActivatedOnRegistration` says (a
            // `defaultActive: false` tool, such as Pi's codemode, or a hidden one stays
            // inactive).
            None => active.extend(
                kept.iter()
                    .filter(|t| t.activated_on_registration())
                    .map(|t| t.name.clone()),
            ),
        }
        let mut unique: Vec<String> = Vec::new();
        for name in active {
            if !unique.contains(&name) {
                unique.push(name);
            }
        }
        Selected {
            active: unique,
            custom: kept,
        }
    }
}

fn is_modifier(entry: &str) -> bool {
    entry.starts_with('+') || entry.starts_with('-')
}

/// Pi's `applyToolModifiers`: `+name` adds a tool not there, `-name` removes one, in order.
fn apply_modifiers(base: &[String], entries: &[String]) -> Vec<String> {
    let mut names = base.to_vec();
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

/// Pi's `createToolNameMatcher`: an exact name, or a pattern whose `*` matches any text.
pub fn matches(entries: &[String], name: &str) -> bool {
    entries.iter().any(|entry| {
        if entry.contains('*') {
            pattern_matches(entry, name)
        } else {
            entry == name
        }
    })
}

/// Whether `name` as a whole matches `pattern`, each `*` standing for any text.
pub fn pattern_matches(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let (first, rest) = match parts.split_first() {
        Some(split) => split,
        None => return name.is_empty(),
    };
    let Some(mut remaining) = name.strip_prefix(first) else {
        return false;
    };
    let Some((last, middle)) = rest.split_last() else {
        return remaining.is_empty();
    };
    for part in middle {
        match remaining.find(part) {
            Some(at) => remaining = &remaining[at + part.len()..],
            None => return false,
        }
    }
    remaining.len() >= last.len() && remaining.ends_with(last)
}
