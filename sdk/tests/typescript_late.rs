//! A session the SDK replaces (`new_session`) is built as Pi 1.5.2's runtime builds it, with
//! the settings read again: in a session that started with no extension, one the settings
//! name since is loaded for the new session (as the binary's replacement loads it, conformance
//! case `replace_loads_from_none`), hears its start once bound, and its tool is declared in the
//! next request, Pi's codemode (registered inactive by the host's built-in extension) not. The
//! recording replays event for event with no Node on PATH.
//!
//! This needs Node and Pi 1.5.2's install (`PI_EXTENSION_HOST_PI_DIR`, its Node in `node/bin`);
//! without them it is skipped with a line, unless `PI_REQUIRE_EXTENSIONS=1` (CI) makes that a
//! failure.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use common::{builder, drain, lines};
use pi_sdk::SessionBuilder;
use pi_testkit::MockLlm;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_session_loads_the_extensions_the_settings_name_since() {
    let Some(scratch) = common::NodeScratch::new() else {
        return;
    };
    let (dir, workspace) = (&scratch.dir, scratch.workspace.clone());
    let case = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/replace_loads_from_none/extension.ts");
    let added = workspace.join("added.ts");
    std::fs::copy(&case, &added).unwrap();
    let settings = workspace.join(".agent/settings.json");
    std::fs::write(&settings, "{}").unwrap();
    let cassette = dir.path().join("late.cassette.jsonl");
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}, {"text": ["Again."]}]));
    let session = builder(&mock, &workspace)
        .discover_extensions(false)
        .session_dir(dir.path().join("sessions"))
        .record(&cassette)
        .build()
        .unwrap();
    let mut events = session.subscribe();
    session.prompt("Hi").await.unwrap();
    std::fs::write(&settings, json!({ "extensions": [added] }).to_string()).unwrap();
    session.new_session(None).await.unwrap();
    session.bind_extensions().await.unwrap();
    session.prompt("Again").await.unwrap();
    session.finish().await.unwrap();
    let recorded = drain(&mut events);

    assert_eq!(
        mock.declared_tools(),
        [
            vec!["read", "bash", "edit", "write"],
            vec!["read", "bash", "edit", "write", "added_probe"]
        ]
    );
    let started: Vec<&Value> = recorded
        .iter()
        .filter(|e| e["type"] == "entry_appended")
        .map(|e| &e["entry"])
        .collect();
    assert_eq!(started.len(), 1, "{recorded:#?}");
    assert_eq!(started[0]["customType"], "added-started");
    assert_eq!(started[0]["data"]["reason"], "new");

    // No Node, no extension: the new session and its handlers' decisions come from the
    // cassette.
    std::fs::remove_file(&added).unwrap();
    std::env::set_var("PATH", dir.path().join("bare-path"));
    let replayed = SessionBuilder::new(&workspace)
        .replay(&cassette)
        .build()
        .unwrap();
    let mut again = replayed.subscribe();
    replayed.prompt("Hi").await.unwrap();
    replayed.new_session(None).await.unwrap();
    replayed.bind_extensions().await.unwrap();
    replayed.prompt("Again").await.unwrap();
    replayed.finish().await.unwrap();
    assert_eq!(lines(&drain(&mut again)), lines(&recorded));
}
