//! A declared tool whose `prepareLoadout` runs outside the machine (Pi 1.5.2's codemode, in
//! the extension host): before a run's first turn declares it, the loop waits at a
//! `prepare_loadout` hook point holding the declared tools, and the request carries the
//! descriptions the answer gave (the system message declaring them too: the conformance case
//! `codemode_script` shows it). The answer holds for
//! the same tools: a later run declaring them asks no more. Without a handler at that hook
//! point, or without such a tool, nothing is asked.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;

use pi_core::agent::custom_tool::CustomToolDefinition;
use pi_core::agent::hooks::{HookDecision, HookEvent, LoadoutChanges};
use pi_core::agent::ToolSpec;
use pi_core::agent_session::SessionMachine;
use pi_core::compaction::CompactionSettings;
use serde_json::json;

#[path = "support/session.rs"]
mod support;

fn tools(prepares: bool) -> Vec<ToolSpec> {
    let scripted = CustomToolDefinition {
        prepare_loadout: prepares,
        ..CustomToolDefinition::new("scripted", "Runs scripts.", json!({"type": "object"}))
    };
    let greet = CustomToolDefinition::new("greet", "Greets.", json!({"type": "object"}));
    vec![scripted.spec(), greet.spec()]
}

fn session(handled: &[HookEvent], prepares: bool) -> SessionMachine {
    support::hooked(handled, tools(prepares), &[], CompactionSettings::default())
}

fn described(greet: &str) -> HookDecision {
    HookDecision::PrepareLoadout(LoadoutChanges {
        descriptions: BTreeMap::from([("greet".to_owned(), greet.to_owned())]),
        hidden_declarations: vec![],
    })
}

fn greet_description(step: &pi_core::agent_session::SessionStep) -> String {
    let (_, request) = support::requests(step).remove(0);
    request
        .tools
        .iter()
        .find(|t| t.name == "greet")
        .map(|t| t.description.clone())
        .unwrap()
}

#[test]
fn a_run_waits_for_the_loadout_and_declares_what_it_gave_once_per_loadout() {
    let mut s = session(&[HookEvent::PrepareLoadout], true);
    let step = s.step(1, support::prompt("go")).unwrap();
    let hooks = support::hooks(&step);
    assert_eq!(hooks.len(), 1, "{hooks:?}");
    let (call, payload) = &hooks[0];
    assert_eq!(
        serde_json::to_value(payload).unwrap(),
        json!({"type": "prepare_loadout", "declared": ["scripted", "greet"], "registered": []})
    );
    assert!(
        support::requests(&step).is_empty(),
        "nothing is asked before it"
    );
    assert!(
        !support::kinds(&step).contains(&"agent_start".to_owned()),
        "the run starts once its loadout is known"
    );

    let step = s
        .step(
            2,
            support::decided_as(*call, described("Greets from scripts."), vec![]),
        )
        .unwrap();
    assert_eq!(greet_description(&step), "Greets from scripts.");
    let (model_call, _) = support::requests(&step).remove(0);
    s.step(3, support::answered(model_call, "Done.")).unwrap();
    // The same tools: the next run asks nothing and declares what the answer gave.
    let step = s.step(4, support::prompt("again")).unwrap();
    assert!(support::hooks(&step).is_empty(), "{:?}", step.effects);
    assert_eq!(greet_description(&step), "Greets from scripts.");
}

#[test]
fn nothing_is_asked_without_a_handler_or_without_a_tool_that_prepares_it() {
    for (handled, prepares) in [(vec![], true), (vec![HookEvent::PrepareLoadout], false)] {
        let mut s = session(&handled, prepares);
        let step = s.step(1, support::prompt("go")).unwrap();
        assert!(support::hooks(&step).is_empty(), "{:?}", step.effects);
        assert_eq!(greet_description(&step), "Greets.");
    }
}

#[test]
fn an_answer_to_no_question_is_refused() {
    let mut s = session(&[HookEvent::PrepareLoadout], true);
    let step = s.step(1, support::prompt("go")).unwrap();
    let (call, _) = support::hooks(&step).remove(0);
    let other = pi_core::agent::CallId(call.0 + 7);
    assert!(s
        .step(2, support::decided_as(other, described("x"), vec![]))
        .is_err());
}
