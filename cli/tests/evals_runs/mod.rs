//! A run as the binary drives it: the shipped smoke suite's scores, the printed table, the turn
//! and wall-time limits, Ctrl-C, shards and their merge, filters, an invalid suite, and `compare`.

use std::process::Stdio;
use std::time::{Duration, Instant};

use pi_testkit::{processes_with, unique_marker, wait_until_gone, MockLlm};
use serde_json::{json, Value};

use super::{repo, text_step, tool_step, verdicts, EvalEnv};

#[test]
fn the_shipped_smoke_suite_runs_offline_and_prints_its_scores() {
    let env = EvalEnv::new(None);
    let suite = repo("evals/suites/smoke.toml");
    let ran = env.eval(&[
        suite.to_str().unwrap(),
        "--out",
        "out",
        "--progress",
        "plain",
    ]);
    assert_eq!(ran.code, 0, "{}\n{}", ran.stdout, ran.stderr);
    insta::assert_snapshot!(ran.stdout);
    let results = env.results("out");
    assert_eq!(results["schemaVersion"], 1);
    assert_eq!(results["mode"], "replay");
    let verdicts = verdicts(&results);
    assert_eq!(verdicts.len(), 18);
    let failed: Vec<&(String, String)> = verdicts.iter().filter(|(_, s)| s != "passed").collect();
    assert_eq!(
        failed,
        [&(
            "smoke/count-lines/mock/mock-model/1".to_owned(),
            "failed".to_owned()
        )]
    );
    for trial in results["trials"].as_array().unwrap() {
        assert_eq!(trial["cost"], 0.0, "a replay spends nothing");
        assert!(trial["replayedCost"].as_f64().unwrap() > 0.0);
        assert!(trial["calls"]["replayed"].as_u64().unwrap() >= 2);
        assert_eq!(trial["calls"]["live"], 0);
    }
    for report in ["junit.xml", "summary.md", "report.html"] {
        let text = std::fs::read_to_string(env.path("work/out").join(report)).unwrap();
        assert!(text.contains("count-lines"), "{report} names the tasks");
    }
}

/// Found by the mutation fuzz (`rpc_robustness.rs`, module `fuzz`): a name wider than a
/// formatting width may be (65,535) made the summary panic.
#[test]
fn a_task_id_longer_than_any_column_is_printed_whole() {
    let env = EvalEnv::new(None);
    let id = "t".repeat(70_000);
    std::fs::create_dir_all(env.path("work/nothing-here")).unwrap();
    let suite = env.write(
        "suite/wide.toml",
        &format!("[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[task]]\nid = \"{id}\"\nprompt = \"hi\"\n"),
    );
    let ran = env.eval(&[
        suite.to_str().unwrap(),
        "--replay",
        "nothing-here",
        "-q",
        "--out",
        "o",
    ]);
    assert!(!ran.stderr.contains("panicked"), "{}", ran.stderr);
    assert_eq!(ran.code, 1, "the trial has no cassette: {}", ran.stderr);
    assert!(ran.stdout.contains(&format!("wide/{id}  mock/mock-model")));
}

#[test]
fn a_turn_limit_stops_the_agent_at_once() {
    let steps: Vec<Value> = (0..8)
        .map(|i| tool_step(&format!("c{i}"), "bash", json!({"command": "true"})))
        .collect();
    let mock = MockLlm::start(&Value::Array(steps));
    let env = EvalEnv::new(Some(&mock));
    let suite = env.write(
        "s/limits.toml",
        "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[task]]\nid = \"loop\"\nprompt = \"go\"\nlimits = { turns = 2 }\n",
    );
    let ran = env.eval(&[suite.to_str().unwrap(), "-q", "--out", "o"]);
    assert_eq!(
        ran.code, 0,
        "a limit is a verdict, not a broken run: {}",
        ran.stderr
    );
    let trial = env.results("o")["trials"][0].clone();
    assert_eq!(trial["status"], "limit");
    assert_eq!(trial["score"], 0.0);
    assert!(
        trial["reason"].as_str().unwrap().starts_with("turn limit"),
        "{trial}"
    );
    assert!(
        mock.requests().len() <= 4,
        "stopped at once: {} requests",
        mock.requests().len()
    );
}

#[test]
fn a_wall_time_limit_stops_a_hanging_model_and_leaves_no_process() {
    let marker = unique_marker("eval-hang");
    let mock = MockLlm::start(&json!([{"text": ["slow"], "hang_ms": 60000}]));
    let env = EvalEnv::new(Some(&mock));
    let suite = env.write(
        "s/hang.toml",
        &format!("[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[task]]\nid = \"hang\"\nprompt = \"{marker}\"\nlimits = {{ wall_time = 1 }}\n"),
    );
    let started = Instant::now();
    let ran = env.eval(&[suite.to_str().unwrap(), "-q", "--out", "o"]);
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let trial = env.results("o")["trials"][0].clone();
    assert_eq!(trial["status"], "limit", "{trial}");
    assert!(
        trial["reason"]
            .as_str()
            .unwrap()
            .starts_with("wall-time limit"),
        "{trial}"
    );
    wait_until_gone(&marker, Duration::from_secs(5));
}

#[test]
fn ctrl_c_stops_the_running_trials_and_writes_the_finished_ones() {
    let marker = unique_marker("eval-interrupt");
    let mock = MockLlm::start(&json!([{"text": ["done"]}, {"text": ["never"], "hang_ms": 60000}]));
    let env = EvalEnv::new(Some(&mock));
    let suite = env.write(
        "s/int.toml",
        &format!("[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[task]]\nid = \"quick\"\nprompt = \"hi\"\n\n[[task]]\nid = \"stuck\"\nprompt = \"{marker}\"\n"),
    );
    let mut child = env
        .command(&[suite.to_str().unwrap(), "--jobs", "1", "-q", "--out", "o"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while mock.requests().len() < 2 {
        assert!(
            Instant::now() < deadline,
            "the second trial never asked the model"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!processes_with(&marker).is_empty());
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap()),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let results = env.results("o");
    assert_eq!(
        verdicts(&results),
        [(
            "int/quick/mock/mock-model/0".to_owned(),
            "passed".to_owned()
        )]
    );
    wait_until_gone(&marker, Duration::from_secs(5));
}

#[test]
fn shards_split_the_trials_and_merge_joins_them_into_the_whole_run() {
    let env = EvalEnv::new(None);
    let suite = repo("evals/suites/smoke.toml");
    let suite = suite.to_str().unwrap();
    assert_eq!(env.eval(&[suite, "-q", "--out", "all"]).code, 0);
    let first = env.eval(&[suite, "-q", "--shard", "0/2", "--out", "s0"]);
    let mut second = env.command(&[suite, "-q", "--shard", "auto/2", "--out", "s1"]);
    let second = second.env("JOB_COMPLETION_INDEX", "1").output().unwrap();
    assert_eq!((first.code, second.status.code()), (0, Some(0)));
    let (s0, s1) = (verdicts(&env.results("s0")), verdicts(&env.results("s1")));
    assert!(!s0.is_empty() && !s1.is_empty(), "both shards have work");
    // A killed run's journal left in the folder merged into: the merged run replaces it, so a
    // later --resume does not take up the killed run (a merged run has nothing to resume).
    let mut killed = env.results("s0");
    let trials = killed["trials"].take();
    killed["trials"] = serde_json::json!([]);
    let journal = format!("{killed}\n{}\n", trials[0]);
    env.write("work/merged/journal.jsonl", &journal);
    let merged = env.eval(&[
        "merge",
        "s0/results.json",
        "s1/results.json",
        "--out",
        "merged",
    ]);
    assert_eq!(merged.code, 0, "{}", merged.stderr);
    let (all, joined) = (env.results("all"), env.results("merged"));
    assert_eq!(verdicts(&all), verdicts(&joined));
    let resumed = env.eval(&["--resume", "merged"]);
    assert!(
        resumed.code == 2 && resumed.stderr.contains("pi eval merge"),
        "{}",
        resumed.stderr
    );
    assert_eq!(verdicts(&all), verdicts(&env.results("merged")));
    let without_time = |results: &Value| {
        let mut tasks = results["tasks"].clone();
        for task in tasks.as_array_mut().unwrap() {
            task.as_object_mut().unwrap().remove("meanWallMs");
        }
        tasks
    };
    assert_eq!(without_time(&all), without_time(&joined));
    let twice = env.eval(&[
        "merge",
        "s0/results.json",
        "s0/results.json",
        "--out",
        "bad",
    ]);
    assert_eq!(
        twice.code, 2,
        "a shard given twice is refused: {}",
        twice.stderr
    );
}

#[test]
fn filters_pick_tasks_by_name_or_suite_and_name() {
    let env = EvalEnv::new(None);
    let suite = repo("evals/suites/smoke.toml");
    let ran = env.eval(&[
        suite.to_str().unwrap(),
        "-q",
        "--filter",
        "c*",
        "--filter",
        "smoke/no-*",
        "--out",
        "o",
    ]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let mut tasks: Vec<String> = verdicts(&env.results("o"))
        .into_iter()
        .map(|(k, _)| k.split('/').nth(1).unwrap().to_owned())
        .collect();
    tasks.dedup();
    assert_eq!(tasks, ["count-lines", "create-file", "no-delete"]);
    let none = env.eval(&[suite.to_str().unwrap(), "--filter", "zzz"]);
    assert_eq!(none.code, 2);
    assert!(none.stderr.contains("no task matches"), "{}", none.stderr);
}

#[test]
fn an_invalid_suite_exits_2_naming_file_line_task_and_field() {
    let env = EvalEnv::new(None);
    let suite = env.write(
        "bad.toml",
        "[defaults]\nmodels = [\"m\"]\n\n[[task]]\nid = \"t\"\nprompt = \"p\"\n\n[[task.check]]\nkind = \"text_matches\"\nregex = \"(\"\n",
    );
    let ran = env.eval(&[suite.to_str().unwrap()]);
    assert_eq!(ran.code, 2);
    assert!(
        ran.stderr
            .contains("bad.toml:8: task `t`: field `check.regex`: not a valid regular expression"),
        "{}",
        ran.stderr
    );
}

#[test]
fn compare_calls_a_consistent_drop_a_regression_and_one_flip_noise() {
    let passing: Vec<Value> = (0..6)
        .flat_map(|_| [text_step("The code is 77.")])
        .collect();
    let failing: Vec<Value> = (0..6).flat_map(|_| [text_step("I do not know.")]).collect();
    let suite_text = "[defaults]\nmodels = [\"mock/mock-model\"]\ntrials = 6\n\n[[task]]\nid = \"code\"\nprompt = \"code?\"\n\n[[task.check]]\nkind = \"text_contains\"\ntext = \"77\"\n";
    let run = |script: Vec<Value>, out: &str, env: &EvalEnv| {
        let mock = MockLlm::start(&Value::Array(script));
        env.serve(&mock);
        let suite = env.write("c.toml", suite_text);
        let ran = env.eval(&[suite.to_str().unwrap(), "--jobs", "1", "-q", "--out", out]);
        assert_eq!(ran.code, 0, "{}", ran.stderr);
    };
    let env = EvalEnv::new(None);
    run(passing.clone(), "a", &env);
    run(failing, "b", &env);
    let mut one_flip = passing;
    one_flip[0] = text_step("I do not know.");
    run(one_flip, "c", &env);
    let same = env.eval(&[
        "compare",
        "a/results.json",
        "a/results.json",
        "--fail-on-regression",
    ]);
    assert_eq!(same.code, 0, "{}", same.stdout);
    let worse = env.eval(&[
        "compare",
        "a/results.json",
        "b/results.json",
        "--fail-on-regression",
        "--html",
        "compare.html",
    ]);
    assert_eq!(worse.code, 1, "{}", worse.stdout);
    // The side-by-side page: the regressed row, and what each run answered.
    let page = std::fs::read_to_string(env.path("work/compare.html")).unwrap();
    assert!(page.contains("6/6 · 100.0%") && page.contains("0/6 · 0.0%"));
    assert!(page.contains("badge verdict-regressed"));
    let (side_a, side_b) = page.split_once("class=\"side side-b\"").unwrap();
    assert!(side_a.contains("The code is 77.") && !side_a.contains("I do not know."));
    assert!(side_b.contains("I do not know.") && side_b.contains("final text contains"));
    assert!(
        worse.stdout.to_lowercase().contains("regress"),
        "{}",
        worse.stdout
    );
    let noise = env.eval(&[
        "compare",
        "a/results.json",
        "c/results.json",
        "--fail-on-regression",
    ]);
    assert_eq!(
        noise.code, 0,
        "one failure in six is not called a regression: {}",
        noise.stdout
    );
    let without_flag = env.eval(&["compare", "a/results.json", "b/results.json"]);
    assert_eq!(without_flag.code, 0);
}
