//! The `before_agent_start` hook point: a prompt's run waits for the extensions' decision only
//! where a handler is registered, and starts with the messages they added and, for the whole
//! run, the system prompt the last of them set (Pi 1.5.2's `forceSystemPrompt`: the request's
//! prompt is replaced, the transcript's system messages are not patched).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::hooks::{
    HandledHooks, HookDecision, HookEvent, HookOutcome, HookPayload, InjectedMessage,
};
use pi_core::agent::{
    AgentConfig, AgentMachine, CallId, Input, Prompt, Rejection, Step, StepError, StreamEvent,
};
use pi_core::event::AgentEvent;
use pi_core::message::{AgentMessage, AssistantMessage, StopReason};
use pi_core::script::{mock_model, tool};
use serde_json::json;

#[path = "support/agent.rs"]
mod support;
use support::{hook, requests};

fn machine(handled: HandledHooks) -> AgentMachine {
    AgentMachine::new(AgentConfig {
        system_prompt: "base prompt".into(),
        model: mock_model(),
        tools: vec![tool("echo", false)],
        handled_hooks: handled,
        ..AgentConfig::default()
    })
}

fn start_decision(call: CallId, system_prompt: Option<&str>) -> Input {
    Input::HookDecided {
        call,
        outcome: HookOutcome {
            decision: HookDecision::BeforeAgentStart {
                messages: vec![InjectedMessage {
                    custom_type: "note".into(),
                    content: json!("remember the plan"),
                    display: true,
                    details: None,
                }],
                system_prompt: system_prompt.map(str::to_owned),
            },
            actions: vec![],
            errors: vec![],
        },
    }
}

fn answer(m: &mut AgentMachine, now: u64, call: CallId) -> Step {
    m.step(
        now,
        Input::Model {
            call,
            event: StreamEvent::Done {
                reason: StopReason::Stop,
                message: AssistantMessage::default(),
            },
        },
    )
    .unwrap()
}

#[test]
fn without_a_handler_a_prompt_starts_its_run_at_once() {
    let mut m = machine(HandledHooks::of([HookEvent::ToolCall]));
    let step = m.step(1, Input::Prompt(Prompt::text("hi"))).unwrap();
    assert_eq!(step.events.first(), Some(&AgentEvent::AgentStart));
    assert_eq!(requests(&step).len(), 1);
    assert_eq!(requests(&step)[0].1.system_prompt, "base prompt");
}

#[test]
fn the_run_waits_for_before_agent_start_and_starts_with_its_messages_and_prompt() {
    let mut m = machine(HandledHooks::of([HookEvent::BeforeAgentStart]));
    let step = m.step(1, Input::Prompt(Prompt::text("hi"))).unwrap();
    // Pi emits before_agent_start before agent_start: nothing of the run yet.
    assert!(step.events.is_empty(), "{:?}", step.events);
    let (call, payload) = hook(&step);
    assert_eq!(
        serde_json::to_value(&payload).unwrap(),
        json!({"type": "before_agent_start", "messageType": "user", "prompt": "hi",
               "systemPrompt": "base prompt"})
    );
    // The session is busy meanwhile: another prompt is refused as during a run.
    assert!(matches!(
        m.step(2, Input::Prompt(Prompt::text("again"))),
        Err(StepError::Rejected(Rejection::PromptWhileRunning))
    ));
    let step = m
        .step(3, start_decision(call, Some("forced prompt")))
        .unwrap();
    let requests = requests(&step);
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].1.system_prompt, "forced prompt");
    let transcript: Vec<_> = m
        .messages()
        .iter()
        .map(|m| serde_json::to_value(m).unwrap())
        .collect();
    assert_eq!(
        transcript,
        vec![
            json!({"role": "user", "content": [{"type": "text", "text": "hi"}], "timestamp": 1}),
            json!({"role": "custom", "customType": "note", "content": "remember the plan",
                   "display": true, "timestamp": 3}),
        ]
    );
    assert_eq!(step.events.first(), Some(&AgentEvent::AgentStart));
    // The run keeps the forced prompt; the next prompt's run goes back to the configured one.
    answer(&mut m, 4, requests[0].0);
    assert!(!m.is_streaming());
    let step = m.step(5, Input::Prompt(Prompt::text("next"))).unwrap();
    let (call, _) = hook(&step);
    let step = m.step(6, start_decision(call, None)).unwrap();
    assert_eq!(self::requests(&step)[0].1.system_prompt, "base prompt");
}

#[test]
fn a_forced_prompt_replaces_the_recorded_one_without_patching_the_transcript() {
    let mut sections = serde_json::Map::new();
    sections.insert("rules".into(), json!("Be brief."));
    let mut m = AgentMachine::new(AgentConfig {
        system_sections: Some(sections),
        model: mock_model(),
        handled_hooks: HandledHooks::of([HookEvent::BeforeAgentStart]),
        ..AgentConfig::default()
    });
    let step = m.step(1, Input::Prompt(Prompt::text("hi"))).unwrap();
    let (call, payload) = hook(&step);
    assert!(
        matches!(&payload, HookPayload::BeforeAgentStart { system_prompt, .. } if system_prompt == "Be brief.")
    );
    let step = m.step(2, start_decision(call, Some("forced"))).unwrap();
    assert_eq!(requests(&step)[0].1.system_prompt, "forced");
    let systems: Vec<_> = m
        .messages()
        .iter()
        .filter(|m| matches!(m, AgentMessage::System(_)))
        .map(|m| serde_json::to_value(m).unwrap())
        .collect();
    assert_eq!(
        systems,
        vec![
            json!({"role": "system", "content": "", "sections": {"rules": "Be brief."},
                    "timestamp": 2})
        ]
    );
}

#[test]
fn an_abort_while_the_run_starts_aborts_it_as_soon_as_it_exists() {
    let mut m = machine(HandledHooks::of([HookEvent::BeforeAgentStart]));
    let step = m.step(1, Input::Prompt(Prompt::text("hi"))).unwrap();
    let (call, _) = hook(&step);
    m.step(2, Input::Abort).unwrap();
    let step = m.step(3, start_decision(call, None)).unwrap();
    assert!(requests(&step).is_empty());
    assert!(!m.is_streaming());
    let last = m.messages().last().unwrap();
    assert!(
        matches!(last, AgentMessage::Assistant(a) if a.stop_reason == StopReason::Aborted),
        "{last:?}"
    );
}

#[test]
fn a_decision_for_no_waiting_start_is_refused() {
    let mut m = machine(HandledHooks::of([HookEvent::BeforeAgentStart]));
    assert!(matches!(
        m.step(1, start_decision(CallId(7), None)),
        Err(StepError::Contract(_))
    ));
}
