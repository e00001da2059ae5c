//! Session files refused before anything runs. One whose stored working directory no longer
//! exists: outside interactive mode Pi
//! refuses it before anything else, with exit code 1 and the three lines below on stderr (texts
//! taken from Pi 0.73.1 run the same way in print, json and rpc modes).

use crate::common::{Env, MockLlm};
use serde_json::json;

#[test]
fn a_session_whose_stored_cwd_is_gone_is_refused_in_every_mode() {
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    let root = env.path("").canonicalize().unwrap();
    let gone = root.join("gone");
    let header = json!({"type": "session", "version": 3, "id": "0193f0e0-0000-7000-8000-000000000003",
                        "timestamp": "2025-01-01T00:00:00.000Z", "cwd": gone});
    let user = r#"{"type":"message","id":"c1000001","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1735689601000}}"#;
    // A line Pi skips without a word: nothing is said about it before the refusal either.
    let skipped = r#"{"type":"custom","id":"c1000002"} trailing"#;
    let text = format!("{header}\n{user}\n{skipped}\n");
    std::fs::write(root.join("s.jsonl"), &text).unwrap();
    let expected = format!(
        "Stored session working directory does not exist: {}\nSession file: {}\nCurrent working directory: {}\n",
        gone.display(),
        root.join("s.jsonl").display(),
        root.join("cwd").display()
    );
    refused_in_every_mode(&env, &root.join("s.jsonl"), &expected);
    assert!(mock.requests().is_empty());
}

/// A file with content but no session header: Pi 1.5.2 refuses it in every mode with exit 1 and
/// one line naming the resolved path, and leaves it as it was, nothing written beside it (run
/// the same way against 1.5.2; 0.73.1 truncated such a file, and we used to move it aside).
#[test]
fn a_file_that_is_not_a_session_is_refused_untouched_in_every_mode() {
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    let root = env.path("").canonicalize().unwrap();
    let text = "precious notes\n{\"type\":\"message\"}\n";
    std::fs::write(root.join("notes.jsonl"), text).unwrap();
    let expected = format!(
        "Error: Session file is not a valid pi session: {}\n",
        root.join("notes.jsonl").display()
    );
    refused_in_every_mode(&env, &root.join("notes.jsonl"), &expected);
    let beside: Vec<String> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("notes.jsonl") && name != "notes.jsonl")
        .collect();
    assert!(
        beside.is_empty(),
        "nothing is written beside it: {beside:?}"
    );
    assert!(mock.requests().is_empty());
}

/// Opens `session` (a file beside the working directory) in print, json and rpc modes: each
/// exits 1 with `expected` on stderr, prints nothing and leaves the file as it was.
fn refused_in_every_mode(env: &Env, session: &std::path::Path, expected: &str) {
    let text = std::fs::read_to_string(session).unwrap();
    let name = session.file_name().unwrap().to_string_lossy();
    let argument = format!("../{name}");
    let cases: [(&[&str], Option<&str>); 3] = [
        (&["-p", "hello"], None),
        (&["--mode", "json", "hello"], None),
        (
            &["--mode", "rpc"],
            Some("{\"type\":\"get_state\",\"id\":\"s\"}\n"),
        ),
    ];
    for (mode, stdin) in cases {
        let mut args = mode.to_vec();
        args.extend(["--session", argument.as_str()]);
        let out = env.run_with_stdin(&args, stdin);
        assert_eq!(out.code, 1, "{mode:?}: {}", out.stderr);
        assert_eq!(out.stderr, expected, "{mode:?}");
        assert_eq!(out.stdout, "", "{mode:?}");
        assert_eq!(
            std::fs::read_to_string(session).unwrap(),
            text,
            "{mode:?}: the file is left as it was"
        );
    }
}
