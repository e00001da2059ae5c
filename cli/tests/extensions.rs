//! Pi's TypeScript extensions through the real binary and the mock LLM: an extension's tool is
//! declared in the request, its call runs in Node (the extension host, Pi 1.5.2's loader) and
//! is recorded, and `pi replay` reproduces the run byte for byte with no Node on PATH. An
//! untrusted project's extension is not loaded; a configured extension without Node is an error.
//!
//! These need Node and Pi 1.5.2's install (`PI_EXTENSION_HOST_PI_DIR`, its Node in `node/bin`
//! or on PATH); without them they are skipped with a line, unless `PI_REQUIRE_EXTENSIONS=1`
//! (CI) makes that a failure.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "extensions/actions.rs"]
mod actions;
#[path = "extensions/codemode.rs"]
mod codemode;
#[path = "extensions/command_ask.rs"]
mod command_ask;
#[path = "extensions/commands.rs"]
mod commands;
mod common;
#[path = "extensions/compaction.rs"]
mod compaction;
#[path = "extensions/exposures.rs"]
mod exposures;
#[path = "extensions/loading.rs"]
mod loading;
#[path = "extensions/matches_original.rs"]
mod matches_original;
#[path = "extensions/nested.rs"]
mod nested;
#[path = "extensions/packages.rs"]
mod packages;
#[path = "extensions/prepare_arguments.rs"]
mod prepare_arguments;
#[path = "extensions/print_replace.rs"]
mod print_replace;
#[path = "extensions/provider_hooks.rs"]
mod provider_hooks;
#[path = "extensions/providers.rs"]
mod providers;
#[path = "extensions/recording.rs"]
mod recording;
#[path = "extensions/reload.rs"]
mod reload;
#[path = "extensions/rpc.rs"]
mod rpc;
#[path = "extensions/runtime_providers.rs"]
mod runtime_providers;
#[path = "extensions/settings_secrets.rs"]
mod settings_secrets;
#[path = "extensions/signals.rs"]
mod signals;
#[path = "extensions/support.rs"]
mod support;
#[path = "extensions/tool_context.rs"]
mod tool_context;
#[path = "extensions/trust.rs"]
mod trust;
#[path = "extensions/user_bash.rs"]
mod user_bash;
#[path = "extensions/virtual_models.rs"]
mod virtual_models;
