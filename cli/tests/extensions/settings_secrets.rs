//! Keys a user hands the extensions: kept in `settings.json` (an extension's `apiKey`, a deploy
//! token, a password in a list), which they read through `pi.getSettings()`, or given on the
//! command line as the value of a flag an extension registered (`--deploy-token`). From there
//! they reach a tool result, the model's requests and the session: a recording scrubs each of
//! them wherever it shows up (the recorded command line too), and the run still checks as
//! reproduced without Node.

use serde_json::json;

use crate::common::{Env, MockLlm};
use crate::support::{
    assert_checks_without_node, fixture, node_path, run, with_extension, with_host,
};

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
    assert_checks_without_node(&env, &cassette);
}

#[test]
fn a_key_given_to_an_extensions_flag_reaches_no_cassette() {
    let Some(path) = node_path() else { return };
    const TOKEN: &str = "flag-planted-deploy-token-0123456789";
    let joined = format!("--deploy-token={TOKEN}");
    for flag in [&["--deploy-token", TOKEN][..], &[joined.as_str()][..]] {
        let mock = MockLlm::start(&json!([{"text": ["Deploying."]}]));
        let env = Env::new(&mock);
        let cassette = env.path("flag.jsonl");
        let mut args = vec!["--mode", "json", "--record", cassette.to_str().unwrap()];
        args.extend(flag);
        let mut command = with_extension(&env, &args, &fixture("flag_token.ts"), "Deploy.");
        with_host(&mut command, &path);
        let (code, recorded, stderr) = run(&mut command);
        assert_eq!(code, 0, "{flag:?}: {stderr}");
        let requests = serde_json::to_string(&mock.requests()).unwrap();
        assert!(
            requests.contains(TOKEN),
            "the extension did not see {flag:?}: {requests}"
        );
        assert!(recorded.contains(TOKEN), "{recorded}");

        let text = std::fs::read_to_string(&cassette).unwrap();
        assert!(!text.contains(TOKEN), "the cassette holds {flag:?}'s key");
        assert_checks_without_node(&env, &cassette);
    }
}
