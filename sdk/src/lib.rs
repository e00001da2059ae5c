//! The harness as a library: Pi's SDK (`createAgentSession`) in Rust.
//!
//! Build a session with [`SessionBuilder`] (model, thinking level, the built-in tools it may
//! use, where it works, whether it is kept in memory or written to disk, the system prompt,
//! context files, skills and prompt templates, the agent dir), then drive it through the
//! [`Session`] handle: [`Session::prompt`], [`Session::steer`], [`Session::follow_up`],
//! [`Session::abort`], [`Session::wait_idle`], [`Session::set_model`],
//! [`Session::set_thinking_level`], [`Session::navigate`] and [`Session::clear_queue`], and
//! replace it with [`Session::new_session`], [`Session::switch_session`] or [`Session::fork`]
//! (Pi's `AgentSessionRuntime`), watching Pi's events through [`Session::subscribe`]. The session runs on the same machinery as the `pi` binary (the pure
//! session machine, the driver and the Live interpreter), so what it sends, writes and emits is
//! what `pi` would. A run can be recorded into a cassette ([`SessionBuilder::record`]) and
//! replayed from one without the model ([`SessionBuilder::replay`]).
//!
//! Tools of the program's own implement [`CustomTool`] and join with
//! [`SessionBuilder::custom_tool`]; [`SessionBuilder::confine_to_cwd`] keeps the built-in file
//! tools inside the workspace. MCP servers' tools join with [`SessionBuilder::mcp_config`].
//!
//! ```
//! # #[tokio::main] async fn main() -> Result<(), pi_sdk::Error> {
//! # let mock = pi_testkit::MockLlm::start(&serde_json::json!([
//! #     {"tool_calls": [{"name": "ls", "arguments": {}}]}, {"text": "One file: notes.txt."}]));
//! # let workspace = tempfile::tempdir().map_err(|e| pi_sdk::Error::Io(e.to_string()))?;
//! # std::fs::write(workspace.path().join("notes.txt"), "hi").map_err(|e| pi_sdk::Error::Io(e.to_string()))?;
//! # let model = pi_sdk::Model { id: "mock".into(), provider: "mock".into(), api: "openai-completions".into(), base_url: mock.url("/v1"), input: vec!["text".into()], context_window: 128_000, max_tokens: 16_384, ..pi_sdk::Model::default() };
//! use pi_sdk::{AgentEvent, Event, SessionBuilder};
//!
//! let session = SessionBuilder::new(workspace.path())
//!     .model(model) // or .model_from_registry("anthropic", "claude-sonnet-4-5")
//!     .api_key("sk-example")
//!     .read_only_tools()
//!     .confine_to_cwd()
//!     .record(workspace.path().join("run.cassette.jsonl"))
//!     .build()?;
//! let mut events = session.subscribe(); // every event of `pi --mode json`
//! session.prompt("What is in this directory?").await?;
//! session.finish().await?; // the recording's outcome line
//! while let Ok(event) = events.try_recv() {
//!     if let Event::Agent(AgentEvent::ToolExecutionStart { tool_name, .. }) = event {
//!         println!("ran {tool_name}");
//!     }
//! }
//! # Ok(()) }
//! ```

mod builder;
mod io;
mod printed;
mod session;

pub use builder::{SessionBuilder, ALL_TOOLS, READ_ONLY_TOOLS};

/// What a program needs for [`SessionBuilder::mcp_config`]: `mcp.json` read as Pi 1.5.2 reads
/// it, or one server's entry checked as Pi checks it.
pub mod mcp {
    pub use pi_mcp::config::{validate_server, Scope};
    pub use pi_mcp::{load_mcp_config, ConfigError, McpConfig, ServerEntry, Transport};
}
pub use session::Session;

pub use pi_core::agent::QueueMode;
pub use pi_core::agent_session::retry::RetrySettings;
pub use pi_core::agent_session::NavigateRequest;
pub use pi_core::compaction::CompactionSettings;
pub use pi_core::event::ToolResult;
pub use pi_core::event::{AgentEvent, AssistantMessageEvent, Event, SessionEvent};
pub use pi_core::message::{
    text_parts, AgentMessage, AssistantMessage, ContentBlock, ImageContent, UserContent,
};
pub use pi_core::model::{Model, ThinkingLevel};
pub use pi_core::resources::Resources;
pub use pi_core::system_prompt::DocPaths;
pub use pi_core::tools::selection::NoTools;
pub use pi_effects::custom_tool::{
    CustomTool, CustomToolDefinition, ToolCallContext, ToolExposure, ToolFuture, ToolNamespace,
};
pub use pi_effects::driver::Driven;
pub use pi_effects::extension::{
    HandledHooks, HandlerResult, HookAction, HookContext, HookDecision, HookEvent, HookFuture,
    HookPayload, InjectedMessage, InputAction, ProviderRegistration, RustExtension,
    SuppliedCompaction, SuppliedSummary, TreeAnswer,
};
pub use tokio::sync::broadcast;

use pi_effects::agent_session::CreateError;
use pi_effects::driver::DriveError;

/// Why a session could not be built or a run could not go on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The builder was given no model, the settings name none it can use, and no model has a
    /// configured key.
    #[error("no model: call SessionBuilder::model or SessionBuilder::model_from_registry")]
    NoModel,
    /// Neither the built-in catalog nor `models.json` has the model asked for.
    #[error("Model {provider}/{id} not found")]
    UnknownModel { provider: String, id: String },
    /// The options do not make a session (an unknown tool, a bad system prompt section, an
    /// HTTP client that cannot start).
    #[error(transparent)]
    Create(#[from] CreateError),
    /// The session file could not be created or read.
    #[error("session: {0}")]
    Session(String),
    /// The session file is another process's to write (the `pi` binary's, or another
    /// program's session): it holds the file's claim.
    #[error(transparent)]
    SessionHeld(#[from] pi_effects::session::LockError),
    /// A cassette could not be written or read, or a replay diverged from its recording.
    #[error("cassette: {0}")]
    Cassette(String),
    /// The session refused an operation (Pi's error text) or a run stopped.
    #[error(transparent)]
    Drive(#[from] DriveError),
    /// The session refused an operation that ended later (a navigation), with Pi's text.
    #[error("{0}")]
    Refused(String),
    /// An extension cancelled the session's replacement or navigation (its
    /// `session_before_switch`, `session_before_fork` or `session_before_tree` handler, Pi's
    /// `{ cancelled: true }`): the session stays as it was.
    #[error("cancelled by an extension")]
    Cancelled,
    /// A TypeScript extension could not be loaded (Pi 1.5.2's text: `Failed to load
    /// extension "<path>": <error>`), or no Node could run the extension host.
    #[error("{0}")]
    Extension(String),
    /// A file the program asked for could not be read or written.
    #[error("io: {0}")]
    Io(String),
    /// A cassette's header contradicts itself where it says what the run's tools were: an MCP
    /// server's listed tools (`config.mcpServers`) against the declarations the model was given
    /// (`config.customTools`). A replay declares the tools from the latter, so such a cassette
    /// would replay a run with tools it did not have; it is refused before anything runs, as
    /// `pi replay` refuses it. `reason` names the field, the server and the tool.
    #[error("{}: unusable cassette: {reason}", cassette.display())]
    RecordedServers {
        cassette: std::path::PathBuf,
        reason: String,
    },
}
