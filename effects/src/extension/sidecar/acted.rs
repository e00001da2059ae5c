//! A request to the extension host whose answer is only what its handlers asked for and what
//! they threw: a command's run (and what its context asked of the session, where the handler
//! stopped for it) and `ctx.compact()`'s callbacks. The request goes out with the
//! state mirror's changes for the payload (held locked until it is written, as an event's), the
//! actions come back to the hook context in the order asked, and the first error is the
//! handler's.

use serde::Deserialize;
use serde_json::Value;

use super::events::ThrownError;
use super::host::{response_data, ExtensionHost};
use super::mirror::StateMirror;
use crate::extension::{HandlerResult, HookAction, HookContext, HookPayload};
use pi_core::agent::hooks::CommandAsk;

/// The host's answer: the actions asked for, the errors thrown, and what a command's handler
/// waits for (its run's number and the ask).
#[derive(Debug, Deserialize)]
struct ActedAnswer {
    #[serde(default)]
    actions: Vec<HookAction>,
    #[serde(default)]
    errors: Vec<ThrownError>,
    #[serde(default)]
    asked: Option<Asked>,
}

#[derive(Debug, Deserialize)]
struct Asked {
    run: u64,
    ask: CommandAsk,
}

/// Sends `request` for `payload` to `host` and waits for its answer; `what` names the request
/// in the errors (`"the command"`).
pub(super) async fn ask(
    host: &ExtensionHost,
    state: &StateMirror,
    payload: &HookPayload,
    cx: &HookContext,
    request: Value,
    what: &str,
) -> Result<Option<HandlerResult>, String> {
    let data = round_trip(host, state, payload, cx, request, what).await?;
    let answer: ActedAnswer = serde_json::from_value(data)
        .map_err(|e| format!("the extension host's answer to {what} is not Pi's: {e}"))?;
    for action in answer.actions {
        cx.act(action);
    }
    // Errors of other events (Pi's report of a registered MCP server nothing connects) are
    // reported as theirs, never as the handler's end.
    let mut errors = Vec::new();
    for thrown in answer.errors {
        match thrown.told() {
            Some((path, event)) => cx.threw_at(path, event, thrown.error),
            None => errors.push(thrown),
        }
    }
    if let Some(Asked { run, ask }) = answer.asked {
        // The handler waits for the session: what was reported before its call is no end of it.
        for thrown in errors {
            cx.threw(thrown.error);
        }
        return Ok(Some(HandlerResult::CommandAsked { run, ask }));
    }
    match errors.into_iter().next() {
        Some(thrown) => Err(thrown.error),
        None => Ok(None),
    }
}

/// Sends `request` for `payload` to `host`, with the state mirror's changes (held locked until
/// it is written, as an event's), and waits for the answer's data; `what` names the request in
/// the errors.
pub(super) async fn round_trip(
    host: &ExtensionHost,
    state: &StateMirror,
    payload: &HookPayload,
    cx: &HookContext,
    mut request: Value,
    what: &str,
) -> Result<Value, String> {
    let (id, mut answers) = {
        let mut mirror = state.lock();
        let (event, told) = mirror.for_event(payload, cx.state())?;
        event.into_request(&mut request);
        let asked = host.request(request).map_err(|e| e.to_string())?;
        mirror.sent(told);
        asked
    };
    let answer = answers.recv().await;
    host.forget(id);
    let answer = answer.ok_or_else(|| host.ended(what).to_string())?;
    response_data(answer).map_err(|e| e.to_string())
}
