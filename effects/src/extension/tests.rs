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

/// An extension whose handler panics: while it is called, or once its answer is awaited.
struct Panicking {
    at_call: bool,
}

impl RustExtension for Panicking {
    fn name(&self) -> &str {
        "panicking"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::ToolCall, HookEvent::TurnEnd])
    }

    #[allow(clippy::panic)]
    fn handle<'a>(&'a self, _payload: &'a HookPayload, _cx: &'a HookContext) -> HookFuture<'a> {
        if self.at_call {
            panic!("boom");
        }
        Box::pin(async { panic!("boom") })
    }
}

/// A handler that panics is a handler that threw, as Pi's runner treats a throw: reported under
/// its extension with the panic's text, the decision it fails as a throw fails it, the actions
/// asked before it kept, and the extensions after it still heard where a throw does not stop the
/// round.
#[tokio::test]
async fn a_panicking_handler_is_reported_as_one_that_threw_and_the_others_are_kept() {
    for at_call in [true, false] {
        let capper = Arc::new(Fixed {
            name: "capper",
            handles: vec![HookEvent::ToolCall, HookEvent::TurnEnd],
            answer: Ok(None),
            action: Some(HookAction::Abort),
            calls: AtomicUsize::new(0),
        });
        let after = Arc::new(Fixed {
            name: "after",
            handles: vec![HookEvent::TurnEnd],
            answer: Ok(None),
            action: None,
            calls: AtomicUsize::new(0),
        });
        let mut registry = ExtensionRegistry::new();
        registry.load(capper);
        registry.load(Arc::new(Panicking { at_call }));
        registry.load(after.clone());
        let outcome = registry.decide_at(call(), None).await;
        assert_eq!(
            outcome.actions,
            vec![HookAction::Abort],
            "at call: {at_call}"
        );
        assert_eq!(
            outcome.decision,
            HookDecision::ToolCall(ToolCallVerdict::Thrown {
                error: "boom".into()
            })
        );
        let boom = |event| HookError {
            extension: "panicking".into(),
            event,
            error: "boom".into(),
        };
        assert_eq!(outcome.errors, vec![boom(HookEvent::ToolCall)]);
        let turn_end = HookPayload::TurnEnd {
            turn_index: 0,
            message: pi_core::message::AgentMessage::Assistant(Default::default()),
            tool_results: vec![],
        };
        let outcome = registry.decide_at(turn_end, None).await;
        assert_eq!(outcome.errors, vec![boom(HookEvent::TurnEnd)]);
        assert_eq!(after.calls.load(Ordering::SeqCst), 1, "at call: {at_call}");
    }
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
