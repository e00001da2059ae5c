//! Recording through the real binary: a run killed with SIGKILL mid-stream or during a bash
//! call leaves a cassette that loads up to its last complete line and that `pi replay --check`
//! reports as ending early (exit 125), and a session file that the next run continues with its
//! entries kept; keys planted in every place a key can come from never reach any file the run
//! wrote, and the redacted cassette still replays; a run in Anthropic message threads replays
//! the same bodies; an RPC run whose client replaces the session is one cassette that replays
//! whole.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "cassette_recording_secrets/mod.rs"]
mod secrets;
#[path = "cassette_recording_sessions/mod.rs"]
mod sessions;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use pi_testkit::demo::{models_json, Scenario, Workspace};
use serde_json::{json, Value};

fn pi() -> &'static str {
    env!("CARGO_BIN_EXE_pi")
}

fn workspace(scenario: Value) -> Workspace {
    let scenario = Scenario::from_value(&scenario, Path::new("test scenario")).unwrap();
    Workspace::prepare(scenario, None).unwrap()
}

/// Command-line words.
fn words(args: &[&str]) -> Vec<OsString> {
    args.iter().map(OsString::from).collect()
}

fn replay_check(cassette: &Path) -> Output {
    Command::new(pi())
        .args(["replay", "--check"])
        .arg(cassette)
        .output()
        .unwrap()
}

/// `pi replay --check` passes on `cassette`.
fn assert_replays(cassette: &Path) {
    let check = replay_check(cassette);
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
}

#[test]
fn a_run_killed_mid_stream_leaves_a_cassette_that_ends_early() {
    let ws = workspace(json!({"script": [
        {"text": ["Hello", " there"], "hang_until_file": "release"}
    ]}));
    let cassette = ws.root().join("killed.jsonl");
    let args = words(&[
        "--mode",
        "json",
        "--record",
        cassette.to_str().unwrap(),
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "-p",
        "hi",
    ]);
    let mut child = ws
        .command(pi().as_ref(), &args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the reply's text has been recorded and the model is holding the stream open.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(&cassette).unwrap_or_default();
        if text.contains("\"type\":\"chunk\"") && text.contains("\"type\":\"event\"") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the run never recorded its stream"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    std::fs::write(ws.root().join("release"), "").unwrap();

    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(text.ends_with('\n'), "every written line is whole");
    for line in text.lines() {
        serde_json::from_str::<Value>(line).expect("each line is complete JSON");
    }
    assert!(!text.contains("\"type\":\"outcome\""));

    let out = replay_check(&cassette);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "stderr: {stderr}");
    assert!(stderr.contains("ends early"), "stderr: {stderr}");
    assert!(
        stderr.contains("killed.jsonl:"),
        "the report names the cassette: {stderr}"
    );

    // A torn last line (a kill inside a write) is dropped, the rest still loads.
    let torn = ws.root().join("torn.jsonl");
    std::fs::write(&torn, format!("{text}{{\"type\":\"event\",\"t\":1")).unwrap();
    let out = replay_check(&torn);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "stderr: {stderr}");
    assert!(stderr.contains("ends early"), "stderr: {stderr}");
}

#[test]
fn a_run_killed_during_a_bash_call_leaves_a_cassette_that_ends_early_and_a_session_that_reopens() {
    let ws = workspace(json!({"script": [
        {"tool_calls": [{"id": "call_1", "name": "bash",
                         "arguments": {"command": "echo $$ > bash.pid && exec sleep 30"}}]},
        {"text": ["again done"]}
    ]}));
    let cwd = ws.root().join("cwd");
    let cassette = cwd.join("killed.jsonl");
    let session = cwd.join("killed-session.jsonl");
    let session_args = |message: &str| {
        words(&[
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--session",
            session.to_str().unwrap(),
            "-p",
            message,
        ])
    };
    let mut args = words(&["--record", cassette.to_str().unwrap()]);
    args.extend(session_args("first"));
    let mut child = ws
        .command(pi().as_ref(), &args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait until the bash command runs: its call is in the session file and the cassette.
    let pid_file = cwd.join("bash.pid");
    let deadline = Instant::now() + Duration::from_secs(20);
    let command_pid = loop {
        let pid = std::fs::read_to_string(&pid_file).unwrap_or_default();
        if let Ok(pid) = pid.trim().parse::<i32>() {
            break pid;
        }
        assert!(Instant::now() < deadline, "the bash command never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    // The command outlives a killed pi (nothing could kill it): end it here.
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(command_pid),
        nix::sys::signal::Signal::SIGKILL,
    );

    let recorded = std::fs::read_to_string(&cassette).unwrap();
    assert!(
        recorded.contains("\"kind\":\"run_tool\""),
        "the bash call was recorded:\n{recorded}"
    );
    assert!(!recorded.contains("\"type\":\"outcome\""));
    let out = replay_check(&cassette);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "stderr: {stderr}");
    assert!(
        stderr.contains("killed.jsonl:") && stderr.contains("ends early"),
        "the report names the cassette and says it ends early: {stderr}"
    );

    let before = std::fs::read_to_string(&session).unwrap();
    assert!(
        before.contains("\"toolCall\""),
        "the call reached the session"
    );
    let again = ws
        .command(pi().as_ref(), &session_args("again"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(0), "stderr: {stderr}");
    assert_eq!(String::from_utf8_lossy(&again.stdout).trim(), "again done");
    let after = std::fs::read_to_string(&session).unwrap();
    assert!(
        after.starts_with(&before),
        "the earlier entries are kept as they were"
    );
    for text in ["\"first\"", "\"again\"", "again done"] {
        assert!(after.contains(text), "{text} in the session:\n{after}");
    }
}

fn pi_in(ws: &Workspace, args: &[&str]) -> Output {
    ws.command(pi().as_ref(), &words(args)).output().unwrap()
}

fn requests_received(ws: &Workspace) -> usize {
    std::fs::read_to_string(ws.root().join("requests.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("\"method\""))
        .count()
}

#[test]
fn vcr_modes_replay_record_once_and_hybrid() {
    let ws = workspace(json!({"script": [
        {"text": ["first answer"]},
        {"text": ["second answer"]},
        {"text": ["third answer"]},
    ]}));
    let dir = ws.root().join("cwd");
    let a = dir.join("a.jsonl");
    let model = [
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--no-session",
    ];
    let with = |extra: &[&str]| -> Vec<String> {
        model.iter().chain(extra).map(|s| (*s).to_owned()).collect()
    };
    let run = |args: Vec<String>| {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        pi_in(&ws, &refs)
    };

    // record
    let recorded = run(with(&[
        "--mode",
        "json",
        "--record",
        a.to_str().unwrap(),
        "one",
    ]));
    assert_eq!(recorded.status.code(), Some(0));
    assert_eq!(requests_received(&ws), 1);

    // replay (the default mode): same output, the network untouched
    let replayed = run(with(&[
        "--mode",
        "json",
        "--replay",
        a.to_str().unwrap(),
        "one",
    ]));
    assert_eq!(
        replayed.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&replayed.stderr)
    );
    assert_eq!(replayed.stdout, recorded.stdout);
    assert_eq!(requests_received(&ws), 1);

    // replay with another prompt: a divergence at the first step, exit 1
    let other = run(with(&[
        "--mode",
        "json",
        "--replay",
        a.to_str().unwrap(),
        "another",
    ]));
    let stderr = String::from_utf8_lossy(&other.stderr);
    assert_eq!(other.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.matches("diverged at step 1").count(),
        1,
        "reported once: {stderr}"
    );
    assert!(stderr.contains("\"another\""), "{stderr}");
    assert_eq!(requests_received(&ws), 1);

    // once: records when the file is missing, replays after
    let c = dir.join("c.jsonl");
    let once = [
        "--mode",
        "json",
        "--replay",
        c.to_str().unwrap(),
        "--cassette-mode",
        "once",
    ];
    let first = run(with(&[&once[..], &["two"]].concat()));
    assert_eq!(first.status.code(), Some(0));
    assert_eq!(requests_received(&ws), 2);
    let second = run(with(&[&once[..], &["two"]].concat()));
    assert_eq!(second.status.code(), Some(0));
    assert_eq!(second.stdout, first.stdout);
    assert_eq!(requests_received(&ws), 2, "the second run was replayed");

    // hybrid: the recorded prompt is replayed, the new one goes live; the new cassette holds both
    let b = dir.join("b.jsonl");
    let hybrid = run(with(&[
        "--mode",
        "json",
        "--replay",
        a.to_str().unwrap(),
        "--cassette-mode",
        "hybrid",
        "--record",
        b.to_str().unwrap(),
        "one",
        "three",
    ]));
    let stderr = String::from_utf8_lossy(&hybrid.stderr);
    assert_eq!(hybrid.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("hybrid: replayed until step"), "{stderr}");
    assert_eq!(
        requests_received(&ws),
        3,
        "only the new prompt reached the model"
    );
    let stdout = String::from_utf8_lossy(&hybrid.stdout);
    assert!(
        stdout.contains("first answer") && stdout.contains("third answer"),
        "{stdout}"
    );
    assert_replays(&b);
}

#[test]
fn a_setting_or_a_variable_records_every_run_beside_its_session() {
    for (settings, env) in [
        (json!({"cassettes": {"record": true}}), None),
        (json!({}), Some("1")),
    ] {
        let ws = workspace(json!({"settings": settings, "script": [{"text": ["Recorded."]}]}));
        let args = words(&[
            "--mode",
            "json",
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "hi",
        ]);
        let mut command = ws.command(pi().as_ref(), &args);
        if let Some(value) = env {
            command.env("PI_RECORD_CASSETTES", value);
        }
        let out = command.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let files = pi_testkit::files_under(&ws.root().join("agent").join("sessions"));
        let session = files
            .iter()
            .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .expect("a session file");
        let cassette = session.with_extension("cassette");
        assert!(files.contains(&cassette), "{files:?}");
        let check = replay_check(&cassette);
        assert_eq!(
            check.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&check.stderr)
        );
    }
}

#[test]
fn config_current_replays_the_recorded_inputs_against_todays_context_files() {
    let ws = workspace(json!({
        "files": {"AGENTS.md": "Answer briefly.\n"},
        "script": [{"text": ["Brief."]}],
    }));
    let cassette = ws.root().join("cwd").join("run.jsonl");
    let out = pi_in(
        &ws,
        &[
            "--mode",
            "json",
            "--no-session",
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--record",
            cassette.to_str().unwrap(),
            "hi",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let check = |extra: &[&str]| {
        let mut args: Vec<OsString> = words(&["replay", "--check"]);
        args.extend(extra.iter().map(OsString::from));
        args.push(cassette.clone().into_os_string());
        ws.command(pi().as_ref(), &args).output().unwrap()
    };
    let unchanged = check(&["--config", "current"]);
    assert_eq!(
        unchanged.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&unchanged.stderr)
    );

    std::fs::write(
        ws.root().join("cwd").join("AGENTS.md"),
        "Answer at length.\n",
    )
    .unwrap();
    let recorded = check(&[]);
    assert_eq!(
        recorded.status.code(),
        Some(0),
        "the recorded configuration still reproduces"
    );
    let current = check(&["--config", "current"]);
    let stderr = String::from_utf8_lossy(&current.stderr);
    assert_eq!(current.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("diverged at step 2: the model request differs"),
        "{stderr}"
    );
    assert!(stderr.contains("-  ↪ Answer briefly."), "{stderr}");
    assert!(stderr.contains("+  ↪ Answer at length."), "{stderr}");
}

/// The words of a json-mode run on the mock model.
const MOCK_JSON: [&str; 6] = [
    "--mode",
    "json",
    "--provider",
    "mock",
    "--model",
    "mock-model",
];

/// A first run in `ws` whose prompt, `big` (piped, as Pi reads it), makes its session file over
/// a megabyte; `envs` are set for it.
fn run_with_big_prompt(ws: &Workspace, big: &str, envs: &[(&str, &str)]) {
    let mut command = ws.command(pi().as_ref(), &words(&MOCK_JSON));
    command.envs(envs.iter().copied());
    let mut first = command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut first.stdin.take().unwrap(), big.as_bytes()).unwrap();
    assert!(first.wait().unwrap().success());
}

#[test]
fn a_large_resumed_session_goes_to_a_side_file_named_by_its_content() {
    let ws = workspace(json!({"script": [{"text": ["First."]}, {"text": ["Second."]}]}));
    let model = MOCK_JSON;
    let big = "lorem ipsum ".repeat(100_000);
    run_with_big_prompt(&ws, &big, &[]);

    let cassette = ws.root().join("cwd").join("resumed.jsonl");
    let out = pi_in(
        &ws,
        &[
            &model[..],
            &[
                "--continue",
                "--record",
                cassette.to_str().unwrap(),
                "again",
            ],
        ]
        .concat(),
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&cassette).unwrap();
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let session = &header["session"];
    assert_eq!(session["kind"], "open");
    assert!(
        session.get("content").is_none(),
        "the header does not hold the session"
    );
    let name = session["contentFile"].as_str().unwrap();
    assert!(
        name.starts_with("blobs/") && name.ends_with(".jsonl"),
        "{name}"
    );
    let blob = ws.root().join("cwd").join(name);
    assert!(std::fs::metadata(&blob).unwrap().len() > 1 << 20);
    // The first request still carries the conversation; the header no longer repeats it.
    assert!(text.len() < big.len() * 3 / 2, "{} bytes", text.len());

    assert_replays(&cassette);

    // A side file that is not what it is named by is refused.
    std::fs::write(&blob, "{}\n").unwrap();
    let check = replay_check(&cassette);
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert_eq!(check.status.code(), Some(125), "{stderr}");
    assert!(
        stderr.contains("does not have the content it is named by"),
        "{stderr}"
    );
}

/// `pi --mode rpc` on the mock model, recording into `cassette`, with its stdin and stdout piped.
/// Reads an RPC session's stdout into `seen` until it holds `marker`.
fn read_until(stdout: &mut impl std::io::Read, seen: &mut String, marker: &str) {
    let mut buffer = [0u8; 4096];
    while !seen.contains(marker) {
        let read = stdout.read(&mut buffer).unwrap();
        assert!(read > 0, "the session ended before {marker}: {seen}");
        seen.push_str(&String::from_utf8_lossy(&buffer[..read]));
    }
}

pub(crate) fn rpc_recording(ws: &Workspace, cassette: &Path, stderr: Stdio) -> Child {
    rpc_recording_with(ws, cassette, stderr, &[])
}

/// An RPC run recorded into `cassette`, with `more` arguments.
pub(crate) fn rpc_recording_with(
    ws: &Workspace,
    cassette: &Path,
    stderr: Stdio,
    more: &[&str],
) -> Child {
    let mut args = words(&[
        "--mode",
        "rpc",
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--record",
        cassette.to_str().unwrap(),
    ]);
    args.extend(words(more));
    ws.command(pi().as_ref(), &args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap()
}

/// An RPC session whose stdin closes after the model's answer was read to its end but before
/// the session took all of its events: the run stops there, as it does whenever stdin closes,
/// and its cassette, faithful to that run, checks (the bytes decode to more events than the
/// session took, which only a run that went on past the call would contradict).
#[test]
fn an_rpc_run_whose_stdin_closes_before_the_session_took_every_event_still_checks() {
    // A long answer in many pieces: the session prints each of them, and while its stdout is
    // not read it stops taking events, though the stream is read to its end. The events are
    // several times what a pipe holds (64 KiB on Linux), so the session stalls however fast
    // the machine is.
    let pieces: Vec<String> = (0..1000)
        .map(|i| format!("piece {i:04} {} ", "x".repeat(200)))
        .collect();
    let ws = workspace(json!({"script": [{"text": pieces}]}));
    let cassette = ws.root().join("cwd").join("rpc.jsonl");
    let mut child = rpc_recording(&ws, &cassette, Stdio::null());
    let mut stdin = child.stdin.take().unwrap();
    let prompt = json!({"id": "p", "type": "prompt", "message": "tell me a long story"});
    std::io::Write::write_all(&mut stdin, format!("{prompt}\n").as_bytes()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&cassette)
        .unwrap_or_default()
        .contains(r#"{"type":"end","call":1"#)
    {
        assert!(Instant::now() < deadline, "the answer was never read whole");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        !stdout.contains(r#""type":"agent_end""#),
        "the session took every event before stdin closed: the run this test is about did not happen"
    );

    assert_replays(&cassette);

    // One event line fewer is still a divergence: the replay prints less than the run did.
    let text = std::fs::read_to_string(&cassette).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let last_event = lines
        .iter()
        .rposition(|l| l.starts_with(r#"{"type":"event""#))
        .unwrap();
    lines.remove(last_event);
    let fewer = ws.root().join("cwd").join("fewer.jsonl");
    std::fs::write(&fewer, format!("{}\n", lines.join("\n"))).unwrap();
    let check = replay_check(&fewer);
    let stderr = String::from_utf8_lossy(&check.stderr);
    assert_eq!(check.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("the stdout differs"), "{stderr}");
}

/// The keys [`keys_planted_everywhere_reach_no_cassette_and_the_runs_still_check`] plants, each
/// where a careless user or a hostile model could put it.
const CLI_KEY: &str = "sk-planted-cli-0123456789";
const ANTHROPIC_KEY: &str = "sk-planted-anthropic-0123456789";
const PORTKEY_KEY: &str = "pk-planted-portkey-0123456789";
const GATEWAY_KEY: &str = "cf-planted-gateway-0123456789";
const OPENAI_KEY: &str = "sk-planted-openai-0123456789";
const AUTH_JSON_KEY: &str = "sk-planted-authjson-0123456789";
const PLANTED: [&str; 6] = [
    CLI_KEY,
    ANTHROPIC_KEY,
    PORTKEY_KEY,
    GATEWAY_KEY,
    OPENAI_KEY,
    AUTH_JSON_KEY,
];

#[test]
fn a_cassette_needing_a_newer_pi_is_unusable_not_diverged() {
    let ws = workspace(json!({"script": [{"text": ["Hi."]}]}));
    let cassette = ws.root().join("run.jsonl");
    let args = words(&[
        "--mode",
        "json",
        "--record",
        cassette.to_str().unwrap(),
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "-p",
        "hi",
    ]);
    let out = ws.command(pi().as_ref(), &args).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&cassette).unwrap();
    let (header, rest) = text.split_once('\n').unwrap();
    let mut header: Value = serde_json::from_str(header).unwrap();
    // Written as the number every earlier build reads, without features.
    assert_eq!(header["format"], json!(1));
    assert!(header.get("features").is_none(), "{header}");
    let cases = [
        (json!("1.9"), json!([]), None),
        (json!(2), json!([]), Some("cassette format 2.0 is newer")),
        (
            json!("1.0"),
            json!(["streams-v9"]),
            Some("needs the feature `streams-v9`"),
        ),
    ];
    for (format, features, refusal) in cases {
        header["format"] = format;
        header["features"] = features;
        std::fs::write(&cassette, format!("{header}\n{rest}")).unwrap();
        let check = replay_check(&cassette);
        let stderr = String::from_utf8_lossy(&check.stderr);
        let stdout = String::from_utf8_lossy(&check.stdout);
        match refusal {
            None => assert_eq!(check.status.code(), Some(0), "{header}: {stderr}"),
            Some(says) => {
                assert_eq!(check.status.code(), Some(125), "{header}: {stderr}");
                assert!(stdout.contains("UNUSABLE"), "{stdout}");
                assert!(stderr.contains(says), "{stderr}");
                assert!(stderr.contains("use a newer pi"), "{stderr}");
            }
        }
    }
}

/// A line the format reads but whose value the harness cannot read (the run's configuration,
/// a tool result) makes the cassette unusable (125), naming the line and the field, not a
/// divergence and not a panic.
#[test]
fn a_harness_value_this_build_cannot_read_makes_the_cassette_unusable() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cassettes/corpus/one_tool.jsonl");
    let text = std::fs::read_to_string(corpus).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let answer = text
        .lines()
        .position(|l| l.starts_with("{\"type\":\"answer\""))
        .unwrap();
    let cases = [
        (
            text.replacen(
                "\"thinkingLevel\":\"medium\"",
                "\"thinkingLevel\":\"loud\"",
                1,
            ),
            ":1: `cassette` line: field `config`".to_owned(),
        ),
        (
            text.lines()
                .enumerate()
                .map(|(i, l)| match i == answer {
                    true => format!(
                        "{}\n",
                        l.replacen("\"content\":[", "\"content\":7,\"was\":[", 1)
                    ),
                    false => format!("{l}\n"),
                })
                .collect(),
            format!(":{}: `answer` line: field `input.result`", answer + 1),
        ),
    ];
    for (i, (changed, says)) in cases.into_iter().enumerate() {
        assert_ne!(changed, text);
        let cassette = dir.path().join(format!("{i}.jsonl"));
        std::fs::write(&cassette, changed).unwrap();
        let check = replay_check(&cassette);
        let stderr = String::from_utf8_lossy(&check.stderr);
        let stdout = String::from_utf8_lossy(&check.stdout);
        assert_eq!(check.status.code(), Some(125), "{stdout}{stderr}");
        assert!(stdout.contains("UNUSABLE"), "{stdout}");
        assert!(stderr.contains(&says), "{says}: {stderr}");
    }
}

/// The request bodies the mock received, in order.
fn bodies_received(ws: &Workspace) -> Vec<Value> {
    std::fs::read_to_string(ws.root().join("requests.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|r| r.get("body").cloned())
        .collect()
}

/// Records into `cwd/<name>` one run of `prompts` on `mock-anthropic/mock-claude` with
/// message threads on (as for api.anthropic.com: the mock speaks the Messages API), the mock
/// answering with `script`; the workspace, the cassette and the run's output.
fn record_in_threads(script: Value, name: &str, prompts: &[&str]) -> (Workspace, PathBuf, Output) {
    let ws = workspace(json!({ "script": script }));
    let models = ws.root().join("agent/models.json");
    let mut config: Value =
        serde_json::from_str(&std::fs::read_to_string(&models).unwrap()).unwrap();
    config["providers"]["mock-anthropic"]["models"][0]["compat"] =
        json!({"supportsMessageThreads": true});
    std::fs::write(&models, config.to_string()).unwrap();
    let cassette = ws.root().join("cwd").join(name);
    let mut args = vec![
        "--provider",
        "mock-anthropic",
        "--model",
        "mock-claude",
        "--no-session",
        "--mode",
        "json",
        "--record",
        cassette.to_str().unwrap(),
    ];
    args.extend(prompts);
    let recorded = pi_in(&ws, &args);
    (ws, cassette, recorded)
}

#[test]
fn a_run_in_anthropic_message_threads_records_and_replays_byte_for_byte() {
    let (ws, cassette, recorded) = record_in_threads(
        json!([{"text": ["first answer"]}, {"text": ["second answer"]}]),
        "threads.jsonl",
        &["one", "two"],
    );
    assert_eq!(
        recorded.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&recorded.stderr)
    );
    let bodies = bodies_received(&ws);
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["thread"], json!({"type": "create"}));
    assert!(bodies[0].get("system").is_some());
    // The second prompt continues the first answer's thread with the new message alone.
    assert_eq!(bodies[1]["thread"]["type"], "continue");
    assert!(
        bodies[1]["thread"]["previous_message_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("msg_mock_")),
        "{}",
        bodies[1]
    );
    assert!(bodies[1].get("system").is_none(), "{}", bodies[1]);
    assert_eq!(bodies[1]["messages"].as_array().unwrap().len(), 1);
    assert_replays(&cassette);
}

#[test]
fn a_refused_thread_is_sent_again_recorded_and_replayed_byte_for_byte() {
    // The second request continues the first answer's thread, which the server refuses as
    // unsupported: the call goes again without a thread and threads stay off afterwards.
    let refusal = json!({"type": "error", "error": {"type": "invalid_request_error",
        "message": "thread request refused: thread_unsupported_request",
        "details": {"error_code": "thread_unsupported_request"}}});
    let (ws, cassette, recorded) = record_in_threads(
        json!([
            {"text": ["first answer"]},
            {"status": 400, "error_body": refusal},
            {"text": ["second answer"]},
            {"text": ["third answer"]},
        ]),
        "refused.jsonl",
        &["one", "two", "three"],
    );
    let stderr = String::from_utf8_lossy(&recorded.stderr);
    assert_eq!(recorded.status.code(), Some(0), "{stderr}");
    let bodies = bodies_received(&ws);
    assert_eq!(bodies.len(), 4, "{bodies:?}");
    assert_eq!(bodies[1]["thread"]["type"], "continue");
    // Sent again whole, without a thread; and so the next call.
    for body in &bodies[2..] {
        assert!(body.get("thread").is_none(), "{body}");
        assert!(body.get("system").is_some(), "{body}");
    }
    assert_eq!(bodies[3]["messages"].as_array().unwrap().len(), 5);
    // The answer to the call sent again says why, before its id.
    let stdout = String::from_utf8_lossy(&recorded.stdout).into_owned();
    let answers: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with(r#"{"type":"message_end","message":{"role":"assistant""#))
        .collect();
    assert_eq!(answers.len(), 3, "{stdout}");
    let second: Value = serde_json::from_str(answers[1]).unwrap();
    let diagnostics = &second["message"]["diagnostics"];
    assert_eq!(
        diagnostics[0]["type"], "anthropic_thread_fallback",
        "{second}"
    );
    assert_eq!(
        diagnostics[0]["details"]["reason"],
        "thread_unsupported_request"
    );
    assert!(answers[1].contains(r#""diagnostics":[{"type":"anthropic_thread_fallback""#));
    assert!(answers[1].find("\"diagnostics\"") < answers[1].find("\"responseId\""));
    assert!(!answers[2].contains("diagnostics"), "{}", answers[2]);
    // The replay sends the same four requests and prints the same output, byte for byte.
    assert_replays(&cassette);
    let replayed = Command::new(pi())
        .arg("replay")
        .arg(&cassette)
        .output()
        .unwrap();
    assert_eq!(replayed.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&replayed.stdout), stdout);
}

#[test]
fn a_failed_resend_without_thread_leaves_threads_on_recorded_and_replayed_byte_for_byte() {
    // The second request continues the first answer's thread; the server refuses threads as
    // unsupported and then fails the call sent again without one. As in Pi 1.5.2, threads are
    // turned off only once such a call is answered, and the continued thread is used up: the
    // third prompt starts a new thread, and its answer's thread is continued by the fourth.
    let refusal = json!({"type": "error", "error": {"type": "invalid_request_error",
        "message": "thread request refused: thread_unsupported_request",
        "details": {"error_code": "thread_unsupported_request"}}});
    let failure = json!({"type": "error", "error": {"type": "invalid_request_error",
        "message": "bad request"}});
    let (ws, cassette, recorded) = record_in_threads(
        json!([
            {"text": ["first answer"]},
            {"status": 400, "error_body": refusal},
            {"status": 400, "error_body": failure},
            {"text": ["third answer"]},
            {"text": ["fourth answer"]},
        ]),
        "resend-failed.jsonl",
        &["one", "two", "three", "four"],
    );
    let stderr = String::from_utf8_lossy(&recorded.stderr);
    let bodies = bodies_received(&ws);
    assert_eq!(bodies.len(), 5, "{stderr}{bodies:?}");
    assert_eq!(bodies[1]["thread"]["type"], "continue");
    assert!(bodies[2].get("thread").is_none(), "{}", bodies[2]);
    assert_eq!(
        bodies[3]["thread"],
        json!({"type": "create"}),
        "{}",
        bodies[3]
    );
    assert_eq!(bodies[4]["thread"]["type"], "continue", "{}", bodies[4]);
    assert_replays(&cassette);
}
