//! The session's side of Pi 1.5.2's `resources_discover` (`extendResourcesFromExtensions`):
//! told right after `session_start`, its decision carries the skills and prompt templates the
//! extensions' paths hold, loaded by the interpreter (a replay takes them from the recording).
//! They join the session's resources after its own, the first of a name still winning, so
//! `/skill:` and template expansion and the commands listed see them; the system prompt is
//! built again with the skills (Pi's `_rebuildSystemPrompt`), which the next turn declares.

use crate::agent::hooks::{DiscoveredResources, HookPayload};

use super::machine::SessionMachine;

impl SessionMachine {
    /// Asks the extensions that handle it for their resources (`reason`: `"startup"`).
    pub(super) fn discover_resources(&mut self, reason: &str) {
        let cwd = self.tree.header().cwd.clone();
        self.tell_session(HookPayload::ResourcesDiscover {
            cwd,
            reason: reason.to_owned(),
        });
    }

    /// Adds what the `resources_discover` handlers gave after the session's own resources
    /// (a skill or template of a name already there is left out) and builds the prompt
    /// again with the skills.
    pub(super) fn add_discovered(&mut self, found: &DiscoveredResources) {
        let mut skills_changed = false;
        for skill in &found.skills {
            let named = &skill.skill.name;
            if !self.resources.skills.iter().any(|s| &s.skill.name == named) {
                self.resources.skills.push(skill.clone());
                skills_changed = true;
            }
        }
        for template in &found.templates {
            if !self
                .resources
                .templates
                .iter()
                .any(|t| t.name == template.name)
            {
                self.resources.templates.push(template.clone());
            }
        }
        if skills_changed && self.set_prompt_skills(self.resources.prompt_skills()) {
            let active = self.agent.active_tool_names();
            self.set_active_tools(&active);
        }
    }

    /// The skills and templates `/skill:` and template expansion use now: those the session
    /// started with and those its extensions discovered since (what RPC `get_commands` lists).
    pub fn resources(&self) -> &crate::resources::Resources {
        &self.resources
    }
}
