#![allow(clippy::unwrap_used)]

use serde_json::json;

use crate::event::CompactionReason;

use super::*;

fn tool_call() -> HookPayload {
    HookPayload::ToolCall {
        tool_name: "bash".into(),
        tool_call_id: "c1".into(),
        parent_tool_call_id: None,
        input: json!({"command": "ls"}),
    }
}

fn gate(block: bool, reason: Option<&str>, input: Option<Value>) -> Option<HandlerResult> {
    Some(HandlerResult::ToolCall {
        block,
        reason: reason.map(str::to_owned),
        terminate: None,
        input,
    })
}

#[test]
fn a_tool_call_gate_stops_at_the_first_block_with_pis_default_reason() {
    let mut fold = Composer::new(tool_call());
    fold.apply(None);
    fold.apply(gate(true, Some(""), None));
    assert!(fold.stopped());
    fold.apply(gate(true, Some("later"), None));
    assert_eq!(
        fold.finish(),
        HookDecision::ToolCall(ToolCallVerdict::Block {
            reason: "Tool execution was blocked".into(),
            terminate: None,
        })
    );
}

#[test]
fn changed_arguments_reach_the_next_handler_and_the_run() {
    let mut fold = Composer::new(tool_call());
    fold.apply(gate(false, None, Some(json!({"command": "ls -a"}))));
    assert!(
        matches!(fold.payload(), HookPayload::ToolCall { input, .. } if input["command"] == "ls -a")
    );
    fold.apply(gate(false, Some("ignored without block"), None));
    assert_eq!(
        fold.finish(),
        HookDecision::ToolCall(ToolCallVerdict::Run {
            input: json!({"command": "ls -a"})
        })
    );
}

#[test]
fn a_throwing_gate_fails_the_call_but_other_hooks_go_on() {
    let mut fold = Composer::new(tool_call());
    fold.thrown("boom".into());
    fold.apply(gate(true, Some("never seen"), None));
    assert_eq!(
        fold.finish(),
        HookDecision::ToolCall(ToolCallVerdict::Thrown {
            error: "boom".into()
        })
    );
    let mut fold = Composer::new(HookPayload::Input {
        text: "hi".into(),
        images: vec![],
        source: "rpc".into(),
        streaming_behavior: None,
    });
    fold.thrown("boom".into());
    assert!(!fold.stopped());
    assert_eq!(fold.finish(), HookDecision::Input(InputAction::Continue));
}

#[test]
fn tool_result_transforms_chain_field_by_field() {
    let mut fold = Composer::new(HookPayload::ToolResult {
        tool_name: "read".into(),
        tool_call_id: "c1".into(),
        parent_tool_call_id: None,
        input: json!({}),
        content: vec![],
        details: Some(json!({"a": 1})),
        is_error: false,
    });
    fold.apply(Some(HandlerResult::ToolResult {
        content: None,
        details: None,
        is_error: Some(true),
    }));
    fold.apply(Some(HandlerResult::ToolResult {
        content: None,
        details: Some(json!({"b": 2})),
        is_error: None,
    }));
    assert_eq!(
        fold.finish(),
        HookDecision::ToolResult {
            content: Some(vec![]),
            details: Some(json!({"b": 2})),
            is_error: Some(true),
        }
    );
}

#[test]
fn input_transforms_chain_and_handled_short_circuits() {
    let input = HookPayload::Input {
        text: "a".into(),
        images: vec![],
        source: "rpc".into(),
        streaming_behavior: None,
    };
    let transform = |t: &str| {
        Some(HandlerResult::Input(InputAction::Transform {
            text: t.into(),
            images: None,
        }))
    };
    let mut fold = Composer::new(input.clone());
    fold.apply(transform("b"));
    assert!(matches!(fold.payload(), HookPayload::Input { text, .. } if text == "b"));
    fold.apply(transform("c"));
    assert_eq!(
        fold.finish(),
        HookDecision::Input(InputAction::Transform {
            text: "c".into(),
            images: Some(vec![])
        })
    );
    let mut fold = Composer::new(input.clone());
    fold.apply(transform("a"));
    assert_eq!(fold.finish(), HookDecision::Input(InputAction::Continue));
    let mut fold = Composer::new(input);
    fold.apply(Some(HandlerResult::Input(InputAction::Handled)));
    fold.apply(transform("never"));
    assert_eq!(fold.finish(), HookDecision::Input(InputAction::Handled));
}

#[test]
fn the_last_system_prompt_wins_and_messages_accumulate() {
    let mut fold = Composer::new(HookPayload::BeforeAgentStart {
        message_type: "user".into(),
        prompt: Some("p".into()),
        message: None,
        images: vec![],
        system_prompt: "base".into(),
    });
    let message = |t: &str| InjectedMessage {
        custom_type: t.into(),
        content: json!("x"),
        display: false,
        details: None,
    };
    fold.apply(Some(HandlerResult::BeforeAgentStart {
        messages: vec![],
        message: Some(message("one")),
        system_prompt: Some("first".into()),
    }));
    assert!(
        matches!(fold.payload(), HookPayload::BeforeAgentStart { system_prompt, .. } if system_prompt == "first")
    );
    // An extension host's answer for two handlers of one extension: both messages, in order.
    fold.apply(Some(HandlerResult::BeforeAgentStart {
        messages: vec![message("two"), message("three")],
        message: None,
        system_prompt: Some("second".into()),
    }));
    fold.apply(None);
    assert_eq!(
        fold.finish(),
        HookDecision::BeforeAgentStart {
            messages: vec![message("one"), message("two"), message("three")],
            system_prompt: Some("second".into()),
        }
    );
}

#[test]
fn payloads_and_decisions_have_pis_json_and_round_trip() {
    let payload = tool_call();
    let text = serde_json::to_string(&payload).unwrap();
    assert_eq!(
        text,
        r#"{"type":"tool_call","toolName":"bash","toolCallId":"c1","input":{"command":"ls"}}"#
    );
    assert_eq!(serde_json::from_str::<HookPayload>(&text).unwrap(), payload);
    let decision = HookDecision::ToolCall(ToolCallVerdict::Block {
        reason: "no".into(),
        terminate: Some(true),
    });
    let text = serde_json::to_string(&decision).unwrap();
    assert_eq!(
        serde_json::from_str::<HookDecision>(&text).unwrap(),
        decision
    );
    let handled = HandledHooks::of([HookEvent::TurnEnd, HookEvent::ToolCall]);
    assert_eq!(
        serde_json::to_string(&handled).unwrap(),
        r#"["tool_call","turn_end"]"#
    );
    let action = HookAction::SetActiveTools {
        tools: vec!["read".into()],
    };
    let text = serde_json::to_string(&action).unwrap();
    assert_eq!(text, r#"{"action":"setActiveTools","tools":["read"]}"#);
}

#[test]
fn the_session_actions_read_and_write_pis_field_names() {
    // As the extension host writes them: `JSON.stringify` drops an `undefined` label (a label
    // cleared) and options not given.
    let actions = [
        (
            r#"{"action":"sendUserMessage","content":"next","deliverAs":"steer"}"#,
            HookAction::SendUserMessage {
                content: crate::message::UserContent::Text("next".into()),
                deliver_as: Some("steer".into()),
                expand_prompt_templates: None,
            },
        ),
        (
            r#"{"action":"setSessionName","name":"n"}"#,
            HookAction::SetSessionName { name: "n".into() },
        ),
        (
            r#"{"action":"setLabel","entryId":"e1"}"#,
            HookAction::SetLabel {
                entry_id: "e1".into(),
                label: None,
            },
        ),
        (
            r#"{"action":"setThinkingLevel","level":"xhigh"}"#,
            HookAction::SetThinkingLevel {
                level: crate::model::ThinkingLevel::Xhigh,
            },
        ),
    ];
    for (text, action) in actions {
        assert_eq!(serde_json::from_str::<HookAction>(text).unwrap(), action);
        assert_eq!(serde_json::to_string(&action).unwrap(), text);
    }
}

#[test]
fn context_handlers_chain_and_an_unchanged_context_is_no_replacement() {
    let user = |t: &str| {
        crate::message::AgentMessage::User(crate::message::UserMessage::from_text(
            t.to_owned(),
            vec![],
            1,
        ))
    };
    let unchanged = Composer::new(HookPayload::Context {
        messages: vec![user("a")],
    });
    assert_eq!(unchanged.finish(), HookDecision::Context { messages: None });
    let mut fold = Composer::new(HookPayload::Context {
        messages: vec![user("a")],
    });
    fold.apply(Some(HandlerResult::Context {
        messages: Some(vec![user("b")]),
    }));
    assert_eq!(
        fold.payload(),
        &HookPayload::Context {
            messages: vec![user("b")]
        },
        "the next handler sees the first one's messages"
    );
    fold.apply(Some(HandlerResult::Context { messages: None }));
    fold.thrown("boom".into());
    assert_eq!(
        fold.finish(),
        HookDecision::Context {
            messages: Some(vec![user("b")])
        }
    );
}

fn before_compact() -> HookPayload {
    HookPayload::SessionBeforeCompact {
        preparation: json!({"firstKeptEntryId": "e1"}),
        branch_entries: vec![],
        custom_instructions: None,
        reason: CompactionReason::Manual,
        will_retry: false,
    }
}

fn supplied(summary: &str) -> SuppliedCompaction {
    SuppliedCompaction {
        summary: summary.into(),
        first_kept_entry_id: "e1".into(),
        tokens_before: 1,
        details: None,
        usage: None,
    }
}

#[test]
fn the_last_object_a_session_before_compact_handler_returns_wins_and_a_cancel_ends_the_round() {
    let mut fold = Composer::new(before_compact());
    fold.apply(Some(HandlerResult::SessionBeforeCompact {
        cancel: false,
        compaction: Some(supplied("first")),
    }));
    fold.apply(None);
    assert_eq!(
        fold.clone().finish(),
        HookDecision::SessionBeforeCompact {
            cancel: false,
            compaction: Some(supplied("first")),
        }
    );
    // An empty object replaces the one before it, as Pi's runner keeps the last truthy result.
    fold.apply(Some(HandlerResult::SessionBeforeCompact {
        cancel: false,
        compaction: None,
    }));
    assert_eq!(
        fold.clone().finish(),
        HookDecision::SessionBeforeCompact {
            cancel: false,
            compaction: None,
        }
    );
    fold.apply(Some(HandlerResult::SessionBeforeCompact {
        cancel: true,
        compaction: None,
    }));
    assert!(fold.stopped());
    fold.apply(Some(HandlerResult::SessionBeforeCompact {
        cancel: false,
        compaction: Some(supplied("late")),
    }));
    assert_eq!(
        fold.finish(),
        HookDecision::SessionBeforeCompact {
            cancel: true,
            compaction: None,
        }
    );
    assert_eq!(
        Composer::new(before_compact()).finish(),
        HookDecision::SessionBeforeCompact {
            cancel: false,
            compaction: None,
        }
    );
}

#[test]
fn the_compaction_events_read_and_write_pis_field_names() {
    let payload = serde_json::to_value(HookPayload::SessionCompact {
        compaction_entry: json!({"type": "compaction"}),
        from_extension: true,
        reason: CompactionReason::Threshold,
        will_retry: false,
    })
    .unwrap();
    assert_eq!(
        payload,
        json!({"type": "session_compact", "compactionEntry": {"type": "compaction"},
            "fromExtension": true, "reason": "threshold", "willRetry": false})
    );
    let result: HandlerResult = serde_json::from_value(json!({"type": "session_before_compact",
        "compaction": {"summary": "s", "firstKeptEntryId": "e1", "tokensBefore": 1}}))
    .unwrap();
    assert_eq!(
        result,
        HandlerResult::SessionBeforeCompact {
            cancel: false,
            compaction: Some(supplied("s")),
        }
    );
}

#[test]
fn a_boundarys_handlers_each_replace_what_they_give_and_nothing_given_is_done() {
    let payload = HookPayload::AgentBeforeSettle {
        outcome: "completed".into(),
    };
    let draft = |t: &str| BoundaryDraft::Custom {
        custom_type: t.into(),
        data: None,
    };
    let mut fold = Composer::new(payload.clone());
    fold.apply(Some(HandlerResult::Boundary {
        entries: Some(vec![draft("a")]),
        continue_run: Some(true),
    }));
    fold.apply(Some(HandlerResult::Boundary {
        entries: Some(vec![draft("b")]),
        continue_run: None,
    }));
    assert_eq!(
        fold.finish(),
        HookDecision::Boundary {
            entries: vec![draft("b")],
            continue_run: true
        }
    );
    let mut fold = Composer::new(payload);
    fold.apply(Some(HandlerResult::Boundary {
        entries: Some(vec![]),
        continue_run: Some(false),
    }));
    assert_eq!(fold.finish(), HookDecision::Done);
}

#[test]
fn boundary_drafts_read_pis_shapes_and_give_them_back_as_given() {
    let result: HandlerResult =
        serde_json::from_value(json!({"type": "boundary", "continue": true,
        "entries": [
            {"type": "custom_message", "customType": "r", "content": "Go on.", "display": true},
            {"type": "context_edit", "targetId": "e1", "replacement": {"x": 1}},
        ]}))
        .unwrap();
    let HandlerResult::Boundary {
        entries: Some(entries),
        continue_run: Some(true),
    } = result
    else {
        panic!("{result:?}");
    };
    assert_eq!(entries[0].kind(), "custom_message");
    assert_eq!(entries[1].kind(), "context_edit");
    assert_eq!(
        serde_json::to_value(&entries[1]).unwrap(),
        json!({"type": "context_edit", "targetId": "e1", "replacement": {"x": 1}})
    );
}
