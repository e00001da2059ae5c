//! Pi 1.5.2's command line (checked against 1.5.2's `cli/args.js`, `main.js`,
//! `modes/print-mode.js` and the kit's cli_flags_152 and print_length_exit traces): help,
//! version and the model listing on stdout, `--provider` without `--model` refused before any
//! request, a cut answer in print mode exiting 1, `--session-id`, `--name`, `--exclude-tools`,
//! `--tools` patterns and `+name`/`-name` entries, `--` ending the options, and the refusal of an
//! unknown option or mode.

use crate::common::{Env, MockLlm};
use serde_json::{json, Value};

#[test]
fn help_version_and_model_listing_print_on_stdout() {
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    let out = env.run(&["--version"]);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (0, format!("{}\n", pi_cli::VERSION).as_str(), "")
    );
    let out = env.run(&["-p", "--version"]);
    assert_eq!(out.stdout, format!("{}\n", pi_cli::VERSION));
    let out = env.run(&["--help"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""));
    assert!(
        out.stdout.starts_with("pi - AI coding assistant"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("--session-id <id>"), "{}", out.stdout);
    // Only a plain metadata command keeps stdout: with --print or --mode, stdout is the run's.
    let out = env.run(&["--mode", "json", "--help"]);
    assert_eq!(out.stdout, "");
    assert!(out.stderr.starts_with("pi - AI coding assistant"));
    let out = env.run(&["--list-models", "rsn"]);
    assert_eq!(
        (out.stdout.as_str(), out.stderr.as_str()),
        (
            "provider  model          context  max-out  thinking  images\n\
             mock      mock-reasoner  128K     16.4K    yes       no    \n",
            ""
        )
    );
}

#[test]
fn provider_without_model_is_refused_before_any_request() {
    let mock = MockLlm::start(&json!([{"text": ["never"]}]));
    let env = Env::new(&mock);
    let out = env.run(&[
        "--provider",
        "mock",
        "--mode",
        "json",
        "--no-session",
        "-p",
        "Hi",
    ]);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (
            1,
            "",
            "Error: --provider requires --model (for example: --provider mock --model <pattern>)\n"
        )
    );
    assert!(mock.requests().is_empty());
}

#[test]
fn a_cut_answer_prints_its_text_says_so_and_exits_1_in_print_mode() {
    let mock = MockLlm::start(&json!([
        {"text": ["This answer was cut"], "finish_reason": "length"},
        {"text": ["A complete answer."]},
    ]));
    let env = Env::new(&mock);
    env.write_agent(
        "settings.json",
        &json!({"compaction": {"enabled": false}}).to_string(),
    );
    let args = [
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--no-session",
        "-p",
    ];
    let out = env.run(&[&args[..], &["Hi"]].concat());
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (
            1,
            "This answer was cut\n",
            "Response was truncated: the model reached its output token limit.\n"
        )
    );
    let out = env.run(&[&args[..], &["Hi again"]].concat());
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (0, "A complete answer.\n", "")
    );
}

#[test]
fn session_id_and_name_make_the_new_sessions_header_and_first_entry() {
    let mock = MockLlm::start(&json!([{"text": ["Named."]}, {"text": ["Again."]}]));
    let env = Env::new(&mock);
    let id = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
    let base = [
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--mode",
        "json",
    ];
    let out = env.run(
        &[
            &base[..],
            &["--session-id", id, "-n", "Named run", "-p", "Hi"],
        ]
        .concat(),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        out.stderr,
        format!("Warning: No project session found with id '{id}'; creating a new session with that id.\n")
    );
    let files = env.session_files();
    assert_eq!(files.len(), 1);
    assert!(files[0]
        .to_string_lossy()
        .ends_with(&format!("_{id}.jsonl")));
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let entries: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(
        (entries[0]["type"].as_str(), entries[0]["id"].as_str()),
        (Some("session"), Some(id))
    );
    assert_eq!(entries[1]["type"], "session_info");
    assert_eq!(entries[1]["name"], "Named run");
    assert_eq!(entries[1]["parentId"], Value::Null);
    assert_eq!(entries[2]["type"], "model_change");
    // The same id again opens that session: no warning, one file, the conversation goes on.
    let out = env.run(&[&base[..], &["--session-id", id, "-p", "Again"]].concat());
    assert_eq!((out.code, out.stderr.as_str()), (0, ""));
    assert_eq!(env.session_files().len(), 1);
    let requests = mock.requests();
    assert_eq!(requests[1]["messages"].as_array().unwrap().len(), 4);
    // A blank name is refused.
    let out = env.run(&[&base[..], &["--no-session", "--name", "  ", "-p", "Hi"]].concat());
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (1, "Error: --name requires a non-empty value\n")
    );
}

/// A run given its new session's id (`--session-id`, on disk or with `--no-session`) is
/// reproduced by `pi replay --check`: the replay's session has that id, not one it draws.
#[test]
fn a_recording_of_a_session_given_its_id_replays_exactly() {
    let mock = MockLlm::start(&json!([{"text": ["Named."]}, {"text": ["Kept."]}]));
    let env = Env::new(&mock);
    let id = "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b";
    for (name, more) in [("on-disk", &[][..]), ("in-memory", &["--no-session"][..])] {
        let cassette = env.path(&format!("{name}.jsonl"));
        let cassette = cassette.to_str().unwrap();
        let args = [
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--mode",
            "json",
        ];
        let given = ["--session-id", id, "-n", "Named run", "--record", cassette];
        let out = env.run(&[&args[..], more, &given, &["-p", "Hi"]].concat());
        assert_eq!(out.code, 0, "{}", out.stderr);
        let check = env.run(&["replay", "--check", cassette]);
        assert_eq!(check.code, 0, "{name}: {}{}", check.stdout, check.stderr);
    }
}

#[test]
fn fork_with_a_session_id_forks_into_that_id_unless_this_directory_has_it() {
    // 1.5.2's `createSessionManager`: `--fork` with `--session-id` forks into a session with
    // that id, and refuses an id this directory's sessions already have.
    let mock = MockLlm::start(&json!([{"text": ["First."]}, {"text": ["Forked."]}]));
    let env = Env::new(&mock);
    let base = [
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--mode",
        "json",
    ];
    let out = env.run(&[&base[..], &["-p", "Hi"]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let source = env.session_files().pop().unwrap();
    let source_text = source.display().to_string();
    let id = "fork-1";
    let fork = [&base[..], &["--fork", &source_text, "--session-id", id]].concat();
    let out = env.run(&[&fork[..], &["-p", "Again"]].concat());
    assert_eq!((out.code, out.stderr.as_str()), (0, ""));
    let files = env.session_files();
    assert_eq!(files.len(), 2);
    let forked = files
        .iter()
        .find(|f| f.to_string_lossy().ends_with(&format!("_{id}.jsonl")))
        .unwrap_or_else(|| panic!("{files:?}"));
    let header: Value = serde_json::from_str(
        std::fs::read_to_string(forked)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(header["id"], id);
    assert_eq!(header["parentSession"], json!(source_text));
    assert_eq!(mock.requests()[1]["messages"].as_array().unwrap().len(), 4);
    let out = env.run(&[&fork[..], &["-p", "Once more"]].concat());
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (1, "", "Session already exists with id 'fork-1'\n")
    );
    assert_eq!(mock.requests().len(), 2);
    assert_eq!(env.session_files().len(), 2);
}

#[test]
fn tool_selection_takes_patterns_modifiers_and_exclusions() {
    let mock = MockLlm::start(&json!([
        {"text": ["a"]}, {"text": ["b"]}, {"text": ["c"]}, {"text": ["d"]}, {"text": ["e"]},
    ]));
    let env = Env::new(&mock);
    let base = [
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--no-session",
    ];
    for (flags, expected) in [
        (
            vec!["--exclude-tools", "bash"],
            vec!["read", "edit", "write"],
        ),
        (
            vec!["--tools", "+grep,-write"],
            vec!["read", "bash", "edit", "grep"],
        ),
        (vec!["--tools", "re*,bash"], vec!["bash", "read"]),
        (
            vec!["-t", "re*,bash,grep", "-xt", "r*"],
            vec!["bash", "grep"],
        ),
    ] {
        let out = env.run(&[&base[..], &flags[..], &["-p", "Hi"]].concat());
        assert_eq!(out.code, 0, "{flags:?}: {}", out.stderr);
        let declared = mock.declared_tools();
        assert_eq!(declared.last().unwrap(), &expected, "{flags:?}");
    }
    let out = env.run(&[&base[..], &["--tools", "read,+grep", "-p", "Hi"]].concat());
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (
            1,
            "Error: --tools: tool names cannot be mixed with +name or -name entries\n"
        )
    );
}

/// The settings' `defaultTools` are the run's default tools, as 1.5.2's `createAgentSession`
/// reads them for the binary too: plain names replace Pi's defaults, `+name`/`-name` change
/// them, and `--tools` modifiers change that selection (both lists as 1.5.2 printed them to
/// its mock model).
#[test]
fn the_settings_default_tools_are_the_runs_defaults() {
    let mock = MockLlm::start(&json!([{"text": ["a"]}, {"text": ["b"]}]));
    let env = Env::new(&mock);
    std::fs::write(
        env.path("agent").join("settings.json"),
        json!({"defaultTools": ["read", "+grep", "-bash"]}).to_string(),
    )
    .unwrap();
    let base = [
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--no-session",
    ];
    for (flags, expected) in [
        (vec![], vec!["read", "grep"]),
        (vec!["--tools", "+ls,-read"], vec!["grep", "ls"]),
    ] {
        let out = env.run(&[&base[..], &flags[..], &["-p", "Hi"]].concat());
        assert_eq!(out.code, 0, "{flags:?}: {}", out.stderr);
        let declared = mock.declared_tools();
        assert_eq!(declared.last().unwrap(), &expected, "{flags:?}");
    }
}

#[test]
fn a_double_dash_ends_the_options() {
    let mock = MockLlm::start(&json!([{"text": ["ok"]}]));
    let env = Env::new(&mock);
    let out = env.run(&[
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--no-session",
        "-p",
        "--",
        "- a point",
    ]);
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "ok\n"),
        "{}",
        out.stderr
    );
    let requests = mock.requests();
    let messages = requests[0]["messages"].as_array().unwrap();
    assert_eq!(messages.last().unwrap()["content"][0]["text"], "- a point");
}

/// Pi 1.5 writes a new session's file at its first user message (`_hasConversation`), not at
/// the first answer: a run stopped while the model still thinks leaves its prompt on disk.
#[test]
fn the_session_file_appears_with_the_first_user_message() {
    let mock = MockLlm::start(&json!([{"text": ["Late."], "delay_ms": 20_000}]));
    let env = Env::new(&mock);
    let mut child = env
        .command(&[
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--mode",
            "json",
            "-p",
            "Hi",
        ])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut waited = 0;
    while mock.requests().is_empty() && waited < 200 {
        std::thread::sleep(std::time::Duration::from_millis(50));
        waited += 1;
    }
    // The lock file beside it is ours, not Pi's.
    let files: Vec<_> = env
        .session_files()
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(files.len(), 1, "no session file while the model answers");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let roles: Vec<String> = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "message")
        .map(|e| e["message"]["role"].as_str().unwrap().to_owned())
        .collect();
    assert!(roles.contains(&"user".to_owned()), "{text}");
    assert!(!roles.contains(&"assistant".to_owned()), "{text}");
}

/// An unknown option and an invalid `--mode` are refused with Pi 1.5.2's one line and exit 1
/// before anything else (texts from 1.5.2 run the same way); other usage errors stay clap's.
#[test]
fn unknown_options_and_modes_are_refused_with_pis_texts() {
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    let cases: [(&[&str], &str); 3] = [
        (&["--bogus", "-p", "hi"], "Error: Unknown option: --bogus\n"),
        (&["-x"], "Error: Unknown option: -x\n"),
        (
            &["--mode", "bogus", "-p", "hi"],
            "Error: Invalid mode \"bogus\". Valid values: text, json, rpc\n",
        ),
    ];
    for (args, expected) in cases {
        let out = env.run(args);
        assert_eq!(
            (out.code, out.stdout.as_str(), out.stderr.as_str()),
            (1, "", expected),
            "{args:?}"
        );
    }
    assert!(mock.requests().is_empty());
}
