//! `pi.registerProvider`/`pi.unregisterProvider` after loading as a hook point's actions
//! (`HookAction::RegisterProvider`/`UnregisterProvider`, the provider's models as the front
//! end's registry composed them): the session refreshes its model from them as Pi 1.5.2's
//! `_refreshCurrentModelFromRegistry` does (replaced when the registry's object for the same
//! provider and id differs; no entry, no event), keeps them for the front ends' model lists, and
//! never records the registration's config.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::hooks::{HookAction, HookEvent};
use pi_core::agent_session::{ProviderChange, SessionMachine};
use pi_core::model::{Model, ThinkingLevel};
use pi_core::script::mock_model;
use serde_json::json;

#[path = "support/session.rs"]
mod support;
use support::requests;

#[path = "support/actions.rs"]
mod actions;
use actions::{prompt, reasoner, started};

fn session() -> SessionMachine {
    support::acting(
        reasoner(),
        ThinkingLevel::High,
        [HookEvent::BeforeAgentStart],
    )
}

fn registered(models: Vec<Model>) -> HookAction {
    HookAction::RegisterProvider {
        name: reasoner().provider,
        registration: Some(json!({"config": {"apiKey": "a-key-never-written"}})),
        models,
        available: true,
        keep_model: false,
    }
}

fn entries(s: &SessionMachine) -> usize {
    s.tree().entries().len()
}

#[test]
fn a_registration_again_refreshes_the_model_in_force_without_an_entry() {
    let mut s = session();
    let renamed = Model {
        name: "Renamed Reasoner".into(),
        ..reasoner()
    };
    let call = prompt(&mut s);
    let before = entries(&s);
    let step = s
        .step(2, started(call, vec![registered(vec![renamed.clone()])]))
        .unwrap();
    let (_, request) = requests(&step).remove(0);
    assert_eq!(
        request.model, renamed,
        "the request goes with the refreshed model"
    );
    assert_eq!(s.agent().model(), &renamed);
    assert!(
        !s.tree()
            .entries()
            .iter()
            .skip(before)
            .any(|e| e.kind() == "model_change" || e.kind() == "thinking_level_change"),
        "a refresh writes no entry"
    );
    assert_eq!(
        s.provider_changes(),
        [ProviderChange {
            name: reasoner().provider,
            models: vec![renamed],
            available: true,
        }]
    );
}

#[test]
fn a_registration_through_the_registry_keeps_the_model_in_force_as_it_was() {
    let mut s = session();
    let renamed = Model {
        name: "Renamed Reasoner".into(),
        ..reasoner()
    };
    let call = prompt(&mut s);
    let through_registry = HookAction::RegisterProvider {
        name: reasoner().provider,
        registration: None,
        models: vec![renamed.clone()],
        available: true,
        keep_model: true,
    };
    let step = s.step(2, started(call, vec![through_registry])).unwrap();
    let (_, request) = requests(&step).remove(0);
    assert_eq!(
        request.model,
        reasoner(),
        "ctx.modelRegistry refreshes nothing"
    );
    assert_eq!(s.provider_changes()[0].models, vec![renamed]);
}

#[test]
fn an_unregistration_leaves_the_model_in_force_and_drops_the_provider_from_the_lists() {
    let mut s = session();
    let call = prompt(&mut s);
    let gone = HookAction::UnregisterProvider {
        name: reasoner().provider,
        models: vec![],
        available: false,
        keep_model: false,
    };
    let step = s.step(2, started(call, vec![gone])).unwrap();
    let (_, request) = requests(&step).remove(0);
    assert_eq!(request.model, reasoner(), "Pi keeps the model it holds");
    let other = Model {
        provider: "other".into(),
        ..mock_model()
    };
    let mut listed = vec![reasoner(), other.clone()];
    for change in s.provider_changes() {
        change.apply(&mut listed);
    }
    assert_eq!(listed, vec![other]);
}

#[test]
fn a_change_puts_the_providers_models_in_place_and_a_new_provider_last() {
    let other = Model {
        provider: "other".into(),
        ..mock_model()
    };
    let mut listed = vec![reasoner(), other.clone()];
    let moved = Model {
        base_url: "http://elsewhere/v1".into(),
        ..reasoner()
    };
    ProviderChange {
        name: reasoner().provider,
        models: vec![moved.clone()],
        available: true,
    }
    .apply(&mut listed);
    assert_eq!(listed, vec![moved.clone(), other.clone()]);
    let new = Model {
        provider: "gateway".into(),
        ..mock_model()
    };
    ProviderChange {
        name: "gateway".into(),
        models: vec![new.clone()],
        available: true,
    }
    .apply(&mut listed);
    assert_eq!(listed, vec![moved, other, new]);
}

#[test]
fn the_recorded_action_holds_the_models_never_the_config() {
    let action = registered(vec![reasoner()]);
    let recorded = serde_json::to_value(&action).unwrap();
    assert_eq!(recorded["action"], "registerProvider");
    assert_eq!(recorded["models"][0]["id"], "mock-reasoner");
    assert!(recorded.get("registration").is_none(), "{recorded}");
    assert!(!recorded.to_string().contains("a-key-never-written"));
    let read: HookAction = serde_json::from_value(recorded).unwrap();
    assert!(matches!(
        read,
        HookAction::RegisterProvider { registration: None, ref models, available: true, .. } if models == &vec![reasoner()]
    ));
}
