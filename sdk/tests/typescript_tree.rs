//! A TypeScript extension's tree hooks in an SDK session (a file of its own: the test sets the
//! process's PATH, which another test running beside it would see): `session_before_tree`
//! runs in the extension host with Pi 1.5.2's runner, its cancel and its summary answer the
//! navigation, and `session_tree` hears the summary entry.
//!
//! This needs Node and Pi 1.5.2's install (`PI_EXTENSION_HOST_PI_DIR`, its Node in `node/bin`);
//! without them it is skipped with a line, unless `PI_REQUIRE_EXTENSIONS=1` (CI) makes that a
//! failure.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::builder;
use pi_sdk::{Error, NavigateRequest, SessionBuilder};
use pi_testkit::MockLlm;
use serde_json::{json, Value};

/// Cancels a navigation labelled `no`; supplies the summary of any other, naming how many
/// entries it was given; writes down what `session_tree` heard.
const EXTENSION: &str = r#"
export default function (pi) {
	pi.on("session_before_tree", async (event) => {
		const p = event.preparation;
		if (p.label === "no") return { cancel: true };
		return {
			summary: { summary: `Left ${p.entriesToSummarize.length} entries.`, details: { wanted: p.userWantsSummary } },
			label: "kept",
		};
	});
	pi.on("session_tree", async (event) => {
		pi.appendEntry("tree", {
			summary: event.summaryEntry?.summary ?? null,
			fromHook: event.summaryEntry?.fromHook ?? null,
			fromExtension: event.fromExtension ?? null,
			moved: event.newLeafId !== event.oldLeafId,
		});
	});
}
"#;

/// The session file's entries.
fn entries(file: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typescript_extension_cancels_and_summarises_navigations_and_it_replays_without_node() {
    let Some(scratch) = common::NodeScratch::new() else {
        return;
    };
    let (dir, workspace) = (&scratch.dir, scratch.workspace.clone());
    let extension = dir.path().join("tree.ts");
    std::fs::write(&extension, EXTENSION).unwrap();
    let cassette = dir.path().join("tree.cassette.jsonl");
    let mock = MockLlm::start(&json!([{"text": "One."}, {"text": "Two."}]));
    let run = |builder: SessionBuilder| async move {
        let session = builder.build().unwrap();
        session.prompt("First").await.unwrap();
        session.prompt("Second").await.unwrap();
        let branch = session.branch_ids().await;
        let target = branch[branch.len() - 3].clone();
        let refused = session
            .navigate(NavigateRequest {
                target_id: target.clone(),
                summarize: true,
                label: Some("no".into()),
                ..NavigateRequest::default()
            })
            .await;
        assert!(matches!(refused, Err(Error::Cancelled)), "{refused:?}");
        session
            .navigate(NavigateRequest {
                target_id: target,
                summarize: true,
                ..NavigateRequest::default()
            })
            .await
            .unwrap();
        let file = session.session_file().await.unwrap();
        session.finish().await.unwrap();
        entries(&file)
    };
    let recorded = run(builder(&mock, &workspace)
        .seed(11)
        .session_dir(dir.path().join("sessions"))
        .typescript_extensions([&extension])
        .record(&cassette))
    .await;
    assert_eq!(mock.requests().len(), 2, "no summary request");
    let n = recorded.len();
    let kinds: Vec<&str> = recorded[n - 3..]
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["branch_summary", "label", "custom"],
        "{recorded:#?}"
    );
    let summary = &recorded[n - 3];
    assert_eq!(summary["summary"], "Left 2 entries.");
    assert_eq!(summary["details"], json!({"wanted": true}));
    assert_eq!(summary["fromHook"], true);
    assert_eq!(recorded[n - 2]["label"], "kept");
    assert_eq!(recorded[n - 2]["targetId"], summary["id"]);
    assert_eq!(
        recorded[n - 1]["data"],
        json!({"summary": "Left 2 entries.", "fromHook": true, "fromExtension": true, "moved": true})
    );

    std::env::set_var("PATH", dir.path().join("bare-path"));
    let replayed = run(SessionBuilder::new(&workspace).replay(&cassette)).await;
    assert_eq!(replayed.len(), recorded.len());
    for (replayed, recorded) in replayed.iter().zip(&recorded) {
        assert_eq!(replayed["type"], recorded["type"]);
        assert_eq!(replayed["data"], recorded["data"]);
        assert_eq!(replayed["summary"], recorded["summary"]);
    }
}
