//! Project trust decided by an extension (Pi 1.5.2's `project_trust`), through the binary: the
//! command line's extension is asked before the project's own load, its decision is stored in
//! `trust.json` as Pi stores it, and the project's extension then loads. The decision is the
//! recording's: `pi replay` reproduces the run with no Node, asks nobody, and leaves
//! `trust.json` as it finds it; `--replay` in place takes it too.

use serde_json::{json, Value};

use crate::common::{Env, MockLlm};
use crate::support::{fixture, node_path, replay_without_node, run, with_extension, with_host};

#[test]
fn an_extensions_trust_decision_is_remembered_recorded_and_replayed_without_node_or_trust_json() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Trusted."]}]));
    let env = Env::new(&mock);
    let project = env.cwd().join(".pi");
    std::fs::create_dir_all(project.join("extensions")).unwrap();
    std::fs::copy(fixture("marker.ts"), project.join("extensions/marker.ts")).unwrap();
    std::fs::create_dir_all(project.join("skills/deploy")).unwrap();
    std::fs::write(
        project.join("skills/deploy/SKILL.md"),
        "---\nname: deploy\ndescription: The project's deploy skill.\n---\nDeploy.\n",
    )
    .unwrap();
    let marker = env.path("marker.txt");
    let cassette = env.path("trust.jsonl");
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &fixture("trusting.ts"),
        "hi",
    );
    with_host(&mut command, &path);
    command.env("PI_TEST_MARKER", &marker);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        marker.exists(),
        "the trusted project's extension did not load"
    );
    let system = mock.requests()[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        system.contains("<name>deploy</name>"),
        "the trusted project's skill is not in the prompt: {system}"
    );
    let store = env.path("agent/trust.json");
    let key = env.cwd().canonicalize().unwrap().display().to_string();
    assert_eq!(
        std::fs::read_to_string(&store).unwrap(),
        format!("{{\n  {}: true\n}}\n", Value::String(key.clone())),
        "not remembered as Pi 1.5.2 remembers it"
    );
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(&cassette)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        header["projectTrust"],
        json!({"trusted": true, "remember": true})
    );

    // The attack on the replay: the store now says the opposite, and no Node is there to ask.
    std::fs::remove_file(&marker).unwrap();
    let distrust = format!("{{\n  {}: false\n}}\n", Value::String(key));
    std::fs::write(&store, &distrust).unwrap();
    let (code, replayed, stderr) = replay_without_node(&env, &cassette);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(replayed, recorded);
    assert_eq!(
        std::fs::read_to_string(&store).unwrap(),
        distrust,
        "the replay wrote trust.json"
    );
    std::fs::remove_file(&store).unwrap();
    let (code, _, stderr) = replay_without_node(&env, &cassette);
    assert_eq!(code, 0, "{stderr}");
    assert!(!store.exists(), "the replay remembered a decision");
    assert!(
        !marker.exists(),
        "the replay loaded the project's extension"
    );

    // Replayed in place (`--replay`, the extension loaded live for the run's other hook
    // points): the recorded decision holds, and its handler is not asked to remember again.
    // (It writes the recorded session file again, so the recording's goes first.)
    std::fs::remove_dir_all(env.path("agent/sessions")).unwrap();
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--replay", cassette.to_str().unwrap()],
        &fixture("trusting.ts"),
        "hi",
    );
    with_host(&mut command, &path);
    command.env("PI_TEST_MARKER", &marker);
    let (code, replayed, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(replayed, recorded);
    assert!(!store.exists(), "the in-place replay remembered a decision");
    assert!(
        marker.exists(),
        "the recorded trust did not load the project's extension"
    );
}

/// The attack: a handler that throws or cannot decide grants nothing. The project stays
/// untrusted (no default says otherwise), its extension is not loaded, nothing is remembered,
/// and the throw is Pi's warning.
#[test]
fn a_handler_that_throws_or_leaves_it_undecided_trusts_nothing() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Untrusted."]}]));
    let env = Env::new(&mock);
    let project = env.cwd().join(".pi/extensions");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::copy(fixture("marker.ts"), project.join("marker.ts")).unwrap();
    let undecided = env.cwd().join("undecided.ts");
    std::fs::write(
        &undecided,
        "export default function (pi) {\n\tpi.on(\"project_trust\", async () => { throw new Error(\"no idea\"); });\n\tpi.on(\"project_trust\", async () => ({ trusted: \"undecided\", remember: true }));\n}\n",
    )
    .unwrap();
    let marker = env.path("marker.txt");
    let mut command = with_extension(&env, &[], &undecided, "hi");
    with_host(&mut command, &path);
    command.env("PI_TEST_MARKER", &marker);
    let (code, stdout, stderr) = run(&mut command);
    assert_eq!((code, stdout.as_str()), (0, "Untrusted.\n"), "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "Warning: Extension \"{}\" project_trust error: no idea\n",
            undecided.display()
        )
    );
    assert!(!marker.exists(), "an undecided project's extension loaded");
    assert!(!env.path("agent/trust.json").exists());
}

/// An untrusted project's extensions are left out of the load, but the extensions that do load
/// still run in the project's folder, as in Pi: `pi.exec` runs in the session's folder, not in
/// the empty stand-in that keeps the project's extensions away from the loader.
#[test]
fn the_extensions_of_an_untrusted_project_run_in_its_folder() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "greet", "arguments": "{\"name\":\"Ada\"}"}]},
        {"text": ["Greeted."]},
    ]));
    let env = Env::new(&mock);
    let project = env.cwd().join(".pi/extensions");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::copy(fixture("marker.ts"), project.join("marker.ts")).unwrap();
    let marker = env.path("marker.txt");
    let mut command = with_extension(&env, &[], &fixture("greet.ts"), "greet Ada");
    with_host(&mut command, &path);
    command.env("PI_TEST_MARKER", &marker);
    let (code, _, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert!(!marker.exists(), "the untrusted project's extension loaded");
    assert_eq!(
        std::fs::read_to_string(env.cwd().join("greeted.txt")).unwrap(),
        format!("Ada in {}", env.cwd().canonicalize().unwrap().display()),
        "pi.exec did not run in the session's folder"
    );
}

/// The attack: `pi replay --config current` reads today's configuration from the recorded
/// command line, whose `-e` extension would trust (and remember) a project that asks for trust
/// today. Reading a configuration starts no extension: nobody is asked, nothing is remembered.
#[test]
fn a_replay_with_todays_configuration_asks_no_extension_about_trust() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["Recorded."]}]));
    let env = Env::new(&mock);
    let cassette = env.path("plain.jsonl");
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &fixture("trusting.ts"),
        "hi",
    );
    with_host(&mut command, &path);
    let (code, _, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    let store = env.path("agent/trust.json");
    assert!(!store.exists(), "a folder that needs no trust asked");
    std::fs::create_dir_all(env.cwd().join(".pi/prompts")).unwrap();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_pi"));
    command
        .args(["replay", "--config", "current"])
        .arg(&cassette)
        .current_dir(env.cwd())
        .env("HOME", env.path("home"))
        .env("PI_CODING_AGENT_DIR", env.path("agent"))
        .env("PI_PACKAGE_DIR", env.path("pkg"));
    with_host(&mut command, &path);
    let (_, _, stderr) = run(&mut command);
    assert!(
        !store.exists(),
        "today's configuration asked the extension: {stderr}"
    );
}
