//! What a reload's new load of the extensions registered (Pi 1.5.2's `AgentSession.reload`
//! rebuilding its runtime: `_buildRuntime` with `includeAllExtensionTools`), applied to the
//! session when [`SessionInput::Reloaded`](super::SessionInput::Reloaded) comes: the hook points
//! it waits at, the extensions' tools in its registry and the prompt's inputs, the commands
//! a prompt invokes, the context files, skills, prompt templates, `SYSTEM.md` and
//! `APPEND_SYSTEM.md` and the settings' queue modes read again, the errors reported after
//! its start, and, for a session that replaced another in a run that started with no
//! extension, the providers and MCP servers the load registered. The front end that loaded the extensions again says what
//! they registered; a recording keeps it with the input, so a replay applies the same with no
//! extension loaded.
//! Without it (a recording made before reloads said it) the registrations stay as at the start.

use serde::{Deserialize, Serialize};

use crate::agent::hooks::{HandledHooks, RegisteredMcpServer};
use crate::agent::QueueMode;
use crate::model::Model;
use crate::resources::{skills::LoadedSkill, templates::PromptTemplate};
use crate::tools::custom::CustomToolDefinition;

use super::contract::SessionError;
use super::machine::SessionMachine;

/// What the extensions registered when a reload loaded them again.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Reload {
    /// The hook points some extension handles now (the extensions of other origins, such as
    /// the MCP client's, included): where the machine waits from here on.
    #[serde(default, skip_serializing_if = "HandledHooks::is_empty")]
    pub handled_hooks: HandledHooks,
    /// The tools the new load registered, in registration order: they replace those the
    /// previous load registered (the tools that read the session through their context).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<CustomToolDefinition>,
    /// The names a prompt invokes the new load's commands with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
    /// The new load's commands as RPC `get_commands` lists them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command_listing: Vec<serde_json::Value>,
    /// The context files (path, content) as the reload read them again (Pi's resource loader
    /// reloads them): the prompt is built with them from then on. `None`: those it had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_files: Option<Vec<(String, String)>>,
    /// The errors reported after the reload's `session_start`, which no handler threw: Pi's
    /// new runner reports again each MCP server the new load registered that nothing
    /// connects (`--no-mcp`), as the session's start did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub start_errors: Vec<super::StartError>,
    /// The queue modes of the settings read again (Pi's `syncQueueModesFromSettings`);
    /// `None`: those in force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steering_mode: Option<QueueMode>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follow_up_mode: Option<QueueMode>,
    /// The tools the settings read again newly add to `defaultTools`, which Pi activates after
    /// the active ones.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub added_default_tools: Vec<String>,
    /// The skills as the reload found them again (Pi's resource loader reloads them, the
    /// `--skill` and `--no-skills` flags still applying): `/skill:` expansion and the prompt's
    /// listing use them from then on, before the new load's `resources_discover` adds its
    /// own. `None`: those it had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<Vec<LoadedSkill>>,
    /// The prompt templates as the reload found them again (`--prompt-template` and
    /// `--no-prompt-templates` still applying). `None`: those it had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub templates: Option<Vec<PromptTemplate>>,
    /// The system prompt's replacement and addendum as the reload read them again (the flags,
    /// else `SYSTEM.md` and `APPEND_SYSTEM.md`). `None`: those it had.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_files: Option<ReloadedPromptFiles>,
    /// The providers the new load registered while loading, where the session's registry did
    /// not have them (a run that started with no extension, whose host started for a session
    /// that replaced another): each provider's models as the front end's registry composed
    /// them, taken as provider changes (the current model kept), so that the model lists,
    /// `set_model` and a replay's answers know them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub providers: Vec<LoadedProvider>,
    /// The MCP servers the new load registered while loading, when the built-in MCP extension
    /// follows them (`None`: it does not, as with `--no-mcp`): Pi's MCP extension, rebuilt
    /// with the runtime, connects them at the session's start (a replacing session's, or a
    /// reload's) and drops the previous load's, which the session asks of the extensions that
    /// follow MCP servers (`mcp_servers_change`) once the extensions heard it start; an empty
    /// list withdraws every server the previous load registered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_servers: Option<Vec<RegisteredMcpServer>>,
}

/// One provider a load registered, as its registry composed it (no key among its models).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LoadedProvider {
    pub name: String,
    pub models: Vec<Model>,
    /// Whether a key can be found for it (its models are then available).
    pub available: bool,
}

/// The prompt's replacement (`customPrompt`) and addendum a reload read again; each absent
/// when there is none.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReloadedPromptFiles {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_prompt: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub append_system_prompt: Option<String>,
}

impl SessionMachine {
    /// Takes what a reload's new load registered: the hook points handled, the commands, the
    /// context files, skills, templates, prompt files and queue modes read again (the skills
    /// and templates in place of all the session had, those discovered included), and the extensions' tools in place of the
    /// previous load's (a tool no longer registered is no longer declared; one a built-in's
    /// name is that built-in again), before the tools are activated again
    /// ([`SessionMachine::reactivate_registered_tools`]).
    /// The tools the settings newly add to the defaults come back, for the reactivation.
    pub(super) fn apply_reload(&mut self, reload: Reload) -> Result<Vec<String>, SessionError> {
        self.agent.set_handled_hooks(reload.handled_hooks);
        self.resources.commands = reload.commands;
        self.resources.command_listing = reload.command_listing;
        let previous = std::mem::take(&mut self.context_tools);
        self.replace_extension_tools(&previous, &reload.tools);
        self.context_tools = reload.tools.iter().map(|t| t.name.clone()).collect();
        if let Some(files) = reload.context_files {
            self.set_prompt_context_files(files);
        }
        if let Some(skills) = reload.skills {
            self.resources.skills = skills;
            self.set_prompt_skills(self.resources.prompt_skills());
        }
        if let Some(templates) = reload.templates {
            self.resources.templates = templates;
        }
        if let Some(files) = reload.prompt_files {
            self.set_prompt_files(files.system_prompt, files.append_system_prompt);
        }
        self.start_errors = reload.start_errors;
        for provider in &reload.providers {
            self.change_provider(&provider.name, &provider.models, provider.available, true)?;
        }
        if let Some(mode) = reload.steering_mode {
            self.set_queue_mode(mode, true)?;
        }
        if let Some(mode) = reload.follow_up_mode {
            self.set_queue_mode(mode, false)?;
        }
        Ok(reload.added_default_tools)
    }
}
