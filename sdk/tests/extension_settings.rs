//! A TypeScript extension in an SDK session reads the settings through `pi.getSettings()`, as
//! in Pi's SDK (whose settings manager answers the merged settings): its tool hands them to
//! the model. A key kept there (an extension's `apiKey`) reaches no cassette, and the
//! recording checks as reproduced with no Node on PATH.
//!
//! This needs Node and Pi 1.5.2's install (`PI_EXTENSION_HOST_PI_DIR`, its Node in `node/bin`);
//! without them it is skipped with a line, unless `PI_REQUIRE_EXTENSIONS=1` (CI) makes that a
//! failure.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use common::{builder, prompt_once};
use pi_testkit::MockLlm;
use serde_json::json;

const PLANTED: &str = "sdk-settings-planted-apikey-0123456789";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_settings_reach_the_extensions_and_their_keys_no_cassette() {
    let Some(scratch) = common::NodeScratch::new() else {
        return;
    };
    let (dir, workspace) = (&scratch.dir, scratch.workspace.clone());
    std::fs::write(
        workspace.join(".agent/settings.json"),
        json!({"myGateway": {"apiKey": PLANTED, "region": "eu-west"}}).to_string(),
    )
    .unwrap();
    // The binary's tests' extension: its `settings` tool answers `pi.getSettings()` whole.
    let extension =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/tests/extensions/settings_echo.ts");
    let cassette = dir.path().join("settings.cassette.jsonl");
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"id": "call_settings", "name": "settings", "arguments": {}}]},
        {"text": ["Read them."]}
    ]));
    let events = prompt_once(
        builder(&mock, &workspace)
            .typescript_extensions([&extension])
            .record(&cassette),
        "What are the settings?",
    )
    .await;
    let end = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .expect("the tool ran");
    let answered = end["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        answered.contains("eu-west"),
        "the extension saw no settings: {answered}"
    );
    assert!(answered.contains(PLANTED), "{answered}");

    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(!text.contains(PLANTED), "the cassette holds the key");
    assert!(text.contains("eu-west"), "the settings were scrubbed whole");

    let (code, said) = common::pi_check_with(
        &cassette,
        &[
            ("PATH", dir.path().join("bare-path").as_path()),
            ("HOME", dir.path().join("home").as_path()),
        ],
    );
    assert_eq!(code, Some(0), "{said}");
}
