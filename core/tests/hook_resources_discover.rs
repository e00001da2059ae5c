//! `resources_discover` as Pi 1.5.2's `extendResourcesFromExtensions` applies it: told right
//! after `session_start` (and told even when no extension handles `session_start`), its
//! decision's skills and templates join the session's after its own (the first of a name still
//! wins), `/skill:` and templates expand with them, the handlers' actions are applied, and the
//! system prompt the first turn declares lists the new skills.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use pi_core::agent::convert::CodingAgentHooks;
use pi_core::agent::hooks::{
    DiscoveredResources, HandledHooks, HookAction, HookDecision, HookEvent, HookPayload,
};
use pi_core::agent::{AgentConfig, Effect, ModelRequest};
use pi_core::agent_session::{SessionInput, SessionMachine, ToolLoadout};
use pi_core::resources::skills::{load_skill, LoadedSkill};
use pi_core::resources::templates::load_template;
use pi_core::resources::Resources;
use pi_core::script::mock_model;
use pi_core::session::entry::SessionEntry;
use pi_core::system_prompt::{build_system_prompt_sections, SystemPromptInputs};
use pi_core::tools::definitions::builtin_tool;
use serde_json::{json, Value};

#[path = "support/session.rs"]
mod support;

fn skill(path: &str, name: &str, description: &str, body: &str) -> LoadedSkill {
    let text = format!("---\nname: {name}\ndescription: {description}\n---\n{body}\n");
    load_skill(path, &text).0.unwrap()
}

/// A session with the user's `shared` skill, whose extensions handle `handled`, its prompt
/// built from inputs a loadout keeps.
fn session(handled: &[HookEvent]) -> SessionMachine {
    let own = Resources {
        skills: vec![skill(
            "/agent/skills/shared/SKILL.md",
            "shared",
            "The user's own.",
            "User body.",
        )],
        ..Resources::default()
    };
    let inputs = SystemPromptInputs {
        cwd: "/work".into(),
        skills: own.prompt_skills(),
        ..SystemPromptInputs::default()
    }
    .with_builtin_tools(&["read", "bash"]);
    let mut machine = support::machine(
        AgentConfig {
            model: mock_model(),
            tools: ["read", "bash"]
                .iter()
                .map(|n| builtin_tool(n).unwrap().spec())
                .collect(),
            system_sections: Some(build_system_prompt_sections(&inputs).unwrap()),
            handled_hooks: HandledHooks::of(handled.iter().copied()),
            hooks: Arc::new(CodingAgentHooks::default()),
            ..AgentConfig::default()
        },
        own,
    );
    machine.set_tool_loadout(Some(ToolLoadout {
        prompt: inputs,
        ..ToolLoadout::default()
    }));
    machine
}

/// What the extension's paths held: another `shared` skill, `deploy`, and the `review`
/// template.
fn discovered() -> DiscoveredResources {
    DiscoveredResources {
        skills: vec![
            skill(
                "/ext/skills/shared/SKILL.md",
                "shared",
                "Shadowed.",
                "Ext body.",
            ),
            skill(
                "/ext/skills/deploy/SKILL.md",
                "deploy",
                "Deploys it.",
                "Deploy body.",
            ),
        ],
        templates: vec![load_template(
            "/ext/prompts/review.md",
            "---\ndescription: Reviews a file\n---\nReview $1 carefully.\n",
        )
        .unwrap()],
        ..DiscoveredResources::default()
    }
}

/// The text of the request's last message (the prompt as sent).
fn last_text(request: &ModelRequest) -> String {
    let last = serde_json::to_value(request.messages.last().unwrap()).unwrap();
    match &last["content"] {
        Value::String(text) => text.clone(),
        blocks => blocks[0]["text"].as_str().unwrap().to_owned(),
    }
}

#[test]
fn the_start_asks_for_resources_after_session_start_and_adds_them_after_the_sessions_own() {
    let mut s = session(&[HookEvent::SessionStart, HookEvent::ResourcesDiscover]);
    assert!(s.hears_start());
    let step = s.step(1, SessionInput::Start).unwrap();
    let hooks = support::hooks(&step);
    assert_eq!(hooks.len(), 1, "session_start alone first: {hooks:?}");
    assert!(matches!(hooks[0].1, HookPayload::SessionStart { .. }));
    let step = s.step(2, support::done(hooks[0].0)).unwrap();
    let hooks = support::hooks(&step);
    assert_eq!(
        hooks.iter().map(|h| &h.1).collect::<Vec<_>>(),
        [&HookPayload::ResourcesDiscover {
            cwd: "/work".into(),
            reason: "startup".into()
        }]
    );
    let appended = HookAction::AppendEntry {
        custom_type: "discovered".into(),
        data: Some(json!({"reason": "startup"})),
    };
    s.step(
        3,
        support::decided_as(
            hooks[0].0,
            HookDecision::ResourcesDiscover(Box::new(discovered())),
            vec![appended],
        ),
    )
    .unwrap();

    let names: Vec<(&str, &str)> = (s.resources().skills.iter())
        .map(|k| (k.skill.name.as_str(), k.skill.description.as_str()))
        .collect();
    assert_eq!(
        names,
        [("shared", "The user's own."), ("deploy", "Deploys it.")]
    );
    assert_eq!(s.resources().templates[0].name, "review");
    assert!(s.tree().entries().iter().any(|e| matches!(
        e, SessionEntry::Custom(c) if c.custom_type == "discovered")));

    let step = s.step(4, support::prompt("/review a.txt")).unwrap();
    let (_, request) = support::requests(&step).remove(0);
    assert_eq!(last_text(&request), "Review a.txt carefully.");
    assert!(
        request.system_prompt.contains("<name>deploy</name>"),
        "{}",
        request.system_prompt
    );
    assert!(request.system_prompt.contains("The user&apos;s own."));
    assert!(!request.system_prompt.contains("Shadowed."));
}

#[test]
fn an_extension_handling_resources_discover_alone_still_hears_the_start() {
    let mut s = session(&[HookEvent::ResourcesDiscover]);
    assert!(s.hears_start());
    let step = s.step(1, SessionInput::Start).unwrap();
    let hooks = support::hooks(&step);
    assert!(
        matches!(hooks[..], [(_, HookPayload::ResourcesDiscover { .. })]),
        "{hooks:?}"
    );
    s.step(
        2,
        support::decided_as(
            hooks[0].0,
            HookDecision::ResourcesDiscover(Box::new(discovered())),
            vec![],
        ),
    )
    .unwrap();
    let step = s.step(3, support::prompt("/skill:deploy now")).unwrap();
    let (_, request) = support::requests(&step).remove(0);
    let text = last_text(&request);
    assert!(
        text.contains("Deploy body.") && text.ends_with("now"),
        "{text}"
    );
}

#[test]
fn without_a_handler_the_start_asks_nothing() {
    let mut s = session(&[HookEvent::SessionStart]);
    let step = s.step(1, SessionInput::Start).unwrap();
    let call = support::hook(&step);
    let step = s.step(2, support::done(call)).unwrap();
    assert!(!step
        .effects
        .iter()
        .any(|e| matches!(e, Effect::Hook { .. })));
    assert!(!session(&[]).hears_start());
}
