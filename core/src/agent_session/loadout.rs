//! Every tool a session has registered, active or not, and what the system prompt is built from:
//! what Pi 1.5.2's `setActiveToolsByName` needs to change the tools the next turn declares and
//! the prompt's sections that list them (`_applyToolLoadout`, `_rebuildSystemPrompt`). The change
//! reaches the model as the system message the next turn records (`declare_system`): in
//! `before_agent_start`, the run's first turn; in `turn_end`, the run's next one.
//!
//! The registry also holds the tools of `deferred` exposure (MCP tools reached through
//! `tool_search`): never active at the start, searched by a `tool_search` call (the machine
//! gives the call the ones not active, [`SessionMachine::fill_tool_searches`]) and activated
//! when its result names them (`details.loaded`), as Pi's `tool_search` activates its matches,
//! so the next request declares them. A replay gets the same result from the recording and so
//! loads the same tools.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::agent::tool_info::{tool_info, Registered};
use crate::agent::{CallId, Effect, ToolExposure, ToolOutcome, ToolSpec};
use crate::system_prompt::{build_system_prompt_sections_hiding, SystemPromptInputs};
use crate::tools::custom::CustomToolDefinition;
use crate::tools::definitions::{builtin_tool, builtin_tools};
use crate::tools::tool_search::{
    run_search, SearchableTool, TOOL_SEARCH_DESCRIPTION, TOOL_SEARCH_TOOL_NAME,
};

use super::machine::SessionMachine;

/// What a run's configuration says of its tools beyond the active ones: the built-in tools
/// registered but not active, and the prompt's inputs with the snippets and rules of every
/// registered tool. A run without one (recorded before loadouts were kept, or an imported
/// session) keeps its tools whatever an extension asks, as it did.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolLoadout {
    /// Built-in tools registered and not active, in registry order.
    pub inactive_builtins: Vec<String>,
    /// Other tools registered and not active (`tool_search` until something activates it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub inactive_tools: Vec<CustomToolDefinition>,
    /// The tools of `deferred` exposure, which only `tool_search` activates.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deferred_tools: Vec<SearchableTool>,
    /// The custom tools' names in registration order, when some of them are registered
    /// without being active (else it is theirs as active, then as inactive).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub registration_order: Vec<String>,
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
    /// Replaces the prompt inputs' custom sections of the names in `sections` (adding those
    /// not there, removing those of an empty content), so a later tool change rebuilds the
    /// prompt with them.
    pub(super) fn replace_custom_sections(&mut self, sections: &[(String, String)]) {
        let custom = &mut self.loadout.prompt.custom_sections;
        for (name, content) in sections {
            if content.is_empty() {
                custom.retain(|(n, _)| n != name);
                continue;
            }
            match custom.iter_mut().find(|(n, _)| n == name) {
                Some(existing) => existing.1 = content.clone(),
                None => custom.push((name.clone(), content.clone())),
            }
        }
    }

    /// Whether `tool_search` is registered, active or not: what lets deferred tools be active.
    fn has_tool_search(&self) -> bool {
        self.tools.iter().any(|t| t.name == TOOL_SEARCH_TOOL_NAME)
    }

    /// The exposure Pi's `getAllTools()` reports for `name`.
    fn exposure(&self, name: &str) -> ToolExposure {
        if name == TOOL_SEARCH_TOOL_NAME {
            ToolExposure::ModelOnly
        } else if self.deferred(name).is_some() {
            ToolExposure::Deferred
        } else {
            self.tools
                .iter()
                .find(|t| t.name == name)
                .map_or(ToolExposure::Direct, |t| t.exposure)
        }
    }

    fn deferred(&self, name: &str) -> Option<&SearchableTool> {
        self.loadout
            .deferred_tools
            .iter()
            .find(|t| t.tool.name == name)
    }

    /// Whether `tool` is the built-in of its name, not a custom tool that replaced it.
    fn builtin(tool: &ToolSpec) -> bool {
        builtin_tool(&tool.name).is_some_and(|b| b.description == tool.description)
    }

    /// The registered tools in Pi's registry order: the built-ins in theirs, then the others,
    /// those of the recorded registration order in it.
    fn ordered(&self) -> impl Iterator<Item = &ToolSpec> {
        let builtins = builtin_tools()
            .iter()
            .filter_map(|b| self.tools.iter().find(|t| t.name == b.name));
        let mut others: Vec<&ToolSpec> = self
            .tools
            .iter()
            .filter(|t| builtin_tool(&t.name).is_none())
            .collect();
        let order = &self.loadout.registration_order;
        others.sort_by_key(|t| {
            order
                .iter()
                .position(|n| *n == t.name)
                .unwrap_or(order.len())
        });
        builtins.chain(others)
    }
}

impl SessionMachine {
    /// Replaces the skills the prompt's inputs list; `false` without a registry (nothing
    /// rebuilds the prompt then).
    pub(super) fn set_prompt_skills(&mut self, skills: Vec<crate::system_prompt::Skill>) -> bool {
        match &mut self.registry {
            Some(registry) => {
                registry.loadout.prompt.skills = skills;
                true
            }
            None => false,
        }
    }

    /// Replaces the context files the prompt's inputs hold (a reload read them again); nothing
    /// without a registry (nothing rebuilds the prompt then).
    pub(super) fn set_prompt_context_files(&mut self, files: Vec<(String, String)>) {
        if let Some(registry) = &mut self.registry {
            registry.loadout.prompt.context_files = files;
        }
    }

    /// Replaces the prompt's replacement and addendum the prompt's inputs hold (a reload read
    /// them again); nothing without a registry (nothing rebuilds the prompt then).
    pub(super) fn set_prompt_files(&mut self, system: Option<String>, append: Option<String>) {
        if let Some(registry) = &mut self.registry {
            registry.loadout.prompt.custom_prompt = system;
            registry.loadout.prompt.append_system_prompt = append;
        }
    }

    /// Keeps `loadout`, with the declarations of the tools active now, so that
    /// `pi.setActiveTools` can change them; without it the action changes nothing.
    pub fn set_tool_loadout(&mut self, loadout: Option<ToolLoadout>) {
        self.registry = loadout.map(|loadout| {
            let mut tools = self.agent.tools().to_vec();
            let inactive = loadout
                .inactive_builtins
                .iter()
                .filter_map(|name| builtin_tool(name).map(|tool| tool.spec()))
                .chain(
                    loadout
                        .inactive_tools
                        .iter()
                        .map(CustomToolDefinition::spec),
                )
                .chain(loadout.deferred_tools.iter().map(|t| t.tool.spec()));
            for tool in inactive.collect::<Vec<_>>() {
                if !tools.iter().any(|t| t.name == tool.name) {
                    tools.push(tool);
                }
            }
            Registry { loadout, tools }
        });
        self.sync_nested_tools();
    }

    /// Tells the agent which tools a running tool may call besides the active ones: the
    /// registered `codemode` and `deferred` tools (Pi's `_getCallableTools`); and every
    /// registered tool, which the `prepareLoadout` hooks are given.
    fn sync_nested_tools(&mut self) {
        let tools = self
            .registry
            .as_ref()
            .map(|registry| {
                let deferred = registry.loadout.deferred_tools.iter().map(|t| {
                    let mut spec = t.tool.spec();
                    spec.exposure = ToolExposure::Deferred;
                    spec
                });
                let others = registry
                    .tools
                    .iter()
                    .filter(|t| t.exposure.callable_when_inactive())
                    .filter(|t| registry.deferred(&t.name).is_none())
                    .cloned();
                others.chain(deferred).collect()
            })
            .unwrap_or_default();
        self.agent.set_nested_tools(tools);
        // Only a tool that prepares the loadout is given them: describing every registered
        // tool at each change of the registry is not free.
        let prepares = self
            .registry
            .as_ref()
            .is_some_and(|registry| registry.tools.iter().any(|t| t.prepares_loadout));
        let registered = prepares
            .then(|| self.all_tools())
            .flatten()
            .unwrap_or_default();
        self.agent.set_registered_tools(registered);
    }

    /// The names of every registered tool, active or not, in Pi's registry order (the built-ins
    /// in theirs, then the others), when the session knows them.
    pub fn registered_tool_names(&self) -> Option<Vec<String>> {
        self.registry
            .as_ref()
            .map(|registry| registry.ordered().map(|t| t.name.clone()).collect())
    }

    /// Pi's `getAllTools()`: each registered tool's name, description, parameters, rules (when
    /// it has some), exposure and its source (a built-in's, or where the extension that
    /// registered it came from).
    pub(super) fn all_tools(&self) -> Option<Vec<Value>> {
        let registry = self.registry.as_ref()?;
        let prompt = &registry.loadout.prompt;
        let info = |tool: &ToolSpec| {
            let guidelines = prompt
                .tool_guidelines
                .iter()
                .find(|(name, rules)| *name == tool.name && !rules.is_empty())
                .map_or(&[][..], |(_, rules)| rules.as_slice());
            // Pi's built-in tools, and its built-in `tool-search` extension's tool.
            let builtin = if Registry::builtin(tool) {
                Some(tool.name.as_str())
            } else if tool.name == TOOL_SEARCH_TOOL_NAME
                && tool.description == TOOL_SEARCH_DESCRIPTION
            {
                Some("tool-search")
            } else {
                None
            };
            let registered = Registered {
                exposure: registry.exposure(&tool.name),
                namespace: registry
                    .deferred(&tool.name)
                    .and_then(|t| t.namespace.as_ref()),
                guidelines,
                builtin,
            };
            tool_info(tool, registered)
        };
        Some(registry.ordered().map(info).collect())
    }

    /// Registers `tools` of `deferred` exposure (a server that connected in the background),
    /// after those registered; one of a name already registered deferred is left as it is, one
    /// registered with another exposure is registered again deferred in its place, as Pi's
    /// `registerTool` replaces a definition (the resource tools once no server left is
    /// `direct`). Without a registry nothing can load them, as without `tool_search`.
    pub(super) fn register_deferred(&mut self, tools: &[SearchableTool]) {
        let Some(registry) = &mut self.registry else {
            return;
        };
        for tool in tools {
            if registry.deferred(&tool.tool.name).is_some() {
                continue;
            }
            let spec = tool.tool.spec();
            match registry.tools.iter_mut().find(|t| t.name == spec.name) {
                Some(registered) => *registered = spec,
                None => registry.tools.push(spec),
            }
            registry.loadout.deferred_tools.push(tool.clone());
        }
        self.sync_nested_tools();
    }

    /// Registers `tools` exposed directly (an MCP server that connected after the start), as
    /// Pi's `registerTool` after binding does: active from the next request on, after the
    /// active tools (one of a name already registered is replaced); the tools `withdrawn` (of
    /// servers removed) are no longer active nor searchable, as Pi's hidden tools. Without a
    /// registry nothing changes, as for `pi.setActiveTools`.
    pub(super) fn register_direct(&mut self, tools: &[CustomToolDefinition], withdrawn: &[String]) {
        let Some(registry) = &mut self.registry else {
            return;
        };
        registry
            .loadout
            .deferred_tools
            .retain(|t| !withdrawn.contains(&t.tool.name));
        // Pi registers them again hidden.
        for registered in registry
            .tools
            .iter_mut()
            .filter(|t| withdrawn.contains(&t.name))
        {
            registered.exposure = ToolExposure::Hidden;
        }
        for tool in tools {
            let spec = tool.spec();
            match registry.tools.iter_mut().find(|t| t.name == spec.name) {
                Some(registered) => *registered = spec,
                None => registry.tools.push(spec),
            }
        }
        let mut active: Vec<String> = self
            .agent
            .active_tool_names()
            .into_iter()
            .filter(|name| !withdrawn.contains(name))
            .collect();
        for tool in tools {
            if !active.contains(&tool.name) {
                active.push(tool.name.clone());
            }
        }
        self.sync_nested_tools();
        self.set_active_tools(&active);
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
        // Pi's `_isActivatable`: a deferred tool only where `tool_search` could load it.
        let searchable = registry.has_tool_search();
        let tools: Vec<ToolSpec> = wanted
            .iter()
            .filter(|name| searchable || registry.deferred(name).is_none())
            .filter(|name| registry.exposure(name) != ToolExposure::Hidden)
            .filter_map(|name| registry.tools.iter().find(|t| t.name == **name).cloned())
            .collect();
        let mut prompt = registry.loadout.prompt.clone();
        prompt.selected_tools = Some(tools.iter().map(|t| t.name.clone()).collect());
        let hidden: &[String] = if tools.iter().any(|t| t.prepares_loadout) {
            &self.hidden_declarations
        } else {
            &[]
        };
        // The inputs built the run's first prompt, so their section names were accepted then.
        if let Ok(sections) = build_system_prompt_sections_hiding(&prompt, hidden) {
            self.agent.set_system(sections, tools);
        }
    }

    /// Pi's `_hiddenDeclarations` after a `prepareLoadout` answer: the prompt is built again
    /// without the declarations it hides (their snippets and rules), for the turn about to
    /// declare the tools. Without a registry nothing rebuilds the prompt.
    pub(super) fn loadout_hides(&mut self, hidden: Vec<String>) {
        if self.hidden_declarations == hidden {
            return;
        }
        self.hidden_declarations = hidden;
        let active = self.agent.active_tool_names();
        self.set_active_tools(&active);
    }

    /// Replaces the tools `previous` names (a previous load of the extensions registered
    /// them) with `tools` (the new load's) in the registry, the prompt's inputs and the tools
    /// `tool_search` searches (those of `deferred` exposure), where the first of them was
    /// (after the others otherwise): a name that is a built-in's and no longer registered is
    /// that built-in again. Without a registry nothing changes.
    pub(super) fn replace_extension_tools(
        &mut self,
        previous: &[String],
        tools: &[CustomToolDefinition],
    ) {
        let Some(registry) = &mut self.registry else {
            return;
        };
        let survives = |t: &ToolSpec| {
            !previous.contains(&t.name) && !tools.iter().any(|new| new.name == t.name)
        };
        let first = registry
            .tools
            .iter()
            .position(|t| previous.contains(&t.name));
        let at = first.map(|first| {
            registry.tools[..first]
                .iter()
                .filter(|t| survives(t))
                .count()
        });
        registry.tools.retain(survives);
        let at = at.unwrap_or(registry.tools.len());
        registry
            .tools
            .splice(at..at, tools.iter().map(CustomToolDefinition::spec));
        let prompt = &mut registry.loadout.prompt;
        for name in previous
            .iter()
            .filter(|n| !tools.iter().any(|t| t.name == **n))
        {
            prompt.tool_snippets.retain(|(n, _)| n != name);
            prompt.tool_guidelines.retain(|(n, _)| n != name);
            if let Some(builtin) = builtin_tool(name) {
                registry.tools.push(builtin.spec());
                if let Some(snippet) = &builtin.prompt_snippet {
                    prompt.tool_snippets.push((name.clone(), snippet.clone()));
                }
                prompt
                    .tool_guidelines
                    .push((name.clone(), builtin.prompt_guidelines.clone()));
            }
        }
        let selected = prompt.selected_tools.clone();
        *prompt = std::mem::take(prompt).with_custom_tools(tools);
        prompt.selected_tools = selected;
        // The new load's tools of `deferred` exposure are what `tool_search` searches in place
        // of the previous load's.
        let deferred = &mut registry.loadout.deferred_tools;
        deferred.retain(|t| !previous.contains(&t.tool.name));
        for tool in tools {
            deferred.retain(|t| t.tool.name != tool.name);
            if tool.exposure() == ToolExposure::Deferred {
                deferred.push(SearchableTool {
                    tool: tool.clone(),
                    namespace: tool.namespace.clone(),
                });
            }
        }
        self.sync_nested_tools();
    }

    /// Pi's reload rebuilds the tools: the active ones stay active, then `added` (the tools the
    /// settings newly add to the defaults), and every registered tool but the built-ins that
    /// registration activates is active again (one an extension turned off since), after them
    /// in registry order; not the deferred ones, `tool_search`, nor one registration does not
    /// activate (`defaultActive: false`, or an exposure never declared).
    pub(super) fn reactivate_registered_tools(&mut self, added: &[String]) {
        let Some(registry) = &self.registry else {
            return;
        };
        let mut names = self.agent.active_tool_names();
        for name in added {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        let activated = registry.ordered().filter(|tool| {
            builtin_tool(&tool.name).is_none()
                && tool.name != TOOL_SEARCH_TOOL_NAME
                && registry.deferred(&tool.name).is_none()
                && tool.exposure.activated_on_registration(tool.default_active)
        });
        for tool in activated {
            if !names.contains(&tool.name) {
                names.push(tool.name.clone());
            }
        }
        self.set_active_tools(&names);
    }

    /// Gives each `tool_search` call among `effects` what it searches: the deferred tools not
    /// active now. Without a registry that has the tool, the call is left to the interpreter's
    /// tools, as any other unknown tool is.
    pub(super) fn fill_tool_searches(&mut self, effects: &mut [Effect]) {
        let Some(registry) = self.registry.as_ref().filter(|r| r.has_tool_search()) else {
            return;
        };
        let active = self.agent.active_tool_names();
        let mut candidates: Vec<SearchableTool> = registry
            .loadout
            .deferred_tools
            .iter()
            .filter(|t| !active.contains(&t.tool.name))
            .cloned()
            .collect();
        for effect in effects {
            if let Effect::RunTool {
                call,
                tool,
                args,
                search: slot @ None,
                ..
            } = effect
            {
                if tool == TOOL_SEARCH_TOOL_NAME {
                    self.tool_searches.push(*call);
                    *slot = Some(Box::new(candidates.clone()));
                    // Pi's calls of one answer search in turn, each after the previous one
                    // loaded its matches: the next call searches what this one leaves.
                    if let Ok(found) = run_search(args, &candidates) {
                        candidates.retain(|t| !found.loaded.contains(&t.tool.name));
                    }
                }
            }
        }
    }

    /// Activates what a `tool_search` call's result loaded (`details.loaded`), after the
    /// active tools, before the agent takes the result: Pi's tool activates them while it
    /// runs, so the request that follows the call declares them. A thrown search loads nothing.
    pub(super) fn tool_search_finished(&mut self, call: CallId, outcome: &ToolOutcome) {
        let Some(at) = self.tool_searches.iter().position(|c| *c == call) else {
            return;
        };
        self.tool_searches.remove(at);
        let ToolOutcome::Ok(result) = outcome else {
            return;
        };
        let loaded: Vec<String> = result
            .details
            .as_ref()
            .and_then(|d| d.get("loaded"))
            .and_then(Value::as_array)
            .map(|names| {
                names
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        if loaded.is_empty() {
            return;
        }
        let mut names = self.agent.active_tool_names();
        names.extend(loaded);
        self.set_active_tools(&names);
    }
}
