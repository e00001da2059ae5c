//! Skills and prompt templates as Pi 1.5.2 loads them (checked against its `core/skills.js`,
//! `core/prompt-templates.js`, `core/package-manager.js` and `core/resource-loader.js`): found in
//! the agent directory, `~/.agents/skills`, the project's `.pi` folders only when the project is
//! trusted, and `--skill` / `--prompt-template` paths; skills listed in the system prompt;
//! `/skill:name args` and `/template args` prompts expanded before they are sent; `--no-skills`
//! and `--no-prompt-templates` keeping only the paths given; RPC's `get_commands` listing them.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use crate::common::{Env, MockLlm};
use crate::text_script;
use serde_json::{json, Value};

const JSON_RUN: [&str; 6] = [
    "--provider",
    "mock",
    "--model",
    "mock-model",
    "--mode",
    "json",
];

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// An environment with a skill and a template in the agent dir, a skill in `~/.agents/skills`
/// and a skill and a template in the project's `.pi` (which makes the project need trust).
fn resources_env(mock: &MockLlm) -> Env {
    let env = Env::new(mock);
    write(
        &env.path("agent").join("skills/pdf-tools/SKILL.md"),
        "---\nname: pdf-tools\ndescription: Extract text from PDF files.\n---\n\n# PDF\n\nRun pdftotext on the file.\n",
    );
    write(
        &env.path("agent").join("prompts/review.md"),
        "---\ndescription: Review a file\nargument-hint: <file>\n---\nReview $1 with ${2:-care}. All: $@",
    );
    write(
        &env.path("home").join(".agents/skills/notes/SKILL.md"),
        "---\ndescription: Take notes & <tags>\n---\nNotes body\n",
    );
    write(
        &env.cwd().join(".pi/skills/local-skill/SKILL.md"),
        "---\nname: local-skill\ndescription: Only for this project.\n---\nLocal body\n",
    );
    write(
        &env.cwd().join(".pi/prompts/ship.md"),
        "Ship it: $ARGUMENTS\n",
    );
    env
}

/// The system prompt and the last user message of each request the mock received.
fn sent(mock: &MockLlm) -> Vec<(String, String)> {
    mock.requests()
        .iter()
        .map(|request| {
            let messages = request["messages"].as_array().unwrap();
            let system = messages[0]["content"].as_str().unwrap().to_owned();
            let user = messages
                .iter()
                .rev()
                .find(|m| m["role"] == "user")
                .map(|m| match &m["content"] {
                    Value::String(text) => text.clone(),
                    content => content[0]["text"].as_str().unwrap().to_owned(),
                })
                .unwrap();
            (system, user)
        })
        .collect()
}

fn run(env: &Env, flags: &[&str], prompt: &str) {
    let mut args = JSON_RUN.to_vec();
    args.extend_from_slice(flags);
    args.extend(["-p", prompt]);
    let out = env.run(&args);
    assert_eq!(out.code, 0, "{}", out.stderr);
}

#[test]
fn skills_are_listed_in_the_system_prompt_from_the_places_pi_looks() {
    let mock = MockLlm::start(&text_script(&["1", "2", "3", "4"]));
    let env = resources_env(&mock);
    let agent = env.path("agent");
    let home = env.path("home");
    let cwd = env.cwd();

    run(&env, &[], "hello");
    run(&env, &["--approve"], "hello");
    run(&env, &["--no-skills"], "hello");
    let extra = env.path("pkg").join("extra.md");
    write(
        &extra,
        "---\nname: extra\ndescription: Given on the command line.\n---\n",
    );
    run(
        &env,
        &["--no-skills", "--skill", extra.to_str().unwrap()],
        "hello",
    );
    let sent = sent(&mock);

    let pdf = agent.join("skills/pdf-tools/SKILL.md");
    let notes = home.join(".agents/skills/notes/SKILL.md");
    let expected = format!(
        "<skills>\nThe following skills provide specialized instructions for specific tasks.\n\
         Use the read tool to load a skill's file when the task matches its description.\n\
         Resolve relative paths against the skill's directory (parent of SKILL.md). Use absolute paths in tool calls.\n\n\
         <available_skills>\n  <skill>\n    <name>pdf-tools</name>\n    <description>Extract text from PDF files.</description>\n    <location>{}</location>\n  </skill>\n  \
         <skill>\n    <name>notes</name>\n    <description>Take notes &amp; &lt;tags&gt;</description>\n    <location>{}</location>\n  </skill>\n</available_skills>\n</skills>",
        pdf.display(),
        notes.display()
    );
    // Untrusted: the project's skill is left out.
    assert!(sent[0].0.contains(&expected), "{}", sent[0].0);
    assert!(!sent[0].0.contains("local-skill"), "{}", sent[0].0);
    // Trusted: the project's skill comes first.
    let local = cwd.join(".pi/skills/local-skill/SKILL.md");
    let first = sent[1].0.find("<name>local-skill</name>").unwrap();
    assert!(first < sent[1].0.find("<name>pdf-tools</name>").unwrap());
    assert!(sent[1]
        .0
        .contains(&format!("<location>{}</location>", local.display())));
    // --no-skills: none, unless given by path.
    assert!(!sent[2].0.contains("<skills>"), "{}", sent[2].0);
    assert!(sent[3].0.contains("<name>extra</name>"), "{}", sent[3].0);
    assert!(!sent[3].0.contains("pdf-tools"), "{}", sent[3].0);
}

#[test]
fn skill_commands_and_templates_are_expanded_before_they_are_sent() {
    let mock = MockLlm::start(&text_script(&["1", "2", "3", "4", "5", "6"]));
    let env = resources_env(&mock);
    let agent = env.path("agent");

    run(&env, &[], "/review main.rs");
    run(&env, &[], "/review \"a b.rs\" fast extra");
    run(&env, &[], "/skill:pdf-tools  convert report.pdf ");
    run(&env, &[], "/ship now");
    run(&env, &["--approve"], "/ship now");
    run(
        &env,
        &["--no-prompt-templates", "--no-skills"],
        "/review main.rs",
    );
    let users: Vec<String> = sent(&mock).into_iter().map(|(_, user)| user).collect();
    let dir = agent.join("skills/pdf-tools");
    assert_eq!(
        users,
        [
            "Review main.rs with care. All: main.rs".to_owned(),
            "Review a b.rs with fast. All: a b.rs fast extra".to_owned(),
            format!(
                "<skill name=\"pdf-tools\" location=\"{}/SKILL.md\">\nReferences are relative to {}.\n\n# PDF\n\nRun pdftotext on the file.\n</skill>\n\nconvert report.pdf",
                dir.display(),
                dir.display()
            ),
            // The project's template needs trust; a file without frontmatter keeps its
            // trailing line break (Pi trims only a body after frontmatter).
            "/ship now".to_owned(),
            "Ship it: now\n".to_owned(),
            "/review main.rs".to_owned(),
        ]
    );
}

#[test]
fn rpc_lists_templates_and_skills_and_expands_what_it_is_sent() {
    let mock = MockLlm::start(&text_script(&["done"]));
    let env = resources_env(&mock);
    let agent = env.path("agent");
    let mut child = env
        .rpc_command()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    writeln!(stdin, r#"{{"id":"c","type":"get_commands"}}"#).unwrap();
    let response: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
    let commands = response["data"]["commands"].as_array().unwrap();
    let ours: Vec<&Value> = commands
        .iter()
        .filter(|c| c["source"] != "extension")
        .collect();
    let pdf = agent.join("skills/pdf-tools/SKILL.md");
    let notes = env.path("home").join(".agents/skills/notes/SKILL.md");
    assert_eq!(
        ours,
        [
            &json!({"name": "review", "description": "Review a file", "source": "prompt",
                "sourceInfo": {"path": agent.join("prompts/review.md"), "source": "auto", "scope": "user",
                    "origin": "top-level", "baseDir": agent}}),
            &json!({"name": "skill:pdf-tools", "description": "Extract text from PDF files.", "source": "skill",
                "sourceInfo": {"path": pdf, "source": "auto", "scope": "user", "origin": "top-level",
                    "baseDir": agent}}),
            &json!({"name": "skill:notes", "description": "Take notes & <tags>", "source": "skill",
                "sourceInfo": {"path": notes, "source": "auto", "scope": "user", "origin": "top-level",
                    "baseDir": env.path("home").join(".agents")}}),
        ]
    );
    writeln!(
        stdin,
        r#"{{"id":"p","type":"prompt","message":"/review lib.rs"}}"#
    )
    .unwrap();
    for line in lines.by_ref() {
        let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if event["type"] == "agent_end" {
            break;
        }
    }
    drop(stdin);
    child.wait().unwrap();
    let users: Vec<String> = sent(&mock).into_iter().map(|(_, user)| user).collect();
    assert_eq!(users, ["Review lib.rs with care. All: lib.rs"]);
}

#[test]
fn a_recorded_rpc_run_replays_its_expansions_without_the_files() {
    let mock = MockLlm::start(&text_script(&["one", "two"]));
    let env = resources_env(&mock);
    let cassette = env.path("pkg").join("rpc.jsonl");
    let mut child = env
        .rpc_command()
        .args(["--record", cassette.to_str().unwrap()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let wait_for_end = |lines: &mut std::io::Lines<BufReader<std::process::ChildStdout>>| {
        for line in lines.by_ref() {
            let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
            if event["type"] == "agent_end" {
                break;
            }
        }
    };
    writeln!(stdin, r#"{{"id":"c","type":"get_commands"}}"#).unwrap();
    writeln!(
        stdin,
        r#"{{"id":"p","type":"prompt","message":"/review lib.rs"}}"#
    )
    .unwrap();
    wait_for_end(&mut lines);
    writeln!(
        stdin,
        r#"{{"id":"q","type":"prompt","message":"/skill:pdf-tools go"}}"#
    )
    .unwrap();
    wait_for_end(&mut lines);
    drop(stdin);
    assert!(child.wait().unwrap().success());
    // The replaying machine has none of the files.
    for dir in ["agent/skills", "agent/prompts", "home/.agents"] {
        std::fs::remove_dir_all(env.path(dir)).unwrap();
    }
    let check = env.run(&["replay", "--check", cassette.to_str().unwrap()]);
    assert_eq!(check.code, 0, "{}\n{}", check.stdout, check.stderr);
}

/// The settings' `skills` and `prompts` entries, resolved against the folder of the settings
/// file that lists them, as Pi 1.5.2's package manager resolves them: the project's entries
/// (only when the project is trusted) come first, then the project's folders, then the agent
/// dir's entries, then the agent dir's folders, so a skill of the agent dir's settings wins
/// over one of its name in `<agent dir>/skills`; a listed folder gives its skills, a listed file
/// itself. A template found only through settings expands.
#[test]
fn the_settings_skills_and_prompts_entries_are_read() {
    let mock = MockLlm::start(&text_script(&["1", "2", "3"]));
    let env = resources_env(&mock);
    let agent = env.path("agent");
    let cwd = env.cwd();
    let shared = env.path("shared");
    write(
        &shared.join("skills/pdf-tools/SKILL.md"),
        "---\nname: pdf-tools\ndescription: The shared PDF skill.\n---\nShared body\n",
    );
    write(
        &shared.join("skills/charts/SKILL.md"),
        "---\nname: charts\ndescription: Draw charts.\n---\nCharts body\n",
    );
    write(
        &agent.join("solo.md"),
        "---\nname: solo\ndescription: A lone skill file.\n---\nSolo body\n",
    );
    write(
        &shared.join("prompts/nested/deploy.md"),
        "Deploy $1 carefully\n",
    );
    write(
        &agent.join("settings.json"),
        &json!({"skills": ["../shared/skills", "solo.md", "!nothing"], "prompts": ["../shared/prompts"]})
            .to_string(),
    );
    write(
        &cwd.join(".pi/team/SKILL.md"),
        "---\nname: team\ndescription: The team's skill.\n---\nTeam body\n",
    );
    write(
        &cwd.join(".pi/settings.json"),
        &json!({"skills": ["team"]}).to_string(),
    );

    run(&env, &[], "hello");
    run(&env, &["--approve"], "hello");
    run(&env, &[], "/deploy web");
    let sent = sent(&mock);

    let untrusted = &sent[0].0;
    let shared_pdf = shared.join("skills/pdf-tools/SKILL.md");
    assert!(
        untrusted.contains(&format!(
            "<name>pdf-tools</name>\n    <description>The shared PDF skill.</description>\n    <location>{}</location>",
            shared_pdf.display()
        )),
        "{untrusted}"
    );
    assert!(
        !untrusted.contains("Extract text from PDF files."),
        "{untrusted}"
    );
    let at = |name: &str| {
        untrusted
            .find(&format!("<name>{name}</name>"))
            .unwrap_or(usize::MAX)
    };
    assert!(
        at("charts") < at("solo") && at("solo") < at("notes"),
        "{untrusted}"
    );
    assert!(untrusted.contains(&format!(
        "<location>{}</location>",
        agent.join("solo.md").display()
    )));
    assert!(!untrusted.contains("<name>team</name>"), "{untrusted}");

    let trusted = &sent[1].0;
    let team = trusted
        .find("<name>team</name>")
        .expect("the project's settings skill");
    assert!(
        team < trusted.find("<name>local-skill</name>").unwrap(),
        "{trusted}"
    );
    assert!(
        team < trusted.find("<name>pdf-tools</name>").unwrap(),
        "{trusted}"
    );

    assert_eq!(sent[2].1, "Deploy web carefully\n");
}
