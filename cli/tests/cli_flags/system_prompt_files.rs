//! The system prompt files as Pi 1.5.2 reads them (its resource loader's
//! `discoverSystemPromptFile`/`discoverAppendSystemPromptFile`): the agent directory's
//! `SYSTEM.md` replaces the preamble and its `APPEND_SYSTEM.md` is the addendum; a project's
//! `.pi/SYSTEM.md` and `.pi/APPEND_SYSTEM.md` take their place only when the project is trusted;
//! the flags stop the discovery. A recording keeps the prompt it sent, so it replays with the
//! files gone or changed (the conformance case `system_prompt_files` checks the texts against
//! 1.5.2's requests).

use crate::common::{Env, MockLlm};
use crate::text_script;
use serde_json::Value;

/// The system prompt the mock's latest request carried (the chat completions body's leading
/// message), after checking that the run succeeded.
fn prompt_of(env: &Env, mock: &MockLlm, flags: &[&str]) -> String {
    let mut args = vec![
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--mode",
        "json",
    ];
    args.extend(flags);
    args.extend(["-p", "hi"]);
    let out = env.run(&args);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let request: Value = mock.requests().last().unwrap().clone();
    assert_eq!(request["messages"][0]["role"], "system", "{request}");
    request["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn cwd_section(env: &Env) -> String {
    format!("<cwd>\n{}\n</cwd>", env.cwd().display())
}

#[test]
fn the_agent_dirs_files_make_the_prompt_and_the_flags_stop_their_discovery() {
    let mock = MockLlm::start(&text_script(&["1", "2", "3"]));
    let env = Env::new(&mock);
    env.write_agent("SYSTEM.md", "\u{feff}You answer in one word.\n");
    env.write_agent("APPEND_SYSTEM.md", "Never use tools.");
    assert_eq!(
        prompt_of(&env, &mock, &[]),
        format!(
            "You answer in one word.\n\n\n<addendum>\nNever use tools.\n</addendum>\n\n{}",
            cwd_section(&env)
        )
    );
    env.write("extra.md", b"From a file.");
    assert_eq!(
        prompt_of(
            &env,
            &mock,
            &[
                "--system-prompt",
                "Flag prompt.",
                "--append-system-prompt",
                "extra.md"
            ]
        ),
        format!(
            "Flag prompt.\n\n<addendum>\nFrom a file.\n</addendum>\n\n{}",
            cwd_section(&env)
        )
    );
    // An empty --system-prompt keeps Pi's own preamble and SYSTEM.md unread.
    let prompt = prompt_of(&env, &mock, &["--system-prompt", ""]);
    assert!(prompt.starts_with("You are a coding assistant"), "{prompt}");
    assert!(prompt.contains("<addendum>\nNever use tools.\n</addendum>"));
}

#[test]
fn a_projects_files_count_only_when_it_is_trusted() {
    let mock = MockLlm::start(&text_script(&["1", "2"]));
    let env = Env::new(&mock);
    env.write_agent("APPEND_SYSTEM.md", "Global addendum.");
    std::fs::create_dir_all(env.cwd().join(".pi")).unwrap();
    env.write(".pi/APPEND_SYSTEM.md", b"Project addendum.");
    let untrusted = prompt_of(&env, &mock, &[]);
    assert!(
        untrusted.contains("<addendum>\nGlobal addendum.\n</addendum>"),
        "{untrusted}"
    );
    assert!(!untrusted.contains("Project addendum."), "{untrusted}");
    let trusted = prompt_of(&env, &mock, &["--approve"]);
    assert!(
        trusted.contains("<addendum>\nProject addendum.\n</addendum>"),
        "{trusted}"
    );
    assert!(!trusted.contains("Global addendum."), "{trusted}");
}

#[test]
fn a_recording_replays_with_the_files_gone_or_changed() {
    let mock = MockLlm::start(&text_script(&["1"]));
    let env = Env::new(&mock);
    env.write_agent("SYSTEM.md", "Recorded prompt.");
    env.write_agent("APPEND_SYSTEM.md", "Recorded addendum.");
    let cassette = env.path("run.jsonl");
    let cassette = cassette.to_str().unwrap();
    let prompt = prompt_of(&env, &mock, &["--record", cassette]);
    assert!(prompt.starts_with("Recorded prompt.\n\n<addendum>\nRecorded addendum.\n"));
    let replay = || env.run(&["replay", "--check", cassette]);

    std::fs::remove_file(env.path("agent").join("SYSTEM.md")).unwrap();
    env.write_agent("APPEND_SYSTEM.md", "Changed since.");
    let out = replay();
    assert_eq!(out.code, 0, "{}", out.stderr);
    std::fs::remove_file(env.path("agent").join("APPEND_SYSTEM.md")).unwrap();
    let out = replay();
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = env.run(&["replay", "--mode", "json", cassette]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let system = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["type"] == "message_end" && e["message"]["role"] == "system")
        .expect("the replay shows the recorded system message");
    assert_eq!(
        system["message"]["sections"]["preamble"],
        "Recorded prompt."
    );
}
