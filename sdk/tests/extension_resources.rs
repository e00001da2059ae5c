//! A Rust extension's `resources_discover` names a skill folder of its own: once the extensions
//! are bound, `/skill:` expands its skill and the system prompt lists it, and a replaced
//! session hears the event again and keeps it, against the kit's mock LLM over real HTTP.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use common::builder;
use pi_sdk::{
    HandledHooks, HandlerResult, HookContext, HookEvent, HookFuture, HookPayload, RustExtension,
};
use pi_testkit::MockLlm;
use serde_json::json;

/// Names `skills` as its skill folder, and writes down each reason it was asked for.
struct SkillFolder {
    skills: PathBuf,
    reasons: Arc<Mutex<Vec<String>>>,
}

impl RustExtension for SkillFolder {
    fn name(&self) -> &str {
        "skill-folder"
    }

    fn handles(&self) -> HandledHooks {
        HandledHooks::of([HookEvent::ResourcesDiscover])
    }

    fn handle<'a>(&'a self, payload: &'a HookPayload, _cx: &'a HookContext) -> HookFuture<'a> {
        let result = match payload {
            HookPayload::ResourcesDiscover { reason, .. } => {
                self.reasons.lock().unwrap().push(reason.clone());
                Some(HandlerResult::ResourcesDiscover {
                    skill_paths: vec![self.skills.to_string_lossy().into_owned()],
                    prompt_paths: Vec::new(),
                    theme_paths: Vec::new(),
                })
            }
            _ => None,
        };
        Box::pin(async move { Ok(result) })
    }
}

#[tokio::test]
async fn a_rust_extensions_discovered_skill_expands_and_outlives_a_new_session() {
    let mock = MockLlm::start(&json!([{"text": "Deployed."}, {"text": "Again."}]));
    let workspace = tempfile::tempdir().unwrap();
    let skills = workspace.path().join("ext-skills");
    std::fs::create_dir_all(skills.join("deploy")).unwrap();
    std::fs::write(
        skills.join("deploy/SKILL.md"),
        "---\nname: deploy\ndescription: Deploys the thing.\n---\nDeploy body.\n",
    )
    .unwrap();
    let reasons = Arc::new(Mutex::new(Vec::new()));
    let session = builder(&mock, workspace.path())
        .session_dir(workspace.path().join("sessions"))
        .extension(SkillFolder {
            skills,
            reasons: Arc::clone(&reasons),
        })
        .build()
        .unwrap();
    session.bind_extensions().await.unwrap();
    session.prompt("/skill:deploy now").await.unwrap();
    let first = mock.requests().last().unwrap().to_string();
    assert!(first.contains("Deploy body."), "{first}");
    assert!(first.contains("Deploys the thing."), "{first}");

    session.new_session(None).await.unwrap();
    session.bind_extensions().await.unwrap();
    session.prompt("/skill:deploy again").await.unwrap();
    let second = mock.requests().last().unwrap().to_string();
    assert!(second.contains("Deploy body."), "{second}");
    assert_eq!(*reasons.lock().unwrap(), ["startup", "startup"]);
    session.finish().await.unwrap();
}
