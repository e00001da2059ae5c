//! Bad cassettes are data, not crashes: truncated, malformed, reordered, wrong-version, huge
//! lines, invalid UTF-8 — each a typed error naming the file, the line and the field; and over
//! arbitrary mutations of real cassettes, loading and replaying never panic.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use pi_cassettes::read::{LoadErrorKind, MAX_LINE_BYTES};
use pi_cassettes::version::Unreadable;
use pi_cassettes::{replay_in_memory, Cassette};
use proptest::prelude::*;

fn corpus(name: &str) -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpus")
        .join(name);
    std::fs::read(path).unwrap()
}

fn lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

fn join(lines: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in lines {
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    out
}

fn load(bytes: &[u8]) -> Result<Cassette, pi_cassettes::LoadError> {
    Cassette::parse(&PathBuf::from("bad.jsonl"), bytes)
}

fn message(bytes: &[u8]) -> String {
    load(bytes)
        .expect_err("the cassette is refused")
        .to_string()
}

#[test]
fn a_torn_last_line_is_dropped_and_the_rest_loads() {
    let whole = corpus("one_tool.jsonl");
    let cut = &whole[..whole.len() - 40];
    let cassette = load(cut).unwrap();
    assert!(cassette.torn_tail);
    assert!(!cassette.is_complete(), "the outcome line was the torn one");
    assert_eq!(cassette.lines.len() + 1, lines(cut).len() - 1);
}

#[test]
fn malformed_json_names_the_line() {
    let mut all = lines(&corpus("plain_text.jsonl"));
    all[3] = b"{\"type\":\"event\",\"t\":".to_vec();
    let text = message(&join(&all));
    assert!(text.starts_with("bad.jsonl:4: not a JSON object"), "{text}");
}

#[test]
fn a_missing_or_mistyped_field_is_named() {
    let mut all = lines(&corpus("plain_text.jsonl"));
    let index = all
        .iter()
        .position(|l| l.starts_with(b"{\"type\":\"event\""))
        .unwrap();
    all[index] = b"{\"type\":\"event\",\"call\":1}".to_vec();
    let text = message(&join(&all));
    assert!(text.contains(&format!(":{}: ", index + 1)), "{text}");
    assert!(
        text.contains("`event` line") && text.contains("missing field `t`"),
        "{text}"
    );

    all[index] = b"{\"type\":\"event\",\"t\":\"soon\",\"call\":1}".to_vec();
    let text = message(&join(&all));
    assert!(text.contains("invalid type: string \"soon\""), "{text}");
}

#[test]
fn reordered_lines_are_refused_with_the_rule_they_break() {
    let all = lines(&corpus("one_tool.jsonl"));
    let chunk = all
        .iter()
        .position(|l| l.starts_with(b"{\"type\":\"chunk\""))
        .unwrap();
    let request = all
        .iter()
        .position(|l| l.starts_with(b"{\"type\":\"request\""))
        .unwrap();
    let mut swapped = all.clone();
    swapped.swap(chunk, request);
    let text = message(&join(&swapped));
    assert!(text.contains("out of order"), "{text}");
    assert!(text.contains("field `call`"), "{text}");

    let event = all
        .iter()
        .position(|l| l.starts_with(b"{\"type\":\"event\""))
        .unwrap();
    let mut early = all.clone();
    let moved = early.remove(event);
    early.insert(1, moved);
    let text = message(&join(&early));
    assert!(text.contains("bad.jsonl:2: out of order"), "{text}");
    assert!(text.contains("never started"), "{text}");
}

#[test]
fn a_later_minor_loads_and_an_unknown_feature_is_refused_by_name() {
    let mut all = lines(&corpus("plain_text.jsonl"));
    let header = String::from_utf8(all[0].clone()).unwrap();
    all[0] = header
        .replacen("\"format\":1", "\"format\":\"1.9\"", 1)
        .into_bytes();
    let cassette = load(&join(&all)).unwrap();
    assert_eq!(cassette.header.format.to_string(), "1.9");
    all[0] = header
        .replacen(
            "\"format\":1",
            "\"format\":1,\"features\":[\"streams-v9\"]",
            1,
        )
        .into_bytes();
    let error = load(&join(&all)).unwrap_err();
    let text = error.to_string();
    assert!(
        text.starts_with("bad.jsonl:1: the cassette needs the feature `streams-v9`"),
        "{text}"
    );
    assert!(text.ends_with("use a newer pi"), "{text}");
}

#[test]
fn a_newer_format_is_refused_and_names_both_versions() {
    let mut all = lines(&corpus("plain_text.jsonl"));
    let header = String::from_utf8(all[0].clone()).unwrap();
    all[0] = header
        .replacen("\"format\":1", "\"format\":2", 1)
        .into_bytes();
    let error = load(&join(&all)).unwrap_err();
    assert!(matches!(
        error.kind,
        LoadErrorKind::Version(Unreadable::Newer { .. })
    ));
    let text = error.to_string();
    assert!(
        text.starts_with("bad.jsonl:1: cassette format 2.0 is newer"),
        "{text}"
    );
    assert!(text.contains("(format 1.0)"), "{text}");
}

#[test]
fn invalid_utf8_names_the_line_and_the_byte() {
    let mut all = lines(&corpus("plain_text.jsonl"));
    all[2].splice(5..5, [0xff, 0xfe]);
    let text = message(&join(&all));
    assert!(
        text.starts_with("bad.jsonl:3: not UTF-8 (byte 5 of the line)"),
        "{text}"
    );
}

#[test]
fn a_huge_line_is_refused_before_it_is_parsed() {
    let mut all = lines(&corpus("plain_text.jsonl"));
    all[1] = vec![b' '; MAX_LINE_BYTES + 1];
    let text = message(&join(&all));
    assert!(text.starts_with("bad.jsonl:2: line longer than"), "{text}");
}

#[test]
fn a_file_that_is_not_a_cassette_says_so() {
    let text = message(b"{\"type\":\"session\",\"version\":3}\n");
    assert!(
        text.contains("bad.jsonl:1: the first line is not a cassette header"),
        "{text}"
    );
    let text = message(b"");
    assert!(text.contains("bad.jsonl:1: empty file"), "{text}");
}

/// Loads `bytes` and, when they load, replays them in memory; whether the replay reproduced
/// the run. Panics only if something inside panics.
fn replay(bytes: &[u8]) -> bool {
    let Ok(cassette) = load(bytes) else {
        return false;
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime
        .block_on(replay_in_memory(Arc::new(cassette)))
        .is_ok()
}

#[test]
fn the_corpus_replays_in_process() {
    // The helper above is the real replay: print-mode cassettes of the corpus reproduce.
    for name in [
        "plain_text.jsonl",
        "one_tool.jsonl",
        "parallel_tools.jsonl",
        "retry_500_then_429.jsonl",
    ] {
        assert!(replay(&corpus(name)), "{name}");
    }
}

/// One change to a cassette's bytes.
#[derive(Clone, Debug)]
enum Mutation {
    DeleteLine(usize),
    DuplicateLine(usize),
    SwapLines(usize, usize),
    TruncateAt(usize),
    FlipByte(usize, u8),
    InsertJunk(usize, Vec<u8>),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<usize>().prop_map(Mutation::DeleteLine),
        any::<usize>().prop_map(Mutation::DuplicateLine),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        any::<usize>().prop_map(Mutation::TruncateAt),
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Mutation::FlipByte(at, b)),
        (
            any::<usize>(),
            proptest::collection::vec(any::<u8>(), 0..40)
        )
            .prop_map(|(at, junk)| Mutation::InsertJunk(at, junk)),
    ]
}

fn mutate(bytes: &[u8], mutation: &Mutation) -> Vec<u8> {
    let mut all = lines(bytes);
    let n = all.len();
    if n == 0 || bytes.is_empty() {
        return bytes.to_vec();
    }
    match mutation {
        Mutation::DeleteLine(i) => {
            all.remove(i % n);
            join(&all)
        }
        Mutation::DuplicateLine(i) => {
            let line = all[i % n].clone();
            all.insert(i % n, line);
            join(&all)
        }
        Mutation::SwapLines(a, b) => {
            all.swap(a % n, b % n);
            join(&all)
        }
        Mutation::TruncateAt(at) => bytes[..at % bytes.len()].to_vec(),
        Mutation::FlipByte(at, value) => {
            let mut out = bytes.to_vec();
            let at = at % out.len();
            out[at] ^= value | 1;
            out
        }
        Mutation::InsertJunk(at, junk) => {
            let mut out = bytes.to_vec();
            let at = at % out.len();
            out.splice(at..at, junk.iter().copied());
            out
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn mutated_cassettes_never_panic(
        name in prop::sample::select(vec![
            "plain_text.jsonl", "one_tool.jsonl", "parallel_tools.jsonl", "tool_error.jsonl",
            "retry_500_then_429.jsonl", "threshold_compaction.jsonl", "navigation.jsonl",
        ]),
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        let mut bytes = corpus(name);
        for m in &mutations {
            bytes = mutate(&bytes, m);
            if bytes.is_empty() {
                break;
            }
        }
        // Loading and replaying return errors, never panic.
        let _ = replay(&bytes);
    }
}

/// A line the format reads but whose harness value this build cannot read: the cassette is
/// refused as it loads, naming the line and the field, before anything runs.
#[test]
fn a_harness_value_that_does_not_read_names_the_line_and_the_field() {
    let all = lines(&corpus("one_tool.jsonl"));
    let text = |n: usize| String::from_utf8(all[n].clone()).unwrap();
    let with = |n: usize, line: String| {
        let mut changed = all.clone();
        changed[n] = line.into_bytes();
        message(&join(&changed))
    };
    let header = with(
        0,
        text(0).replace("\"thinkingLevel\":\"medium\"", "\"thinkingLevel\":\"loud\""),
    );
    assert!(
        header.starts_with("bad.jsonl:1: `cassette` line: field `config`"),
        "{header}"
    );
    assert!(header.contains("loud"), "{header}");
    let answer = all
        .iter()
        .position(|l| l.starts_with(b"{\"type\":\"answer\""))
        .unwrap();
    let result = with(
        answer,
        text(answer).replace("\"content\":[", "\"content\":7,\"was\":["),
    );
    assert!(
        result.starts_with(&format!(
            "bad.jsonl:{}: `answer` line: field `input.result`",
            answer + 1
        )),
        "{result}"
    );
    let call = all
        .iter()
        .position(|l| l.starts_with(b"{\"type\":\"call\""))
        .unwrap();
    let options = with(
        call,
        text(call).replace("\"maxRetries\":0", "\"maxRetries\":\"many\""),
    );
    assert!(
        options.starts_with(&format!(
            "bad.jsonl:{}: `call` line: field `options`",
            call + 1
        )),
        "{options}"
    );
}

/// The lines extensions brought (a hook's answer, a system prompt set from outside) are read as
/// they load like every other: one whose value this build cannot read is refused naming the
/// line and the field, never taken as something else.
#[test]
fn a_hook_answer_or_system_change_that_does_not_read_names_the_line_and_the_field() {
    let all = lines(&corpus("one_tool.jsonl"));
    let with = |n: usize, line: &str| {
        let mut changed = all.clone();
        changed[n] = line.as_bytes().to_vec();
        message(&join(&changed))
    };
    let answer = all
        .iter()
        .position(|l| l.starts_with(b"{\"type\":\"answer\""))
        .unwrap();
    let decided = with(
        answer,
        r#"{"type":"answer","t":1795751003149,"input":{"kind":"hook_decided","call":2,"outcome":{"decision":{"kind":"obey"}}}}"#,
    );
    assert!(
        decided.starts_with(&format!(
            "bad.jsonl:{}: `answer` line: field `input.outcome`",
            answer + 1
        )),
        "{decided}"
    );
    let outside = all
        .iter()
        .position(|l| l.starts_with(b"{\"type\":\"outside\""))
        .unwrap();
    let system = with(
        outside,
        r#"{"type":"outside","t":1795751003141,"input":{"kind":"set_system","sections":{},"tools":"read"}}"#,
    );
    assert!(
        system.starts_with(&format!("bad.jsonl:{}: `outside` line", outside + 1)),
        "{system}"
    );
    assert!(system.contains("invalid type: string \"read\""), "{system}");
}

/// The index of the first line of `all` of `kind`.
fn first_of(all: &[Vec<u8>], kind: &str) -> usize {
    let prefix = format!("{{\"type\":\"{kind}\"");
    all.iter()
        .position(|l| l.starts_with(prefix.as_bytes()))
        .unwrap()
}

/// A run across session replacements is one session per part: each numbers its calls anew, a
/// later one's header is its `replaced` line (a value there that does not read names that line),
/// in a run recorded in any mode (print mode's, text or json, replaces its session for an
/// extension command, as a program's run through the library does).
#[test]
fn replaced_lines_split_a_run_into_sessions_and_are_checked_where_they_are() {
    let all = lines(&corpus("rpc_sessions.jsonl"));
    let cassette = load(&join(&all)).unwrap();
    let second = cassette.next_session().unwrap();
    let third = second.next_session().unwrap();
    assert!(third.next_session().is_none());
    let at = first_of(&all, "replaced") + 1;
    assert_eq!(second.header_line(), at);
    assert!(cassette.left().is_some() && third.left().is_none());
    assert!(cassette.is_complete() && second.is_complete() && third.is_complete());
    // Each session has a call 1.
    for session in [&cassette as &Cassette, &second, &third] {
        assert!(session
            .lines
            .iter()
            .any(|(_, l)| matches!(l, pi_cassettes::format::Line::Call { call: 1, .. })));
    }

    let mut bad = all.clone();
    let index = first_of(&bad, "replaced");
    let mut line: serde_json::Value = serde_json::from_slice(&bad[index]).unwrap();
    line["config"]["thinkingLevel"] = serde_json::json!("loud");
    bad[index] = line.to_string().into_bytes();
    let text = message(&join(&bad));
    assert!(
        text.starts_with(&format!("bad.jsonl:{}: `replaced` line", index + 1)),
        "{text}"
    );

    // Call 1 of the second session started again in the first: refused there.
    let mut twice = all.clone();
    let effect = twice[first_of(&all, "effect")].clone();
    twice.insert(index, effect);
    let text = message(&join(&twice));
    assert!(text.contains("call 1 is started twice"), "{text}");

    for mode in ["json", "text"] {
        let mut printed = all.clone();
        let header = String::from_utf8(printed[0].clone()).unwrap();
        printed[0] = header
            .replace(r#""mode":"rpc""#, &format!(r#""mode":"{mode}""#))
            .into_bytes();
        assert!(load(&join(&printed)).unwrap().next_session().is_some());
    }
}
