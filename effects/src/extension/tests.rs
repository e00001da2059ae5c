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
        parent_tool_call_id: None,
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

/// A Rust extension handling `user_bash`, answering with `answer`.
fn user_bash_handler(
    name: &'static str,
    answer: Result<Option<HandlerResult>, String>,
) -> Arc<Fixed> {
    Arc::new(Fixed {
        name,
        handles: vec![HookEvent::UserBash],
        answer,
        action: None,
        calls: AtomicUsize::new(0),
    })
}

fn user_bash() -> HookPayload {
    HookPayload::UserBash {
        command: "ls".into(),
        exclude_from_context: false,
        cwd: "/work".into(),
    }
}

fn answered(handled: UserBashHandled) -> Result<Option<HandlerResult>, String> {
    Ok(Some(HandlerResult::UserBash(handled)))
}

#[tokio::test]
async fn the_first_user_bash_answer_decides_and_a_throw_or_an_invalid_one_fails_reported() {
    let result = json!({"output": "mine\n", "exitCode": 0, "cancelled": false, "truncated": false});
    let quiet = user_bash_handler("quiet", Ok(None));
    let first = user_bash_handler(
        "first",
        answered(UserBashHandled {
            result: Some(result.clone()),
            exec: None,
        }),
    );
    let never = user_bash_handler("never", Err("not reached".into()));
    let mut registry = ExtensionRegistry::new();
    for e in [&quiet, &first, &never] {
        registry.load(e.clone());
    }
    let outcome = registry.decide(user_bash()).await;
    assert_eq!(
        outcome.decision,
        HookDecision::UserBash {
            answer: Some(UserBashAnswer::Result { result })
        }
    );
    assert!(outcome.errors.is_empty());
    assert_eq!(never.calls.load(Ordering::SeqCst), 0);

    for (answer, error) in [
        (Err("no shell".to_owned()), "no shell"),
        (
            answered(UserBashHandled {
                result: Some(json!({"output": 1})),
                exec: None,
            }),
            pi_core::agent::user_bash::INVALID_USER_BASH_RESULT,
        ),
    ] {
        let mut registry = ExtensionRegistry::new();
        registry.load(user_bash_handler("failing", answer));
        let outcome = registry.decide(user_bash()).await;
        assert_eq!(
            outcome.decision,
            HookDecision::UserBash {
                answer: Some(UserBashAnswer::Failed {
                    error: error.into()
                })
            }
        );
        assert_eq!(
            outcome
                .errors
                .iter()
                .map(|e| (e.extension.as_str(), e.event, e.error.as_str()))
                .collect::<Vec<_>>(),
            [("failing", HookEvent::UserBash, error)]
        );
    }

    let mut registry = ExtensionRegistry::new();
    registry.load(user_bash_handler("quiet", Ok(None)));
    let outcome = registry.decide(user_bash()).await;
    assert_eq!(outcome.decision, HookDecision::UserBash { answer: None });
}

#[tokio::test]
async fn an_exec_run_is_cleaned_before_the_decision_is_recorded() {
    use base64::Engine;
    let encode = |text: &[u8]| base64::engine::general_purpose::STANDARD.encode(text);
    // An escape sequence and a character split across chunks, and a carriage return.
    let run = ExecRun {
        chunks: vec![
            encode(b"a\x1b[3"),
            encode(b"1mred\xc3"),
            encode(b"\xa9\r\n"),
        ],
        exit_code: Some(2),
        cancelled: false,
        error: None,
    };
    let mut registry = ExtensionRegistry::new();
    registry.load(user_bash_handler(
        "exec",
        answered(UserBashHandled {
            result: None,
            exec: Some(run.clone()),
        }),
    ));
    let outcome = World::of(&user_bash())
        .carry_out(registry.decide(user_bash()).await)
        .await;
    assert_eq!(
        outcome.decision,
        HookDecision::UserBash {
            answer: Some(UserBashAnswer::Ran {
                chunks: vec!["a".into(), "red".into(), "é\n".into()],
                result: json!({"output": "ared\u{e9}\n", "exitCode": 2, "cancelled": false, "truncated": false}),
            })
        }
    );

    let threw = ExecRun {
        error: Some("exec broke".into()),
        ..run
    };
    let mut registry = ExtensionRegistry::new();
    registry.load(user_bash_handler(
        "exec",
        answered(UserBashHandled {
            result: None,
            exec: Some(threw),
        }),
    ));
    let outcome = World::of(&user_bash())
        .carry_out(registry.decide(user_bash()).await)
        .await;
    assert_eq!(
        outcome.decision,
        HookDecision::UserBash {
            answer: Some(UserBashAnswer::Failed {
                error: "exec broke".into()
            })
        }
    );
    assert!(outcome.errors.is_empty(), "an exec's throw is not reported");
}

/// A reload's extensions take the places of the previous load's, where the first of them was;
/// the others (of other origins) keep theirs, and what is handled is the new set's.
#[test]
fn a_reloaded_registry_puts_the_new_load_where_the_old_one_was() {
    let mut registry = ExtensionRegistry::new();
    for name in ["old-a", "old-b", "mcp"] {
        registry.load(Fixed::new(name, Ok(None)));
    }
    let mut new = Fixed::new("new", Ok(None));
    Arc::get_mut(&mut new).unwrap().handles = vec![HookEvent::SessionStart];
    let reloaded = registry.reloaded(|e| e.name().starts_with("old-"), vec![new]);
    assert_eq!(format!("{reloaded:?}"), r#"["new", "mcp"]"#);
    assert!(reloaded.handled().contains(HookEvent::SessionStart));
    assert_eq!(format!("{registry:?}"), r#"["old-a", "old-b", "mcp"]"#);
    let none = registry.reloaded(|e| e.name() == "gone", vec![Fixed::new("new", Ok(None))]);
    assert_eq!(format!("{none:?}"), r#"["old-a", "old-b", "mcp", "new"]"#);
}

/// An extension that registers a deferred tool at every hook point it handles, riding along
/// or not, and remembers the tools each handler after it listed.
struct Registers {
    rides: bool,
}

impl RustExtension for Registers {
    fn name(&self) -> &str {
        "registers"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::TurnStart, HookEvent::ToolCall])
    }

    fn rides_along(&self) -> bool {
        self.rides
    }

    fn handle<'a>(&'a self, _payload: &'a HookPayload, cx: &'a HookContext) -> HookFuture<'a> {
        let tool = pi_core::agent::custom_tool::CustomToolDefinition {
            name: "mcp__notes__count".into(),
            description: "Counts.".into(),
            parameters: json!({"type": "object"}),
            ..Default::default()
        };
        cx.act(HookAction::RegisterDeferredTools {
            tools: vec![pi_core::agent::custom_tool::SearchableTool {
                tool,
                namespace: None,
            }],
            later_sections: Vec::new(),
        });
        Box::pin(async { Ok(None) })
    }
}

/// An extension that notes the tools `pi.getAllTools()` lists where it is called.
#[derive(Default)]
struct Lists {
    seen: std::sync::Mutex<Vec<Vec<String>>>,
}

impl RustExtension for Lists {
    fn name(&self) -> &str {
        "lists"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::ToolCall])
    }

    fn handle<'a>(&'a self, _payload: &'a HookPayload, cx: &'a HookContext) -> HookFuture<'a> {
        let names = cx
            .state()
            .and_then(|s| s.all_tools.clone())
            .unwrap_or_default()
            .iter()
            .map(|t| t["name"].as_str().unwrap_or_default().to_owned())
            .collect();
        self.seen.lock().unwrap().push(names);
        Box::pin(async { Ok(None) })
    }
}

fn state_listing(tools: &[&str]) -> HookState {
    use pi_core::agent::hook_state::{EntriesSince, SessionState};
    HookState {
        model: pi_core::script::mock_model(),
        thinking_level: pi_core::model::ThinkingLevel::Off,
        active_tools: Vec::new(),
        all_tools: Some(tools.iter().map(|name| json!({ "name": name })).collect()),
        system_prompt: String::new(),
        is_idle: false,
        has_pending_messages: false,
        pending_messages: Vec::new(),
        context_usage: None,
        session: SessionState {
            id: "s".into(),
            name: None,
            leaf_id: None,
            header: json!({"type": "session"}),
            entries: EntriesSince::default(),
        },
    }
}

#[tokio::test]
async fn the_handlers_after_one_that_registered_deferred_tools_list_them() {
    let lists = Arc::new(Lists::default());
    let mut registry = ExtensionRegistry::new();
    registry.load(lists.clone());
    registry.load_first(Arc::new(Registers { rides: false }));
    registry.load(lists.clone());
    let state = Arc::new(state_listing(&["read"]));
    let outcome = registry.decide_at(call(), Some(state)).await;
    assert_eq!(
        *lists.seen.lock().unwrap(),
        vec![vec!["read".to_owned(), "mcp__notes__count".to_owned()]; 2]
    );
    assert!(matches!(
        outcome.actions.as_slice(),
        [HookAction::RegisterDeferredTools { .. }]
    ));
}

#[tokio::test]
async fn an_extension_riding_along_adds_no_hook_point_and_runs_at_the_others() {
    let lists = Arc::new(Lists::default());
    let mut registry = ExtensionRegistry::new();
    registry.load(lists.clone());
    registry.load_first(Arc::new(Registers { rides: true }));
    assert_eq!(registry.handled(), HandledHooks::of([HookEvent::ToolCall]));
    let state = Arc::new(state_listing(&[]));
    let outcome = registry.decide_at(call(), Some(state)).await;
    assert_eq!(
        *lists.seen.lock().unwrap(),
        [vec!["mcp__notes__count".to_owned()]]
    );
    assert_eq!(outcome.actions.len(), 1);
}
