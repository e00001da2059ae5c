//! The system prompt's sections from the second prompt's run on: what Pi 1.5.2's MCP extension
//! lists in its `mcp_servers` section once the servers the first prompt did not wait for (those
//! whose tools are reached through `tool_search`) have connected. Pi renders the section in
//! `before_agent_start` as the servers are when each prompt starts; the first prompt lists them
//! by their configured description alone, a later one with their instructions too, and the
//! change reaches the model as the system message that prompt's first turn records. The later
//! text comes with the run's configuration (servers that connected before the session started),
//! or with a hook decision (`registerDeferredTools`: at a `tool_search` that waited for the
//! servers, for the next prompt; at a later prompt's `before_agent_start`, for that one), so a
//! replay makes the same change at the same prompt with no server.

use serde_json::Value;

use super::machine::SessionMachine;

impl SessionMachine {
    /// Keeps `sections` (name and content, as the prompt's inputs name custom sections) for the
    /// second prompt's run and after; none changes nothing.
    pub fn set_later_sections(&mut self, sections: Vec<(String, String)>) {
        self.later_sections = sections;
    }

    /// A prompt's run starts: from the second one on, the later sections replace theirs in the
    /// prompt the next turn records (and in the inputs a tool change rebuilds it from).
    pub(super) fn apply_later_sections(&mut self) {
        if std::mem::replace(&mut self.prompted, true) {
            self.apply_later_sections_now();
        }
    }

    /// The later sections replace theirs now, for the run about to start: a prompt's
    /// `before_agent_start` decision brought them (Pi renders the section there, as the
    /// servers are when the prompt starts).
    pub(super) fn apply_later_sections_now(&mut self) {
        if self.later_sections.is_empty() {
            return;
        }
        let later = std::mem::take(&mut self.later_sections);
        let Some(mut sections) = self.agent.system_sections().cloned() else {
            return;
        };
        for (name, content) in &later {
            sections.insert(
                name.clone(),
                Value::String(format!("<{name}>\n{content}\n</{name}>")),
            );
        }
        let tools = self.agent.tools().to_vec();
        self.agent.set_system(sections, tools);
        if let Some(registry) = &mut self.registry {
            registry.replace_custom_sections(&later);
        }
    }
}
