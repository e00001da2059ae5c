//! Extension commands (Pi 1.5.2's `_tryExecuteExtensionCommand`): a prompt `/name args` naming
//! one of the session's extension commands runs it instead of becoming a message, before the
//! `input` handlers and any template expansion, even while the agent streams; the run is an
//! effect whose answer (the actions the handler asked for) is applied like a hook decision's,
//! then the front end learns the prompt was handled. A queued text naming a command is refused
//! with Pi's error; a `/text` naming no command is a prompt.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::hooks::{
    HandledHooks, HookAction, HookDecision, HookEvent, HookOutcome, InjectedMessage,
};
use pi_core::agent::{AgentConfig, Effect, Input};
use pi_core::agent_session::{Reply, SessionError, SessionInput, SessionMachine, SessionRejection};
use pi_core::event::{AgentEvent, Event, SessionEvent};
use pi_core::resources::templates::PromptTemplate;
use pi_core::resources::Resources;
use pi_core::script::mock_model;
use serde_json::json;

#[path = "support/session.rs"]
mod support;
use support::{hooks_json, prompt};

fn session() -> SessionMachine {
    support::machine(
        AgentConfig {
            model: mock_model(),
            // An `input` handler too: a command runs before it is asked.
            handled_hooks: HandledHooks::of([HookEvent::Input, HookEvent::Command]),
            ..AgentConfig::default()
        },
        Resources {
            skills: vec![],
            // A template of the command's name: the command wins.
            templates: vec![PromptTemplate {
                name: "note".into(),
                description: "".into(),
                argument_hint: None,
                content: "Template $1".into(),
                file_path: "/prompts/note.md".into(),
                source_info: json!(null),
            }],
            commands: vec!["note".into()],
            ..Resources::default()
        },
    )
}

#[test]
fn a_command_runs_instead_of_a_prompt_and_its_actions_are_applied() {
    let mut s = session();
    assert!(s.is_extension_command("/note the plan"));
    assert!(!s.is_extension_command("/notes"));
    let step = s.step(1, prompt("/note the plan")).unwrap();
    let asked = hooks_json(&step);
    assert_eq!(
        asked.iter().map(|(_, p)| p.clone()).collect::<Vec<_>>(),
        [json!({"type": "command", "name": "note", "args": "the plan", "idle": true})]
    );
    assert!(step.events.is_empty(), "{:?}", step.events);
    assert!(s.is_busy(), "the prompt waits for its command");

    let ran = s
        .step(
            2,
            SessionInput::Answer(Input::HookDecided {
                call: asked[0].0,
                outcome: HookOutcome {
                    decision: HookDecision::Done,
                    actions: vec![
                        HookAction::AppendEntry {
                            custom_type: "note".into(),
                            data: Some(json!({"args": "the plan"})),
                        },
                        HookAction::SendMessage {
                            message: InjectedMessage {
                                custom_type: "note".into(),
                                content: json!("hello the plan"),
                                display: true,
                                details: None,
                            },
                            deliver_as: None,
                            trigger_turn: None,
                        },
                    ],
                    errors: vec![],
                },
            }),
        )
        .unwrap();
    assert!(!s.is_busy());
    assert_eq!(ran.replies, [Reply::CommandRan { errors: vec![] }]);
    let kinds: Vec<&str> = ran
        .events
        .iter()
        .map(|e| match e {
            Event::Session(SessionEvent::EntryAppended { .. }) => "entry_appended",
            Event::Agent(AgentEvent::MessageStart { .. }) => "message_start",
            Event::Agent(AgentEvent::MessageEnd { .. }) => "message_end",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["entry_appended", "message_start", "message_end"]);
    assert!(
        !ran.effects
            .iter()
            .any(|e| matches!(e, Effect::CallModel { .. })),
        "no model call"
    );
    let roles: Vec<serde_json::Value> = s
        .agent()
        .messages()
        .iter()
        .map(|m| serde_json::to_value(m).unwrap()["role"].clone())
        .collect();
    assert_eq!(roles, [json!("custom")]);
}

#[test]
fn a_queued_command_is_refused_and_an_unknown_one_is_a_prompt() {
    let mut s = session();
    let refused = s.step(
        1,
        SessionInput::FollowUp {
            text: "/note later".into(),
            images: vec![],
        },
    );
    assert_eq!(
        refused.unwrap_err(),
        SessionError::Rejected(SessionRejection::CommandQueued("note".into()))
    );
    assert_eq!(
        SessionRejection::CommandQueued("note".into()).to_string(),
        "Extension command \"/note\" cannot be queued. Use prompt() or execute the command when not streaming."
    );
    let step = s.step(2, prompt("/other thing")).unwrap();
    let asked = hooks_json(&step);
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].1["type"], "input", "{:?}", asked);
}
