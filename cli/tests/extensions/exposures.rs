//! Extension tools of every exposure Pi 1.5 has (case `tool_exposures`): which are active and
//! declared at the start under `--tools` entries, which a running tool may call, and that the
//! recording holds what decides it (each tool's exposure in the run's configuration), so a
//! replay without Node reproduces the run and a cassette whose exposure was changed diverges.

use serde_json::{json, Value};

use crate::common::{Env, MockLlm};
use crate::support::{
    assert_replays_without_node, json_lines, node_path, replay_without_node, run, with_extension,
    with_host,
};

fn case() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/extensions/tool_exposures")
}

/// The model calls the tool that calls the others, then each of the others itself.
fn script() -> Value {
    let call = |id: &str, name: &str, x: Option<&str>| {
        let args = x.map_or(json!({}), |x| json!({"x": x}));
        json!({"id": id, "name": name, "arguments": args.to_string()})
    };
    json!([
        {"tool_calls": [
            call("c1", "caller", None),
            call("c2", "orch", Some("o")),
            call("c3", "quiet", Some("q")),
            call("c4", "scripted", Some("s")),
            call("c5", "ghost", Some("g")),
            call("c6", "later", Some("l")),
        ]},
        {"text": ["Done."]},
    ])
}

/// Each tool result's text, by tool name, in call order.
fn results(events: &[Value]) -> Vec<(String, String)> {
    events
        .iter()
        .filter(|e| e["type"] == "tool_execution_end" && e.get("parentToolCallId").is_none())
        .map(|e| {
            let text = e["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default();
            (e["toolName"].as_str().unwrap().to_owned(), text.to_owned())
        })
        .collect()
}

#[test]
fn exposures_decide_what_is_declared_and_callable_and_replay_without_node() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&script());
    let env = Env::new(&mock);
    let cassette = env.path("exposures.jsonl");
    let mut command = with_extension(
        &env,
        &[
            "--mode",
            "json",
            "--record",
            cassette.to_str().unwrap(),
            "--tools",
            "+quiet,+scripted,+ghost,-bash",
        ],
        &case().join("extension.ts"),
        "Use the tools.",
    );
    with_host(&mut command, &path);
    let (code, recorded, stderr) = run(&mut command);
    assert_eq!(code, 0, "{stderr}");

    // Named by `+name`: `quiet` (registered inactive) and `scripted` (codemode) are active, the
    // hidden `ghost` is not; `orch` (model-only) and `caller` are active on registration; the
    // deferred `later` is not.
    let declared: Vec<String> = mock.requests()[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        declared,
        ["read", "edit", "write", "quiet", "scripted", "orch", "caller"]
    );
    let events = json_lines(&recorded);
    let results = results(&events);
    let said = |name: &str| {
        let found = results.iter().find(|(n, _)| n == name);
        found.map_or("", |(_, text)| text.as_str()).to_owned()
    };
    // A running tool may call the active direct tools and every codemode or deferred one,
    // never a model-only or hidden one.
    assert_eq!(
        said("caller").lines().collect::<Vec<_>>(),
        [
            "callable: read,edit,write,quiet,later,scripted,caller",
            "scripted: ok scripted(scripted) active=read,edit,write,quiet,scripted,orch,caller",
            "later: ok later(later) active=read,edit,write,quiet,scripted,orch,caller",
            "orch: error Tool orch not found",
            "ghost: error Tool ghost not found",
            "quiet: ok quiet(quiet) active=read,edit,write,quiet,scripted,orch,caller",
        ]
    );
    assert_eq!(said("ghost"), "Tool ghost not found");
    assert_eq!(said("later"), "Tool later not found");
    assert!(said("orch").starts_with("orch(o)"), "{results:?}");

    // `pi.getAllTools()` lists every registered tool in registration order with its exposure.
    let listed = events
        .iter()
        .find(|e| e["type"] == "entry_appended")
        .map(|e| e["entry"]["data"]["all"].clone())
        .unwrap();
    // Pi's eight built-ins first, `powershell` (Windows' shell) among them on every platform.
    let builtins: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t[0].as_str().unwrap())
        .take_while(|name| *name != "quiet")
        .collect();
    assert_eq!(
        builtins,
        [
            "read",
            "bash",
            "powershell",
            "edit",
            "write",
            "grep",
            "find",
            "ls"
        ]
    );
    let exposures: Vec<String> = listed
        .as_array()
        .unwrap()
        .iter()
        .skip_while(|t| t[0] != "quiet")
        .map(|t| format!("{} {}", t[0].as_str().unwrap(), t[1].as_str().unwrap()))
        .collect();
    assert_eq!(
        exposures,
        [
            "quiet direct",
            "later deferred",
            "ghost hidden",
            "orch model-only",
            "scripted codemode",
            "caller direct",
            "codemode model-only",
            "tool_search model-only",
        ]
    );

    assert_replays_without_node(&env, &cassette, &recorded);

    // The exposure the run recorded for `scripted` decides that `caller` may call it: made
    // model-only, the replay's nested call is refused where the recording's ran, so it diverges.
    let text = std::fs::read_to_string(&cassette).unwrap();
    let tampered = text.replacen(r#""exposure":"codemode""#, r#""exposure":"model-only""#, 1);
    assert_ne!(tampered, text, "the header records the exposure");
    let changed = env.path("changed.jsonl");
    std::fs::write(&changed, tampered).unwrap();
    let (code, _, stderr) = replay_without_node(&env, &changed);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("diverged"), "{stderr}");

    // What only the extensions' getters read (an annotation, which no request, event or entry
    // holds) is checked too: the digest of the state at each hook point differs.
    let tampered = text.replacen(r#""readOnlyHint":true"#, r#""readOnlyHint":false"#, 1);
    assert_ne!(tampered, text, "the header records the annotation");
    std::fs::write(&changed, tampered).unwrap();
    let (code, _, stderr) = replay_without_node(&env, &changed);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("diverged"), "{stderr}");
}
