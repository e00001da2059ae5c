//! Extension commands and flags: a command run from print mode and over RPC, a prompt after a
//! command's idle run, `get_commands`, options no one registered, a flag registered twice, and
//! `--help`, as Pi 1.5.2 does them.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::common::{Env, MockLlm};
use crate::support::{
    assert_replays_without_node, fixture, json_lines, node_path, original, replay_without_node,
    rpc_commands, run, with_extension, with_host,
};

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
    let events = json_lines(&recorded);
    let appended: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "entry_appended")
        .collect();
    assert_eq!(appended.len(), 1, "{recorded}");
    assert_eq!(
        appended[0]["entry"]["data"],
        json!({"args": "the plan", "idle": true})
    );

    assert_replays_without_node(&env, &cassette, &recorded);

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

    assert_replays_without_node(&env, &cassette, &recorded);
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

/// Print mode's next message after a command that sent a user message while idle: as in Pi
/// 1.5.2 its `input` handlers run, the command's run starts (its `before_agent_start` entry
/// printed) and the message fails with Pi's error (exit 1); the run is aborted before its
/// request, unprinted, and the recording replays the same lines and failure with no Node.
#[test]
fn a_prompt_after_a_commands_idle_run_fails_as_pis_and_replays_so_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Never sent."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("idle.jsonl");
    let extension = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/print_idle_then/extension.ts");
    let before = ["--mode", "json", "--record", cassette.to_str().unwrap()];
    let mut command = with_extension(&env, &before, &extension, "/ask say hello");
    command.arg("then what?");
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    const BUSY: &str = "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.\n";
    assert_eq!((code, stderr.as_str()), (1, BUSY));
    let entries: Vec<String> = recorded
        .lines()
        .skip(1)
        .map(|line| {
            let event: Value = serde_json::from_str(line).unwrap();
            format!("{} {}", event["type"], event["entry"]["customType"])
        })
        .collect();
    assert_eq!(
        entries,
        [
            "\"entry_appended\" \"asked\"",
            "\"entry_appended\" \"input\"",
            "\"entry_appended\" \"input\"",
            "\"entry_appended\" \"start\""
        ]
    );
    assert!(
        mock.requests().is_empty(),
        "the aborted run sent its request"
    );
    let (code, replayed, stderr) = replay_without_node(&env, &cassette);
    assert_eq!((code, stderr.as_str(), replayed), (1, BUSY, recorded));
}
