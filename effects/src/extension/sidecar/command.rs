//! The extensions' commands (`pi.registerCommand`) as one [`RustExtension`] at the
//! [`HookEvent::Command`] point: the session machine asks for a command's run
//! ([`HookPayload::Command`]), the extension host runs its handler with Pi 1.5.2's command
//! context (`command`), and what the handler asked for (`pi.sendMessage`, `pi.appendEntry`, ...)
//! comes back as the outcome's actions, recorded like a hook point's decision so a replay needs
//! no Node. A handler that calls its context for what the session carries out
//! (`ctx.navigateTree`) stops there: its answer is that ask, and the session's answer goes
//! back to the waiting handler (`command.resume`), which goes on to its next ask or its end.

use std::sync::Arc;

use serde_json::json;

use super::acted::ask;
use super::host::{ExtensionHost, Registrations};
use super::mirror::StateMirror;
use crate::extension::{
    HandledHooks, HookContext, HookEvent, HookFuture, HookPayload, RustExtension,
};

/// What the extensions' commands are reported as (Pi names a command's errors
/// `command:<name>`; the name of the command is in the payload).
const NAME: &str = "command";

struct SidecarCommands {
    host: Arc<ExtensionHost>,
    state: StateMirror,
}

impl RustExtension for SidecarCommands {
    fn name(&self) -> &str {
        NAME
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::Command])
    }

    fn mirror(&self) -> Option<&StateMirror> {
        Some(&self.state)
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, cx: &'a HookContext) -> HookFuture<'a> {
        Box::pin(async move {
            let request = match payload {
                HookPayload::Command { name, args, idle } => json!({
                    "type": "command",
                    "name": name,
                    "args": args,
                    "idle": idle,
                }),
                HookPayload::CommandResume { run, answer, .. } => json!({
                    "type": "command.resume",
                    "run": run,
                    "answer": answer,
                }),
                _ => return Ok(None),
            };
            ask(&self.host, &self.state, payload, cx, request, "the command").await
        })
    }
}

/// The names prompts invoke the registered commands by (`/name`), in Pi's runner's order.
pub fn command_names(registrations: &Registrations) -> Vec<String> {
    registrations
        .commands
        .iter()
        .filter_map(|c| c["name"].as_str().map(str::to_owned))
        .collect()
}

/// The extension that runs the registered commands in `host`, with `state` mirrored into
/// their context; none when no extension registered a command.
pub fn command_extension(
    registrations: &Registrations,
    host: &Arc<ExtensionHost>,
    state: &StateMirror,
) -> Option<Arc<dyn RustExtension>> {
    if registrations.commands.is_empty() {
        return None;
    }
    Some(Arc::new(SidecarCommands {
        host: Arc::clone(host),
        state: state.clone(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_names_are_the_invocation_names_init_listed() {
        let registrations = Registrations {
            commands: vec![
                json!({"name": "note", "description": "d", "source": "extension"}),
                json!({"name": "note:2", "source": "extension"}),
            ],
            ..Registrations::default()
        };
        assert_eq!(command_names(&registrations), ["note", "note:2"]);
    }
}
