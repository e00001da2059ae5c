//! MCP servers as Pi 1.5.2's built-in MCP extension uses them: `mcp.json` read and checked as Pi
//! reads it (`config`), tools named (`naming`) and declared (`definition`) as Pi names and
//! declares them, results turned into Pi's tool results as Pi turns them (`convert`), and the
//! connection to a stdio or streamable-HTTP server through the official Rust SDK (`client`).
//!
//! This crate holds the rmcp dependency tree so the pure crates stay free of it; it depends on
//! `pi-core` for Pi's types and on `pi-effects` only for the custom-tool trait its tools
//! implement (`custom_tool`).

pub mod background;
pub mod client;
pub mod config;
pub mod convert;
pub mod credentials;
pub mod custom_tool;
pub mod definition;
pub mod early;
pub mod later;
pub mod naming;
pub mod output_schemas;
pub mod raw_results;
pub mod resource_hub;
pub mod resources;
pub mod servers_section;
pub mod startup;
mod stdio_child;

pub use background::{start_for_rerun, start_lazily, Background};
pub use client::{CallError, ConnectError, McpConnection};
pub use config::{load_mcp_config, ConfigError, McpConfig, Registered, ServerEntry, Transport};
pub use convert::{convert_result, McpToolOutput};
pub use credentials::{credentials, machine_credentials};
pub use custom_tool::{register_late_tools, register_tools, McpTool};
pub use definition::{check_recorded_servers, tool_definitions, McpToolDefinition};
pub use early::EarlyRegistration;
pub use later::Later;
pub use resource_hub::ResourceHub;
pub use startup::{start_servers, stop_servers, Started};
