//! Real agents and real problems: a converted HumanEval suite scored by running each problem's
//! tests, the local LLM recorded then replayed, and the original Pi as the agent.

use std::process::Command;

use pi_testkit::MockLlm;
use serde_json::{json, Value};

use super::{
    bwrap_usable, repo, text_step, tool_step, two_task_script, two_task_suite, verdicts, EvalEnv,
};

#[test]
fn a_converted_humaneval_suite_is_scored_by_running_each_problems_tests() {
    let env = EvalEnv::new(None);
    let problems = repo("evals/tests/data/tiny.jsonl.gz");
    let converted = env.eval(&[
        "convert",
        "humaneval",
        problems.to_str().unwrap(),
        "--out",
        "he",
        "--model",
        "mock/mock-model",
    ]);
    assert_eq!(converted.code, 0, "{}", converted.stderr);
    assert!(
        converted.stdout.starts_with("3 tasks: he/humaneval.toml"),
        "{}",
        converted.stdout
    );
    let bad = env.write("bad.jsonl", "{\"task_id\": \"X/0\"}\n");
    let refused = env.eval(&[
        "convert",
        "humaneval",
        bad.to_str().unwrap(),
        "--out",
        "bad",
    ]);
    assert_eq!(refused.code, 2);
    assert!(
        refused.stderr.contains(":1"),
        "names the line: {}",
        refused.stderr
    );
    if std::process::Command::new("python3")
        .arg("--version")
        .output()
        .is_err()
    {
        pi_testkit::skip("python3 is not installed: the converted suite's checks need it");
        return;
    }
    let solution =
        std::fs::read_to_string(env.path("work/he/fixtures/tiny-0/solution.py")).unwrap();
    let mock = MockLlm::start(&json!([
        tool_step(
            "c1",
            "write",
            json!({"path": "solution.py", "content": format!("{solution}    return a + b\n")})
        ),
        text_step("Done."),
        tool_step(
            "c1",
            "write",
            json!({"path": "solution.py", "content": "def quote_path(path):\n    return path\n"})
        ),
        text_step("Done."),
        text_step("I cannot do that."),
    ]));
    env.serve(&mock);
    let ran = env.eval(&["he/humaneval.toml", "--jobs", "1", "-q", "--out", "o"]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let statuses: Vec<(String, String)> = verdicts(&env.results("o"));
    assert_eq!(
        statuses,
        [
            (
                "humaneval/tiny-0/mock/mock-model/0".to_owned(),
                "passed".to_owned()
            ),
            (
                "humaneval/tiny-1/mock/mock-model/0".to_owned(),
                "failed".to_owned()
            ),
            (
                "humaneval/tiny-2/mock/mock-model/0".to_owned(),
                "failed".to_owned()
            ),
        ]
    );
}

#[test]
fn a_suite_run_live_against_the_local_llm_replays_to_the_same_verdicts() {
    let Some(base_url) = pi_testkit::live_llm_base_url() else {
        return;
    };
    let env = EvalEnv::new(None);
    let models = json!({"providers": {"local": {
        "baseUrl": base_url, "api": "openai-completions", "apiKey": "local",
        "compat": {"maxTokensField": "max_tokens"},
        "models": [{"id": "smollm2-135m-instruct", "name": "SmolLM2 135M",
                    "contextWindow": pi_testkit::LIVE_LLM_CONTEXT_WINDOW, "maxTokens": 64}]}}});
    std::fs::write(env.path("agent/models.json"), models.to_string()).unwrap();
    let suite = repo("evals/suites/local-llm.toml");
    let suite = suite.to_str().unwrap();
    let live = env.eval(&[
        suite,
        "--trials",
        "1",
        "--filter",
        "greet",
        "--filter",
        "make-file",
        "--record",
        "c",
        "--jobs",
        "1",
        "-q",
        "--out",
        "live",
    ]);
    assert_eq!(live.code, 0, "{}", live.stderr);
    let recorded = env.results("live");
    assert_eq!(recorded["mode"], "record");
    for trial in recorded["trials"].as_array().unwrap() {
        assert!(trial["calls"]["live"].as_u64().unwrap() >= 1, "{trial}");
        assert!(trial["usage"]["totalTokens"].as_u64().unwrap() > 0);
    }
    std::fs::write(env.path("agent/models.json"), "{}").unwrap();
    let replayed = env.eval(&[
        suite,
        "--trials",
        "1",
        "--filter",
        "greet",
        "--filter",
        "make-file",
        "--replay",
        "c",
        "-q",
        "--out",
        "again",
    ]);
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    let again = env.results("again");
    assert_eq!(verdicts(&recorded), verdicts(&again));
    for (a, b) in recorded["trials"]
        .as_array()
        .unwrap()
        .iter()
        .zip(again["trials"].as_array().unwrap())
    {
        assert_eq!(a["transcript"], b["transcript"]);
        assert_eq!(a["checks"], b["checks"], "the same files were left behind");
    }
}

#[test]
fn the_original_pi_can_be_the_agent_and_gets_the_same_verdicts() {
    let Some(original) = pi_testkit::original_pi() else {
        return;
    };
    let script = || {
        let mut steps = two_task_script(1).as_array().unwrap().clone();
        // The steered task: a write, then (with the steer delivered) an answer naming it.
        steps.push(tool_step(
            "c1",
            "write",
            json!({"path": "poem.txt", "content": "crabs\n"}),
        ));
        steps.push(text_step("Done, about crabs."));
        Value::Array(steps)
    };
    let env = EvalEnv::new(None);
    let suite = two_task_suite(&env, 1);
    let steered = env.write(
        "suite/steered.toml",
        "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[task]]\nid = \"poem\"\nsteps = [{ prompt = \"-- a poem, please\" }, { steer = \"about crabs\" }]\n\n[[task.check]]\nkind = \"text_contains\"\ntext = \"crabs\"\n",
    );
    let mut finals = Vec::new();
    for agent in [None, Some(original.to_str().unwrap())] {
        let mock = MockLlm::start(&script());
        env.serve(&mock);
        let out = if agent.is_some() { "original" } else { "ours" };
        let mut args = vec![
            suite.to_str().unwrap(),
            steered.to_str().unwrap(),
            "--jobs",
            "1",
            "-q",
            "--out",
            out,
        ];
        if let Some(agent) = agent {
            args.extend(["--agent", agent]);
        }
        let ran = env.eval(&args);
        assert_eq!(ran.code, 0, "{out}: {}", ran.stderr);
        let results = env.results(out);
        assert!(
            verdicts(&results).iter().all(|(_, s)| s == "passed"),
            "{out}: {:?}",
            verdicts(&results)
        );
        let texts: Vec<Value> = results["trials"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["finalText"].clone())
            .collect();
        finals.push(texts);
        let steer_request = &mock.requests()[5];
        assert!(
            steer_request.to_string().contains("about crabs"),
            "{out}: the steer reached the model"
        );
    }
    assert_eq!(finals[0], finals[1]);
}

/// A converted HumanEval problem, run confined against the mock: the agent looks for the tests
/// (the suite file, by absolute path) and cannot read them; a solution that raises
/// `SystemExit(0)` fails the check; the right one passes it.
#[test]
fn a_humaneval_solution_that_exits_early_fails_and_the_agent_cannot_read_the_tests() {
    if !bwrap_usable() {
        return;
    }
    if Command::new("python3").arg("--version").output().is_err() {
        pi_testkit::skip("python3 is not installed: the converted suite's checks need it");
        return;
    }
    let env = EvalEnv::outside_tmp(None);
    let problems = repo("evals/tests/data/tiny.jsonl.gz");
    let converted = env.eval(&[
        "convert",
        "humaneval",
        problems.to_str().unwrap(),
        "--out",
        "he",
        "--model",
        "mock/mock-model",
        "--limit",
        "1",
    ]);
    assert_eq!(converted.code, 0, "{}", converted.stderr);
    let suite = env.path("work/he/humaneval.toml");
    assert!(std::fs::read_to_string(&suite)
        .unwrap()
        .contains("def check("));
    let solution =
        std::fs::read_to_string(env.path("work/he/fixtures/tiny-0/solution.py")).unwrap();
    let look = format!(
        "cat {} 2>&1; ls {} 2>&1; echo looked",
        suite.display(),
        suite.parent().unwrap().display()
    );
    let mock = MockLlm::start(&json!([
        tool_step("c1", "bash", json!({"command": look})),
        tool_step(
            "c2",
            "write",
            json!({"path": "solution.py", "content": format!("{solution}    raise SystemExit(0)\n")})
        ),
        text_step("Done."),
        tool_step(
            "c1",
            "write",
            json!({"path": "solution.py", "content": format!("{solution}    return a + b\n")})
        ),
        text_step("Done."),
    ]));
    env.serve(&mock);
    let ran = env.eval(&[
        "he/humaneval.toml",
        "--trials",
        "2",
        "--jobs",
        "1",
        "-q",
        "--out",
        "o",
    ]);
    assert_eq!(ran.code, 0, "{}{}", ran.stdout, ran.stderr);
    let results = env.results("o");
    assert_eq!(
        verdicts(&results),
        [
            (
                "humaneval/tiny-0/mock/mock-model/0".to_owned(),
                "failed".to_owned()
            ),
            (
                "humaneval/tiny-0/mock/mock-model/1".to_owned(),
                "passed".to_owned()
            ),
        ]
    );
    let looked = results["trials"][0]["transcript"].to_string();
    assert!(looked.contains("looked"), "the command ran: {looked}");
    assert!(looked.contains("No such file"), "{looked}");
    assert!(
        !looked.contains("def check("),
        "the agent read the tests: {looked}"
    );
}
