//! A command's `ctx.navigateTree` (Pi 1.5.2's RPC command context): the handler's run stops at
//! the call, the session navigates with its tree hooks while the command still runs, and the
//! handler goes on with Pi's `{cancelled}` and the session as it is after the navigation; a
//! navigation the session refuses throws in the handler. The recording replays to the same
//! bytes with no Node.

use serde_json::{json, Value};

use crate::common::{Env, MockLlm};
use crate::support::{
    assert_replays_without_node, fixture, json_lines, node_path, send, spawn_rpc, with_host,
};

#[test]
fn a_commands_navigation_is_carried_out_by_the_session_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("navigate.jsonl");
    let next = vec![
        json!({"id": "b1", "type": "prompt", "message": "/back"}),
        json!({"id": "b2", "type": "prompt", "message": "/back twice"}),
    ];
    let (recorded, seen) = recorded_run(
        &env,
        &path,
        &fixture("navigate.ts"),
        &cassette,
        next,
        |e, _| e["type"] == "agent_settled" || (e["type"] == "response" && e["id"] != "p1"),
    );

    let at = |wanted: &dyn Fn(&Value) -> bool| {
        seen.iter()
            .position(wanted)
            .unwrap_or_else(|| panic!("{recorded}"))
    };
    let thrown = at(&|e| e["type"] == "extension_error");
    assert_eq!(
        (&seen[thrown]["extensionPath"], &seen[thrown]["error"]),
        (&json!("command:back"), &json!("Entry nowhere not found"))
    );
    assert!(
        thrown < at(&|e| e["id"] == "b2"),
        "reported before the answer"
    );

    let file = std::fs::read_to_string(&env.session_files()[0]).unwrap();
    let entries = json_lines(&file);
    let kinds: Vec<String> = entries[1..]
        .iter()
        .map(|e| match e["type"].as_str().unwrap() {
            "custom" => e["customType"].as_str().unwrap().to_owned(),
            other => other.to_owned(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "model_change",
            "thinking_level_change",
            "message",
            "message",
            "message",
            "asked",
            "branch_summary",
            "navigated",
            "asked",
            "branch_summary",
            "navigated",
        ]
    );
    let navigated: Vec<&Value> = entries
        .iter()
        .filter(|e| e["customType"] == "navigated")
        .map(|e| &e["data"])
        .collect();
    // The handler reads the session after the navigation: its leaf is the summary.
    assert_eq!(
        navigated[0],
        &json!({"cancelled": false, "leaf": "branch_summary", "moved": true})
    );
    let summary = entries
        .iter()
        .find(|e| e["type"] == "branch_summary")
        .unwrap();
    // The entry asked before the navigation was written first: the one branch entry left.
    assert_eq!(summary["summary"], "Left 1 entries.");
    assert_eq!(summary["fromHook"], true);

    assert_replays_without_node(&env, &cassette, &recorded);
}

/// A command's `ctx.newSession` (Pi 1.5.2's handoff): `session_before_switch` cancels the
/// first, whose handler goes on with `{cancelled: true}`; the second replaces the session, the
/// handler's `withSession` prompts the new one (a child of the old file) and the prompt is
/// answered once that run has settled and the stale old context has thrown. The recording holds
/// both sessions and replays to those bytes with no Node.
#[test]
fn a_commands_new_session_replaces_the_session_and_its_recording_replays_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}, {"text": ["Continuing."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("handoff.jsonl");
    let next = vec![
        json!({"id": "h1", "type": "prompt", "message": "/handoff first"}),
        json!({"id": "h2", "type": "prompt", "message": "/handoff the plan"}),
    ];
    let (recorded, seen) = recorded_run(
        &env,
        &path,
        &fixture("handoff.ts"),
        &cassette,
        next,
        |e, seen| {
            (e["type"] == "agent_settled" && seen.iter().all(|e| e["id"] != "h1"))
                || (e["type"] == "response" && (e["id"] == "h1" || e["id"] == "h2"))
        },
    );

    let at = |wanted: &dyn Fn(&Value) -> bool| {
        seen.iter()
            .position(wanted)
            .unwrap_or_else(|| panic!("{recorded}"))
    };
    let kept = at(&|e| e["message"] == "parent kept true");
    let continued = at(&|e| {
        e["type"] == "message_end" && e["message"]["content"][0]["text"] == "Continue: the plan"
    });
    let settled = seen
        .iter()
        .rposition(|e| e["type"] == "agent_settled")
        .unwrap();
    let stale = at(&|e| e["type"] == "extension_error");
    let answered = at(&|e| e["id"] == "h2");
    assert!(
        kept < continued && continued < settled && settled < stale && stale < answered,
        "{recorded}"
    );
    assert_eq!(seen[stale]["extensionPath"], "command:handoff");
    assert!(
        seen[stale]["error"]
            .as_str()
            .unwrap()
            .starts_with("This extension ctx is stale after session replacement"),
        "{recorded}"
    );

    let files = env.session_files();
    assert_eq!(files.len(), 2, "{files:?}");
    let header = |file: &std::path::Path| -> Value {
        let text = std::fs::read_to_string(file).unwrap();
        serde_json::from_str(text.lines().next().unwrap()).unwrap()
    };
    let (old, new) = match header(&files[0]).get("parentSession") {
        None => (&files[0], &files[1]),
        Some(_) => (&files[1], &files[0]),
    };
    assert_eq!(
        header(new)["parentSession"],
        json!(old.display().to_string())
    );
    let old_text = std::fs::read_to_string(old).unwrap();
    assert!(old_text.contains(r#""customType":"handoff","data":{"args":"first","cancelled":true}"#));
    assert!(std::fs::read_to_string(new)
        .unwrap()
        .contains("Continue: the plan"));

    // The recording holds every session of the run: the replay prints all the run printed.
    crate::support::assert_replays_without_node(&env, &cassette, &recorded);
    assert!(recorded.contains(r#""asked":2"#), "{recorded}");
}

/// A command's `ctx.reload()` in print mode (conformance case `command_reload`, its print run): the
/// reload's entries are printed where Pi prints them, the stale context is the command's error
/// on stderr, the next prompt declares what the reload left active, and the recording replays
/// with no Node.
#[test]
fn a_commands_reload_in_print_mode_is_printed_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Done."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("reload-print.jsonl");
    let extension = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/command_reload/extension.ts");
    let mut command = env.command(&["--provider", "mock", "--model", "mock-model"]);
    command.args(["--mode", "json", "--record", cassette.to_str().unwrap()]);
    command.args(["-e", extension.to_str().unwrap()]);
    command.args(["-p", "/narrow", "/reload-it", "Once more"]);
    with_host(&mut command, &path);
    let (code, recorded, stderr) = crate::support::run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.starts_with("Extension error (command:reload-it): This extension ctx is stale"),
        "{stderr}"
    );
    let types: Vec<String> = recorded
        .lines()
        .take(3)
        .map(|l| {
            let line: Value = serde_json::from_str(l).unwrap();
            format!("{} {}", line["type"], line["entry"]["data"]["reason"])
        })
        .collect();
    assert_eq!(
        types,
        [
            r#""session" null"#,
            r#""entry_appended" "reload""#,
            r#""entry_appended" "reload""#
        ]
    );
    assert_eq!(mock.declared_tools(), [["read", "probe"]]);
    assert_replays_without_node(&env, &cassette, &recorded);
}

/// A command's new session whose extension notifies in `session_start` (conformance case
/// `command_new_session`): the notices each session's start sent are printed where the
/// recorded run printed them, by its replay too, with no Node.
#[test]
fn a_new_sessions_start_notices_replay_where_they_were_printed() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}, {"text": ["Continuing."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("handoff.jsonl");
    let extension = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/command_new_session/extension.ts");
    let next = vec![
        json!({"id": "h1", "type": "prompt", "message": "/handoff first"}),
        json!({"id": "h2", "type": "prompt", "message": "/handoff the plan"}),
    ];
    let (recorded, _) = recorded_run(&env, &path, &extension, &cassette, next, |e, seen| {
        (e["type"] == "agent_settled" && seen.iter().all(|e| e["id"] != "h1"))
            || (e["type"] == "response" && (e["id"] == "h1" || e["id"] == "h2"))
    });
    assert!(recorded.contains(r#""message":"start new""#), "{recorded}");
    assert_replays_without_node(&env, &cassette, &recorded);
}

/// Runs `replace.ts` in RPC mode, recorded: two prompts answered, then `commands` (each sent
/// once the one before was answered); what it printed, line by line, and the cassette.
fn replacing(env: &Env, node: &str, commands: Vec<Value>) -> (String, Vec<Value>) {
    let cassette = env.path("replace.jsonl");
    let next = [json!({"id": "p2", "type": "prompt", "message": "Again"})]
        .into_iter()
        .chain(commands)
        .collect();
    let (recorded, seen) = recorded_run(
        env,
        node,
        &fixture("replace.ts"),
        &cassette,
        next,
        |e, seen| {
            let settled = seen.iter().filter(|e| e["type"] == "agent_settled").count();
            (e["type"] == "agent_settled" && settled < 2)
                || (e["type"] == "response" && !e["id"].as_str().unwrap_or("p").starts_with('p'))
        },
    );
    // The recording holds every session of the run: the replay prints all the run printed.
    crate::support::assert_replays_without_node(env, &cassette, &recorded);
    assert!(recorded.contains(r#""customType":"before_"#), "{recorded}");
    (recorded, seen)
}

/// A command's `ctx.fork` (Pi 1.5.2's RPC command context): `session_before_fork` asked with
/// position `before`, the session forked into a child file before the last prompt, and
/// `withSession` reading the forked session before the prompt is answered.
#[test]
fn a_commands_fork_forks_the_session_and_its_recording_replays_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}, {"text": ["Hello again."]}]));
    let env = Env::new(&mock);
    let branch = json!({"id": "b1", "type": "prompt", "message": "/branch"});
    let (recorded, seen) = replacing(&env, &path, vec![branch]);
    let forked = seen
        .iter()
        .position(|e| e["message"] == "forked: last message")
        .unwrap_or_else(|| panic!("{recorded}"));
    let answered = seen.iter().position(|e| e["id"] == "b1").unwrap();
    assert!(forked < answered, "{recorded}");
    assert_eq!(seen[answered]["data"]["disposition"], "handled");
    assert!(
        recorded.contains(r#""data":{"position":"before"}"#),
        "{recorded}"
    );
    let files = env.session_files();
    assert_eq!(files.len(), 2, "{files:?}");
    let texts: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    let child = texts
        .iter()
        .find(|t| t.lines().next().unwrap().contains("parentSession"))
        .unwrap_or_else(|| panic!("{texts:?}"));
    assert!(child.contains(r#""text":"Hi""#) && !child.contains(r#""text":"Again""#));
}

/// A command's `ctx.switchSession`: `session_before_switch` asked with reason `resume`, the
/// file opened, and `withSession` reading it before the prompt is answered.
#[test]
fn a_commands_switch_session_opens_the_file_and_its_recording_replays_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}, {"text": ["Hello again."]}]));
    let env = Env::new(&mock);
    // A session file of two exchanges to switch to, written by a run of its own.
    let other = env.path("other.jsonl");
    std::fs::write(
        &other,
        r#"{"type":"session","version":3,"id":"01a2224f-0000-7000-8000-000000000001","timestamp":"2026-01-01T00:00:00.000Z","cwd":"CWD"}
{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"Old"}],"timestamp":1}}
"#
        .replace("CWD", &env.cwd().display().to_string()),
    )
    .unwrap();
    let resume =
        json!({"id": "r1", "type": "prompt", "message": format!("/resume {}", other.display())});
    let (recorded, seen) = replacing(&env, &path, vec![resume]);
    let resumed = seen
        .iter()
        .position(|e| e["message"] == "resumed: 1 messages")
        .unwrap_or_else(|| panic!("{recorded}"));
    let answered = seen.iter().position(|e| e["id"] == "r1").unwrap();
    assert!(resumed < answered, "{recorded}");
    assert!(
        recorded.contains(r#""data":{"reason":"resume"}"#),
        "{recorded}"
    );
}

/// A command's `ctx.newSession({setup})` (Pi's documented handoff): what `setup` writes through
/// the new session's manager is in the session before `withSession` runs, the model's requests
/// after it hold it, `withSession`'s `sendMessage` returns once the run it started settled, and
/// the recording replays to the same bytes with no Node (conformance
/// case `command_new_session_setup` compares it with Pi's).
#[test]
fn a_commands_new_session_setup_writes_the_new_session_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"text": ["Hello."]}, {"text": ["Kicked off."]}, {"text": ["Continuing."]}
    ]));
    let env = Env::new(&mock);
    let cassette = env.path("setup.jsonl");
    let extension = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/command_new_session_setup/extension.ts");
    let next = vec![json!({"id": "h1", "type": "prompt", "message": "/handoff the plan"})];
    // The handoff once the first run settled; stdin closed once its two runs have.
    let (recorded, _) = recorded_run(&env, &path, &extension, &cassette, next, |e, seen| {
        let settled = seen.iter().filter(|e| e["type"] == "agent_settled").count();
        e["type"] == "agent_settled" && (settled == 0 || settled == 2)
    });
    assert!(
        recorded.contains(
            "set up: model_change,thinking_level_change,message,custom,custom_message,session_info"
        ),
        "{recorded}"
    );
    let requests = mock.requests();
    let last = requests.last().unwrap().to_string();
    assert!(last.contains("Context from the previous session"), "{last}");
    assert!(last.contains("Goal: the plan"), "{last}");
    // `sendMessage` returned once the run it started had settled.
    assert!(
        recorded.contains("after sendMessage: 9 entries"),
        "{recorded}"
    );
    assert_replays_without_node(&env, &cassette, &recorded);
}

/// A command's `ctx.reload()` (conformance case `command_reload` compares it with Pi's): the
/// extension hears its shutdown and its start with reason `reload`, its factory runs again (its
/// module's state kept), the tool it registered is active again after a command turned it off,
/// the session and its one file go on, and the handler's context is stale afterwards. The
/// recording replays to the same bytes with no Node.
#[test]
fn a_commands_reload_loads_the_extensions_again_in_the_session_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}, {"text": ["Again."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("reload.jsonl");
    let extension = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/command_reload/extension.ts");
    let next = vec![
        json!({"id": "n1", "type": "prompt", "message": "/narrow"}),
        json!({"id": "r1", "type": "prompt", "message": "/reload-it"}),
        json!({"id": "p2", "type": "prompt", "message": "Once more"}),
    ];
    let (recorded, seen) = recorded_run(&env, &path, &extension, &cassette, next, |e, seen| {
        let settled = seen.iter().filter(|e| e["type"] == "agent_settled").count();
        (e["type"] == "agent_settled" && settled < 2)
            || (e["type"] == "response" && (e["id"] == "n1" || e["id"] == "r1"))
    });
    let notices: Vec<&str> = seen
        .iter()
        .filter(|e| e["method"] == "notify")
        .filter_map(|e| e["message"].as_str())
        .collect();
    assert_eq!(
        notices,
        [
            "start startup (module loads 1, factories 1)",
            "discover startup",
            "before reload: read",
            "start reload (module loads 1, factories 2)",
            "discover reload",
        ]
    );
    let stale = seen
        .iter()
        .find(|e| e["type"] == "extension_error")
        .unwrap_or_else(|| panic!("{recorded}"));
    assert!(
        stale["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("This extension ctx is stale")),
        "{stale}"
    );
    let declared = mock.declared_tools();
    assert_eq!(declared[0], ["read", "bash", "edit", "write", "probe"]);
    assert_eq!(declared[1], ["read", "probe"]);
    let files = env.session_files();
    assert_eq!(files.len(), 1, "the session goes on in its file");
    let file = std::fs::read_to_string(&files[0]).unwrap();
    let reasons: Vec<String> = file
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "custom")
        .map(|e| format!("{} {}", e["customType"], e["data"]["reason"]))
        .collect();
    assert_eq!(
        reasons,
        [
            r#""start" "startup""#,
            r#""shutdown" "reload""#,
            r#""start" "reload""#,
            r#""shutdown" "quit""#
        ]
    );
    assert_replays_without_node(&env, &cassette, &recorded);
}

/// Runs `extension` in RPC mode recorded into `cassette`: prompts `Hi`, then sends each of
/// `next` once `answered` says the line just read (after the lines before it) answers what was
/// sent, closing stdin after the last; what the run printed, and its lines.
fn recorded_run(
    env: &Env,
    node: &str,
    extension: &std::path::Path,
    cassette: &std::path::Path,
    next: Vec<Value>,
    answered: impl Fn(&Value, &[Value]) -> bool,
) -> (String, Vec<Value>) {
    let mut command = env.rpc_command();
    command.args(["-e", extension.to_str().unwrap()]);
    command.args(["--record", cassette.to_str().unwrap()]);
    with_host(&mut command, node);
    let (mut child, mut stdin, lines) = spawn_rpc(&mut command);
    send(
        &mut stdin,
        json!({"id": "p1", "type": "prompt", "message": "Hi"}),
    );
    let mut next = next.into_iter();
    let (mut recorded, mut seen) = (String::new(), Vec::<Value>::new());
    for line in lines {
        let line = line.unwrap();
        recorded.push_str(&line);
        recorded.push('\n');
        let event: Value = serde_json::from_str(&line).unwrap();
        if answered(&event, &seen) {
            match next.next() {
                Some(command) => send(&mut stdin, command),
                None => drop(stdin.take()),
            }
        }
        seen.push(event);
    }
    assert!(child.wait().unwrap().success(), "{recorded}");
    (recorded, seen)
}

/// `ctx.shutdown()` from a command (conformance case `shutdown_request`): the RPC process ends
/// once the command is answered, its stdin still open, the extensions told `session_shutdown`
/// (reason `quit`) first; the recording replays to the same bytes with no Node.
#[test]
fn a_commands_shutdown_ends_the_rpc_process_with_stdin_open_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("bye.jsonl");
    let extension = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/shutdown_request/extension.ts");
    let mut command = env.rpc_command();
    command.args(["-e", extension.to_str().unwrap()]);
    command.args(["--record", cassette.to_str().unwrap()]);
    with_host(&mut command, &path);
    let (mut child, mut stdin, lines) = spawn_rpc(&mut command);
    // A guard against a process that never ends: stdin is closed only after a minute.
    let open = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    send(
        &mut stdin,
        json!({"id": "p1", "type": "prompt", "message": "Hi"}),
    );
    let mut recorded = String::new();
    let mut guard = None;
    for line in lines {
        let line = line.unwrap();
        recorded.push_str(&line);
        recorded.push('\n');
        let event: Value = serde_json::from_str(&line).unwrap();
        if event["type"] == "agent_settled" {
            send(
                &mut stdin,
                json!({"id": "b1", "type": "prompt", "message": "/bye"}),
            );
            let (open, mut stdin) = (open.clone(), stdin.take());
            guard = Some(std::thread::spawn(move || {
                for _ in 0..600 {
                    if !open.load(std::sync::atomic::Ordering::SeqCst) {
                        return false;
                    }
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                stdin.take();
                true
            }));
        }
    }
    let status = child.wait().unwrap();
    open.store(false, std::sync::atomic::Ordering::SeqCst);
    let closed_by_guard = guard.map(|g| g.join().unwrap()).unwrap_or(false);
    assert!(
        !closed_by_guard,
        "the process waited for stdin's end: {recorded}"
    );
    assert!(status.success(), "{recorded}");
    let said: Vec<&str> = recorded
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "extension_ui_request" || e["type"] == "response")
        .map(|e| match e["message"].as_str() {
            Some(_) => "notify",
            None => "response",
        })
        .collect();
    assert_eq!(
        said,
        ["response", "notify", "response", "notify"],
        "{recorded}"
    );
    assert!(
        recorded.ends_with("\"message\":\"bye quit\",\"notifyType\":\"info\"}\n"),
        "{recorded}"
    );
    assert_replays_without_node(&env, &cassette, &recorded);
}

/// What `session_shutdown`'s handlers say at stdin's end (a notice) is printed last, by the
/// replay too: a replay without Node prints the recorded notice where the run printed it.
#[test]
fn a_notice_at_stdins_end_replays_where_it_was_printed() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("eof.jsonl");
    let extension = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/shutdown_request/extension.ts");
    let (recorded, _) = recorded_run(&env, &path, &extension, &cassette, vec![], |e, _| {
        e["type"] == "agent_settled"
    });
    assert!(
        recorded.ends_with("\"message\":\"bye quit\",\"notifyType\":\"info\"}\n"),
        "{recorded}"
    );
    assert_replays_without_node(&env, &cassette, &recorded);
}
