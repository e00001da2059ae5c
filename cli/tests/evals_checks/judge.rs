//! `kind = "judge"`: the judge is a second run of the agent command, its model call recorded
//! into a cassette beside the trial's and replayed from it. A judge answering FAIL or garbage
//! fails the check; a judge cassette that is missing, or recorded for another prompt, is an
//! error on replay, never a pass.

use pi_testkit::MockLlm;
use serde_json::{json, Value};

use super::super::{text_step, EvalEnv};
use super::checks;

const RUBRIC: &str = "The answer greets Ada by name.";

/// Each task's trial answers, then its judge: PASS, FAIL, garbage.
fn script() -> Value {
    json!([
        text_step("Hello, Ada!"),
        text_step("PASS it greets Ada by name"),
        text_step("Go away."),
        text_step("FAIL it does not greet anyone"),
        text_step("Hi."),
        text_step("Sure! I think this answer is lovely."),
    ])
}

fn suite(env: &EvalEnv, rubric: &str) -> String {
    let mut text = String::from(
        "name = \"j\"\n[defaults]\nmodels = [\"mock/mock-model\"]\njudge = \"mock/mock-model\"\n",
    );
    for task in ["good", "bad", "garbled"] {
        text.push_str(&format!(
            "\n[[task]]\nid = \"{task}\"\nprompt = \"greet Ada\"\n\n[[task.check]]\nkind = \"judge\"\nrubric = \"{rubric}\"\n"
        ));
    }
    env.write("s/j.toml", &text).to_str().unwrap().to_owned()
}

fn trial<'a>(results: &'a Value, task: &str) -> &'a Value {
    results["trials"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task"] == task)
        .unwrap()
}

fn assert_judged(results: &Value) {
    let good = trial(results, "good");
    assert_eq!(good["status"], "passed", "{good}");
    let bad = trial(results, "bad");
    assert_eq!(bad["status"], "failed", "{bad}");
    let detail = bad["checks"][0]["detail"].as_str().unwrap();
    assert_eq!(detail, "the judge: FAIL it does not greet anyone");
    let garbled = trial(results, "garbled");
    assert_eq!(garbled["status"], "failed", "{garbled}");
    let detail = garbled["checks"][0]["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("the judge did not answer PASS or FAIL"),
        "{detail}"
    );
}

#[test]
fn a_judge_passes_fails_and_refuses_garbage_and_replays_offline_from_its_own_cassette() {
    let mock = MockLlm::start(&script());
    let env = EvalEnv::new(Some(&mock));
    let suite = suite(&env, RUBRIC);
    let recorded = env.eval(&[&suite, "--record", "c", "--jobs", "1", "-q", "--out", "rec"]);
    assert_eq!(
        recorded.code, 0,
        "a failed task is no error: {}",
        recorded.stderr
    );
    let rec = env.results("rec");
    assert_judged(&rec);
    // The judge was asked about the trial's answer, with the rubric, and given no tools.
    let requests = mock.requests();
    assert_eq!(requests.len(), 6);
    let asked = requests[1].to_string();
    assert!(
        asked.contains(RUBRIC) && asked.contains("Hello, Ada!"),
        "{asked}"
    );
    assert!(
        requests[1]["tools"].as_array().is_none_or(Vec::is_empty),
        "{}",
        requests[1]["tools"]
    );
    let beside = env.path("work/c/j/bad/mock/mock-model/0.judge.1.jsonl");
    assert!(beside.is_file(), "the judge's cassette beside the trial's");
    drop(mock);

    let replayed = env.eval(&[&suite, "--replay", "c", "-q", "--out", "rep"]);
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    let rep = env.results("rep");
    assert_judged(&rep);
    for task in ["good", "bad", "garbled"] {
        assert_eq!(checks(&rec, task), checks(&rep, task));
    }

    // A rubric changed since the recording: the recorded verdict is not this rubric's.
    let changed = self::suite(&env, "The answer is in French.");
    let other = env.eval(&[&changed, "--replay", "c", "-q", "--out", "other"]);
    assert_eq!(other.code, 1, "{}", other.stderr);
    let other = env.results("other");
    let good = trial(&other, "good");
    assert_eq!(good["status"], "error", "{good}");
    let reason = good["reason"].as_str().unwrap();
    assert!(reason.contains("another prompt"), "{reason}");

    // The judge's cassette gone: an error that says so, not a pass.
    let suite = self::suite(&env, RUBRIC);
    std::fs::remove_file(env.path("work/c/j/good/mock/mock-model/0.judge.1.jsonl")).unwrap();
    let missing = env.eval(&[&suite, "--replay", "c", "-q", "--out", "missing"]);
    assert_eq!(missing.code, 1, "{}", missing.stderr);
    let missing = env.results("missing");
    let good = trial(&missing, "good");
    assert_eq!(good["status"], "error", "{good}");
    let reason = good["reason"].as_str().unwrap();
    assert!(reason.contains("no judge cassette"), "{reason}");
    assert_eq!(trial(&missing, "bad")["status"], "failed");
}

/// The judge against the real local LLM, when it runs: its call recorded and replayed to the
/// same check result with the model gone. Whatever the small model answers, only a PASS line
/// can pass.
#[test]
fn a_judge_on_the_local_llm_is_recorded_and_replays_to_the_same_verdict() {
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
    let suite = env.write(
        "s/local.toml",
        "name = \"lj\"\n[defaults]\nmodels = [\"local/smollm2-135m-instruct\"]\njudge = \"local/smollm2-135m-instruct\"\ntools = []\n\n\
         [[task]]\nid = \"hello\"\nprompt = \"Say hello.\"\n\n[[task.check]]\nkind = \"judge\"\nrubric = \"The answer says hello.\"\n",
    );
    let suite = suite.to_str().unwrap();
    let live = env.eval(&[suite, "--record", "c", "-q", "--out", "live"]);
    assert_eq!(live.code, 0, "{}", live.stderr);
    let recorded = env.results("live");
    let judged = &trial(&recorded, "hello")["checks"][0];
    assert_ne!(trial(&recorded, "hello")["status"], "error", "{recorded}");
    let detail = judged["detail"].as_str().unwrap_or_default();
    assert!(
        judged["passed"] == true || detail.starts_with("the judge"),
        "{judged}"
    );
    assert!(env
        .path("work/c/lj/hello/local/smollm2-135m-instruct/0.judge.1.jsonl")
        .is_file());
    std::fs::write(env.path("agent/models.json"), "{}").unwrap();
    let replayed = env.eval(&[suite, "--replay", "c", "-q", "--out", "again"]);
    assert_eq!(replayed.code, live.code, "{}", replayed.stderr);
    let again = env.results("again");
    assert_eq!(&trial(&again, "hello")["checks"][0], judged);
}

/// Ctrl-C while the judge waits on its model: the trial is left out as cancelled, like one cut
/// short while its agent ran, not written as an error (which `--resume` would keep).
#[test]
fn ctrl_c_during_the_judge_leaves_the_trial_out_not_an_error() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    use std::time::{Duration, Instant};

    let mock = MockLlm::start(&json!([
        text_step("Hello, Ada!"),
        {"text": ["PASS"], "hang_ms": 60000},
    ]));
    let env = EvalEnv::new(Some(&mock));
    let suite = env.write(
        "s/one.toml",
        &format!(
            "name = \"one\"\n[defaults]\nmodels = [\"mock/mock-model\"]\njudge = \"mock/mock-model\"\n\n\
             [[task]]\nid = \"t\"\nprompt = \"greet Ada\"\n\n[[task.check]]\nkind = \"judge\"\nrubric = \"{RUBRIC}\"\n"
        ),
    );
    let mut child = env
        .command(&[suite.to_str().unwrap(), "--jobs", "1", "-q", "--out", "o"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while mock.requests().len() < 2 {
        assert!(Instant::now() < deadline, "the judge never asked");
        std::thread::sleep(Duration::from_millis(20));
    }
    kill(
        Pid::from_raw(i32::try_from(child.id()).unwrap()),
        Signal::SIGINT,
    )
    .unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let cut = env.results("o");
    assert_eq!(cut["interrupted"], true);
    assert_eq!(cut["trials"], json!([]), "{cut}");
}

/// A judge's model calls are spent by its trial: `--max-cost` counts them (a run whose judges
/// spend past the limit starts no more trials), results keep them apart under `judge` as well
/// as in the trial's totals, every report shows them, and a replayed judge is replayed cost.
#[test]
fn a_judges_spending_counts_toward_the_cost_limit_and_shows_in_every_report() {
    // The agent's answer is free; the judge's reports a million input tokens: one dollar at
    // the mock model's price (more than its context window, so compaction is off).
    let free = json!({"text": ["Hello, Ada!"], "usage": {"input": 0, "output": 0}});
    let judge = json!({"text": ["PASS it greets Ada"], "usage": {"input": 1_000_000, "output": 0}});
    let mock = MockLlm::start(&json!([free, judge, free, judge, free, judge]));
    let env = EvalEnv::new(Some(&mock));
    let suite = env.write(
        "s/paid.toml",
        &format!(
            "name = \"paid\"\n[defaults]\nmodels = [\"mock/mock-model\"]\njudge = \"mock/mock-model\"\ntrials = 3\n\
             settings = {{ compaction = {{ enabled = false }} }}\n\n\
             [[task]]\nid = \"t\"\nprompt = \"greet Ada\"\n\n[[task.check]]\nkind = \"judge\"\nrubric = \"{RUBRIC}\"\n"
        ),
    );
    let suite = suite.to_str().unwrap();
    let ran = env.eval(&[
        suite,
        "--record",
        "c",
        "--jobs",
        "1",
        "--isolate",
        "none",
        "--max-cost",
        "1",
        "--progress",
        "quiet",
        "--out",
        "o",
    ]);
    assert_eq!(
        ran.code, 3,
        "the judge's dollar reached the limit: {}",
        ran.stderr
    );
    assert_eq!(
        mock.requests().len(),
        2,
        "no trial started after the judge's $1"
    );
    let results = env.results("o");
    assert_eq!(results["stopped"], "cost limit $1.00 reached");
    let trial = &results["trials"][0];
    assert_eq!(results["trials"].as_array().unwrap().len(), 1, "{results}");
    assert_eq!(trial["cost"], 1.0, "{trial}");
    assert_eq!(trial["usage"]["input"], 1_000_000, "{trial}");
    assert_eq!(trial["calls"]["live"], 2, "{trial}");
    assert_eq!(trial["judge"]["cost"], 1.0, "{trial}");
    assert_eq!(trial["judge"]["usage"]["input"], 1_000_000, "{trial}");
    assert_eq!(trial["judge"]["calls"]["live"], 1, "{trial}");
    assert_eq!(results["models"][0]["judge"]["cost"], 1.0, "{results}");

    assert!(
        ran.stdout.contains(
            "judge calls (counted above): mock/mock-model $1.0000 live, $0.0000 recorded"
        ),
        "{}",
        ran.stdout
    );
    let summary = std::fs::read_to_string(env.path("work/o/summary.md")).unwrap();
    assert!(
        summary.contains(
            "Judge calls (counted above): mock/mock-model $1.0000 live / $0.0000 replayed"
        ),
        "{summary}"
    );
    let html = std::fs::read_to_string(env.path("work/o/report.html")).unwrap();
    assert!(
        html.contains("<dt>of which the judge</dt><dd>$1.0000 / $0.0000</dd>"),
        "the model card"
    );
    assert!(
        html.contains(
            "<dt>judge</dt><dd>1 live · 0 replayed calls · $1.0000 live · $0.0000 replayed"
        ),
        "the trial"
    );

    // Replayed, the judge's dollar was not spent again: it is replayed cost, like the agent's.
    drop(mock);
    let replayed = env.eval(&[suite, "--replay", "c", "--trials", "1", "-q", "--out", "r"]);
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    let again = &env.results("r")["trials"][0];
    assert_eq!(again["cost"], 0.0, "{again}");
    assert_eq!(again["replayedCost"], 1.0, "{again}");
    assert_eq!(again["judge"]["replayedCost"], 1.0, "{again}");
    assert_eq!(again["judge"]["calls"]["replayed"], 1, "{again}");
    assert!(
        again["judge"].get("cost").is_none_or(|c| c == 0.0),
        "{again}"
    );
}
