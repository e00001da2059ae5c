//! Messages an extension's command sends while the agent is idle start a run (Pi 1.5.2's
//! `sendUserMessage`, which prompts as typed by an extension, and `sendMessage` with
//! `triggerTurn: true`, `_startRun` with the message as its prompt): the command is answered
//! first (`handled`), and the run starts at a wake due at once, the step after, so a replay fed
//! the same wake starts it at the same point. Without `triggerTurn` the message is written at
//! once and starts nothing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use pi_core::agent::convert::CodingAgentHooks;
use pi_core::agent::hooks::{
    HandledHooks, HookAction, HookDecision, HookEvent, HookOutcome, InjectedMessage,
};
use pi_core::agent::{AgentConfig, CallId, Effect, Input};
use pi_core::agent_session::{Reply, SessionInput, SessionMachine, SessionStep};
use pi_core::event::{AgentEvent, Event};
use pi_core::message::AgentMessage;
use pi_core::resources::Resources;
use pi_core::script::mock_model;
use serde_json::json;

#[path = "support/session.rs"]
mod support;
use support::{decided_as, hook, requests};

fn session(handled: &[HookEvent]) -> SessionMachine {
    support::machine(
        AgentConfig {
            model: mock_model(),
            handled_hooks: HandledHooks::of(handled.iter().copied()),
            hooks: Arc::new(CodingAgentHooks::default()),
            ..AgentConfig::default()
        },
        Resources {
            skills: vec![],
            templates: vec![],
            commands: vec!["go".into()],
            ..Resources::default()
        },
    )
}

/// Runs `/go` and answers its run with `actions`: the step of the answer.
fn command(s: &mut SessionMachine, actions: Vec<HookAction>) -> SessionStep {
    let step = s.step(1, support::prompt("/go now")).unwrap();
    let decision = HookDecision::Done;
    s.step(2, decided_as(hook(&step), decision, actions))
        .unwrap()
}

fn user_message(text: &str) -> HookAction {
    HookAction::SendUserMessage {
        content: serde_json::from_value(json!(text)).unwrap(),
        deliver_as: None,
        expand_prompt_templates: None,
    }
}

fn note(trigger_turn: Option<bool>) -> HookAction {
    HookAction::SendMessage {
        message: InjectedMessage {
            custom_type: "note".into(),
            content: json!("noted"),
            display: true,
            details: None,
        },
        deliver_as: None,
        trigger_turn,
    }
}

/// Answers the `input` hook point `step` asked at `at` with handlers that let the text through.
fn continue_input(s: &mut SessionMachine, step: &SessionStep, at: u64) -> SessionStep {
    s.step(
        at,
        SessionInput::Answer(Input::HookDecided {
            call: hook(step),
            outcome: HookOutcome {
                decision: HookDecision::Input(pi_core::agent::hooks::InputAction::Continue),
                actions: vec![],
                errors: vec![],
            },
        }),
    )
    .unwrap()
}

/// The roles of the messages a step announced (`message_end`), and whether it started a run.
fn ended_roles(step: &SessionStep) -> (Vec<String>, bool) {
    let roles = step
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Agent(AgentEvent::MessageEnd { message }) => {
                Some(serde_json::to_value(message).unwrap()["role"].to_string())
            }
            _ => None,
        })
        .collect();
    let started = step
        .events
        .iter()
        .any(|e| matches!(e, Event::Agent(AgentEvent::AgentStart)));
    (roles, started)
}

#[test]
fn a_user_message_a_command_sends_while_idle_runs_after_the_command_is_answered() {
    let mut s = session(&[HookEvent::Command]);
    let step = command(&mut s, vec![user_message("Please go.")]);
    assert!(
        matches!(step.replies[..], [Reply::CommandRan { .. }]),
        "{:?}",
        step.replies
    );
    assert!(
        requests(&step).is_empty(),
        "not yet: the command is answered first"
    );
    assert_eq!(ended_roles(&step), (vec![], false));
    assert_eq!(step.wake_at, Some(2), "a wake due at once starts it");
    assert!(s.waits_only_for_idle_runs());
    let step = s.step(2, SessionInput::Wake).unwrap();
    assert_eq!(ended_roles(&step), (vec!["\"user\"".to_owned()], true));
    let sent = requests(&step);
    assert_eq!(sent.len(), 1);
    assert_eq!(
        serde_json::to_value(&sent[0].1.messages[0]).unwrap()["content"],
        json!([{"type": "text", "text": "Please go."}])
    );
}

/// Pi 1.5.2's `sendUserMessage` runs the `input` handlers within the handler's call, before the
/// command is answered: the input is asked in the command's step, `handled` waits for its
/// decision, and the run (`before_agent_start` on) starts at the wake after.
#[test]
fn an_idle_user_messages_input_handlers_decide_before_the_command_is_answered() {
    let mut s = session(&[HookEvent::Command, HookEvent::Input]);
    let step = command(&mut s, vec![user_message("Please go.")]);
    assert!(step.replies.is_empty(), "{:?}", step.replies);
    let asked = support::hooks_json(&step);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0].1["type"], "input");
    assert_eq!(asked[0].1["text"], "Please go.");
    assert_eq!(asked[0].1["source"], "extension");
    assert!(s.is_busy());
    let step = s
        .step(
            3,
            SessionInput::Answer(Input::HookDecided {
                call: asked[0].0,
                outcome: HookOutcome {
                    decision: HookDecision::Input(pi_core::agent::hooks::InputAction::Continue),
                    actions: vec![HookAction::AppendEntry {
                        custom_type: "input".into(),
                        data: Some(json!({})),
                    }],
                    errors: vec![],
                },
            }),
        )
        .unwrap();
    assert!(
        matches!(step.replies[..], [Reply::CommandRan { .. }]),
        "answered once its input is decided: {:?}",
        step.replies
    );
    assert_eq!(ended_roles(&step), (vec![], false));
    assert!(s.waits_only_for_idle_runs(), "print mode stops here");
    assert_eq!(step.wake_at, Some(3));
    let step = s.step(3, SessionInput::Wake).unwrap();
    assert_eq!(ended_roles(&step), (vec!["\"user\"".to_owned()], true));
    assert!(!s.waits_only_for_idle_runs());
}

/// A user message the `input` handlers handle starts nothing, and nothing is left to wait for.
#[test]
fn an_idle_user_message_the_input_handlers_handle_starts_no_run() {
    let mut s = session(&[HookEvent::Command, HookEvent::Input]);
    let step = command(&mut s, vec![user_message("Please go.")]);
    let step = s
        .step(
            3,
            SessionInput::Answer(Input::HookDecided {
                call: hook(&step),
                outcome: HookOutcome {
                    decision: HookDecision::Input(pi_core::agent::hooks::InputAction::Handled),
                    actions: vec![],
                    errors: vec![],
                },
            }),
        )
        .unwrap();
    assert!(matches!(step.replies[..], [Reply::CommandRan { .. }]));
    assert_eq!(step.wake_at, None);
    assert!(!s.is_busy());
}

#[test]
fn a_custom_message_with_a_turn_starts_a_run_with_it_and_one_without_is_written() {
    let mut s = session(&[HookEvent::Command]);
    let step = command(&mut s, vec![note(Some(false)), note(Some(true))]);
    assert_eq!(
        ended_roles(&step),
        (vec!["\"custom\"".to_owned()], false),
        "the one without a turn, at once"
    );
    let step = s.step(2, SessionInput::Wake).unwrap();
    assert_eq!(ended_roles(&step), (vec!["\"custom\"".to_owned()], true));
    let (call, request) = requests(&step).remove(0);
    assert_eq!(request.messages.len(), 2, "both notes, as user text");
    let step = support::stopped(&mut s, 3, call);
    let ended = support::ended_messages(&step);
    assert!(
        matches!(ended.first(), Some(AgentMessage::Custom(c)) if c.custom_type == "note"),
        "the run starts with the message: {ended:?}"
    );
}

/// Pi's `_startRun` with a custom trigger asks `before_agent_start` too: the event names the
/// message (`messageType: "custom"`, no `prompt`), and the run starts once it is decided.
#[test]
fn a_custom_messages_run_asks_before_agent_start_with_the_message() {
    let mut s = session(&[HookEvent::Command, HookEvent::BeforeAgentStart]);
    command(&mut s, vec![note(Some(true))]);
    let step = s.step(2, SessionInput::Wake).unwrap();
    assert_eq!(
        ended_roles(&step),
        (vec![], false),
        "waits for the decision"
    );
    let (call, payload) = step
        .effects
        .iter()
        .find_map(|e| match e {
            Effect::Hook { call, payload, .. } => {
                Some((*call, serde_json::to_value(payload).unwrap()))
            }
            _ => None,
        })
        .expect("the before_agent_start hook");
    assert_eq!(payload["type"], "before_agent_start");
    assert_eq!(payload["messageType"], "custom");
    assert_eq!(payload.get("prompt"), None);
    assert_eq!(payload["message"]["customType"], "note");
    let step = s.step(3, started_as_asked(call)).unwrap();
    assert_eq!(ended_roles(&step), (vec!["\"custom\"".to_owned()], true));
    assert_eq!(requests(&step).len(), 1);
}

/// `before_agent_start` point `call` decided with nothing changed.
fn started_as_asked(call: CallId) -> SessionInput {
    let decision = HookDecision::BeforeAgentStart {
        messages: vec![],
        system_prompt: None,
    };
    decided_as(call, decision, vec![])
}

/// The customTypes of the entries a step announced (`entry_appended`).
fn appended(step: &SessionStep) -> Vec<String> {
    step.events
        .iter()
        .filter_map(|e| {
            let value = serde_json::to_value(e).unwrap();
            (value["type"] == "entry_appended").then(|| {
                value["entry"]["customType"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned()
            })
        })
        .collect()
}

/// Pi 1.5.2 runs an idle user message's `input` handlers within the handler's call, so what
/// the handler asks for after it follows their effects: two messages, then an entry, give the
/// two `input` decisions, then the entry, then `handled`.
#[test]
fn actions_asked_after_an_idle_user_message_wait_for_its_input_decision() {
    let mut s = session(&[HookEvent::Command, HookEvent::Input]);
    let entry = HookAction::AppendEntry {
        custom_type: "sent".into(),
        data: None,
    };
    let step = command(
        &mut s,
        vec![user_message("First."), user_message("Second."), entry],
    );
    assert!(appended(&step).is_empty());
    assert!(step.replies.is_empty());
    let decide = |s: &mut SessionMachine, call, at| {
        let go_on = HookDecision::Input(pi_core::agent::hooks::InputAction::Continue);
        let entry = HookAction::AppendEntry {
            custom_type: "input".into(),
            data: None,
        };
        s.step(at, decided_as(call, go_on, vec![entry])).unwrap()
    };
    let step = decide(&mut s, hook(&step), 3);
    assert_eq!(appended(&step), ["input"]);
    assert!(step.replies.is_empty(), "the second message waits");
    let step = decide(&mut s, hook(&step), 4);
    assert_eq!(appended(&step), ["input", "sent"]);
    assert!(matches!(step.replies[..], [Reply::CommandRan { .. }]));
}

/// Several runs asked at one hook point: Pi 1.5.2 starts the first at once, so the others find
/// it running: a custom message with `triggerTurn` steers it (its first turn delivers it after
/// the starting message), a user message is refused with Pi's error at `send_user_message`,
/// both once the run's `before_agent_start` is decided, before `agent_start`.
#[test]
fn runs_asked_beside_the_first_steer_it_or_are_refused() {
    let mut s = session(&[HookEvent::Command, HookEvent::BeforeAgentStart]);
    let mut second = note(Some(true));
    if let HookAction::SendMessage { message, .. } = &mut second {
        message.content = json!("second");
    }
    command(
        &mut s,
        vec![note(Some(true)), user_message("Late."), second],
    );
    let step = s.step(2, SessionInput::Wake).unwrap();
    assert_eq!(
        ended_roles(&step),
        (vec![], false),
        "waits for the decision"
    );
    let step = s.step(3, started_as_asked(hook(&step))).unwrap();
    assert_eq!(
        support::kinds(&step)[..2],
        ["extension_error", "agent_start"]
    );
    let error = serde_json::to_value(&step.events[0]).unwrap();
    assert_eq!(error["extensionPath"], "<runtime>");
    assert_eq!(error["event"], "send_user_message");
    let (_, request) = requests(&step).remove(0);
    let contents: Vec<serde_json::Value> = request
        .messages
        .iter()
        .map(|m| serde_json::to_value(m).unwrap()["content"].clone())
        .collect();
    assert_eq!(
        contents.len(),
        2,
        "both notes, no user message: {contents:?}"
    );
    assert!(contents[1].to_string().contains("second"), "{contents:?}");
}

/// The wake that starts a custom message's run waits for the `input` decision of a user
/// message the same handler sent after it: Pi ran those handlers before the hook point went on.
#[test]
fn the_idle_run_wake_waits_for_the_input_decisions_sent_beside_it() {
    let mut s = session(&[HookEvent::Command, HookEvent::Input]);
    let step = command(&mut s, vec![note(Some(true)), user_message("Late.")]);
    assert_eq!(
        step.wake_at, None,
        "the user message's input is not decided yet"
    );
    assert!(s.holds_custom_idle_run());
    let step = continue_input(&mut s, &step, 3);
    assert!(matches!(step.replies[..], [Reply::CommandRan { .. }]));
    assert_eq!(step.wake_at, Some(3));
    let step = s.step(3, SessionInput::Wake).unwrap();
    assert!(ended_roles(&step).1, "the note's run starts");
    let refused = step
        .events
        .iter()
        .any(|e| serde_json::to_value(e).unwrap()["event"] == "send_user_message");
    assert!(refused, "the user message beside it is refused");
}

/// A prompt that comes before the wake (print mode's next message): Pi 1.5.2 starts the held
/// run during the prompt's `input` handlers, so the prompt, its handlers done, finds the agent
/// busy and is refused with Pi's error; the held run is the one that runs.
#[test]
fn a_prompt_before_the_idle_run_wake_starts_the_run_and_is_refused() {
    let mut s = session(&[HookEvent::Command, HookEvent::Input]);
    let step = command(&mut s, vec![user_message("Please go.")]);
    let step = continue_input(&mut s, &step, 3);
    assert_eq!(step.wake_at, Some(3));
    assert!(s.prompt_meets_idle_runs("then what?"));
    assert!(
        !s.prompt_meets_idle_runs("/go again"),
        "a command runs at once"
    );
    let step = s.step(3, support::prompt("then what?")).unwrap();
    assert_eq!(
        step.wake_at, None,
        "the run waits for the prompt's input handlers"
    );
    assert!(!ended_roles(&step).1);
    let step = continue_input(&mut s, &step, 4);
    assert_eq!(ended_roles(&step), (vec!["\"user\"".to_owned()], true));
    let sent = requests(&step);
    assert_eq!(
        serde_json::to_value(&sent[0].1.messages[0]).unwrap()["content"],
        json!([{"type": "text", "text": "Please go."}])
    );
    let refused = step.replies.iter().find_map(|r| match r {
        Reply::BusyPrompt(Err(error)) => Some(error.as_str()),
        _ => None,
    });
    assert_eq!(
        refused,
        Some("Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.")
    );
}

/// Without `input` handlers the prompt is refused at once, the held run started in its step.
#[test]
fn a_prompt_before_the_idle_run_wake_without_input_handlers_is_refused_at_once() {
    let mut s = session(&[HookEvent::Command]);
    command(&mut s, vec![user_message("Please go.")]);
    let step = s.step(2, support::prompt("then what?")).unwrap();
    assert_eq!(ended_roles(&step), (vec!["\"user\"".to_owned()], true));
    assert!(
        matches!(step.replies[..], [Reply::BusyPrompt(Err(_))]),
        "{:?}",
        step.replies
    );
}
