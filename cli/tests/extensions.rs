//! Pi's TypeScript extensions through the real binary and the mock LLM: an extension's tool is
//! declared in the request, its call runs in Node (the extension host, Pi 1.5.2's loader) and
//! is recorded, and `pi replay` reproduces the run byte for byte with no Node on PATH. An
//! untrusted project's extension is not loaded; a configured extension without Node is an error.
//!
//! These need Node and Pi 1.5.2's install (`PI_EXTENSION_HOST_PI_DIR`, its Node in `node/bin`
//! or on PATH); without them they are skipped with a line, unless `PI_REQUIRE_EXTENSIONS=1`
//! (CI) makes that a failure.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Env, MockLlm};
use serde_json::{json, Value};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/extensions")
        .join(name)
}

/// The PATH with the install's Node first, when the install is there.
fn node_path() -> Option<String> {
    let dir = pi_testkit::extension_host_install()?;
    let path = std::env::var("PATH").unwrap_or_default();
    Some(format!("{}:{path}", dir.join("node/bin").display()))
}

fn with_host(command: &mut Command, path: &str) {
    command.env("PATH", path).env(
        "PI_EXTENSION_HOST_PI_DIR",
        std::env::var("PI_EXTENSION_HOST_PI_DIR").unwrap_or_default(),
    );
}

/// `pi` on the mock model with `extension` loaded (`-e`), `before` first, then `-p prompt`.
fn with_extension(env: &Env, before: &[&str], extension: &Path, prompt: &str) -> Command {
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

fn run(command: &mut Command) -> (i32, String, String) {
    let out = command.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn an_extension_tool_runs_in_node_is_recorded_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "greet", "arguments": "{\"name\":\"Ada\"}"}]},
        {"text": ["Greeted."]},
    ]));
    let env = Env::new(&mock);
    let cassette = env.path("greet.jsonl");
    let extension = fixture("greet.ts");
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &extension,
        "greet Ada",
    );
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("greeted.txt")).unwrap(),
        format!("Ada in {}", env.cwd().canonicalize().unwrap().display()),
        "the tool did not run in the extension host, or pi.exec not in the session's folder"
    );
    // Declared after the built-ins, as Pi 1.5.2 declares an extension's tool.
    let requests = mock.requests();
    let tools = requests[0]["tools"].as_array().unwrap();
    assert_eq!(
        tools.last().unwrap(),
        &json!({"type": "function", "function": {
            "name": "greet",
            "description": "Greets someone by name.",
            "parameters": {"type": "object", "required": ["name"],
                "properties": {"name": {"type": "string", "description": "Who to greet"}}},
        }})
    );
    let system = requests[0]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.contains("- greet: Greet someone by name"),
        "{system}"
    );
    let events: Vec<Value> = recorded
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let update = events
        .iter()
        .find(|e| e["type"] == "tool_execution_update")
        .unwrap();
    assert_eq!(update["partialResult"]["details"], json!({"step": 1}));
    let end = events
        .iter()
        .find(|e| e["type"] == "tool_execution_end")
        .unwrap();
    assert_eq!(end["result"]["content"][0]["text"], "Hello, Ada!");

    std::fs::remove_file(env.cwd().join("greeted.txt")).unwrap();
    let no_node = env.path("no-node");
    std::fs::create_dir_all(&no_node).unwrap();
    let (code, replayed, stderr) = run(Command::new(env!("CARGO_BIN_EXE_pi"))
        .args(["replay", cassette.to_str().unwrap()])
        .env("PATH", &no_node)
        .env("HOME", env.path("home")));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(replayed, recorded);
    assert!(
        !env.cwd().join("greeted.txt").exists(),
        "the replay ran the tool"
    );
}

/// Harbor's pattern through the binary: an extension rewrites the system prompt in
/// `before_agent_start` (from the active tools and model it reads), a `tool_call` gate blocks a
/// bash command, and `turn_end` aborts after two turns. Its handlers run in Node with Pi's
/// runner; what they decided is recorded, so the replay reproduces the run with no Node. What
/// is asserted is what Pi 1.5.2 (`pi -e cap.ts`) does with the same script.
#[test]
fn extension_hooks_gate_rewrite_and_cap_and_replay_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "bash", "arguments": "{\"command\":\"rm -rf stuff\"}"}]},
        {"tool_calls": [{"name": "bash", "arguments": "{\"command\":\"echo kept > kept.txt\"}"}]},
        {"text": ["unreached: the cap ends the run first"]},
    ]));
    let env = Env::new(&mock);
    std::fs::create_dir_all(env.cwd().join("stuff")).unwrap();
    let cassette = env.path("cap.jsonl");
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &fixture("cap.ts"),
        "clean up",
    );
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert!(env.cwd().join("stuff").exists(), "the gate let rm -rf run");
    assert!(
        env.cwd().join("kept.txt").exists(),
        "the allowed call did not run"
    );
    let requests = mock.requests();
    for request in &requests[..2] {
        let system = request["messages"][0]["content"].as_str().unwrap();
        assert!(
            system.ends_with("\n\nCapped at 2 turns on mock-model; tools: read,bash,edit,write."),
            "{system}"
        );
    }
    let blocked = requests[1]["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(
        blocked,
        &json!({"role": "tool", "content": "rm -rf is not allowed here", "tool_call_id": "call_mock_1_0"})
    );
    let events: Vec<Value> = recorded
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // As in Pi 1.5.2: the abort asked at the second turn's end ends the third turn before any
    // answer (its message aborted, its turn_end seen by the handler too), and the run settles
    // as aborted.
    let turn_ends: Vec<&Value> = events.iter().filter(|e| e["type"] == "turn_end").collect();
    assert_eq!(turn_ends.len(), 3, "{recorded}");
    assert_eq!(turn_ends[2]["message"]["stopReason"], "aborted");
    assert!(
        !recorded.contains("unreached"),
        "the cap let a third answer in"
    );
    let appended: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "entry_appended")
        .map(|e| &e["entry"]["data"]["turns"])
        .collect();
    assert_eq!(appended, [&json!(1), &json!(2), &json!(3)]);
    assert_eq!(
        events.last().unwrap(),
        &json!({"type": "agent_settled", "aborted": true})
    );

    std::fs::remove_file(env.cwd().join("kept.txt")).unwrap();
    let no_node = env.path("no-node");
    std::fs::create_dir_all(&no_node).unwrap();
    let (code, replayed, stderr) = run(Command::new(env!("CARGO_BIN_EXE_pi"))
        .args(["replay", cassette.to_str().unwrap()])
        .env("PATH", &no_node)
        .env("HOME", env.path("home")));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(replayed, recorded);
    assert!(
        !env.cwd().join("kept.txt").exists(),
        "the replay ran the tool"
    );
}

/// A handler's `pi.sendMessage` while the agent streams steers the run into another turn whose
/// request carries the message (Pi 1.5.2's `sendCustomMessage`), and the replay needs no Node.
#[test]
fn an_extensions_message_steers_the_run_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Done."]}, {"text": ["Checked."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("remind.jsonl");
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &fixture("remind.ts"),
        "fix it",
    );
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    let requests = mock.requests();
    assert_eq!(
        requests.len(),
        2,
        "the message starts another turn: {recorded}"
    );
    // Pi's convertToLlm gives a custom message's text as a text block.
    assert_eq!(
        requests[1]["messages"].as_array().unwrap().last().unwrap(),
        &json!({"role": "user", "content": [{"type": "text", "text": "Also check the tests."}]})
    );
    let events: Vec<Value> = recorded
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let custom: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "message_end" && e["message"]["role"] == "custom")
        .collect();
    assert_eq!(custom.len(), 1, "{recorded}");
    assert_eq!(custom[0]["message"]["customType"], "reminder");

    let no_node = env.path("no-node");
    std::fs::create_dir_all(&no_node).unwrap();
    let (code, replayed, stderr) = run(Command::new(env!("CARGO_BIN_EXE_pi"))
        .args(["replay", cassette.to_str().unwrap()])
        .env("PATH", &no_node)
        .env("HOME", env.path("home")));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(replayed, recorded);
}

/// An extension command (`/note args`) run from print mode's messages, worded by the
/// extension's flags from the command line: its entry and message are written and the next
/// prompt's request holds the message, the command's text never reaching the model; the
/// recording replays byte for byte with no Node on PATH, and with the extension run again.
#[test]
fn an_extension_command_runs_with_its_flags_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Noted."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("note.jsonl");
    let extension = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/command_flag/extension.ts");
    let mut command = env.command(&[
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--mode",
        "json",
        "--record",
        cassette.to_str().unwrap(),
        "-e",
        extension.to_str().unwrap(),
        "--greeting=hey",
        "--loud",
        "-p",
        "/note the plan",
        "What did I note?",
    ]);
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    let requests = mock.requests();
    assert_eq!(requests.len(), 1, "the command calls no model: {recorded}");
    assert_eq!(
        requests[0]["messages"].as_array().unwrap()[1..],
        [
            json!({"role": "user", "content": [{"type": "text", "text": "HEY THE PLAN"}]}),
            json!({"role": "user", "content": [{"type": "text", "text": "What did I note?"}]}),
        ]
    );
    let events: Vec<Value> = recorded
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let appended: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "entry_appended")
        .collect();
    assert_eq!(appended.len(), 1, "{recorded}");
    assert_eq!(
        appended[0]["entry"]["data"],
        json!({"args": "the plan", "idle": true})
    );

    let no_node = env.path("no-node");
    std::fs::create_dir_all(&no_node).unwrap();
    let (code, replayed, stderr) = run(Command::new(env!("CARGO_BIN_EXE_pi"))
        .args(["replay", cassette.to_str().unwrap()])
        .env("PATH", &no_node)
        .env("HOME", env.path("home")));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(replayed, recorded);

    // Run again live, the command sees the recorded command line's flags.
    let mut live = Command::new(env!("CARGO_BIN_EXE_pi"));
    live.args(["replay", cassette.to_str().unwrap(), "--extensions", "live"]);
    with_host(live.env("HOME", env.path("home")), &path);
    let (code, replayed, stderr) = run(&mut live);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(replayed, recorded);
}

/// An RPC `prompt` naming an extension command is answered `handled` after the command's entry
/// and message, as Pi 1.5.2 answers it; a `follow_up` naming it is Pi's error; the recording
/// replays byte for byte with no Node on PATH.
#[test]
fn an_rpc_command_is_handled_and_its_recording_replays_without_node() {
    use std::io::{BufRead, BufReader, Write};
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Noted."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("note-rpc.jsonl");
    let extension = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/command_flag/extension.ts");
    let mut command = env.rpc_command();
    command.args([
        "--no-session",
        "-e",
        extension.to_str().unwrap(),
        "--greeting",
        "yo",
        "--record",
        cassette.to_str().unwrap(),
    ]);
    with_host(&mut command, &path);
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = Some(child.stdin.take().unwrap());
    let mut send = |line: Value| writeln!(stdin.as_mut().unwrap(), "{line}").unwrap();
    send(json!({"id": "c", "type": "prompt", "message": "/note now"}));
    let mut recorded = String::new();
    let mut lines = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        recorded.push_str(&line);
        recorded.push('\n');
        let event: Value = serde_json::from_str(&line).unwrap();
        if event["id"] == "c" {
            send(json!({"id": "f", "type": "follow_up", "message": "/note later"}));
        }
        if event["id"] == "f" {
            send(json!({"id": "p", "type": "prompt", "message": "What did I note?"}));
        }
        let ended = event["type"] == "agent_settled";
        lines.push(event);
        if ended {
            break;
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let kinds: Vec<String> = lines
        .iter()
        .take(5)
        .map(|l| {
            format!(
                "{} {}",
                l["type"].as_str().unwrap(),
                l["id"].as_str().unwrap_or("")
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "entry_appended ",
            "message_start ",
            "message_end ",
            "response c",
            "response f"
        ],
        "{recorded}"
    );
    assert_eq!(
        lines[4]["error"],
        "Extension command \"/note\" cannot be queued. Use prompt() or execute the command when not streaming."
    );
    assert_eq!(lines[2]["message"]["content"], "yo now");
    assert_eq!(lines[3]["data"], json!({"disposition": "handled"}));
    assert_eq!(mock.requests().len(), 1);

    let no_node = env.path("no-node");
    std::fs::create_dir_all(&no_node).unwrap();
    let (code, replayed, stderr) = run(Command::new(env!("CARGO_BIN_EXE_pi"))
        .args(["replay", cassette.to_str().unwrap()])
        .env("PATH", &no_node)
        .env("HOME", env.path("home"))
        .stdin(std::process::Stdio::null()));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(replayed, recorded);
}

/// Long options neither Pi nor a loaded extension registered are Pi 1.5.2's one error, after
/// the extensions loaded; a string flag given bare is refused.
#[test]
fn unregistered_options_and_a_bare_string_flag_are_pis_errors() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    let extension = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/command_flag/extension.ts");
    let mut command = with_extension(&env, &["--foo", "--greeting", "--bar=1"], &extension, "hi");
    with_host(&mut command, &path);
    let (code, stdout, stderr) = run(&mut command);
    assert_eq!(code, 1, "{stdout}");
    assert_eq!(
        stderr,
        "Error: Extension flag \"--greeting\" requires a value\nError: Unknown options: --foo, --bar\n"
    );
    assert!(mock.requests().is_empty());
}

/// A flag a second extension registers again is Pi 1.5.2's load error for that extension,
/// naming the first; the run ends before any prompt.
#[test]
fn a_flag_registered_twice_is_the_later_extensions_load_error() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    let first = env.path("first.ts");
    std::fs::write(
        &first,
        "export default function (pi) {\n\tpi.registerFlag(\"greeting\", { type: \"string\", description: \"x\" });\n}\n",
    )
    .unwrap();
    let second = std::fs::canonicalize(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../conformance/extensions/command_flag/extension.ts"),
    )
    .unwrap();
    let mut command = with_extension(&env, &["-e", first.to_str().unwrap()], &second, "hi");
    with_host(&mut command, &path);
    let (code, _, stderr) = run(&mut command);
    assert_eq!(code, 1, "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "Error: Failed to load extension \"{}\": Flag \"--greeting\" conflicts with {}\n{}\n",
            second.display(),
            first.display(),
            "Hint: Start without extensions using \"pi -ne\"."
        )
    );
    assert!(mock.requests().is_empty());
}

/// `--help` lists the loaded extensions' flags in Pi 1.5.2's section, after reporting an
/// option no extension registered, and still helps: the same text as the original's.
#[test]
fn help_lists_the_extensions_flags_as_pi_1_5_2_does() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    let extension = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/command_flag/extension.ts");
    let args = ["-e", extension.to_str().unwrap(), "--zz", "--help"];
    let mut command = env.command(&args);
    with_host(&mut command, &path);
    let (code, stdout, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stderr, "Error: Unknown option: --zz\n");
    assert!(
        stdout.contains(concat!(
            "plan-mode extension).\nExtension CLI Flags:\n",
            "  --greeting <value>          How a note starts\n",
            "  --loud                      Notes in capitals\n\n\nExamples:"
        )),
        "{stdout}"
    );
    let mut theirs = original(&env, &path).unwrap();
    let (code, their_stdout, their_stderr) = run(theirs.args(args));
    assert_eq!((code, their_stdout, their_stderr), (0, stdout, stderr));
}

/// The steering extension under the original Pi 1.5.2 (`PI_ORIGINAL`) and under ours against the
/// same script: the same events in the same order, and the same requests.
#[test]
fn the_steering_extension_runs_as_pi_1_5_2_runs_it() {
    let Some(path) = node_path() else { return };
    let Some(original) = pi_testkit::original_pi() else {
        return;
    };
    let script = json!([{"text": ["Done."]}, {"text": ["Checked."]}]);
    let run_with = |program: Option<&Path>| {
        let mock = MockLlm::start(&script);
        let env = Env::new(&mock);
        let mut command =
            with_extension(&env, &["--mode", "json"], &fixture("remind.ts"), "fix it");
        if let Some(program) = program {
            let args: Vec<_> = command.get_args().map(|a| a.to_owned()).collect();
            let envs: Vec<_> = command
                .get_envs()
                .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned())))
                .collect();
            command = Command::new(program);
            command.args(args).envs(envs).current_dir(env.cwd());
        }
        with_host(&mut command, &path);
        let (code, stdout, stderr) = run(&mut command);
        assert_eq!(code, 0, "{stderr}");
        let types: Vec<String> = stdout
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["type"].to_string())
            .filter(|t| t != "\"message_update\"")
            .collect();
        let requests: Vec<Value> = mock
            .requests()
            .iter()
            .map(|r| Value::Array(r["messages"].as_array().unwrap()[1..].to_vec()))
            .collect();
        (types, requests)
    };
    let theirs = run_with(Some(&original));
    let ours = run_with(None);
    assert_eq!(ours, theirs);
}

/// `pi replay --extensions live` runs the recorded extensions again instead of answering
/// their hook points from the cassette: unchanged, the replay is the recording byte for byte;
/// changed (the gate now lets `rm -rf` through), the replay stops where the run diverges, the
/// next request, whose tool result the gate no longer wrote. The recorded answers, which need
/// no Node, still replay the original.
#[test]
fn replay_with_live_extensions_runs_a_changed_extension_again() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "bash", "arguments": "{\"command\":\"rm -rf stuff\"}"}]},
        {"tool_calls": [{"name": "bash", "arguments": "{\"command\":\"echo kept\"}"}]},
    ]));
    let env = Env::new(&mock);
    let extension = env.path("cap.ts");
    std::fs::copy(fixture("cap.ts"), &extension).unwrap();
    let cassette = env.path("cap.jsonl");
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &extension,
        "clean up",
    );
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");

    let replay = |live: bool| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_pi"));
        command.args(["replay", cassette.to_str().unwrap()]);
        if live {
            command.args(["--extensions", "live"]);
        }
        with_host(command.env("HOME", env.path("home")), &path);
        run(&mut command)
    };
    let (code, replayed, stderr) = replay(true);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(replayed, recorded);

    let source = std::fs::read_to_string(&extension).unwrap();
    std::fs::write(&extension, source.replace("rm -rf\")", "never\")")).unwrap();
    let (code, _, stderr) = replay(true);
    assert_ne!(code, 0, "the changed gate went unnoticed: {stderr}");
    assert!(stderr.contains("rm -rf is not allowed here"), "{stderr}");
    let (code, replayed, stderr) = replay(false);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(replayed, recorded);
}

/// The turn-cap extension under the original Pi 1.5.2 (`PI_ORIGINAL`) and under ours, each
/// against the same script: the same events in the same order, and the same requests (the
/// rewritten system prompt's tail, the gate's reason as the tool result).
#[test]
fn the_cap_extension_runs_as_pi_1_5_2_runs_it() {
    let Some(path) = node_path() else { return };
    let Some(original) = pi_testkit::original_pi() else {
        return;
    };
    let script = json!([
        {"tool_calls": [{"name": "bash", "arguments": "{\"command\":\"rm -rf stuff\"}"}]},
        {"tool_calls": [{"name": "bash", "arguments": "{\"command\":\"echo kept\"}"}]},
        {"text": ["unreached"]},
    ]);
    let run_with = |program: Option<&Path>| {
        let mock = MockLlm::start(&script);
        let env = Env::new(&mock);
        std::fs::create_dir_all(env.cwd().join("stuff")).unwrap();
        let extension = fixture("cap.ts");
        let mut command = with_extension(&env, &["--mode", "json"], &extension, "clean up");
        if let Some(program) = program {
            let args: Vec<_> = command.get_args().map(|a| a.to_owned()).collect();
            let envs: Vec<_> = command
                .get_envs()
                .filter_map(|(k, v)| Some((k.to_owned(), v?.to_owned())))
                .collect();
            command = Command::new(program);
            command.args(args).envs(envs).current_dir(env.cwd());
        }
        with_host(&mut command, &path);
        let (code, stdout, stderr) = run(&mut command);
        assert_eq!(code, 0, "{stderr}");
        let types: Vec<String> = stdout
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["type"].to_string())
            .collect();
        let requests: Vec<(String, Value)> = mock
            .requests()
            .iter()
            .take(2)
            .map(|r| {
                let system = r["messages"][0]["content"].as_str().unwrap();
                let tail = system.rsplit("\n\n").next().unwrap().to_owned();
                (
                    tail,
                    r["messages"].as_array().unwrap().last().unwrap().clone(),
                )
            })
            .collect();
        (types, requests, env.cwd().join("stuff").exists())
    };
    let theirs = run_with(Some(&original));
    let ours = run_with(None);
    assert!(theirs.2, "1.5.2 let rm -rf run: the fixture is wrong");
    assert_eq!(ours, theirs);
}

#[test]
fn a_configured_extension_without_node_is_an_error_not_skipped() {
    let mock = MockLlm::start(&json!([{"text": ["unreached"]}]));
    let env = Env::new(&mock);
    let extension = fixture("greet.ts");
    let no_node = env.path("no-node");
    std::fs::create_dir_all(&no_node).unwrap();
    let mut command = with_extension(&env, &[], &extension, "hi");
    command.env("PATH", &no_node);
    let (code, stdout, stderr) = run(&mut command);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "Error: Failed to load extension \"{}\": Node.js >= 22.19 is required to run extensions",
            extension.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.ends_with("Hint: Start without extensions using \"pi -ne\".\n"),
        "{stderr}"
    );
    assert!(
        mock.requests().is_empty(),
        "the run went on without its extension"
    );
}

/// The attack: a project the user never trusted ships `.pi/extensions/marker.ts`, which writes
/// a file when loaded. Untrusted, the run must not load it; `--approve` (trusting the project)
/// loads it, which shows the check can see a load.
#[test]
fn an_untrusted_projects_extension_is_not_loaded() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["one"]}, {"text": ["two"]}]));
    let env = Env::new(&mock);
    let project_extensions = env.cwd().join(".pi/extensions");
    std::fs::create_dir_all(&project_extensions).unwrap();
    std::fs::copy(fixture("marker.ts"), project_extensions.join("marker.ts")).unwrap();
    let marker = env.path("marker.txt");
    for (trust, loaded) in [(None, false), (Some("--approve"), true)] {
        let mut args = vec!["--provider", "mock", "--model", "mock-model", "-p", "hi"];
        args.extend(trust);
        let mut command = env.command(&args);
        with_host(&mut command, &path);
        command.env("PI_TEST_MARKER", &marker);
        let (code, _, stderr) = run(&mut command);
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(marker.exists(), loaded, "trust {trust:?}: {stderr}");
    }
}

/// The attack: the extension host dies while loading (killed outright, as a crash or an
/// out-of-memory kill ends it) or ends normally with an untrusted project's extensions left out
/// (the case whose stand-in folder outlives loading); neither may leave its temporary folder
/// behind in the system's temp dir.
#[test]
fn no_run_leaves_the_extension_hosts_temp_folder_behind() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["one"]}]));
    let env = Env::new(&mock);
    std::fs::create_dir_all(env.cwd().join(".pi/extensions")).unwrap();
    std::fs::copy(
        fixture("marker.ts"),
        env.cwd().join(".pi/extensions/marker.ts"),
    )
    .unwrap();
    for (extension, code) in [("killed.ts", 1), ("greet.ts", 0)] {
        let tmp = env.path(&format!("tmp-{extension}"));
        std::fs::create_dir_all(&tmp).unwrap();
        let mut command = with_extension(&env, &[], &fixture(extension), "hi");
        with_host(&mut command, &path);
        command.env("TMPDIR", &tmp);
        let (got, _, stderr) = run(&mut command);
        assert_eq!(got, code, "{extension}: {stderr}");
        let left: Vec<_> = std::fs::read_dir(&tmp)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("pi-extension-host-"))
            .collect();
        assert!(left.is_empty(), "{extension} left {left:?}: {stderr}");
    }
}

/// An extension whose factory throws stops the run with the text and hint Pi 1.5.2 prints for
/// it (checked against 1.5.2 with the same file).
#[test]
fn a_failing_extension_is_pis_load_error() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["unreached"]}]));
    let env = Env::new(&mock);
    let extension = fixture("throws.ts");
    let mut command = with_extension(&env, &[], &extension, "hi");
    with_host(&mut command, &path);
    let (code, stdout, stderr) = run(&mut command);
    assert_eq!((code, stdout.as_str()), (1, ""), "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "Error: Failed to load extension \"{}\": Failed to load extension: no greeting today\n\
             Hint: Start without extensions using \"pi -ne\".\n",
            extension.display()
        )
    );
    assert!(mock.requests().is_empty());
}

/// In RPC mode, an `abort` read from stdin while an extension's tool runs in the host reaches
/// the tool's `AbortSignal` (the channel does not hold up stdin), and the tool's answer is the
/// call's result, as in Pi 1.5.2.
#[test]
fn an_rpc_abort_reaches_a_running_extension_tool() {
    use std::io::{BufRead, BufReader, Write};
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "wait", "arguments": "{}"}]},
        {"text": ["after"]},
    ]));
    let env = Env::new(&mock);
    let extension = fixture("wait.ts");
    let mut command = env.rpc_command();
    command.args(["--no-session", "-e", extension.to_str().unwrap()]);
    with_host(&mut command, &path);
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{}", json!({"type": "prompt", "message": "wait"})).unwrap();
    let mut end = None;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        match event["type"].as_str() {
            Some("tool_execution_update") => {
                writeln!(stdin, "{}", json!({"type": "abort"})).unwrap();
            }
            Some("tool_execution_end") => end = Some(event),
            Some("agent_end") => break,
            _ => {}
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let end = end.expect("the tool's call never ended");
    assert_eq!(end["isError"], true);
    assert_eq!(
        end["result"],
        json!({"content": [{"type": "text", "text": "stopped: aborted=true"}], "details": {}})
    );
}

/// Runs `command` with its output in files, killing it (and failing) if it has not ended
/// within `limit`: a guard against a hang, not a timing.
fn run_or_hang(command: &mut Command, dir: &Path, limit: std::time::Duration) -> (i32, String) {
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

/// The attack: the extension host's output is outside input. A `node` that writes a line that
/// is not the protocol and stays up, one that writes an endless line, and one that dies
/// half-way through a line must each end the run with Pi's load error naming what went wrong,
/// never a hang or a panic, and no model request.
#[test]
fn a_broken_extension_host_is_a_clear_error_not_a_hang() {
    let mock = MockLlm::start(&json!([{"text": ["unreached"]}]));
    let env = Env::new(&mock);
    let extension = fixture("greet.ts");
    let cases = [
        (
            "garbage",
            "echo 'this is not the protocol'\nexec sleep 60",
            "not its protocol",
        ),
        (
            "huge",
            "head -c 80000000 /dev/zero | tr '\\0' a\nexec sleep 60",
            "longer than",
        ),
        (
            "dies",
            "read -r request\nprintf '{\"id\":0,'\nexit 3",
            "ended in the middle of a line",
        ),
    ];
    for (name, script, said) in cases {
        let bin = env.path(&format!("node-{name}"));
        std::fs::create_dir_all(&bin).unwrap();
        let node = bin.join("node");
        std::fs::write(&node, format!("#!/bin/sh\n{script}\n")).unwrap();
        let mut permissions = std::fs::metadata(&node).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&node, permissions).unwrap();
        let mut command = env.command(&[
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "-e",
            extension.to_str().unwrap(),
            "-p",
            "hi",
        ]);
        command.env("PATH", format!("{}:/usr/bin:/bin", bin.display()));
        let (code, stderr) = run_or_hang(&mut command, &bin, std::time::Duration::from_secs(45));
        assert_eq!(code, 1, "{name}: {stderr}");
        assert!(
            stderr.starts_with(&format!(
                "Error: Failed to load extension \"{}\": the extension host failed: ",
                extension.display()
            )) && stderr.contains(said),
            "{name}: {stderr}"
        );
        assert!(
            stderr.ends_with("Hint: Start without extensions using \"pi -ne\".\n"),
            "{name}: {stderr}"
        );
    }
    assert!(
        mock.requests().is_empty(),
        "a run went on without its extension"
    );
}

/// A `cache_warming_decision` handler overrides Pi's decision (Pi 1.5.2's last override): on a
/// model whose warm does not pay (Pi says stop) the extension, shown Pi's `stop`, asks for a
/// warm; the warm goes out with a one-token cap and its entry says `extension override`, after
/// the entry the handler wrote.
#[test]
fn an_extension_overrides_the_cache_warming_decision() {
    use std::io::{BufRead, BufReader, Write};
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"text": ["Hello."], "usage": {"input": 100000, "output": 5}},
        {"text": ["W"], "usage": {"input": 100000, "output": 1}}
    ]));
    let env = Env::new(&mock);
    let mut models = pi_testkit::demo::models_json(mock.port);
    models["providers"]["mock"]["models"]
        .as_array_mut()
        .unwrap()
        .push(json!({
            "id": "mock-cache", "name": "Mock Cache", "contextWindow": 200000, "maxTokens": 16384,
            "cost": {"input": 0.001, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            "promptCache": {"short": 12}
        }));
    env.write_agent("models.json", &models.to_string());
    let extension = fixture("warm.ts");
    let mut command = env.command(&[
        "--provider",
        "mock",
        "--model",
        "mock-cache",
        "-e",
        extension.to_str().unwrap(),
        "--mode",
        "rpc",
    ]);
    with_host(&mut command, &path);
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{}", json!({"type": "prompt", "message": "Hi"})).unwrap();
    let (tx, lines) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let (mut seen, mut appended) = (Vec::new(), Vec::new());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let Ok(line) = lines.recv_timeout(left) else {
            child.kill().unwrap();
            panic!("no warm within 30 s; printed:\n{}", seen.join("\n"));
        };
        let event: Value = serde_json::from_str(&line).unwrap();
        seen.push(line);
        if event["type"] == "entry_appended" {
            appended.push(event["entry"].clone());
            if event["entry"]["type"] == "usage" {
                break;
            }
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    assert_eq!(appended.len(), 2, "{appended:?}");
    assert_eq!(appended[0]["customType"], "warming-decision");
    assert_eq!(appended[0]["data"], json!({"action": "stop"}));
    assert_eq!(appended[1]["kind"], "cache_warm");
    assert_eq!(appended[1]["note"], "extension override");
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1]["max_completion_tokens"], 1);
}

/// Drives `command` in RPC mode: sends one prompt, answers each `extension_ui_request` dialog
/// as a client would (a confirmation yes, an input `v2`), and closes stdin after `agent_end`;
/// what it printed comes back, as printed and as JSON lines.
fn drive_rpc_with_ui(command: &mut Command, prompt: &str) -> (String, Vec<Value>) {
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
fn ui_exchange(lines: &[Value]) -> Vec<Value> {
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
fn original(env: &Env, path: &str) -> Option<Command> {
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
fn rpc_commands(command: &mut Command) -> Value {
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

/// RPC `get_commands` lists an extension's commands first, as Pi 1.5.2 does with the same
/// extension (its `sourceInfo` and all), and a built-in command whose name an extension took is
/// not listed (Pi leaves that built-in extension out).
#[test]
fn rpc_get_commands_lists_an_extensions_commands_as_pi_1_5_2_does() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    let extension = fixture("commands.ts");
    let extension = extension.to_str().unwrap();
    let args = [
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--mode",
        "rpc",
        "-e",
        extension,
    ];
    let mut ours = env.command(&args);
    with_host(&mut ours, &path);
    let listed = rpc_commands(&mut ours);
    let names: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names[..2], ["hello", "mcp"], "{listed:#}");
    assert_eq!(listed[1]["description"], "Mine, not Pi's");
    if let Some(mut original) = original(&env, &path) {
        original.args(args);
        assert_eq!(listed, rpc_commands(&mut original));
    }
}

/// In RPC mode an extension's tool asks `ctx.ui.confirm` (and `input`) while it runs: Pi's
/// `extension_ui_request` lines go out (its notice and status without waiting), the client's
/// `extension_ui_response` read from stdin reaches the waiting tool (no deadlock: stdin and the
/// extension host are read independently), as Pi 1.5.2 does with the same extension. The
/// exchange is recorded: `pi replay`, with no Node and no client, prints the same bytes.
#[test]
fn an_extension_asks_the_rpc_client_and_the_replay_needs_neither_node_nor_client() {
    let Some(path) = node_path() else { return };
    let script = json!([
        {"tool_calls": [{"name": "deploy", "arguments": "{\"target\":\"prod\"}"}]},
        {"text": ["Deployed."]},
    ]);
    let extension = fixture("confirm.ts");
    let extension = extension.to_str().unwrap();

    let mock = MockLlm::start(&script);
    let env = Env::new(&mock);
    let cassette = env.path("confirm.jsonl");
    let mut command = env.rpc_command();
    command.args([
        "--no-session",
        "-e",
        extension,
        "--record",
        cassette.to_str().unwrap(),
    ]);
    with_host(&mut command, &path);
    let (recorded, ours) = drive_rpc_with_ui(&mut command, "deploy to prod");
    let exchange = ui_exchange(&ours);
    assert_eq!(
        exchange.last().unwrap()["result"]["content"][0]["text"],
        "hasUI=true confirmed=true tag=v2",
        "{exchange:#?}"
    );

    let mock = MockLlm::start(&script);
    let env152 = Env::new(&mock);
    let mut command = original(&env152, &path).unwrap();
    command.args([
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--mode",
        "rpc",
        "--no-session",
        "-e",
        extension,
    ]);
    let (_, theirs) = drive_rpc_with_ui(&mut command, "deploy to prod");
    assert_eq!(exchange, ui_exchange(&theirs));

    let no_node = env.path("no-node");
    std::fs::create_dir_all(&no_node).unwrap();
    let (code, replayed, stderr) = run(Command::new(env!("CARGO_BIN_EXE_pi"))
        .args(["replay", cassette.to_str().unwrap()])
        .env("PATH", &no_node)
        .env("HOME", env.path("home"))
        .stdin(std::process::Stdio::null()));
    assert_eq!(code, 0, "{stderr}");
    let differing = replayed.lines().zip(recorded.lines()).find(|(a, b)| a != b);
    assert_eq!(differing, None, "the replay printed another line");
    assert_eq!(replayed, recorded);
}

/// Without a UI (print and json modes) the extension's dialogs answer their defaults at once
/// and `hasUI` is false, as in Pi 1.5.2.
#[test]
fn without_rpc_an_extensions_dialogs_answer_their_defaults() {
    let Some(path) = node_path() else { return };
    let script = json!([
        {"tool_calls": [{"name": "deploy", "arguments": "{\"target\":\"prod\"}"}]},
        {"text": ["Deployed."]},
    ]);
    let extension = fixture("confirm.ts");
    let mut texts = Vec::new();
    for ours in [true, false] {
        let mock = MockLlm::start(&script);
        let env = Env::new(&mock);
        let args = [
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--mode",
            "json",
            "--no-session",
            "-e",
            extension.to_str().unwrap(),
            "-p",
            "deploy",
        ];
        let mut command = if ours {
            let mut command = env.command(&args);
            with_host(&mut command, &path);
            command
        } else {
            let mut command = original(&env, &path).unwrap();
            command.args(args);
            command
        };
        let (code, stdout, stderr) = run(&mut command);
        assert_eq!(code, 0, "{stderr}");
        let end: Value = stdout
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|e| e["type"] == "tool_execution_end")
            .unwrap();
        texts.push(end["result"]["content"][0]["text"].clone());
    }
    assert_eq!(texts[0], "hasUI=false confirmed=false tag=undefined");
    assert_eq!(texts[0], texts[1]);
}

/// The extension conformance set (`conformance/extensions`: five extensions with their mock
/// scripts, and Pi 1.5.2's traces of them), run under ours and compared as the scenarios are.
/// Every case matches but those listed in its `PENDING` file, which must still differ (a case
/// that came to match is taken off the list). Needs Python 3 for the kit's runner besides Node
/// and the install.
#[test]
fn the_extension_conformance_set_matches_pi_1_5_2() {
    let Some(_) = node_path() else { return };
    let python = Command::new("python3").arg("--version").output();
    if !python.is_ok_and(|o| o.status.success()) {
        assert!(
            !std::env::var("PI_REQUIRE_EXTENSIONS").is_ok_and(|v| v == "1"),
            "PI_REQUIRE_EXTENSIONS=1 but python3 cannot run"
        );
        pi_testkit::skip("python3 (the conformance kit's runner) cannot run");
        return;
    }
    let set = Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/extensions");
    let pending = std::fs::read_to_string(set.join("PENDING")).unwrap();
    let pending: Vec<&str> = pending
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .collect();
    let out = Command::new("python3")
        .arg(set.join("run.py"))
        .args(["compare", "--pi", env!("CARGO_BIN_EXE_pi"), "--host-pi-dir"])
        .arg(std::env::var("PI_EXTENSION_HOST_PI_DIR").unwrap())
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let cases: Vec<(&str, &str)> = report
        .lines()
        .filter_map(|line| line.split_once(' '))
        .collect();
    // One verdict for each case folder (its scenario.json beside its extension).
    let folders = std::fs::read_dir(&set)
        .unwrap()
        .filter(|entry| {
            entry
                .as_ref()
                .unwrap()
                .path()
                .join("scenario.json")
                .is_file()
        })
        .count();
    assert_eq!(cases.len(), folders, "{report}{stderr}");
    assert!(folders >= 10, "the set lost cases: {report}");
    for (name, verdict) in cases {
        if pending.contains(&name) {
            assert_ne!(verdict, "match", "{name} matches now: take it off PENDING");
        } else {
            assert_eq!(
                verdict, "match",
                "{name} does not match Pi 1.5.2: {verdict}"
            );
        }
    }
}

/// In RPC mode an `input` handler reads `source: "rpc"`, and the getters follow the session
/// (idle at `input`, the answer persisted at `turn_end`), as in Pi 1.5.2; the recording
/// replays with no Node, the hook points asked as they were recorded (the source included).
#[test]
fn rpc_input_says_rpc_and_the_getters_follow_the_session_and_replay_without_node() {
    let Some(path) = node_path() else { return };
    let script = json!([{"text": ["Heard."]}]);
    let extension = fixture("getters.ts");
    let extension = extension.to_str().unwrap();
    let notices = |lines: &[Value]| -> Vec<Value> {
        lines
            .iter()
            .filter(|l| l["method"] == "notify")
            .map(|l| l["message"].clone())
            .collect()
    };

    let mock = MockLlm::start(&script);
    let env = Env::new(&mock);
    let cassette = env.path("getters.jsonl");
    let mut command = env.rpc_command();
    command.args([
        "--no-session",
        "-e",
        extension,
        "--record",
        cassette.to_str().unwrap(),
    ]);
    with_host(&mut command, &path);
    let (recorded, ours) = drive_rpc_with_ui(&mut command, "hello");
    let expected = [
        "input source=rpc idle=true entries=2 leaf=thinking_level_change",
        "turn_end idle=false entries=5 leaf=assistant",
    ];
    assert_eq!(notices(&ours), expected.map(|n| json!(n)));

    if let Some(mut command) = original(&Env::new(&MockLlm::start(&script)), &path) {
        command.args([
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--mode",
            "rpc",
            "--no-session",
            "-e",
            extension,
        ]);
        let (_, theirs) = drive_rpc_with_ui(&mut command, "hello");
        assert_eq!(notices(&ours), notices(&theirs));
    }

    let no_node = env.path("no-node");
    std::fs::create_dir_all(&no_node).unwrap();
    let (code, replayed, stderr) = run(Command::new(env!("CARGO_BIN_EXE_pi"))
        .args(["replay", cassette.to_str().unwrap()])
        .env("PATH", &no_node)
        .env("HOME", env.path("home"))
        .stdin(std::process::Stdio::null()));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(replayed, recorded);
}
