//! Keys a user keeps in `settings.json` (an extension's `apiKey`, a deploy token, a password in
//! a list) reach the extensions through `pi.getSettings()`, and from there a tool result, the
//! model's next request and the session: a recording scrubs each of them wherever it shows up,
//! and the run still checks as reproduced without Node.

use serde_json::json;

use crate::common::{Env, MockLlm};
use crate::support::{fixture, node_path, run, with_extension, with_host};

const PLANTED: [&str; 3] = [
    "settings-planted-apikey-0123456789",
    "settings-planted-token-0123456789",
    "settings-planted-password-0123456789",
];

#[test]
fn keys_kept_in_settings_reach_no_cassette() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"name": "settings", "arguments": "{}"}]},
        {"text": ["Read them."]},
    ]));
    let env = Env::new(&mock);
    env.write_agent(
        "settings.json",
        &json!({
            "myGateway": {"apiKey": PLANTED[0], "region": "eu"},
            "deploy_token": PLANTED[1],
            "databases": [{"name": "main", "password": PLANTED[2]}],
        })
        .to_string(),
    );
    let cassette = env.path("settings.jsonl");
    let mut command = with_extension(
        &env,
        &["--mode", "json", "--record", cassette.to_str().unwrap()],
        &fixture("settings_echo.ts"),
        "What are the settings?",
    );
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        recorded.contains(PLANTED[0]),
        "the extension did not see the settings: {recorded}"
    );
    // The model's second request carries the tool's result, which holds them.
    let requests = serde_json::to_string(&mock.requests()).unwrap();
    assert!(requests.contains(PLANTED[1]), "{requests}");

    let text = std::fs::read_to_string(&cassette).unwrap();
    let leaked: Vec<&str> = PLANTED
        .iter()
        .copied()
        .filter(|k| text.contains(k))
        .collect();
    assert!(leaked.is_empty(), "the cassette holds {leaked:?}");
    assert!(text.contains("<<secret-"), "nothing was scrubbed");
    // The keys that are not credentials by name stay.
    assert!(text.contains("\\\"region\\\":\\\"eu\\\""), "{text}");

    // What the run printed holds the keys (as Pi prints them); the cassette's scrubbed copy of
    // it is what a replay is checked against, with no Node.
    let no_node = env.path("no-node");
    std::fs::create_dir_all(&no_node).unwrap();
    let (code, said, stderr) = run(std::process::Command::new(env!("CARGO_BIN_EXE_pi"))
        .args(["replay", "--check"])
        .arg(&cassette)
        .env("PATH", &no_node)
        .env("HOME", env.path("home")));
    assert_eq!(code, 0, "{said}{stderr}");
}
