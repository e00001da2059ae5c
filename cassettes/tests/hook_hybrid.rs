//! A hybrid replay that goes live with hook points recorded: a recording made with a `tool_call`
//! gate (it blocks `rm`), continued with another prompt, reaches the gate live. With the
//! extension loaded the gate blocks again; without it the run must stop, naming the hook point,
//! rather than let every handler's absence pass for "run" (the command would run unguarded).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use pi_cassettes::read::Cassette;
use pi_cassettes::replay::Replay;
use pi_cassettes::test_support::{mock_key, mock_model, prompt, record};
use pi_cassettes::Hybrid;
use pi_effects::agent_session::SessionOptions;
use pi_effects::driver::drive;
use pi_effects::extension::{
    HandledHooks, HandlerResult, HookContext, HookEvent, HookFuture, HookPayload, RustExtension,
};
use pi_effects::run_config::{build_machine, RunConfig};
use pi_testkit::MockLlm;
use serde_json::json;

const KEPT: &str = "important.txt";

/// Blocks every bash command that mentions `rm`.
struct NoRm;

impl RustExtension for NoRm {
    fn name(&self) -> &str {
        "no-rm"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::ToolCall])
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, _cx: &'a HookContext) -> HookFuture<'a> {
        let block = matches!(payload, HookPayload::ToolCall { input, .. }
            if input["command"].as_str().is_some_and(|c| c.contains("rm")));
        Box::pin(async move {
            Ok(block.then_some(HandlerResult::ToolCall {
                block: true,
                reason: None,
                terminate: None,
                input: None,
            }))
        })
    }
}

fn options(workspace: &Path, agent_dir: &Path, mock: &MockLlm, loaded: bool) -> SessionOptions {
    let mut options = SessionOptions::new(workspace, mock_model(mock), mock_key());
    options.agent_dir = agent_dir.to_path_buf();
    options.tools = vec!["bash".into()];
    if loaded {
        options.extensions.load(Arc::new(NoRm));
    }
    options
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hybrid_replay_going_live_without_the_recorded_extension_stops_naming_the_hook_point() {
    let dir = tempfile::tempdir().unwrap();
    let agent_dir = dir.path().join("agent");
    let workspace = dir.path().join("work");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join(KEPT), "keep me\n").unwrap();
    let rm = json!({"tool_calls": [
        {"id": "call_1", "name": "bash", "arguments": {"command": format!("rm {KEPT}")}}]});
    let mock = MockLlm::start(&json!([rm, {"text": ["Blocked."]}, rm, {"text": ["Blocked."]}, rm]));
    let cassette = dir.path().join("gate.jsonl");
    record(
        &cassette,
        options(&workspace, &agent_dir, &mock, true),
        prompt("Tidy up."),
        None,
    )
    .await;
    assert!(workspace.join(KEPT).exists());
    for loaded in [true, false] {
        let scratch = dir.path().join(format!("live-{loaded}"));
        std::fs::create_dir_all(&scratch).unwrap();
        std::fs::write(scratch.join(KEPT), "keep me\n").unwrap();
        let cassette = Arc::new(Cassette::load(&cassette).unwrap());
        let config: RunConfig = cassette.config.clone();
        let store = cassette.starting_session(&config, &scratch).unwrap();
        let (mut machine, mut file) = build_machine(&config, store).unwrap();
        let live = options(&scratch, &agent_dir, &mock, loaded)
            .live()
            .unwrap()
            .for_run(config.seed, config.started_at);
        let mut io = Hybrid::new(Replay::new(cassette).unwrap(), live, None);
        // Another prompt: the replay diverges at once and the rest runs live.
        let ended = drive(
            &mut machine,
            &mut io,
            &mut file,
            prompt("Tidy up again."),
            |_| {},
        )
        .await;
        assert_eq!(io.went_live_at(), Some(1));
        assert!(
            scratch.join(KEPT).exists(),
            "loaded {loaded}: the command ran"
        );
        match loaded {
            true => assert!(ended.is_ok(), "{ended:?}"),
            false => {
                let error = ended.unwrap_err().to_string();
                assert!(
                    error.contains("tool_call") && error.contains("no extension"),
                    "{error}"
                );
            }
        }
    }
}
