#![allow(clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;

use super::*;

/// An extension answering every event it handles with one fixed answer, counting its calls.
struct Fixed {
    name: &'static str,
    handles: Vec<HookEvent>,
    answer: Result<Option<HandlerResult>, String>,
    action: Option<HookAction>,
    calls: AtomicUsize,
}

impl Fixed {
    fn new(name: &'static str, answer: Result<Option<HandlerResult>, String>) -> Arc<Self> {
        Arc::new(Fixed {
            name,
            handles: vec![HookEvent::ToolCall],
            answer,
            action: None,
            calls: AtomicUsize::new(0),
        })
    }
}

impl RustExtension for Fixed {
    fn name(&self) -> &str {
        self.name
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of(self.handles.iter().copied())
    }

    fn handle<'a>(&'a self, _payload: &'a HookPayload, cx: &'a HookContext) -> HookFuture<'a> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        if let Some(action) = &self.action {
            cx.act(action.clone());
        }
        let answer = self.answer.clone();
        Box::pin(async move { answer })
    }
}

fn call() -> HookPayload {
    HookPayload::ToolCall {
        tool_name: "bash".into(),
        tool_call_id: "c1".into(),
        input: json!({"command": "rm -rf /"}),
    }
}

fn block(reason: &str) -> Result<Option<HandlerResult>, String> {
    Ok(Some(HandlerResult::ToolCall {
        block: true,
        reason: Some(reason.into()),
        terminate: None,
        input: None,
    }))
}

#[tokio::test]
async fn handlers_run_in_load_order_and_the_first_block_ends_the_round() {
    let quiet = Fixed::new("quiet", Ok(None));
    let first = Fixed::new("first", block("dangerous"));
    let second = Fixed::new("second", block("never"));
    let mut registry = ExtensionRegistry::new();
    for e in [&quiet, &first, &second] {
        registry.load(e.clone());
    }
    let outcome = registry.decide(call()).await;
    assert_eq!(
        outcome.decision,
        HookDecision::ToolCall(ToolCallVerdict::Block {
            reason: "dangerous".into(),
            terminate: None
        })
    );
    assert_eq!(quiet.calls.load(Ordering::SeqCst), 1);
    assert_eq!(first.calls.load(Ordering::SeqCst), 1);
    assert_eq!(second.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn an_extension_is_called_only_for_the_events_it_handles() {
    let elsewhere = Arc::new(Fixed {
        name: "elsewhere",
        handles: vec![HookEvent::TurnEnd],
        answer: block("never"),
        action: None,
        calls: AtomicUsize::new(0),
    });
    let mut registry = ExtensionRegistry::new();
    registry.load(elsewhere.clone());
    assert_eq!(registry.handled(), HandledHooks::of([HookEvent::TurnEnd]));
    let outcome = registry.decide(call()).await;
    assert_eq!(
        outcome.decision,
        HookDecision::ToolCall(ToolCallVerdict::Run {
            input: json!({"command": "rm -rf /"})
        })
    );
    assert_eq!(elsewhere.calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn actions_come_back_in_order_and_a_thrown_gate_is_reported_and_fails_the_call() {
    let capper = Arc::new(Fixed {
        name: "capper",
        handles: vec![HookEvent::ToolCall],
        answer: Ok(None),
        action: Some(HookAction::Abort),
        calls: AtomicUsize::new(0),
    });
    let thrower = Fixed::new("thrower", Err("no network".into()));
    let mut registry = ExtensionRegistry::new();
    registry.load(capper);
    registry.load(thrower);
    let outcome = registry.decide(call()).await;
    assert_eq!(outcome.actions, vec![HookAction::Abort]);
    assert_eq!(
        outcome.decision,
        HookDecision::ToolCall(ToolCallVerdict::Thrown {
            error: "no network".into()
        })
    );
    assert_eq!(
        outcome.errors,
        vec![HookError {
            extension: "thrower".into(),
            event: HookEvent::ToolCall,
            error: "no network".into()
        }]
    );
    let text = serde_json::to_string(&outcome).unwrap();
    assert_eq!(serde_json::from_str::<HookOutcome>(&text).unwrap(), outcome);
}

/// An extension one of whose handlers threw while another answered.
struct HalfBroken;

impl RustExtension for HalfBroken {
    fn name(&self) -> &str {
        "half-broken"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::ToolCall])
    }

    fn handle<'a>(&'a self, _payload: &'a HookPayload, cx: &'a HookContext) -> HookFuture<'a> {
        cx.threw("first handler broke".into());
        Box::pin(async move { block("second handler blocks") })
    }
}

#[tokio::test]
async fn a_handler_that_threw_beside_an_answer_is_reported_and_the_answer_stands() {
    let mut registry = ExtensionRegistry::new();
    registry.load(Arc::new(HalfBroken));
    let outcome = registry.decide(call()).await;
    assert_eq!(
        outcome.decision,
        HookDecision::ToolCall(ToolCallVerdict::Block {
            reason: "second handler blocks".into(),
            terminate: None
        })
    );
    assert_eq!(
        outcome.errors,
        vec![HookError {
            extension: "half-broken".into(),
            event: HookEvent::ToolCall,
            error: "first handler broke".into()
        }]
    );
}
