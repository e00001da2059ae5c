//! Bad input to the machine is a typed error naming the input and the state, never a panic, and
//! leaves the machine as it was.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Tests read fixtures and run cargo; the core's IO ban applies to the library, not to its tests.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use pi_core::agent::{
    AgentConfig, AgentMachine, CallId, Effect, Input, Prompt, StepError, StreamEvent, ToolOutcome,
};
use pi_core::event::ToolResult;
use pi_core::message::{AssistantMessage, StopReason};
use pi_core::script::{mock_model, tool};

#[path = "support/agent.rs"]
mod support;

fn machine() -> AgentMachine {
    AgentMachine::new(AgentConfig {
        model: mock_model(),
        tools: vec![tool("echo", false)],
        ..AgentConfig::default()
    })
}

fn contract(result: Result<pi_core::agent::Step, StepError>) -> String {
    match result {
        Err(StepError::Contract(e)) => e.to_string(),
        other => panic!("expected a contract error, got {other:?}"),
    }
}

fn model_call(step: &pi_core::agent::Step) -> CallId {
    step.effects
        .iter()
        .find_map(|e| match e {
            Effect::CallModel { call, .. } => Some(*call),
            _ => None,
        })
        .expect("a model call")
}

#[test]
fn an_answer_for_an_unknown_call_is_refused() {
    let mut m = machine();
    let error = contract(m.step(
        1,
        Input::ToolFinished {
            call: CallId(42),
            outcome: ToolOutcome::Ok(ToolResult::default()),
        },
    ));
    assert_eq!(
        error,
        "tool result for call #42 refused while idle: no such tool call is running"
    );

    let step = m.step(2, Input::Prompt(Prompt::text("hi"))).unwrap();
    let call = model_call(&step);
    let error = contract(m.step(
        3,
        Input::Model {
            call: CallId(call.0 + 7),
            event: StreamEvent::Done {
                reason: StopReason::Stop,
                message: AssistantMessage::default(),
            },
        },
    ));
    assert_eq!(
        error,
        format!("model done for call #{} refused while waiting for model call {call} to start: no such model call is open", call.0 + 7)
    );
}

#[test]
fn input_after_the_run_ended_is_refused() {
    let mut m = machine();
    let call = model_call(&m.step(1, Input::Prompt(Prompt::text("hi"))).unwrap());
    let done = StreamEvent::Done {
        reason: StopReason::Stop,
        message: AssistantMessage::default(),
    };
    m.step(
        2,
        Input::Model {
            call,
            event: done.clone(),
        },
    )
    .unwrap();
    let error = contract(m.step(3, Input::Model { call, event: done }));
    assert_eq!(
        error,
        "model done for call #1 refused while idle: no such model call is open"
    );
}

#[test]
fn time_going_backwards_is_refused_and_changes_nothing() {
    let mut m = machine();
    m.step(100, Input::Prompt(Prompt::text("hi"))).unwrap();
    let error = contract(m.step(99, Input::Abort));
    assert_eq!(
        error,
        "abort refused while waiting for model call #1 to start: time went backwards (99 < 100)"
    );
    assert!(m.is_streaming());
    let step = m.step(100, Input::Abort).unwrap();
    assert_eq!(step.effects, vec![Effect::Cancel { call: CallId(1) }]);
}

#[test]
fn a_malformed_stream_is_refused_without_changing_the_message() {
    let mut m = machine();
    let call = model_call(&m.step(1, Input::Prompt(Prompt::text("hi"))).unwrap());
    let start = StreamEvent::Start {
        partial: AssistantMessage::default(),
    };
    m.step(
        2,
        Input::Model {
            call,
            event: start.clone(),
        },
    )
    .unwrap();
    let cases = [
        (
            StreamEvent::TextDelta { content_index: 0, delta: "x".into() },
            "model text_delta for call #1 refused while streaming model call #1: content block 0 is not an open text block",
        ),
        (
            StreamEvent::TextStart { content_index: 3, block: Default::default() },
            "model text_start for call #1 refused while streaming model call #1: a block must start at the end of the content (0), not at 3",
        ),
        (
            start,
            "model start for call #1 refused while streaming model call #1: the stream already started",
        ),
    ];
    for (event, expected) in cases {
        assert_eq!(contract(m.step(3, Input::Model { call, event })), expected);
    }
    let step = m
        .step(
            4,
            Input::Model {
                call,
                event: StreamEvent::TextStart {
                    content_index: 0,
                    block: Default::default(),
                },
            },
        )
        .unwrap();
    assert_eq!(step.events.len(), 1);
}

#[test]
fn tool_answers_must_name_a_running_call() {
    let mut m = machine();
    let call = model_call(&m.step(1, Input::Prompt(Prompt::text("hi"))).unwrap());
    let step = support::echo_calls(&mut m, 2, call, &[("c1", "v")]);
    let tool_call = support::tool_run(&step);
    let error = contract(m.step(
        3,
        Input::ToolUpdate {
            call: CallId(99),
            partial: ToolResult::default(),
        },
    ));
    assert_eq!(
        error,
        format!("tool update for call #99 refused while running tool calls [{tool_call}]: no such tool call is running")
    );
    m.step(
        4,
        Input::ToolFinished {
            call: tool_call,
            outcome: ToolOutcome::Thrown("boom".into()),
        },
    )
    .unwrap();
    let error = contract(m.step(
        5,
        Input::ToolFinished {
            call: tool_call,
            outcome: ToolOutcome::Thrown("again".into()),
        },
    ));
    assert!(error.ends_with("no such tool call is running"), "{error}");
}

#[test]
fn a_new_agent_is_idle_with_pi_defaults() {
    let m = AgentMachine::new(AgentConfig::default());
    assert_eq!(m.system_prompt(), "");
    assert_eq!(m.model().id, "unknown");
    assert_eq!(m.model().provider, "unknown");
    assert_eq!(m.thinking_level(), pi_core::model::ThinkingLevel::Off);
    assert!(m.messages().is_empty());
    assert!(!m.is_streaming());
    assert!(m.streaming_message().is_none());
    assert!(m.pending_tool_calls().is_empty());
    assert!(m.error_message().is_none());
    assert!(!m.has_queued_messages());
}
