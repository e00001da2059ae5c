//! What a shell command sees of the environment pi was started with: the bash tool's commands
//! and RPC `bash` commands run without the variables whose names say they hold a credential
//! (the providers' keys, `*_TOKEN`, `*_SECRET`, ...), unless settings.json's
//! `shellEnv.passCredentials` is true; every other variable passes. Tried through the real
//! binary against the kit's mock: a command runs `env`, and its output (the events, what the
//! model is sent) is searched for each planted value.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

use crate::common::{Env, MockLlm};
use serde_json::{json, Value};

/// Variables planted in pi's environment: the credentials a command must not see by default.
const CREDENTIALS: [(&str, &str); 4] = [
    ("ANTHROPIC_API_KEY", "sk-ant-planted-0123456789"),
    ("OPENAI_API_KEY", "sk-openai-planted-0123456789"),
    ("FOO_TOKEN", "foo-token-planted-0123456789"),
    ("AWS_SECRET_ACCESS_KEY", "aws-secret-planted-0123456789"),
];

/// Variables that are not credentials, which a command always sees.
const ORDINARY: [(&str, &str); 2] = [
    ("FOO_SETTING", "foo-setting-visible-0123456789"),
    ("SSH_AUTH_SOCK", "/tmp/ssh-socket-visible-0123456789"),
];

fn planted(command: &mut Command) -> &mut Command {
    for (name, value) in CREDENTIALS.iter().chain(&ORDINARY) {
        command.env(name, value);
    }
    command
}

fn pass_credentials(env: &Env) {
    env.write_agent(
        "settings.json",
        &json!({"shellEnv": {"passCredentials": true}}).to_string(),
    );
}

/// Asserts that `text` holds every ordinary value, and each credential exactly when `passed`.
fn assert_seen(text: &str, passed: bool, what: &str) {
    for (name, value) in ORDINARY {
        assert!(text.contains(value), "{what}: {name} is missing:\n{text}");
    }
    for (name, value) in CREDENTIALS {
        assert_eq!(
            text.contains(value),
            passed,
            "{what}: {name} {}:\n{text}",
            if passed {
                "is missing"
            } else {
                "reached the command"
            }
        );
    }
}

/// A print-mode run whose bash tool runs `env`; the run's stdout and what the model was sent.
fn tool_runs_env(env: &Env, mock: &MockLlm, record: Option<&std::path::Path>) -> (String, String) {
    let mut args = vec![
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--mode",
        "json",
    ];
    if let Some(cassette) = record {
        args.extend(["--record", cassette.to_str().unwrap()]);
    }
    args.extend(["-p", "Show the environment"]);
    let out = planted(&mut env.command(&args))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let ended = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["type"] == "tool_execution_end")
        .expect("the bash tool ran");
    let sent = mock.requests().last().unwrap().to_string();
    (ended.to_string(), sent)
}

fn env_script() -> Value {
    json!([
        {"tool_calls": [{"id": "call_1", "name": "bash", "arguments": {"command": "env"}}]},
        {"text": ["done"]}
    ])
}

#[test]
fn the_bash_tool_runs_without_credentials_and_the_run_replays() {
    let mock = MockLlm::start(&env_script());
    let env = Env::new(&mock);
    let cassette = env.path("env.jsonl");
    let (result, sent) = tool_runs_env(&env, &mock, Some(&cassette));
    assert_seen(&result, false, "the tool's result");
    assert_seen(&sent, false, "what the model was sent");

    let check = env
        .command(&["replay", "--check"])
        .arg(&cassette)
        .output()
        .unwrap();
    assert_eq!(
        check.status.code(),
        Some(0),
        "the recording replays: {}",
        String::from_utf8_lossy(&check.stderr)
    );
}

#[test]
fn the_bash_tool_sees_credentials_when_the_setting_passes_them() {
    let mock = MockLlm::start(&env_script());
    let env = Env::new(&mock);
    pass_credentials(&env);
    let (result, sent) = tool_runs_env(&env, &mock, None);
    assert_seen(&result, true, "the tool's result");
    assert_seen(&sent, true, "what the model was sent");
}

/// RPC mode's `bash` command running `env`: its answer's output.
fn rpc_bash_env(env: &Env) -> String {
    let mut rpc = planted(&mut env.rpc_command())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = rpc.stdin.take().unwrap();
    writeln!(
        stdin,
        "{}",
        json!({"id": "b", "type": "bash", "command": "env"})
    )
    .unwrap();
    let stdout = BufReader::new(rpc.stdout.take().unwrap());
    let mut answer = None;
    for line in stdout.lines() {
        let line: Value = serde_json::from_str(&line.unwrap()).unwrap();
        if line["type"] == "response" && line["id"] == "b" {
            answer = Some(line);
            break;
        }
    }
    drop(stdin);
    assert_eq!(rpc.wait().unwrap().code(), Some(0));
    let answer = answer.expect("the bash command is answered");
    assert_eq!(answer["success"], true, "{answer}");
    answer["data"]["output"].as_str().unwrap().to_owned()
}

#[test]
fn an_rpc_bash_command_runs_without_credentials_unless_the_setting_passes_them() {
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    assert_seen(&rpc_bash_env(&env), false, "RPC bash");
    pass_credentials(&env);
    assert_seen(&rpc_bash_env(&env), true, "RPC bash with passCredentials");
}
