//! What a run is built from, as data: the [`RunConfig`] a cassette's header holds, from which
//! the session machine is built in live runs and replays alike. Everything read from the world
//! (the clock, context files, the documentation's location) is read once, before it, so that the
//! same configuration always builds the same machine.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use pi_core::agent::convert::CodingAgentHooks;
use pi_core::agent::hooks::HandledHooks;
use pi_core::agent::{AgentConfig, QueueMode, ToolSpec};
use pi_core::agent_session::retry::RetrySettings;
use pi_core::agent_session::{CacheWarming, SessionConfig, SessionMachine, ToolLoadout};
use pi_core::compaction::CompactionSettings;
use pi_core::model::{clamp_thinking_level, Model, ThinkingLevel};
use pi_core::resources::Resources;
use pi_core::session::entry::SessionEntry;
use pi_core::session::tree::Persist;
use pi_core::system_prompt::DocPaths;
use pi_core::tools::custom::{compose_tools, CustomToolDefinition};
use pi_core::tools::definitions::builtin_tool;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::session::{SessionFile, SessionStore, StoreError};

/// Everything the session machine is built from. Serializable, so that a recording can say
/// exactly what its run was and a replay can build the same machine without reading the
/// machine it runs on. A field this build does not know is refused, not ignored: a replay
/// that dropped part of what its run was built from would not be the run it recorded.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunConfig {
    /// When the run started (ms since the epoch): the session's header and first entries.
    pub started_at: u64,
    /// The seed of entry and session ids.
    pub seed: u64,
    /// The working directory, as the system prompt and the session header name it.
    pub cwd: String,
    /// The model the session starts with.
    pub model: Model,
    /// Before clamping to the model (the level a switch to a reasoning model restores).
    pub thinking_level: ThinkingLevel,
    /// Built-in tool names, in order.
    pub tools: Vec<String>,
    /// Tools a program defined (an SDK user's, an MCP server's, an extension's), after the
    /// built-ins; one named as a built-in in `tools` replaces it in its place. A replay
    /// declares them from here and answers their calls from the recording; only a run that
    /// runs tools again needs the program's registry.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub custom_tools: Vec<CustomToolDefinition>,
    /// Tools known only by name: a session imported from a file Pi wrote used tools of
    /// extensions, whose definitions the file does not hold. They accept any arguments, and
    /// only a replay answers them (a live run has nothing to run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub named_tools: Vec<String>,
    /// The MCP servers that connected for the run, each `{"name", "tools"}` with the tool list
    /// exactly as the server answered it (annotations and the tools not offered to the model
    /// included): what the run's MCP tools were, for a reader of the recording. A replay
    /// declares the offered ones from `custom_tools`; the binary's replay refuses a recording
    /// whose lists disagree with those declarations (`pi_mcp::check_recorded_servers`). A
    /// server still connecting when the session started is `{"name"}` alone: its tools came
    /// later, with the hook decision that waited for it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mcp_servers: Vec<Value>,
    /// The system prompt's sections, context files and all, as Pi 1.5 records them in the
    /// transcript before the first request (and patches them when they change); `None` for a
    /// run that records none, such as an imported session, which sends what its transcript holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_sections: Option<Map<String, Value>>,
    /// Where the system prompt says Pi's documentation is (the binary's directory, so kept:
    /// a replay under `--config current` by another build still says the same).
    pub docs: DocPaths,
    pub retry: RetrySettings,
    pub compaction: CompactionSettings,
    pub steering_mode: QueueMode,
    pub follow_up_mode: QueueMode,
    /// The setting `images.blockImages`.
    pub block_images: bool,
    /// The setting `defaultThinkingLevel`: the level a model switch asks for before the
    /// current one (Pi 1.5.2's `_getThinkingLevelForModelSwitch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_thinking_level: Option<ThinkingLevel>,
    /// The setting `modelThinkingLevels` (`"provider/id"` → level), which a switch to one of
    /// those models asks for first.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub model_thinking_levels: BTreeMap<String, ThinkingLevel>,
    /// The skills and prompt templates the run expands `/skill:name` and `/template` prompts
    /// with, their files as read when it started: a replay expands an RPC prompt from these,
    /// never from the replaying machine's files.
    #[serde(default, skip_serializing_if = "Resources::is_empty")]
    pub resources: Resources,
    /// How the session warms the prompt cache (Pi 1.5.2's `cacheWarming` setting and the
    /// requests' cache retention); absent, it never warms: print and json runs, whose process
    /// ends before a warm would be due, and runs recorded before warming existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_warming: Option<CacheWarming>,
    /// The extension hook points some loaded extension handles: the machine waits for the
    /// extensions' decision there and nowhere else, and a replay waits where the run did
    /// (answered from the recording, extensions absent).
    #[serde(default, skip_serializing_if = "HandledHooks::is_empty")]
    pub handled_hooks: HandledHooks,
    /// The tools registered and not active, and the system prompt's inputs with every
    /// registered tool's snippet and rules: what an extension's `pi.setActiveTools` changes the
    /// declared tools and the prompt with, so a replay applies it with no registry. Recorded by
    /// runs with extensions; without it (older recordings too) the tools never change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_loadout: Option<ToolLoadout>,
    /// The system prompt's custom sections (name, content) from the second prompt's run on:
    /// Pi's `mcp_servers` section once the MCP servers the first prompt did not wait for have
    /// connected (`pi_core::agent_session` `later_sections`). Recorded, so a replay changes
    /// the prompt where the run did, with no server.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub later_sections: Vec<(String, String)>,
    /// The errors the session's start reports, which no handler threw: the MCP servers
    /// extensions registered when nothing connects them (`--no-mcp`). Recorded, so a replay
    /// reports them with no extension loaded.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub start_errors: Vec<pi_core::agent_session::StartError>,
    /// The custom tools whose calls read the session through their context (an extension's
    /// registered tools, run by its host): their calls carry the session's state, so that a
    /// run that runs them again (a hybrid replay's live part) gives them what the run did.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub context_tools: Vec<String>,
}

impl RunConfig {
    /// Every tool the run could declare to the model: its custom tools, then the deferred tools
    /// `tool_search` could load (`toolLoadout.deferredTools`). A recording's MCP server lists
    /// are checked against these (`pi_mcp::check_recorded_servers`).
    pub fn declarable_tools(&self) -> Vec<CustomToolDefinition> {
        let deferred = self
            .tool_loadout
            .iter()
            .flat_map(|loadout| loadout.deferred_tools.iter().map(|t| t.tool.clone()));
        self.custom_tools.iter().cloned().chain(deferred).collect()
    }
}

/// Why a machine could not be built.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error("Unknown tool: {0}")]
    UnknownTool(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A tool known only by its name (an extension's, in a session Pi wrote): any arguments.
pub fn named_tool(name: &str) -> ToolSpec {
    ToolSpec::new(name, "", serde_json::json!({"type": "object"}))
}

/// The tool `name`: the built-in one, else [`named_tool`].
pub fn tool_spec(name: &str) -> ToolSpec {
    builtin_tool(name).map_or_else(|| named_tool(name), |tool| tool.spec())
}

/// The machine and session file a run of `config` starts with, over `store` (new, opened or in
/// memory; created with `config.started_at` and `config.seed`). Pi's `createAgentSession`: a
/// session with messages gains a thinking-level entry if its branch has none; any other
/// session gains the model and the thinking level, written at once when the file already holds
/// an assistant message.
pub fn build_machine(
    config: &RunConfig,
    store: SessionStore,
) -> Result<(SessionMachine, SessionFile), BuildError> {
    let now = config.started_at;
    let mut tools =
        compose_tools(&config.tools, &config.custom_tools).map_err(BuildError::UnknownTool)?;
    tools.extend(config.named_tools.iter().map(|name| named_tool(name)));
    let (mut tree, mut ids, mut file) = store.into_parts();
    let thinking_level = clamp_thinking_level(&config.model, config.thinking_level);
    let existing = !tree.context().messages.is_empty();
    let has_thinking_entry = tree
        .branch_path(None)
        .iter()
        .any(|e| matches!(e, SessionEntry::ThinkingLevelChange(_)));
    let mut write = false;
    if !existing {
        let (_, persist) =
            tree.append_model_change(&config.model.provider, &config.model.id, now, &mut ids);
        write |= persist != Persist::Nothing;
    }
    if !existing || !has_thinking_entry {
        let (_, persist) =
            tree.append_thinking_level_change(thinking_level.as_str(), now, &mut ids);
        write |= persist != Persist::Nothing;
    }
    if write {
        file.flush(&tree)?;
    }
    let mut machine = SessionMachine::new(SessionConfig {
        agent: AgentConfig {
            system_sections: config.system_sections.clone(),
            model: config.model.clone(),
            thinking_level,
            tools,
            hooks: Arc::new(CodingAgentHooks {
                block_images: config.block_images,
            }),
            steering_mode: config.steering_mode,
            follow_up_mode: config.follow_up_mode,
            handled_hooks: config.handled_hooks.clone(),
            ..AgentConfig::default()
        },
        tree,
        ids,
        retry: config.retry,
        compaction: config.compaction,
        default_thinking_level: config.default_thinking_level,
        model_thinking_levels: config.model_thinking_levels.clone(),
        resources: config.resources.clone(),
    });
    machine.set_cache_warming(config.cache_warming);
    machine.set_tool_loadout(config.tool_loadout.clone());
    machine.set_later_sections(config.later_sections.clone());
    machine.set_start_errors(config.start_errors.clone());
    machine.set_context_tools(config.context_tools.clone());
    Ok((machine, file))
}

/// Pi's context files: the agent dir's, then each directory's from the root down to `cwd`.
pub fn load_context_files(agent_dir: &Path, cwd: &Path) -> Vec<(String, String)> {
    let mut files: Vec<(String, String)> = Vec::new();
    if let Some(global) = context_file_in(agent_dir) {
        files.push(global);
    }
    let mut ancestors: Vec<(String, String)> = Vec::new();
    for dir in cwd.ancestors() {
        if let Some(file) = context_file_in(dir) {
            if !files.iter().chain(&ancestors).any(|(p, _)| *p == file.0) {
                ancestors.insert(0, file);
            }
        }
    }
    files.extend(ancestors);
    files
}

fn context_file_in(dir: &Path) -> Option<(String, String)> {
    ["AGENTS.md", "AGENTS.MD", "CLAUDE.md", "CLAUDE.MD"]
        .iter()
        .map(|name| dir.join(name))
        .find(|path| path.exists())
        .and_then(|path| {
            let content = std::fs::read_to_string(&path).ok()?;
            Some((path.to_string_lossy().into_owned(), content))
        })
}
