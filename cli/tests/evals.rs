//! `pi eval` end to end: the real binary runs suites whose agents talk to the kit's mock model
//! over real HTTP on 127.0.0.1 (or replay cassettes), in real temp workspaces; the checks run
//! real commands; results and reports are read back from disk.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "evals_checks/mod.rs"]
mod checks;
mod common;
#[path = "evals_confinement/mod.rs"]
mod confinement;
#[path = "evals_datasets/mod.rs"]
mod datasets;
#[path = "evals_interrupt/mod.rs"]
mod interrupt;
#[path = "evals_pairwise/mod.rs"]
mod pairwise;
#[path = "evals_steps/mod.rs"]
mod steps;
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
    /// Under the build's temp folder; in `/var/tmp` (outside every confined view too) when a
    /// root `pi eval`'s agents could not get there (a checkout in a closed folder).
    fn outside_tmp(mock: Option<&MockLlm>) -> EvalEnv {
        let target = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let parent = match nix::unistd::geteuid().is_root() && closed_to_others(&target.join("x")) {
            true => Path::new("/var/tmp"),
            false => target,
        };
        EvalEnv::in_dir(tempfile::tempdir_in(parent).unwrap(), mock)
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
        self.serve_port(mock.port);
    }

    /// Points the agent's models.json at a model on `port`.
    fn serve_port(&self, port: u16) {
        let models = pi_testkit::demo::models_json(port);
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

/// Whether a folder above `path` lets no other user through.
fn closed_to_others(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.ancestors()
        .skip(1)
        .any(|dir| std::fs::metadata(dir).is_ok_and(|m| m.permissions().mode() & 0o001 == 0))
}

/// This build's `pi`, or where a root `pi eval` could not hand it to its agents' user (a
/// checkout in a folder that lets no other user through, which the eval refuses: see
/// `a_root_run_refuses_to_start_when_its_agent_user_cannot_reach_the_agent_program`), a link
/// to it in a temp folder open to every user, so that the trials still run confined.
fn reachable_pi() -> (PathBuf, Option<tempfile::TempDir>) {
    use std::os::unix::fs::PermissionsExt;
    let built = PathBuf::from(env!("CARGO_BIN_EXE_pi"));
    if !nix::unistd::geteuid().is_root() || !closed_to_others(&built) {
        return (built, None);
    }
    let folder = tempfile::Builder::new().prefix("pi-bin").tempdir().unwrap();
    std::fs::set_permissions(folder.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let program = folder.path().join("pi");
    if std::fs::hard_link(&built, &program).is_err() {
        std::fs::copy(&built, &program).unwrap();
    }
    assert!(
        !closed_to_others(&program),
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

/// A one-task suite against the mock whose model answers `done`.
fn answer_suite(env: &EvalEnv) -> PathBuf {
    env.write(
        "s/answer.toml",
        "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[task]]\nid = \"answer\"\nprompt = \"say done\"\n\n[[task.check]]\nkind = \"text_contains\"\ntext = \"done\"\n",
    )
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
