//! One writer at a time, tried through the real binary against the kit's mock over real HTTP:
//! a second `pi --session FILE` while the first is held mid-run is refused with the holder's pid
//! and writes nothing (the file keeps exactly one run, no branch); with `--wait-for-session` it
//! waits and continues after the first; a writer killed with SIGKILL leaves a lock that the next
//! run takes over, and the session it tore reopens with a report on stderr; an RPC session
//! replaced by another moves its lock; a second recorder into the same cassette is refused.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::{Env, MockLlm};
use serde_json::{json, Value};

/// The mock's script: a bash call, then a reply held open until the test releases it, then a
/// reply for whoever asks next.
fn held_after_a_tool_call() -> Value {
    json!([
        {"tool_calls": [{"id": "call_1", "name": "bash", "arguments": {"command": "echo one"}}]},
        {"text": ["first done"], "hang_until_file": "release"},
        {"text": ["second done"]}
    ])
}

fn session_args<'a>(session: &'a Path, message: &'a str) -> Vec<&'a str> {
    vec![
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--session",
        session.to_str().unwrap(),
        "-p",
        message,
    ]
}

fn lock_file(session: &Path) -> PathBuf {
    let mut name = session.file_name().unwrap().to_os_string();
    name.push(".lock");
    session.with_file_name(name)
}

fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts the first writer and waits until it holds the second model reply open, with the tool
/// call and its result already in the session file.
fn first_writer_held(env: &Env, mock: &MockLlm, session: &Path) -> Child {
    let child = env
        .command(&session_args(session, "first"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("the first writer to be held mid-run", || {
        mock.requests().len() == 2
            && std::fs::read_to_string(session).is_ok_and(|t| t.contains("\"toolResult\""))
    });
    child
}

/// The entries of a session file (lines that do not parse are left out).
fn entries(session: &Path) -> Vec<Value> {
    std::fs::read_to_string(session)
        .unwrap()
        .lines()
        .skip(1)
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

/// Every entry's parent is the entry before it: one run after another, no branch.
fn assert_linear(entries: &[Value]) {
    let mut previous = Value::Null;
    for entry in entries {
        assert_eq!(
            entry["parentId"], previous,
            "a branch: {entry} does not follow the entry before it"
        );
        previous = entry["id"].clone();
    }
}

fn user_texts(entries: &[Value]) -> Vec<String> {
    entries
        .iter()
        .filter(|e| e["message"]["role"] == "user")
        .map(|e| {
            e["message"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[test]
fn a_second_writer_is_refused_with_the_holders_pid_and_writes_nothing() {
    let mock = MockLlm::start(&held_after_a_tool_call());
    let env = Env::new(&mock);
    let session = env.cwd().join("shared.jsonl");
    let mut first = first_writer_held(&env, &mock, &session);
    let before = std::fs::read(&session).unwrap();

    let second = env.run(&session_args(&session, "second"));
    assert_eq!(second.code, 1, "stderr: {}", second.stderr);
    assert!(
        second.stderr.contains(&format!(
            "Session file {} is in use by process {}",
            session.display(),
            first.id()
        )),
        "stderr: {}",
        second.stderr
    );
    assert!(
        second.stderr.contains("--wait-for-session"),
        "{}",
        second.stderr
    );
    assert_eq!(std::fs::read(&session).unwrap(), before, "nothing written");
    assert_eq!(mock.requests().len(), 2, "the refused writer sent nothing");

    mock.release("release");
    assert!(first.wait().unwrap().success());
    let entries = entries(&session);
    assert_linear(&entries);
    assert_eq!(user_texts(&entries), ["first"], "exactly one run");
    assert!(
        !lock_file(&session).exists(),
        "the lock file is removed on exit"
    );
}

#[test]
fn a_waiting_writer_continues_after_the_first() {
    let mock = MockLlm::start(&held_after_a_tool_call());
    let env = Env::new(&mock);
    let session = env.cwd().join("shared.jsonl");
    let mut first = first_writer_held(&env, &mock, &session);

    let mut args = session_args(&session, "second");
    args.push("--wait-for-session");
    let mut second = env
        .command(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines, stderr) = mpsc::channel();
    let reader = BufReader::new(second.stderr.take().unwrap());
    std::thread::spawn(move || {
        for line in reader.lines().map_while(Result::ok) {
            let _ = lines.send(line);
        }
    });
    let waiting = format!("Waiting for process {}", first.id());
    let mut seen = Vec::new();
    while !seen.iter().any(|l: &String| l.contains(&waiting)) {
        match stderr.recv_timeout(Duration::from_secs(20)) {
            Ok(line) => seen.push(line),
            Err(_) => panic!("the second writer never said it waits: {seen:?}"),
        }
    }
    assert_eq!(
        mock.requests().len(),
        2,
        "the waiting writer sent nothing yet"
    );

    mock.release("release");
    assert!(first.wait().unwrap().success());
    assert!(second.wait().unwrap().success(), "{seen:?}");
    let entries = entries(&session);
    assert_linear(&entries);
    assert_eq!(user_texts(&entries), ["first", "second"]);
    assert!(!lock_file(&session).exists());
}

#[test]
fn a_killed_writers_lock_is_taken_over_and_its_torn_session_is_reported() {
    let mock = MockLlm::start(&held_after_a_tool_call());
    let env = Env::new(&mock);
    let session = env.cwd().join("shared.jsonl");
    let mut first = first_writer_held(&env, &mock, &session);
    let pid = first.id();
    first.kill().unwrap(); // SIGKILL
    first.wait().unwrap();
    mock.release("release");
    let lock = lock_file(&session);
    assert_eq!(
        std::fs::read_to_string(&lock)
            .ok()
            .as_deref()
            .map(str::trim),
        Some(pid.to_string().as_str()),
        "the killed writer's lock file is left behind with its pid"
    );
    // A kill inside a write leaves a partial last line; tear the file as it would.
    let mut text = std::fs::read_to_string(&session).unwrap();
    text.push_str(r#"{"type":"message","id":"torn","parentId":"#);
    std::fs::write(&session, &text).unwrap();

    let second = env.run(&session_args(&session, "second"));
    assert_eq!(second.code, 0, "stderr: {}", second.stderr);
    assert!(
        second
            .stderr
            .contains(&format!("{}: the last line is torn", session.display())),
        "stderr: {}",
        second.stderr
    );
    assert!(!lock.exists(), "the lock taken over is removed on exit");
    let after = std::fs::read_to_string(&session).unwrap();
    assert!(
        after.starts_with(&format!("{text}\n")),
        "the torn text stays on its own line"
    );
    let entries = entries(&session);
    assert_linear(&entries);
    assert_eq!(user_texts(&entries), ["first", "second"]);
}

#[test]
fn an_rpc_session_replaced_by_another_moves_its_lock() {
    use std::io::Write;
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    let a = env.cwd().join("a.jsonl");
    let b = env.cwd().join("b.jsonl");
    let mut rpc = env
        .rpc_command()
        .args(["--session", a.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = rpc.stdin.take().unwrap();
    let mut stdout = BufReader::new(rpc.stdout.take().unwrap());
    let mut ask = |command: Value| {
        writeln!(stdin, "{command}").unwrap();
        let mut line = String::new();
        loop {
            line.clear();
            assert!(stdout.read_line(&mut line).unwrap() > 0, "RPC ended");
            let value: Value = serde_json::from_str(&line).unwrap();
            if value["type"] == "response" && value["id"] == command["id"] {
                return value;
            }
        }
    };
    // The session is open once the first command is answered.
    assert_eq!(
        ask(json!({"id": "1", "type": "get_state"}))["success"],
        true
    );
    let open = |session: &Path| env.run(&["--session", session.to_str().unwrap()]);
    let held = format!("is in use by process {}", rpc.id());
    let on_a = open(&a);
    assert_eq!(on_a.code, 1, "{}", on_a.stderr);
    assert!(on_a.stderr.contains(&held), "{}", on_a.stderr);

    let switched = ask(json!({"id": "2", "type": "switch_session", "sessionPath": b}));
    assert_eq!(switched["success"], true, "{switched}");
    let on_a = open(&a);
    assert_eq!(
        on_a.code, 0,
        "the old session's lock is dropped: {}",
        on_a.stderr
    );
    let on_b = open(&b);
    assert_eq!(on_b.code, 1, "{}", on_b.stderr);
    assert!(on_b.stderr.contains(&held), "{}", on_b.stderr);

    // Switching to the session it already holds keeps it, instead of waiting on itself.
    let again = ask(json!({"id": "3", "type": "switch_session", "sessionPath": b}));
    assert_eq!(again["success"], true, "{again}");
    drop(stdin);
    assert!(rpc.wait().unwrap().success());
    assert!(!lock_file(&b).exists() && !lock_file(&a).exists());
}

#[test]
fn a_second_recorder_into_the_same_cassette_is_refused() {
    let mock = MockLlm::start(&json!([
        {"text": ["recorded"], "hang_until_file": "release"},
        {"text": ["intruder"]}
    ]));
    let env = Env::new(&mock);
    let cassette = env.cwd().join("run.cassette.jsonl");
    let record = |message: &str| {
        vec![
            "--provider".to_owned(),
            "mock".into(),
            "--model".into(),
            "mock-model".into(),
            "--no-session".into(),
            "--record".into(),
            cassette.to_str().unwrap().into(),
            "-p".into(),
            message.into(),
        ]
    };
    let first_args = record("first");
    let first_args: Vec<&str> = first_args.iter().map(String::as_str).collect();
    let mut first = env
        .command(&first_args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Held once its answer's text is written whole (a read may see a line being written).
    wait_for("the first recording to be held mid-stream", || {
        std::fs::read_to_string(&cassette)
            .is_ok_and(|t| t.contains(r#"\"recorded\""#) && t.ends_with('\n'))
    });
    let before = std::fs::read(&cassette).unwrap();

    let second_args = record("the-intruders-prompt");
    let second_args: Vec<&str> = second_args.iter().map(String::as_str).collect();
    let second = env.run(&second_args);
    assert_eq!(second.code, 1, "stderr: {}", second.stderr);
    assert!(
        second.stderr.contains(&format!(
            "Cassette {} is being recorded by another process",
            cassette.display()
        )),
        "stderr: {}",
        second.stderr
    );
    // The first recorder may still be writing what follows its answer (an effect, a wake);
    // the second wrote nothing: no header of its own, not its prompt, nothing before the end.
    let after = String::from_utf8_lossy(&std::fs::read(&cassette).unwrap()).into_owned();
    let before = String::from_utf8_lossy(&before);
    assert!(
        after.starts_with(&*before)
            && after.matches(r#"{"type":"cassette""#).count() == 1
            && !after.contains("the-intruders-prompt"),
        "nothing written; before:\n{before}\nafter:\n{after}"
    );
    assert_eq!(
        mock.requests().len(),
        1,
        "the refused recorder sent nothing"
    );

    mock.release("release");
    assert!(first.wait().unwrap().success());
    let check = env.run(&["replay", "--check", cassette.to_str().unwrap()]);
    assert_eq!(
        check.code, 0,
        "the first recording is whole: {}",
        check.stderr
    );
}
