//! What a session is configured with: the options this command line, its settings and
//! environment give a session, its `tool_search`, and how RPC mode warms the prompt cache.

use std::path::PathBuf;

use pi_core::agent_session::{CacheRetentionKind, CacheWarming, CacheWarmingMode};
use pi_core::model::{Model, ThinkingLevel};
use pi_core::tools::tool_search::TOOL_SEARCH_TOOL_NAME;
use pi_effects::agent_session::SessionOptions;
use pi_effects::tools::ToolEnv;

use super::guidance::docs;
use super::Runtime;

impl Runtime {
    /// How RPC mode warms the prompt cache: the global setting `cacheWarming`, and the
    /// retention the requests ask for (`PI_CACHE_RETENTION=long`, else short). `None` when
    /// nothing could be warmed (the setting is `off`, or no model the session can use has a
    /// `promptCache`), so such a run's configuration reads as one from before warming existed.
    pub fn rpc_cache_warming(&self) -> Option<CacheWarming> {
        let mode = self.settings.cache_warming_mode();
        let available = self.available_models();
        let warmable = self
            .cli_model
            .iter()
            .chain(&available)
            .any(|m| m.extra.get("promptCache").is_some());
        (mode != CacheWarmingMode::Off && warmable).then(|| CacheWarming {
            mode,
            retention: if self.env.get_raw("PI_CACHE_RETENTION") == Some("long") {
                CacheRetentionKind::Long
            } else {
                CacheRetentionKind::Short
            },
        })
    }

    /// The run's `tool_search` (see [`SessionOptions::tool_search`]): registered where Pi's
    /// would be observable (extensions loaded, MCP servers started, or the tools naming it),
    /// active when the tools name it or deferred MCP tools need it.
    pub fn tool_search(&self) -> Option<bool> {
        let named = self.tools.iter().any(|t| t == TOOL_SEARCH_TOOL_NAME);
        let observable =
            named || self.mcp_started || !self.extensions.is_empty() || self.host().is_some();
        (self.tool_search_registered && observable).then_some(self.mcp_activates_tool_search)
    }

    /// The options of a session of `model` at `level` as this command line, settings and
    /// environment configure it.
    pub fn session_options(&self, model: Model, level: ThinkingLevel) -> SessionOptions {
        let mut options = SessionOptions::new(&self.cwd, model, self.call_options());
        options.agent_dir = self.agent_dir.clone();
        // Unclamped: the session clamps it to the model and keeps it as the level a switch to
        // a reasoning model restores.
        options.thinking_level = level;
        options.tools = self.tools.clone();
        options.registered_builtins = Some(self.registered_builtins.clone());
        options.custom_tools = self.custom_tools.clone();
        options.tool_search = self.tool_search();
        if self.mcp_activates_codemode {
            options.activated_tools = vec![crate::tool_select::CODEMODE_TOOL_NAME.to_owned()];
        }
        options.tools_allowlist = self.tool_flags.allowlist.clone();
        options.mcp_servers = self.mcp_servers.clone();
        options.custom_sections =
            pi_mcp::servers_section::custom_sections(self.mcp_section.as_deref());
        options.later_sections =
            pi_mcp::servers_section::custom_sections(self.mcp_later_section.as_deref());
        options.start_errors = self.start_errors.clone();
        options.extensions = self.extensions.clone();
        options.system_prompt = self.system_prompt.clone();
        options.append_system_prompt = self.append_system_prompt.clone();
        options.context_files = self.context_files;
        options.resources = self.resources.clone();
        options.retry = self.settings.retry();
        options.compaction = self.settings.compaction();
        options.steering_mode = self.settings.steering_mode();
        options.follow_up_mode = self.settings.follow_up_mode();
        options.docs = docs();
        options.block_images = self.settings.block_images();
        options.default_thinking_level = self.settings.default_thinking_level();
        options.model_thinking_levels = self.settings.model_thinking_levels();
        options.cache_warming = self.cache_warming;
        let mut env = ToolEnv::new(&self.cwd);
        env.shell = self.settings.shell_path().map(PathBuf::from);
        env.command_prefix = self.settings.shell_command_prefix().map(str::to_owned);
        env.pass_credentials = self.settings.shell_pass_credentials();
        env.auto_resize_images = self.settings.auto_resize_images();
        options.tool_env = Some(env.with_environment_overrides());
        options
    }
}
