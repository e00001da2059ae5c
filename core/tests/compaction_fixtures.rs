//! Compaction planning against Pi's own results on seeded synthetic sessions
//! (fixtures/compaction, written by scripts/gen-compaction-fixtures.mjs running 0.73.1): token
//! estimates, cut points, prepareCompaction, the serialized conversation the summariser reads,
//! and the preparation of branch summaries, each as Pi 1.5.2 computes it
//! (expected-1.5.2.json, by scripts/gen-compaction-fixtures-152.mjs). The branch entries and
//! their common ancestor are still checked against 0.73.1's expected.json; 1.5.2 left them as
//! they were.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::disallowed_methods)]

use std::path::Path;

use pi_core::agent::convert::convert_to_llm;
use pi_core::compaction::branch::{collect_entries_for_branch_summary, prepare_branch_entries};
use pi_core::compaction::cut::find_cut_point;
use pi_core::compaction::files::format_file_operations;
use pi_core::compaction::prepare::prepare_compaction;
use pi_core::compaction::summary::serialize_conversation;
use pi_core::compaction::tokens::estimate_tokens;
use pi_core::compaction::CompactionSettings;
use pi_core::session::file::parse_session;
use pi_core::session::ids::IdGenerator;
use pi_core::session::tree::SessionTree;
use serde_json::{json, Value};

fn fixtures() -> (std::path::PathBuf, Vec<Value>, Vec<Value>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/compaction");
    let expected = std::fs::read_to_string(dir.join("expected.json")).unwrap();
    let pi_152 = std::fs::read_to_string(dir.join("expected-1.5.2.json")).unwrap();
    (
        dir,
        serde_json::from_str(&expected).unwrap(),
        serde_json::from_str(&pi_152).unwrap(),
    )
}

#[test]
fn compaction_planning_matches_pi_on_every_fixture() {
    let (dir, cases, cases_152) = fixtures();
    assert_eq!(cases.len(), 12);
    assert_eq!(cases_152.len(), 12);
    for (case, case_152) in cases.iter().zip(&cases_152) {
        let name = case["file"].as_str().unwrap();
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let parsed = parse_session(&text, &mut IdGenerator::new(0)).unwrap();
        assert!(parsed.problems.is_empty(), "{name}: {:?}", parsed.problems);
        let tree = SessionTree::from_entries(parsed.header, parsed.entries, true);
        let path: Vec<_> = tree.entries().iter().collect();

        let tokens: Vec<u64> = path
            .iter()
            .filter_map(|e| e.message())
            .map(estimate_tokens)
            .collect();
        let expected_tokens: Vec<u64> = serde_json::from_value(case_152["tokens"].clone()).unwrap();
        assert_eq!(tokens, expected_tokens, "{name}: token estimates");

        for (i, keep) in case["keeps"].as_array().unwrap().iter().enumerate() {
            let keep = keep.as_f64().unwrap() as u64;
            let cut = find_cut_point(&path, 0, path.len(), keep);
            let expected = &case_152["cuts"][i];
            let ours = json!({
                "firstKeptEntryIndex": cut.first_kept_entry_index,
                "turnStartIndex": cut.turn_start_index.map_or(-1, |t| t as i64),
                "isSplitTurn": cut.is_split_turn,
            });
            assert_eq!(&ours, expected, "{name}: cut point for keep={keep}");

            let settings = CompactionSettings {
                keep_recent_tokens: keep,
                ..CompactionSettings::default()
            };
            let prepared = prepare_compaction(&path, settings);
            let expected = &case_152["preparations"][i];
            let ours = prepared.map_or(Value::Null, |p| {
                let (read, modified) = p.file_ops.lists();
                json!({
                    "firstKeptEntryId": p.first_kept_entry_id,
                    "isSplitTurn": p.is_split_turn,
                    "tokensBefore": p.tokens_before,
                    "previousSummary": p.previous_summary,
                    "summarize": serialize_conversation(&convert_to_llm(&p.messages_to_summarize)),
                    "summarizeCount": p.messages_to_summarize.len(),
                    "prefix": serialize_conversation(&convert_to_llm(&p.turn_prefix_messages)),
                    "prefixCount": p.turn_prefix_messages.len(),
                    "fileLists": format_file_operations(&read, &modified),
                    "readFiles": read,
                    "modifiedFiles": modified,
                })
            });
            assert_eq!(&ours, expected, "{name}: prepareCompaction for keep={keep}");
        }

        let branch = &case["branch"];
        let last = path.last().unwrap().id();
        let (entries, common) = collect_entries_for_branch_summary(
            &tree,
            Some(last),
            branch["target"].as_str().unwrap(),
        );
        let ids: Vec<&str> = entries.iter().map(|e| e.id()).collect();
        assert_eq!(json!(ids), branch["entryIds"], "{name}: branch entries");
        assert_eq!(
            json!(common),
            branch["commonAncestorId"],
            "{name}: common ancestor"
        );
        for (i, budget) in branch["budgets"].as_array().unwrap().iter().enumerate() {
            let (messages, files, total) =
                prepare_branch_entries(&entries, budget.as_u64().unwrap());
            let (read, modified) = files.lists();
            let ours = json!({
                "count": messages.len(),
                "totalTokens": total,
                "text": serialize_conversation(&convert_to_llm(&messages)),
                "readFiles": read,
                "modifiedFiles": modified,
            });
            assert_eq!(
                ours, case_152["branch"]["results"][i],
                "{name}: branch preparation with budget {budget}"
            );
        }
    }
}
