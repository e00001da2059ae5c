//! `pi eval` end to end: the real binary runs suites whose agents talk to the kit's mock model
//! over real HTTP on 127.0.0.1 (or replay cassettes), in real temp workspaces; the checks run
//! real commands; results and reports are read back from disk.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "evals_checks/mod.rs"]
mod checks;
mod common;
#[path = "evals_interrupt/mod.rs"]
mod interrupt;
#[path = "evals_suites/mod.rs"]
mod suites;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pi_testkit::{processes_with, unique_marker, wait_until_gone, MockLlm};
use serde_json::{json, Value};

/// A scratch folder with an agent dir (models.json at the mock, when there is one), a HOME and
/// a working directory, where suites are written and `pi eval` runs.
struct EvalEnv {
    root: tempfile::TempDir,
    /// This build's `pi`, at a path the agents' user can reach (see [`reachable_pi`]).
    pi: PathBuf,
    /// Holds the link to `pi`, when there is one.
    _pi_folder: Option<tempfile::TempDir>,
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

impl EvalEnv {
    fn new(mock: Option<&MockLlm>) -> EvalEnv {
        EvalEnv::in_dir(tempfile::tempdir().unwrap(), mock)
    }

    /// Outside the system's temp folder, which a confined command's private `/tmp` would hide
    /// whatever its confinement.
    fn outside_tmp(mock: Option<&MockLlm>) -> EvalEnv {
        EvalEnv::in_dir(
            tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap(),
            mock,
        )
    }

    fn in_dir(root: tempfile::TempDir, mock: Option<&MockLlm>) -> EvalEnv {
        let (pi, _pi_folder) = reachable_pi();
        let env = EvalEnv {
            root,
            pi,
            _pi_folder,
        };
        for dir in ["home", "agent", "work"] {
            std::fs::create_dir_all(env.path(dir)).unwrap();
        }
        if let Some(mock) = mock {
            env.serve(mock);
        }
        env
    }

    /// Points the agent's models.json at `mock`.
    fn serve(&self, mock: &MockLlm) {
        let models = pi_testkit::demo::models_json(mock.port);
        std::fs::write(self.path("agent/models.json"), models.to_string()).unwrap();
    }

    fn path(&self, sub: &str) -> PathBuf {
        self.root.path().join(sub)
    }

    fn write(&self, sub: &str, text: &str) -> PathBuf {
        let path = self.path(sub);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn command(&self, args: &[&str]) -> Command {
        self.command_of(&self.pi, args)
    }

    /// `program eval args` in this folder, as [`EvalEnv::command`] runs this build's `pi`.
    fn command_of(&self, program: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(program);
        command
            .arg("eval")
            .args(args)
            .current_dir(self.path("work"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.path("home"))
            .env("PI_CODING_AGENT_DIR", self.path("agent"))
            .env("PI_TELEMETRY", "0");
        command
    }

    fn eval(&self, args: &[&str]) -> Ran {
        let out = self.command(args).output().unwrap();
        Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    fn results(&self, out: &str) -> Value {
        let text = std::fs::read_to_string(self.path("work").join(out).join("results.json"))
            .unwrap_or_else(|e| panic!("no results.json in {out}: {e}"));
        serde_json::from_str(&text).unwrap()
    }
}

/// This build's `pi`, or where a root `pi eval` could not hand it to its agents' user (a
/// checkout in a folder that lets no other user through, which the eval refuses: see
/// `a_root_run_refuses_to_start_when_its_agent_user_cannot_reach_the_agent_program`), a link
/// to it in a temp folder open to every user, so that the trials still run confined.
fn reachable_pi() -> (PathBuf, Option<tempfile::TempDir>) {
    use std::os::unix::fs::PermissionsExt;
    let built = PathBuf::from(env!("CARGO_BIN_EXE_pi"));
    let closed = |path: &Path| {
        path.ancestors()
            .skip(1)
            .any(|dir| std::fs::metadata(dir).is_ok_and(|m| m.permissions().mode() & 0o001 == 0))
    };
    if !nix::unistd::geteuid().is_root() || !closed(&built) {
        return (built, None);
    }
    let folder = tempfile::Builder::new().prefix("pi-bin").tempdir().unwrap();
    std::fs::set_permissions(folder.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let program = folder.path().join("pi");
    if std::fs::hard_link(&built, &program).is_err() {
        std::fs::copy(&built, &program).unwrap();
    }
    assert!(
        !closed(&program),
        "{} is unreachable to other users",
        folder.path().display()
    );
    (program, Some(folder))
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

/// Each trial's `suite/task/model/trial` and status.
fn verdicts(results: &Value) -> Vec<(String, String)> {
    results["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                format!(
                    "{}/{}/{}/{}",
                    t["suite"].as_str().unwrap(),
                    t["task"].as_str().unwrap(),
                    t["model"].as_str().unwrap(),
                    t["trial"]
                ),
                t["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn text_step(text: &str) -> Value {
    json!({"text": [text]})
}

fn tool_step(id: &str, name: &str, arguments: Value) -> Value {
    json!({"tool_calls": [{"id": id, "name": name, "arguments": arguments}]})
}

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

/// A two-task suite against the mock: one task writes a file, one answers from a file.
fn two_task_suite(env: &EvalEnv, trials: u32) -> PathBuf {
    env.write("suite/fixtures/notes/notes.txt", "The code is 77.\n");
    env.write(
        "suite/two.toml",
        &format!(
            r#"
[defaults]
models = ["mock/mock-model"]
trials = {trials}

[[task]]
id = "write"
prompt = "Write ok.txt"

[[task.check]]
kind = "file_contains"
path = "ok.txt"
text = "ok"

[[task]]
id = "answer"
prompt = "What is the code?"
fixture = "fixtures/notes"

[[task.check]]
kind = "text_contains"
text = "77"
"#
        ),
    )
}

fn two_task_script(trials: usize) -> Value {
    let mut steps = Vec::new();
    for _ in 0..trials {
        steps.push(tool_step(
            "c1",
            "write",
            json!({"path": "ok.txt", "content": "ok\n"}),
        ));
        steps.push(text_step("Wrote ok.txt."));
    }
    for _ in 0..trials {
        steps.push(tool_step("c1", "read", json!({"path": "notes.txt"})));
        steps.push(text_step("The code is 77."));
    }
    Value::Array(steps)
}

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
    ]);
    assert_eq!(worse.code, 1, "{}", worse.stdout);
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

/// Whether bubblewrap can confine commands here; when it cannot, says so and the caller
/// returns (unless CI requires it).
fn bwrap_usable() -> bool {
    match pi_evals::isolate::Isolation::detect(Some(pi_evals::isolate::IsolationKind::Bwrap)) {
        Ok(_) => true,
        Err(error) if std::env::var("PI_REQUIRE_BWRAP").is_ok_and(|v| v == "1") => {
            panic!("bubblewrap is required here: {error}")
        }
        Err(error) => {
            pi_testkit::skip(&format!("bubblewrap cannot run here: {error}"));
            false
        }
    }
}

/// What the agent's commands could do in a trial run with `isolate`: the tool results' text,
/// the results file, and whether the file outside the workspace was written. The agent is told
/// to pass its credentials to its commands (`shellEnv.passCredentials`), so that only the
/// confinement keeps the key from them.
fn escape_attempt(isolate: &str) -> (String, Value, bool) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped.txt");
    let command = format!(
        "echo \"key=[$OPENAI_API_KEY]\"; touch {0} && echo wrote-outside; (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo reached-network; echo finished",
        target.display()
    );
    let mock = MockLlm::start(&json!([
        tool_step("c1", "bash", json!({"command": command})),
        tool_step("c2", "read", json!({"path": "/etc/hostname"})),
        text_step("done"),
    ]));
    let env = EvalEnv::new(Some(&mock));
    let suite = env.write(
        "s/escape.toml",
        "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[defaults.settings]\nshellEnv = { passCredentials = true }\n\n[[task]]\nid = \"escape\"\nprompt = \"try\"\n\n[[task.check]]\nkind = \"command\"\nrun = \"test -z \\\"$OPENAI_API_KEY\\\"\"\n",
    );
    let ran = env
        .command(&[
            suite.to_str().unwrap(),
            "--isolate",
            isolate,
            "-q",
            "--out",
            "o",
        ])
        .env("OPENAI_API_KEY", "sk-planted-eval-key-1234")
        .output()
        .unwrap();
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let results = env.results("o");
    let tool_results: Vec<String> = results["trials"][0]["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .map(|m| m["content"].to_string())
        .collect();
    (tool_results.join("\n"), results, target.exists())
}

#[test]
fn confined_commands_cannot_read_keys_write_outside_or_reach_the_network() {
    if !bwrap_usable() {
        return;
    }
    let (transcript, results, escaped) = escape_attempt("bwrap");
    assert_eq!(results["isolation"], "bwrap");
    assert!(transcript.contains("key=[]"), "{transcript}");
    assert!(
        !transcript.contains("sk-planted"),
        "the key reached the command"
    );
    assert!(
        !transcript.contains("wrote-outside") && !escaped,
        "{transcript}"
    );
    assert!(!transcript.contains("reached-network"), "{transcript}");
    assert!(transcript.contains("finished"), "{transcript}");
    assert!(
        transcript.contains("Path is outside the working directory: /etc/hostname"),
        "the read tool is sandboxed: {transcript}"
    );
    assert_eq!(
        results["trials"][0]["status"], "passed",
        "the check saw no key either"
    );

    let (open, results, escaped) = escape_attempt("none");
    assert_eq!(results["isolation"], "none");
    assert!(
        open.contains("key=[<<secret-") && !open.contains("sk-planted-eval-key-1234"),
        "unconfined, the same command sees the key, which the report replaces: {open}"
    );
    assert!(open.contains("wrote-outside") && escaped);
    assert!(open.contains("reached-network"));
    assert_eq!(results["trials"][0]["status"], "failed");
}

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
                    "contextWindow": 4096, "maxTokens": 64}]}}});
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

#[test]
fn a_key_the_agent_read_and_repeated_reaches_no_report_and_no_cassette() {
    const KEY: &str = "sk-planted-eval-0123456789";
    let mut steps = Vec::new();
    steps.push(tool_step("c1", "read", json!({"path": "notes.txt"})));
    steps.push(text_step(&format!("The deploy key is {KEY}.")));
    let mock = MockLlm::start(&Value::Array(steps));
    let env = EvalEnv::new(Some(&mock));
    env.write(
        "suite/fixtures/notes/notes.txt",
        &format!("deploy key: {KEY}\n"),
    );
    let suite = env.write(
        "suite/leak.toml",
        r#"
[defaults]
models = ["mock/mock-model"]

[[task]]
id = "leak"
prompt = "What is the deploy key?"
fixture = "fixtures/notes"

[[task.check]]
kind = "text_contains"
text = "deploy key"
"#,
    );
    let out = env
        .command(&[
            suite.to_str().unwrap(),
            "--record",
            "cassettes",
            "--isolate",
            "none",
            "--out",
            "out",
            "--keep",
            env.path("work/kept").to_str().unwrap(),
            "-q",
        ])
        .env("ANTHROPIC_API_KEY", KEY)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let results = env.results("out");
    assert_eq!(verdicts(&results)[0].1, "passed", "{stderr}\n{results}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let reports = ["results.json", "junit.xml", "summary.md", "report.html"];
    for report in reports {
        assert!(env.path("work/out").join(report).is_file(), "{report}");
    }
    for (path, text) in files_under(&env.path("work")) {
        // The fixture the test planted the key in, and its copy in the kept workspace, and
        // Pi's own session files (they hold the conversation, as Pi writes it).
        let name = path.to_string_lossy();
        if name.ends_with("notes.txt") || name.contains("/sessions/") {
            continue;
        }
        assert!(!text.contains(KEY), "the key reached {}", path.display());
    }
}

/// A one-task suite against the mock whose model answers `done`.
fn answer_suite(env: &EvalEnv) -> PathBuf {
    env.write(
        "s/answer.toml",
        "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[task]]\nid = \"answer\"\nprompt = \"say done\"\n\n[[task.check]]\nkind = \"text_contains\"\ntext = \"done\"\n",
    )
}

#[test]
fn a_live_run_refuses_to_start_without_bwrap_unless_isolate_none_is_given() {
    let mock = MockLlm::start(&json!([text_step("done"), text_step("done")]));
    let env = EvalEnv::new(Some(&mock));
    let suite = answer_suite(&env);
    let suite = suite.to_str().unwrap();
    // A PATH without bwrap (bash is found in its usual place).
    let empty = env.path("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    let without_bwrap = |args: &[&str]| {
        let out = env.command(args).env("PATH", &empty).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for cassettes in [&[][..], &["--record", "rec"], &["--once", "once"]] {
        let mut args = vec![suite, "-q", "--out", "refused"];
        args.extend(cassettes);
        let (code, stderr) = without_bwrap(&args);
        assert_eq!(code, 2, "{cassettes:?}: {stderr}");
        assert!(
            stderr.contains("bwrap")
                && stderr.contains("apt-get install bubblewrap")
                && stderr.contains("--isolate none"),
            "{cassettes:?}: {stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(!env.path("work/refused").exists(), "nothing ran");
        assert!(!env.path("work/rec").exists() && !env.path("work/once").exists());
    }
    assert!(mock.requests().is_empty(), "no trial started");

    let (code, stderr) = without_bwrap(&[
        suite,
        "--isolate",
        "none",
        "--record",
        "rec",
        "-q",
        "--out",
        "o",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(env.results("o")["isolation"], "none");
    assert_eq!(verdicts(&env.results("o"))[0].1, "passed");

    // A replay may run unconfined without bwrap, and says so.
    let (code, stderr) = without_bwrap(&[suite, "--replay", "rec", "--out", "r"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(env.results("r")["isolation"], "none");
    assert!(stderr.contains("unconfined"), "{stderr}");
}

/// Every file under `dir` and what it holds.
fn files_under(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                let text =
                    String::from_utf8_lossy(&std::fs::read(entry.path()).unwrap()).into_owned();
                found.push((entry.path(), text));
            }
        }
    }
    found
}

#[test]
fn kept_trials_hold_no_auth_json() {
    let mock = MockLlm::start(&json!([text_step("done")]));
    let env = EvalEnv::new(Some(&mock));
    env.write(
        "agent/auth.json",
        "{\"other\": {\"type\": \"api_key\", \"key\": \"planted-auth-key-5678\"}}",
    );
    let suite = answer_suite(&env);
    let suite = suite.to_str().unwrap();
    for (mode, out) in [("--record", "recorded"), ("--replay", "replayed")] {
        let ran = env.eval(&[
            suite,
            mode,
            "cass",
            "--isolate",
            "none",
            "--keep",
            out,
            "-q",
            "--out",
            out,
        ]);
        let results = env.results(out);
        assert_eq!(ran.code, 0, "{mode}: {}", results["trials"][0]["reason"]);
        assert_eq!(verdicts(&results)[0].1, "passed", "{mode}");
        let kept = files_under(&env.path("work").join(out));
        assert!(
            kept.iter().any(|(path, _)| path.ends_with("settings.json")),
            "{mode}: the trial's agent folder is kept: {kept:?}"
        );
        for (path, text) in &kept {
            assert!(!path.ends_with("auth.json"), "{mode}: {}", path.display());
            assert!(
                !text.contains("planted-auth-key"),
                "{mode}: {}",
                path.display()
            );
        }
    }
}

/// What a trial's commands could reach, under `isolate`: the tool results' text.
fn reach_attempt(isolate: &str) -> String {
    let env = EvalEnv::outside_tmp(None);
    let home_auth = env.write("home/.pi/agent/auth.json", "planted-home-auth");
    let agent_auth = env.write(
        "agent/auth.json",
        "{\"other\": {\"type\": \"api_key\", \"key\": \"planted-agent-auth\"}}",
    );
    let socket_path = env.path("host.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket_path).unwrap();
    let cassettes = env.path("work/cass");
    let suite_path = env.path("s/sealed.toml");
    let command = format!(
        "{{ for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < \"$f\"; done; }} 2>/dev/null | grep -a -q planted-eval-key && echo LEAK-ENV; \
         cat '{home}' '{agent}' '{suite}' 2>/dev/null | grep -a -q planted && echo LEAK-FILE; \
         ls -R '{cass}' 2>/dev/null | grep -a -q jsonl && echo LEAK-CASSETTES; \
         python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{sock}'); print('LEAK-SOCKET')\" 2>/dev/null; \
         echo finished",
        home = home_auth.display(),
        agent = agent_auth.display(),
        suite = suite_path.display(),
        cass = cassettes.display(),
        sock = socket_path.display(),
    );
    let mock = MockLlm::start(&json!([
        tool_step("c1", "bash", json!({"command": command})),
        text_step("done"),
    ]));
    env.serve(&mock);
    let suite = env.write(
        "s/sealed.toml",
        "# planted-hidden-tests\n[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[task]]\nid = \"sealed\"\nprompt = \"try\"\n",
    );
    let ran = env
        .command(&[
            suite.to_str().unwrap(),
            "--isolate",
            isolate,
            "--record",
            "cass",
            "-q",
            "--out",
            "o",
        ])
        .env("OPENAI_API_KEY", "planted-eval-key-1234")
        .env("HOME", env.path("home"))
        .output()
        .unwrap();
    drop(listener);
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let results = env.results("o");
    assert_eq!(results["isolation"], isolate);
    results["trials"][0]["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .map(|m| m["content"].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn confined_commands_cannot_reach_keys_in_proc_host_sockets_or_the_users_files() {
    if !bwrap_usable() {
        return;
    }
    let sealed = reach_attempt("bwrap");
    assert!(sealed.contains("finished"), "{sealed}");
    assert!(!sealed.contains("LEAK"), "{sealed}");
    let open = reach_attempt("none");
    for leak in ["LEAK-ENV", "LEAK-FILE", "LEAK-CASSETTES"] {
        assert!(
            open.contains(leak),
            "unconfined, {leak} gets through: {open}"
        );
    }
}

/// What an `--agent` that is a script pretending to be Pi could do in a trial run with
/// `isolate`: the words its final message reports (`LEAK-...` for each thing it reached), and
/// whether the file it tried to write outside its workspace exists on the host (inside, the
/// path may fall in the sandbox's own `/tmp`, where writing it is harmless). It reads, by absolute path,
/// the real HOME's `~/.pi/agent/auth.json`, the suite file, a cassette beside the trial's own
/// and a workspace shaped like another trial's in the eval's temp folder, and writes outside
/// its workspace.
fn agent_escape_attempt(isolate: &str) -> (String, bool) {
    use std::os::unix::fs::PermissionsExt;
    let env = EvalEnv::outside_tmp(None);
    // Traversable by anyone: an eval run as root runs its agent as an unprivileged user.
    std::fs::set_permissions(env.root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let home_auth = env.write("home/.pi/agent/auth.json", "planted-home-auth");
    let cassette = env.write("work/cass/planted.jsonl", "planted-cassette");
    let other = env.write(
        "tmp/pi-eval-other/workspace/secret.txt",
        "planted-other-trial",
    );
    // A toolchain home with a registry token that every user may read: its mask is all that
    // hides it, and the agent may undo the mounts of its own sandbox.
    let cargo_token = env.write("cargo/credentials.toml", "planted-cargo-token");
    std::fs::create_dir_all(env.path("cargo/bin")).unwrap();
    let outside = env.path("escaped.txt");
    let suite = env.write(
        "s/agent.toml",
        "# planted-suite\n[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[task]]\nid = \"agent\"\nprompt = \"try\"\n\n[[task.check]]\nkind = \"text_contains\"\ntext = \"finished\"\n",
    );
    let reach = |path: &Path, leak: &str| {
        format!(
            "grep -q planted '{}' 2>/dev/null && out=\"$out {leak}\"\n",
            path.display()
        )
    };
    let script = format!(
        "#!/bin/bash\nout=\n{}{}{}{}touch '{}' 2>/dev/null\n\
         {{ : </dev/tty; }} 2>/dev/null && out=\"$out LEAK-TERMINAL\"\n\
         umount '{}' 2>/dev/null; grep -q planted '{}' 2>/dev/null && out=\"$out LEAK-CARGO-TOKEN\"\n\
         echo mine > inside.txt && out=\"$out wrote-workspace\"\n\
         printf '{{\"type\":\"message_end\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"%s finished\"}}],\"stopReason\":\"stop\"}}}}\\n' \"$out\"\n",
        reach(&home_auth, "LEAK-HOME-AUTH"),
        reach(&suite, "LEAK-SUITE"),
        reach(&cassette, "LEAK-CASSETTES"),
        reach(&other, "LEAK-OTHER-TRIAL"),
        outside.display(),
        cargo_token.display(),
        cargo_token.display(),
    );
    let agent = env.write("fake-agent.sh", &script);
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut eval = env.command(&[
        suite.to_str().unwrap(),
        "--agent",
        agent.to_str().unwrap(),
        "--isolate",
        isolate,
        "--record",
        "cass",
        "-q",
        "--out",
        "o",
    ]);
    eval.env("TMPDIR", env.path("tmp"))
        .env("CARGO_HOME", env.path("cargo"))
        .env("OPENAI_API_KEY", "planted-eval-key-1234");
    let ran = in_a_terminal(&eval).output().unwrap();
    let output = String::from_utf8_lossy(&ran.stdout);
    let errors = String::from_utf8_lossy(&ran.stderr);
    assert_eq!(ran.status.code(), Some(0), "{output}{errors}");
    let results = env.results("o");
    assert_eq!(results["isolation"], isolate);
    let trial = &results["trials"][0];
    assert_eq!(trial["status"], "passed", "{trial}");
    (
        trial["finalText"].as_str().unwrap().to_owned(),
        outside.exists(),
    )
}

/// `command` run with a terminal of its own as its controlling terminal (a pseudo-terminal,
/// through Python's `pty`), as when a user runs it; its output (stdout and stderr) comes on
/// stdout.
fn in_a_terminal(command: &Command) -> Command {
    const RUN: &str = r#"import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
while True:
    try:
        data = os.read(fd, 65536)
    except OSError:
        break
    if not data:
        break
    os.write(1, data)
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"#;
    let mut wrapped = Command::new("python3");
    wrapped
        .args(["-c", RUN])
        .arg(command.get_program())
        .args(command.get_args())
        .env_clear();
    for (name, value) in command.get_envs() {
        if let Some(value) = value {
            wrapped.env(name, value);
        }
    }
    if let Some(dir) = command.get_current_dir() {
        wrapped.current_dir(dir);
    }
    wrapped
}

#[test]
fn an_agent_process_cannot_read_keys_the_suite_cassettes_or_other_trials_nor_write_outside() {
    if !bwrap_usable() {
        return;
    }
    let (said, escaped) = agent_escape_attempt("bwrap");
    assert!(said.contains("wrote-workspace finished"), "{said}");
    assert!(!said.contains("LEAK"), "{said}");
    assert!(!escaped, "the agent wrote outside its workspace");
    let (open, escaped) = agent_escape_attempt("none");
    for leak in [
        "LEAK-HOME-AUTH",
        "LEAK-SUITE",
        "LEAK-CASSETTES",
        "LEAK-OTHER-TRIAL",
        "LEAK-TERMINAL",
        "LEAK-CARGO-TOKEN",
    ] {
        assert!(
            open.contains(leak),
            "unconfined, {leak} gets through: {open}"
        );
    }
    assert!(escaped);
}

#[test]
fn this_builds_pi_confined_as_the_agent_reaches_the_model_but_its_commands_see_no_key_or_network() {
    if !bwrap_usable() {
        return;
    }
    // A port on the host's loopback, which the agent could reach but its commands must not.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = format!(
        "echo \"key=[$OPENAI_API_KEY]\"; \
        {{ for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < \"$f\"; done; }} 2>/dev/null | grep -a -q 'planted-eval''-key' && echo LEAK-ENV; \
        (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo LEAK-NETWORK; \
        echo finished"
    );
    let mock = MockLlm::start(&json!([
        tool_step("c1", "bash", json!({"command": command})),
        text_step("done"),
    ]));
    let env = EvalEnv::outside_tmp(Some(&mock));
    let suite = env.write(
        "s/live.toml",
        "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[defaults.settings]\nshellEnv = { passCredentials = true }\n\n[[task]]\nid = \"live\"\nprompt = \"run it\"\n\n[[task.check]]\nkind = \"text_contains\"\ntext = \"done\"\n",
    );
    let ran = env
        .command(&[
            suite.to_str().unwrap(),
            "--agent",
            env.pi.to_str().unwrap(),
            "--isolate",
            "bwrap",
            "-q",
            "--out",
            "o",
        ])
        .env("OPENAI_API_KEY", "planted-eval-key-1234")
        .output()
        .unwrap();
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let results = env.results("o");
    let trial = &results["trials"][0];
    assert_eq!(
        trial["status"], "passed",
        "the agent reached the model: {trial}"
    );
    let output: Vec<String> = trial["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .map(|m| m["content"].to_string())
        .collect();
    let output = output.join("\n");
    assert!(output.contains("key=[]"), "{output}");
    assert!(output.contains("finished"), "{output}");
    assert!(!output.contains("LEAK"), "{output}");
    assert!(!trial.to_string().contains("planted-eval-key"), "{trial}");
    assert_eq!(mock.requests().len(), 2);
}

#[test]
fn a_live_run_refuses_to_start_where_an_agent_cannot_be_confined() {
    if !bwrap_usable() {
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let mock = MockLlm::start(&json!([text_step("done")]));
    let env = EvalEnv::new(Some(&mock));
    let suite = answer_suite(&env);
    // bwrap confines commands here, but an agent's sandbox cannot start: its `setsid` fails,
    // as a sandbox would where the agent's user may not have a user namespace.
    let broken = env.write(
        "broken-bin/setsid",
        "#!/bin/sh\necho 'no agent sandbox here' >&2\nexit 1\n",
    );
    std::fs::set_permissions(&broken, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        env.path("broken-bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = env
        .command(&[suite.to_str().unwrap(), "-q", "--out", "refused"])
        .env("PATH", path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("an agent's sandbox")
            && stderr.contains("no agent sandbox here")
            && stderr.contains("--isolate none"),
        "{stderr}"
    );
    assert!(mock.requests().is_empty(), "no trial started");
}

#[test]
fn a_root_run_refuses_to_start_when_its_agent_user_cannot_reach_the_agent_program() {
    if !bwrap_usable() {
        return;
    }
    if !nix::unistd::geteuid().is_root() {
        pi_testkit::skip("only a root pi eval hands its agents to another user");
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let mock = MockLlm::start(&json!([text_step("done")]));
    let env = EvalEnv::new(Some(&mock));
    let suite = answer_suite(&env);
    // This build's pi at a path whose folder lets no other user through (mode 700), as a
    // checkout inside `mktemp -d` would be.
    let locked = tempfile::tempdir().unwrap();
    std::fs::set_permissions(locked.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let program = locked.path().join("pi");
    if std::fs::hard_link(env!("CARGO_BIN_EXE_pi"), &program).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_pi"), &program).unwrap();
    }
    let out = env
        .command_of(
            &program,
            &[suite.to_str().unwrap(), "-q", "--out", "refused"],
        )
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&locked.path().display().to_string())
            && stderr.contains("chmod o+x")
            && stderr.contains("--isolate none"),
        "names the folder and both ways out: {stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(mock.requests().is_empty(), "no trial started");
    assert!(!env.path("work/refused").exists(), "nothing ran");
}

/// Pi's JSON mode exits 0 when the model call failed: a run whose every request got HTTP 500
/// must not be scored on checks that pass anyway. A failure that a retry recovered from is not
/// an error.
#[test]
fn a_model_error_is_an_error_not_a_pass() {
    let mock = MockLlm::start(&json!([
        {"status": 500, "text": ["boom"]},
        {"status": 500, "text": ["boom"]},
        {"status": 500, "text": ["once"]},
        text_step("Recovered."),
    ]));
    let env = EvalEnv::new(Some(&mock));
    let suite = env.write(
        "s/errors.toml",
        "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[defaults.settings]\nretry = { enabled = true, maxRetries = 1, baseDelayMs = 1 }\n\n\
         [[task]]\nid = \"broken\"\nprompt = \"hi\"\n\n[[task.check]]\nkind = \"tool_not_called\"\ntool = \"write\"\n\n\
         [[task]]\nid = \"flaky\"\nprompt = \"hi\"\n\n[[task.check]]\nkind = \"tool_not_called\"\ntool = \"write\"\n",
    );
    let ran = env.eval(&[suite.to_str().unwrap(), "--jobs", "1", "-q", "--out", "o"]);
    assert_eq!(mock.requests().len(), 4, "one retry each");
    assert_eq!(ran.code, 1, "a model error fails the run: {}", ran.stdout);
    let results = env.results("o");
    let trials = results["trials"].as_array().unwrap();
    let broken = trials.iter().find(|t| t["task"] == "broken").unwrap();
    assert_eq!(broken["status"], "error", "{broken}");
    assert_eq!(broken["score"], 0.0);
    let reason = broken["reason"].as_str().unwrap();
    assert!(reason.contains("model call failed"), "{reason}");
    let flaky = trials.iter().find(|t| t["task"] == "flaky").unwrap();
    assert_eq!(flaky["status"], "passed", "the retry recovered: {flaky}");
    let model = &results["models"][0];
    assert_eq!(model["errors"], 1);
    assert_eq!(
        model["passAt1"], 1.0,
        "the error is left out of the pass rate"
    );
}

/// Every order of steps a task may give (a prompt first, then prompts, steers and follow-ups):
/// each prompt waits for the agent to be idle, so none is refused with "Agent is already
/// processing", every step reaches the model, and nothing after a prompt comes before it.
#[test]
fn every_order_of_prompts_steers_and_follow_ups_reaches_the_model() {
    let orders: [&[&str]; 10] = [
        &["prompt", "steer", "prompt"],
        &["prompt", "follow_up", "prompt"],
        &["prompt", "prompt", "steer"],
        &["prompt", "prompt", "follow_up"],
        &["prompt", "steer", "steer"],
        &["prompt", "steer", "follow_up"],
        &["prompt", "follow_up", "steer"],
        &["prompt", "follow_up", "follow_up"],
        &["prompt", "steer", "follow_up", "prompt", "steer", "prompt"],
        &["-prompt", "prompt", "prompt"],
    ];
    let mut suite = String::from("[defaults]\nmodels = [\"mock/mock-model\"]\n");
    for (i, order) in orders.iter().enumerate() {
        let steps: Vec<String> = order
            .iter()
            .enumerate()
            .map(|(j, kind)| {
                let kind_name = kind.trim_start_matches('-');
                let dash = if kind.starts_with('-') { "-" } else { "" };
                format!("{{ {kind_name} = \"{dash}{kind_name} {j} of order {i}\" }}")
            })
            .collect();
        suite.push_str(&format!(
            "\n[[task]]\nid = \"order-{i}\"\nsteps = [{}]\n\n[[task.check]]\nkind = \"no_error\"\n",
            steps.join(", ")
        ));
    }
    let mock = MockLlm::start(&json!([]));
    let env = EvalEnv::new(Some(&mock));
    let suite = env.write("s/orders.toml", &suite);
    let ran = env.eval(&[suite.to_str().unwrap(), "--jobs", "1", "-q", "--out", "o"]);
    let results = env.results("o");
    for (i, order) in orders.iter().enumerate() {
        let trial = results["trials"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["task"] == format!("order-{i}"))
            .unwrap();
        assert_eq!(trial["status"], "passed", "order {order:?}: {trial}");
        let said: Vec<String> = trial["transcript"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| {
                let content = &m["content"];
                content.as_str().map_or_else(
                    || content[0]["text"].as_str().unwrap().to_owned(),
                    str::to_owned,
                )
            })
            .collect();
        assert_eq!(said.len(), order.len(), "order {order:?}: {said:?}");
        for (j, kind) in order.iter().enumerate() {
            let kind_name = kind.trim_start_matches('-');
            let dash = if kind.starts_with('-') { "-" } else { "" };
            let text = format!("{dash}{kind_name} {j} of order {i}");
            let at = said.iter().position(|s| *s == text);
            let at = at.unwrap_or_else(|| panic!("order {order:?}: {text:?} not in {said:?}"));
            if kind_name == "prompt" {
                assert_eq!(at, j, "a prompt comes after every step before it: {said:?}");
            }
        }
        let answers = trial["transcript"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "assistant")
            .count();
        assert_eq!(answers, order.len(), "each step was answered: {trial}");
    }
    assert_eq!(ran.code, 0, "{}\n{}", ran.stdout, ran.stderr);
}

/// A prompt waits for a retry too: the agent is idle between a failed call and its retry (Pi's
/// `get_state` has no retrying flag), and a prompt sent then would start a run in its place.
#[test]
fn the_next_prompt_waits_for_the_retry_of_a_failed_call() {
    let mock = MockLlm::start(&json!([
        {"status": 500, "text": ["boom"]},
        text_step("First answered."),
        text_step("Second answered."),
    ]));
    let env = EvalEnv::new(Some(&mock));
    let suite = env.write(
        "s/retry.toml",
        "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[defaults.settings]\nretry = { enabled = true, maxRetries = 2, baseDelayMs = 400 }\n\n\
         [[task]]\nid = \"two\"\nsteps = [{ prompt = \"-first\" }, { prompt = \"second\" }]\n\n[[task.check]]\nkind = \"text_contains\"\ntext = \"Second answered.\"\n",
    );
    let ran = env.eval(&[suite.to_str().unwrap(), "-q", "--out", "o"]);
    let trial = env.results("o")["trials"][0].clone();
    assert_eq!(trial["status"], "passed", "{trial}");
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let asked: Vec<String> = mock
        .requests()
        .iter()
        .map(|r| r["messages"].as_array().unwrap().last().unwrap()["content"].to_string())
        .collect();
    assert_eq!(asked.len(), 3, "{asked:?}");
    assert!(
        asked[1].contains("-first"),
        "the retry asked again: {asked:?}"
    );
    assert!(asked[2].contains("second"), "{asked:?}");
}

/// An agent that refuses a step (answers its RPC command `success: false`): the trial is an
/// error that names the step and the agent's reason, and no later step is sent.
#[test]
fn a_step_the_agent_refuses_makes_the_trial_an_error_that_says_so() {
    use std::os::unix::fs::PermissionsExt;
    let env = EvalEnv::new(None);
    let suite = env.write(
        "s/refuse.toml",
        "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[task]]\nid = \"steered\"\nsteps = [{ prompt = \"go\" }, { steer = \"faster\" }, { prompt = \"after\" }]\n\n[[task.check]]\nkind = \"no_error\"\n",
    );
    let log = env.path("agent-saw.jsonl");
    let script = format!(
        "#!/bin/sh\nwhile IFS= read -r line; do\n  printf '%s\\n' \"$line\" >> '{}'\n  case \"$line\" in\n    *'\"steer\"'*) echo '{{\"type\":\"response\",\"command\":\"steer\",\"success\":false,\"error\":\"steering is off here\"}}' ;;\n    *'\"prompt\"'*) echo '{{\"type\":\"response\",\"command\":\"prompt\",\"success\":true}}'; echo '{{\"type\":\"agent_end\",\"messages\":[]}}' ;;\n    *get_state*) echo '{{\"type\":\"response\",\"command\":\"get_state\",\"success\":true,\"data\":{{\"isStreaming\":false,\"isCompacting\":false}}}}' ;;\n  esac\ndone\n",
        log.display()
    );
    let agent = env.write("refusing-agent.sh", &script);
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ran = env.eval(&[
        suite.to_str().unwrap(),
        "--agent",
        agent.to_str().unwrap(),
        "--isolate",
        "none",
        "--live",
        "-q",
        "--out",
        "o",
    ]);
    let trial = env.results("o")["trials"][0].clone();
    assert_eq!(trial["status"], "error", "{trial}");
    assert_eq!(
        trial["reason"],
        "the agent refused the `steer` step: steering is off here"
    );
    assert_eq!(ran.code, 1, "{}", ran.stdout);
    let saw = std::fs::read_to_string(&log).unwrap();
    assert!(
        !saw.contains("after"),
        "no step after the refused one: {saw}"
    );
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

/// A prompt waits for the retry that follows a compaction after a context overflow: between
/// the compaction's end and the retry, Pi's `get_state` calls the agent idle.
#[test]
fn the_next_prompt_waits_for_the_retry_after_an_overflow_compaction() {
    let overflow = json!({"status": 400, "error_body": {"error": {"message": "This model's maximum context length is 10 tokens", "type": "invalid_request_error"}}});
    let mock = MockLlm::start(&json!([
        text_step("Warmed up."),
        overflow,
        text_step("Summary of the session."),
        text_step("First answered."),
        text_step("Second answered."),
    ]));
    let env = EvalEnv::new(Some(&mock));
    let suite = env.write(
        "s/overflow.toml",
        "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[defaults.settings]\ncompaction = { enabled = true, keepRecentTokens = 1 }\n\n\
         [[task]]\nid = \"three\"\nsteps = [{ prompt = \"-warm up\" }, { prompt = \"first\" }, { prompt = \"second\" }]\n\n[[task.check]]\nkind = \"text_contains\"\ntext = \"Second answered.\"\n",
    );
    let ran = env.eval(&[suite.to_str().unwrap(), "-q", "--out", "o"]);
    let trial = env.results("o")["trials"][0].clone();
    let asked: Vec<String> = mock
        .requests()
        .iter()
        .map(|r| r["messages"].as_array().unwrap().last().unwrap()["content"].to_string())
        .collect();
    assert_eq!(trial["status"], "passed", "{trial}\n{asked:?}");
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert_eq!(asked.len(), 5, "{asked:?}");
    assert!(
        asked[3].contains("first"),
        "the retry asked again: {asked:?}"
    );
    assert!(asked[4].contains("second"), "{asked:?}");
}

/// A root `pi eval` hands the trial's folders to its agents' unprivileged user; its checks,
/// run after the agent, must still write there (a test runner's cache, a temp file).
#[test]
fn the_checks_of_a_confined_trial_write_its_workspace_and_temp_folder() {
    if !bwrap_usable() {
        return;
    }
    let mock = MockLlm::start(&json!([text_step("done")]));
    let env = EvalEnv::new(Some(&mock));
    let suite = env.write(
        "s/writes.toml",
        "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[task]]\nid = \"writes\"\nprompt = \"say done\"\n\n[[task.check]]\nkind = \"command\"\nrun = \"mktemp -p \\\"$TMPDIR\\\" && mkdir -p .cache && touch .cache/made-by-check\"\n",
    );
    let ran = env.eval(&[suite.to_str().unwrap(), "-q", "--out", "o"]);
    let results = env.results("o");
    assert_eq!(
        verdicts(&results)[0].1,
        "passed",
        "{}\n{}",
        results["trials"][0],
        ran.stderr
    );
}
