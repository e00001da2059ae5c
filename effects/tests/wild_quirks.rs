//! Quirks of the session files Pi wrote in real use, each reproduced in a small synthetic file
//! (`tests/fixtures/wild/`): unknown fields at every depth, `/export` headers newer than their
//! entries, floats written by Python, v1 files with glued and duplicated lines, usage without
//! `totalTokens`.
//!
//! The expected outputs named `*.pi-*` were not written by hand: they are what Pi 0.73.1 answered
//! to `get_messages` in RPC mode on the same file (`*.pi-messages.json`, the `messages` array as
//! Pi printed it) and the file it left on disk (`v1.pi-migrated.jsonl`, with the random ids of the
//! migration named `id0`, `id1`, ... in order of first appearance).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use pi_core::json;
use pi_core::message::AgentMessage;
use pi_core::session::entry::SessionEntry;
use pi_core::session::file::{parse_header_line, parse_line, ParsedLine};
use pi_core::session::ids::IdGenerator;
use pi_effects::session::SessionStore;

mod common;

use common::writer::Writer;

const T0: u64 = 1_767_225_600_000;

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/wild")
        .join(name);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fixture copied into a temp dir (opening may rewrite it).
fn copy(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    fs::write(&path, fixture(name)).unwrap();
    path
}

fn open(path: &Path) -> SessionStore {
    SessionStore::open(path, None, None, "/", T0, IdGenerator::new(1)).unwrap()
}

/// The context's messages as Pi's `get_messages` prints them.
fn messages(store: &SessionStore) -> String {
    json::to_string(&store.tree().context().messages).unwrap()
}

/// Names the 8-hex-digit ids of `text` `id0`, `id1`, ... by first appearance.
fn name_ids(text: &str) -> String {
    let is_id = |s: &str| s.len() == 8 && s.bytes().all(|b| b.is_ascii_hexdigit());
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    let mut out = String::new();
    for (i, part) in text.split('"').enumerate() {
        if i > 0 {
            out.push('"');
        }
        if is_id(part) {
            let next = format!("id{}", names.len());
            out.push_str(names.entry(part.to_owned()).or_insert(next));
        } else {
            out.push_str(part);
        }
    }
    out
}

#[test]
fn unknown_fields_at_every_depth_round_trip_byte_for_byte() {
    // Unknown fields in the header, in entries of every kind, in messages, in text, thinking,
    // image and toolCall blocks, inside tool-call arguments and details, in usage (one between
    // two known fields, as pi's newer `usage.reasoning`), in cost, in compaction details, and a
    // message role this version does not know.
    let text = fixture("nested.jsonl");
    let mut lines = text.lines();
    let header = parse_header_line(lines.next().unwrap(), 1)
        .unwrap()
        .unwrap();
    assert_eq!(
        json::to_string(&header).unwrap(),
        text.lines().next().unwrap()
    );
    for (number, line) in lines.enumerate() {
        let ParsedLine::Entry(entry) = parse_line(line) else {
            panic!("line {} was not read as an entry", number + 2);
        };
        assert!(
            !matches!(entry, SessionEntry::Other(_)),
            "line {} kept only as raw JSON",
            number + 2
        );
        assert_eq!(
            json::to_string(&entry).unwrap(),
            line,
            "line {}",
            number + 2
        );
    }

    let tmp = tempfile::tempdir().unwrap();
    let path = copy(tmp.path(), "nested.jsonl");
    let store = open(&path);
    assert!(store.warnings().is_empty(), "{:?}", store.warnings());
    assert_eq!(messages(&store), fixture("nested.pi-messages.json"));
    assert_eq!(
        fs::read_to_string(&path).unwrap(),
        text,
        "a v3 file is not rewritten"
    );
}

#[test]
fn unknown_fields_survive_a_change_of_a_known_one() {
    let line = r#"{"role":"assistant","content":[],"api":"a","provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"reasoning":9,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0},"cacheWrite1h":0},"stopReason":"stop","timestamp":1,"rawStopReason":"end"}"#;
    let AgentMessage::Assistant(mut message) = serde_json::from_str(line).unwrap() else {
        panic!("not an assistant message");
    };
    message.usage.output = 5;
    message.response_id = Some("r".into());
    assert_eq!(
        json::to_string(&message).unwrap(),
        r#"{"content":[],"api":"a","provider":"p","model":"m","usage":{"input":1,"output":5,"cacheRead":0,"cacheWrite":0,"reasoning":9,"totalTokens":3,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0},"cacheWrite1h":0},"stopReason":"stop","timestamp":1,"responseId":"r","rawStopReason":"end"}"#
    );
}

#[test]
fn an_export_header_newer_than_every_entry_is_read_as_it_is() {
    // `/export` writes a fresh header (timestamp: now) above the older entries of the branch.
    let tmp = tempfile::tempdir().unwrap();
    let path = copy(tmp.path(), "nested.jsonl");
    let mut store = Writer::new(open(&path));
    let header_time = store.tree().header().timestamp.clone();
    let entries = store.tree().entries();
    assert!(entries.iter().all(|e| e.timestamp() < header_time.as_str()));
    assert_eq!(entries.len(), 10);
    assert_eq!(store.tree().context().messages.len(), 6);

    let before = fs::read_to_string(&path).unwrap();
    let id = store
        .append_thinking_level_change("low", T0)
        .expect("appended");
    let after = fs::read_to_string(&path).unwrap();
    assert!(
        after.starts_with(&before),
        "appending leaves the lines read"
    );
    assert!(after[before.len()..].contains(&format!(r#""id":"{id}","parentId":"a100000a""#)));
}

#[test]
fn floats_written_by_python_are_read_as_numbers_and_printed_as_javascript_does() {
    // `1.0`, `1e-05`, `4.48e-06`, `8.601599999999999e-06`, `1e+21`: Python's spellings, which
    // JSON.parse reads as plain numbers and JSON.stringify prints as `1`, `0.00001`, ...
    let tmp = tempfile::tempdir().unwrap();
    let path = copy(tmp.path(), "py.jsonl");
    let store = open(&path);
    assert!(store.warnings().is_empty(), "{:?}", store.warnings());
    assert_eq!(messages(&store), fixture("py.pi-messages.json"));
    assert_eq!(fs::read_to_string(&path).unwrap(), fixture("py.jsonl"));
}

#[test]
fn a_v1_file_is_migrated_as_pi_migrates_it() {
    // Pi's migration mutates the parsed objects: the header gains `"version":3` as its last key,
    // every entry gains `id` and `parentId` after its own keys, and a compaction's
    // `firstKeptEntryIndex` (an index into the lines, header included, after unparsable lines
    // were dropped) becomes a `firstKeptEntryId` appended last.
    let tmp = tempfile::tempdir().unwrap();
    let path = copy(tmp.path(), "v1.jsonl");
    let store = open(&path);
    let migrated = fs::read_to_string(&path).unwrap();
    assert!(migrated
        .lines()
        .next()
        .unwrap()
        .ends_with(r#""thinkingLevel":"off","version":3}"#));
    assert_eq!(name_ids(&migrated), fixture("v1.pi-migrated.jsonl"));
    assert_eq!(messages(&store), fixture("v1.pi-messages.json"));
    assert_eq!(
        fs::read_to_string(tmp.path().join("v1.jsonl.v1.bak")).unwrap(),
        fixture("v1.jsonl")
    );
}

#[test]
fn a_glued_v1_line_loses_both_of_its_entries() {
    // Line 6 holds two entries with no newline between them (a torn write in Pi's early
    // versions). JSON.parse refuses the line, so Pi drops both entries and the migration
    // rewrites the file without them.
    let tmp = tempfile::tempdir().unwrap();
    let path = copy(tmp.path(), "v1.jsonl");
    let store = open(&path);
    assert!(
        store.warnings()[0].ends_with(":6: skipped: trailing characters at line 1 column 153"),
        "{:?}",
        store.warnings()
    );
    assert_eq!(store.tree().entries().len(), 8);
    let migrated = fs::read_to_string(&path).unwrap();
    assert_eq!(migrated.lines().count(), 9);
    assert!(!migrated.contains("three") && !migrated.contains("glued"));
}

#[test]
fn duplicate_v1_lines_become_two_entries() {
    // Lines 3 and 4 are identical. Pi gives each its own id; the second is the first's child.
    let tmp = tempfile::tempdir().unwrap();
    let path = copy(tmp.path(), "v1.jsonl");
    let store = open(&path);
    let entries = store.tree().entries();
    assert_eq!(entries[1].message(), entries[2].message());
    assert_ne!(entries[1].id(), entries[2].id());
    assert_eq!(entries[2].parent_id(), Some(entries[1].id()));
}

#[test]
fn assistant_messages_without_total_tokens_stay_in_the_context() {
    // Pi's early files have no `usage.totalTokens` (the real `large-session` fixture: none of
    // its 453 assistant messages has one). When the field was required, each of these messages
    // failed to read, its entry was kept only as raw JSON, and it left the context: 461
    // messages where Pi has 914. It is now read as 0 and left out again when written.
    let tmp = tempfile::tempdir().unwrap();
    let path = copy(tmp.path(), "v1.jsonl");
    let store = open(&path);
    let assistants: Vec<&AgentMessage> = store
        .tree()
        .entries()
        .iter()
        .filter_map(SessionEntry::message)
        .filter(|m| matches!(m, AgentMessage::Assistant(_)))
        .collect();
    assert_eq!(assistants.len(), 4);
    assert!(fs::read_to_string(&path)
        .unwrap()
        .lines()
        .all(|l| !l.contains("totalTokens")));

    let line = r#"{"role":"assistant","content":[],"api":"openai-responses","provider":"openai","model":"gpt-5.1-codex","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"aborted","timestamp":1763681581545,"errorMessage":"Request was aborted"}"#;
    let message: AgentMessage = serde_json::from_str(line).unwrap();
    assert!(matches!(message, AgentMessage::Assistant(_)));
    assert_eq!(json::to_string(&message).unwrap(), line);
}
