//! A TypeScript extension's command runs in an SDK session as in the binary (a file of its
//! own: the test sets the process's PATH, which another test running beside it would see).
//!
//! This needs Node and Pi 1.5.2's install (`PI_EXTENSION_HOST_PI_DIR`, its Node in `node/bin`);
//! without them it is skipped with a line, unless `PI_REQUIRE_EXTENSIONS=1` (CI) makes that a
//! failure.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;

use common::{builder, lines, prompt_once};
use pi_sdk::SessionBuilder;
use pi_testkit::MockLlm;
use serde_json::json;

/// An extension's command runs for a prompt `/note args` in an SDK session as in the binary:
/// no model call, its entry and message written; the recording replays with no Node on PATH.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_extensions_command_runs_for_a_prompt_and_replays_without_node() {
    let Some(scratch) = common::NodeScratch::new() else {
        return;
    };
    let (dir, workspace) = (&scratch.dir, scratch.workspace.clone());
    let extension = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/command_flag/extension.ts");
    let cassette = dir.path().join("note.cassette.jsonl");
    let mock = MockLlm::start(&json!([]));
    let recorded = prompt_once(
        builder(&mock, &workspace)
            .typescript_extensions([&extension])
            .record(&cassette),
        "/note from the sdk",
    )
    .await;
    assert!(mock.requests().is_empty());
    let kinds: Vec<&str> = recorded.iter().filter_map(|e| e["type"].as_str()).collect();
    assert_eq!(
        kinds,
        ["entry_appended", "message_start", "message_end"],
        "{recorded:#?}"
    );
    assert_eq!(recorded[2]["message"]["content"], "hello from the sdk");

    std::env::set_var("PATH", dir.path().join("bare-path"));
    let replayed = prompt_once(
        SessionBuilder::new(&workspace).replay(&cassette),
        "/note from the sdk",
    )
    .await;
    assert_eq!(lines(&replayed), lines(&recorded));
}
