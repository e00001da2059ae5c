//! `pi-mock` as a user meets it, with `sh` standing in for pi: the scratch environment the command
//! gets, its output and exit code passed through, and clear errors (never a panic) for a wrong
//! call, a wrong scenario or a command that cannot start.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::{Command, Output};

fn pi_mock(args: &[&str], scenario: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pi-mock"))
        .arg("--scenario")
        .arg(scenario)
        .args(args)
        .env("PI_CODING_AGENT_DIR", "/caller/agent")
        .env("PI_SOMETHING", "caller")
        .env("OPENAI_API_KEY", "caller-key")
        .env("GH_TOKEN", "caller-token")
        .env("KEPT_VARIABLE", "kept")
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn the_command_runs_in_a_scratch_offline_environment() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("s.json");
    std::fs::write(
        &scenario,
        r#"{"script": [{"text": "hi"}], "files": {"sub/a.txt": "A"}, "dirs": ["empty"],
            "settings": {"theme": "dark"}, "env": {"FROM_SCENARIO": "yes"}}"#,
    )
    .unwrap();
    let keep = dir.path().join("work");
    let script = r#"
        echo "home=$HOME agent=$PI_CODING_AGENT_DIR offline=$PI_OFFLINE telemetry=$PI_TELEMETRY"
        echo "leaked=${PI_SOMETHING:-}${OPENAI_API_KEY:-}${GH_TOKEN:-} kept=$KEPT_VARIABLE scenario=$FROM_SCENARIO"
        echo "cwd=$(pwd) files=$(cat sub/a.txt) dirs=$(ls -d empty)"
        cat "$PI_CODING_AGENT_DIR/settings.json" | tr -d ' \n'; echo
        echo oops >&2
        exit 3"#;
    let out = pi_mock(
        &["--keep", keep.to_str().unwrap(), "--", "sh", "-c", script],
        &scenario,
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let root = keep.canonicalize().unwrap();
    let r = root.display();
    assert_eq!(
        text(&out.stdout),
        format!(
            "home={r}/home agent={r}/agent offline=1 telemetry=0\n\
             leaked= kept=kept scenario=yes\n\
             cwd={r}/cwd files=A dirs=empty\n\
             {{\"theme\":\"dark\"}}\n"
        )
    );
    assert!(
        text(&out.stderr).starts_with("oops\n"),
        "{}",
        text(&out.stderr)
    );

    let models: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("agent/models.json")).unwrap())
            .unwrap();
    let base = models["providers"]["mock"]["baseUrl"].as_str().unwrap();
    assert!(
        base.starts_with("http://127.0.0.1:") && base.ends_with("/v1"),
        "{base}"
    );
    assert_eq!(models["providers"]["mock"]["apiKey"], "mock-key");
    assert_eq!(
        models["providers"]["mock-anthropic"]["api"],
        "anthropic-messages"
    );
    assert!(root.join("requests.jsonl").is_file());
}

#[test]
fn a_bare_script_is_a_scenario_and_the_mock_answers() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("script.json");
    std::fs::write(
        &scenario,
        r#"[{"status": 418, "error_body": {"error": "teapot"}}]"#,
    )
    .unwrap();
    // The models.json port is live while the command runs: ask it over a raw socket.
    let script = r#"
        port=$(sed -n 's/.*127.0.0.1:\([0-9]*\)\/v1.*/\1/p' "$PI_CODING_AGENT_DIR/models.json")
        exec 3<>/dev/tcp/127.0.0.1/$port 2>/dev/null || { echo no-dev-tcp; exit 0; }
        printf 'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}' >&3
        head -n 1 <&3"#;
    let out = pi_mock(&["--", "bash", "-c", script], &scenario);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout == "HTTP/1.1 418 I'm a Teapot\r\n" || stdout == "no-dev-tcp\n",
        "{stdout:?}"
    );
}

#[test]
fn wrong_calls_and_scenarios_are_reported_not_panicked() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let good = write("good.json", "[]");
    let cases = [
        (
            dir.path().join("missing.json"),
            vec!["--", "true"],
            2,
            "missing.json: ",
        ),
        (
            write("cut.json", "{\"script\": ["),
            vec!["--", "true"],
            2,
            "not valid JSON",
        ),
        (
            write(
                "bad.json",
                r#"[{"text": "a"}, {"tool_calls": [{"arguments": {}}]}]"#,
            ),
            vec!["--", "true"],
            2,
            "script step 1, field `tool_calls[0].name`: must be a string",
        ),
        (
            write("escape.json", r#"{"files": {"../x": "y"}}"#),
            vec!["--", "true"],
            2,
            "field `files.../x`",
        ),
        (good.clone(), vec![], 2, "no command to run"),
        (
            good.clone(),
            vec!["--frobnicate"],
            2,
            "unknown option --frobnicate",
        ),
        (
            good.clone(),
            vec!["--", "./no/such/program"],
            127,
            "cannot start ./no/such/program",
        ),
    ];
    for (scenario, args, code, message) in cases {
        let out = pi_mock(&args, &scenario);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(stderr.starts_with("pi-mock: "), "{stderr}");
        assert!(stderr.contains(message), "{message:?} in {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}
