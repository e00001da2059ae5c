//! A session file whose stored working directory no longer exists: outside interactive mode Pi
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
        args.extend(["--session", "../s.jsonl"]);
        let out = env.run_with_stdin(&args, stdin);
        assert_eq!(out.code, 1, "{mode:?}: {}", out.stderr);
        assert_eq!(out.stderr, expected, "{mode:?}");
        assert_eq!(out.stdout, "", "{mode:?}");
        assert_eq!(
            std::fs::read_to_string(root.join("s.jsonl")).unwrap(),
            text,
            "{mode:?}: the file is left as it was"
        );
    }
    assert!(mock.requests().is_empty());
}
