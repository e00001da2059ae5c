//! The coding agent's session runtime (pi-coding-agent's `AgentSession`) as a pure state
//! machine around the agent loop: persistence, automatic retry, compaction, queues, and model
//! and thinking-level changes.

mod answer;
mod auto_retry;
mod boundary;
mod cache_warm;
mod command;
mod compaction;
mod contract;
mod discovered;
mod extension;
mod extension_actions;
mod feed;
mod hook_state;
mod idle_run;
mod input;
mod later_sections;
mod loadout;
mod machine;
mod model_change;
mod model_route;
mod navigate;
mod notify;
mod options;
mod process;
mod prompt;
mod provider_hooks;
mod provider_notices;
mod reload;
pub mod retry;
mod runtime_providers;
mod start_errors;
mod user_bash;
mod wake;

pub use cache_warm::{warming_delay_ms, CacheRetentionKind, CacheWarming, CacheWarmingMode};
pub use command::CarriedCommand;
pub use contract::{
    BusyAnswer, ExtensionEntry, NavigateRequest, Navigated, Reply, SessionConfig, SessionError,
    SessionInput, SessionRejection, SessionStep, StreamingBehavior,
};
pub use feed::{feed, Machine, Refused};
pub use input::{INTERACTIVE_SOURCE, RPC_SOURCE};
pub use loadout::ToolLoadout;
pub use machine::SessionMachine;
pub use reload::{LoadedProvider, Reload, ReloadedPromptFiles};
pub use runtime_providers::ProviderChange;
pub use start_errors::StartError;
