//! The real session files Pi wrote in use (a folder beside the repository, never copied into
//! it; skipped when absent, required in CI). What can be checked without the original: every
//! file loads, every line of a v3 file is written back byte for byte, ids and parents resolve,
//! a v1 file is migrated into one that reads back the same, and the context holds as many
//! messages as Pi's (`get_state`'s `messageCount`, from Pi 0.73.1 on the same files).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use pi_core::json;
use pi_core::session::entry::SessionEntry;
use pi_core::session::file::{parse_header_line, parse_line, ParsedLine};
use pi_core::session::ids::IdGenerator;
use pi_effects::session::SessionStore;
use serde_json::Value;

/// The messages Pi 0.73.1 reports for each file (`get_state`'s `messageCount` in RPC mode).
const PI_MESSAGE_COUNTS: &[(&str, usize)] = &[
    ("badlogic__pi-mono__compact.jsonl", 439),
    (
        "badlogic__pi-mono__packages_coding-agent_test_fixtures_before-compaction.jsonl",
        446,
    ),
    (
        "badlogic__pi-mono__packages_coding-agent_test_fixtures_large-session.jsonl",
        914,
    ),
    ("badlogic__pi-mono__session.jsonl", 107),
    ("castai__kimchi-dev__session.jsonl", 134),
    ("castai__kimchi-dev__statsuline.jsonl", 104),
    (
        "dinhhung893__piggery__testdata_fixtures_pi-0.87.1_session.jsonl",
        8,
    ),
    ("guiguito__HappyVibe__tests_fixtures_pi-session.jsonl", 2),
    (
        "jazzyalex__agent-sessions__Resources_Fixtures_stage0_agents_pi_small.jsonl",
        5,
    ),
    ("lamurian__paradocs__session.jsonl", 90),
    ("marcpadz__dexter-v3__pi-session.jsonl", 448),
    ("mode89__welpy__session_at_18e66e0.jsonl", 74),
    ("mode89__welpy__session_at_bf53f7f.jsonl", 20),
    ("rycerzes__trl__session.jsonl", 159),
    ("selimbucher__civ6.ch__session.jsonl", 74),
];

/// A number as Python's json module writes it and JavaScript never does (`1.0`, `1e-05`).
fn has_python_float(line: &str) -> bool {
    let bytes = line.as_bytes();
    bytes.windows(3).enumerate().any(|(i, w)| {
        let after_digit = i > 0 && bytes[i - 1].is_ascii_digit();
        let exponent = w[0] == b'e' && (w[1] == b'-' || w[1] == b'+') && w[2].is_ascii_digit();
        let point_zero = w[0] == b'.' && w[1] == b'0' && matches!(w[2], b',' | b'}' | b']');
        after_digit && (exponent || point_zero)
    })
}

/// Each line of a v3 file read and written back: byte for byte, except lines that went through
/// Python (same values, other number spellings).
fn check_v3_lines(name: &str, text: &str) {
    let mut lines = text.lines();
    let first = lines.next().unwrap();
    let header = parse_header_line(first, 1).unwrap().unwrap();
    assert_eq!(json::to_string(&header).unwrap(), first, "{name}: header");
    for (i, line) in lines.enumerate() {
        let number = i + 2;
        let entry = match parse_line(line) {
            ParsedLine::Entry(entry) => entry,
            other => panic!("{name}:{number}: {other:?}"),
        };
        assert!(
            !matches!(entry, SessionEntry::Other(_)) || !SessionEntry::is_known_kind(entry.kind()),
            "{name}:{number}: a known entry type kept only as raw JSON"
        );
        let written = json::to_string(&entry).unwrap();
        if written != line {
            assert!(
                has_python_float(line),
                "{name}:{number}: written differently"
            );
            let a: Value = serde_json::from_str(line).unwrap();
            let b: Value = serde_json::from_str(&written).unwrap();
            assert_eq!(a, b, "{name}:{number}: values differ");
        }
    }
}

/// Parents, compaction targets and timestamps, as Pi's own files keep them.
fn check_links(name: &str, entries: &[SessionEntry]) {
    let mut seen = BTreeSet::new();
    let mut last_time = "";
    for (i, entry) in entries.iter().enumerate() {
        assert!(!entry.id().is_empty(), "{name}: entry {i} has no id");
        if let Some(parent) = entry.parent_id() {
            assert!(seen.contains(parent), "{name}: entry {i}: parent {parent}");
        }
        if let SessionEntry::Compaction(c) = entry {
            assert!(
                seen.contains(c.first_kept_entry_id.as_str()),
                "{name}: entry {i}: first kept {}",
                c.first_kept_entry_id
            );
        }
        assert!(
            entry.timestamp() >= last_time,
            "{name}: entry {i} is older than the one before"
        );
        last_time = entry.timestamp();
        assert!(seen.insert(entry.id()), "{name}: entry {i}: id repeated");
    }
}

fn open(path: &Path) -> SessionStore {
    SessionStore::open(path, None, None, "/", 0, IdGenerator::new(1)).unwrap()
}

#[test]
fn real_session_files_load_and_round_trip() {
    let Some(dir) = pi_testkit::wild_sessions_dir() else {
        return;
    };
    let mut files: Vec<_> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{}: no .jsonl files", dir.display());
    let tmp = tempfile::tempdir().unwrap();
    for source in files {
        let name = source.file_name().unwrap().to_string_lossy().into_owned();
        let text = fs::read_to_string(&source).unwrap();
        let copy = tmp.path().join(&name);
        fs::write(&copy, &text).unwrap();
        let store = open(&copy);
        let v1 = store.warnings().iter().any(|w| w.contains("migrated"));
        if v1 {
            // Only unparsable lines (glued entries) are skipped, and the migrated file reads
            // back as the same session, each of its lines written back byte for byte.
            for warning in store.warnings() {
                assert!(
                    warning.contains(": skipped: ") || warning.contains("migrated"),
                    "{name}: {warning}"
                );
            }
            let migrated = fs::read_to_string(&copy).unwrap();
            assert!(migrated
                .lines()
                .next()
                .unwrap()
                .ends_with(r#","version":3}"#));
            check_v3_lines(&name, &migrated);
            let again = open(&copy);
            assert!(
                again.warnings().is_empty(),
                "{name}: {:?}",
                again.warnings()
            );
            assert_eq!(again.tree().entries(), store.tree().entries(), "{name}");
        } else {
            assert!(
                store.warnings().is_empty(),
                "{name}: {:?}",
                store.warnings()
            );
            check_v3_lines(&name, &text);
            assert_eq!(
                fs::read_to_string(&copy).unwrap(),
                text,
                "{name}: rewritten"
            );
        }
        check_links(&name, store.tree().entries());
        let count = store.tree().context().messages.len();
        let Some((_, expected)) = PI_MESSAGE_COUNTS.iter().find(|(n, _)| *n == name) else {
            panic!("{name}: add the message count the original gives it to PI_MESSAGE_COUNTS");
        };
        assert_eq!(count, *expected, "{name}: messages in the context");
    }
}
