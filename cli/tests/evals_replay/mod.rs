//! A run recorded and replayed: the same verdicts and transcripts with the model gone, a
//! changed workspace a divergence, `--once`, a missing cassette's error, and a replay in process
//! against one in a process of its own.

use std::path::PathBuf;

use pi_testkit::MockLlm;
use serde_json::Value;

use super::{repo, two_task_script, two_task_suite, verdicts, EvalEnv};

#[test]
fn a_recorded_run_replays_to_the_same_verdicts_and_transcripts_with_the_model_gone() {
    let mock = MockLlm::start(&two_task_script(2));
    let env = EvalEnv::new(Some(&mock));
    let suite = two_task_suite(&env, 2);
    let suite = suite.to_str().unwrap();
    let recorded = env.eval(&[
        suite,
        "--record",
        "cassettes",
        "--jobs",
        "1",
        "--out",
        "rec",
        "-q",
    ]);
    assert_eq!(recorded.code, 0, "{}", recorded.stderr);
    drop(mock);
    let replayed = env.eval(&[suite, "--replay", "cassettes", "--out", "rep", "-q"]);
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    let (rec, rep) = (env.results("rec"), env.results("rep"));
    assert_eq!(rec["mode"], "record");
    assert_eq!(rep["mode"], "replay");
    assert_eq!(verdicts(&rec), verdicts(&rep));
    assert!(verdicts(&rep).iter().all(|(_, s)| s == "passed"));
    for (a, b) in rec["trials"]
        .as_array()
        .unwrap()
        .iter()
        .zip(rep["trials"].as_array().unwrap())
    {
        assert_eq!(
            a["transcript"], b["transcript"],
            "the replay says what the run said"
        );
        assert_eq!(a["usage"], b["usage"]);
        assert_eq!(
            a["cost"], b["replayedCost"],
            "recorded spend is counted as replayed"
        );
        assert_eq!(a["cassette"], b["cassette"]);
    }
    assert!(env
        .path("work/cassettes/two/answer/mock/mock-model/1.jsonl")
        .is_file());
    // Both reports link each trial to its cassette, relative to the report's folder.
    for out in ["rec", "rep"] {
        let mut linked = cassette_links(&env, out);
        linked.sort();
        let mut want: Vec<PathBuf> = rep["trials"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                env.path("work/cassettes")
                    .join(t["cassette"].as_str().unwrap())
                    .canonicalize()
                    .unwrap()
            })
            .collect();
        want.sort();
        assert_eq!(linked, want, "{out}");
    }
}

/// The files the cassette links of `out/report.html` lead to, followed from its folder.
fn cassette_links(env: &EvalEnv, out: &str) -> Vec<PathBuf> {
    let folder = env.path("work").join(out);
    let html = std::fs::read_to_string(folder.join("report.html")).unwrap();
    html.split("<a class=\"cassette\" href=\"")
        .skip(1)
        .map(|rest| {
            let href = &rest[..rest.find('"').unwrap()];
            assert!(!href.contains(':') && !href.starts_with('/'), "{href}");
            folder.join(href).canonicalize().unwrap()
        })
        .collect()
}

#[test]
fn a_workspace_that_changed_is_a_divergence_not_a_failed_task() {
    let mock = MockLlm::start(&two_task_script(1));
    let env = EvalEnv::new(Some(&mock));
    let suite = two_task_suite(&env, 1);
    let suite = suite.to_str().unwrap();
    assert_eq!(
        env.eval(&[suite, "--record", "c", "--jobs", "1", "-q", "--out", "a"])
            .code,
        0
    );
    drop(mock);
    env.write("suite/fixtures/notes/notes.txt", "The code is 78.\n");
    let ran = env.eval(&[suite, "--replay", "c", "-q", "--out", "b"]);
    assert_eq!(ran.code, 1, "a divergence fails the run: {}", ran.stdout);
    let results = env.results("b");
    let answer = &results["trials"].as_array().unwrap()[0];
    assert_eq!(answer["task"], "answer");
    assert_eq!(answer["status"], "diverged");
    let reason = answer["reason"].as_str().unwrap();
    assert!(reason.contains("diverged at step"), "{reason}");
    assert!(
        ran.stdout.contains("diverged two/answer/mock/mock-model/0"),
        "{}",
        ran.stdout
    );
    assert_eq!(
        results["trials"][1]["status"], "passed",
        "the other task still replays"
    );
}

#[test]
fn once_replays_what_is_recorded_and_records_the_rest() {
    let mock = MockLlm::start(&two_task_script(1));
    let env = EvalEnv::new(Some(&mock));
    let suite = two_task_suite(&env, 1);
    let suite = suite.to_str().unwrap();
    let first = env.eval(&[
        suite, "--once", "c", "--filter", "write", "-q", "--out", "a",
    ]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(mock.requests().len(), 2);
    // The write task's replies are used up: the answer task gets its own from the script.
    let mock_answers = MockLlm::start(&Value::Array(
        two_task_script(1).as_array().unwrap()[2..].to_vec(),
    ));
    env.serve(&mock_answers);
    let second = env.eval(&[suite, "--once", "c", "-q", "--out", "b"]);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert_eq!(
        mock_answers.requests().len(),
        2,
        "only the missing trial went live"
    );
    let trials = env.results("b")["trials"].clone();
    assert_eq!(trials[0]["task"], "answer");
    assert_eq!(trials[0]["calls"]["live"], 2);
    assert_eq!(trials[1]["calls"]["replayed"], 2);
}

#[test]
fn a_missing_cassette_is_an_error_that_says_how_to_record_it() {
    let env = EvalEnv::new(None);
    std::fs::create_dir_all(env.path("work/nothing-here")).unwrap();
    let suite = two_task_suite(&env, 1);
    let ran = env.eval(&[
        suite.to_str().unwrap(),
        "--replay",
        "nothing-here",
        "-q",
        "--out",
        "o",
    ]);
    assert_eq!(ran.code, 1);
    let results = env.results("o");
    let reason = results["trials"][0]["reason"].as_str().unwrap();
    assert_eq!(results["trials"][0]["status"], "error");
    assert!(reason.contains("record it with --record DIR"), "{reason}");
}

#[test]
fn a_replay_in_process_and_one_in_a_process_of_its_own_give_the_same_results() {
    let env = EvalEnv::new(None);
    let suite = repo("evals/suites/smoke.toml");
    let suite = suite.to_str().unwrap();
    assert_eq!(env.eval(&[suite, "-q", "--out", "inside"]).code, 0);
    assert_eq!(
        env.eval(&[suite, "-q", "--replay-processes", "--out", "outside"])
            .code,
        0
    );
    let trials = |out: &str| {
        let mut trials = env.results(out)["trials"].clone();
        for trial in trials.as_array_mut().unwrap() {
            trial.as_object_mut().unwrap().remove("wallMs");
        }
        trials
    };
    assert_eq!(trials("inside"), trials("outside"));
}
