//! RPC `bash` asked of an extension's `user_bash` handlers first, as Pi 1.5.2 asks them: a
//! result of theirs answers with nothing run, their operations run the command through their
//! `exec` (its output cleaned and truncated as Pi's, the full output kept in a file; `abort_bash`
//! fires its signal), a throw fails the command, and no answer runs it locally. The recording replays to the same bytes
//! with no Node.

use serde_json::{json, Value};

use crate::common::{Env, MockLlm};
use crate::support::{assert_replays_without_node, fixture, node_path, send, spawn_rpc, with_host};

#[test]
fn user_bash_answers_runs_through_the_extension_fails_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Seen."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("user_bash.jsonl");
    let mut command = env.rpc_command();
    command.args(["-e", fixture("user_bash.ts").to_str().unwrap()]);
    command.args(["--record", cassette.to_str().unwrap()]);
    with_host(&mut command, &path);
    let (mut child, mut stdin, lines) = spawn_rpc(&mut command);
    let commands = [
        json!({"id": "b1", "type": "bash", "command": "given"}),
        json!({"id": "b2", "type": "bash", "command": "streamed", "excludeFromContext": true}),
        json!({"id": "b3", "type": "bash", "command": "long"}),
        json!({"id": "b4", "type": "bash", "command": "refused"}),
        json!({"id": "w1", "type": "bash", "command": "waits"}),
        json!({"id": "b5", "type": "bash", "command": "echo local"}),
        json!({"id": "p1", "type": "prompt", "message": "What ran?"}),
    ];
    let mut next = commands.iter();
    send(&mut stdin, next.next().unwrap().clone());
    let (mut recorded, mut seen) = (String::new(), Vec::<Value>::new());
    for line in lines {
        let line = line.unwrap();
        recorded.push_str(&line);
        recorded.push('\n');
        let event: Value = serde_json::from_str(&line).unwrap();
        match event["type"].as_str() {
            Some("response") | Some("bash_execution_update") | Some("extension_error") => {
                if event["type"] == "response" && event["command"] != "abort_bash" {
                    if let Some(command) = next.next() {
                        send(&mut stdin, command.clone());
                        if command["command"] == "waits" {
                            // Sent while the handler's exec waits for it (or before it starts:
                            // the exec then finds its signal fired).
                            send(&mut stdin, json!({"id": "a1", "type": "abort_bash"}));
                        }
                    }
                }
                seen.push(event);
            }
            Some("agent_settled") => drop(stdin.take()),
            _ => {}
        }
    }
    assert!(child.wait().unwrap().success(), "{recorded}");

    let response = |id: &str| {
        seen.iter()
            .find(|e| e["type"] == "response" && e["id"] == id)
            .unwrap_or_else(|| panic!("no response {id}: {recorded}"))
            .clone()
    };
    assert_eq!(
        response("b1")["data"],
        json!({"output": "given by the extension\n", "exitCode": 0, "cancelled": false, "truncated": false})
    );
    let updates: Vec<&Value> = seen
        .iter()
        .filter(|e| e["type"] == "bash_execution_update" && e["id"] == "b2")
        .map(|e| &e["delta"])
        .collect();
    assert_eq!(
        updates,
        [&json!("ran streamed in the cwd\n"), &json!("green\n")]
    );
    assert_eq!(
        response("b2")["data"],
        json!({"output": "ran streamed in the cwd\ngreen\n", "exitCode": 3, "cancelled": false, "truncated": false})
    );
    let long = response("b3")["data"].clone();
    assert_eq!(long["truncated"], true, "{long}");
    assert!(long.get("exitCode").is_none(), "null exit code: {long}");
    // Pi 1.5.2's `truncateTail` of this output: the last 2000 lines, the trailing newline
    // counted as a line of its own and dropped.
    let output = long["output"].as_str().unwrap();
    assert!(
        output.starts_with("line 501\n") && output.ends_with("\nline 2500"),
        "{output}"
    );
    let full = std::fs::read_to_string(long["fullOutputPath"].as_str().unwrap()).unwrap();
    assert!(full.starts_with("line 1\n") && full.ends_with("line 2500\n"));
    let refused = response("b4");
    assert_eq!(
        (refused["success"].clone(), refused["error"].clone()),
        (json!(false), json!("not here"))
    );
    let reported = seen
        .iter()
        .position(|e| e["type"] == "extension_error")
        .unwrap();
    assert_eq!(seen[reported]["event"], "user_bash");
    assert_eq!(seen[reported + 1]["id"], "b4", "reported before the answer");
    assert_eq!(response("a1")["success"], true);
    assert_eq!(
        response("w1")["data"],
        json!({"output": "waiting\n", "cancelled": true, "truncated": false}),
        "the exec's signal fired: cancelled, no exit code"
    );
    assert_eq!(response("b5")["data"]["output"], "local\n");

    // The prompt's request carries the results not excluded, in order.
    let request = mock.requests().last().unwrap().to_string();
    let at = |text: &str| {
        request
            .find(text)
            .unwrap_or_else(|| panic!("{text}: {request}"))
    };
    assert!(at("given by the extension") < at("line 2500") && at("line 2500") < at("local"));
    assert!(
        !request.contains("ran streamed"),
        "excluded from context: {request}"
    );

    assert_replays_without_node(&env, &cassette, &recorded);
}

/// A command run through an extension's `exec` streams as Pi 1.5.2 streams it: each cleaned
/// chunk is a `bash_execution_update` line as the `exec` gives it (here the `exec` goes on only
/// once the client saw its first chunk; printed at its end, the client would never see it in
/// time), and `exec` gets the command after the `shellCommandPrefix` setting's lines, as Pi's
/// `executeBash` gives it. The recording replays the same lines with no Node.
#[test]
fn an_extensions_exec_streams_its_chunks_gets_the_prefixed_command_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    env.write_agent(
        "settings.json",
        r#"{"shellCommandPrefix": "shopt -s expand_aliases"}"#,
    );
    let cassette = env.path("paced.jsonl");
    let mut command = env.rpc_command();
    command.args(["-e", fixture("user_bash.ts").to_str().unwrap()]);
    command.args(["--record", cassette.to_str().unwrap()]);
    with_host(&mut command, &path);
    let (mut child, mut stdin, lines) = spawn_rpc(&mut command);
    send(
        &mut stdin,
        json!({"id": "s1", "type": "bash", "command": "paced"}),
    );
    let (mut recorded, mut updates, mut answer) = (String::new(), Vec::new(), Value::Null);
    for line in lines {
        let line = line.unwrap();
        recorded.push_str(&line);
        recorded.push('\n');
        let event: Value = serde_json::from_str(&line).unwrap();
        if event["type"] == "bash_execution_update" {
            assert_eq!(event["id"], "s1", "{recorded}");
            if updates.is_empty() {
                std::fs::write(env.cwd().join("paced.go"), "").unwrap();
            }
            updates.push(event["delta"].clone());
        } else if event["type"] == "response" && event["id"] == "s1" {
            answer = event;
            drop(stdin.take());
        }
    }
    assert!(child.wait().unwrap().success(), "{recorded}");
    let first = "got \"shopt -s expand_aliases\\npaced\"\n";
    assert_eq!(updates, [json!(first), json!("went on\n")], "{recorded}");
    assert_eq!(
        answer["data"],
        json!({"output": format!("{first}went on\n"), "exitCode": 0, "cancelled": false, "truncated": false}),
        "{recorded}"
    );

    assert_replays_without_node(&env, &cassette, &recorded);
}
