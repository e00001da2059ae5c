//! A command's `ctx.newSession`, `ctx.fork` and `ctx.switchSession` in print mode (the print
//! runs of the conformance cases `command_new_session`, `command_fork`,
//! `command_switch_session`): the session is replaced as Pi 1.5.2's print mode replaces it, the
//! later prompts go to the new session, and the recording (every session of the run in one
//! cassette) replays byte for byte with no Node. A hybrid run refuses the replacement.

use std::process::Command;

use serde_json::{json, Value};

use crate::common::{Env, MockLlm};
use crate::support::{
    assert_replays_without_node, node_path, replay_without_node, run, send, spawn_rpc, with_host,
};

/// The extension of the conformance case `case`.
fn case_extension(case: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions")
        .join(case)
        .join("extension.ts");
    path.to_str().unwrap().to_owned()
}

/// Runs print mode with `case`'s extension, recording into `cassette`, in `mode` (`json` or
/// `text`): its exit code, stdout and stderr.
fn record_print(
    env: &Env,
    node: &str,
    case: &str,
    mode: &str,
    cassette: &std::path::Path,
    prompts: &[&str],
) -> (i32, String, String) {
    let mut command = env.command(&["--provider", "mock", "--model", "mock-model"]);
    if mode == "json" {
        command.args(["--mode", "json"]);
    }
    command.args(["--record", cassette.to_str().unwrap()]);
    command.args(["-e", &case_extension(case)]);
    command.arg("-p").args(prompts);
    with_host(&mut command, node);
    run(&mut command)
}

/// The lines of a JSONL text.
fn lines(text: &str) -> Vec<Value> {
    text.lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The texts of the user messages a session file holds.
fn user_texts(file: &std::path::Path) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    lines(&text)
        .iter()
        .filter(|e| e["type"] == "message" && e["message"]["role"] == "user")
        .map(|e| {
            e["message"]["content"][0]["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

const STALE: &str = "Extension error (command:handoff): This extension ctx is stale";

#[test]
fn a_commands_new_session_in_print_mode_goes_on_in_the_new_session_and_replays_without_node() {
    let Some(node) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"text": ["Hello."]}, {"text": ["Continuing."]}, {"text": ["After."]}
    ]));
    let env = Env::new(&mock);
    let cassette = env.path("handoff-print.jsonl");
    let prompts = ["Hi", "/handoff first", "/handoff the plan", "After"];
    let (code, recorded, stderr) = record_print(
        &env,
        &node,
        "command_new_session",
        "json",
        &cassette,
        &prompts,
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.starts_with(STALE), "{stderr}");
    let printed = lines(&recorded);
    let headers = printed.iter().filter(|l| l["type"] == "session").count();
    assert_eq!(headers, 1, "no second header: {recorded}");
    // The old session's before_switch entries are printed, the new one's start is not; the
    // handoff's run and the next prompt's are printed whole.
    let appended: Vec<&Value> = printed
        .iter()
        .filter(|l| l["type"] == "entry_appended")
        .map(|l| &l["entry"]["customType"])
        .collect();
    assert_eq!(appended, ["before_switch", "handoff", "before_switch"]);
    let settled = printed
        .iter()
        .filter(|l| l["type"] == "agent_settled")
        .count();
    assert_eq!(settled, 3, "{recorded}");

    let files = env.session_files();
    assert_eq!(files.len(), 2, "{files:?}");
    let (old, new) = (&files[0], &files[1]);
    let header = &lines(&std::fs::read_to_string(new).unwrap())[0];
    assert_eq!(header["parentSession"], json!(old.to_str().unwrap()));
    assert_eq!(user_texts(old), ["Hi"]);
    assert_eq!(user_texts(new), ["Continue: the plan", "After"]);
    assert_replays_without_node(&env, &cassette, &recorded);

    // The prompt sent to the new session said otherwise, or the old session's file as the
    // replacement left it was otherwise: each a divergence of the check, never a success.
    let text = std::fs::read_to_string(&cassette).unwrap();
    let prompt = r#""input":{"kind":"prompt","text":"After"}"#;
    let changed_prompt = text.replacen(prompt, &prompt.replace("After", "Later"), 1);
    let left_at = text.find(r#""left":{"session":""#).unwrap() + r#""left":{"session":""#.len();
    let mut changed_left = text.clone();
    changed_left.replace_range(left_at..left_at + 8, "00000000");
    for (what, changed) in [("prompt", changed_prompt), ("left file", changed_left)] {
        assert_ne!(changed, text, "{what}");
        let tampered = env.path("tampered.jsonl");
        std::fs::write(&tampered, changed).unwrap();
        let (code, _, stderr) = run(Command::new(env!("CARGO_BIN_EXE_pi"))
            .args(["replay", "--check"])
            .arg(&tampered)
            .env("HOME", env.path("home"))
            .stdin(std::process::Stdio::null()));
        assert_eq!(code, 1, "{what}: {stderr}");
    }
}

/// Text mode prints the new session's last answer.
#[test]
fn a_commands_new_session_in_text_mode_prints_the_new_sessions_answer_and_replays() {
    let Some(node) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"text": ["Hello."]}, {"text": ["Continuing."]}
    ]));
    let env = Env::new(&mock);
    let cassette = env.path("handoff-text.jsonl");
    let prompts = ["Hi", "/handoff first", "/handoff the plan"];
    let (code, recorded, stderr) = record_print(
        &env,
        &node,
        "command_new_session",
        "text",
        &cassette,
        &prompts,
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(recorded, "Continuing.\n");
    assert!(stderr.starts_with(STALE), "{stderr}");
    assert_eq!(env.session_files().len(), 2);
    assert_replays_without_node(&env, &cassette, &recorded);
}

#[test]
fn a_commands_fork_in_print_mode_goes_on_in_the_fork_and_replays_without_node() {
    let Some(node) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"text": ["Hello."]}, {"text": ["Hello again."]}, {"text": ["Later."]}
    ]));
    let env = Env::new(&mock);
    let cassette = env.path("fork-print.jsonl");
    let prompts = ["Hi", "Again", "/branch", "Later"];
    let (code, recorded, stderr) =
        record_print(&env, &node, "command_fork", "json", &cassette, &prompts);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stderr, "");
    let files = env.session_files();
    assert_eq!(files.len(), 2, "{files:?}");
    assert_eq!(user_texts(&files[0]), ["Hi", "Again"]);
    assert_eq!(user_texts(&files[1]), ["Hi", "Later"]);
    assert_replays_without_node(&env, &cassette, &recorded);
}

#[test]
fn a_commands_switch_session_in_print_mode_goes_on_in_the_file_and_replays_without_node() {
    let Some(node) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}, {"text": ["Later."]}]));
    let env = Env::new(&mock);
    // The session switched to: one run before.
    let first = env.path("first.jsonl");
    let (code, _, stderr) = record_print(
        &env,
        &node,
        "command_switch_session",
        "json",
        &first,
        &["Hi"],
    );
    assert_eq!(code, 0, "{stderr}");
    let target = env.session_files().remove(0);
    let cassette = env.path("switch-print.jsonl");
    let resume = format!("/resume {}", target.display());
    let (code, recorded, stderr) = record_print(
        &env,
        &node,
        "command_switch_session",
        "json",
        &cassette,
        &[&resume, "Later"],
    );
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(stderr, "");
    // The run's own session never had a message: only the file switched to holds one.
    assert_eq!(env.session_files(), std::slice::from_ref(&target));
    assert_eq!(user_texts(&target), ["Hi", "Later"]);
    assert_replays_without_node(&env, &cassette, &recorded);
}

/// A replay in place (`--replay` in print mode) ends where the recorded run went on in another
/// session: the later sessions would be written over the user's.
#[test]
fn a_print_replay_in_place_ends_at_the_replacement() {
    let Some(node) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}, {"text": ["Continuing."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("handoff-print.jsonl");
    let prompts = ["Hi", "/handoff first", "/handoff the plan"];
    let (code, recorded, stderr) = record_print(
        &env,
        &node,
        "command_new_session",
        "json",
        &cassette,
        &prompts,
    );
    assert_eq!(code, 0, "{stderr}");
    let mut command = env.command(&["--provider", "mock", "--model", "mock-model"]);
    command.args(["--mode", "json", "--replay", cassette.to_str().unwrap()]);
    command.arg("--session-dir").arg(env.path("replayed"));
    command.args(["-e", &case_extension("command_new_session")]);
    command.arg("-p").args(prompts);
    with_host(&mut command, &node);
    let (code, replayed, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("a replay in place ends here"), "{stderr}");
    // What the first session printed, up to the replacement (its last line the second
    // `session_before_switch`'s entry).
    let cut = recorded
        .lines()
        .position(|l| l.contains(r#""asked":2"#))
        .unwrap();
    let before: Vec<&str> = recorded.lines().take(cut + 1).collect();
    assert!(
        replayed.lines().eq(before.iter().copied()),
        "the replay in place printed other lines"
    );
    // The whole recording still replays with no Node.
    let (code, _, stderr) = replay_without_node(&env, &cassette);
    assert_eq!(code, 0, "{stderr}");
}

/// A hybrid run builds no session but the one it replays and goes on with: a command's
/// replacement is refused with a clear error, thrown in the handler.
#[test]
fn a_hybrid_print_run_refuses_a_commands_replacement() {
    let Some(node) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("hi.jsonl");
    let (code, _, stderr) = record_print(
        &env,
        &node,
        "command_new_session",
        "json",
        &cassette,
        &["Hi"],
    );
    assert_eq!(code, 0, "{stderr}");
    let mut command = env.command(&["--provider", "mock", "--model", "mock-model"]);
    command.args(["--mode", "json", "--replay", cassette.to_str().unwrap()]);
    command.args(["--cassette-mode", "hybrid", "--record"]);
    command.arg(env.path("hybrid.jsonl"));
    let sessions = env.path("hybrid-sessions");
    command.arg("--session-dir").arg(&sessions);
    command.args(["-e", &case_extension("command_new_session")]);
    command.args(["-p", "Hi", "/handoff first", "/handoff the plan"]);
    with_host(&mut command, &node);
    let (code, _, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(
            "Extension error (command:handoff): Replacing the session is not supported while \
             replaying a cassette"
        ),
        "{stderr}"
    );
    assert_eq!(std::fs::read_dir(&sessions).unwrap().count(), 1);
}

/// RPC mode's hybrid run refuses a command's replacement the same way (it used to end the run
/// there, silently): the handler's call throws, reported as the command's error, and the
/// session goes on.
#[test]
fn a_hybrid_rpc_run_refuses_a_commands_replacement() {
    let Some(node) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}, {"text": ["Again."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("hi.jsonl");
    let (code, _, stderr) = record_print(
        &env,
        &node,
        "command_new_session",
        "json",
        &cassette,
        &["Hi"],
    );
    assert_eq!(code, 0, "{stderr}");
    let mut command = env.rpc_command();
    command.args(["--replay", cassette.to_str().unwrap()]);
    command.args(["--cassette-mode", "hybrid", "--record"]);
    command.arg(env.path("hybrid.jsonl"));
    let sessions = env.path("hybrid-sessions");
    command.arg("--session-dir").arg(&sessions);
    command.args(["-e", &case_extension("command_new_session")]);
    with_host(&mut command, &node);
    let (mut child, mut stdin, lines) = spawn_rpc(&mut command);
    let mut next = vec![
        json!({"id": "h1", "type": "prompt", "message": "/handoff first"}),
        json!({"id": "h2", "type": "prompt", "message": "/handoff the plan"}),
        json!({"id": "p2", "type": "prompt", "message": "Still here"}),
    ]
    .into_iter();
    send(
        &mut stdin,
        json!({"id": "p1", "type": "prompt", "message": "Hi"}),
    );
    let mut seen = Vec::new();
    let mut settled = 0;
    for line in lines {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        let answered = event["type"] == "response" && event["id"] != "p1" && event["id"] != "p2";
        if event["type"] == "agent_settled" {
            settled += 1;
        }
        if (event["type"] == "agent_settled" && settled == 1) || answered {
            if let Some(command) = next.next() {
                send(&mut stdin, command);
            }
        }
        if event["type"] == "agent_settled" && settled == 2 {
            drop(stdin.take());
        }
        seen.push(event);
    }
    assert!(child.wait().unwrap().success(), "{seen:?}");
    let errors: Vec<&Value> = seen
        .iter()
        .filter(|e| e["type"] == "extension_error")
        .map(|e| &e["error"])
        .collect();
    assert_eq!(
        errors,
        [&json!(
            "Replacing the session is not supported while replaying a cassette"
        )],
        "{seen:?}"
    );
    // The session went on: the next prompt ran in it, and no other session was opened.
    assert_eq!(settled, 2, "{seen:?}");
    assert_eq!(std::fs::read_dir(&sessions).unwrap().count(), 1);
}
