//! A recorded RPC run whose client replaces its session (`new_session`, `switch_session`,
//! `fork`, `clone`) is one cassette holding every session of it, and `pi replay --check`
//! reproduces it whole (stdout, each session's file as it was left); a changed line after a
//! replacement, or a left file otherwise, is a divergence.

use std::io::Read;
use std::process::{Child, ChildStdin, ChildStdout, Stdio};

use serde_json::{json, Value};

use super::{assert_replays, replay_check, rpc_recording, rpc_recording_with, workspace};

/// A recording goes on past `new_session`: the commands after it are in the cassette, after a
/// `replaced` line.
#[test]
fn a_recorded_rpc_session_goes_on_in_its_cassette_where_the_session_is_replaced() {
    let ws = workspace(json!({"script": []}));
    let cassette = ws.root().join("cwd").join("rpc.jsonl");
    let lines = [
        json!({"id": "s1", "type": "get_state"}),
        json!({"id": "n1", "type": "set_session_name", "name": "first"}),
        json!({"id": "r", "type": "new_session"}),
        json!({"id": "s2", "type": "get_state"}),
    ];
    let input: String = lines.iter().map(|line| format!("{line}\n")).collect();
    // Recording changes nothing: the session is replaced as without it.
    let text = recorded_new_session(&ws, &cassette, &input);
    let stdin_lines = lines_of(&text, "stdin");
    assert_eq!(stdin_lines, 4, "every command is in the cassette");
    let replaced = lines_of(&text, "replaced");
    assert_eq!(replaced, 1, "{text}");
    assert!(text
        .lines()
        .last()
        .unwrap()
        .starts_with(r#"{"type":"outcome""#));
    assert_replays(&cassette);

    // Replayed in place, it ends at the replacement and says so: its later session would be
    // written over the user's files.
    let elsewhere = ws.root().join("elsewhere");
    let args = super::words(&[
        "--mode",
        "rpc",
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--session-dir",
        elsewhere.to_str().unwrap(),
        "--replay",
        cassette.to_str().unwrap(),
    ]);
    let out = ws
        .command(super::pi().as_ref(), &args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("a replay in place ends here"), "{stderr}");
    let replayed = String::from_utf8_lossy(&out.stdout);
    assert!(replayed.contains(r#""id":"n1""#), "{replayed}");
    assert!(!replayed.contains(r#""id":"s2""#), "{replayed}");
}

/// A replacing command spelled with an escape (`"new_\u0073ession"` is `new_session`), read
/// with the lines around it at once: recorded as a replacement and replayed whole.
#[test]
fn an_escaped_replacing_command_read_with_others_records_and_replays() {
    let ws = workspace(json!({"script": []}));
    let cassette = ws.root().join("cwd").join("escaped.jsonl");
    let lines = concat!(
        r#"{"id":"n1","type":"set_session_name","name":"first"}"#,
        "\n",
        r#"{ "id" : "r", "type" : "new_\u0073ession" }"#,
        "\n",
        r#"{"id":"s2","type":"get_state"}"#,
        "\n",
    );
    let text = recorded_new_session(&ws, &cassette, lines);
    let replaced = lines_of(&text, "replaced");
    assert_eq!(replaced, 1, "{text}");
    assert_replays(&cassette);
}

/// Nothing lost: an RPC run whose client starts a new session and switches back to the first
/// file is one cassette holding every session of it, and `pi replay --check` reproduces all of
/// it (stdout and session files); a changed line after a replacement is a divergence.
#[test]
fn an_rpc_run_across_new_and_switched_sessions_records_whole_and_replays() {
    let ws = workspace(json!({"script": [
        {"text": ["First."]}, {"text": ["Second."]}, {"text": ["Third."]}
    ]}));
    let cassette = ws.root().join("cwd").join("multi.jsonl");
    let mut run = Driver::new(rpc_recording(&ws, &cassette, Stdio::inherit()));
    run.ask(
        json!({"id": "p1", "type": "prompt", "message": "one"}),
        AGENT_END,
    );
    let state = run.ask(json!({"id": "s1", "type": "get_state"}), r#""id":"s1""#);
    let first_file = state["data"]["sessionFile"].clone();
    run.ask(json!({"id": "ns", "type": "new_session"}), r#""id":"ns""#);
    run.ask(
        json!({"id": "p2", "type": "prompt", "message": "two"}),
        AGENT_END,
    );
    let switch = json!({"id": "sw", "type": "switch_session", "sessionPath": first_file});
    run.ask(switch, r#""id":"sw""#);
    run.ask(
        json!({"id": "p3", "type": "prompt", "message": "three"}),
        AGENT_END,
    );
    let (status, seen, _) = run.close();
    assert!(status.success(), "{seen}");

    let text = std::fs::read_to_string(&cassette).unwrap();
    let stdin_lines = lines_of(&text, "stdin");
    assert_eq!(stdin_lines, 6, "every command is in the cassette");
    assert_replays(&cassette);

    // The last prompt, sent to the session switched to, said otherwise; the first session's
    // file, as the replacement left it, was otherwise: each a divergence.
    let changed_prompt = text.replacen(r#"\"message\":\"three\""#, r#"\"message\":\"tres\""#, 1);
    let left_at = text.find(r#""left":{"session":""#).unwrap() + r#""left":{"session":""#.len();
    let mut changed_left = text.clone();
    changed_left.replace_range(left_at..left_at + 8, "00000000");
    // Without the line that replaced the session, even a plain replay (no output compared)
    // ends where the recording goes on in another session: a divergence, not a success.
    let without_new: String = text
        .lines()
        .filter(|l| !l.contains(r#"\"type\":\"new_session\""#))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(without_new, text);
    let cut = ws.root().join("cut.jsonl");
    std::fs::write(&cut, without_new).unwrap();
    let plain = std::process::Command::new(super::pi())
        .arg("replay")
        .arg(&cut)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&plain.stderr);
    assert_eq!(plain.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the session stopped where the recording goes on"),
        "{stderr}"
    );
    for (what, changed) in [("prompt", changed_prompt), ("left file", changed_left)] {
        assert_ne!(changed, text, "{what}");
        let tampered = ws.root().join("tampered.jsonl");
        std::fs::write(&tampered, changed).unwrap();
        let check = replay_check(&tampered);
        let stderr = String::from_utf8_lossy(&check.stderr);
        assert_eq!(check.status.code(), Some(1), "{what}: {stderr}");
        if what == "left file" {
            assert!(
                stderr.contains("session file (of the session replaced)"),
                "{stderr}"
            );
        }
    }
}

/// A session switched to that is over a megabyte goes to a side file beside the cassette, as a
/// large resumed session in the header does, and the run still replays whole.
#[test]
fn a_large_session_switched_to_goes_to_a_side_file() {
    let ws = workspace(json!({"script": [{"text": ["Big."]}, {"text": ["Again."]}]}));
    let big = "lorem ipsum ".repeat(100_000);
    super::run_with_big_prompt(&ws, &big, &[]);
    let written = pi_testkit::files_under(&ws.root().join("agent"));
    let big_file = written
        .iter()
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();

    let cassette = ws.root().join("cwd").join("switched.jsonl");
    let mut run = Driver::new(rpc_recording(&ws, &cassette, Stdio::inherit()));
    let switch = json!({"id": "sw", "type": "switch_session", "sessionPath": big_file});
    run.ask(switch, r#""id":"sw""#);
    run.ask(
        json!({"id": "p", "type": "prompt", "message": "again"}),
        AGENT_END,
    );
    let (status, seen, _) = run.close();
    assert!(status.success(), "{seen}");
    let text = std::fs::read_to_string(&cassette).unwrap();
    let replaced: Value = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["type"] == "replaced")
        .unwrap();
    assert!(replaced["session"].get("content").is_none());
    let name = replaced["session"]["contentFile"].as_str().unwrap();
    assert!(name.starts_with("blobs/"), "{name}");
    // The request still carries the conversation; the replaced line no longer repeats it.
    assert!(text.len() < big.len() * 3 / 2, "{} bytes", text.len());
    assert_replays(&cassette);
}

/// A fork before the first user message (a branch that holds entries no file has yet) and a
/// clone at the leaf (written at once) of a session with a file, and a clone of a session kept
/// in memory: each recorded with what the new session started with, and replayed whole from
/// the cassette alone, the recorded run's files deleted.
#[test]
fn forks_and_clones_record_what_the_new_session_starts_with_and_replay() {
    let ws = workspace(json!({"script": [
        {"text": ["First."]}, {"text": ["Second."]}, {"text": ["Third."]},
        {"text": ["Fourth."]}, {"text": ["Fifth."]}
    ]}));
    for (name, more) in [
        ("files.jsonl", &[][..]),
        ("memory.jsonl", &["--no-session"][..]),
    ] {
        let cassette = ws.root().join("cwd").join(name);
        let mut run = Driver::new(rpc_recording_with(&ws, &cassette, Stdio::inherit(), more));
        run.ask(
            json!({"id": "p1", "type": "prompt", "message": "one"}),
            AGENT_END,
        );
        if more.is_empty() {
            let list = json!({"id": "fm", "type": "get_fork_messages"});
            let listed = run.ask(list, r#""id":"fm""#);
            let entry = listed["data"]["messages"][0]["entryId"].clone();
            let fork = json!({"id": "f", "type": "fork", "entryId": entry});
            let forked = run.ask(fork, r#""id":"f""#);
            assert_eq!(forked["data"]["text"], "one", "{}", run.seen);
            run.ask(
                json!({"id": "p2", "type": "prompt", "message": "two"}),
                AGENT_END,
            );
        }
        run.ask(json!({"id": "c", "type": "clone"}), r#""id":"c""#);
        run.ask(
            json!({"id": "p3", "type": "prompt", "message": "three"}),
            AGENT_END,
        );
        let (status, seen, _) = run.close();
        assert!(status.success(), "{seen}");

        let text = std::fs::read_to_string(&cassette).unwrap();
        let replaced: Vec<Value> = text
            .lines()
            .filter(|l| l.starts_with(r#"{"type":"replaced""#))
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(replaced.len(), 2 - usize::from(!more.is_empty()), "{text}");
        // Each new session started with entries: the branch before the first message (a
        // model change, no message yet), the clone's conversation.
        for line in &replaced {
            assert_eq!(line["reason"], "fork");
            assert!(line["session"]["content"].is_string(), "{line}");
        }
        // The replay never reads the files the recorded run wrote: gone, it forks the same.
        let _ = std::fs::remove_dir_all(ws.root().join("agent").join("sessions"));
        assert_replays(&cassette);
    }
}

/// An RPC run driven a command at a time: each sent, then its run's lines read until the one
/// awaited.
pub(crate) struct Driver {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: ChildStdout,
    /// What the run printed so far.
    pub(crate) seen: String,
    /// Where the next awaited line is looked for in `seen`.
    from: usize,
}

impl Driver {
    pub(crate) fn new(mut child: Child) -> Self {
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        Driver {
            child,
            stdin,
            stdout,
            seen: String::new(),
            from: 0,
        }
    }

    /// Sends `line`, then reads until a whole line past the last one awaited holds `marker`;
    /// returns it.
    pub(crate) fn ask(&mut self, line: Value, marker: &str) -> Value {
        let stdin = self.stdin.as_mut().unwrap();
        std::io::Write::write_all(stdin, format!("{line}\n").as_bytes()).unwrap();
        loop {
            if let Some(line) = self.seen[self.from..]
                .split_inclusive('\n')
                .scan(self.from, |at, line| {
                    *at += line.len();
                    Some((*at, line))
                })
                .find(|(_, line)| line.ends_with('\n') && line.contains(marker))
            {
                let (end, text) = (line.0, line.1.to_owned());
                self.from = end;
                return serde_json::from_str(&text).unwrap();
            }
            let mut buffer = [0u8; 4096];
            let read = self.stdout.read(&mut buffer).unwrap();
            assert!(read > 0, "the session ended before {marker}: {}", self.seen);
            self.seen
                .push_str(&String::from_utf8_lossy(&buffer[..read]));
        }
    }

    /// Closes stdin and waits for the run to end: its exit status, what it printed, and its
    /// stderr when piped.
    pub(crate) fn close(mut self) -> (std::process::ExitStatus, String, String) {
        drop(self.stdin.take());
        let rest = self.child.wait_with_output().unwrap();
        self.seen.push_str(&String::from_utf8_lossy(&rest.stdout));
        let stderr = String::from_utf8_lossy(&rest.stderr).into_owned();
        (rest.status, self.seen, stderr)
    }
}

/// The line that ends a prompt's run.
pub(crate) const AGENT_END: &str = r#""type":"agent_end""#;

/// How many of a cassette's lines are of `kind`.
fn lines_of(text: &str, kind: &str) -> usize {
    let start = format!(r#"{{"type":"{kind}""#);
    text.lines().filter(|l| l.starts_with(&start)).count()
}

/// The cassette of an RPC run recorded into `cassette` with `input` written at once on its
/// stdin, which replaced its session with a command `"r"` answered as `new_session`'s success.
fn recorded_new_session(
    ws: &pi_testkit::demo::Workspace,
    cassette: &std::path::Path,
    input: &str,
) -> String {
    let mut child = rpc_recording(ws, cassette, Stdio::inherit());
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(&mut stdin, input.as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(r#""id":"r","type":"response","command":"new_session","success":true"#),
        "{stdout}"
    );
    std::fs::read_to_string(cassette).unwrap()
}
