//! The `input` hook point (Pi 1.5.2's `AgentSession._preparePrompt` and `_queueUserInput`):
//! where a handler is registered, a prompt's (or a queued message's) text waits for the
//! extensions before `/skill:` and template expansion; a transform changes the text that is
//! expanded, `handled` drops the input (no message, no run, no `agent_settled`), `continue`
//! goes on with it. Without a handler the session expands at once, as Pi does.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::hooks::{
    HandledHooks, HookAction, HookDecision, HookError, HookEvent, HookOutcome, InputAction,
};
use pi_core::agent::{AgentConfig, CallId, Effect, Input};
use pi_core::agent_session::{
    BusyAnswer, Reply, SessionError, SessionInput, SessionMachine, SessionRejection, SessionStep,
    StreamingBehavior,
};
use pi_core::event::{Event, SessionEvent};
use pi_core::resources::templates::PromptTemplate;
use pi_core::resources::Resources;
use pi_core::script::mock_model;
use serde_json::json;

#[path = "support/session.rs"]
mod support;
use support::{prompt, stopped, transcript};

fn resources() -> Resources {
    Resources {
        skills: vec![],
        templates: vec![PromptTemplate {
            name: "greet".into(),
            description: "Greets".into(),
            argument_hint: None,
            content: "Hello $1".into(),
            file_path: "/prompts/greet.md".into(),
            source_info: json!(null),
        }],
        ..Resources::default()
    }
}

fn session(handled: HandledHooks) -> SessionMachine {
    support::machine(
        AgentConfig {
            model: mock_model(),
            handled_hooks: handled,
            ..AgentConfig::default()
        },
        resources(),
    )
}

fn model_calls(step: &SessionStep) -> Vec<CallId> {
    step.effects
        .iter()
        .filter_map(|e| match e {
            Effect::CallModel { call, .. } => Some(*call),
            _ => None,
        })
        .collect()
}

fn hook(step: &SessionStep) -> (CallId, serde_json::Value) {
    let hooks = support::hooks_json(step);
    assert_eq!(hooks.len(), 1, "one hook effect in {:?}", step.effects);
    hooks[0].clone()
}

fn decided(call: CallId, action: InputAction, actions: Vec<HookAction>) -> SessionInput {
    SessionInput::Answer(Input::HookDecided {
        call,
        outcome: HookOutcome {
            decision: HookDecision::Input(action),
            actions,
            errors: vec![],
        },
    })
}

fn user_texts(s: &SessionMachine) -> Vec<serde_json::Value> {
    transcript(s)
        .into_iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].clone())
        .collect()
}

fn settled(step: &SessionStep) -> bool {
    step.events
        .iter()
        .any(|e| matches!(e, Event::Session(SessionEvent::AgentSettled { .. })))
}

/// The step's events by their `type`, as JSON.
fn event_types(step: &SessionStep) -> Vec<serde_json::Value> {
    step.events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap()["type"].clone())
        .collect()
}

/// A transform of the input to `text`, its images kept.
fn transform(text: &str) -> InputAction {
    InputAction::Transform {
        text: text.into(),
        images: None,
    }
}

/// At `now`, input hook point `call` goes on with its input, nothing asked.
fn go_on(s: &mut SessionMachine, now: u64, call: CallId) -> SessionStep {
    s.step(now, decided(call, InputAction::Continue, vec![]))
        .unwrap()
}

/// A session with an `input` handler, streaming the answer to "start" (its handlers went on
/// at 2): the model call.
fn streaming() -> (SessionMachine, CallId) {
    let mut s = session(HandledHooks::of([HookEvent::Input]));
    let (call, _) = hook(&s.step(1, prompt("start")).unwrap());
    let step = go_on(&mut s, 2, call);
    let model = model_calls(&step)[0];
    (s, model)
}

#[test]
fn without_a_handler_the_session_expands_a_template_at_once() {
    let mut s = session(HandledHooks::default());
    let step = s.step(1, prompt("/greet world")).unwrap();
    assert_eq!(model_calls(&step).len(), 1);
    assert_eq!(
        user_texts(&s),
        vec![json!([{"type": "text", "text": "Hello world"}])]
    );
}

#[test]
fn a_transform_changes_the_text_before_expansion() {
    let mut s = session(HandledHooks::of([HookEvent::Input]));
    let step = s.step(1, prompt("/greet world")).unwrap();
    // Pi runs the input handlers first: no run, no event, the raw text shown.
    assert!(step.events.is_empty(), "{:?}", step.events);
    assert!(model_calls(&step).is_empty());
    let (call, payload) = hook(&step);
    assert_eq!(
        payload,
        json!({"type": "input", "text": "/greet world", "source": "interactive"})
    );
    assert!(s.is_busy());
    let step = s
        .step(2, decided(call, transform("/greet moon"), vec![]))
        .unwrap();
    let calls = model_calls(&step);
    assert_eq!(calls.len(), 1);
    assert_eq!(
        user_texts(&s),
        vec![json!([{"type": "text", "text": "Hello moon"}])]
    );
    let step = stopped(&mut s, 3, calls[0]);
    assert!(settled(&step));
}

#[test]
fn continue_expands_the_original_text() {
    let mut s = session(HandledHooks::of([HookEvent::Input]));
    let (call, _) = hook(&s.step(1, prompt("/greet world")).unwrap());
    let step = go_on(&mut s, 2, call);
    assert_eq!(model_calls(&step).len(), 1);
    assert_eq!(
        user_texts(&s),
        vec![json!([{"type": "text", "text": "Hello world"}])]
    );
}

#[test]
fn a_handled_input_makes_no_message_no_run_and_no_settle() {
    let mut s = session(HandledHooks::of([HookEvent::Input]));
    let (call, _) = hook(&s.step(1, prompt("/greet world")).unwrap());
    let step = s
        .step(
            2,
            decided(
                call,
                InputAction::Handled,
                vec![HookAction::AppendEntry {
                    custom_type: "seen".into(),
                    data: Some(json!({"n": 1})),
                }],
            ),
        )
        .unwrap();
    assert!(model_calls(&step).is_empty());
    assert!(!settled(&step), "{:?}", step.events);
    assert!(s.agent().messages().is_empty());
    assert!(!s.is_busy());
    // What the handler asked for is still applied: Pi writes the entry at once.
    assert_eq!(event_types(&step), vec![json!("entry_appended")]);
    // The session takes the next prompt.
    assert!(s.step(3, prompt("again")).is_ok());
}

#[test]
fn a_queued_message_shows_its_streaming_behavior_and_is_expanded_after_the_decision() {
    let (mut s, model) = streaming();
    let step = s
        .step(
            4,
            SessionInput::Prompt {
                text: "/greet you".into(),
                images: vec![],
                streaming_behavior: Some(StreamingBehavior::Steer),
            },
        )
        .unwrap();
    let (call, payload) = hook(&step);
    assert_eq!(
        payload,
        json!({"type": "input", "text": "/greet you", "source": "interactive",
               "streamingBehavior": "steer"})
    );
    assert_eq!(s.queued_texts().0.len(), 0);
    go_on(&mut s, 5, call);
    assert_eq!(s.queued_texts().0, ["Hello you".to_owned()]);
    // Steering is delivered before the next call, expanded.
    let step = stopped(&mut s, 6, model);
    assert_eq!(model_calls(&step).len(), 1);
    assert_eq!(
        user_texts(&s)[1],
        json!([{"type": "text", "text": "Hello you"}])
    );
}

/// While streaming, a prompt without a streaming behavior goes through the handlers (shown no
/// behavior) before Pi refuses it: what they asked for and threw comes first, then the refusal;
/// a handler's `handled` answers it instead. Nothing is queued or sent either way.
#[test]
fn a_prompt_while_streaming_without_a_behavior_is_refused_after_its_handlers() {
    let (mut s, _) = streaming();
    let (call, payload) = hook(&s.step(3, prompt("/greet you")).unwrap());
    assert_eq!(
        payload,
        json!({"type": "input", "text": "/greet you", "source": "interactive"})
    );
    let step = s
        .step(
            4,
            SessionInput::Answer(Input::HookDecided {
                call,
                outcome: HookOutcome {
                    decision: HookDecision::Input(InputAction::Continue),
                    actions: vec![HookAction::AppendEntry {
                        custom_type: "seen".into(),
                        data: None,
                    }],
                    errors: vec![HookError {
                        extension: "ext.ts".into(),
                        event: HookEvent::Input,
                        error: "broke".into(),
                    }],
                },
            }),
        )
        .unwrap();
    assert_eq!(
        event_types(&step),
        [json!("entry_appended"), json!("extension_error")]
    );
    assert_eq!(
        step.replies,
        [Reply::BusyPrompt(Err(
            SessionRejection::NeedsStreamingBehavior.to_string()
        ))]
    );
    assert!(model_calls(&step).is_empty());
    assert_eq!(s.queued_texts(), (&[][..], &[][..]));

    let (call, _) = hook(&s.step(5, prompt("handle me")).unwrap());
    let step = s
        .step(6, decided(call, InputAction::Handled, vec![]))
        .unwrap();
    assert_eq!(step.replies, [Reply::BusyPrompt(Ok(BusyAnswer::Handled))]);
    assert!(s.agent().is_streaming());
}

/// Without an `input` handler, Pi refuses such a prompt at once.
#[test]
fn without_a_handler_a_prompt_while_streaming_without_a_behavior_is_refused_at_once() {
    let mut s = session(HandledHooks::default());
    s.step(1, prompt("start")).unwrap();
    assert!(matches!(
        s.step(2, prompt("again")),
        Err(SessionError::Rejected(
            SessionRejection::NeedsStreamingBehavior
        ))
    ));
}

#[test]
fn a_follow_up_while_idle_goes_through_the_handlers_without_a_streaming_behavior() {
    let mut s = session(HandledHooks::of([HookEvent::Input]));
    let step = s
        .step(
            1,
            SessionInput::FollowUp {
                text: "/greet later".into(),
                images: vec![],
            },
        )
        .unwrap();
    let (call, payload) = hook(&step);
    assert_eq!(
        payload,
        json!({"type": "input", "text": "/greet later", "source": "interactive"})
    );
    s.step(2, decided(call, transform("/greet sooner"), vec![]))
        .unwrap();
    assert_eq!(s.queued_texts().1, ["Hello sooner".to_owned()]);
}

#[test]
fn a_decision_nobody_waits_for_is_refused() {
    let mut s = session(HandledHooks::of([HookEvent::Input]));
    let (call, _) = hook(&s.step(1, prompt("hi")).unwrap());
    s.step(2, decided(call, InputAction::Handled, vec![]))
        .unwrap();
    assert!(s
        .step(3, decided(call, InputAction::Handled, vec![]))
        .is_err());
    // A payload of another hook point does not answer an input.
    let (call, _) = hook(&s.step(4, prompt("hi")).unwrap());
    let other = SessionInput::Answer(Input::HookDecided {
        call,
        outcome: HookOutcome {
            decision: HookDecision::Done,
            actions: vec![],
            errors: vec![],
        },
    });
    assert!(s.step(5, other).is_err());
}

/// A prompt sent while streaming without a behavior whose handlers decide after the run ended:
/// Pi 1.5.2 checks for a run only then, so the prompt is no longer busy: it is answered
/// `started`, and its run starts in the step after (so the answer goes out before `agent_start`).
#[test]
fn a_busy_prompt_whose_run_ended_while_its_handlers_decided_starts_a_run() {
    let (mut s, model) = streaming();
    let (busy, _) = hook(&s.step(3, prompt("/greet you")).unwrap());
    assert!(settled(&stopped(&mut s, 4, model)));
    let step = go_on(&mut s, 5, busy);
    assert_eq!(step.replies, [Reply::BusyPrompt(Ok(BusyAnswer::Started))]);
    assert!(
        model_calls(&step).is_empty(),
        "the run starts after the answer"
    );
    assert_eq!(step.wake_at, Some(5));
    let step = s.step(5, SessionInput::Wake).unwrap();
    assert_eq!(model_calls(&step).len(), 1);
    assert_eq!(
        user_texts(&s)[1],
        json!([{"type": "text", "text": "Hello you"}]),
        "expanded as a prompt is"
    );
}
