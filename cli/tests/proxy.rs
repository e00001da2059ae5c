//! `pi proxy` end to end: real processes, real HTTP on 127.0.0.1, real files. A Pi (this one,
//! and the original when `PI_ORIGINAL` names it) runs a scenario through `pi proxy --record`
//! to the kit's mock; the mock is dropped; the same scenario runs again through
//! `pi proxy --replay`, and its json events and session file match the first run's after the
//! kit's normalisation (`conformance/compare.py`). Also: a request without a recording gets a
//! readable error at once, concurrent clients each get their own recording, and no key reaches
//! a cassette.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "proxy_abuse/mod.rs"]
mod abuse;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pi_testkit::MockLlm;
use serde_json::{json, Value};

/// A key long enough to be scrubbed wherever it appears.
const KEY: &str = "sk-proxy-test-0123456789abcdef";

/// A `pi proxy` process whose stderr is drained as it runs (a proxy blocked on a full pipe
/// would look like a hang), killed when dropped.
struct ProxyProcess {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    url: String,
    /// `127.0.0.1:PORT`.
    addr: String,
    stderr: Option<std::thread::JoinHandle<Vec<u8>>>,
}

impl ProxyProcess {
    fn start(args: &[&str]) -> ProxyProcess {
        let mut child = Command::new(env!("CARGO_BIN_EXE_pi"))
            .arg("proxy")
            .args(args)
            .args(["--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let drain = std::thread::spawn(move || {
            let mut all = Vec::new();
            let _ = std::io::Read::read_to_end(&mut stderr, &mut all);
            all
        });
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let Some(addr) = line.trim().strip_prefix("http://") else {
            let _ = child.kill();
            let stderr = String::from_utf8_lossy(&drain.join().unwrap()).into_owned();
            panic!("pi proxy {args:?} did not start: {line:?}\n{stderr}");
        };
        ProxyProcess {
            url: line.trim().to_owned(),
            addr: addr.to_owned(),
            child,
            stderr: Some(drain),
        }
    }

    /// Stops it (SIGTERM); its exit code and everything it wrote on stderr.
    fn stop(mut self) -> (i32, String) {
        terminate(&self.child);
        let code = self.child.wait().unwrap().code().unwrap_or(-1);
        let stderr = self.stderr.take().unwrap().join().unwrap();
        (code, String::from_utf8_lossy(&stderr).into_owned())
    }
}

impl Drop for ProxyProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn terminate(child: &Child) {
    signal(child.id(), "TERM");
}

fn signal(pid: u32, name: &str) {
    let status = Command::new("kill")
        .args([&format!("-{name}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

/// A scratch HOME, agent dir and cwd that stay at the same paths for both runs (the system
/// prompt names the cwd, so a replayed request matches only from the same one).
struct Workspace {
    root: tempfile::TempDir,
    files: Vec<(String, String)>,
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Workspace {
    fn new(files: &[(&str, &str)]) -> Workspace {
        let ws = Workspace {
            root: tempfile::tempdir().unwrap(),
            files: files
                .iter()
                .map(|(n, t)| ((*n).to_owned(), (*t).to_owned()))
                .collect(),
        };
        ws.reset();
        ws
    }

    fn path(&self, sub: &str) -> PathBuf {
        self.root.path().join(sub)
    }

    /// Fresh home/, agent/ and cwd/ with the scenario's files.
    fn reset(&self) {
        for dir in ["home", "agent", "cwd"] {
            let _ = std::fs::remove_dir_all(self.path(dir));
            std::fs::create_dir_all(self.path(dir)).unwrap();
        }
        for (name, text) in &self.files {
            std::fs::write(self.path("cwd").join(name), text).unwrap();
        }
    }

    /// Points the mock providers of models.json at `base` (a proxy), with [`KEY`] as the key.
    fn use_provider_at(&self, base: &str) {
        let port: u16 = base.rsplit(':').next().unwrap().parse().unwrap();
        let mut models = pi_testkit::demo::models_json(port);
        models["providers"]["mock"]["apiKey"] = json!(KEY);
        std::fs::write(self.path("agent/models.json"), models.to_string()).unwrap();
    }

    fn command(&self, pi: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(pi);
        command
            .args(args)
            .current_dir(self.path("cwd"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.path("home"))
            .env("PI_CODING_AGENT_DIR", self.path("agent"))
            .env("PI_OFFLINE", "1")
            .env("PI_TELEMETRY", "0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    }

    /// Runs `pi args...`, failing the test if it takes more than a minute (a hang).
    fn run(&self, pi: &Path, args: &[&str]) -> Run {
        let child = self.command(pi, args).spawn().unwrap();
        let pid = child.id();
        let (done, waited) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let out = child.wait_with_output().unwrap();
            let _ = done.send(());
            out
        });
        if waited.recv_timeout(Duration::from_secs(60)).is_err() {
            signal(pid, "KILL");
            panic!("pi {args:?} hung");
        }
        let out = waiter.join().unwrap();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Saves a run as a trace folder of the kit (`stdout.jsonl`, `stderr.txt`,
    /// `sessions/final/`, `meta.json`) under `name`.
    fn save_trace(&self, name: &str, run: &Run) -> PathBuf {
        let trace = self.path(name);
        std::fs::create_dir_all(trace.join("sessions/final")).unwrap();
        std::fs::write(trace.join("stdout.jsonl"), &run.stdout).unwrap();
        std::fs::write(trace.join("stderr.txt"), &run.stderr).unwrap();
        for file in pi_testkit::files_under(&self.path("agent/sessions")) {
            std::fs::copy(
                &file,
                trace.join("sessions/final").join(file.file_name().unwrap()),
            )
            .unwrap();
        }
        let meta = json!({"run_dir": self.root.path(), "runs": [{"suffix": "", "rc": run.code}]});
        std::fs::write(trace.join("meta.json"), meta.to_string()).unwrap();
        trace
    }
}

/// The kit's comparison of two trace folders; panics with its report when they differ.
fn assert_same_after_normalisation(recorded: &Path, replayed: &Path) {
    let compare = pi_testkit::kit_dir().join("compare.py");
    let out = match Command::new("python3")
        .arg(compare)
        .arg(recorded)
        .arg(replayed)
        .output()
    {
        Ok(out) => out,
        // `cargo test` needs only the Rust toolchain; CI, which has the kit's Python, requires it.
        Err(error)
            if error.kind() == std::io::ErrorKind::NotFound
                && std::env::var("PI_REQUIRE_ORIGINAL").map_or(true, |v| v != "1") =>
        {
            pi_testkit::skip("python3 (the kit's compare.py) is not installed");
            return;
        }
        Err(error) => panic!("python3 runs the kit's compare.py: {error}"),
    };
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the replayed run differs:\n{report}");
    for section in ["events", "messages", "sessions"] {
        let compared = report
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == [section, "match"]);
        assert!(compared, "nothing compared in {section}:\n{report}");
    }
}

/// A text answer, then a bash and a read call, then a last answer; streamed in pieces a few
/// milliseconds apart, so each is its own read.
fn tool_script() -> Value {
    json!([
        {"text": ["I'll run ", "two tools."], "chunk_delay_ms": 5, "tool_calls": [
            {"id": "call_bash_1", "name": "bash", "arguments": {"command": "echo hi"}},
            {"id": "call_read_2", "name": "read", "arguments": {"path": "hello.txt"}}]},
        {"text": ["Both done: ", "hi, and the file ", "says hi there."], "chunk_delay_ms": 5}
    ])
}

const ARGS: [&str; 7] = [
    "--provider",
    "mock",
    "--model",
    "mock-model",
    "--mode",
    "json",
    "-p",
];

/// The same on the Anthropic Messages API.
const ANTHROPIC_ARGS: [&str; 7] = [
    "--provider",
    "mock-anthropic",
    "--model",
    "mock-claude",
    "--mode",
    "json",
    "-p",
];

/// Records `pi` running the tool scenario through the proxy (with `api_args`: provider, model,
/// mode), replays it with the mock gone, and checks that both runs match; returns the text of
/// each cassette written.
fn record_then_replay(pi: &Path, api_args: &[&str]) -> Vec<String> {
    let ws = Workspace::new(&[("hello.txt", "hi there\n")]);
    let cassettes = ws.path("cassettes");
    let mut args = api_args.to_vec();
    args.push("Run echo hi and read hello.txt");

    let mock = MockLlm::start(&tool_script());
    let upstream = mock.url("");
    let proxy = ProxyProcess::start(&[
        "--record",
        cassettes.to_str().unwrap(),
        "--upstream",
        &upstream,
    ]);
    ws.use_provider_at(&proxy.url);
    let recorded = ws.run(pi, &args);
    assert_eq!(recorded.code, 0, "{}", recorded.stderr);
    assert_eq!(mock.requests().len(), 2);
    let (code, stderr) = proxy.stop();
    assert_eq!(code, 0, "{stderr}");
    let recorded_trace = ws.save_trace("recorded", &recorded);
    drop(mock);

    ws.reset();
    let proxy = ProxyProcess::start(&["--replay", cassettes.to_str().unwrap()]);
    ws.use_provider_at(&proxy.url);
    let replayed = ws.run(pi, &args);
    let (code, stderr) = proxy.stop();
    assert_eq!(
        code, 0,
        "the proxy had no recording for a request:\n{stderr}"
    );
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    let replayed_trace = ws.save_trace("replayed", &replayed);
    assert!(replayed.stdout.contains("Both done"));
    assert_same_after_normalisation(&recorded_trace, &replayed_trace);
    pi_testkit::files_under(&cassettes)
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect()
}

#[test]
fn this_pi_recorded_through_the_proxy_replays_the_same_without_the_mock() {
    let pi = Path::new(env!("CARGO_BIN_EXE_pi"));
    let anthropic = record_then_replay(pi, &ANTHROPIC_ARGS);
    assert!(
        !anthropic[0].contains("mock-anthropic-key"),
        "{}",
        anthropic[0]
    );
    let files = record_then_replay(pi, &ARGS);
    assert_eq!(files.len(), 1, "one conversation, one cassette");
    let text = &files[0];
    assert!(
        text.starts_with("{\"type\":\"proxy\",\"format\":1,"),
        "{text}"
    );
    assert!(!text.contains(KEY), "the key reached the cassette");
    assert!(text.contains("Bearer <<secret-1>>"), "{text}");
    assert_eq!(text.matches("{\"type\":\"request\",").count(), 2);
    assert!(text.matches("{\"type\":\"chunk\",").count() > 2);
}

#[test]
fn the_original_pi_recorded_through_the_proxy_replays_the_same_without_the_mock() {
    let Some(original) = pi_testkit::original_pi() else {
        return;
    };
    let files = record_then_replay(&original, &ARGS);
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(!files[0].contains(KEY));
    let anthropic = record_then_replay(&original, &ANTHROPIC_ARGS);
    assert_eq!(anthropic.len(), 1);
    assert!(
        anthropic[0].contains("\"url\":\"/v1/messages"),
        "{}",
        anthropic[0]
    );
    assert!(!anthropic[0].contains("mock-anthropic-key"));
}

#[test]
fn a_request_without_a_recording_is_answered_at_once_with_a_readable_error() {
    let ws = Workspace::new(&[]);
    let cassettes = ws.path("cassettes");
    let pi = Path::new(env!("CARGO_BIN_EXE_pi"));
    let mock = MockLlm::start(&json!([{"text": ["hello"]}]));
    let proxy = ProxyProcess::start(&[
        "--record",
        cassettes.to_str().unwrap(),
        "--upstream",
        &mock.url(""),
    ]);
    ws.use_provider_at(&proxy.url);
    let mut args = ARGS.to_vec();
    args.push("Say hello");
    assert_eq!(ws.run(pi, &args).code, 0);
    proxy.stop();
    drop(mock);

    let proxy = ProxyProcess::start(&["--replay", cassettes.to_str().unwrap()]);
    ws.use_provider_at(&proxy.url);
    args.pop();
    args.push("Say goodbye");
    let started = Instant::now();
    let run = ws.run(pi, &args);
    assert!(started.elapsed() < Duration::from_secs(20), "not at once");
    assert!(
        run.stdout.contains("no recording of this request"),
        "the client's error: {}\n{}",
        run.stdout,
        run.stderr
    );
    let (code, stderr) = proxy.stop();
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("no recording of POST /v1/chat/completions"),
        "{stderr}"
    );
    assert!(stderr.contains("nearest recording: "), "{stderr}");
    assert!(
        stderr.contains("-") && stderr.contains("Say hello"),
        "{stderr}"
    );
    assert!(
        stderr.contains("+") && stderr.contains("Say goodbye"),
        "{stderr}"
    );
}

#[test]
fn concurrent_clients_each_get_their_own_recording_back() {
    const CLIENTS: usize = 4;
    let ws = Workspace::new(&[]);
    let cassettes = ws.path("cassettes");
    let pi = Path::new(env!("CARGO_BIN_EXE_pi"));
    let script: Vec<Value> = (1..=CLIENTS)
        .map(|i| json!({"text": [format!("answer {i}")]}))
        .collect();
    let mock = MockLlm::start(&json!(script));
    let proxy = ProxyProcess::start(&[
        "--record",
        cassettes.to_str().unwrap(),
        "--upstream",
        &mock.url(""),
    ]);
    ws.use_provider_at(&proxy.url);
    let answers = |ws: &Workspace| -> Vec<String> {
        std::thread::scope(|scope| {
            let runs: Vec<_> = (1..=CLIENTS)
                .map(|i| {
                    scope.spawn(move || {
                        let mut args = ARGS.to_vec();
                        let prompt = format!("question {i}");
                        args.push(&prompt);
                        let run = ws.run(pi, &args);
                        assert_eq!(run.code, 0, "{}", run.stderr);
                        let end: Value = run
                            .stdout
                            .lines()
                            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
                            .rfind(|event| event["type"] == "agent_end")
                            .expect("an agent_end event");
                        let messages = end["messages"].as_array().expect("its messages");
                        let answer = messages
                            .iter()
                            .rfind(|m| m["role"] == "assistant")
                            .expect("an answer");
                        answer["content"][0]["text"].to_string()
                    })
                })
                .collect();
            runs.into_iter().map(|r| r.join().unwrap()).collect()
        })
    };
    let recorded = answers(&ws);
    proxy.stop();
    drop(mock);
    let files = pi_testkit::files_under(&cassettes);
    assert_eq!(files.len(), CLIENTS, "one cassette per conversation");

    let proxy = ProxyProcess::start(&["--replay", cassettes.to_str().unwrap()]);
    ws.use_provider_at(&proxy.url);
    let replayed = answers(&ws);
    let (code, stderr) = proxy.stop();
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(recorded, replayed);
    let mut distinct = recorded.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), CLIENTS, "{recorded:?}");
}

#[test]
fn bad_usage_is_exit_2_and_an_unreadable_cassette_exit_125() {
    let pi = env!("CARGO_BIN_EXE_pi");
    let usage = Command::new(pi)
        .args(["proxy", "--record", "x"])
        .output()
        .unwrap();
    assert_eq!(usage.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&usage.stderr).contains("--upstream"));
    let neither = Command::new(pi).args(["proxy"]).output().unwrap();
    assert_eq!(neither.status.code(), Some(2));

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("0001-x.jsonl"),
        "{\"type\":\"cassette\",\"format\":1}\n",
    )
    .unwrap();
    let run_cassette = Command::new(pi)
        .args(["proxy", "--listen", "127.0.0.1:0", "--replay"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(run_cassette.status.code(), Some(125));
    let stderr = String::from_utf8_lossy(&run_cassette.stderr);
    assert!(
        stderr.contains("0001-x.jsonl:1") && stderr.contains("pi replay"),
        "{stderr}"
    );
}

#[test]
fn pi_replay_check_says_a_proxy_cassette_is_one_and_skips_it_for_bisect() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("0001-v1-chat-completions.jsonl");
    let header = json!({"type": "proxy", "format": 1, "harness": "0.1.0",
        "upstream": "http://127.0.0.1:1", "ignore": [], "redactions": []});
    std::fs::write(&file, format!("{header}\n")).unwrap();
    let check = Command::new(env!("CARGO_BIN_EXE_pi"))
        .args(["replay", "--check"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(125));
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
    assert!(out.contains("pi proxy --replay"), "{out}");
}

/// Credentials by name and by value: a gateway key under a header of its own name, a cookie
/// the upstream sets, and both repeated by the model in its answer (the key streamed a few
/// characters per event). None reaches the cassette; the run replays from it, the key's
/// pieces rewritten to its placeholder's.
#[test]
fn credential_headers_and_cookies_reach_no_proxy_cassette_even_when_repeated() {
    const GATEWAY: &str = "pk-gateway-planted-0123456789";
    const COOKIE: &str = "cookie-planted-0123456789";
    let pi = Path::new(env!("CARGO_BIN_EXE_pi"));
    let ws = Workspace::new(&[]);
    let cassettes = ws.path("cassettes");
    let mock = MockLlm::start(&json!([{
        "headers": {"set-cookie": format!("session={COOKIE}; Path=/; HttpOnly")},
        "text": ["gateway ", "pk-", "ga", "tew", "ay-", "pl", "ant", "ed-", "01", "234", "567",
                 "89", " and session ", COOKIE]
    }]));
    let proxy = ProxyProcess::start(&[
        "--record",
        cassettes.to_str().unwrap(),
        "--upstream",
        &mock.url(""),
    ]);
    let with_gateway_header = |base: &str| {
        ws.use_provider_at(base);
        let path = ws.path("agent/models.json");
        let mut models: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        models["providers"]["mock"]["headers"] = json!({"X-Portkey-Api-Key": GATEWAY});
        std::fs::write(&path, models.to_string()).unwrap();
    };
    with_gateway_header(&proxy.url);
    let mut args = ARGS.to_vec();
    args.push("say it");
    let recorded = ws.run(pi, &args);
    assert_eq!(recorded.code, 0, "{}", recorded.stderr);
    assert!(
        recorded.stdout.contains(GATEWAY),
        "the model repeats the key"
    );
    // The mock's log holds each request's headers.
    let asked = std::fs::read_to_string(&mock.log).unwrap();
    assert!(asked.contains(GATEWAY), "the key was sent: {asked}");
    let (code, stderr) = proxy.stop();
    assert_eq!(code, 0, "{stderr}");
    drop(mock);

    for file in pi_testkit::files_under(&cassettes) {
        let text = std::fs::read_to_string(&file).unwrap();
        for planted in [GATEWAY, COOKIE, KEY] {
            assert!(
                !text.contains(planted),
                "{planted} reached {}: {text}",
                file.display()
            );
        }
    }

    ws.reset();
    let proxy = ProxyProcess::start(&["--replay", cassettes.to_str().unwrap()]);
    with_gateway_header(&proxy.url);
    let replayed = ws.run(pi, &args);
    let (code, stderr) = proxy.stop();
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    assert!(
        replayed.stdout.contains("gateway <<secret-") && !replayed.stdout.contains(GATEWAY),
        "{}",
        replayed.stdout
    );
}
