//! Pi's TypeScript extensions, run out of process: `discover.rs` finds them where Pi 1.5.2
//! looks (the project's only when it is trusted), `host.rs` runs the Node extension host
//! (`sidecar/pi-extension-host.mjs`, Pi's own loader) and talks to it over a full-duplex
//! channel (`ui.rs` carries the extensions' `ctx.ui` over it), `events.rs` answers the hook points
//! the extensions' handlers listen at (Pi's runner runs them in the host) over the state
//! `mirror.rs` keeps of the session for their getters, `command.rs` runs their commands,
//! `compact_end.rs` calls the callbacks of their `ctx.compact()`, `prepare.rs` runs their
//! tools' `prepareArguments` shims, `loadout.rs` their `prepareLoadout` hooks,
//! `flags.rs` hands them the command line's values of their flags, `trust.rs` asks them
//! whether the project is trusted (Pi's `project_trust`) and then loads the final set, and `tool.rs` registers the tools the extensions define as [`CustomTool`]s, so
//! their calls are effects: recorded in a cassette and answered from it on replay, where no
//! Node runs.
//!
//! [`CustomTool`]: crate::custom_tool::CustomTool

mod acted;
pub mod command;
pub mod compact_end;
pub mod discover;
pub mod events;
pub mod flags;
pub mod host;
pub mod loadout;
pub mod mirror;
pub mod prepare;
pub mod route;
pub mod tool;
pub mod trust;
pub mod ui;

pub use command::{command_extension, command_names};
pub use compact_end::compact_end_extension;
pub use discover::{discover, expand_home, missing_from_command_line, Wanted};
pub use events::hook_extensions;
pub use flags::{flag_errors, flag_values, FlagDeclaration, GivenFlag};
pub use host::{ExtensionHost, HostError, HostModels, RegisteredMcpServer, Registrations};
pub use mirror::StateMirror;
pub use tool::register_tools;
pub use trust::{TrustAnswer, TrustDecision, TrustError};
