//! A command's `ctx.navigateTree` (Pi 1.5.2's RPC command context): the handler's run stops at
//! the call, the session navigates with its tree hooks while the command still runs, and the
//! handler goes on with Pi's `{cancelled}` and the session as it is after the navigation; a
//! navigation the session refuses throws in the handler. The recording replays to the same
//! bytes with no Node.

use serde_json::{json, Value};

use crate::common::{Env, MockLlm};
use crate::support::{assert_replays_without_node, fixture, node_path, send, spawn_rpc, with_host};

#[test]
fn a_commands_navigation_is_carried_out_by_the_session_and_replays_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("navigate.jsonl");
    let mut command = env.rpc_command();
    command.args(["-e", fixture("navigate.ts").to_str().unwrap()]);
    command.args(["--record", cassette.to_str().unwrap()]);
    with_host(&mut command, &path);
    let (mut child, mut stdin, lines) = spawn_rpc(&mut command);
    send(
        &mut stdin,
        json!({"id": "p1", "type": "prompt", "message": "Hi"}),
    );
    let mut next = [
        json!({"id": "b1", "type": "prompt", "message": "/back"}),
        json!({"id": "b2", "type": "prompt", "message": "/back twice"}),
    ]
    .into_iter();
    let (mut recorded, mut seen) = (String::new(), Vec::<Value>::new());
    for line in lines {
        let line = line.unwrap();
        recorded.push_str(&line);
        recorded.push('\n');
        let event: Value = serde_json::from_str(&line).unwrap();
        let answered = event["type"] == "agent_settled"
            || (event["type"] == "response" && event["id"] != "p1");
        if answered {
            match next.next() {
                Some(command) => send(&mut stdin, command),
                None => drop(stdin.take()),
            }
        }
        seen.push(event);
    }
    assert!(child.wait().unwrap().success(), "{recorded}");

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
    let entries: Vec<Value> = file
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
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
