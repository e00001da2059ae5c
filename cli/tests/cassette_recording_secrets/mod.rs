//! No secret reaches a cassette: keys planted in every place a key comes from, and the user's
//! own redaction rules, then a search of every file the runs wrote; the redacted cassettes
//! still check.

use super::*;

mod replaced;
mod streamed;

/// The words of a recorded print run: `--mode json --record CASSETTE --provider PROVIDER
/// --model MODEL`, then `more`.
fn recording(cassette: &Path, provider: &str, model: &str, more: &[&str]) -> Vec<OsString> {
    let mut args = words(&[
        "--mode",
        "json",
        "--record",
        cassette.to_str().unwrap(),
        "--provider",
        provider,
        "--model",
        model,
    ]);
    args.extend(words(more));
    args
}

/// The run exited 0 (`what` and its output are shown when it did not).
fn succeeded(out: &Output, what: &str) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `pi replay --check CASSETTE` reproduces the recording, offline.
fn replays_and_checks(cassette: &Path) {
    succeeded(&replay_check(cassette), &cassette.display().to_string());
}

/// No file under `root` holds `key` but those `planted` says the test put it in.
fn nowhere_but_planted(root: &Path, key: &str, planted: impl Fn(&Path) -> bool, what: &str) {
    for path in pi_testkit::files_under(root) {
        if planted(&path) {
            continue;
        }
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        assert!(
            !text.contains(key),
            "{what}: the key reached {}",
            path.display()
        );
    }
}

/// The value of the variable a planted header's `${NAME}` names.
const HEADER_SECRET: &str = "planted-header-secret-0123456789";

#[test]
fn planted_keys_never_reach_disk_and_the_redacted_cassette_replays() {
    // One run per place a key comes from: models.json (a literal, an environment variable it
    // names, a `!command`), and auth.json.
    let cases: [(&str, &str); 4] = [
        ("literal", "sk-planted-literal-0123456789"),
        ("env", "sk-planted-env-0123456789"),
        ("command", "sk-planted-command-0123456789"),
        ("auth", "sk-planted-auth-0123456789"),
    ];
    for (source, key) in cases {
        let ws = workspace(json!({"script": [
            {"text": ["Hi"]},
        ]}));
        let agent = ws.root().join("agent");
        let mut models = models_json(ws.port());
        let provider = &mut models["providers"]["mock"];
        // Pi 1.5.2's templates: `$NAME` in the key, `${NAME}` inside a header's value.
        provider["headers"] = match source {
            "env" => json!({"x-api-key": "hdr-${PLANTED_HEADER}"}),
            _ => json!({"x-api-key": key}),
        };
        provider["apiKey"] = match source {
            "literal" => json!(key),
            "env" => json!("$PLANTED_SECRET"),
            "command" => json!(format!("!printf {key}")),
            _ => json!("unused-placeholder-key"),
        };
        std::fs::write(agent.join("models.json"), models.to_string()).unwrap();
        if source == "auth" {
            let auth = json!({"mock": {"type": "api_key", "key": key}});
            std::fs::write(agent.join("auth.json"), auth.to_string()).unwrap();
        }
        let cassette = ws.root().join("cwd").join("planted.jsonl");
        let args = recording(&cassette, "mock", "mock-model", &["-p", "hi"]);
        let out = ws
            .command(pi().as_ref(), &args)
            .env("PLANTED_SECRET", key)
            .env("PLANTED_HEADER", HEADER_SECRET)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{source}: {stderr}");
        // The model really got the key (so the test plants it where it is used).
        let requests = std::fs::read_to_string(ws.root().join("requests.jsonl")).unwrap();
        assert!(
            requests.contains(&format!("Bearer {key}")),
            "{source}: the key was not the one sent"
        );
        if source == "env" {
            let sent: Vec<Value> = requests
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .filter(|v| v.get("event").is_none())
                .collect();
            assert!(!sent.is_empty(), "no request reached the mock");
            for request in &sent {
                let headers = &request["headers"];
                assert_eq!(headers["authorization"], format!("Bearer {key}"));
                assert_eq!(headers["x-api-key"], format!("hdr-{HEADER_SECRET}"));
            }
            nowhere_but_planted(ws.root(), HEADER_SECRET, planted_by_the_test, "header");
        }

        let cassette_text = std::fs::read_to_string(&cassette).unwrap();
        assert!(
            cassette_text.contains("<<secret-"),
            "{source}: placeholders written"
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(!stdout.contains(key), "{source}: the key is in stdout");
        assert!(!stderr.contains(key), "{source}: the key is in stderr");
        // The inputs the test planted the key in, and the mock's own log of what it received,
        // hold it by design (Pi's session files do not: the key is in no message).
        let planted = |path: &Path| {
            let name = path.to_string_lossy();
            name.ends_with("models.json")
                || name.ends_with("auth.json")
                || name.ends_with("requests.jsonl")
        };
        nowhere_but_planted(ws.root(), key, planted, source);

        // Loading and replaying the redacted cassette runs nothing and matches.
        replays_and_checks(&cassette);
    }
}

/// A Chat Completions stream whose text holds `key` cut in two between reads (the mock writes
/// each piece, then waits).
fn stream_with_split_key(key: &str) -> Value {
    let (head, tail) = key.split_at(key.len() / 2);
    json!([
        format!("data: {{\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"mock-model\",\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"The key is {head}"),
        format!("{tail}.\"}},\"finish_reason\":null}}]}}\n\n"),
        "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"mock-model\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":5,\"total_tokens\":15}}\n\ndata: [DONE]\n\n",
    ])
}

/// Files the test itself planted keys in, the mock's log of what it was sent, and Pi's own
/// session files (they hold the conversation, as Pi writes it): everything else must be clean.
fn planted_by_the_test(path: &Path) -> bool {
    let name = path.to_string_lossy();
    name.ends_with("models.json")
        || name.ends_with("auth.json")
        || name.ends_with("requests.jsonl")
        || name.ends_with("notes.txt")
        || name.contains("/sessions/")
}

#[test]
fn keys_planted_everywhere_reach_no_cassette_and_the_runs_still_check() {
    let ws = workspace(json!({
        "files": {"notes.txt": format!("deploy key: {ANTHROPIC_KEY}\n")},
        "script": [
            {"text": ["Noted."]},
            {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
            {"raw_sse": stream_with_split_key(OPENAI_KEY), "chunk_delay_ms": 40},
            {"text": ["Done."]},
        ]
    }));
    let agent = ws.root().join("agent");
    let mut models = models_json(ws.port());
    models["providers"]["mock"]["headers"] = json!({
        "X-Portkey-Api-Key": "${PORTKEY_SECRET_VALUE}",
        "cf-aig-authorization": format!("!printf {GATEWAY_KEY}"),
    });
    std::fs::write(agent.join("models.json"), models.to_string()).unwrap();
    let auth = json!({"groq": {"type": "api_key", "key": AUTH_JSON_KEY}});
    std::fs::write(agent.join("auth.json"), auth.to_string()).unwrap();
    // `pi args` with keys in its environment.
    let keyed = |args: &[OsString]| {
        let mut command = ws.command(pi().as_ref(), args);
        command
            .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
            .env("OPENAI_API_KEY", OPENAI_KEY)
            .env("PORTKEY_SECRET_VALUE", PORTKEY_KEY);
        command
    };
    let succeeds = |args: &[OsString]| succeeded(&keyed(args).output().unwrap(), "pi");

    // A session that already holds a key: the recording embeds it in its header.
    let sessions = ws.root().join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let session = sessions.join("resumed.jsonl");
    let session_arg = session.to_str().unwrap();
    let prompt = format!("remember {ANTHROPIC_KEY}");
    succeeds(&words(&[
        "--mode",
        "json",
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--session",
        session_arg,
        "-p",
        &prompt,
    ]));

    // The recorded run: a key on the command line, keys in headers from a variable and a
    // command, another provider's key read by a tool, and a key streamed cut in two.
    let cassette = ws.root().join("cwd").join("print.jsonl");
    let more = [
        "--api-key",
        CLI_KEY,
        "--session",
        session_arg,
        "-p",
        "read notes.txt",
    ];
    succeeds(&recording(&cassette, "mock", "mock-model", &more));
    let requests = std::fs::read_to_string(ws.root().join("requests.jsonl")).unwrap();
    for key in [CLI_KEY, PORTKEY_KEY, GATEWAY_KEY, ANTHROPIC_KEY] {
        assert!(
            requests.contains(key),
            "{key} was not sent: the test plants it where it is used"
        );
    }

    // An RPC session: a key in a prompt, and printed by a `bash` command.
    let rpc_cassette = ws.root().join("cwd").join("rpc.jsonl");
    let args = [
        "--mode",
        "rpc",
        "--record",
        rpc_cassette.to_str().unwrap(),
        "--provider",
        "mock",
        "--model",
        "mock-model",
    ];
    let mut child = keyed(&words(&args))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut seen = String::new();
    // Each line is answered before the next is sent, and the prompt's run ends before stdin
    // does (Pi shuts down on stdin's end, whatever still runs), however slow the machine.
    let lines = [
        (
            json!({"id": "b", "type": "bash", "command": "cat notes.txt; echo $ANTHROPIC_API_KEY"}),
            r#""command":"bash","success":true"#,
        ),
        (
            json!({"id": "p", "type": "prompt", "message": format!("my groq key is {AUTH_JSON_KEY}")}),
            r#""type":"agent_end""#,
        ),
    ];
    for (line, answered) in &lines {
        std::io::Write::write_all(&mut stdin, format!("{line}\n").as_bytes()).unwrap();
        read_until(&mut stdout, &mut seen, answered);
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    succeeded(&out, "rpc");

    // Pi's own session file, holding the keys of both runs, imported as a cassette.
    let imported = ws.root().join("cwd").join("imported.cassette");
    succeeds(&words(&[
        "import",
        session_arg,
        "-o",
        imported.to_str().unwrap(),
    ]));

    for path in pi_testkit::files_under(ws.root()) {
        if planted_by_the_test(&path) {
            continue;
        }
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        for key in PLANTED {
            assert!(!text.contains(key), "{key} reached {}", path.display());
            let (head, tail) = key.split_at(key.len() / 2);
            assert!(
                !(text.contains(head) && text.contains(tail)),
                "both halves of {key} reached {}",
                path.display()
            );
        }
    }

    // Both replay and check, offline, though keys were in what they printed.
    for cassette in [&cassette, &rpc_cassette, &imported] {
        replays_and_checks(cassette);
    }

    // A diverging check prints the command that records the run again: without the key.
    let text = std::fs::read_to_string(&cassette).unwrap();
    let (header, lines) = text.split_once('\n').unwrap();
    let lines = lines.replacen("read notes.txt", "read other.txt", 1);
    let tampered = ws.root().join("cwd").join("tampered.jsonl");
    std::fs::write(&tampered, format!("{header}\n{lines}")).unwrap();
    let out = replay_check(&tampered);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("to record it again"), "{stderr}");
    for key in PLANTED {
        assert!(!stderr.contains(key), "{key} in the hint: {stderr}");
    }
}

/// The user's own redaction rules (settings `redact`): a pattern, a header name and a JSON
/// path. What they find reaches no line of a recording or an imported session, and both still
/// check; a rule that does not parse stops the recording before it writes anything.
#[test]
fn the_users_redaction_rules_reach_no_cassette_and_the_runs_still_check() {
    const CASE: &str = "CASE-314159";
    const TENANT: &str = "tenant-acme-7731";
    let ws = workspace(json!({
        "files": {"ticket.txt": format!("customer case {CASE}\n")},
        "script": [
            {"tool_calls": [{"name": "read", "arguments": {"path": "ticket.txt"}}]},
            {"text": [format!("Case {CASE} is noted.")]},
        ]
    }));
    let agent = ws.root().join("agent");
    let mut models = models_json(ws.port());
    models["providers"]["mock"]["headers"] = json!({"X-Tenant-Id": TENANT});
    std::fs::write(agent.join("models.json"), models.to_string()).unwrap();
    let settings = |rules: Value| {
        let settings = json!({"redact": rules});
        std::fs::write(agent.join("settings.json"), settings.to_string()).unwrap();
    };
    settings(json!({
        "patterns": ["CASE-[0-9]{6}"],
        "headers": ["x-tenant-id"],
        "jsonPaths": ["$.messages[0].content"]
    }));
    let sessions = ws.root().join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let session = sessions.join("ticket.jsonl");
    let cassette = ws.root().join("cwd").join("ticket.cassette");
    let prompt = format!("read ticket.txt about {CASE}");
    let record = |cassette: &Path| {
        let more = ["--session", session.to_str().unwrap(), "-p", &prompt];
        let args = recording(cassette, "mock", "mock-model", &more);
        ws.command(pi().as_ref(), &args).output().unwrap()
    };
    succeeded(&record(&cassette), "record");
    let requests = std::fs::read_to_string(ws.root().join("requests.jsonl")).unwrap();
    assert!(
        requests.contains(CASE) && requests.contains(TENANT),
        "{requests}"
    );

    let text = std::fs::read_to_string(&cassette).unwrap();
    let first_request: Value = text
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .find(|line| line["type"] == "request")
        .unwrap();
    let system = first_request["body"]["messages"][0]["content"]
        .as_str()
        .unwrap();
    assert!(system.starts_with("<<secret-"), "{first_request}");

    let imported = ws.root().join("cwd").join("imported.cassette");
    let args = [
        "import",
        session.to_str().unwrap(),
        "-o",
        imported.to_str().unwrap(),
    ];
    let out = ws.command(pi().as_ref(), &words(&args)).output().unwrap();
    succeeded(&out, "import");

    for path in [&cassette, &imported] {
        let text = std::fs::read_to_string(path).unwrap();
        for planted in [CASE, TENANT] {
            assert!(
                !text.contains(planted),
                "{planted} reached {}",
                path.display()
            );
        }
        replays_and_checks(path);
    }

    settings(json!({"patterns": ["CASE-(["]}));
    let refused = ws.root().join("cwd").join("refused.cassette");
    let out = record(&refused);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("redact.patterns[0]"), "{stderr}");
    assert!(
        !refused.exists(),
        "a refused recording wrote {}",
        refused.display()
    );
}

/// The attack: models.json keys a model or a tool repeats without the form they were given in.
/// An `Authorization: Bearer KEY` header (a literal, and from a `!command`) and `apiKey`s that
/// name a variable as `$NAME` and `${NAME}` (whose names say nothing of a key); the model says
/// every bare key and a `bash` command prints them past the output budget (the result the
/// model gets is the output's tail). No file the recording wrote holds one, and the cassette
/// checks. What Pi itself writes is left as Pi writes it: its session file, the events printed
/// and the bash output saved in the temp folder hold what the model and the command said.
#[test]
fn bare_keys_of_bearer_headers_and_variables_reach_no_file_the_run_wrote() {
    const BEARER_KEY: &str = "planted-bearer-literal-0123456789";
    const COMMAND_KEY: &str = "planted-bearer-command-0123456789";
    const DOLLAR_KEY: &str = "planted-dollar-variable-0123456789";
    const BRACED_KEY: &str = "planted-braced-variable-0123456789";
    let keys = [BEARER_KEY, COMMAND_KEY, DOLLAR_KEY, BRACED_KEY];
    let said = keys.join(" ");
    let print = format!("for i in $(seq 3000); do echo '{said}'; done");
    let ws = workspace(json!({"script": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": print}}]},
        {"text": [format!("The keys: {said}")]},
    ]}));
    let agent = ws.root().join("agent");
    let mut models = models_json(ws.port());
    let mock = &mut models["providers"]["mock"];
    mock["apiKey"] = json!("$MOCK_UPSTREAM");
    mock["headers"] = json!({
        "Authorization": format!("Bearer {BEARER_KEY}"),
        "X-Relay": format!("!printf 'Bearer {COMMAND_KEY}'"),
    });
    models["providers"]["mock-anthropic"]["apiKey"] = json!("${MOCK_RELAY}");
    std::fs::write(agent.join("models.json"), models.to_string()).unwrap();
    let tmp = ws.root().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();

    let cassette = ws.root().join("cwd").join("bare.jsonl");
    let args = recording(&cassette, "mock", "mock-model", &["-p", "say the keys"]);
    let out = ws
        .command(pi().as_ref(), &args)
        .env("MOCK_UPSTREAM", DOLLAR_KEY)
        .env("MOCK_RELAY", BRACED_KEY)
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    succeeded(&out, "the recorded run");
    // The headers were sent as configured, and the output went to a saved file.
    let requests = std::fs::read_to_string(ws.root().join("requests.jsonl")).unwrap();
    assert!(requests.contains(&format!("Bearer {BEARER_KEY}")));
    assert!(requests.contains(&format!("Bearer {COMMAND_KEY}")));
    let saved = pi_testkit::files_under(&tmp);
    assert_eq!(saved.len(), 1, "the full output was saved: {saved:?}");

    let cassette_text = std::fs::read_to_string(&cassette).unwrap();
    assert!(cassette_text.contains("<<secret-"), "placeholders written");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let pis = |path: &Path| planted_by_the_test(path) || path.starts_with(&tmp);
    let mut leaks = Vec::new();
    for path in pi_testkit::files_under(ws.root())
        .into_iter()
        .filter(|p| !pis(p))
    {
        let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
        let found = keys.iter().filter(|key| text.contains(**key));
        leaks.extend(found.map(|key| format!("{key} in {}", path.display())));
    }
    leaks.extend(
        keys.iter()
            .filter(|key| stderr.contains(**key))
            .map(|key| format!("{key} in stderr")),
    );
    assert!(leaks.is_empty(), "{leaks:#?}");
    replays_and_checks(&cassette);
}

/// A resumed session over a megabyte goes to a side file beside the cassette, not into its
/// header: the side file is scrubbed as the header would have been. A key the session holds
/// (here in its prompt, known from the environment), and what the user's pattern finds there,
/// reach neither the cassette nor its side file, and the cassette still checks.
#[test]
fn a_large_resumed_session_holding_a_key_reaches_no_side_file() {
    const RULED: &str = "ruled-value-0123456789";
    let ws = workspace(json!({"script": [{"text": ["First."]}, {"text": ["Second."]}]}));
    let agent = ws.root().join("agent");
    let settings = json!({"redact": {"patterns": ["ruled-value-[0-9]+"]}});
    std::fs::write(agent.join("settings.json"), settings.to_string()).unwrap();
    let big = format!(
        "{} the key is {ANTHROPIC_KEY} and {RULED}",
        "lorem ipsum ".repeat(100_000)
    );
    run_with_big_prompt(&ws, &big, &[("ANTHROPIC_API_KEY", ANTHROPIC_KEY)]);

    let cassette = ws.root().join("cwd").join("resumed.jsonl");
    let args = recording(
        &cassette,
        "mock",
        "mock-model",
        &["--continue", "-p", "again"],
    );
    let out = ws
        .command(pi().as_ref(), &args)
        .env("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        .output()
        .unwrap();
    succeeded(&out, "the recorded run");
    let header = std::fs::read_to_string(&cassette).unwrap();
    assert!(header.contains(r#""contentFile":"blobs/"#), "a side file");
    for key in [ANTHROPIC_KEY, RULED] {
        nowhere_but_planted(ws.root(), key, planted_by_the_test, "large session");
    }
    replays_and_checks(&cassette);
}
