//! `pi export --atif` and `pi eval --atif`: sessions the real binary wrote against the mock
//! model, exported as ATIF trajectories, checked field by field, snapshotted, and validated by
//! Harbor's own validator when it is installed (`PI_HARBOR_PYTHON`, default `python3`, with
//! the `harbor` package; `PI_REQUIRE_HARBOR=1` makes its absence a failure).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{Env, MockLlm};
use serde_json::{json, Value};

/// `pi export --atif SESSION -`: the trajectory written to stdout.
fn export(env: &Env, session: &Path) -> Value {
    let out = env.run(&["export", "--atif", session.to_str().unwrap(), "-"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", out.stdout))
}

fn only_session(env: &Env) -> PathBuf {
    let files = env.session_files();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

/// The Python with Harbor, or `None` (said once per test) when it is not installed and not
/// required.
fn harbor() -> Option<String> {
    let python = std::env::var("PI_HARBOR_PYTHON").unwrap_or_else(|_| "python3".into());
    let found = Command::new(&python)
        .args(["-c", "import harbor.utils.trajectory_validator"])
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return Some(python);
    }
    if std::env::var("PI_REQUIRE_HARBOR").is_ok_and(|v| v == "1") {
        panic!("PI_REQUIRE_HARBOR=1 but {python} cannot import harbor");
    }
    eprintln!("skipped: Harbor's validator is not installed ({python} cannot import harbor)");
    None
}

/// Harbor's validator on each file: every one must be valid.
fn validate(files: &[PathBuf]) {
    let Some(python) = harbor() else { return };
    for file in files {
        let out = Command::new(&python)
            .args(["-m", "harbor.utils.trajectory_validator"])
            .arg(file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "Harbor refuses {}:\n{}{}",
            file.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn validate_value(env: &Env, name: &str, trajectory: &Value) {
    let path = env.path(name);
    std::fs::write(&path, serde_json::to_string(trajectory).unwrap()).unwrap();
    validate(&[path]);
}

/// What changes from run to run (times, ids, the temp folder, the date) replaced, the system
/// prompt and tool definitions shortened to what identifies them.
fn stable(mut trajectory: Value, env: &Env) -> Value {
    let root = env
        .path("")
        .to_string_lossy()
        .trim_end_matches('/')
        .to_owned();
    fn walk(value: &mut Value, root: &str) {
        match value {
            Value::Object(map) => {
                for (key, v) in map.iter_mut() {
                    let volatile = matches!(
                        key.as_str(),
                        "timestamp"
                            | "session_id"
                            | "entry_id"
                            | "leaf_id"
                            | "first_kept_entry_id"
                            | "from_id"
                            | "response_id"
                    );
                    if volatile && !v.is_null() {
                        *v = json!("[volatile]");
                    } else {
                        walk(v, root);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| walk(v, root)),
            Value::String(text) if text.contains(root) => *text = text.replace(root, "[root]"),
            _ => {}
        }
    }
    walk(&mut trajectory, &root);
    let names: Vec<Value> = trajectory["agent"]["tool_definitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].clone())
        .collect();
    trajectory["agent"]["tool_definitions"] = json!(names);
    let prompt = trajectory["steps"][0]["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        prompt.contains("[root]/cwd"),
        "the prompt names the session's cwd: {prompt}"
    );
    trajectory["steps"][0]["message"] =
        json!(format!("[system prompt, {} lines]", prompt.lines().count()));
    trajectory
}

fn steps(trajectory: &Value) -> &Vec<Value> {
    trajectory["steps"].as_array().unwrap()
}

#[test]
fn a_tool_using_run_exports_its_calls_observations_prompt_and_tools() {
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"id": "c1", "name": "write", "arguments": {"path": "ok.txt", "content": "ok\n"}}],
         "usage": {"input": 120, "output": 15}},
        {"text": ["Wrote ok.txt."], "usage": {"input": 150, "output": 6}}
    ]));
    let env = Env::new(&mock);
    let out = env.run(&[
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "-p",
        "Write ok.txt",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let trajectory = export(&env, &only_session(&env));
    let all = steps(&trajectory);
    assert_eq!(all[0]["source"], "system");
    let call = &all[2]["tool_calls"][0];
    assert_eq!(call["function_name"], "write");
    assert_eq!(call["arguments"]["path"], "ok.txt");
    let result = &all[2]["observation"]["results"][0];
    assert_eq!(result["source_call_id"], "c1");
    assert!(result["content"].as_str().unwrap().contains("ok.txt"));
    let metrics = &trajectory["final_metrics"];
    assert_eq!(metrics["total_prompt_tokens"], 270);
    assert_eq!(metrics["total_completion_tokens"], 21);
    assert_eq!(metrics["total_steps"], all.len());
    validate_value(&env, "tools.json", &trajectory);
    insta::assert_json_snapshot!(stable(trajectory, &env));
}

#[test]
fn a_failed_then_retried_call_stays_its_own_step_marked_as_dropped_from_the_context() {
    let mock = MockLlm::start(&json!([
        {"status": 500, "error_body": {"error": {"message": "upstream exploded"}}},
        {"text": ["Recovered."], "usage": {"input": 40, "output": 3}}
    ]));
    let env = Env::new(&mock);
    env.write_agent(
        "settings.json",
        r#"{"retry": {"enabled": true, "maxRetries": 2, "baseDelayMs": 1}}"#,
    );
    let out = env.run(&["--provider", "mock", "--model", "mock-model", "-p", "Hello"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let trajectory = export(&env, &only_session(&env));
    let agent: Vec<&Value> = steps(&trajectory)
        .iter()
        .filter(|s| s["source"] == "agent")
        .collect();
    assert_eq!(
        agent.len(),
        2,
        "the failed attempt and the answer: {trajectory:#}"
    );
    assert_eq!(
        agent[0]["extra"]["context_management"],
        json!({"type": "failed_response", "boundary": "drop"})
    );
    assert_eq!(agent[0]["extra"]["pi"]["retried"], true);
    assert!(agent[0]["extra"]["pi"]["error"]
        .as_str()
        .unwrap()
        .contains("500"));
    assert_eq!(
        agent[0]["message"], "",
        "nothing of the answer is merged into the failure"
    );
    assert_eq!(agent[1]["message"], "Recovered.");
    assert!(agent[1]["extra"].get("context_management").is_none());
    validate_value(&env, "retry.json", &trajectory);
    insta::assert_json_snapshot!(stable(trajectory, &env));
}

/// `pi --mode rpc` against the mock: sends each command and waits for its response (and, for
/// a prompt, for the run's end).
fn rpc(env: &Env, commands: &[Value]) {
    use std::io::{BufRead, BufReader, Write};
    let mut child = env
        .rpc_command()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for (n, command) in commands.iter().enumerate() {
        let mut command = command.clone();
        command["id"] = json!(format!("c{n}"));
        writeln!(stdin, "{command}").unwrap();
        let prompt = command["type"] == "prompt";
        let (mut answered, mut ended) = (false, !prompt);
        while !(answered && ended) {
            let line = lines.next().expect("pi ended early").unwrap();
            let event: Value = serde_json::from_str(&line).unwrap();
            if event["type"] == "response" && event["id"] == command["id"] {
                assert_eq!(event["success"], true, "{event}");
                answered = true;
            }
            ended |= event["type"] == "agent_end";
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

#[test]
fn a_compaction_replaces_the_context_and_repeats_only_what_the_model_still_saw() {
    let mock = MockLlm::start(&json!([
        {"text": ["First answer."]},
        {"text": ["Second answer."]},
        {"text": ["## Goal\nA summary."]},
        // The turn's prefix is summarized at the same time, in either order: the same text.
        {"text": ["## Goal\nA summary."]},
        {"text": ["Third answer."]}
    ]));
    let env = Env::new(&mock);
    env.write_agent(
        "settings.json",
        r#"{"compaction": {"keepRecentTokens": 1}}"#,
    );
    rpc(
        &env,
        &[
            json!({"type": "prompt", "message": "One"}),
            json!({"type": "prompt", "message": "Two"}),
            json!({"type": "compact"}),
            json!({"type": "prompt", "message": "Three"}),
        ],
    );
    let trajectory = export(&env, &only_session(&env));
    let all = steps(&trajectory);
    let boundary = all
        .iter()
        .position(|s| s["extra"]["context_management"]["type"] == "compaction")
        .unwrap_or_else(|| panic!("no compaction step: {trajectory:#}"));
    assert_eq!(all[boundary]["source"], "system");
    assert_eq!(
        all[boundary]["extra"]["context_management"]["boundary"],
        "replace"
    );
    assert!(all[boundary]["message"]
        .as_str()
        .unwrap()
        .contains("A summary."));
    let after: Vec<&Value> = all[boundary + 1..].iter().collect();
    let copies: Vec<&&Value> = after
        .iter()
        .filter(|s| s["is_copied_context"] == true)
        .collect();
    assert!(
        !after.iter().any(|s| s["message"] == "One"),
        "the summarized prompt is not shown to the model again: {trajectory:#}"
    );
    assert!(copies.iter().all(|s| s.get("metrics").is_none()));
    let seen_after: Vec<&str> = after
        .iter()
        .map(|s| s["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        seen_after,
        ["Second answer.", "Three", "Third answer."],
        "the kept message is repeated after the boundary, as the model was sent it"
    );
    assert_eq!(copies.len(), 1);
    assert_eq!(after.last().unwrap()["message"], "Third answer.");
    let counted = all
        .iter()
        .filter(|s| s["is_copied_context"] != true)
        .count();
    assert_eq!(trajectory["final_metrics"]["total_steps"], counted);
    validate_value(&env, "compaction.json", &trajectory);
    insta::assert_json_snapshot!(stable(trajectory, &env));
}

fn entry_ids(session: &Path) -> Vec<(String, Value)> {
    std::fs::read_to_string(session)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "message")
        .map(|e| (e["id"].as_str().unwrap().to_owned(), e["message"].clone()))
        .collect()
}

#[test]
fn the_active_branch_is_followed_and_the_abandoned_one_left_out() {
    let mock = MockLlm::start(&json!([
        {"text": ["First answer."]},
        {"text": ["Abandoned answer."]}
    ]));
    let env = Env::new(&mock);
    let model = ["--provider", "mock", "--model", "mock-model"];
    let out = env.run(&[&model[..], &["-p", "First"]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    let session = only_session(&env);
    let out = env.run(&[&model[..], &["--continue", "-p", "Abandoned"]].concat());
    assert_eq!(out.code, 0, "{}", out.stderr);
    // A branch as Pi's tree navigation writes it: new entries under the first answer, the
    // last one the leaf.
    let ids = entry_ids(&session);
    // The system message, the first prompt, its answer.
    let first_answer = &ids[2].0;
    let mut text = std::fs::read_to_string(&session).unwrap();
    for line in [
        json!({"type": "message", "id": "b0000001", "parentId": first_answer,
               "timestamp": "2026-01-02T00:00:00.000Z",
               "message": {"role": "user", "content": [{"type": "text", "text": "Another way"}], "timestamp": 1767312000000u64}}),
        json!({"type": "message", "id": "b0000002", "parentId": "b0000001",
               "timestamp": "2026-01-02T00:00:01.000Z",
               "message": {"role": "assistant", "content": [{"type": "text", "text": "The other answer."}],
                           "api": "openai-completions", "provider": "mock", "model": "mock-model",
                           "usage": {"input": 7, "output": 3, "cacheRead": 2, "cacheWrite": 0, "totalTokens": 12,
                                     "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0.25}},
                           "stopReason": "stop", "timestamp": 1767312001000u64}}),
    ] {
        text.push_str(&format!("{line}\n"));
    }
    std::fs::write(&session, text).unwrap();
    let trajectory = export(&env, &session);
    let messages: Vec<&str> = steps(&trajectory)[1..]
        .iter()
        .map(|s| s["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        messages,
        ["First", "First answer.", "Another way", "The other answer."]
    );
    assert_eq!(trajectory["extra"]["pi"]["leaf_id"], "b0000002");
    let last = steps(&trajectory).last().unwrap();
    assert_eq!(last["metrics"]["prompt_tokens"], 9);
    assert_eq!(last["metrics"]["cached_tokens"], 2);
    assert_eq!(last["metrics"]["cost_usd"], 0.25);
    validate_value(&env, "branch.json", &trajectory);
    insta::assert_json_snapshot!(stable(trajectory, &env));
}

#[test]
fn hostile_text_in_a_session_never_breaks_the_json() {
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    let nasty = "\u{0}\u{1b}[31m\u{7}\"</script>\\\u{2028}\u{fffe}end";
    let huge = "x".repeat(2 * 1024 * 1024);
    let lines = [
        json!({"type": "session", "version": 3, "id": "s1", "timestamp": "not a time", "cwd": env.cwd()}),
        json!({"type": "message", "id": "u1", "parentId": null, "timestamp": "9999-99-99T99:99:99Z",
               "message": {"role": "user", "content": nasty, "timestamp": 1}}),
        json!({"type": "message", "id": "a1", "parentId": "u1", "timestamp": "2026-01-01T00:00:00.000Z",
               "message": {"role": "assistant", "content": [
                   {"type": "text", "text": huge},
                   {"type": "toolCall", "name": nasty, "arguments": "not an object"},
                   {"type": "toolCall", "id": "t2", "name": "bash", "arguments": {"command": nasty}}],
                 "provider": nasty, "model": "m", "stopReason": "toolUse",
                 "usage": {"input": u64::MAX, "output": -5, "cacheRead": u64::MAX, "cacheWrite": "many",
                           "cost": {"total": "free"}}, "timestamp": 2}}),
        json!({"type": "message", "id": "r1", "parentId": "a1", "timestamp": "2026-01-01T00:00:01.000Z",
               "message": {"role": "toolResult", "toolCallId": "nowhere", "toolName": "bash",
                           "content": [{"type": "text", "text": nasty}, {"type": "image", "data": "AAAA", "mimeType": nasty}],
                           "isError": "yes", "timestamp": 3}}),
    ];
    let mut bytes = Vec::new();
    for line in lines {
        bytes.extend_from_slice(format!("{line}\n").as_bytes());
    }
    bytes.extend_from_slice(b"{\"type\":\"message\",\"id\":\"z\",\"parentId\":\"r1\",\"message\":{\"role\":\"user\",\"content\":\"\\ud800 \xff\xfe\"}}\n");
    let session = env.path("hostile.jsonl");
    std::fs::write(&session, bytes).unwrap();
    let trajectory = export(&env, &session);
    let all = steps(&trajectory);
    assert_eq!(all[1]["message"], nasty, "control characters round-trip");
    assert!(
        all[1].get("timestamp").is_none(),
        "an impossible time is left out"
    );
    assert_eq!(all[2]["message"].as_str().unwrap().len(), huge.len());
    assert_eq!(all[2]["tool_calls"][0]["arguments"], json!({}));
    assert_eq!(
        all[2]["tool_calls"][0]["extra"]["raw_arguments"],
        "not an object"
    );
    validate_value(&env, "hostile.json", &trajectory);
}

#[test]
fn every_wild_session_converts_to_a_valid_trajectory() {
    let Some(dir) = pi_testkit::wild_sessions_dir() else {
        eprintln!("skipped: no wild sessions folder");
        return;
    };
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    let mut written = Vec::new();
    for file in pi_testkit::files_under(&dir) {
        if file.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let out = env.path(&format!("wild-{}.json", written.len()));
        let ran = env.run(&[
            "export",
            "--atif",
            file.to_str().unwrap(),
            out.to_str().unwrap(),
        ]);
        assert_eq!(ran.code, 0, "{}: {}", file.display(), ran.stderr);
        written.push(out);
    }
    assert!(!written.is_empty(), "no session in {}", dir.display());
    validate(&written);
}

#[test]
fn a_file_that_is_not_a_session_is_an_error_naming_it() {
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    env.write("notes.jsonl", b"hello\n");
    let out = env.run(&["export", "--atif", "notes.jsonl"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("notes.jsonl: not a session file: line 1"),
        "{}",
        out.stderr
    );
    let out = env.run(&["export", "notes.jsonl"]);
    assert_eq!(out.code, 2, "--atif is required: {}", out.stderr);
}

#[test]
fn an_eval_run_writes_one_trajectory_per_trial_at_its_key() {
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    let suite = Path::new(env!("CARGO_MANIFEST_DIR")).join("../evals/suites/smoke.toml");
    let out = env.run(&[
        "eval",
        suite.to_str().unwrap(),
        "--out",
        "out",
        "--atif",
        "trajectories",
        "-q",
    ]);
    assert!(out.code <= 1, "{}\n{}", out.stdout, out.stderr);
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(env.cwd().join("out/results.json")).unwrap())
            .unwrap();
    let mut files = Vec::new();
    for trial in results["trials"].as_array().unwrap() {
        let key = format!(
            "{}/{}/{}/{}",
            trial["suite"].as_str().unwrap(),
            trial["task"].as_str().unwrap(),
            trial["model"].as_str().unwrap(),
            trial["trial"]
        );
        let file = env.cwd().join("trajectories").join(format!("{key}.json"));
        let trajectory: Value =
            serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(trajectory["session_id"], key.as_str());
        let answers: Vec<&Value> = steps(&trajectory)
            .iter()
            .filter(|s| s["source"] == "agent")
            .collect();
        assert_eq!(
            answers.last().unwrap()["message"],
            trial["finalText"],
            "{key}"
        );
        files.push(file);
    }
    assert_eq!(files.len(), 18);
    validate(&files);
}

#[test]
fn a_live_trials_failed_attempt_is_in_its_trajectory_as_a_dropped_step() {
    let mock = MockLlm::start(&json!([
        {"status": 503, "error_body": {"error": {"message": "overloaded"}}},
        {"text": ["Done."]}
    ]));
    let env = Env::new(&mock);
    std::fs::write(
        env.cwd().join("suite.toml"),
        "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[task]]\nid = \"hello\"\nprompt = \"Say done\"\n\n[[task.check]]\nkind = \"text_contains\"\ntext = \"Done\"\n",
    )
    .unwrap();
    let out = env.run(&[
        "eval",
        "suite.toml",
        "--live",
        "--isolate",
        "none",
        "--out",
        "out",
        "--atif",
        "traj",
        "-q",
    ]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let file = env.cwd().join("traj/suite/hello/mock/mock-model/0.json");
    let trajectory: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let agent: Vec<&Value> = steps(&trajectory)
        .iter()
        .filter(|s| s["source"] == "agent")
        .collect();
    assert_eq!(agent.len(), 2, "{trajectory:#}");
    assert_eq!(agent[0]["extra"]["context_management"]["boundary"], "drop");
    assert_eq!(agent[0]["extra"]["pi"]["retried"], true);
    assert_eq!(agent[1]["message"], "Done.");
    assert_eq!(trajectory["extra"]["eval"]["status"], "passed");
    validate(&[file]);
}

/// `pi eval suite.toml --live --isolate none` of `suite` against `mock`, with `more` flags and
/// `--atif traj`: the results and the trajectory of the suite's only trial, `task` against
/// the mock model.
fn eval_trial(env: &Env, suite: &str, task: &str, more: &[&str]) -> (Value, Value, PathBuf) {
    std::fs::write(env.cwd().join("suite.toml"), suite).unwrap();
    let args = [
        &["eval", "suite.toml", "--live", "--isolate", "none"][..],
        more,
        &["--out", "out", "--atif", "traj", "-q"],
    ]
    .concat();
    let out = env.run(&args);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let results: Value =
        serde_json::from_str(&std::fs::read_to_string(env.cwd().join("out/results.json")).unwrap())
            .unwrap();
    let file = env
        .cwd()
        .join(format!("traj/suite/{task}/mock/mock-model/0.json"));
    let trajectory = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    (results, trajectory, file)
}

#[test]
fn a_trials_compaction_is_a_context_boundary_where_it_happened() {
    let mock = MockLlm::start(&json!([
        // Past the mock model's compaction threshold (its window less the reserve).
        {"text": ["First answer."], "usage": {"input": 120000, "output": 5}},
        {"text": ["## Goal\nA summary."]},
        {"text": ["Second answer."]}
    ]));
    let env = Env::new(&mock);
    let suite = "[[task]]\nid = \"long\"\nsteps = [{ prompt = \"One\" }, { prompt = \"Two\" }]\n\
                 settings = { compaction = { keepRecentTokens = 1 } }\n\n\
                 [[task.check]]\nkind = \"text_contains\"\ntext = \"Second\"\n";
    let suite = format!("[defaults]\nmodels = [\"mock/mock-model\"]\n\n{suite}");
    let (results, trajectory, file) = eval_trial(&env, &suite, "long", &[]);
    let compactions = &results["trials"][0]["compactions"];
    // The system message, the first prompt and its answer ended before it.
    assert_eq!(compactions[0]["afterMessages"], 3, "{results:#}");
    assert!(compactions[0]["summary"]
        .as_str()
        .unwrap()
        .contains("A summary."));
    let all = steps(&trajectory);
    let boundary = all
        .iter()
        .position(|s| s["extra"]["context_management"]["type"] == "compaction")
        .unwrap_or_else(|| panic!("no compaction step: {trajectory:#}"));
    assert_eq!(all[boundary]["source"], "system");
    assert_eq!(
        all[boundary]["extra"]["context_management"]["boundary"],
        "replace"
    );
    assert!(all[boundary]["message"]
        .as_str()
        .unwrap()
        .contains("A summary."));
    assert_eq!(all[boundary - 1]["message"], "First answer.");
    assert_eq!(all[boundary + 1]["message"], "Two");
    assert!(
        all[boundary]["extra"]["pi"]["tokens_before"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(
        trajectory["final_metrics"]["total_steps"],
        all.len(),
        "the boundary is a step of its own, no message repeated"
    );
    validate(&[file]);
}

#[test]
fn a_trials_trajectory_names_its_kept_workspace_or_a_placeholder_path() {
    let suite = "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[task]]\nid = \"hello\"\n\
                 prompt = \"Say done\"\n\n[[task.check]]\nkind = \"text_contains\"\ntext = \"Done\"\n";
    let answers = json!([{"text": ["Done."]}]);
    let mock = MockLlm::start(&answers);
    let env = Env::new(&mock);
    let (results, trajectory, file) = eval_trial(&env, suite, "hello", &["--keep", "kept"]);
    let workspace = results["trials"][0]["workspace"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(Path::new(&workspace).is_absolute(), "{workspace}");
    assert!(Path::new(&workspace).is_dir(), "kept: {workspace}");
    assert!(workspace.starts_with(env.cwd().join("kept").to_str().unwrap()));
    assert_eq!(trajectory["extra"]["pi"]["cwd"], workspace.as_str());
    let prompt = steps(&trajectory)[0]["message"].as_str().unwrap();
    let named = format!("<cwd>\n{workspace}\n</cwd>");
    assert!(prompt.ends_with(&named), "{prompt}");
    validate(&[file]);

    let mock = MockLlm::start(&answers);
    let env = Env::new(&mock);
    let (results, trajectory, file) = eval_trial(&env, suite, "hello", &[]);
    assert!(
        results["trials"][0].get("workspace").is_none(),
        "a removed temporary folder is not named"
    );
    let cwd = trajectory["extra"]["pi"]["cwd"].as_str().unwrap();
    assert!(
        Path::new(cwd).is_absolute(),
        "the kind of value a session holds: {cwd}"
    );
    assert_eq!(trajectory["extra"]["pi"]["workspace_kept"], false);
    let prompt = steps(&trajectory)[0]["message"].as_str().unwrap();
    let named = format!("<cwd>\n{cwd}\n</cwd>");
    assert!(prompt.ends_with(&named), "{prompt}");
    validate(&[file]);
}

#[test]
fn a_trials_tool_definitions_are_the_tools_its_task_offered() {
    let mock = MockLlm::start(&json!([
        {"text": ["Done."]},
        {"text": ["Done."]}
    ]));
    let env = Env::new(&mock);
    let suite = "[defaults]\nmodels = [\"mock/mock-model\"]\n\n\
                 [[task]]\nid = \"some\"\nprompt = \"Say done\"\ntools = [\"read\", \"grep\"]\n\n\
                 [[task.check]]\nkind = \"text_contains\"\ntext = \"Done\"\n\n\
                 [[task]]\nid = \"none\"\nprompt = \"Say done\"\ntools = []\n\n\
                 [[task.check]]\nkind = \"text_contains\"\ntext = \"Done\"\n";
    let (results, trajectory, file) = eval_trial(&env, suite, "some", &["--jobs", "1"]);
    let names: Vec<&str> = trajectory["agent"]["tool_definitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["read", "grep"]);
    let prompt = steps(&trajectory)[0]["message"].as_str().unwrap();
    assert!(prompt.contains("- grep:"), "{prompt}");
    assert!(!prompt.contains("- bash:"), "{prompt}");
    let trials = results["trials"].as_array().unwrap();
    let tools: Vec<&Value> = trials.iter().map(|t| &t["tools"]).collect();
    assert_eq!(tools, [&json!([]), &json!(["read", "grep"])]);
    let none = env.cwd().join("traj/suite/none/mock/mock-model/0.json");
    let bare: Value = serde_json::from_str(&std::fs::read_to_string(&none).unwrap()).unwrap();
    assert_eq!(bare["agent"]["tool_definitions"], json!([]));
    validate(&[file, none]);
}
