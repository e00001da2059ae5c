//! Pi's `input` event names where a text came from: `"interactive"` by default, `"rpc"` for
//! what RPC mode's `prompt`, `steer` and `follow_up` commands send (Pi 1.5.2's `rpc-mode.js`
//! passes `source: "rpc"`). A front end sets the source on the session it drives; an `input`
//! handler sees it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::sync::{Arc, Mutex};

use common::prompt;
use pi_core::agent_session::{INTERACTIVE_SOURCE, RPC_SOURCE};
use pi_core::model::Model;
use pi_effects::agent_session::{create_agent_session, SessionOptions};
use pi_effects::extension::{
    HandledHooks, HandlerResult, HookContext, HookEvent, HookFuture, HookPayload, InputAction,
    RustExtension,
};
use pi_providers::transport::scripted::ScriptedTransport;
use pi_providers::CallOptions;

/// Writes down each input's source and takes the input (no run, so no model is needed).
#[derive(Clone, Default)]
struct Sources(Arc<Mutex<Vec<String>>>);

impl RustExtension for Sources {
    fn name(&self) -> &str {
        "sources"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::Input])
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, _cx: &'a HookContext) -> HookFuture<'a> {
        if let HookPayload::Input { source, .. } = payload {
            self.0.lock().unwrap().push(source.clone());
        }
        Box::pin(async { Ok(Some(HandlerResult::Input(InputAction::Handled))) })
    }
}

fn options(cwd: &std::path::Path, sources: &Sources) -> SessionOptions {
    let model = Model {
        id: "scripted-model".into(),
        provider: "scripted".into(),
        api: "openai-completions".into(),
        base_url: "http://127.0.0.1:9/v1".into(),
        ..Model::default()
    };
    let mut options = SessionOptions::new(
        cwd,
        model,
        Arc::new(|_| {
            Ok(CallOptions {
                api_key: "test-key".into(),
                ..CallOptions::default()
            })
        }),
    );
    options.agent_dir = cwd.join(".agent");
    options.seed = Some(42);
    options.transport = Some(Arc::new(ScriptedTransport::new([])));
    options.extensions.load(Arc::new(sources.clone()));
    options
}

#[tokio::test]
async fn an_input_handler_sees_the_source_the_front_end_set() {
    let cwd = tempfile::tempdir().unwrap();
    let sources = Sources::default();
    let mut session = create_agent_session(options(cwd.path(), &sources)).unwrap();
    prompt(&mut session, "first").await;
    session.set_input_source(RPC_SOURCE);
    prompt(&mut session, "second").await;
    assert_eq!(*sources.0.lock().unwrap(), [INTERACTIVE_SOURCE, RPC_SOURCE]);
    assert_eq!(RPC_SOURCE, "rpc");
}
