//! `pi replay --check` is exact and says what differs, through the real binary: a run recorded
//! against the kit's mock over real HTTP, its cassette tampered with as an attacker (or a
//! careless edit) would, then checked (an Anthropic message thread's too).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Output;

use pi_testkit::demo::{Scenario, Workspace};
use serde_json::{json, Value};

fn pi() -> &'static str {
    env!("CARGO_BIN_EXE_pi")
}

fn workspace(scenario: Value) -> Workspace {
    let scenario = Scenario::from_value(&scenario, Path::new("test scenario")).unwrap();
    Workspace::prepare(scenario, None).unwrap()
}

fn pi_in(ws: &Workspace, args: &[&str]) -> Output {
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    ws.command(pi().as_ref(), &args).output().unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Records `prompt` against the mock in `mode` into `name` in the workspace's folder.
fn record(ws: &Workspace, name: &str, mode: &str, extra: &[&str]) -> PathBuf {
    let cassette = ws.root().join("cwd").join(name);
    let mut args = vec![
        "--mode",
        mode,
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--record",
        cassette.to_str().unwrap(),
    ];
    args.extend(extra);
    let out = pi_in(ws, &args);
    assert!(
        out.status.code().is_some(),
        "the recording run ended: {}",
        stderr(&out)
    );
    cassette
}

fn check(ws: &Workspace, paths: &[&Path]) -> Output {
    let mut args: Vec<OsString> = vec!["replay".into(), "--check".into()];
    args.extend(paths.iter().map(|p| p.as_os_str().to_owned()));
    ws.command(pi().as_ref(), &args).output().unwrap()
}

fn lines(cassette: &Path) -> Vec<Value> {
    std::fs::read_to_string(cassette)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Writes `lines` back as the cassette, one compact JSON line each.
fn write_lines(cassette: &Path, lines: &[Value]) {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(cassette, text).unwrap();
}

/// The check exits `code`, and its stderr holds each of `needles`.
fn assert_check(out: &Output, code: i32, needles: &[&str]) {
    let err = stderr(out);
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout: {}\nstderr: {err}",
        String::from_utf8_lossy(&out.stdout)
    );
    for needle in needles {
        assert!(err.contains(needle), "{needle:?} not in: {err}");
    }
}

#[test]
fn a_tampered_retry_attempt_is_a_divergence() {
    let ws = workspace(json!({
        "settings": {"retry": {"enabled": false, "provider": {"maxRetries": 2}}},
        "script": [
            {"status": 500, "headers": {"retry-after": "0"}},
            {"text": ["Recovered on the second request."]}
        ],
    }));
    let cassette = record(
        &ws,
        "retry.jsonl",
        "json",
        &["--no-session", "-p", "Recover"],
    );
    assert_check(&check(&ws, &[&cassette]), 0, &[]);
    let mut all = lines(&cassette);
    let requests: Vec<usize> = (0..all.len())
        .filter(|&i| all[i]["type"] == "request")
        .collect();
    assert_eq!(requests.len(), 2, "one call, two attempts");
    // The second attempt, recorded as a delta of the first (nothing changed), written out in
    // full with the prompt changed.
    let first = all[requests[0]]["body"].to_string();
    assert!(first.contains("Recover"), "{first}");
    let tampered: Value = serde_json::from_str(&first.replace("Recover", "Recovex")).unwrap();
    let retry = all[requests[1]].as_object_mut().unwrap();
    retry.remove("delta");
    retry.insert("body".into(), tampered);
    write_lines(&cassette, &all);
    assert_check(
        &check(&ws, &[&cassette]),
        1,
        &["retry.jsonl:", "the model request differs"],
    );
}

/// The cassette's text with the first request line changed by `edit` (as text: a JSON library
/// would write the body back in its own spelling).
fn edit_first_request(cassette: &Path, edit: impl Fn(&str) -> String) {
    let text = std::fs::read_to_string(cassette).unwrap();
    let mut done = false;
    let out: String = text
        .lines()
        .map(|line| {
            let line = if !done && line.starts_with("{\"type\":\"request\"") {
                done = true;
                let edited = edit(line);
                assert_ne!(edited, line, "the edit changed the request");
                edited
            } else {
                line.to_owned()
            };
            format!("{line}\n")
        })
        .collect();
    std::fs::write(cassette, out).unwrap();
}

#[test]
fn a_request_body_equal_as_json_but_written_otherwise_is_a_divergence() {
    let ws = workspace(json!({"script": [{"text": ["Hi."]}]}));
    let cassette = record(&ws, "bytes.jsonl", "json", &["--no-session", "-p", "hi"]);
    assert_check(&check(&ws, &[&cassette]), 0, &[]);
    let recorded = std::fs::read_to_string(&cassette).unwrap();
    let tokens = "\"max_completion_tokens\":16384";
    assert!(
        recorded.contains(tokens),
        "the mock model's request sets its tokens"
    );

    // A space where this build writes none: the same JSON, other bytes.
    edit_first_request(&cassette, |line| {
        line.replace(tokens, "\"max_completion_tokens\": 16384")
    });
    assert_check(
        &check(&ws, &[&cassette]),
        1,
        &["the model request differs", "byte"],
    );

    // The body's first key moved to its end: equal as a JSON object.
    std::fs::write(&cassette, &recorded).unwrap();
    edit_first_request(&cassette, |line| {
        let start = line.find("\"body\":{").unwrap() + "\"body\":{".len();
        let model = "\"model\":\"mock-model\",";
        assert!(line[start..].starts_with(model), "{line}");
        let body_end = start + matching_brace(&line[start - 1..]) - 1;
        format!(
            "{}{},{}{}",
            &line[..start],
            &line[start + model.len()..body_end],
            model.trim_end_matches(','),
            &line[body_end..]
        )
    });
    assert_check(&check(&ws, &[&cassette]), 1, &["the model request differs"]);
    std::fs::write(&cassette, &recorded).unwrap();
    assert_check(&check(&ws, &[&cassette]), 0, &[]);
}

/// The length of the JSON object `text` starts with, up to and with its closing brace.
fn matching_brace(text: &str) -> usize {
    let (mut depth, mut in_string, mut escaped) = (0, false, false);
    for (i, c) in text.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' if in_string => escaped = true,
            '"' => in_string = !in_string,
            '{' if !in_string => depth += 1,
            '}' if !in_string => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    panic!("no closing brace in {text}")
}

/// The cassette with `from` replaced by `to` in its chunk lines (the recorded response bytes).
fn edit_chunks(cassette: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(cassette).unwrap();
    let out: String = text
        .lines()
        .map(|line| {
            if line.starts_with("{\"type\":\"chunk\"") {
                format!("{}\n", line.replace(from, to))
            } else {
                format!("{line}\n")
            }
        })
        .collect();
    assert_ne!(out, text, "{from:?} is in the recorded response");
    std::fs::write(cassette, out).unwrap();
}

#[test]
fn a_text_mode_run_whose_events_changed_but_not_its_last_answer_diverges() {
    let ws = workspace(json!({"script": [{"text": ["Done."]}]}));
    let cassette = record(&ws, "text.jsonl", "text", &["--no-session", "-p", "go"]);
    assert_check(&check(&ws, &[&cassette]), 0, &[]);
    // Other usage: the same answer printed, other events (`message_end` holds the usage).
    let recorded = std::fs::read_to_string(&cassette).unwrap();
    let usage = regex_like_usage(&recorded);
    edit_chunks(&cassette, &usage, &usage.replace(": ", ": 9"));
    assert_check(
        &check(&ws, &[&cassette]),
        1,
        &["text.jsonl:", "the events differ", "-{", "+{"],
    );
}

/// The `"completion_tokens": N` of the recorded response (escaped, as a chunk line holds it).
fn regex_like_usage(cassette: &str) -> String {
    let key = r#"\"completion_tokens\": "#;
    let start = cassette.find(key).expect("the response reports its usage");
    let digits = cassette[start + key.len()..]
        .chars()
        .take_while(char::is_ascii_digit)
        .count();
    cassette[start..start + key.len() + digits].to_owned()
}

#[test]
fn a_wake_before_the_sessions_timer_diverges() {
    // A retried call, recorded here rather than taken from the corpus, so that the check is of
    // this build's retry whatever edition the corpus was recorded with.
    let ws = workspace(json!({
        "settings": {"retry": {"enabled": true, "baseDelayMs": 50}},
        "script": [{"status": 500}, {"text": ["Recovered."]}],
    }));
    let recorded = record(
        &ws,
        "recorded.jsonl",
        "json",
        &["--no-session", "-p", "Hello"],
    );
    let cassette = ws.root().join("retry.jsonl");
    let mut all = lines(&recorded);
    assert_check(&check(&ws, &[&recorded]), 0, &[]);
    let wake = all.iter().position(|l| l["type"] == "wake").unwrap();
    let before = all[..wake]
        .iter()
        .rev()
        .find_map(|l| l["t"].as_u64())
        .unwrap();
    all[wake]["t"] = json!(before + 1);
    write_lines(&cassette, &all);
    assert_check(
        &check(&ws, &[&cassette]),
        1,
        &["retry.jsonl:", "before its timer"],
    );
}

#[test]
fn a_response_that_decodes_to_more_events_than_recorded_is_named() {
    let ws = workspace(json!({"script": [{"text": ["One", " two"]}]}));
    let cassette = record(&ws, "more.jsonl", "json", &["--no-session", "-p", "hi"]);
    assert_check(&check(&ws, &[&cassette]), 0, &[]);
    // One recorded event fewer than the bytes decode to.
    let mut all = lines(&cassette);
    let last_event = all.iter().rposition(|l| l["type"] == "event").unwrap();
    all.remove(last_event);
    write_lines(&cassette, &all);
    assert_check(
        &check(&ws, &[&cassette]),
        1,
        &["more.jsonl:", "more events than recorded"],
    );
}

/// `pi --mode rpc` on the mock model recording into `cassette` (with `extra` flags), its stdin,
/// stdout and stderr piped.
fn rpc_recording(ws: &Workspace, cassette: &Path, extra: &[&str]) -> std::process::Child {
    let mut args: Vec<OsString> = [
        "--mode",
        "rpc",
        "--provider",
        "mock",
        "--model",
        "mock-model",
    ]
    .iter()
    .chain(extra)
    .map(OsString::from)
    .collect();
    args.extend([OsString::from("--record"), cassette.as_os_str().to_owned()]);
    ws.command(pi().as_ref(), &args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Reads an RPC session's stdout into `seen` until `runs` runs have ended (`agent_end`).
fn read_until_runs_ended(stdout: &mut impl std::io::Read, seen: &mut String, runs: usize) {
    let mut buffer = [0u8; 4096];
    while seen.matches("\"type\":\"agent_end\"").count() < runs {
        let read = stdout.read(&mut buffer).unwrap();
        assert!(read > 0, "the recording ended before answering: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buffer[..read]));
    }
}

/// An RPC session may stop while a call's events are still coming (its stdin closed), but one
/// that went on past the call took them all: a missing one is named as in any other mode.
#[test]
fn an_rpc_session_that_went_on_past_a_call_took_all_its_events() {
    use std::io::Write as _;
    let ws = workspace(json!({"script": [{"text": ["One", " two"]}, {"text": ["Three."]}]}));
    let cassette = ws.root().join("cwd").join("more.jsonl");
    let mut child = rpc_recording(&ws, &cassette, &["--no-session"]);
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = String::new();
    for (n, message) in ["first", "second"].into_iter().enumerate() {
        let prompt = json!({"id": message, "type": "prompt", "message": message});
        writeln!(stdin, "{prompt}").unwrap();
        // Each prompt's run ends before the next prompt, and the last before stdin ends.
        read_until_runs_ended(&mut stdout, &mut seen, n + 1);
    }
    drop(stdin);
    assert_eq!(child.wait().unwrap().code(), Some(0));
    assert_check(&check(&ws, &[&cassette]), 0, &[]);
    let mut all = lines(&cassette);
    let last_of_first = all
        .iter()
        .rposition(|l| l["type"] == "event" && l["call"] == 1)
        .unwrap();
    all.remove(last_of_first);
    write_lines(&cassette, &all);
    assert_check(
        &check(&ws, &[&cassette]),
        1,
        &["more.jsonl:", "more events than recorded"],
    );
}

#[test]
fn an_output_or_session_file_divergence_is_a_line_diff_not_two_digests() {
    let ws = workspace(json!({"script": [{"text": ["Done."]}, {"text": ["Done."]}]}));
    let json_run = record(&ws, "json.jsonl", "json", &["-p", "go"]);
    let text_run = record(&ws, "text.jsonl", "text", &["-p", "go"]);
    for cassette in [&json_run, &text_run] {
        assert_check(&check(&ws, &[cassette]), 0, &[]);
        let recorded = std::fs::read_to_string(cassette).unwrap();
        let usage = regex_like_usage(&recorded);
        edit_chunks(cassette, &usage, &usage.replace(": ", ": 9"));
    }
    // json mode: stdout is the events.
    let out = check(&ws, &[&json_run]);
    assert_check(
        &out,
        1,
        &[
            "the stdout differs",
            "\n-{\"type\":\"message_end\"",
            "\n+{\"type\":\"message_end\"",
        ],
    );
    assert!(!stderr(&out).contains("SHA-256"), "{}", stderr(&out));
    // text mode prints the same answer; the session file holds the usage.
    let out = check(&ws, &[&text_run]);
    assert_check(
        &out,
        1,
        &[
            "the session file differs",
            "\n-{\"type\":\"message\"",
            "\n+{\"type\":\"message\"",
        ],
    );
    assert!(!stderr(&out).contains("SHA-256"), "{}", stderr(&out));

    // A cassette written before the texts were kept still checks by its digests.
    let mut all = lines(&json_run);
    let outcome = all.last_mut().unwrap().as_object_mut().unwrap();
    assert!(
        outcome.remove("stdoutText").is_some(),
        "the outcome keeps the output"
    );
    write_lines(&json_run, &all);
    assert_check(
        &check(&ws, &[&json_run]),
        1,
        &["the stdout differs", "SHA-256"],
    );
}

#[test]
fn a_directory_check_skips_what_is_not_a_cassette_and_says_so() {
    let ws = workspace(json!({"script": [{"text": ["Done."]}]}));
    let cassette = record(&ws, "run.jsonl", "json", &["-p", "go"]);
    let dir = ws.root().join("cwd");
    let stray = dir.join("stray.jsonl");
    std::fs::write(&stray, "{\"foo\":1}\n").unwrap();
    // The run's own session file, a Pi session.
    let sessions = ws.root().join("agent").join("sessions");
    let session = pi_testkit::files_under(&sessions)
        .into_iter()
        .next()
        .expect("the run wrote a session");
    let copied = dir.join("session.jsonl");
    std::fs::copy(&session, &copied).unwrap();

    let out = check(&ws, &[&dir]);
    assert_check(&out, 0, &["stray.jsonl", "session.jsonl", "not a cassette"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("ok        {}", cassette.display())),
        "{stdout}"
    );
    assert!(stdout.contains("1 cassettes: 1 reproduced"), "{stdout}");

    // Named on the command line, a file that is not a cassette cannot be used.
    assert_check(&check(&ws, &[&stray]), 125, &["stray.jsonl"]);

    // A damaged cassette (its header, then a bad line) is reported, not skipped.
    let damaged = dir.join("damaged.jsonl");
    let text = std::fs::read_to_string(&cassette).unwrap();
    let header = text.lines().next().unwrap();
    std::fs::write(
        &damaged,
        format!("{header}\n{{\"type\":\"nonsense\"}}\n{{}}\n"),
    )
    .unwrap();
    let out = check(&ws, &[&dir]);
    assert_check(&out, 125, &["damaged.jsonl:"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!("UNUSABLE  {}", damaged.display())),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("ok        {}", cassette.display())),
        "{stdout}"
    );
}

#[test]
fn a_replay_into_a_session_dir_leaves_the_files_there_alone() {
    let ws = workspace(json!({"script": [{"text": ["Done."]}]}));
    let cassette = record(&ws, "run.jsonl", "json", &["-p", "go"]);
    let sessions = ws.root().join("agent").join("sessions");
    let session = pi_testkit::files_under(&sessions)
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .expect("the run wrote a session");
    let recorded = std::fs::read(&session).unwrap();
    let dir = session.parent().unwrap();
    for _ in 0..2 {
        let out = pi_in(
            &ws,
            &[
                "replay",
                cassette.to_str().unwrap(),
                "--session-dir",
                dir.to_str().unwrap(),
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        assert!(
            std::fs::read(&session).unwrap() == recorded,
            "the recorded session file is unchanged"
        );
    }
    // Each replay wrote its session to a file of its own, the same as the recorded one.
    let mut written: Vec<PathBuf> = pi_testkit::files_under(dir)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl") && *p != session)
        .collect();
    written.sort();
    assert_eq!(written.len(), 2, "{written:?}");
    for file in written {
        assert!(
            std::fs::read(&file).unwrap() == recorded,
            "{} holds the replayed session",
            file.display()
        );
    }
}

#[test]
fn config_current_reads_the_context_files_here_or_in_the_workspace() {
    let ws = workspace(json!({
        "files": {"AGENTS.md": "Answer briefly.\n"},
        "script": [{"text": ["Brief."]}],
    }));
    let cassette = record(&ws, "run.jsonl", "json", &["--no-session", "-p", "hi"]);
    let elsewhere = ws.root().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::write(elsewhere.join("AGENTS.md"), "Answer at length.\n").unwrap();
    let check_current = |extra: &[&str], here: &Path| {
        let mut args: Vec<OsString> = vec!["replay".into(), "--check".into()];
        args.extend(["--config", "current"].iter().map(OsString::from));
        args.extend(extra.iter().map(OsString::from));
        args.push(cassette.clone().into_os_string());
        ws.command(pi().as_ref(), &args)
            .current_dir(here)
            .output()
            .unwrap()
    };
    let needles = ["the model request differs", "+  ↪ Answer at length."];
    // Run from another directory: its AGENTS.md, not the recorded directory's.
    assert_check(&check_current(&[], &elsewhere), 1, &needles);
    // Or named by --workspace.
    let recorded_dir = ws.root().join("cwd");
    let workspace = ["--workspace", elsewhere.to_str().unwrap()];
    assert_check(&check_current(&workspace, &recorded_dir), 1, &needles);
    // From the recorded directory, unchanged, it reproduces.
    assert_check(&check_current(&[], &recorded_dir), 0, &[]);
}

#[test]
fn a_run_whose_bash_output_was_cut_replays_with_its_tools_live() {
    let ws = workspace(json!({"script": [
        {"tool_calls": [{"id": "call_1", "name": "bash", "arguments": {"command": "seq 1 3000"}}]},
        {"text": ["Done."]}
    ]}));
    let cassette = record(&ws, "cut.jsonl", "json", &["--no-session", "-p", "count"]);
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(
        text.contains("pi-bash-"),
        "the output was cut and kept in a file"
    );
    let workspace = ws.root().join("cwd");
    for _ in 0..2 {
        let out = pi_in(
            &ws,
            &[
                "replay",
                cassette.to_str().unwrap(),
                "--tools",
                "live",
                "--workspace",
                workspace.to_str().unwrap(),
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            stdout.contains("\"type\":\"tool_execution_update\""),
            "the live command's updates reach the output: {stdout}"
        );
    }
}

/// Records an RPC session in the workspace's folder whose only command is `bash` running
/// `command`; the cassette.
fn record_rpc_bash(ws: &Workspace, name: &str, command: &str) -> PathBuf {
    use std::io::Write;
    use std::process::Stdio;
    let cassette = ws.root().join("cwd").join(name);
    let args: Vec<OsString> = [
        "--mode",
        "rpc",
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--no-session",
        "--record",
        cassette.to_str().unwrap(),
    ]
    .iter()
    .map(OsString::from)
    .collect();
    let mut child = ws
        .command(pi().as_ref(), &args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let line = json!({"id": "b", "type": "bash", "command": command});
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
    let mut stdout = child.stdout.take().unwrap();
    // The answer comes once the command ran; then stdin ends.
    let mut seen = String::new();
    let mut buffer = [0u8; 4096];
    while !seen.contains("\"command\":\"bash\"") {
        let n = std::io::Read::read(&mut stdout, &mut buffer).unwrap();
        assert!(n > 0, "the recording ended before answering: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buffer[..n]));
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    cassette
}

#[test]
fn an_rpc_bash_command_runs_for_real_only_when_the_replay_asks_for_live_tools() {
    let ws = workspace(json!({"script": []}));
    let dir = ws.root().join("cwd");
    std::fs::write(dir.join("note.txt"), "recorded\n").unwrap();
    let made = dir.join("made-by-bash");
    let cassette = record_rpc_bash(&ws, "bash.jsonl", "cat note.txt; echo made > made-by-bash");
    assert!(made.exists(), "the recording ran the command");
    std::fs::remove_file(&made).unwrap();
    let replay = |extra: &[&str]| {
        let mut args = vec!["replay", cassette.to_str().unwrap()];
        args.extend(extra);
        pi_in(&ws, &args)
    };

    // From the recording: nothing runs, the recorded output is answered.
    let out = replay(&[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("recorded\\n"));
    assert!(
        !made.exists(),
        "a replay from the recording ran the command"
    );

    // In place: the command runs in the workspace, and the run still reproduces.
    let workspace = dir.to_str().unwrap();
    let out = replay(&["--check", "--tools", "in-place", "--workspace", workspace]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(made.exists(), "the command did not run in the workspace");
    std::fs::remove_file(&made).unwrap();

    // Live, in a scratch copy of today's workspace: today's file is read.
    std::fs::write(dir.join("note.txt"), "today\n").unwrap();
    let out = replay(&["--tools", "live", "--workspace", workspace]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("today\\n"), "{stdout}");
    assert!(
        !made.exists(),
        "a scratch copy's command wrote into the workspace"
    );
}

#[test]
fn an_eval_trial_whose_bash_output_was_cut_replays_without_diverging() {
    let ws = workspace(json!({"script": [
        {"tool_calls": [{"id": "call_1", "name": "bash", "arguments": {"command": "seq 1 3000"}}]},
        {"text": ["Counted."]}
    ]}));
    let suite = ws.root().join("cwd").join("count.toml");
    std::fs::write(
        &suite,
        r#"
[defaults]
models = ["mock/mock-model"]

[[task]]
id = "count"
prompt = "Count to 3000"

[[task.check]]
kind = "text_contains"
text = "Counted"
"#,
    )
    .unwrap();
    let suite = suite.to_str().unwrap();
    let eval = |args: &[&str]| {
        let mut all = vec!["eval", suite, "-q", "--jobs", "1"];
        all.extend(args);
        pi_in(&ws, &all)
    };
    let recorded = eval(&["--record", "c", "--out", "rec", "--isolate", "none"]);
    assert_eq!(recorded.status.code(), Some(0), "{}", stderr(&recorded));
    let cassette = pi_testkit::files_under(&ws.root().join("cwd").join("c"))
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    let text = std::fs::read_to_string(cassette).unwrap();
    assert!(
        text.contains("pi-bash-"),
        "the output was cut and kept in a file"
    );
    let replayed = eval(&["--replay", "c", "--out", "rep"]);
    let results = std::fs::read_to_string(ws.root().join("cwd/rep/results.json")).unwrap();
    let results: Value = serde_json::from_str(&results).unwrap();
    let trial = &results["trials"][0];
    assert_eq!(
        (trial["status"].as_str(), replayed.status.code()),
        (Some("passed"), Some(0)),
        "{}\n{}",
        trial["reason"],
        stderr(&replayed)
    );
}

#[test]
fn a_build_that_makes_more_or_fewer_attempts_than_recorded_diverges() {
    let ws = workspace(json!({
        "settings": {"retry": {"enabled": false, "provider": {"maxRetries": 2}}},
        "script": [
            {"status": 500, "headers": {"retry-after": "0"}},
            {"text": ["Recovered on the second request."]}
        ],
    }));
    let cassette = record(
        &ws,
        "attempts.jsonl",
        "json",
        &["--no-session", "-p", "Recover"],
    );
    let recorded = lines(&cassette);
    let responses: Vec<usize> = (0..recorded.len())
        .filter(|&i| recorded[i]["type"] == "response")
        .collect();
    assert_eq!(responses.len(), 2, "one call, two attempts");

    // The second attempt failed too: this build tries a third, which was never made.
    let mut more = recorded.clone();
    more[responses[1]]["status"] = json!(500);
    write_lines(&cassette, &more);
    assert_check(
        &check(&ws, &[&cassette]),
        1,
        &["attempts.jsonl:", "no more attempts were recorded"],
    );

    // The first failure says not to retry: this build makes one attempt where two were
    // recorded.
    let mut fewer = recorded.clone();
    fewer[responses[0]]["headers"]
        .as_array_mut()
        .unwrap()
        .push(json!(["x-should-retry", "false"]));
    write_lines(&cassette, &fewer);
    assert_check(
        &check(&ws, &[&cassette]),
        1,
        &[
            "attempts.jsonl:",
            "reads more of the response than the recorded run did",
        ],
    );

    // The first attempt could not connect, and the call's options allow no retry: this build
    // makes one attempt where two were recorded.
    let mut connect: Vec<Value> = Vec::new();
    let first_end = recorded.iter().position(|l| l["type"] == "end").unwrap();
    for (i, line) in recorded.iter().enumerate() {
        let first_body = i > responses[0] && i < first_end && line["type"] == "chunk";
        if i == responses[0] || first_body {
            continue;
        }
        let mut line = line.clone();
        if i == first_end {
            line["end"] = json!({"error": {"kind": "connect", "message": "refused"}});
        }
        connect.push(line);
    }
    write_lines(&cassette, &connect);
    assert_check(&check(&ws, &[&cassette]), 0, &[]);
    let call = connect.iter().position(|l| l["type"] == "call").unwrap();
    connect[call]["options"]["maxRetries"] = json!(0);
    write_lines(&cassette, &connect);
    assert_check(
        &check(&ws, &[&cassette]),
        1,
        &["attempts.jsonl:", "this build made 1 attempt"],
    );
}

/// Whether `bytes` hold something a terminal acts on: ESC, BEL, a C1 control (as UTF-8), or a
/// bidirectional override.
fn holds_terminal_control(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    text.chars().any(|c| {
        (c.is_control() && c != '\n' && c != '\t') || ('\u{202a}'..='\u{202e}').contains(&c)
    })
}

/// A cassette from a pull request whose text (a prompt, its command line, its file name, a line
/// it cannot read) holds terminal escape sequences: what the check prints about it escapes
/// them, so the log is neither cleared, retitled nor reordered.
#[test]
fn a_hostile_cassettes_escape_sequences_reach_no_terminal() {
    const EVIL: &str = "\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}31m\u{202e}";
    let ws = workspace(json!({"script": [{"text": ["Hi."]}]}));
    let cassette = record(&ws, "plain.jsonl", "json", &["-p", "hello"]);
    let mut edited = lines(&cassette);
    for line in &mut edited {
        if line["type"] == "cassette" {
            line["command"] = json!(["-p", format!("hello{EVIL}")]);
        }
        if line["type"] == "outside" {
            let text = serde_json::to_string(&line["input"]).unwrap();
            let escaped = serde_json::to_string(EVIL).unwrap();
            let escaped = escaped.trim_matches('"');
            let text = text.replace("hello", &format!("hello{escaped}"));
            line["input"] = serde_json::from_str(&text).unwrap();
        }
    }
    let named = ws.root().join("cwd").join(format!("pr{EVIL}.jsonl"));
    write_lines(&named, &edited);
    let unreadable = ws.root().join("cwd").join("unreadable.jsonl");
    let mut text = std::fs::read_to_string(&cassette).unwrap();
    text.push_str(&format!("{}\n", json!({"type": EVIL})));
    std::fs::write(&unreadable, text).unwrap();

    for (path, code) in [(&named, 1), (&unreadable, 125)] {
        let out = check(&ws, &[path]);
        assert_eq!(out.status.code(), Some(code), "{}", stderr(&out));
        for (what, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            assert!(
                !holds_terminal_control(bytes),
                "{what} of the check of {} holds terminal controls: {:?}",
                path.display(),
                String::from_utf8_lossy(bytes)
            );
        }
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
        assert!(
            said.contains("\\u{1b}"),
            "the escapes are shown escaped: {said}"
        );
    }
}

/// An RPC session's output that differs is shown as a diff of its lines too, not as two
/// digests.
#[test]
fn an_rpc_sessions_output_divergence_is_a_line_diff() {
    use std::io::Write as _;
    let ws = workspace(json!({"script": [{"text": ["Done."]}]}));
    let cassette = ws.root().join("cwd").join("rpc.jsonl");
    let mut child = rpc_recording(&ws, &cassette, &[]);
    let mut stdin = child.stdin.take().unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"id": "p", "type": "prompt", "message": "go"})
    )
    .unwrap();
    // The run ends before the next line (else stdin's end could stop it before its message_end).
    let mut stdout = child.stdout.take().unwrap();
    read_until_runs_ended(&mut stdout, &mut String::new(), 1);
    writeln!(stdin, "{}", json!({"id": "s", "type": "get_state"})).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_check(&check(&ws, &[&cassette]), 0, &[]);
    let recorded = std::fs::read_to_string(&cassette).unwrap();
    let usage = regex_like_usage(&recorded);
    edit_chunks(&cassette, &usage, &usage.replace(": ", ": 9"));
    let out = check(&ws, &[&cassette]);
    assert_check(
        &out,
        1,
        &[
            "the stdout differs",
            "\n-{\"type\":\"message_end\"",
            "\n+{\"type\":\"message_end\"",
        ],
    );
    assert!(!stderr(&out).contains("SHA-256"), "{}", stderr(&out));
}

/// The attack on an Anthropic message thread: a recorded run of two prompts, the second
/// continuing the first answer's thread, its cassette altered one place at a time (the thread
/// the second request names, that request sent without its thread, the first answer's message
/// id the thread continues from). Each must be a divergence, never "reproduced".
#[test]
fn a_tampered_message_thread_is_a_divergence() {
    let ws = workspace(json!({"script": [
        {"text": ["first answer"]},
        {"text": ["second answer"]},
    ]}));
    let models = ws.root().join("agent/models.json");
    let mut config: Value =
        serde_json::from_str(&std::fs::read_to_string(&models).unwrap()).unwrap();
    config["providers"]["mock-anthropic"]["models"][0]["compat"] =
        json!({"supportsMessageThreads": true});
    std::fs::write(&models, config.to_string()).unwrap();
    let cassette = ws.root().join("cwd/threads.jsonl");
    let args = [
        "--provider",
        "mock-anthropic",
        "--model",
        "mock-claude",
        "--no-session",
        "--mode",
        "json",
        "--record",
        cassette.to_str().unwrap(),
        "one",
        "two",
    ];
    let recorded = pi_in(&ws, &args);
    assert_eq!(recorded.status.code(), Some(0), "{}", stderr(&recorded));
    assert_check(&check(&ws, &[&cassette]), 0, &[]);
    let recorded = lines(&cassette);
    let continuing = recorded
        .iter()
        .position(|l| l["type"] == "request" && l["body"]["thread"]["type"] == "continue")
        .unwrap();
    let id = recorded[continuing]["body"]["thread"]["previous_message_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let forged = format!("{id}x");
    let mut named = recorded.clone();
    named[continuing]["body"]["thread"]["previous_message_id"] = json!(forged);
    let mut threadless = recorded.clone();
    let body = threadless[continuing]["body"].as_object_mut().unwrap();
    body.remove("thread");
    let mut answered = recorded.clone();
    let answer = answered[..continuing]
        .iter()
        .position(|l| l["type"] != "request" && l.to_string().contains(&id))
        .unwrap();
    answered[answer] =
        serde_json::from_str(&answered[answer].to_string().replace(&id, &forged)).unwrap();
    for (what, altered) in [
        ("the thread named", named),
        ("no thread", threadless),
        ("the first answer's id", answered),
    ] {
        let path = ws.root().join("cwd/tampered.jsonl");
        write_lines(&path, &altered);
        let out = check(&ws, &[&path]);
        assert_eq!(out.status.code(), Some(1), "{what}: {}", stderr(&out));
    }
}
