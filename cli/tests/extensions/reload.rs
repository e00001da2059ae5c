//! A command's `ctx.reload()` whose new load registers other things than the first
//! (conformance case `command_reload_registrations` compares it with Pi's): the first load's
//! tool and command are gone, the second load's tool is declared (its snippet and guidelines in
//! the prompt), its command runs and its new handlers (`session_start`, `tool_result`) are
//! heard. The `reloaded` input records what the load registered, so the run replays with no
//! Node; a registration changed in that line is a divergence.

use serde_json::{json, Value};

use crate::common::{Env, MockLlm};
use crate::support::{
    assert_replays_without_node, json_lines, node_path, replay_without_node, send, spawn_rpc,
    with_host,
};

/// The conformance case's extension.
fn extension() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/command_reload_registrations/extension.ts")
}

/// The model calls the second load's tool, then answers.
fn script() -> Value {
    json!([
        {"tool_calls": [{"name": "second_probe", "arguments": "{\"what\":\"it\"}"}]},
        {"text": ["Probed."]}
    ])
}

/// The recorded `reloaded` input's `loaded`.
fn recorded_load(cassette: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(cassette).unwrap();
    let line = json_lines(&text)
        .into_iter()
        .find(|l| l["input"]["kind"] == "reloaded")
        .expect("a reloaded input");
    line["input"]["loaded"].clone()
}

/// A copy of `cassette` beside it whose `reloaded` line `change` changed.
fn tampered(cassette: &std::path::Path, change: impl Fn(&mut Value)) -> std::path::PathBuf {
    tampered_input(cassette, "reloaded", change)
}

/// A copy of `cassette` beside it whose input lines of `kind` `change` changed (their
/// `loaded`).
fn tampered_input(
    cassette: &std::path::Path,
    kind: &str,
    change: impl Fn(&mut Value),
) -> std::path::PathBuf {
    let text = std::fs::read_to_string(cassette).unwrap();
    let mut out = String::new();
    for mut line in json_lines(&text) {
        if line["input"]["kind"] == kind {
            change(&mut line["input"]["loaded"]);
        }
        out.push_str(&serde_json::to_string(&line).unwrap());
        out.push('\n');
    }
    let copy = cassette.with_extension("tampered.jsonl");
    std::fs::write(&copy, out).unwrap();
    copy
}

/// Checks that the replay of `changed`, a recording tampered where `what` is held, diverges.
fn diverges(env: &Env, changed: &std::path::Path, what: &str) {
    let (code, _, said) = replay_without_node(env, changed);
    assert_ne!(code, 0, "{what} replayed: {said}");
}

#[test]
fn a_reloads_new_registrations_take_effect_in_print_mode_and_replay_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&script());
    let env = Env::new(&mock);
    let cassette = env.path("reload-registrations.jsonl");
    let mut command = env.command(&["--provider", "mock", "--model", "mock-model"]);
    command.args(["--mode", "json", "--record", cassette.to_str().unwrap()]);
    command.args(["-e", extension().to_str().unwrap()]);
    command.args(["-p", "/reload-it", "/second-only", "Probe it"]);
    with_host(&mut command, &path);
    let (code, recorded, stderr) = crate::support::run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        mock.declared_tools(),
        [
            ["read", "bash", "edit", "write", "second_probe"],
            ["read", "bash", "edit", "write", "second_probe"]
        ]
    );
    let system = mock.requests()[0]["messages"][0]["content"].to_string();
    assert!(system.contains("Probe the second load"), "{system}");
    assert!(
        system.contains("Call second_probe when asked to probe."),
        "{system}"
    );
    assert!(!system.contains("Probe the first load"), "{system}");
    let lines = json_lines(&recorded);
    let customs: Vec<&Value> = lines
        .iter()
        .filter(|l| l["type"] == "entry_appended")
        .map(|l| &l["entry"]["customType"])
        .collect();
    assert_eq!(customs, ["second-start", "second-only"], "{recorded}");
    let result = lines
        .iter()
        .find(|l| l["type"] == "tool_execution_end")
        .unwrap_or_else(|| panic!("{recorded}"));
    assert_eq!(
        result["result"]["content"],
        json!([
            {"type": "text", "text": "second load probed it"},
            {"type": "text", "text": " (seen by load 2)"}
        ])
    );
    let loaded = recorded_load(&cassette);
    assert_eq!(loaded["tools"][0]["name"], "second_probe", "{loaded}");
    assert_eq!(loaded["commands"], json!(["second-only", "reload-it"]));
    let hooks = loaded["handledHooks"].to_string();
    assert!(
        hooks.contains("tool_result") && !hooks.contains("turn_end"),
        "{hooks}"
    );
    assert_replays_without_node(&env, &cassette, &recorded);

    // What the load registered is read from the recording: changed, the replay diverges.
    let described = tampered(&cassette, |loaded| {
        loaded["tools"][0]["description"] = json!("Another tool");
    });
    diverges(&env, &described, "a changed tool");
    let unheard = tampered(&cassette, |loaded| {
        let hooks = loaded["handledHooks"].as_array_mut().unwrap();
        hooks.retain(|h| h != "tool_result");
    });
    diverges(&env, &unheard, "a handler dropped");
}

#[test]
fn a_reloads_new_registrations_take_effect_in_rpc_mode_and_replay_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&script());
    let env = Env::new(&mock);
    let cassette = env.path("reload-registrations-rpc.jsonl");
    let mut command = env.rpc_command();
    command.args(["-e", extension().to_str().unwrap()]);
    command.args(["--record", cassette.to_str().unwrap()]);
    with_host(&mut command, &path);
    let (mut child, mut stdin, lines) = spawn_rpc(&mut command);
    // The commands listed after the reload are compared with Pi's by the conformance case (a
    // replay lists no extension's commands: `get_commands` is left out here).
    let mut next = vec![
        json!({"id": "o1", "type": "prompt", "message": "/second-only"}),
        json!({"id": "p1", "type": "prompt", "message": "Probe it"}),
    ]
    .into_iter();
    send(
        &mut stdin,
        json!({"id": "r1", "type": "prompt", "message": "/reload-it"}),
    );
    let (mut recorded, mut seen) = (String::new(), Vec::<Value>::new());
    for line in lines {
        let line = line.unwrap();
        recorded.push_str(&line);
        recorded.push('\n');
        let event: Value = serde_json::from_str(&line).unwrap();
        let answered = (event["type"] == "response" && event["id"] != "p1")
            || event["type"] == "agent_settled";
        if answered {
            match next.next() {
                Some(command) => send(&mut stdin, command),
                None => drop(stdin.take()),
            }
        }
        seen.push(event);
    }
    assert!(child.wait().unwrap().success(), "{recorded}");
    assert!(
        seen.iter()
            .any(|e| e["message"] == "second-only ran (load 2)"),
        "{recorded}"
    );
    assert_eq!(
        mock.declared_tools()[0],
        ["read", "bash", "edit", "write", "second_probe"]
    );
    assert!(recorded.contains("(seen by load 2)"), "{recorded}");
    assert_replays_without_node(&env, &cassette, &recorded);
}

/// A reload reads the context files again (conformance case `command_reload_context`): the
/// request after it holds the line the command added to AGENTS.md, the one before it did not.
/// The `reloaded` input holds the files as read, so a replay reads none: it reproduces with the
/// file changed since.
#[test]
fn a_reload_reads_the_context_files_again_and_the_replay_reads_them_from_the_recording() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}, {"text": ["Done."]}]));
    let env = Env::new(&mock);
    let agents = env.cwd().join("AGENTS.md");
    std::fs::write(&agents, "First rules: be brief.\n").unwrap();
    let cassette = env.path("reload-context.jsonl");
    let extension = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/command_reload_context/extension.ts");
    let mut command = env.command(&["--provider", "mock", "--model", "mock-model"]);
    command.args(["--mode", "json", "--record", cassette.to_str().unwrap()]);
    command.args(["-e", extension.to_str().unwrap()]);
    command.args(["-p", "Hi", "/rewrite", "Again"]);
    with_host(&mut command, &path);
    let (code, recorded, stderr) = crate::support::run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    let prompts: Vec<String> = mock
        .requests()
        .iter()
        .map(|r| r["messages"][0]["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(prompts.len(), 2);
    assert!(prompts[0].contains("First rules") && !prompts[0].contains("More rules"));
    assert!(prompts[1].contains("First rules: be brief.\nMore rules: answer in one word."));
    let loaded = recorded_load(&cassette);
    assert!(
        loaded["contextFiles"].to_string().contains("More rules"),
        "{loaded}"
    );
    std::fs::write(&agents, "Other rules since.\n").unwrap();
    assert_replays_without_node(&env, &cassette, &recorded);
}

/// With `--no-mcp`, the MCP server an extension registers is reported after the start and
/// again after a reload, whose load registers it again (conformance case
/// `command_reload_mcp_unconnected`); the report comes with the `reloaded` input, so a replay
/// with no Node says it twice too.
#[test]
fn a_reload_reports_again_the_registered_mcp_server_nothing_connects() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("reload-unconnected.jsonl");
    let extension = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/command_reload_mcp_unconnected/extension.ts");
    let mut command = env.command(&["--provider", "mock", "--model", "mock-model", "--no-mcp"]);
    command.args(["--mode", "json", "--record", cassette.to_str().unwrap()]);
    command.args(["-e", extension.to_str().unwrap()]);
    command.args(["-p", "/reload-it", "Hi"]);
    with_host(&mut command, &path);
    let (code, recorded, stderr) = crate::support::run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    let reported = |said: &str| said.matches("MCP server \"unused\" is registered").count();
    assert_eq!(reported(&stderr), 2, "{stderr}");
    let loaded = recorded_load(&cassette);
    assert_eq!(loaded["startErrors"][0]["event"], "register_mcp_server");
    let (code, _, replayed) = replay_without_node(&env, &cassette);
    assert_eq!(code, 0, "{replayed}");
    assert_eq!(reported(&replayed), 2, "{replayed}");
    assert_replays_without_node(&env, &cassette, &recorded);
}

/// A reload reads the settings again and takes the queue modes from them (conformance case
/// `command_reload_settings`): RPC `get_state` says the file's modes afterwards, and so does
/// the replay with no Node, the modes coming with the recorded `reloaded` input.
#[test]
fn a_reload_takes_the_queue_modes_of_the_settings_read_again() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    let cassette = env.path("reload-settings.jsonl");
    let extension = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/command_reload_settings/extension.ts");
    let mut command = env.rpc_command();
    command.args(["-e", extension.to_str().unwrap()]);
    command.args(["--record", cassette.to_str().unwrap()]);
    with_host(&mut command, &path);
    let (mut child, mut stdin, lines) = spawn_rpc(&mut command);
    send(
        &mut stdin,
        json!({"id": "r1", "type": "prompt", "message": "/reload-it"}),
    );
    let (mut recorded, mut modes) = (String::new(), Vec::new());
    for line in lines {
        let line = line.unwrap();
        recorded.push_str(&line);
        recorded.push('\n');
        let event: Value = serde_json::from_str(&line).unwrap();
        if event["id"] == "r1" {
            send(&mut stdin, json!({"id": "s1", "type": "get_state"}));
        } else if event["id"] == "s1" {
            let state = &event["data"];
            modes.push(state["steeringMode"].clone());
            modes.push(state["followUpMode"].clone());
            drop(stdin.take());
        }
    }
    assert!(child.wait().unwrap().success(), "{recorded}");
    assert_eq!(modes, ["all", "all"], "{recorded}");
    let loaded = recorded_load(&cassette);
    assert_eq!(loaded["steeringMode"], "all", "{loaded}");
    std::fs::remove_file(env.path("agent").join("settings.json")).unwrap();
    assert_replays_without_node(&env, &cassette, &recorded);
}

/// Writes `text` at `path` under `root`, its folders made.
fn write_file(root: &std::path::Path, path: &str, text: &str) {
    let file = root.join(path);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(file, text).unwrap();
}

/// A skill file's text.
fn skill(name: &str, description: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n\n{body}\n")
}

/// The skills the system prompt of each request lists, by name.
fn listed_skills(mock: &MockLlm) -> Vec<Vec<String>> {
    mock.requests()
        .iter()
        .map(|r| {
            let prompt = r["messages"][0]["content"].as_str().unwrap().to_owned();
            prompt
                .split("<name>")
                .skip(1)
                .filter_map(|rest| rest.split_once("</name>").map(|(n, _)| n.to_owned()))
                .collect()
        })
        .collect()
}

/// A reload finds the skills and prompt templates again (conformance case
/// `command_reload_skills`): the skill the command removed is gone from the prompt, the one it
/// added is listed and expands, the template it added expands. The `reloaded` input holds what
/// was found, so a replay reads none of the files (gone since) and reproduces; a skill changed
/// in that line diverges.
#[test]
fn a_reload_finds_the_skills_and_templates_again_and_the_replay_reads_them_from_the_recording() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"text": ["Hello."]}, {"text": ["New skill."]}, {"text": ["Added."]}
    ]));
    let env = Env::new(&mock);
    let project = env.cwd().join(".pi");
    write_file(
        &project,
        "skills/old-skill/SKILL.md",
        &skill("old-skill", "The old skill.", "Do the old thing."),
    );
    write_file(
        &project,
        "skills/kept/SKILL.md",
        &skill("kept", "The kept skill.", "Kept body."),
    );
    write_file(&project, "prompts/greet.md", "Say hello to $1.\n");
    let cassette = env.path("reload-skills.jsonl");
    let extension = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/command_reload_skills/extension.ts");
    let mut command = env.command(&["--provider", "mock", "--model", "mock-model", "--approve"]);
    command.args(["--mode", "json", "--record", cassette.to_str().unwrap()]);
    command.args(["-e", extension.to_str().unwrap()]);
    command.args(["-p", "Hi", "/swap", "/skill:new-skill now", "/added world"]);
    with_host(&mut command, &path);
    let (code, recorded, stderr) = crate::support::run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        listed_skills(&mock),
        [
            vec!["kept", "old-skill"],
            vec!["kept", "new-skill"],
            vec!["kept", "new-skill"]
        ]
    );
    let requests = mock.requests();
    let last_user = |i: usize| {
        let messages = requests[i]["messages"].as_array().unwrap();
        let user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
        user["content"].to_string()
    };
    assert!(
        last_user(1).contains("Do the new thing."),
        "{}",
        last_user(1)
    );
    assert!(
        last_user(2).contains("Added template for world."),
        "{}",
        last_user(2)
    );
    let loaded = recorded_load(&cassette);
    let names = |field: &str, key: &str| -> Vec<String> {
        loaded[field]
            .as_array()
            .unwrap_or_else(|| panic!("{loaded}"))
            .iter()
            .map(|s| s.pointer(key).and_then(Value::as_str).unwrap().to_owned())
            .collect()
    };
    assert_eq!(names("skills", "/name"), ["kept", "new-skill"]);
    assert_eq!(names("templates", "/name"), ["added", "greet"]);
    std::fs::remove_dir_all(&project).unwrap();
    assert_replays_without_node(&env, &cassette, &recorded);

    // What the reload found is read from the recording: changed, the replay diverges.
    let described = tampered(&cassette, |loaded| {
        loaded["skills"][1]["description"] = json!("Another skill.");
    });
    diverges(&env, &described, "a changed skill");
}

/// A reload reads the system prompt's files again (conformance case
/// `command_reload_prompt_files`): the request after it starts with the new `SYSTEM.md` and
/// holds the `APPEND_SYSTEM.md` the command added. The `reloaded` input holds what was read, so
/// a replay reads neither (gone since) and reproduces; a text changed in that line diverges.
#[test]
fn a_reload_reads_the_prompt_files_again_and_the_replay_reads_them_from_the_recording() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}, {"text": ["Again."]}]));
    let env = Env::new(&mock);
    write_file(&env.cwd(), ".pi/SYSTEM.md", "First project prompt.\n");
    write_file(&env.cwd(), "notes/prompt.md", "First flag prompt.");
    let cassette = env.path("reload-prompt-files.jsonl");
    let extension = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/command_reload_prompt_files/extension.ts");
    let mut command = env.command(&["--provider", "mock", "--model", "mock-model", "--approve"]);
    command.args(["--mode", "json", "--record", cassette.to_str().unwrap()]);
    command.args(["-e", extension.to_str().unwrap()]);
    command.args(["-p", "Hi", "/rewrite", "Again"]);
    with_host(&mut command, &path);
    let (code, recorded, stderr) = crate::support::run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    let prompts: Vec<String> = mock
        .requests()
        .iter()
        .map(|r| r["messages"][0]["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(prompts.len(), 2);
    assert!(
        prompts[0].starts_with("First project prompt."),
        "{}",
        prompts[0]
    );
    assert!(!prompts[0].contains("<addendum>"), "{}", prompts[0]);
    assert!(
        prompts[1].starts_with("Second project prompt."),
        "{}",
        prompts[1]
    );
    assert!(
        prompts[1].contains("<addendum>\nAdded addendum.\n"),
        "{}",
        prompts[1]
    );
    let loaded = recorded_load(&cassette);
    assert_eq!(
        loaded["promptFiles"],
        json!({"systemPrompt": "Second project prompt.\n", "appendSystemPrompt": "Added addendum.\n"})
    );
    std::fs::remove_dir_all(env.cwd().join(".pi")).unwrap();
    assert_replays_without_node(&env, &cassette, &recorded);

    let rewritten = tampered(&cassette, |loaded| {
        loaded["promptFiles"]["systemPrompt"] = json!("Another prompt.");
    });
    diverges(&env, &rewritten, "a changed prompt file");
}

/// A reload activates the tools the settings read again newly add to `defaultTools`
/// (conformance case `command_reload_default_tools`): after every tool but `read` was turned
/// off, the defaults lose `bash` and gain `grep` and `find`, which are active after the reload
/// (`edit`, a default before too, stays off). The `reloaded` input holds the tools added, so a
/// replay reads no settings (gone since) and reproduces; another tool named there diverges.
#[test]
fn a_reload_activates_the_tools_the_settings_newly_add_to_the_defaults() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}, {"text": ["Again."]}]));
    let env = Env::new(&mock);
    let settings = env.path("agent").join("settings.json");
    std::fs::write(&settings, r#"{"defaultTools": ["read", "bash", "edit"]}"#).unwrap();
    let cassette = env.path("reload-default-tools.jsonl");
    let extension = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/command_reload_default_tools/extension.ts");
    let mut command = env.command(&["--provider", "mock", "--model", "mock-model"]);
    command.args(["--mode", "json", "--record", cassette.to_str().unwrap()]);
    command.args(["-e", extension.to_str().unwrap()]);
    command.args(["-p", "Hi", "/narrow", "/add-tools", "Again"]);
    with_host(&mut command, &path);
    let (code, recorded, stderr) = crate::support::run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        mock.declared_tools(),
        [["read", "bash", "edit"], ["read", "grep", "find"]]
    );
    let loaded = recorded_load(&cassette);
    assert_eq!(
        loaded["addedDefaultTools"],
        json!(["grep", "find"]),
        "{loaded}"
    );
    std::fs::remove_file(&settings).unwrap();
    assert_replays_without_node(&env, &cassette, &recorded);

    let other = tampered(&cassette, |loaded| {
        loaded["addedDefaultTools"] = json!(["grep", "ls"]);
    });
    diverges(&env, &other, "another added tool");
}

/// A reload's new load registers another tool of `deferred` exposure (conformance case
/// `command_reload_deferred_tool`): `tool_search` finds and loads it (not the first load's),
/// and the model's call of it runs. The tool's exposure is recorded with the `reloaded`
/// input, so a replay with no Node searches the same; the tool made direct there diverges.
#[test]
fn a_reloads_deferred_tool_is_found_by_tool_search_and_runs() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"id": "s1", "name": "tool_search", "arguments": "{\"query\":\"look word up\"}"}]},
        {"tool_calls": [{"id": "l1", "name": "second_lookup", "arguments": "{\"word\":\"reload\"}"}]},
        {"text": ["Looked up."]}
    ]));
    let env = Env::new(&mock);
    let cassette = env.path("reload-deferred.jsonl");
    let extension = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/command_reload_deferred_tool/extension.ts");
    let mut command = env.command(&["--provider", "mock", "--model", "mock-model"]);
    command.args(["--mode", "json", "--record", cassette.to_str().unwrap()]);
    command.args(["-e", extension.to_str().unwrap(), "--tools", "+tool_search"]);
    command.args(["-p", "/reload-it", "Look up a word."]);
    with_host(&mut command, &path);
    let (code, recorded, stderr) = crate::support::run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    let results: Vec<Value> = json_lines(&recorded)
        .into_iter()
        .filter(|l| l["type"] == "tool_execution_end")
        .map(|l| l["result"].clone())
        .collect();
    assert_eq!(results.len(), 2, "{recorded}");
    assert_eq!(results[0]["details"]["loaded"], json!(["second_lookup"]));
    assert_eq!(
        results[1]["content"][0]["text"],
        "second_lookup looked up reload"
    );
    assert_eq!(
        mock.declared_tools()[1],
        [
            "read",
            "bash",
            "edit",
            "write",
            "tool_search",
            "second_lookup"
        ]
    );
    assert_replays_without_node(&env, &cassette, &recorded);

    let direct = tampered(&cassette, |loaded| {
        loaded["tools"][0]
            .as_object_mut()
            .unwrap()
            .remove("exposure");
    });
    diverges(&env, &direct, "a deferred tool made direct");
}

/// A session a command replaces after a reload starts with what the extensions, loaded again
/// for it, register (conformance case `command_reload_new_session`): its request declares the
/// later load's tool, not the first's. The `replaced` input holds what they registered, so a
/// replay with no Node reproduces; a registration changed there diverges.
#[test]
fn a_session_replaced_after_a_reload_starts_with_the_new_loads_registrations() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("reload-new-session.jsonl");
    let extension = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/command_reload_new_session/extension.ts");
    let mut command = env.command(&["--provider", "mock", "--model", "mock-model"]);
    command.args(["--mode", "json", "--record", cassette.to_str().unwrap()]);
    command.args(["-e", extension.to_str().unwrap()]);
    command.args(["-p", "/reload-it", "/new-it", "Hi"]);
    with_host(&mut command, &path);
    let (code, recorded, stderr) = crate::support::run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        mock.declared_tools(),
        [["read", "bash", "edit", "write", "second_probe"]]
    );
    let text = std::fs::read_to_string(&cassette).unwrap();
    let replaced = json_lines(&text)
        .into_iter()
        .find(|l| l["input"]["kind"] == "replaced")
        .expect("a replaced input");
    assert_eq!(
        replaced["input"]["loaded"]["tools"][0]["description"],
        "Probe (load 3)"
    );
    assert_replays_without_node(&env, &cassette, &recorded);

    let described = tampered_input(&cassette, "replaced", |loaded| {
        loaded["tools"][0]["description"] = json!("Another probe");
    });
    diverges(&env, &described, "a changed registration");
}

/// A reload loads an extension the settings name since (conformance case
/// `command_reload_extension_paths`): the added extension's command runs and its tool is
/// declared. The `reloaded` input holds what it registered, so a replay with no Node, the
/// extension and the settings gone, reproduces; its command dropped from that line diverges.
#[test]
fn a_reload_loads_an_extension_the_settings_name_since() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}]));
    let env = Env::new(&mock);
    let case = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/command_reload_extension_paths");
    let scenario: Value =
        serde_json::from_str(&std::fs::read_to_string(case.join("scenario.json")).unwrap())
            .unwrap();
    let added = env.cwd().join("added.ts");
    std::fs::write(&added, scenario["files"]["added.ts"].as_str().unwrap()).unwrap();
    let settings = env.path("agent").join("settings.json");
    std::fs::write(&settings, "{}").unwrap();
    let cassette = env.path("reload-extension-paths.jsonl");
    let mut command = env.command(&["--provider", "mock", "--model", "mock-model"]);
    command.args(["--mode", "json", "--record", cassette.to_str().unwrap()]);
    command.args(["-e", case.join("extension.ts").to_str().unwrap()]);
    command.args(["-p", "/add-extension", "/added-cmd", "Hi"]);
    with_host(&mut command, &path);
    let (code, recorded, stderr) = crate::support::run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        mock.declared_tools(),
        [["read", "bash", "edit", "write", "added_probe"]]
    );
    let customs: Vec<Value> = json_lines(&recorded)
        .into_iter()
        .filter(|l| l["type"] == "entry_appended")
        .map(|l| l["entry"]["customType"].clone())
        .collect();
    assert_eq!(customs, ["added-started", "added-ran"], "{recorded}");
    std::fs::remove_file(&added).unwrap();
    std::fs::remove_file(&settings).unwrap();
    assert_replays_without_node(&env, &cassette, &recorded);

    let dropped = tampered(&cassette, |loaded| {
        let commands = loaded["commands"].as_array_mut().unwrap();
        commands.retain(|c| c != "added-cmd");
    });
    diverges(&env, &dropped, "a dropped command");
}

/// An RPC `new_session` where no extension hears the session's start (conformance case
/// `session_replace_unheard`): Pi loads the extensions again for the new session, so its
/// request declares the new load's tool, not the first's. The `replaced` input holds what the
/// new load registered though no handler hears it, so a replay with no Node reproduces; a
/// registration changed there, or the line dropped, diverges.
#[test]
fn a_replacement_no_handler_hears_takes_the_new_loads_registrations() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}, {"text": ["Again."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("replace-unheard.jsonl");
    let extension = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/session_replace_unheard/extension.ts");
    let mut command = env.rpc_command();
    command.args(["-e", extension.to_str().unwrap()]);
    command.args(["--record", cassette.to_str().unwrap()]);
    with_host(&mut command, &path);
    let (mut child, mut stdin, output) = spawn_rpc(&mut command);
    send(
        &mut stdin,
        json!({"id": "p1", "type": "prompt", "message": "Hi"}),
    );
    let (mut recorded, mut settled) = (String::new(), 0);
    for line in output {
        let line = line.unwrap();
        recorded.push_str(&line);
        recorded.push('\n');
        if serde_json::from_str::<Value>(&line).unwrap()["type"] == "agent_settled" {
            settled += 1;
            if settled == 2 {
                break;
            }
            send(&mut stdin, json!({"id": "n1", "type": "new_session"}));
            send(
                &mut stdin,
                json!({"id": "p2", "type": "prompt", "message": "Again"}),
            );
        }
    }
    drop(stdin.take());
    assert!(child.wait().unwrap().success(), "{recorded}");
    assert_eq!(
        mock.declared_tools(),
        [
            ["read", "bash", "edit", "write", "probe_1"],
            ["read", "bash", "edit", "write", "probe_2"]
        ]
    );
    assert_replays_without_node(&env, &cassette, &recorded);

    let renamed = tampered_input(&cassette, "replaced", |loaded| {
        loaded["tools"][0]["name"] = json!("probe_3");
    });
    diverges(&env, &renamed, "a changed registration");
    let text = std::fs::read_to_string(&cassette).unwrap();
    let dropped: String = text
        .lines()
        .filter(|l| !l.contains(r#""kind":"replaced""#))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(dropped, text, "a replaced line");
    let dropped_path = env.path("replace-unheard.dropped.jsonl");
    std::fs::write(&dropped_path, dropped).unwrap();
    diverges(&env, &dropped_path, "a dropped replaced line");
}

/// A run that started with no extension, whose settings name one before an RPC `new_session`
/// (conformance case `replace_loads_from_none`): as Pi builds the new session's runtime with
/// the settings read again, the extension is loaded then (the host starts for it), hears the
/// new session's start, and its command runs and its tool is declared. The `replaced` input
/// holds what it registered, so a replay with no Node, the extension and the settings gone,
/// reproduces; its tool renamed in that line diverges.
#[test]
fn a_replacement_loads_the_extensions_the_settings_name_since_in_a_run_that_had_none() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Hello."]}, {"text": ["Again."]}]));
    let env = Env::new(&mock);
    let case = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/replace_loads_from_none");
    let added = env.cwd().join("added.ts");
    std::fs::copy(case.join("extension.ts"), &added).unwrap();
    let settings = env.path("agent").join("settings.json");
    std::fs::write(&settings, "{}").unwrap();
    let cassette = env.path("loads-from-none.jsonl");
    let mut command = env.rpc_command();
    command.args(["--record", cassette.to_str().unwrap()]);
    with_host(&mut command, &path);
    let (mut child, mut stdin, output) = spawn_rpc(&mut command);
    send(
        &mut stdin,
        json!({"id": "p1", "type": "prompt", "message": "Hi"}),
    );
    let (mut recorded, mut settled) = (String::new(), 0);
    for line in output {
        let line = line.unwrap();
        recorded.push_str(&line);
        recorded.push('\n');
        if serde_json::from_str::<Value>(&line).unwrap()["type"] == "agent_settled" {
            settled += 1;
            if settled == 2 {
                break;
            }
            let named = json!({ "extensions": [added] });
            std::fs::write(&settings, named.to_string()).unwrap();
            send(&mut stdin, json!({"id": "n1", "type": "new_session"}));
            send(
                &mut stdin,
                json!({"id": "x1", "type": "prompt", "message": "/added-cmd"}),
            );
            send(
                &mut stdin,
                json!({"id": "p2", "type": "prompt", "message": "Again"}),
            );
        }
    }
    drop(stdin.take());
    assert!(child.wait().unwrap().success(), "{recorded}");
    assert_eq!(
        mock.declared_tools(),
        [
            vec!["read", "bash", "edit", "write"],
            vec!["read", "bash", "edit", "write", "added_probe"]
        ]
    );
    let customs: Vec<Value> = json_lines(&recorded)
        .into_iter()
        .filter(|l| l["type"] == "entry_appended")
        .map(|l| l["entry"]["customType"].clone())
        .collect();
    assert_eq!(customs, ["added-started", "added-ran"], "{recorded}");
    let notices: Vec<Value> = json_lines(&recorded)
        .into_iter()
        .filter(|l| l["type"] == "extension_ui_request")
        .map(|l| l["message"].clone())
        .collect();
    assert_eq!(
        notices,
        ["started new", "started new", "added-cmd ran"],
        "{recorded}"
    );
    std::fs::remove_file(&added).unwrap();
    std::fs::remove_file(&settings).unwrap();
    assert_replays_without_node(&env, &cassette, &recorded);

    // RPC mode binds the new session twice: the second `replaced` carries no load.
    let renamed = tampered_input(&cassette, "replaced", |loaded| {
        if !loaded.is_null() {
            loaded["tools"][0]["name"] = json!("other_probe");
        }
    });
    diverges(&env, &renamed, "a changed registration");
}

/// A run that started with no extension, whose settings name one before an RPC `new_session`
/// (conformance case `replace_loads_providers_mcp`): the extension, loaded for the new
/// session, registers a provider and an MCP server while loading. As in Pi 1.5.2 the provider
/// joins the model lists and takes the requests once chosen (its key and header sent, its key
/// kept out of the recording), and the server connects, its tool declared and called. The
/// `replaced` input and the MCP extension's decision hold both, so a replay with no Node, no
/// extension and no server reproduces; the provider's model renamed there diverges.
#[test]
fn a_replacement_adds_the_providers_and_mcp_servers_of_the_extensions_it_loads_late() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"text": ["Hello."]},
        {"tool_calls": [{"id": "call_shout", "name": "mcp__shouter__shout", "arguments": "{\"text\":\"hey\"}"}]},
        {"text": ["Shouted."]},
        {"text": ["From the late provider."]}
    ]));
    let env = Env::new(&mock);
    let case = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/replace_loads_providers_mcp");
    let added = env.cwd().join("late.ts");
    std::fs::copy(case.join("extension.ts"), &added).unwrap();
    let settings = env.path("agent").join("settings.json");
    std::fs::write(&settings, "{}").unwrap();
    let cassette = env.path("late-providers.jsonl");
    let mut command = env.rpc_command();
    command.args(["--record", cassette.to_str().unwrap()]);
    with_host(&mut command, &path);
    let (mut child, mut stdin, output) = spawn_rpc(&mut command);
    send(
        &mut stdin,
        json!({"id": "p1", "type": "prompt", "message": "Hi"}),
    );
    let (mut recorded, mut settled) = (String::new(), 0);
    for line in output {
        let line = line.unwrap();
        recorded.push_str(&line);
        recorded.push('\n');
        if serde_json::from_str::<Value>(&line).unwrap()["type"] != "agent_settled" {
            continue;
        }
        settled += 1;
        match settled {
            1 => {
                let named = json!({ "extensions": [added] });
                std::fs::write(&settings, named.to_string()).unwrap();
                send(&mut stdin, json!({"id": "n1", "type": "new_session"}));
                send(
                    &mut stdin,
                    json!({"id": "m2", "type": "get_available_models"}),
                );
                send(
                    &mut stdin,
                    json!({"id": "p2", "type": "prompt", "message": "Shout hey"}),
                );
            }
            2 => {
                send(
                    &mut stdin,
                    json!({"id": "s1", "type": "set_model", "provider": "late", "modelId": "late-model"}),
                );
                send(
                    &mut stdin,
                    json!({"id": "p3", "type": "prompt", "message": "Again"}),
                );
            }
            _ => break,
        }
    }
    drop(stdin.take());
    assert!(child.wait().unwrap().success(), "{recorded}");
    let lines = json_lines(&recorded);
    let response = |id: &str| {
        lines
            .iter()
            .find(|l| l["type"] == "response" && l["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no response {id}: {recorded}"))
    };
    let listed: Vec<String> = response("m2")["data"]["models"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            format!(
                "{}/{}",
                m["provider"].as_str().unwrap(),
                m["id"].as_str().unwrap()
            )
        })
        .collect();
    assert!(listed.contains(&"late/late-model".to_owned()), "{listed:?}");
    assert_eq!(response("s1")["success"], true, "{recorded}");
    let shouted = lines
        .iter()
        .find(|l| l["type"] == "tool_execution_end")
        .map(|l| l["result"]["content"][0]["text"].clone());
    assert_eq!(shouted, Some(json!("HEY")), "{recorded}");
    let declared = mock.declared_tools();
    assert_eq!(declared.len(), 4, "{declared:?}");
    assert!(!declared[0].iter().any(|t| t == "mcp__shouter__shout"));
    assert!(declared[1].iter().any(|t| t == "mcp__shouter__shout"));
    // The last request went through the late provider, with its key and its header.
    let log = std::fs::read_to_string(&mock.log).unwrap();
    let heads: Vec<Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("event").is_none())
        .map(|v| v["headers"].clone())
        .collect();
    assert_eq!(heads.len(), 4, "{log}");
    assert_eq!(heads[3]["x-late"], "yes", "{:?}", heads[3]);
    assert_eq!(
        heads[3]["authorization"],
        "Bearer late-provider-key-0123456789"
    );
    assert_ne!(heads[2]["x-late"], "yes");
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(
        !text.contains("late-provider-key-0123456789"),
        "the key was recorded"
    );

    std::fs::remove_file(&added).unwrap();
    std::fs::remove_file(&settings).unwrap();
    std::fs::remove_file(env.cwd().join("shouter.cjs")).unwrap();
    assert_replays_without_node(&env, &cassette, &recorded);

    let renamed = tampered_input(&cassette, "replaced", |loaded| {
        if !loaded.is_null() {
            loaded["providers"][0]["models"][0]["id"] = json!("other-model");
        }
    });
    diverges(&env, &renamed, "a changed provider");
}
