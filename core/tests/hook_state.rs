//! The state an extension's getters read travels with each hook point of the session machine
//! (`Effect::Hook`'s `state`): idle or not as Pi's `isIdle`, the session's name and leaf, and
//! the entries appended since the previous hook point, so a mirror applying them in order holds
//! the session's entries as they are at each point.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::hook_state::HookState;
use pi_core::agent::hooks::{
    HandledHooks, HookDecision, HookEvent, HookOutcome, HookPayload, InputAction,
};
use pi_core::agent::{AgentConfig, CallId, Effect, Input, StreamEvent};
use pi_core::agent_session::{SessionInput, SessionMachine, SessionStep};
use pi_core::message::{AssistantMessage, ContentBlock, StopReason};
use pi_core::resources::Resources;
use pi_core::script::mock_model;
use serde_json::Value;

#[path = "support/session.rs"]
mod support;

fn session() -> SessionMachine {
    support::machine(
        AgentConfig {
            model: mock_model(),
            handled_hooks: HandledHooks::of([
                HookEvent::Input,
                HookEvent::BeforeAgentStart,
                HookEvent::TurnEnd,
            ]),
            ..AgentConfig::default()
        },
        Resources::default(),
    )
}

fn hook(step: &SessionStep) -> (CallId, HookPayload, HookState) {
    let hooks: Vec<_> = step
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::Hook {
                call,
                payload,
                state,
            } => Some((*call, payload.clone(), *state.clone().expect("a state"))),
            _ => None,
        })
        .collect();
    assert_eq!(hooks.len(), 1, "one hook effect in {:?}", step.effects);
    hooks.into_iter().next().unwrap()
}

fn answer(call: CallId, decision: HookDecision) -> SessionInput {
    SessionInput::Answer(Input::HookDecided {
        call,
        outcome: HookOutcome {
            decision,
            actions: vec![],
            errors: vec![],
        },
    })
}

fn ids(entries: &[Value]) -> Vec<String> {
    entries
        .iter()
        .map(|e| e["id"].as_str().unwrap().to_owned())
        .collect()
}

fn tree_ids(s: &SessionMachine) -> Vec<String> {
    s.tree()
        .entries()
        .iter()
        .map(|e| e.id().to_owned())
        .collect()
}

#[test]
fn each_hook_point_carries_the_session_as_it_is_there() {
    let mut s = session();
    s.step(1, SessionInput::SetSessionName("named".into()))
        .unwrap();
    let prompt = SessionInput::Prompt {
        text: "go".into(),
        images: vec![],
        streaming_behavior: None,
    };
    let step = s.step(2, prompt).unwrap();
    let (call, _, input) = hook(&step);
    assert!(input.is_idle, "idle while the input waits, as Pi's");
    assert_eq!(input.session.name.as_deref(), Some("named"));
    assert_eq!(input.session.entries.from, 0);
    assert_eq!(ids(&input.session.entries.entries), tree_ids(&s));
    assert_eq!(input.session.leaf_id.as_deref(), s.tree().leaf_id());
    assert_eq!(input.model, mock_model());
    assert!(!input.has_pending_messages);
    let mut mirror = Vec::new();
    assert!(input.session.entries.apply_to(&mut mirror));

    let step = s
        .step(3, answer(call, HookDecision::Input(InputAction::Continue)))
        .unwrap();
    let (call, payload, start) = hook(&step);
    assert!(matches!(payload, HookPayload::BeforeAgentStart { .. }));
    assert!(!start.is_idle, "the run is active at before_agent_start");
    assert_eq!(start.system_prompt, s.agent().system_prompt());
    assert!(start.session.entries.entries.is_empty(), "nothing new");
    assert_eq!(start.session.entries.from, mirror.len());

    let step = s
        .step(
            4,
            answer(
                call,
                HookDecision::BeforeAgentStart {
                    messages: vec![],
                    system_prompt: None,
                },
            ),
        )
        .unwrap();
    let model_call = step
        .effects
        .iter()
        .find_map(|e| match e {
            Effect::CallModel { call, .. } => Some(*call),
            _ => None,
        })
        .unwrap();
    let message = AssistantMessage {
        content: vec![ContentBlock::text("done")],
        ..AssistantMessage::default()
    };
    let step = s
        .step(
            5,
            SessionInput::Answer(Input::Model {
                call: model_call,
                event: StreamEvent::Done {
                    reason: StopReason::Stop,
                    message,
                },
            }),
        )
        .unwrap();
    let (_, payload, turn_end) = hook(&step);
    assert!(matches!(payload, HookPayload::TurnEnd { .. }));
    assert!(!turn_end.is_idle);
    assert_eq!(turn_end.session.entries.from, mirror.len());
    assert!(turn_end.session.entries.apply_to(&mut mirror));
    assert_eq!(
        ids(&mirror),
        tree_ids(&s),
        "the user's and the answer's entries"
    );
    let roles: Vec<&str> = turn_end
        .session
        .entries
        .entries
        .iter()
        .filter_map(|e| e["message"]["role"].as_str())
        .collect();
    assert_eq!(
        roles,
        ["user", "assistant"],
        "the answer persisted before turn_end"
    );
    assert_eq!(turn_end.session.leaf_id.as_deref(), s.tree().leaf_id());
    let usage = turn_end.context_usage.expect("the mock model has a window");
    assert_eq!(usage["contextWindow"], mock_model().context_window);
}

/// What a handler reads after another of the same hook point registered deferred tools
/// (`HookState::with_deferred_tools`) is what the session lists once it has applied that
/// registration: the next hook point's `all_tools`, namespace, annotations and source
/// included, a name already registered left as it was.
#[test]
fn the_tools_a_decision_registers_are_listed_as_a_later_handler_reads_them() {
    use pi_core::agent::custom_tool::{CustomToolDefinition, SearchableTool, ToolNamespace};
    use pi_core::agent::hooks::HookAction;
    use pi_core::agent_session::ToolLoadout;
    use pi_core::system_prompt::SystemPromptInputs;
    use serde_json::json;

    let mut s = session();
    let tool = |name: &str| CustomToolDefinition {
        name: name.into(),
        label: name.into(),
        description: format!("The {name} tool."),
        parameters: json!({"type": "object"}),
        ..CustomToolDefinition::default()
    };
    let known = SearchableTool {
        tool: tool("mcp__web__fetch"),
        namespace: None,
    };
    s.set_tool_loadout(Some(ToolLoadout {
        deferred_tools: vec![known.clone()],
        prompt: SystemPromptInputs::default(),
        ..ToolLoadout::default()
    }));
    let count = SearchableTool {
        tool: CustomToolDefinition {
            annotations: Some(json!({"readOnlyHint": true})),
            source_info: Some(json!({"path": "builtin:mcp", "source": "builtin"})),
            ..tool("mcp__notes__count")
        },
        namespace: Some(ToolNamespace {
            name: "mcp__notes".into(),
            aliases: vec!["notes".into()],
            description: None,
            instructions: Some("Notes are short.".into()),
        }),
    };
    let mut renamed = known.clone();
    renamed.tool.description = "Another fetch.".into();
    let registered = vec![count, renamed];

    let prompt = SessionInput::Prompt {
        text: "go".into(),
        images: vec![],
        streaming_behavior: None,
    };
    let step = s.step(1, prompt).unwrap();
    let (call, _, input) = hook(&step);
    let read = input.with_deferred_tools(&registered);
    let listed: Vec<&str> = read
        .all_tools
        .as_ref()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["mcp__web__fetch", "mcp__notes__count"]);

    let decided = SessionInput::Answer(Input::HookDecided {
        call,
        outcome: HookOutcome {
            decision: HookDecision::Input(InputAction::Continue),
            actions: vec![HookAction::RegisterDeferredTools {
                tools: registered,
                later_sections: vec![],
            }],
            errors: vec![],
        },
    });
    let step = s.step(2, decided).unwrap();
    let (_, payload, start) = hook(&step);
    assert!(matches!(payload, HookPayload::BeforeAgentStart { .. }));
    assert_eq!(start.all_tools, read.all_tools);
    assert_eq!(
        start.all_tools.unwrap()[1]["namespace"]["instructions"],
        "Notes are short."
    );
}

/// Pi's `syncResourceTools` once no server left is `direct`: the resource tools, withdrawn
/// then registered again deferred, keep their place in `pi.getAllTools()` as `deferred` (so
/// `tool_search` finds them) and leave the active tools; a withdrawn server's tool is listed
/// `hidden`.
#[test]
fn a_withdrawn_tool_registered_again_deferred_is_listed_deferred_in_its_place() {
    use pi_core::agent::custom_tool::{CustomToolDefinition, SearchableTool};
    use pi_core::agent::hooks::HookAction;
    use pi_core::agent_session::ToolLoadout;
    use pi_core::system_prompt::SystemPromptInputs;
    use serde_json::json;

    let mut s = session();
    s.set_tool_loadout(Some(ToolLoadout {
        prompt: SystemPromptInputs::default(),
        ..ToolLoadout::default()
    }));
    let tool = |name: &str| CustomToolDefinition {
        name: name.into(),
        label: name.into(),
        description: format!("The {name} tool."),
        parameters: json!({"type": "object"}),
        ..CustomToolDefinition::default()
    };
    let decided = |call, decision, actions| {
        SessionInput::Answer(Input::HookDecided {
            call,
            outcome: HookOutcome {
                decision,
                actions,
                errors: vec![],
            },
        })
    };
    let prompt = SessionInput::Prompt {
        text: "go".into(),
        images: vec![],
        streaming_behavior: None,
    };
    let step = s.step(1, prompt).unwrap();
    let (call, ..) = hook(&step);
    let registered = vec![HookAction::RegisterTools {
        tools: vec![tool("mcp__notes__count"), tool("list_mcp_resources")],
        withdrawn: vec![],
    }];
    let step = s
        .step(
            2,
            decided(call, HookDecision::Input(InputAction::Continue), registered),
        )
        .unwrap();
    let (call, _, start) = hook(&step);
    let listed = |state: &HookState| -> Vec<String> {
        state
            .all_tools
            .as_ref()
            .unwrap()
            .iter()
            .map(|t| {
                format!(
                    "{} {}",
                    t["name"].as_str().unwrap(),
                    t["exposure"].as_str().unwrap()
                )
            })
            .collect()
    };
    assert_eq!(
        listed(&start),
        ["mcp__notes__count direct", "list_mcp_resources direct"]
    );
    assert_eq!(
        start.active_tools,
        ["mcp__notes__count", "list_mcp_resources"]
    );

    let moved = vec![
        HookAction::RegisterTools {
            tools: vec![],
            withdrawn: vec!["mcp__notes__count".into(), "list_mcp_resources".into()],
        },
        HookAction::RegisterDeferredTools {
            tools: vec![SearchableTool {
                tool: tool("list_mcp_resources"),
                namespace: None,
            }],
            later_sections: vec![],
        },
    ];
    let start_decision = HookDecision::BeforeAgentStart {
        messages: vec![],
        system_prompt: None,
    };
    let step = s.step(3, decided(call, start_decision, moved)).unwrap();
    let model_call = step
        .effects
        .iter()
        .find_map(|e| match e {
            Effect::CallModel { call, .. } => Some(*call),
            _ => None,
        })
        .unwrap();
    let message = AssistantMessage {
        content: vec![ContentBlock::text("done")],
        ..AssistantMessage::default()
    };
    let done = SessionInput::Answer(Input::Model {
        call: model_call,
        event: StreamEvent::Done {
            reason: StopReason::Stop,
            message,
        },
    });
    let step = s.step(4, done).unwrap();
    let (_, _, turn_end) = hook(&step);
    assert_eq!(
        listed(&turn_end),
        ["mcp__notes__count hidden", "list_mcp_resources deferred"]
    );
    assert!(
        turn_end.active_tools.is_empty(),
        "{:?}",
        turn_end.active_tools
    );
}
