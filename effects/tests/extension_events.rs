//! Pi's TypeScript extensions' event handlers run by Pi 1.5.2's own `ExtensionRunner` in the
//! extension host, composed by the registry in load order: what each hook point decides, the
//! actions the handlers take and the state they read, checked against the semantics of Pi's
//! runner (in-place argument changes, a thrown gate, chained prompts, reported errors).
//!
//! These need Node and Pi 1.5.2's install (`PI_EXTENSION_HOST_PI_DIR`, its Node in `node/bin`
//! or on PATH); without them they are skipped with a line, unless `PI_REQUIRE_EXTENSIONS=1`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pi_core::agent::hook_state::{EntriesSince, HookState, SessionState};
use pi_core::message::UserContent;
use pi_core::model::{Model, ThinkingLevel};
use pi_core::script::mock_model;
use pi_effects::extension::sidecar::{hook_extensions, ExtensionHost, HostModels, StateMirror};
use pi_effects::extension::{
    ExtensionRegistry, HookAction, HookDecision, HookEvent, HookPayload, InputAction,
    ToolCallVerdict,
};
use serde_json::json;

/// The registry of `first.ts` then `second.ts`, or `None` (skipped) without the install.
fn registry(state: &StateMirror) -> Option<(Arc<ExtensionHost>, ExtensionRegistry)> {
    registry_of(state, &["first.ts", "second.ts"])
}

/// The registry of the fixtures `names`, or `None` (skipped) without the install.
fn registry_of(
    state: &StateMirror,
    names: &[&str],
) -> Option<(Arc<ExtensionHost>, ExtensionRegistry)> {
    let dir = match std::env::var("PI_EXTENSION_HOST_PI_DIR") {
        Ok(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ if std::env::var("PI_REQUIRE_EXTENSIONS").is_ok_and(|v| v == "1") => {
            panic!("PI_REQUIRE_EXTENSIONS=1 but PI_EXTENSION_HOST_PI_DIR is not set")
        }
        _ => {
            pi_testkit::skip("PI_EXTENSION_HOST_PI_DIR (Pi 1.5.2's install) is not set");
            return None;
        }
    };
    let path = std::env::var("PATH").unwrap_or_default();
    std::env::set_var("PATH", format!("{}:{path}", dir.join("node/bin").display()));
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/extensions");
    let paths: Vec<PathBuf> = names.iter().map(|n| fixtures.join(n)).collect();
    let cwd = tempfile::tempdir().unwrap();
    let (host, registrations) =
        ExtensionHost::start_with_models(&paths, cwd.path(), false, &[], &catalog()).unwrap();
    assert!(
        registrations.errors.is_empty(),
        "{:?}",
        registrations.errors
    );
    let mut registry = ExtensionRegistry::new();
    for extension in hook_extensions(&registrations, &host, state) {
        registry.load(extension);
    }
    Some((host, registry))
}

/// The registry the extensions read: the mock's two models (its provider with auth) and one
/// of a provider without.
fn catalog() -> HostModels {
    let reasoner = Model {
        id: "mock-reasoner".into(),
        reasoning: true,
        ..mock_model()
    };
    let other = Model {
        provider: "nokey".into(),
        id: "other".into(),
        ..mock_model()
    };
    HostModels {
        models: vec![mock_model(), reasoner, other],
        auth_providers: vec!["mock".into()],
        oauth_providers: Vec::new(),
    }
}

fn mirror() -> StateMirror {
    let state = StateMirror::default();
    state.set("model", json!({"provider": "mock", "id": "mock-model"}));
    state.set("activeTools", json!(["read", "bash"]));
    state.set("isIdle", json!(false));
    state.set("session", json!({"entries": [{"id": "a"}, {"id": "b"}]}));
    state
}

#[tokio::test]
async fn extension_handlers_compose_with_pis_semantics() {
    let state = mirror();
    let Some((_host, registry)) = registry(&state) else {
        return;
    };

    // The events some handler listens at, and only those, are asked about; and the loadout,
    // which Pi's built-in codemode tool prepares, and the routing of a virtual model, which any
    // loaded extension may register later.
    let handled: Vec<HookEvent> = registry.handled().iter().collect();
    assert_eq!(
        handled,
        [
            HookEvent::ToolCall,
            HookEvent::ToolResult,
            HookEvent::Input,
            HookEvent::BeforeAgentStart,
            HookEvent::TurnEnd,
            HookEvent::MessageUpdate,
            HookEvent::PrepareLoadout,
            HookEvent::RouteModel,
        ]
    );

    // The first gate changes the arguments in place; the second sees the change.
    let call = |command: &str| HookPayload::ToolCall {
        tool_name: "bash".into(),
        tool_call_id: "c1".into(),
        parent_tool_call_id: None,
        input: json!({"command": command}),
    };
    let outcome = registry.decide(call("ls")).await;
    assert_eq!(
        outcome.decision,
        HookDecision::ToolCall(ToolCallVerdict::Run {
            input: json!({"command": "set -e; ls"})
        })
    );
    let outcome = registry.decide(call("rm x")).await;
    assert_eq!(
        outcome.decision,
        HookDecision::ToolCall(ToolCallVerdict::Block {
            reason: "blocked: set -e; rm x".into(),
            terminate: None
        })
    );
    // A gate that throws fails the call with its message (Pi lets it propagate).
    let outcome = registry
        .decide(HookPayload::ToolCall {
            tool_name: "write".into(),
            tool_call_id: "c2".into(),
            parent_tool_call_id: None,
            input: json!({"path": "a", "content": "b"}),
        })
        .await;
    assert_eq!(
        outcome.decision,
        HookDecision::ToolCall(ToolCallVerdict::Thrown {
            error: "writes are refused".into()
        })
    );

    let outcome = registry
        .decide(HookPayload::Input {
            text: "hello".into(),
            images: Vec::new(),
            source: "interactive".into(),
            streaming_behavior: None,
        })
        .await;
    assert_eq!(
        outcome.decision,
        HookDecision::Input(InputAction::Transform {
            text: "HELLO".into(),
            images: Some(Vec::new())
        })
    );

    // The prompt chains through both extensions, the first reading the mirror.
    let outcome = registry
        .decide(HookPayload::BeforeAgentStart {
            message_type: "user".into(),
            prompt: Some("hi".into()),
            message: None,
            images: Vec::new(),
            system_prompt: "BASE".into(),
        })
        .await;
    let HookDecision::BeforeAgentStart {
        messages,
        system_prompt,
    } = outcome.decision
    else {
        panic!("{:?}", outcome.decision)
    };
    assert_eq!(
        system_prompt.as_deref(),
        Some("BASE [mock-model; read,bash; idle false; 2 entries] (second)")
    );
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0].custom_type, "first");

    // A tool_result handler that throws is reported, and the result stays as it was.
    let outcome = registry
        .decide(HookPayload::ToolResult {
            tool_name: "bash".into(),
            tool_call_id: "c1".into(),
            parent_tool_call_id: None,
            input: json!({}),
            content: Vec::new(),
            details: None,
            is_error: false,
        })
        .await;
    assert_eq!(
        outcome.decision,
        HookDecision::ToolResult {
            content: None,
            details: None,
            is_error: None
        }
    );
    assert_eq!(outcome.errors.len(), 1);
    assert_eq!(outcome.errors[0].error, "tool_result handler failed");

    // The API's actions come back in the order taken. (`turn_end` is a boundary: its handlers
    // run once the turn's message is found persisted among the session's entries.)
    let message: pi_core::message::AgentMessage =
        serde_json::from_value(json!({"role": "user", "content": "x", "timestamp": 0})).unwrap();
    let mut state = hook_state(0, &[], "entry-1", "s");
    state.session.entries = EntriesSince {
        from: 0,
        entries: vec![json!({"type": "message", "id": "entry-1", "parentId": null,
            "timestamp": "2026-01-01T00:00:00.000Z", "message": message})],
    };
    let state = std::sync::Arc::new(state);
    registry.observe(&state);
    let outcome = registry
        .decide_at(
            HookPayload::TurnEnd {
                turn_index: 0,
                message,
                tool_results: Vec::new(),
            },
            Some(state),
        )
        .await;
    assert_eq!(outcome.decision, HookDecision::Done);
    assert_eq!(
        outcome.actions,
        [
            serde_json::from_value::<HookAction>(json!({"action": "sendMessage",
                "message": {"customType": "note", "content": "turn over", "display": true},
                "deliverAs": "followUp"}))
            .unwrap(),
            HookAction::SetActiveTools {
                tools: vec!["read".into()]
            },
            HookAction::SetModel {
                model: Box::new(catalog().models[1].clone())
            },
            HookAction::Abort,
            HookAction::SendUserMessage {
                content: UserContent::Text("and then?".into()),
                deliver_as: Some("followUp".into()),
                expand_prompt_templates: None,
            },
            HookAction::SetSessionName {
                name: "named by first".into()
            },
            HookAction::SetLabel {
                entry_id: "entry-1".into(),
                label: Some("bookmark".into())
            },
            HookAction::SetThinkingLevel {
                level: ThinkingLevel::High
            },
            HookAction::AppendEntry {
                custom_type: "read-back".into(),
                data: Some(json!({"name": "named by first", "level": "high",
                    "model": "mock-reasoner", "refused": false, "set": true,
                    "available": ["mock-model", "mock-reasoner"]})),
            },
        ]
    );
}

/// A session's state at a hook point, with the entries `ids` (each `(id, parent)`) appended
/// from position `from`.
fn hook_state(from: usize, ids: &[(&str, Option<&str>)], leaf: &str, name: &str) -> HookState {
    HookState {
        model: pi_core::script::mock_model(),
        thinking_level: ThinkingLevel::Off,
        active_tools: vec!["read".into(), "bash".into()],
        all_tools: None,
        system_prompt: format!("PROMPT at {leaf}"),
        is_idle: false,
        has_pending_messages: false,
        pending_messages: Vec::new(),
        context_usage: None,
        session: SessionState {
            id: "session".into(),
            name: Some(name.into()),
            leaf_id: Some(leaf.into()),
            header: json!({"type": "session", "version": 3, "id": "session"}),
            entries: EntriesSince {
                from,
                entries: ids
                    .iter()
                    .map(|(id, parent)| json!({"type": "custom", "id": id, "parentId": parent}))
                    .collect(),
            },
        },
    }
}

/// What the handler appended: what it read.
fn seen(outcome: &pi_effects::extension::HookOutcome) -> serde_json::Value {
    match outcome.actions.as_slice() {
        [HookAction::AppendEntry {
            data: Some(data), ..
        }] => data.clone(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn the_getters_read_each_hook_points_state_even_after_points_they_do_not_handle() {
    let state = StateMirror::default();
    let Some((_host, registry)) = registry_of(&state, &["getters.ts"]) else {
        return;
    };
    let context = || HookPayload::Context {
        messages: Vec::new(),
    };
    let first = Arc::new(hook_state(0, &[("a", None), ("b", Some("a"))], "b", "one"));
    registry.observe(&first);
    let read = seen(&registry.decide_at(context(), Some(first)).await);
    assert_eq!(
        read,
        json!({"entries": ["a", "b"], "branch": ["a", "b"], "leaf": "b", "name": "one",
            "idle": false, "model": "mock-model", "level": "off", "tools": ["read", "bash"],
            "prompt": "PROMPT at b"})
    );
    // A hook point no handler of this host listens at: seen by the mirror only.
    registry.observe(&hook_state(2, &[("c", Some("a"))], "c", "one"));
    let third = Arc::new(hook_state(3, &[("d", Some("c"))], "d", "two"));
    registry.observe(&third);
    let read = seen(&registry.decide_at(context(), Some(third)).await);
    assert_eq!(read["entries"], json!(["a", "b", "c", "d"]));
    assert_eq!(
        read["branch"],
        json!(["a", "c", "d"]),
        "walked from the leaf"
    );
    assert_eq!(read["name"], "two");
    assert_eq!(read["prompt"], "PROMPT at d");
    // A new session's first hook point starts the entries over.
    let fresh = Arc::new(hook_state(0, &[("x", None)], "x", "three"));
    registry.observe(&fresh);
    let read = seen(&registry.decide_at(context(), Some(fresh)).await);
    assert_eq!(read["entries"], json!(["x"]));
    assert_eq!(read["branch"], json!(["x"]));
}

#[tokio::test]
async fn a_gap_in_the_mirrored_entries_is_reported_not_read_around() {
    let state = StateMirror::default();
    let Some((host, registry)) = registry_of(&state, &["getters.ts"]) else {
        return;
    };
    let context = || HookPayload::Context {
        messages: Vec::new(),
    };
    registry.observe(&hook_state(0, &[("a", None)], "a", "one"));
    // The hook point that appended entry 2 was never observed.
    let past = Arc::new(hook_state(2, &[("c", Some("a"))], "c", "one"));
    registry.observe(&past);
    let outcome = registry.decide_at(context(), Some(past)).await;
    assert!(outcome.actions.is_empty(), "{:?}", outcome.actions);
    let errors: Vec<&str> = outcome.errors.iter().map(|e| e.error.as_str()).collect();
    assert!(
        matches!(errors.as_slice(), [e] if e.contains("from 2 on") && e.contains("holds 1")),
        "{errors:?}"
    );

    // The host refuses entries that would leave a hole, and a count past what it holds.
    for (entries, count) in [
        (json!({"from": 9, "list": []}), 9),
        (json!({"from": 0, "list": []}), 3),
    ] {
        let (id, mut answers) = host
            .request(json!({"type": "event", "extension": 0,
                "payload": {"type": "context", "messages": []},
                "state": {"session": {"id": "s", "entryCount": count}}, "entries": entries}))
            .unwrap();
        let answer = answers.recv().await.unwrap();
        host.forget(id);
        assert_eq!(answer["success"], json!(false), "{answer}");
        assert!(
            answer["error"].as_str().unwrap().contains("state mirror"),
            "{answer}"
        );
    }
}
