//! The loop's events as notifications (Pi 1.5.2's `_emitExtensionEvent`): an event an extension
//! handles waits for its handlers before it goes out, and so does everything the loop did after
//! it; what the handlers ask for is applied first. Told nothing, the session does exactly what it
//! does with no extension; an event nobody handles costs no round trip.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::VecDeque;

use pi_core::agent::hooks::{HookAction, HookDecision, HookEvent, HookOutcome, HookPayload};
use pi_core::agent::{Effect, Input, StreamEvent, ToolOutcome};
use pi_core::agent_session::{SessionInput, SessionMachine, SessionStep};
use pi_core::compaction::CompactionSettings;
use pi_core::event::{AgentEvent, Event, SessionEvent, ToolResult};
use pi_core::message::{
    AgentMessage, AssistantMessage, ContentBlock, StopReason, TextContent, ToolCall,
};
use pi_core::message::{UserContent, UserMessage};
use pi_core::model::ThinkingLevel;
use pi_core::script::{mock_model, tool};
use serde_json::json;

#[path = "support/session.rs"]
mod support;

const NOTIFICATIONS: [HookEvent; 9] = [
    HookEvent::AgentStart,
    HookEvent::AgentEnd,
    HookEvent::TurnStart,
    HookEvent::MessageStart,
    HookEvent::MessageUpdate,
    HookEvent::MessageEnd,
    HookEvent::ToolExecutionStart,
    HookEvent::ToolExecutionUpdate,
    HookEvent::ToolExecutionEnd,
];

fn session(handled: &[HookEvent]) -> SessionMachine {
    let compaction = CompactionSettings::default();
    support::hooked(handled, vec![tool("echo", false)], &[], compaction)
}

/// The model's answers, in order: a call of `echo`, then text in two deltas.
fn answers() -> VecDeque<AssistantMessage> {
    let call = AssistantMessage {
        content: vec![ContentBlock::ToolCall(ToolCall {
            id: "c1".into(),
            name: "echo".into(),
            arguments: json!({"value": "one"}),
            ..Default::default()
        })],
        stop_reason: StopReason::ToolUse,
        ..AssistantMessage::default()
    };
    let text = AssistantMessage {
        content: vec![ContentBlock::text("It says one.")],
        stop_reason: StopReason::Stop,
        ..AssistantMessage::default()
    };
    VecDeque::from([call, text.clone(), text])
}

/// The stream of one answer: start, its text in two deltas (a call whole), done.
fn stream(message: &AssistantMessage) -> Vec<StreamEvent> {
    let mut events = vec![StreamEvent::Start {
        partial: AssistantMessage {
            content: vec![],
            ..message.clone()
        },
    }];
    if let Some(ContentBlock::Text(text)) = message.content.first() {
        let (a, b) = text.text.split_at(4);
        events.push(StreamEvent::TextStart {
            content_index: 0,
            block: TextContent::default(),
        });
        for delta in [a, b] {
            events.push(StreamEvent::TextDelta {
                content_index: 0,
                delta: delta.into(),
            });
        }
        events.push(StreamEvent::TextEnd {
            content_index: 0,
            content: text.text.clone(),
        });
    }
    events.push(StreamEvent::Done {
        reason: message.stop_reason,
        message: message.clone(),
    });
    events
}

/// What a run showed: the events in order, the effects other than hook points, and the hook
/// points asked (their events).
#[derive(Debug, Default)]
struct Seen {
    events: Vec<serde_json::Value>,
    effects: Vec<String>,
    asked: Vec<HookEvent>,
    /// Each request's messages.
    requests: Vec<serde_json::Value>,
}

/// Prompts "hi" and answers everything the session asks, in the order asked, until it is idle:
/// the model from [`answers`], `echo` with its value, each hook point with `Done` and what
/// `act` asks for it.
fn run(s: &mut SessionMachine, act: &mut dyn FnMut(&HookPayload) -> Vec<HookAction>) -> Seen {
    let seen = run_deciding(s, &mut |payload| (HookDecision::Done, act(&payload)));
    assert!(!s.is_busy(), "the session settles: {s:?}");
    seen
}

/// [`run`], each hook point answered with what `decide` says.
fn run_deciding(
    s: &mut SessionMachine,
    decide: &mut dyn FnMut(HookPayload) -> (HookDecision, Vec<HookAction>),
) -> Seen {
    let mut seen = Seen::default();
    let mut answers = answers();
    let mut inputs: VecDeque<SessionInput> = VecDeque::from([support::prompt("hi")]);
    let mut now = 1;
    while let Some(input) = inputs.pop_front() {
        // The handlers take no time: the clock reads as in a run without them.
        if !matches!(input, SessionInput::Answer(Input::HookDecided { .. })) {
            now += 1;
        }
        let step = s.step(now, input).unwrap();
        take(&mut seen, &step);
        for effect in step.effects {
            match effect {
                Effect::CallModel { call, request } => {
                    seen.requests
                        .push(serde_json::to_value(&*request.messages).unwrap());
                    let message = answers.pop_front().expect("an answer left");
                    inputs.extend(
                        stream(&message)
                            .into_iter()
                            .map(|event| SessionInput::Answer(Input::Model { call, event })),
                    );
                }
                Effect::RunTool { call, args, .. } => {
                    inputs.push_back(SessionInput::Answer(Input::ToolFinished {
                        call,
                        outcome: ToolOutcome::Ok(ToolResult {
                            content: vec![ContentBlock::text(args["value"].to_string())],
                            ..ToolResult::default()
                        }),
                    }))
                }
                Effect::Hook { call, payload, .. } => {
                    seen.asked.push(payload.event());
                    let (decision, actions) = decide(payload);
                    inputs.push_front(SessionInput::Answer(Input::HookDecided {
                        call,
                        outcome: HookOutcome {
                            decision,
                            actions,
                            errors: vec![],
                        },
                    }));
                }
                Effect::Cancel { .. } | Effect::AnswerNested { .. } => {}
            }
        }
    }
    seen
}

fn take(seen: &mut Seen, step: &SessionStep) {
    seen.events
        .extend(step.events.iter().map(|e| serde_json::to_value(e).unwrap()));
    seen.effects
        .extend(step.effects.iter().filter_map(|e| match e {
            Effect::CallModel { call, .. } => Some(format!("model {call}")),
            Effect::RunTool { call, tool, .. } => Some(format!("{tool} {call}")),
            Effect::Cancel { call } => Some(format!("cancel {call}")),
            Effect::Hook { .. } | Effect::AnswerNested { .. } => None,
        }));
}

#[test]
fn told_nothing_the_session_does_what_it_does_without_extensions() {
    let plain = run(&mut session(&[]), &mut |_| vec![]);
    assert!(plain.asked.is_empty());
    // The calls are numbered after the hook points asked before them: only their order counts.
    let kinds = |effects: &[String]| -> Vec<String> {
        effects
            .iter()
            .map(|e| e.split(' ').next().unwrap().to_owned())
            .collect()
    };
    // Every set of handled events.
    for mask in 0..(1u32 << NOTIFICATIONS.len()) {
        let handled: Vec<HookEvent> = (0..NOTIFICATIONS.len())
            .filter(|i| mask & (1 << i) != 0)
            .map(|i| NOTIFICATIONS[i])
            .collect();
        let told = run(&mut session(&handled), &mut |_| vec![]);
        assert_eq!(told.events, plain.events, "handled: {handled:?}");
        assert_eq!(
            kinds(&told.effects),
            kinds(&plain.effects),
            "handled: {handled:?}"
        );
        // Each event handled was asked once, in the order the events went out.
        let expected: Vec<HookEvent> = plain
            .events
            .iter()
            .filter_map(|e| {
                let name = e["type"].as_str().unwrap();
                handled.iter().copied().find(|h| h.name() == name)
            })
            .collect();
        assert_eq!(told.asked, expected, "handled: {handled:?}");
    }
}

#[test]
fn a_handled_event_and_what_followed_it_wait_for_the_handlers() {
    let mut s = session(&[HookEvent::MessageEnd]);
    let step = s.step(1, support::prompt("hi")).unwrap();
    // The user's message started; its end waits, and so does the request made after it.
    assert_eq!(
        support::kinds(&step),
        ["agent_start", "turn_start", "message_start"]
    );
    assert!(support::requests(&step).is_empty());
    let call = support::hook(&step);
    let Some(Effect::Hook { payload, state, .. }) = step.effects.first() else {
        panic!("a hook point: {:?}", step.effects)
    };
    assert!(matches!(payload, HookPayload::MessageEnd { .. }));
    assert!(state.is_some(), "its handlers' getters have the state");
    // Whatever comes meanwhile waits behind it.
    let steered = s
        .step(
            2,
            SessionInput::Steer {
                text: "also".into(),
                images: vec![],
            },
        )
        .unwrap();
    assert!(steered.effects.is_empty());
    assert!(s.is_busy());
    let step = s
        .step(
            3,
            SessionInput::Answer(Input::HookDecided {
                call,
                outcome: HookOutcome {
                    decision: HookDecision::Done,
                    actions: vec![HookAction::AppendEntry {
                        custom_type: "seen".into(),
                        data: None,
                    }],
                    errors: vec![],
                },
            }),
        )
        .unwrap();
    // The entry the handler wrote is announced before the event it handled.
    let first: Vec<&str> = step
        .events
        .iter()
        .take(2)
        .map(|e| match e {
            Event::Session(SessionEvent::EntryAppended { .. }) => "entry_appended",
            Event::Agent(AgentEvent::MessageEnd { .. }) => "message_end",
            _ => "other",
        })
        .collect();
    assert_eq!(first, ["entry_appended", "message_end"]);
    assert_eq!(
        support::requests(&step).len(),
        1,
        "the held request goes out"
    );
}

#[test]
fn an_abort_asked_at_a_tool_calls_message_end_cancels_the_call_after_its_start() {
    let mut asked_once = false;
    let told = run(
        &mut session(&[HookEvent::MessageEnd]),
        &mut |payload| match payload {
            HookPayload::MessageEnd {
                message: pi_core::message::AgentMessage::Assistant(_),
            } if !asked_once => {
                asked_once = true;
                vec![HookAction::Abort]
            }
            _ => vec![],
        },
    );
    let starts: Vec<usize> = told
        .effects
        .iter()
        .enumerate()
        .filter(|(_, e)| e.starts_with("echo") || e.starts_with("cancel"))
        .map(|(i, _)| i)
        .collect();
    let order: Vec<&str> = starts
        .iter()
        .map(|i| told.effects[*i].split(' ').next().unwrap())
        .collect();
    assert_eq!(order, ["echo", "cancel"], "{:?}", told.effects);
    let settled = told
        .events
        .iter()
        .find(|e| e["type"] == "agent_settled")
        .unwrap();
    assert_eq!(settled["aborted"], true);
}

#[test]
fn a_follow_up_an_agent_end_handler_queues_continues_the_run() {
    let mut ends = 0;
    let told = run(&mut session(&[HookEvent::AgentEnd]), &mut |payload| {
        if !matches!(payload, HookPayload::AgentEnd { .. }) {
            return vec![];
        }
        ends += 1;
        match ends {
            1 => vec![HookAction::SendUserMessage {
                content: UserContent::Text("and again".into()),
                deliver_as: Some("followUp".into()),
                expand_prompt_templates: None,
            }],
            _ => vec![],
        }
    });
    let types: Vec<&str> = told
        .events
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    let ends_at: Vec<usize> = (0..types.len())
        .filter(|i| types[*i] == "agent_end")
        .collect();
    assert_eq!(ends_at.len(), 2, "{types:?}");
    // The follow-up starts a run of its own before the session settles, once.
    assert_eq!(types.iter().filter(|t| **t == "agent_settled").count(), 1);
    assert_eq!(types[ends_at[0] + 1], "agent_start");
    let user = told.events[ends_at[0]..]
        .iter()
        .find(|e| e["type"] == "message_start" && e["message"]["role"] == "user")
        .unwrap();
    let expected = UserMessage::from_text("and again".to_owned(), vec![], 0);
    assert_eq!(user["message"]["content"], json!(expected.content));
}

#[test]
fn a_message_the_message_end_handlers_replace_is_written_and_sent_as_replaced() {
    let told = run(&mut session(&[HookEvent::MessageEnd]), &mut |_| vec![]);
    let mut s = session(&[HookEvent::MessageEnd]);
    let replaced = run_deciding(&mut s, &mut |payload| match payload {
        HookPayload::MessageEnd {
            message: AgentMessage::ToolResult(mut result),
        } => {
            for block in &mut result.content {
                if let ContentBlock::Text(text) = block {
                    text.text = text.text.to_uppercase();
                }
            }
            let message = AgentMessage::ToolResult(result);
            (HookDecision::MessageEnd { message }, vec![])
        }
        _ => (HookDecision::Done, vec![]),
    });
    // The tool result's text, upper-cased by the handler, is what the session wrote, what
    // `message_end` showed, and what the next request sent.
    let ends: Vec<&serde_json::Value> = replaced
        .events
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "toolResult")
        .collect();
    assert_eq!(ends[0]["message"]["content"][0]["text"], "\"ONE\"");
    let written = s
        .tree()
        .entries()
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .find(|e| e["message"]["role"] == "toolResult")
        .unwrap();
    assert_eq!(written["message"]["content"][0]["text"], "\"ONE\"");
    let sent = serde_json::to_string(&replaced.requests[1]).unwrap();
    assert!(
        sent.contains("\\\"ONE\\\"") && !sent.contains("\\\"one\\\""),
        "{sent}"
    );
    // Nothing else changed.
    assert_eq!(replaced.events.len(), told.events.len());
}

#[test]
fn an_abort_while_the_handlers_are_heard_cancels_the_running_call_at_once() {
    let mut s = session(&[HookEvent::MessageUpdate]);
    let step = s.step(1, support::prompt("hi")).unwrap();
    let (call, _) = support::requests(&step)[0];
    let message = answers().pop_front().map(|_| AssistantMessage {
        content: vec![ContentBlock::text("It says one.")],
        ..AssistantMessage::default()
    });
    let mut events = stream(&message.unwrap()).into_iter();
    s.step(
        2,
        SessionInput::Answer(Input::Model {
            call,
            event: events.next().unwrap(),
        }),
    )
    .unwrap();
    let step = s
        .step(
            3,
            SessionInput::Answer(Input::Model {
                call,
                event: events.next().unwrap(),
            }),
        )
        .unwrap();
    assert!(matches!(
        step.effects.as_slice(),
        [Effect::Hook {
            payload: HookPayload::MessageUpdate { .. },
            ..
        }]
    ));
    // The update's handlers have not answered: the abort does not wait for them.
    let step = s.step(4, SessionInput::Abort).unwrap();
    assert!(
        step.effects
            .iter()
            .any(|e| matches!(e, Effect::Cancel { call: c } if *c == call)),
        "{:?}",
        step.effects
    );
}

#[test]
fn what_the_loop_does_after_a_model_change_waits_for_its_model_select_handlers() {
    let mut s = session(&[HookEvent::TurnEnd, HookEvent::ModelSelect]);
    let reasoner = pi_core::model::Model {
        id: "mock-reasoner".into(),
        reasoning: true,
        ..mock_model()
    };
    let mut selected = Vec::new();
    let mut turns = 0;
    let seen = run_deciding(&mut s, &mut |payload| match payload {
        HookPayload::TurnEnd { .. } => {
            turns += 1;
            let actions = match turns {
                1 => vec![HookAction::SetModel {
                    model: Box::new(reasoner.clone()),
                }],
                _ => vec![],
            };
            (HookDecision::Done, actions)
        }
        HookPayload::ModelSelect {
            model,
            previous_model,
            source,
        } => {
            selected.push((model.id, previous_model.map(|m| m.id), source));
            let entry = HookAction::AppendEntry {
                custom_type: "model".into(),
                data: None,
            };
            (HookDecision::Done, vec![entry])
        }
        _ => (HookDecision::Done, vec![]),
    });
    assert_eq!(
        selected,
        [(
            "mock-reasoner".to_owned(),
            Some(mock_model().id),
            "set".to_owned()
        )]
    );
    // As Pi's `setModel` awaits the handlers within the `turn_end` handler: their entry comes
    // before the turn's end goes out, and the next request goes to the new model.
    let types: Vec<&str> = seen
        .events
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    let entry = types.iter().position(|t| *t == "entry_appended").unwrap();
    let turn_end = types.iter().position(|t| *t == "turn_end").unwrap();
    assert!(entry < turn_end, "{types:?}");
    assert_eq!(
        seen.effects
            .iter()
            .filter(|e| e.starts_with("model"))
            .count(),
        2
    );
}

#[test]
fn the_sessions_notifications_are_asked_one_after_the_other_in_the_order_told() {
    let mut s = session(&[HookEvent::ThinkingLevelSelect, HookEvent::ModelSelect]);
    let reasoner = pi_core::model::Model {
        id: "mock-reasoner".into(),
        reasoning: true,
        ..mock_model()
    };
    // The level changes with the model (the reasoner's default): both are told, the level first.
    let step = s
        .step(
            1,
            SessionInput::SetScopedModel(reasoner, ThinkingLevel::High),
        )
        .unwrap();
    let asked = |step: &SessionStep| -> Vec<(pi_core::agent::CallId, HookEvent)> {
        support::hooks(step)
            .into_iter()
            .map(|(call, payload)| (call, payload.event()))
            .collect()
    };
    let first = asked(&step);
    assert_eq!(
        first.iter().map(|(_, e)| *e).collect::<Vec<_>>(),
        [HookEvent::ThinkingLevelSelect]
    );
    assert!(s.is_busy());
    let step = s.step(2, support::done(first[0].0)).unwrap();
    let second = asked(&step);
    assert_eq!(
        second.iter().map(|(_, e)| *e).collect::<Vec<_>>(),
        [HookEvent::ModelSelect]
    );
    s.step(3, support::done(second[0].0)).unwrap();
    assert!(!s.is_busy());
}

#[test]
fn a_prompt_while_model_select_handlers_run_is_no_busy_prompt_and_its_run_waits_for_them() {
    let mut s = session(&[HookEvent::ModelSelect]);
    let reasoner = pi_core::model::Model {
        id: "mock-reasoner".into(),
        ..mock_model()
    };
    let step = s.step(1, SessionInput::SetModel(reasoner)).unwrap();
    let told = support::hook(&step);
    assert!(s.hearing_session());
    // In Pi the session does not stream while an RPC `set_model` awaits its handlers: a prompt
    // sent meanwhile (no streaming behaviour) starts a run rather than being refused.
    let step = s.step(2, support::prompt("hi")).unwrap();
    assert!(support::requests(&step).is_empty(), "{:?}", step.effects);
    assert!(step.events.is_empty(), "{:?}", step.events);
    let step = s.step(3, support::done(told)).unwrap();
    assert!(!s.hearing_session());
    let requests = support::requests(&step);
    assert_eq!(requests.len(), 1, "{:?}", step.effects);
    assert_eq!(requests[0].1.model.id, "mock-reasoner");
    assert!(step
        .events
        .iter()
        .any(|e| matches!(e, Event::Agent(AgentEvent::AgentStart))));
}

#[test]
fn the_turn_end_after_replaced_messages_carries_the_replacements() {
    let mut s = session(&[HookEvent::MessageEnd, HookEvent::TurnEnd]);
    let upper = |blocks: &mut Vec<ContentBlock>| {
        for block in blocks {
            if let ContentBlock::Text(text) = block {
                text.text = text.text.to_uppercase();
            }
        }
    };
    let mut turn_ends = Vec::new();
    let seen = run_deciding(&mut s, &mut |payload| match payload {
        HookPayload::MessageEnd {
            message: AgentMessage::ToolResult(mut result),
        } => {
            upper(&mut result.content);
            let message = AgentMessage::ToolResult(result);
            (HookDecision::MessageEnd { message }, vec![])
        }
        HookPayload::MessageEnd {
            message: AgentMessage::Assistant(mut answer),
        } => {
            upper(&mut answer.content);
            let message = AgentMessage::Assistant(answer);
            (HookDecision::MessageEnd { message }, vec![])
        }
        HookPayload::TurnEnd {
            message,
            tool_results,
            ..
        } => {
            turn_ends.push(serde_json::to_value((message, tool_results)).unwrap());
            (HookDecision::Done, vec![])
        }
        _ => (HookDecision::Done, vec![]),
    });
    // Pi replaces a message in place: the turn's end (its hook point and its event) carries
    // the replaced tool result of a turn whose results came later, and the replaced answer
    // of a turn that ended in the same step as its message.
    assert_eq!(turn_ends[0][1][0]["content"][0]["text"], "\"ONE\"");
    assert_eq!(turn_ends[1][0]["content"][0]["text"], "IT SAYS ONE.");
    let printed: Vec<&serde_json::Value> = seen
        .events
        .iter()
        .filter(|e| e["type"] == "turn_end")
        .collect();
    assert_eq!(
        printed[0]["toolResults"][0]["content"][0]["text"],
        "\"ONE\""
    );
    assert_eq!(printed[1]["message"]["content"][0]["text"], "IT SAYS ONE.");
}

/// A manual compaction asked once the run has ended, while the `message_update` handlers still
/// hear its response: Pi's `compact()` waits for the session to be idle, so the run's last
/// events (held for the handlers) go out first and are the session's (the answer written), and
/// the compaction starts after them. (Found by a chaos run over an SDK recording whose
/// extension handles `message_update`: the compaction started between them.)
#[test]
fn a_compaction_asked_while_handlers_hear_an_ended_run_starts_after_its_events() {
    let mut s = session(&[HookEvent::MessageUpdate]);
    let step = s.step(1, support::prompt("hi")).unwrap();
    let (call, _) = support::requests(&step)[0];
    let message = AssistantMessage {
        content: vec![ContentBlock::text("It says one.")],
        stop_reason: StopReason::Stop,
        ..AssistantMessage::default()
    };
    let mut seen = Seen::default();
    let mut hooks = VecDeque::new();
    let mut now = 1;
    for event in stream(&message) {
        now += 1;
        let step = s
            .step(now, SessionInput::Answer(Input::Model { call, event }))
            .unwrap();
        take(&mut seen, &step);
        hooks.extend(step.effects.into_iter().filter_map(|e| match e {
            Effect::Hook { call, .. } => Some(call),
            _ => None,
        }));
    }
    assert!(!s.agent().is_streaming(), "the agent's run is over");
    assert_eq!(hooks.len(), 1, "the first update's handlers are heard");
    now += 1;
    let step = s
        .step(
            now,
            SessionInput::Compact {
                custom_instructions: None,
            },
        )
        .unwrap();
    take(&mut seen, &step);
    while let Some(call) = hooks.pop_front() {
        now += 1;
        let step = s
            .step(
                now,
                SessionInput::Answer(Input::HookDecided {
                    call,
                    outcome: HookOutcome {
                        decision: HookDecision::Done,
                        actions: vec![],
                        errors: vec![],
                    },
                }),
            )
            .unwrap();
        take(&mut seen, &step);
        hooks.extend(step.effects.into_iter().filter_map(|e| match e {
            Effect::Hook { call, .. } => Some(call),
            _ => None,
        }));
    }
    let kinds: Vec<&str> = seen
        .events
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .filter(|kind| *kind != "message_update")
        .collect();
    let at = |kind: &str| kinds.iter().position(|k| *k == kind).unwrap_or(usize::MAX);
    assert!(
        at("agent_end") < at("compaction_start"),
        "the run's events before the compaction: {kinds:?}"
    );
    assert_eq!(
        kinds,
        [
            "message_start",
            "message_end",
            "turn_end",
            "agent_end",
            "compaction_start",
            "compaction_end",
            "agent_settled"
        ]
    );
    let written = s
        .tree()
        .context()
        .into_messages()
        .iter()
        .any(|m| matches!(m, AgentMessage::Assistant(a) if a.content == message.content));
    assert!(written, "the answer is the session's");
}
