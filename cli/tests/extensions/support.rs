//! What the extension tests share: the fixtures' paths, the install's Node on PATH, `pi` with an
//! extension loaded on the mock model, and running or driving it (print and RPC mode).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::common::Env;

/// The fixture extension `name` (a `.ts` file beside these tests).
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/extensions")
        .join(name)
}

/// The PATH with the install's Node first, when the install is there.
pub fn node_path() -> Option<String> {
    let dir = pi_testkit::extension_host_install()?;
    let path = std::env::var("PATH").unwrap_or_default();
    Some(format!("{}:{path}", dir.join("node/bin").display()))
}

/// Runs `command` with `path` as PATH and the install the tests were given.
pub fn with_host(command: &mut Command, path: &str) {
    command.env("PATH", path).env(
        "PI_EXTENSION_HOST_PI_DIR",
        std::env::var("PI_EXTENSION_HOST_PI_DIR").unwrap_or_default(),
    );
}

/// `pi` on the mock model with `extension` loaded (`-e`), `before` first, then `-p prompt`.
pub fn with_extension(env: &Env, before: &[&str], extension: &Path, prompt: &str) -> Command {
    let mut args = before.to_vec();
    let extension = extension.to_str().unwrap();
    args.extend([
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "-e",
        extension,
        "-p",
        prompt,
    ]);
    env.command(&args)
}

/// Runs `command` to its end: its exit code, stdout and stderr.
/// Each line of `text` (a json-mode run's stdout, a session file) as JSON.
pub fn json_lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub fn run(command: &mut Command) -> (i32, String, String) {
    let out = command.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `pi replay cassette` with no Node on PATH (an empty folder) and the test's home and package
/// folder (where the messages pointing to Pi's docs say they are): its exit code, stdout and
/// stderr.
pub fn replay_without_node(env: &Env, cassette: &Path) -> (i32, String, String) {
    let no_node = env.path("no-node");
    std::fs::create_dir_all(&no_node).unwrap();
    run(Command::new(env!("CARGO_BIN_EXE_pi"))
        .arg("replay")
        .arg(cassette)
        .env("PATH", &no_node)
        .env("PI_PACKAGE_DIR", env.path("pkg"))
        .env("HOME", env.path("home"))
        .stdin(std::process::Stdio::null()))
}

/// Asserts that `pi replay cassette`, with no Node, succeeds and prints `recorded` byte for byte
/// (naming the first line that differs), and that `pi replay --check` finds the whole run
/// reproduced (its output and every session file it left).
pub fn assert_replays_without_node(env: &Env, cassette: &Path, recorded: &str) {
    let (code, replayed, stderr) = replay_without_node(env, cassette);
    assert_eq!(code, 0, "{stderr}");
    let differing = replayed.lines().zip(recorded.lines()).find(|(a, b)| a != b);
    assert_eq!(differing, None, "the replay printed another line");
    assert_eq!(replayed, recorded);
    assert_checks_without_node(env, cassette);
}

/// Asserts that `pi replay --check`, with no Node, finds the whole run reproduced (its output
/// and every session file it left), as the cassette holds them: for a run whose printed output
/// held a key the cassette scrubbed.
pub fn assert_checks_without_node(env: &Env, cassette: &Path) {
    let no_node = env.path("no-node");
    std::fs::create_dir_all(&no_node).unwrap();
    let (code, said, stderr) = run(Command::new(env!("CARGO_BIN_EXE_pi"))
        .args(["replay", "--check"])
        .arg(cassette)
        .env("PATH", &no_node)
        .env("PI_PACKAGE_DIR", env.path("pkg"))
        .env("HOME", env.path("home"))
        .stdin(std::process::Stdio::null()));
    assert_eq!(code, 0, "{said}{stderr}");
}

/// `pi replay --chaos 20 --seed 1 cassette`, with no Node, keeps every invariant: the
/// extensions' recorded answers (hook decisions, a tool's `tool_acted`) answer the perturbed
/// runs too, so such a recording is checked under chaos like any other.
pub fn assert_chaos_without_node(env: &Env, cassette: &Path) {
    let no_node = env.path("no-node");
    std::fs::create_dir_all(&no_node).unwrap();
    let (code, said, stderr) = run(Command::new(env!("CARGO_BIN_EXE_pi"))
        .args(["replay", "--chaos", "20", "--seed", "1"])
        .arg(cassette)
        .env("PATH", &no_node)
        .env("HOME", env.path("home"))
        .stdin(std::process::Stdio::null()));
    assert_eq!(code, 0, "{said}{stderr}");
    assert!(
        said.contains(": 0 failed, 0 diverged, 0 unusable"),
        "{said}"
    );
}

/// Runs `command` with its output in files, killing it (and failing) if it has not ended
/// within `limit`: a guard against a hang, not a timing.
pub fn run_or_hang(command: &mut Command, dir: &Path, limit: std::time::Duration) -> (i32, String) {
    let stderr_file = dir.join("stderr");
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(dir.join("stdout")).unwrap())
        .stderr(std::fs::File::create(&stderr_file).unwrap());
    let mut child = command.spawn().unwrap();
    let deadline = std::time::Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!(
                "pi hung on a broken extension host; stderr: {}",
                std::fs::read_to_string(&stderr_file).unwrap()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    (
        status.code().unwrap_or(-1),
        std::fs::read_to_string(&stderr_file).unwrap(),
    )
}

/// Drives `command` in RPC mode: sends one prompt, answers each `extension_ui_request` dialog
/// as a client would (a confirmation yes, an input `v2`), and closes stdin after `agent_end`;
/// what it printed comes back, as printed and as JSON lines.
pub fn drive_rpc_with_ui(command: &mut Command, prompt: &str) -> (String, Vec<Value>) {
    use std::io::{BufRead, BufReader, Write};
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = Some(child.stdin.take().unwrap());
    let send = |stdin: &mut Option<std::process::ChildStdin>, line: Value| {
        let pipe = stdin.as_mut().expect("stdin is still open");
        writeln!(pipe, "{line}").unwrap();
    };
    send(&mut stdin, json!({"type": "prompt", "message": prompt}));
    let (mut printed, mut lines) = (String::new(), Vec::new());
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        printed.push_str(&line);
        printed.push('\n');
        let event: Value = serde_json::from_str(&line).unwrap();
        if event["type"] == "extension_ui_request" {
            let id = event["id"].clone();
            match event["method"].as_str() {
                Some("confirm") => send(
                    &mut stdin,
                    json!({"type": "extension_ui_response", "id": id, "confirmed": true}),
                ),
                Some("input") => send(
                    &mut stdin,
                    json!({"type": "extension_ui_response", "id": id, "value": "v2"}),
                ),
                _ => {}
            }
        }
        let ended = event["type"] == "agent_end";
        lines.push(event);
        if ended {
            stdin.take();
        }
    }
    assert!(child.wait().unwrap().success());
    (printed, lines)
}

/// What of an RPC run the extension UI decides: its requests (ids aside: random in Pi) and the
/// tool's result.
pub fn ui_exchange(lines: &[Value]) -> Vec<Value> {
    lines
        .iter()
        .filter_map(|line| match line["type"].as_str() {
            Some("extension_ui_request") => {
                let mut request = line.clone();
                request["id"] = json!("<id>");
                Some(request)
            }
            Some("tool_execution_end") => {
                Some(json!({"result": line["result"], "isError": line["isError"]}))
            }
            _ => None,
        })
        .collect()
}

/// Pi 1.5.2's binary in `env`, when its install is there.
pub fn original(env: &Env, path: &str) -> Option<Command> {
    let dir = PathBuf::from(std::env::var("PI_EXTENSION_HOST_PI_DIR").ok()?);
    let mut command = Command::new(dir.join("node_modules/.bin/pi"));
    command
        .current_dir(env.cwd())
        .env_clear()
        .env("PATH", path)
        .env("HOME", env.path("home"))
        .env("PI_CODING_AGENT_DIR", env.path("agent"))
        .env("PI_TELEMETRY", "0");
    Some(command)
}

/// RPC `get_commands` of `command` (stdin closed after it): the commands listed.
pub fn rpc_commands(command: &mut Command) -> Value {
    use std::io::Write;
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"{\"id\":\"1\",\"type\":\"get_commands\"}\n")
        .unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let answer = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["command"] == "get_commands")
        .unwrap_or_else(|| {
            panic!(
                "no answer: {stdout} {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    answer["data"]["commands"].clone()
}

/// `command` started with its stdin and stdout piped: the process, its stdin (closed by taking
/// it) and its stdout's lines.
pub fn spawn_rpc(
    command: &mut Command,
) -> (
    std::process::Child,
    Option<std::process::ChildStdin>,
    std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
) {
    use std::io::BufRead;
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take();
    let lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    (child, stdin, lines)
}

/// Writes `line` to `stdin`, which is still open.
pub fn send(stdin: &mut Option<std::process::ChildStdin>, line: Value) {
    use std::io::Write;
    writeln!(stdin.as_mut().expect("stdin is still open"), "{line}").unwrap();
}
