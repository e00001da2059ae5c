//! Every tool a session has registered, active or not, and what the system prompt is built from:
//! what Pi 1.5.2's `setActiveToolsByName` needs to change the tools the next turn declares and
//! the prompt's sections that list them (`_applyToolLoadout`, `_rebuildSystemPrompt`). The change
//! reaches the model as the system message the next turn records (`declare_system`): in
//! `before_agent_start`, the run's first turn; in `turn_end`, the run's next one.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::agent::ToolSpec;
use crate::system_prompt::{build_system_prompt_sections, SystemPromptInputs};
use crate::tools::definitions::{builtin_tool, builtin_tools};

use super::machine::SessionMachine;

/// What a run's configuration says of its tools beyond the active ones: the built-in tools
/// registered but not active, and the prompt's inputs with the snippets and rules of every
/// registered tool. A run without one (recorded before loadouts were kept, or an imported
/// session) keeps its tools whatever an extension asks, as it did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolLoadout {
    /// Built-in tools registered and not active, in registry order.
    pub inactive_builtins: Vec<String>,
    /// The system prompt's inputs; `selectedTools` is replaced by each loadout change.
    pub prompt: SystemPromptInputs,
}

/// The session's loadout with the declarations of every registered tool.
#[derive(Clone)]
pub(super) struct Registry {
    loadout: ToolLoadout,
    /// Every registered tool: the active ones at the start, then the inactive built-ins.
    tools: Vec<ToolSpec>,
}

impl Registry {
    /// Whether `tool` is the built-in of its name, not a custom tool that replaced it.
    fn builtin(tool: &ToolSpec) -> bool {
        builtin_tool(&tool.name).is_some_and(|b| b.description == tool.description)
    }

    /// The registered tools in Pi's registry order: the built-ins in theirs, then the others.
    fn ordered(&self) -> impl Iterator<Item = &ToolSpec> {
        let builtins = builtin_tools()
            .iter()
            .filter_map(|b| self.tools.iter().find(|t| t.name == b.name));
        let others = self
            .tools
            .iter()
            .filter(|t| builtin_tool(&t.name).is_none());
        builtins.chain(others)
    }
}

impl SessionMachine {
    /// Keeps `loadout`, with the declarations of the tools active now, so that
    /// `pi.setActiveTools` can change them; without it the action changes nothing.
    pub fn set_tool_loadout(&mut self, loadout: Option<ToolLoadout>) {
        self.registry = loadout.map(|loadout| {
            let mut tools = self.agent.tools().to_vec();
            for name in &loadout.inactive_builtins {
                if let Some(tool) = builtin_tool(name) {
                    if !tools.iter().any(|t| t.name == *name) {
                        tools.push(tool.spec());
                    }
                }
            }
            Registry { loadout, tools }
        });
    }

    /// The names of every registered tool, active or not, in Pi's registry order (the built-ins
    /// in theirs, then the others), when the session knows them.
    pub fn registered_tool_names(&self) -> Option<Vec<String>> {
        self.registry
            .as_ref()
            .map(|registry| registry.ordered().map(|t| t.name.clone()).collect())
    }

    /// Pi's `getAllTools()`: each registered tool's name, description, parameters, rules (when
    /// it has some), exposure and, for a built-in, its source.
    pub(super) fn all_tools(&self) -> Option<Vec<Value>> {
        let registry = self.registry.as_ref()?;
        let prompt = &registry.loadout.prompt;
        let info = |tool: &ToolSpec| {
            let mut info = Map::new();
            info.insert("name".into(), json!(tool.name));
            info.insert("description".into(), json!(tool.description));
            info.insert("parameters".into(), tool.parameters.clone());
            if let Some((_, rules)) = prompt
                .tool_guidelines
                .iter()
                .find(|(name, rules)| *name == tool.name && !rules.is_empty())
            {
                info.insert("promptGuidelines".into(), json!(rules));
            }
            info.insert("exposure".into(), json!("direct"));
            if Registry::builtin(tool) {
                info.insert(
                    "sourceInfo".into(),
                    json!({"path": format!("builtin:{}", tool.name), "source": "builtin",
                        "scope": "temporary", "origin": "top-level"}),
                );
            }
            Value::Object(info)
        };
        Some(registry.ordered().map(info).collect())
    }

    /// Pi's `setActiveToolsByName`: the active tools still asked for keep their order, the
    /// others asked for follow in the order asked; names not registered are ignored. The
    /// prompt is rebuilt for them, and the next turn declares both.
    pub(super) fn set_active_tools(&mut self, names: &[String]) {
        let Some(registry) = &self.registry else {
            return;
        };
        let current = self.agent.active_tool_names();
        let mut wanted: Vec<&String> = current.iter().filter(|n| names.contains(n)).collect();
        for name in names {
            if !wanted.contains(&name) {
                wanted.push(name);
            }
        }
        let tools: Vec<ToolSpec> = wanted
            .iter()
            .filter_map(|name| registry.tools.iter().find(|t| t.name == **name).cloned())
            .collect();
        let mut prompt = registry.loadout.prompt.clone();
        prompt.selected_tools = Some(tools.iter().map(|t| t.name.clone()).collect());
        // The inputs built the run's first prompt, so their section names were accepted then.
        if let Ok(sections) = build_system_prompt_sections(&prompt) {
            self.agent.set_system(sections, tools);
        }
    }
}
