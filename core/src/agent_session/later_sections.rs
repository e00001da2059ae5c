//! The system prompt's sections from the second prompt's run on: what Pi 1.5.2's MCP extension
//! lists in its `mcp_servers` section once the servers the first prompt did not wait for (those
//! whose tools are reached through `tool_search`) have connected. Pi renders the section in
//! `before_agent_start` as the servers are when each prompt starts; the first prompt lists them
//! by their configured description alone, a later one with their instructions too, and the
//! change reaches the model as the system message that prompt's first turn records. The later
//! text comes with the run's configuration (servers that connected before the session started),
//! or with a hook decision (`registerDeferredTools`: at a `tool_search` that waited for the
//! servers, for the next prompt; at a later prompt's `before_agent_start`, for that one; when
//! servers extensions registered after loading change the section, for the next prompt, the
//! first one if it has not started), so a replay makes the same change at the same prompt with
//! no server.

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
        self.apply_sections(&later);
    }

    /// A hook decision brought `sections`, the servers' section as it stands now (Pi renders
    /// it as the servers are when a prompt starts): before the first prompt they are the
    /// first prompt's; after, they wait for the next prompt's start. None changes nothing.
    pub(super) fn sections_decided(&mut self, sections: &[(String, String)]) {
        if self.prompted {
            self.set_later_sections(sections.to_vec());
        } else if !sections.is_empty() {
            self.apply_sections(sections);
        }
    }

    /// `sections` replace theirs in the prompt the next turn records and in the inputs a tool
    /// change rebuilds it from; an empty content removes its section (Pi deletes the section
    /// when no server is left to list).
    fn apply_sections(&mut self, later: &[(String, String)]) {
        let Some(mut sections) = self.agent.system_sections().cloned() else {
            return;
        };
        for (name, content) in later {
            if content.is_empty() {
                sections.remove(name);
            } else {
                sections.insert(
                    name.clone(),
                    Value::String(format!("<{name}>\n{content}\n</{name}>")),
                );
            }
        }
        let tools = self.agent.tools().to_vec();
        self.agent.set_system(sections, tools);
        if let Some(registry) = &mut self.registry {
            registry.replace_custom_sections(later);
        }
    }
}
