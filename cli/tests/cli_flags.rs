//! The `pi` binary end to end: model selection, `@file` arguments, piped stdin,
//! `--list-models`, `--resume`, `--export`, `--offline` and their error texts, against the
//! conformance kit's mock LLM. Every expected text was checked against Pi 0.73.1 run the same
//! way (fresh HOME and agent dir, models.json pointing at the mock, stdin not a terminal); the
//! streams of `--version`, `--export` and a plain `--list-models` are Pi 1.5.2's (stdout).
//! Its modules: session files refused before anything runs, one whose stored working
//! directory is gone or that is not a session (`missing_cwd`), what a
//! shell command sees of pi's environment (`shell_env`), the system prompt recorded as a
//! transcript message (`system_message`, checked against Pi 1.5.2), Pi 1.5.2's event and
//! message fields (`events_152`), retry and recovery as Pi 1.5.2 does them (`recovery`), and the
//! flags and outputs Pi 1.5.2 changed (`pi152_cli`) and what its tools give and see (`pi152_tools`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
#[path = "cli_flags/events_152.rs"]
mod events_152;
#[path = "cli_flags/missing_cwd.rs"]
mod missing_cwd;
#[path = "cli_flags/pi152_cli.rs"]
mod pi152_cli;
#[path = "cli_flags/pi152_tools.rs"]
mod pi152_tools;
#[path = "cli_flags/project_trust.rs"]
mod project_trust;
#[path = "cli_flags/recovery.rs"]
mod recovery;
#[path = "cli_flags/shell_env.rs"]
mod shell_env;
#[path = "cli_flags/skills.rs"]
mod skills;
#[path = "cli_flags/system_message.rs"]
mod system_message;
#[path = "cli_flags/system_prompt_files.rs"]
mod system_prompt_files;

use common::{Env, MockLlm};
use serde_json::{json, Value};

/// The text of the last user message of a request body.
fn last_user_text(body: &Value) -> String {
    let message = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .unwrap();
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str()).collect(),
        _ => String::new(),
    }
}

fn text_script(texts: &[&str]) -> Value {
    Value::Array(texts.iter().map(|t| json!({"text": t})).collect())
}

#[test]
fn unknown_models_and_providers_are_errors() {
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    let out = env.run(&["--model", "nosuch", "-p", "hi"]);
    assert_eq!((out.code, out.stdout.as_str()), (1, ""));
    assert_eq!(
        out.stderr,
        "Error: Model \"nosuch\" not found. Use --list-models to see available models.\n"
    );
    let out = env.run(&["--provider", "nope", "--model", "x", "-p", "hi"]);
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr,
        "Error: Unknown provider \"nope\". Use --list-models to see available providers/models.\n"
    );
    let out = env.run(&["--model", "mock-reasoner:bogus", "-p", "hi"]);
    assert_eq!(out.stderr, "Error: Model \"mock-reasoner:bogus\" not found. Use --list-models to see available models.\n");
    let out = env.run(&["--api-key", "abc", "-p", "hi"]);
    assert_eq!(out.code, 1);
    assert_eq!(out.stderr, "Error: --api-key requires a model to be specified via --model, --provider/--model, or --models\n");
    assert!(mock.requests().is_empty());
}

#[test]
fn custom_ids_thinking_suffixes_and_invalid_levels() {
    let mock = MockLlm::start(&text_script(&["one", "two", "three"]));
    let env = Env::new(&mock);
    let out = env.run(&["--provider", "mock", "--model", "nosuch", "-p", "hi"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, "one\n"));
    assert_eq!(
        out.stderr,
        "Warning: Model \"nosuch\" not found for provider \"mock\". Using custom model id.\n"
    );
    let out = env.run(&["--model", "mock-model", "--thinking", "bogus", "-p", "hi"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, "two\n"));
    assert_eq!(out.stderr, "Warning: Invalid thinking level \"bogus\". Valid values: off, minimal, low, medium, high, xhigh, max\n");
    let out = env.run(&["--model", "reasoner:high", "-p", "hi"]);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (0, "three\n", "")
    );
    let requests = mock.requests();
    assert_eq!(requests[0]["model"], "nosuch");
    assert_eq!(requests[2]["model"], "mock-reasoner");
    assert_eq!(requests[2]["reasoning_effort"], "high");
}

#[test]
fn without_any_model_the_first_prompt_fails_for_want_of_a_key() {
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    env.write_agent("models.json", r#"{"providers": {}}"#);
    let expected = format!(
        "No API key found for the selected model.\n\n{}\n",
        env.login_help()
    );
    let out = env.run(&["-p", "hi"]);
    assert_eq!((out.code, out.stdout.as_str()), (1, ""));
    assert_eq!(out.stderr, expected);
    let out = env.run(&["--mode", "json", "hi"]);
    assert_eq!(out.code, 1);
    let header: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(header["type"], "session");
    assert_eq!(out.stderr, expected);
    let out = env.run(&["--model", "claude-opus-4-5", "-p", "hi"]);
    assert_eq!(
        out.stderr,
        format!("No API key found for anthropic.\n\n{}\n", env.login_help())
    );
    let out = env.run(&["-p"]);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (0, "", "")
    );
    // Pi 1.5.2 prints a plain --list-models on stdout.
    let out = env.run(&["--list-models"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""));
    assert_eq!(
        out.stdout,
        format!("No models available. {}\n", env.login_help())
    );
}

/// A model id wider than a formatting width may be (65,535) made the table panic.
#[test]
fn list_models_prints_an_id_longer_than_any_column_whole() {
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    let id = "m".repeat(70_000);
    let mut models = pi_testkit::demo::models_json(mock.port);
    models["providers"]["mock"]["models"]
        .as_array_mut()
        .unwrap()
        .push(json!({"id": id}));
    env.write_agent("models.json", &models.to_string());
    let out = env.run(&["--list-models"]);
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
    assert_eq!(out.code, 0);
    assert!(out.stdout.contains(&format!("mock            {id}  128K")));
}

#[test]
fn list_models_prints_pis_table() {
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    let out = env.run(&["--list-models"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""));
    assert_eq!(
        out.stdout,
        "provider        model          context  max-out  thinking  images\n\
         mock            mock-model     128K     16.4K    no        no    \n\
         mock            mock-reasoner  128K     16.4K    yes       no    \n\
         mock-anthropic  mock-claude    200K     8.2K     yes       no    \n"
    );
    let out = env.run(&["--list-models", "rsn"]);
    assert_eq!(
        out.stdout,
        "provider  model          context  max-out  thinking  images\n\
         mock      mock-reasoner  128K     16.4K    yes       no    \n"
    );
    let out = env.run(&["--list-models", "zzz"]);
    assert_eq!(out.stdout, "No models matching \"zzz\"\n");
    // With --print the listing stays off stdout, as the run's output would be there.
    let out = env.run(&["-p", "--list-models", "zzz"]);
    assert_eq!(
        (out.stdout.as_str(), out.stderr.as_str()),
        ("", "No models matching \"zzz\"\n")
    );
    let out = env.run(&["--version"]);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (0, format!("{}\n", pi_cli::VERSION).as_str(), "")
    );
}

#[test]
fn file_arguments_and_piped_stdin_make_the_first_message() {
    let mock = MockLlm::start(&text_script(&["first", "second", "third"]));
    let env = Env::new(&mock);
    env.write("a.txt", b"line one\nline two\n");
    env.write("empty.txt", b"");
    env.write("bad.txt", b"\xff\xfeabc");
    let cwd = env.cwd().display().to_string();
    let out = env.run_with_stdin(
        &[
            "--model",
            "mock-model",
            "@a.txt",
            "@empty.txt",
            "@bad.txt",
            "Msg1",
            "Msg2",
        ],
        Some("  piped text \n\n"),
    );
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (0, "second\n", "")
    );
    let requests = mock.requests();
    assert_eq!(
        last_user_text(&requests[0]),
        format!(
            "piped text<file name=\"{cwd}/a.txt\">\nline one\nline two\n\n</file>\n\
             <file name=\"{cwd}/bad.txt\">\n\u{fffd}\u{fffd}abc\n</file>\nMsg1"
        )
    );
    assert_eq!(last_user_text(&requests[1]), "Msg2");
    let out = env.run_with_stdin(&["--model", "mock-model"], Some("   \n"));
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (0, "", "")
    );
    assert_eq!(mock.requests().len(), 2);
}

#[test]
fn images_are_attached_with_their_notes() {
    let mock = MockLlm::start(&text_script(&["seen"]));
    let env = Env::new(&mock);
    env.write("small.png", &png(4, 3));
    env.write("big.png", &png(3000, 1000));
    let cwd = env.cwd().display().to_string();
    let out = env.run(&[
        "--model",
        "mock-claude",
        "-p",
        "@small.png",
        "@big.png",
        "Describe",
    ]);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (0, "seen\n", "")
    );
    assert_eq!(
        last_user_text(&mock.requests()[0]),
        format!(
            "<file name=\"{cwd}/small.png\"></file>\n<file name=\"{cwd}/big.png\">[Image: original 3000x1000, \
             displayed at 2000x667. Multiply coordinates by 1.50 to map to original image.]</file>\nDescribe\
             (image omitted: model does not support images)"
        )
    );
    let session = std::fs::read_to_string(&env.session_files()[0]).unwrap();
    let user: Value = session
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["message"]["role"] == "user")
        .unwrap();
    let images: Vec<&str> = user["message"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["mimeType"].as_str())
        .collect();
    assert_eq!(images, ["image/png", "image/png"]);
}

#[test]
fn file_argument_errors() {
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    std::fs::create_dir(env.cwd().join("d")).unwrap();
    let cwd = env.cwd().display().to_string();
    let out = env.run(&["--model", "nosuchmodel", "-p", "@nosuch.txt", "hi"]);
    assert_eq!((out.code, out.stdout.as_str()), (1, ""));
    assert_eq!(
        out.stderr,
        format!("Error: File not found: {cwd}/nosuch.txt\n")
    );
    let out = env.run(&["--mode", "rpc", "@a.txt"]);
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr,
        "Error: @file arguments are not supported in RPC mode\n"
    );
    // Pi crashes with a stack trace here; this build names the file.
    let out = env.run(&["--model", "mock-model", "-p", "@d", "hi"]);
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr,
        format!(
            "Error: Could not read file {cwd}/d: EISDIR: illegal operation on a directory, read\n"
        )
    );
    let out = env.run(&["--fork", "x", "--continue", "--no-session"]);
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr,
        "Error: --fork cannot be combined with --continue, --no-session\n"
    );
    assert!(mock.requests().is_empty());
}

#[test]
fn scopes_sessions_and_defaults_choose_the_model() {
    let mock = MockLlm::start(&text_script(&["a", "b", "c", "d"]));
    let env = Env::new(&mock);
    let out = env.run(&["--models", "nomatch*,mock-reasoner:bogus", "-p", "hi"]);
    assert_eq!(out.code, 0);
    assert_eq!(
        out.stderr,
        "Warning: No models match pattern \"nomatch*\"\n\
         Warning: Invalid thinking level \"bogus\" in pattern \"mock-reasoner:bogus\". Using default instead.\n"
    );
    let out = env.run(&["--models", "mock/*:low", "-p", "hi"]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""));
    let out = env.run(&["--continue", "-p", "again"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, "c\n"));
    env.write_agent(
        "settings.json",
        r#"{"defaultProvider": "mock-anthropic", "defaultModel": "mock-claude"}"#,
    );
    let out = env.run(&["--no-session", "-p", "hi"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, "d\n"));
    let requests = mock.requests();
    assert_eq!(requests[0]["model"], "mock-reasoner");
    assert_eq!(requests[0]["reasoning_effort"], "medium");
    assert_eq!(requests[1]["model"], "mock-model");
    assert_eq!(requests[2]["model"], "mock-model");
    assert_eq!(requests[3]["model"], "mock-claude");
}

#[test]
fn export_writes_html_and_reports_like_pi() {
    let mock = MockLlm::start(&text_script(&["Hello <there>"]));
    let env = Env::new(&mock);
    assert_eq!(env.run(&["--model", "mock-model", "-p", "hi"]).code, 0);
    let session = env.session_files()[0].clone();
    let file = session.display().to_string();
    let stem = session.file_stem().unwrap().to_string_lossy().into_owned();
    let out = env.run(&["--export", &file]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""));
    assert_eq!(out.stdout, format!("Exported to: pi-session-{stem}.html\n"));
    let html = std::fs::read_to_string(env.cwd().join(format!("pi-session-{stem}.html"))).unwrap();
    assert!(html.contains("<pre>Hello &lt;there&gt;</pre>"), "{html}");
    let out = env.run(&["--export", &file, "mine.html"]);
    assert_eq!(out.stdout, "Exported to: mine.html\n");
    assert!(env.cwd().join("mine.html").is_file());
    let out = env.run(&["--export", &file, "out/x.html"]);
    assert_eq!(out.code, 1);
    assert_eq!(
        out.stderr,
        "Error: ENOENT: no such file or directory, open 'out/x.html'\n"
    );
    let out = env.run(&["--export", "nosuch.jsonl"]);
    assert_eq!(
        (out.code, out.stderr.as_str()),
        (1, "Error: File not found: nosuch.jsonl\n")
    );
    env.write("garbage.jsonl", b"garbage\n");
    let out = env.run(&["--export", "garbage.jsonl"]);
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "Exported to: pi-session-garbage.html\n")
    );
    assert_eq!(
        std::fs::read(env.cwd().join("garbage.jsonl")).unwrap(),
        b"garbage\n"
    );
}

#[test]
fn resume_lists_the_sessions_of_the_directory() {
    let mock = MockLlm::start(&text_script(&["answer"]));
    let env = Env::new(&mock);
    let cwd = env.cwd().display().to_string();
    let out = env.run(&["--resume"]);
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, format!("No sessions found in {cwd}\n").as_str())
    );
    assert_eq!(
        env.run(&["--model", "mock-model", "-p", "Fix the\ntests"])
            .code,
        0
    );
    let out = env.run(&["--resume"]);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines[0], format!("Sessions in {cwd} (newest first):"));
    let id = std::fs::read_to_string(&env.session_files()[0]).unwrap();
    let id: Value = serde_json::from_str(id.lines().next().unwrap()).unwrap();
    // Every message entry counts, the system message too (1.5.2's listSessions).
    assert!(
        lines[1].ends_with(&format!(
            "  3 messages  {}  Fix the tests",
            id["id"].as_str().unwrap()
        )),
        "{}",
        lines[1]
    );
    assert_eq!(&lines[2..], ["", "Resume one with: pi --session <id>"]);
}

#[test]
fn offline_reaches_the_commands_tools_run() {
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"id": "c1", "name": "bash", "arguments": {"command": "echo offline=$PI_OFFLINE skip=$PI_SKIP_VERSION_CHECK"}}]},
        {"text": "done"}
    ]));
    let env = Env::new(&mock);
    let out = env.run(&["--offline", "--model", "mock-model", "-p", "run it"]);
    assert_eq!((out.code, out.stdout.as_str()), (0, "done\n"));
    let last = mock.requests().pop().unwrap();
    let result = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap();
    assert_eq!(result["content"], "offline=1 skip=1\n");
}

/// A solid red PNG of the given size.
fn png(width: u32, height: u32) -> Vec<u8> {
    fn chunk(out: &mut Vec<u8>, kind: &[u8], data: &[u8]) {
        out.extend((data.len() as u32).to_be_bytes());
        let start = out.len();
        out.extend(kind);
        out.extend(data);
        let crc = crc32(&out[start..]);
        out.extend(crc.to_be_bytes());
    }
    let mut row = vec![0u8];
    for _ in 0..width {
        row.extend([255, 0, 0]);
    }
    let raw = row.repeat(height as usize);
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut header = Vec::new();
    header.extend(width.to_be_bytes());
    header.extend(height.to_be_bytes());
    header.extend([8, 2, 0, 0, 0]);
    chunk(&mut out, b"IHDR", &header);
    chunk(&mut out, b"IDAT", &zlib_stored(&raw));
    chunk(&mut out, b"IEND", &[]);
    out
}

/// zlib data in stored (uncompressed) blocks.
fn zlib_stored(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = data.chunks(65_535).collect();
    for (i, block) in blocks.iter().enumerate() {
        out.push(u8::from(i + 1 == blocks.len()));
        let len = block.len() as u16;
        out.extend(len.to_le_bytes());
        out.extend((!len).to_le_bytes());
        out.extend(*block);
    }
    let (mut a, mut b) = (1u32, 0u32);
    for byte in data {
        a = (a + u32::from(*byte)) % 65_521;
        b = (b + a) % 65_521;
    }
    out.extend(((b << 16) | a).to_be_bytes());
    out
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = 0xFFFF_FFFFu32;
    for byte in data {
        crc ^= u32::from(*byte);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}
