//! Extensions in RPC mode: an `abort` reaching a running tool, dialogs asked of the client (and
//! their defaults without one), and an `input` handler's `source` and getters.

use serde_json::{json, Value};

use crate::common::{Env, MockLlm};
use crate::support::{
    assert_replays_without_node, drive_rpc_with_ui, fixture, node_path, original,
    replay_without_node, run, send, spawn_rpc, ui_exchange, with_host,
};

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

    assert_replays_without_node(&env, &cassette, &recorded);
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

    assert_replays_without_node(&env, &cassette, &recorded);
}

/// Over RPC, a prompt's answer comes after its `before_agent_start` handler's `extension_error`
/// and before its run's `agent_start`; a prompt while streaming without a behaviour goes through
/// the `input` handlers before it is refused (or answered `handled`), as in Pi 1.5.2. The
/// recording replays to the same bytes with no Node.
#[test]
fn rpc_prompt_answers_follow_their_handlers_and_replay_without_node() {
    use std::io::{BufRead, BufReader, Write};
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"chunk_delay_ms": 300, "text": ["Working ", "on ", "it ", "slowly ", "now."]},
    ]));
    let env = Env::new(&mock);
    let cassette = env.path("busy.jsonl");
    let extension = fixture("busy.ts");
    let mut command = env.rpc_command();
    command.args(["--no-session", "-e", extension.to_str().unwrap()]);
    command.args(["--record", cassette.to_str().unwrap()]);
    with_host(&mut command, &path);
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut send = |line: Value| writeln!(stdin, "{line}").unwrap();
    send(json!({"id": "p1", "type": "prompt", "message": "start"}));
    let (mut recorded, mut lines, mut streaming) = (String::new(), Vec::new(), false);
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        recorded.push_str(&line);
        recorded.push('\n');
        let event: Value = serde_json::from_str(&line).unwrap();
        match (event["type"].as_str(), event["id"].as_str()) {
            (Some("message_update"), _) if !streaming => {
                streaming = true;
                send(json!({"id": "p2", "type": "prompt", "message": "refuse me"}));
            }
            (Some("response"), Some("p2")) => {
                send(json!({"id": "p3", "type": "prompt", "message": "handle me"}))
            }
            (Some("response"), Some("p3")) => {
                send(json!({"id": "p4", "type": "prompt", "message": "break me"}))
            }
            _ => {}
        }
        let end = event["type"] == "agent_settled";
        lines.push(event);
        if end {
            break;
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let order: Vec<String> = lines
        .iter()
        .filter_map(|l| match l["type"].as_str()? {
            "response" => Some(format!("{} {}", l["id"], l["data"]["disposition"])),
            "extension_error" => Some(format!("error {}", l["event"])),
            "entry_appended" => Some(format!("entry {}", l["entry"]["data"]["text"])),
            kind @ ("agent_start" | "agent_end") => Some(kind.to_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(
        order,
        [
            r#"entry "start""#,
            r#"error "before_agent_start""#,
            r#""p1" "started""#,
            "agent_start",
            r#"entry "refuse me""#,
            r#""p2" null"#,
            r#"entry "handle me""#,
            r#""p3" "handled""#,
            r#"entry "break me""#,
            r#"error "input""#,
            r#""p4" null"#,
            "agent_end",
        ]
    );
    let refusal = "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue the message.";
    let refusals: Vec<_> = lines.iter().filter(|l| l["success"] == false).collect();
    assert_eq!(refusals.len(), 2);
    assert!(refusals.iter().all(|l| l["error"] == refusal));

    assert_replays_without_node(&env, &cassette, &recorded);
}

/// Over RPC, a prompt while streaming without a behaviour whose `input` handler outlasts the
/// run is no longer busy when the handlers decide: as in Pi 1.5.2 it is answered `started`
/// (before its run's `agent_start`) and runs. The recording replays to the same bytes with no
/// Node.
#[test]
fn a_busy_prompt_whose_run_ended_meanwhile_starts_a_run_and_replays_without_node() {
    use std::io::{BufRead, BufReader, Write};
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"chunk_delay_ms": 100, "text": ["Short ", "run."]},
        {"text": ["Slow one answered."]},
    ]));
    let env = Env::new(&mock);
    let cassette = env.path("ended.jsonl");
    let extension = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/busy_prompt_ended/extension.ts");
    let mut command = env.rpc_command();
    command.args(["--no-session", "-e", extension.to_str().unwrap()]);
    command.args(["--record", cassette.to_str().unwrap()]);
    with_host(&mut command, &path);
    let mut child = command
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut send = |line: Value| writeln!(stdin, "{line}").unwrap();
    send(json!({"id": "p1", "type": "prompt", "message": "start"}));
    let (mut recorded, mut lines, mut streaming, mut settled) =
        (String::new(), Vec::new(), false, 0);
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        recorded.push_str(&line);
        recorded.push('\n');
        let event: Value = serde_json::from_str(&line).unwrap();
        if event["type"] == "message_update" && !streaming {
            streaming = true;
            send(json!({"id": "p2", "type": "prompt", "message": "slow"}));
        }
        settled += usize::from(event["type"] == "agent_settled");
        lines.push(event);
        if settled == 2 {
            break;
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    let order: Vec<String> = lines
        .iter()
        .filter_map(|l| match l["type"].as_str()? {
            "response" => Some(format!("{} {}", l["id"], l["data"]["disposition"])),
            kind @ ("agent_start" | "agent_settled") => Some(kind.to_owned()),
            _ => None,
        })
        .collect();
    assert_eq!(
        order,
        [
            r#""p1" "started""#,
            "agent_start",
            "agent_settled",
            r#""p2" "started""#,
            "agent_start",
            "agent_settled",
        ],
        "{recorded}"
    );
    assert_eq!(mock.requests().len(), 2);

    assert_replays_without_node(&env, &cassette, &recorded);
}

/// An attack on a held `started` answer: the process gets SIGTERM, or its stdin ends, while a
/// prompt's `before_agent_start` handler holds the run up (after a first prompt's run wrote the
/// session file). Whatever it wrote is whole: every stdout, session-file and cassette line is
/// a JSON line, and the cassette replays with no Node (to the run's exit, a signal's stop
/// included) or is refused as unusable (125), never half read.
#[test]
fn a_run_stopped_before_it_starts_leaves_every_file_whole() {
    use std::io::{BufRead, BufReader};
    let Some(path) = node_path() else { return };
    for stop in ["TERM", "eof"] {
        let mock = MockLlm::start(&json!([{"text": ["First."]}, {"text": ["Never."]}]));
        let env = Env::new(&mock);
        let cassette = env.path("stopped.jsonl");
        let mut command = env.rpc_command();
        command.args(["-e", fixture("slow_start.ts").to_str().unwrap()]);
        command.args(["--record", cassette.to_str().unwrap()]);
        with_host(&mut command, &path);
        let mut child = command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take();
        send(
            &mut stdin,
            json!({"id": "p1", "type": "prompt", "message": "first"}),
        );
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut printed = String::new();
        loop {
            let mut line = String::new();
            assert!(out.read_line(&mut line).unwrap() > 0, "{printed}");
            printed.push_str(&line);
            if line.contains("\"agent_settled\"") {
                break;
            }
        }
        send(
            &mut stdin,
            json!({"id": "p2", "type": "prompt", "message": "slow"}),
        );
        std::thread::sleep(std::time::Duration::from_millis(1000));
        match stop {
            "eof" => drop(stdin.take()),
            signal => {
                let status = std::process::Command::new("kill")
                    .args([&format!("-{signal}"), &child.id().to_string()])
                    .status()
                    .unwrap();
                assert!(status.success());
            }
        }
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
        printed.push_str(&rest);
        let status = child.wait().unwrap();
        assert!(
            [Some(0), Some(143)].contains(&status.code()),
            "{stop}: {status:?}"
        );
        let whole = |what: &str, text: &str| {
            assert!(
                text.is_empty() || text.ends_with('\n'),
                "{stop}: {what} cut: {text}"
            );
            for line in text.lines() {
                assert!(
                    serde_json::from_str::<Value>(line).is_ok(),
                    "{stop}: {what} holds a half line: {line}"
                );
            }
        };
        whole("stdout", &printed);
        let files = env.session_files();
        assert_eq!(files.len(), 1, "{stop}: the first run's session file");
        for file in files.iter().chain([&cassette]) {
            whole(
                &file.display().to_string(),
                &std::fs::read_to_string(file).unwrap(),
            );
        }
        let (code, replayed, stderr) = replay_without_node(&env, &cassette);
        if code != 125 {
            assert_eq!(replayed, printed, "{stop}: {stderr}");
        }
        assert!(
            Some(code) == status.code() || (code == 125 && !stderr.trim().is_empty()),
            "{stop}: the replay gave {code}: {stderr}\n{}",
            std::fs::read_to_string(&cassette).unwrap()
        );
    }
}

/// RPC mode tells the extensions of the session's start before it reads a command (a handler's
/// `notify` is the first line printed, what else it does is not printed) and of its end once
/// stdin has ended, as Pi 1.5.2 does; the replay, with no Node, prints the same bytes.
#[test]
fn rpc_mode_tells_the_session_start_and_shutdown_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("lifecycle.jsonl");
    let mut command = env.rpc_command();
    command.args([
        "-e",
        fixture("lifecycle.ts").to_str().unwrap(),
        "--record",
        cassette.to_str().unwrap(),
    ]);
    with_host(&mut command, &path);
    let (recorded, lines) = drive_rpc_with_ui(&mut command, "hi");
    assert_eq!(lines[0]["method"], "notify", "{recorded}");
    assert_eq!(lines[0]["message"], "session startup");
    assert!(!recorded.contains("entry_appended"), "{recorded}");
    assert_eq!(
        crate::recording::lifecycle_entries(&env),
        [
            "session_start startup",
            "system",
            "user",
            "assistant",
            "session_shutdown quit"
        ]
    );

    assert_replays_without_node(&env, &cassette, &recorded);
}

/// Over RPC, `set_model` and `cycle_model` are answered once their `model_select` handlers are
/// done (Pi awaits them), each handler's entry before its answer, with the cycle told as one;
/// a prompt after them runs on the model cycled to. The recording replays to the same bytes
/// with no Node.
#[test]
fn rpc_model_changes_answer_after_their_model_select_handlers_and_replay_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("models.jsonl");
    let extension = fixture("model_select.ts");
    let mut command = env.rpc_command();
    command.args(["--no-session", "-e", extension.to_str().unwrap()]);
    command.args(["--record", cassette.to_str().unwrap()]);
    with_host(&mut command, &path);
    let (mut child, mut stdin, lines) = spawn_rpc(&mut command);
    send(
        &mut stdin,
        json!({"id": "m1", "type": "set_model", "provider": "mock", "modelId": "mock-reasoner"}),
    );
    let (mut recorded, mut order) = (String::new(), Vec::new());
    for line in lines {
        let line = line.unwrap();
        recorded.push_str(&line);
        recorded.push('\n');
        let event: Value = serde_json::from_str(&line).unwrap();
        match (event["type"].as_str(), event["id"].as_str()) {
            (Some("entry_appended"), _) => order.push(format!(
                "entry {} {}",
                event["entry"]["data"]["model"], event["entry"]["data"]["source"]
            )),
            (Some("response"), Some(id)) => {
                order.push(format!("response {id}"));
                match id {
                    "m1" => send(&mut stdin, json!({"id": "m2", "type": "cycle_model"})),
                    "m2" => send(
                        &mut stdin,
                        json!({"id": "p1", "type": "prompt", "message": "Hi"}),
                    ),
                    _ => {}
                }
            }
            (Some("message_end"), _) if event["message"]["role"] == "assistant" => {
                order.push(format!("answered by {}", event["message"]["model"]));
            }
            (Some("agent_settled"), _) => drop(stdin.take()),
            _ => {}
        }
    }
    assert!(child.wait().unwrap().success());
    assert_eq!(
        order,
        [
            r#"entry "mock-reasoner" "set""#,
            "response m1",
            r#"entry "mock-claude" "cycle""#,
            "response m2",
            "response p1",
            r#"answered by "mock-claude""#,
        ],
        "{recorded}"
    );

    assert_replays_without_node(&env, &cassette, &recorded);
}

/// In RPC mode an extension's `session_before_switch` and `session_before_fork` handlers are
/// asked before `new_session`, `switch_session`, `fork` and `clone` replace anything (a fork of
/// an entry that does not exist included, as Pi 1.5.2 asks before it looks): each cancels, the
/// answers say `cancelled: true`, and the session, with the entries the handlers wrote, goes
/// on. The recording replays to the same bytes with no Node.
#[test]
fn cancelled_replacements_stay_in_the_session_and_replay_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("refused.jsonl");
    let mut command = env.rpc_command();
    command.args(["-e", fixture("refuse_replace.ts").to_str().unwrap()]);
    command.args(["--record", cassette.to_str().unwrap()]);
    with_host(&mut command, &path);
    let (recorded, lines) = drive_rpc_lines(
        &mut command,
        &[json!({"id": "p1", "type": "prompt", "message": "hi"})],
        &[
            json!({"id": "n1", "type": "new_session"}),
            json!({"id": "w1", "type": "switch_session", "sessionPath": "other.jsonl"}),
            json!({"id": "f1", "type": "fork", "entryId": "nope"}),
            json!({"id": "c1", "type": "clone"}),
        ],
        "c1",
    );
    let answers: Vec<String> = lines
        .iter()
        .filter(|l| l["type"] == "response" && l["id"] != "p1")
        .map(|l| format!("{} {}", l["id"].as_str().unwrap(), l["data"]))
        .collect();
    let cancelled = r#"{"cancelled":true}"#;
    assert_eq!(
        answers,
        ["n1", "w1", "f1", "c1"].map(|id| format!("{id} {cancelled}")),
        "{recorded}"
    );
    let files = env.session_files();
    assert_eq!(files.len(), 1, "{files:?}");
    let refused: Vec<String> = std::fs::read_to_string(&files[0])
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["customType"] == "refused")
        .map(|e| {
            format!(
                "{} {} {}",
                e["data"]["heard"], e["data"]["reason"], e["data"]["target"]
            )
        })
        .collect();
    assert_eq!(
        refused[..3],
        [
            r#""session_before_switch" "new" null"#,
            r#""session_before_switch" "resume" "other.jsonl""#,
            r#""session_before_fork" "before" "nope""#,
        ]
    );
    assert!(
        refused[3].starts_with(r#""session_before_fork" "at" "#),
        "{refused:?}"
    );
    assert!(!env.cwd().join("other.jsonl").exists());

    assert_replays_without_node(&env, &cassette, &recorded);
}

/// A recorded RPC run whose extension lets `new_session` through (the old session still
/// hears `session_shutdown`, the new one `session_start`, twice, as Pi 1.5.2's RPC mode binds
/// it twice): the cassette holds both sessions, and its replay, with no Node, prints all the
/// run printed.
#[test]
fn an_allowed_replacement_is_recorded_and_replayed_whole() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("allowed.jsonl");
    let mut command = env.rpc_command();
    command.args(["-e", fixture("allow_replace.ts").to_str().unwrap()]);
    command.args(["--record", cassette.to_str().unwrap()]);
    with_host(&mut command, &path);
    let (recorded, lines) = drive_rpc_lines(
        &mut command,
        &[json!({"id": "p1", "type": "prompt", "message": "hi"})],
        &[json!({"id": "n1", "type": "new_session"})],
        "n1",
    );
    let answer = lines.iter().find(|l| l["id"] == "n1").unwrap();
    assert_eq!(answer["data"], json!({"cancelled": false}), "{recorded}");
    let heard: Vec<String> = lines
        .iter()
        .filter(|l| l["type"] == "entry_appended")
        .map(|l| {
            let data = &l["entry"]["data"];
            format!(
                "{} {}",
                data["heard"].as_str().unwrap(),
                data["reason"].as_str().unwrap()
            )
        })
        .collect();
    // Neither the startup's `session_start` nor the new session's first is printed: RPC mode
    // subscribes its printer to a session once its extensions are bound.
    assert_eq!(
        heard,
        [
            "session_before_switch new",
            "session_shutdown new",
            "session_start new"
        ],
        "{recorded}"
    );
    assert_replays_without_node(&env, &cassette, &recorded);
}

/// Runs an RPC `command`: sends `first`, then `then` once the run settled, and reads until
/// the answer of `last`; what it printed, and its lines.
fn drive_rpc_lines(
    command: &mut std::process::Command,
    first: &[Value],
    then: &[Value],
    last: &str,
) -> (String, Vec<Value>) {
    let (mut child, mut stdin, output) = spawn_rpc(command);
    for line in first {
        send(&mut stdin, line.clone());
    }
    let (mut printed, mut lines) = (String::new(), Vec::new());
    for line in output {
        let line = line.unwrap();
        printed.push_str(&line);
        printed.push('\n');
        let event: Value = serde_json::from_str(&line).unwrap();
        if event["type"] == "agent_settled" {
            for line in then {
                send(&mut stdin, line.clone());
            }
        }
        let done = event["id"] == last;
        lines.push(event);
        if done {
            break;
        }
    }
    drop(stdin.take());
    assert!(child.wait().unwrap().success());
    (printed, lines)
}

/// A `session_before_switch` handler that asks the RPC client to confirm: the loop reads on
/// while the handlers decide, so the client's `extension_ui_response` reaches the dialog (a
/// loop of the replacement's own would wait for the handlers without reading stdin, and the
/// dialog for stdin: a deadlock). A refusal cancels; the recording replays with no Node.
#[test]
fn a_replacement_asked_through_a_dialog_is_answered_by_the_client() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("confirm.jsonl");
    let mut command = env.rpc_command();
    command.args(["-e", fixture("confirm_replace.ts").to_str().unwrap()]);
    command.args(["--record", cassette.to_str().unwrap()]);
    with_host(&mut command, &path);
    let (mut child, mut stdin, lines) = spawn_rpc(&mut command);
    send(&mut stdin, json!({"id": "n1", "type": "new_session"}));
    let (mut recorded, mut answer) = (String::new(), Value::Null);
    for line in lines {
        let line = line.unwrap();
        recorded.push_str(&line);
        recorded.push('\n');
        let event: Value = serde_json::from_str(&line).unwrap();
        if event["type"] == "extension_ui_request" && event["method"] == "confirm" {
            send(
                &mut stdin,
                json!({"type": "extension_ui_response", "id": event["id"], "confirmed": false}),
            );
        }
        if event["id"] == "n1" {
            answer = event;
            break;
        }
    }
    drop(stdin.take());
    assert!(child.wait().unwrap().success());
    assert_eq!(answer["data"], json!({"cancelled": true}), "{recorded}");
    assert!(recorded.contains(r#""customType":"asked""#), "{recorded}");

    assert_replays_without_node(&env, &cassette, &recorded);
}

/// A dialog tells every extension (case `ui_prompt`'s two): one asks the client to confirm a
/// bash call in its `tool_call` gate, the other hears `ui_prompt_start` as the dialog opens and
/// `ui_prompt_end` once the client answered, after the asking one's own handler, as Pi 1.5.2's
/// runner tells them. What the hearing handler asked for (its entry) is recorded with the gate's
/// answer, so the replay prints it all with no Node and no client.
#[test]
fn a_dialog_is_heard_by_every_extension_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let case = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/ui_prompt");
    let script = json!([
        {"tool_calls": [{"name": "bash", "arguments": "{\"command\":\"echo asked\"}"}]},
        {"text": ["Ran it."]},
    ]);
    let mock = MockLlm::start(&script);
    let env = Env::new(&mock);
    let cassette = env.path("ui_prompt.jsonl");
    let mut command = env.rpc_command();
    for extension in ["extension.ts", "listener.ts"] {
        command.args(["-e", case.join(extension).to_str().unwrap()]);
    }
    command.args(["--no-session", "--record", cassette.to_str().unwrap()]);
    with_host(&mut command, &path);
    let (recorded, lines) = drive_rpc_with_ui(&mut command, "run it");
    let said: Vec<&str> = lines
        .iter()
        .filter(|line| line["type"] == "extension_ui_request")
        .filter_map(|line| line["message"].as_str())
        .collect();
    assert_eq!(
        said,
        [
            "echo asked",
            "heard ui_prompt_start confirm Run bash?",
            "gate heard ui_prompt_end confirm",
            "heard ui_prompt_end confirm Run bash?",
        ],
        "{recorded}"
    );
    let heard = lines
        .iter()
        .find(|line| line["type"] == "entry_appended")
        .map(|line| line["entry"]["data"].clone());
    let prompt = |kind: &str| json!({"type": kind, "reason": "ui_prompt", "kind": "confirm", "title": "Run bash?"});
    assert_eq!(
        heard,
        Some(
            json!({"started": prompt("ui_prompt_start"), "ended": prompt("ui_prompt_end"), "hasUI": true})
        ),
        "{recorded}"
    );

    assert_replays_without_node(&env, &cassette, &recorded);
}

/// A handler told of another extension's dialog that throws is reported as its own extension's
/// error at `ui_prompt_start`/`ui_prompt_end`, as Pi 1.5.2 reports it (compared with 1.5.2
/// running the same extensions), and the dialog's handler answers as if nothing threw: the
/// confirmed call runs. The recording replays with no Node.
#[test]
fn a_throw_told_of_a_dialog_is_its_own_extensions_and_leaves_the_dialog_alone() {
    let Some(path) = node_path() else { return };
    let gate = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/ui_prompt/extension.ts");
    let throws = fixture("prompt_throws.ts");
    let script = json!([
        {"tool_calls": [{"name": "bash", "arguments": "{\"command\":\"echo ran\"}"}]},
        {"text": ["Done."]},
    ]);
    let errors = |lines: &[Value]| -> Vec<Value> {
        lines
            .iter()
            .filter(|line| line["type"] == "extension_error")
            .map(|line| {
                let file = line["extensionPath"].as_str().unwrap_or_default();
                let file = file.rsplit('/').next().unwrap_or_default();
                json!([file, line["event"], line["error"]])
            })
            .collect()
    };
    let result = |lines: &[Value]| -> Value {
        lines
            .iter()
            .find(|line| line["type"] == "tool_execution_end")
            .map(|line| json!([line["isError"], line["result"]["content"][0]["text"]]))
            .unwrap_or_default()
    };

    let mock = MockLlm::start(&script);
    let env = Env::new(&mock);
    let cassette = env.path("throws.jsonl");
    let mut command = env.rpc_command();
    command.args(["-e", gate.to_str().unwrap(), "-e", throws.to_str().unwrap()]);
    command.args(["--no-session", "--record", cassette.to_str().unwrap()]);
    with_host(&mut command, &path);
    let (recorded, ours) = drive_rpc_with_ui(&mut command, "run it");
    assert_eq!(result(&ours), json!([false, "ran\n"]), "{recorded}");
    assert_eq!(
        errors(&ours),
        [
            json!(["prompt_throws.ts", "ui_prompt_start", "no confirm wanted"]),
            json!(["prompt_throws.ts", "ui_prompt_end", "still none wanted"]),
        ],
        "{recorded}"
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
    ]);
    command.args([
        "--no-session",
        "-e",
        gate.to_str().unwrap(),
        "-e",
        throws.to_str().unwrap(),
    ]);
    let (_, theirs) = drive_rpc_with_ui(&mut command, "run it");
    assert_eq!(
        (errors(&ours), result(&ours)),
        (errors(&theirs), result(&theirs))
    );

    assert_replays_without_node(&env, &cassette, &recorded);
}
