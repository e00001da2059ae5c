//! `pi import`: session files the original Pi wrote become cassettes, and `pi replay` of the
//! cassette writes the session's branch again: byte for byte but for what Pi 1.5.2 adds to
//! every answer and tool result it makes (`durationMs`, `thinkingLevel`, `rawStopReason`, the
//! usage's `reasoning` and `cost.totalFromProvider`), which a file of an earlier Pi lacks and
//! 1.5.2 itself could not leave out. The files are the original's own: those the conformance
//! kit's reference traces keep (written by Pi 0.73.1 against the kit's mock), and the real
//! users' files kept beside the repository, when they are there.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Command;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn pi(args: &[&str]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_pi"))
        .args(args)
        .env("PI_OFFLINE", "1")
        .output()
        .expect("pi runs");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The session file the original wrote in the kit scenario `scenario` (its `final` snapshot;
/// the one whose name sorts first when it wrote several).
fn trace_session(scenario: &str) -> PathBuf {
    trace_session_in("traces", scenario)
}

/// [`trace_session`] of the traces in `traces` (`traces-1.5.2`: Pi 1.5.2's).
fn trace_session_in(traces: &str, scenario: &str) -> PathBuf {
    let dir = pi_testkit::kit_dir()
        .join(traces)
        .join(scenario)
        .join("sessions/final");
    let mut files: Vec<PathBuf> = pi_testkit::files_under(&dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
        .into_iter()
        .next()
        .expect("the trace has a session file")
}

/// Imports `session` into `dir/imported.cassette`, replays it keeping the session file, and
/// returns the import's report, the check's exit code and the replayed file's bytes.
fn import_and_replay(session: &Path, dir: &Path) -> (Run, i32, Option<Vec<u8>>) {
    let cassette = dir.join("imported.cassette");
    let cassette = cassette.to_str().expect("a UTF-8 path");
    let imported = pi(&[
        "import",
        session.to_str().expect("a UTF-8 path"),
        "-o",
        cassette,
    ]);
    let check = pi(&["replay", "--check", cassette]);
    let sessions = dir.join("replayed");
    pi(&[
        "replay",
        cassette,
        "--session-dir",
        sessions.to_str().expect("a UTF-8 path"),
    ]);
    let written = sessions
        .is_dir()
        .then(|| pi_testkit::files_under(&sessions))
        .and_then(|files| {
            files
                .into_iter()
                .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        })
        .map(|file| std::fs::read(file).expect("the replayed session reads"));
    (imported, check.code, written)
}

#[test]
fn sessions_the_original_wrote_replay_byte_for_byte() {
    for scenario in [
        "a_plain_text",
        "b_tool_read",
        "c_two_tools",
        "e_rpc",
        "f_session_resume",
    ] {
        check_reproduces(scenario, &trace_session(scenario));
    }
    // The session forked from the one before it names its parent.
    let forked = pi_testkit::files_under(
        &pi_testkit::kit_dir().join("traces/f_session_resume/sessions/final"),
    )
    .into_iter()
    .max()
    .expect("the forked session");
    assert!(std::fs::read_to_string(&forked)
        .expect("reads")
        .contains("parentSession"));
    check_reproduces("the forked session", &forked);
}

/// A session Pi 1.5.2 wrote whose prompt changed between two runs (the kit scenario
/// `system_change_resume`: `--continue` with `--tools read,bash` and `--append-system-prompt`),
/// so a `role: "system"` patch stands between the first answer and the second prompt: the import
/// gives the run the changed prompt and tools there, and the replay writes the file byte for byte.
#[test]
fn a_mid_session_system_message_of_1_5_2_imports_byte_for_byte() {
    let session = trace_session_in("scenarios-1.5.2/traces", "system_change_resume");
    let original = std::fs::read(&session).expect("the session reads");
    let text = String::from_utf8_lossy(&original);
    assert!(
        text.lines()
            .filter(|l| l.contains(r#""role":"system""#))
            .count()
            == 2
            && text.contains(r#""toolsRemoved":[{"name":"edit"},{"name":"write"}]"#),
        "the fixture changes the prompt mid-session"
    );
    let dir = tempfile::tempdir().expect("a temp dir");
    let (imported, check, written) = import_and_replay(&session, dir.path());
    assert_eq!(imported.code, 0, "{}{}", imported.stdout, imported.stderr);
    assert!(
        imported
            .stdout
            .contains("reproduces the session byte for byte"),
        "{}",
        imported.stdout
    );
    assert_eq!(check, 0, "the imported cassette replays");
    assert!(
        written.as_deref() == Some(original.as_slice()),
        "the replay writes the file byte for byte"
    );
}

/// The sessions Pi 1.5.2 wrote in the public scenarios of plain text, tools and resumed and
/// forked sessions: byte for byte, `durationMs` and the system message's own time included.
#[test]
fn sessions_1_5_2_wrote_replay_byte_for_byte() {
    let mut sessions: Vec<PathBuf> = ["a_plain_text", "b_tool_read", "c_two_tools"]
        .iter()
        .map(|scenario| trace_session_in("traces-1.5.2", scenario))
        .collect();
    sessions.extend(pi_testkit::files_under(
        &pi_testkit::kit_dir().join("traces-1.5.2/f_session_resume/sessions/final"),
    ));
    assert_eq!(
        sessions.len(),
        5,
        "a, b, c, and the resumed and the forked session"
    );
    for session in sessions {
        let dir = tempfile::tempdir().expect("a temp dir");
        let (imported, check, written) = import_and_replay(&session, dir.path());
        let name = session.display();
        assert_eq!(imported.code, 0, "{name}: {}", imported.stdout);
        assert_eq!(check, 0, "{name}");
        let original = std::fs::read(&session).expect("the session reads");
        assert!(written.as_deref() == Some(original.as_slice()), "{name}");
    }
}

/// A session 0.73.1 wrote with retried attempts: Pi 1.5.2 omits each failed attempt with a
/// `context_edit` entry, which the file does not hold, so the import names where the replay
/// differs (1.5.2 itself, given the same answers, writes the edits too).
#[test]
fn a_session_0_73_1_wrote_with_retries_differs_where_1_5_2_writes_context_edits() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (imported, _, _) = import_and_replay(&trace_session("d2_retry_agent_level"), dir.path());
    let said = format!("{}{}", imported.stdout, imported.stderr);
    assert!(
        said.contains("does not reproduce the session exactly"),
        "{said}"
    );
    assert!(
        said.contains(
            r#"line 6 (message assistant): `type` is "message" in the file, "context_edit" in the replay"#
        ),
        "{said}"
    );
}

/// The fields Pi 1.5.2 adds to the messages it makes, which a 0.73.1 file lacks.
const ADDED_BY_152: [&str; 5] = [
    "durationMs",
    "thinkingLevel",
    "rawStopReason",
    "reasoning",
    "totalFromProvider",
];

/// A session file's lines as JSON, without [`ADDED_BY_152`] in its messages.
fn without_152_fields(bytes: &[u8]) -> Vec<serde_json::Value> {
    fn strip(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(map) => {
                for key in ADDED_BY_152 {
                    map.remove(key);
                }
                map.values_mut().for_each(strip);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    String::from_utf8_lossy(bytes)
        .lines()
        .map(|line| {
            let mut value: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
            if let Some(message) = value.get_mut("message") {
                strip(message);
            }
            value
        })
        .collect()
}

/// `session` (0.73.1's) imports, every reason given is one of 1.5.2's added fields, its
/// cassette checks as the inexact import it is (the file is what it is checked against), and
/// its replay writes the file but for those fields.
fn check_reproduces(scenario: &str, session: &Path) {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (imported, check, written) = import_and_replay(session, dir.path());
    let said = format!("{}{}", imported.stdout, imported.stderr);
    assert!(imported.code <= 1, "{scenario}: {said}");
    for reason in said.lines().filter(|l| l.starts_with("  ")) {
        assert!(
            ADDED_BY_152.iter().any(|field| reason.contains(field)),
            "{scenario}: a reason that is not 1.5.2's: {reason}"
        );
    }
    assert_eq!(
        check, 1,
        "{scenario}: the imported cassette diverges, not unusable"
    );
    let original = std::fs::read(session).expect("the session reads");
    let written = written.expect("the replay writes the session");
    assert_eq!(
        without_152_fields(&written),
        without_152_fields(&original),
        "{scenario}: the replay writes the original's file but for 1.5.2's fields"
    );
}

#[test]
fn an_imported_cassette_is_checked_on_the_session_it_writes() {
    let session = trace_session("a_plain_text");
    let dir = tempfile::tempdir().expect("a temp dir");
    let cassette = dir.path().join("plain.cassette");
    let cassette_arg = cassette.to_str().expect("a UTF-8 path");
    // 0.73.1's answer lacks 1.5.2's fields: the import says so (1) and writes the cassette.
    assert_eq!(
        pi(&[
            "import",
            session.to_str().expect("path"),
            "-o",
            cassette_arg
        ])
        .code,
        1
    );
    let text = std::fs::read_to_string(&cassette).expect("the cassette reads");
    let header = text.lines().next().expect("a header");
    assert!(header.contains(r#""imported":{"from":"#), "{header}");
    // The model's answer, as the stream says it, changed: the replayed session differs.
    let (lines, outcome) = text.trim_end().rsplit_once('\n').expect("an outcome line");
    let changed = format!(
        "{}\n{outcome}\n",
        lines.replace("from the mock", "from elsewhere")
    );
    assert_ne!(changed, text, "the answer is in the cassette's stream");
    std::fs::write(&cassette, changed).expect("the cassette writes");
    let check = pi(&["replay", "--check", cassette_arg]);
    assert_eq!(check.code, 1, "{}{}", check.stdout, check.stderr);
    let said = format!("{}{}", check.stdout, check.stderr);
    assert!(said.contains("the session file differs"), "{said}");
    assert!(
        said.contains("from elsewhere"),
        "a line diff of the files: {said}"
    );
}

#[test]
fn what_a_replay_cannot_write_is_named_by_entry() {
    // A usage field this build's Chat Completions decoder never makes (Anthropic's), in a file
    // Pi 1.5.2 wrote.
    let original =
        std::fs::read_to_string(trace_session_in("traces-1.5.2", "a_plain_text")).expect("reads");
    let later = original.replacen(
        r#""totalTokens":"#,
        r#""cacheWrite1h":14,"totalTokens":"#,
        1,
    );
    assert_ne!(later, original, "the answer has a usage");
    let dir = tempfile::tempdir().expect("a temp dir");
    let session = dir.path().join("later.jsonl");
    std::fs::write(&session, later).expect("writes");
    let (imported, check, _) = import_and_replay(&session, dir.path());
    assert_eq!(imported.code, 1, "{}{}", imported.stdout, imported.stderr);
    assert!(
        imported.stdout.contains(
            "(message assistant, id 8e0a150e): its stream cannot say it exactly: \
             openai-completions cannot stream this message: its decoder would read \
             `.usage.cacheWrite1h` differently"
        ),
        "{}",
        imported.stdout
    );
    assert!(
        imported.stdout.contains("(message assistant): `message.usage.cacheWrite1h` is 14 in the file, absent in the replay"),
        "{}",
        imported.stdout
    );
    assert_eq!(check, 1, "an inexact import diverges; it is not unusable");
}

#[test]
fn a_file_that_is_not_a_session_is_refused() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let bad = dir.path().join("notes.jsonl");
    std::fs::write(&bad, "not json\n").expect("writes");
    let out = dir.path().join("out.cassette");
    let run = pi(&[
        "import",
        bad.to_str().expect("path"),
        "-o",
        out.to_str().expect("path"),
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("notes.jsonl"), "{}", run.stderr);
    let missing = pi(&[
        "import",
        "/nonexistent/x.jsonl",
        "-o",
        out.to_str().expect("path"),
    ]);
    assert_eq!(missing.code, 2);
    assert!(missing.stderr.contains("cannot read"), "{}", missing.stderr);
}

/// Each file's verdict and its first three reasons, without the values they quote (the
/// users' files are read here, not copied in).
fn outline(report: &str) -> String {
    let mut out = String::new();
    let mut reasons = 0;
    for line in report.lines() {
        if !line.starts_with(' ') {
            reasons = 0;
        } else if reasons == 3 {
            continue;
        } else {
            reasons += 1;
        }
        let line = match line.find("` is ") {
            Some(at) => format!("{}` differs", &line[..at]),
            None => line.to_owned(),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}

/// The real file whose system message stands after an extension's message: its prompt is a
/// placeholder text its author put in (no sections, which Pi 1.5 never writes), so the import
/// names that message, and no other, as one it cannot give the run (the line diff then names
/// it too), and the replay still writes the rest of the branch.
#[test]
fn a_real_file_with_an_edited_system_message_names_only_that_message() {
    let Some(wild) = pi_testkit::wild_sessions_dir() else {
        return;
    };
    let file = wild.join("dinhhung893__piggery__testdata_fixtures_pi-0.87.1_session.jsonl");
    let dir = tempfile::tempdir().expect("a temp dir");
    let (imported, _, written) = import_and_replay(&file, dir.path());
    assert_eq!(imported.code, 1, "{}{}", imported.stdout, imported.stderr);
    let system_reasons: Vec<&str> = imported
        .stdout
        .lines()
        .filter(|l| l.contains("(message system, id"))
        .collect();
    assert_eq!(
        system_reasons,
        [
            "  line 5 (message system, id fd4ec9ff): a `system` message whose prompt is text, \
          not sections: no run of Pi 1.5 writes one (an earlier Pi's, or the file was edited)"
        ],
        "{}",
        imported.stdout
    );
    let written =
        String::from_utf8(written.expect("the replay writes the session")).expect("UTF-8");
    assert!(
        written.contains("piggery_send"),
        "the branch after it is replayed"
    );
}

/// Every real session file imported: which replay byte for byte, and for each that does not,
/// the reasons `pi import` gives (snapshotted: a change in what the loop reproduces shows up
/// here). Those that reproduce are replayed and compared with the file itself.
#[test]
fn real_session_files_import_and_say_what_they_do_not_reproduce() {
    let Some(wild) = pi_testkit::wild_sessions_dir() else {
        return;
    };
    let mut files: Vec<PathBuf> = pi_testkit::files_under(&wild)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    let dir = tempfile::tempdir().expect("a temp dir");
    let out = dir.path().to_str().expect("a UTF-8 path").to_owned();
    let mut args = vec!["import".to_owned()];
    args.extend(files.iter().map(|f| f.to_string_lossy().into_owned()));
    args.extend(["-o".to_owned(), out.clone()]);
    let run = pi(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(run.code <= 1, "{}{}", run.stdout, run.stderr);
    let report = run.stdout.replace(&out, "<out>");
    let identical: Vec<&str> = report
        .lines()
        .filter(|l| l.ends_with("reproduces the session byte for byte"))
        .collect();
    insta::assert_snapshot!("wild_import_report", outline(&report));
    for file in &files {
        let name = file.file_stem().expect("a name").to_string_lossy();
        if !identical
            .iter()
            .any(|l| l.contains(&format!("<out>/{name}.cassette")))
        {
            continue;
        }
        let scratch = tempfile::tempdir().expect("a temp dir");
        let (_, check, written) = import_and_replay(file, scratch.path());
        assert_eq!(check, 0, "{name}");
        let original = std::fs::read(file).expect("the file reads");
        assert!(written.as_deref() == Some(original.as_slice()), "{name}");
    }
}
