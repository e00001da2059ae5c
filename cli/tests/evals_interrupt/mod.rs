//! Runs that are interrupted and resumed: a real SIGINT (or SIGKILL) to a real `pi eval`
//! mid-run, then what its `--out` folder and cassettes say, and what `--resume` and `--once`
//! run again (counted by the mock's requests); retried errors; one run per `--out` folder.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use pi_testkit::{processes_with, unique_marker, MockLlm};
use serde_json::json;

use super::{verdicts, EvalEnv};

mod killed;

/// A one-task suite of `trials` trials whose prompt is `prompt`, each checked for `done`.
fn suite(env: &EvalEnv, trials: u32, prompt: &str, extra: &str) -> String {
    env.write(
        "s/res.toml",
        &format!(
            "[defaults]\nmodels = [\"mock/mock-model\"]\ntrials = {trials}\n{extra}\n[[task]]\nid = \"t\"\nprompt = \"{prompt}\"\n\n[[task.check]]\nkind = \"text_contains\"\ntext = \"done\"\n"
        ),
    )
    .to_str()
    .unwrap()
    .to_owned()
}

/// Starts `pi eval` with plain progress; returns it and a channel of its stderr lines.
fn spawn(env: &EvalEnv, args: &[&str]) -> (Child, std::sync::mpsc::Receiver<String>) {
    let mut child = env
        .command(args)
        .args(["--progress", "plain"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (send, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if send.send(line).is_err() {
                break;
            }
        }
    });
    (child, lines)
}

/// Waits for a stderr line starting with `prefix` (a trial's progress line, say).
fn wait_for_line(lines: &std::sync::mpsc::Receiver<String>, prefix: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) if line.starts_with(prefix) => return line,
            Ok(_) => {}
            Err(e) => panic!("no line starting with {prefix:?}: {e}"),
        }
    }
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(pid: u32, signal: Signal) {
    kill(Pid::from_raw(i32::try_from(pid).unwrap()), signal).unwrap();
}

/// Kills a process left running when a test fails before it ends it.
struct KillOnDrop(i32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = kill(Pid::from_raw(self.0), Signal::SIGKILL);
    }
}

fn alive(pid: i32) -> bool {
    // A zombie is gone for this purpose: it runs nothing.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit(')')
            .next()
            .is_some_and(|s| !s.starts_with(" Z"))
    })
}

#[test]
fn an_interrupted_run_says_so_and_resume_runs_only_the_missing_trials() {
    let mock = MockLlm::start(&json!([{"text": ["done"]}, {"text": ["never"], "hang_ms": 60000}]));
    let env = EvalEnv::new(Some(&mock));
    let suite = suite(&env, 3, "hi", "");
    let (mut child, lines) = spawn(&env, &[&suite, "--jobs", "1", "--out", "o"]);
    wait_for_line(&lines, "[1/3]");
    signal(child.id(), Signal::SIGINT);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let cut = env.results("o");
    assert_eq!(cut["interrupted"], true, "a cut run says so");
    assert_eq!(cut["planned"], 3);
    assert_eq!(
        verdicts(&cut),
        [("res/t/mock/mock-model/0".to_owned(), "passed".to_owned())]
    );
    drop(mock);

    let fresh = MockLlm::start(&json!([{"text": ["done"]}, {"text": ["done"]}]));
    env.serve(&fresh);
    // Not a suite that changed since, nor the results of a run into another folder.
    let text = std::fs::read_to_string(&suite).unwrap();
    std::fs::write(&suite, format!("{text}\n# changed\n")).unwrap();
    let changed = env.eval(&["--resume", "o"]);
    assert_eq!(changed.code, 2, "{}", changed.stderr);
    assert!(
        changed.stderr.contains("changed since"),
        "{}",
        changed.stderr
    );
    std::fs::write(&suite, text).unwrap();
    env.write(
        "work/elsewhere/results.json",
        &std::fs::read_to_string(env.path("work/o/results.json")).unwrap(),
    );
    let moved = env.eval(&["--resume", "elsewhere"]);
    assert_eq!(moved.code, 2, "{}", moved.stderr);
    assert!(moved.stderr.contains("not this folder"), "{}", moved.stderr);
    assert!(fresh.requests().is_empty());
    let resumed = env.eval(&["--resume", "o"]);
    assert_eq!(resumed.code, 0, "{}\n{}", resumed.stdout, resumed.stderr);
    assert_eq!(
        fresh.requests().len(),
        2,
        "the finished trial was not run again"
    );
    let whole = env.results("o");
    assert_eq!(whole.get("interrupted"), None, "{whole}");
    assert_eq!(whole["planned"], 3);
    let all: Vec<String> = verdicts(&whole)
        .into_iter()
        .map(|(k, s)| format!("{k} {s}"))
        .collect();
    assert_eq!(
        all,
        [
            "res/t/mock/mock-model/0 passed",
            "res/t/mock/mock-model/1 passed",
            "res/t/mock/mock-model/2 passed"
        ]
    );
    assert_eq!(
        whole["trials"][0], cut["trials"][0],
        "the finished trial is kept as it was"
    );
    assert_eq!(whole["tasks"][0]["passed"], 3);

    // A complete run has nothing left to resume.
    let again = env.eval(&["--resume", "o"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(fresh.requests().len(), 2);
}

#[test]
fn resume_refuses_a_folder_without_a_resumable_run() {
    let env = EvalEnv::new(None);
    let ran = env.eval(&["--resume", "nothing"]);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("nothing/results.json"),
        "{}",
        ran.stderr
    );
}

/// The pid in the lock file of an `--out` folder.
fn pid_of(process: &str) -> i32 {
    process.split(':').next().unwrap().trim().parse().unwrap()
}

#[test]
fn a_partial_recording_left_by_a_killed_run_is_rerun_by_once() {
    let marker = unique_marker("eval-partial");
    let mock = MockLlm::start(&json!([{"text": ["never"], "hang_ms": 60000}]));
    let env = EvalEnv::new(Some(&mock));
    let suite = suite(&env, 1, &marker, "");
    let args = [
        suite.as_str(),
        "--once",
        "c",
        "--isolate",
        "none",
        "--out",
        "o",
    ];
    let (mut child, _lines) = spawn(&env, &args);
    wait_until("the recording asks the model", || {
        mock.requests().len() == 1
    });
    signal(child.id(), Signal::SIGKILL);
    child.wait().unwrap();
    for agent in processes_with(&marker) {
        let _ = kill(Pid::from_raw(pid_of(&agent)), Signal::SIGKILL);
    }
    let cassette = env.path("work/c/res/t/mock/mock-model/0.jsonl");
    assert!(
        !cassette.exists(),
        "a cut recording is not a cassette --once would replay"
    );
    assert!(Path::new(&format!("{}.partial", cassette.display())).is_file());
    drop(mock);

    let fresh = MockLlm::start(&json!([{"text": ["done"]}]));
    env.serve(&fresh);
    let ran = env.eval(&args);
    assert_eq!(ran.code, 0, "{}\n{}", ran.stdout, ran.stderr);
    let trial = env.results("o")["trials"][0].clone();
    assert_eq!(trial["status"], "passed", "{trial}");
    assert_eq!(trial["calls"]["live"], 1, "recorded again");
    assert!(cassette.is_file());
    assert!(!Path::new(&format!("{}.partial", cassette.display())).exists());
    let replayed = env.eval(&[&suite, "--replay", "c", "-q", "--out", "r"]);
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
}

#[test]
fn an_errored_trial_is_retried_and_passes_with_its_attempts_recorded() {
    let mock = MockLlm::start(&json!([{"status": 500}, {"text": ["done"]}]));
    let env = EvalEnv::new(Some(&mock));
    let suite = suite(
        &env,
        1,
        "hi",
        "[defaults.settings]\nretry = { enabled = false }\n",
    );
    let once = env.eval(&[&suite, "-q", "--out", "first"]);
    assert_eq!(
        once.code, 1,
        "a failed model call is an error: {}",
        once.stdout
    );
    assert_eq!(env.results("first")["trials"][0]["status"], "error");

    let mock = MockLlm::start(&json!([{"status": 500}, {"text": ["done"]}]));
    env.serve(&mock);
    // Recorded as it goes: the errored attempt's recording must not be replayed by the retry.
    let ran = env.eval(&[
        &suite,
        "--once",
        "c",
        "--retry-errors",
        "2",
        "-q",
        "--out",
        "o",
    ]);
    assert_eq!(ran.code, 0, "{}\n{}", ran.stdout, ran.stderr);
    let trial = env.results("o")["trials"][0].clone();
    assert_eq!(trial["status"], "passed", "{trial}");
    assert_eq!(trial["attempts"], 2, "{trial}");
    let earlier = trial["earlierErrors"].as_array().unwrap();
    assert_eq!(earlier.len(), 1, "{trial}");
    assert!(earlier[0].as_str().unwrap().contains("500"), "{trial}");
    assert_eq!(mock.requests().len(), 2);
    drop(mock);
    let replayed = env.eval(&[&suite, "--replay", "c", "-q", "--out", "r"]);
    assert_eq!(
        replayed.code, 0,
        "the passing attempt is the cassette: {}",
        replayed.stdout
    );

    // A results file written before these fields existed still loads and compares.
    let mut old = env.results("first");
    let fields = old.as_object_mut().unwrap();
    for added in ["interrupted", "planned", "invocation"] {
        fields.remove(added);
    }
    assert!(!old.to_string().contains("attempts"));
    let old = env.write("old.json", &old.to_string());
    let new = env.path("work/o/results.json");
    let compared = env.eval(&["compare", old.to_str().unwrap(), new.to_str().unwrap()]);
    assert_eq!(compared.code, 0, "{}\n{}", compared.stdout, compared.stderr);
    assert!(compared.stdout.contains("res/t"), "{}", compared.stdout);
}

#[test]
fn recording_again_over_a_cassette_and_failing_leaves_no_older_cassette_to_replay() {
    let mock = MockLlm::start(&json!([{"text": ["done"]}]));
    let env = EvalEnv::new(Some(&mock));
    let suite = suite(
        &env,
        1,
        "hi",
        "[defaults.settings]\nretry = { enabled = false }\n",
    );
    let first = env.eval(&[&suite, "--record", "c", "-q", "--out", "first"]);
    assert_eq!(first.code, 0, "{}\n{}", first.stdout, first.stderr);

    // Recorded again, this time the model fails: the run's cassette folder must not keep the
    // first run's recording as if this run had made it.
    let failing = MockLlm::start(&json!([{"status": 500}]));
    env.serve(&failing);
    let second = env.eval(&[&suite, "--record", "c", "-q", "--out", "second"]);
    assert_eq!(second.code, 1, "{}\n{}", second.stdout, second.stderr);
    assert_eq!(env.results("second")["trials"][0]["status"], "error");
    drop(failing);
    let replayed = env.eval(&[&suite, "--replay", "c", "-q", "--out", "r"]);
    assert_ne!(
        env.results("r")["trials"][0]["status"],
        "passed",
        "the older recording was replayed as this run's: {}",
        replayed.stdout
    );
}

#[test]
fn a_second_run_into_the_same_out_folder_refuses_naming_the_first() {
    let marker = unique_marker("eval-lock");
    let mock = MockLlm::start(&json!([{"text": ["never"], "hang_ms": 60000}]));
    let env = EvalEnv::new(Some(&mock));
    let suite = suite(&env, 1, &marker, "");
    // A whole run's results, to merge into the folder while it is held.
    let answering = MockLlm::start(&json!([{"text": ["done"]}]));
    env.serve(&answering);
    let shard = env.eval(&[&suite, "--out", "shard", "-q"]);
    assert_eq!(shard.code, 0, "{}", shard.stderr);
    env.serve(&mock);
    // A lock file a dead run left behind is taken over.
    env.write("work/o/.pi-eval.lock", "999999999\n");
    let (mut first, _lines) = spawn(&env, &[&suite, "--out", "o"]);
    wait_until("the first run asks the model", || {
        mock.requests().len() == 1
    });
    env.write(
        "work/o/results.json",
        "{\"schemaVersion\": 1, \"mine\": true}",
    );
    let second = env.eval(&[&suite, "--out", "o", "-q"]);
    assert_eq!(second.code, 2, "{}", second.stderr);
    assert!(
        second.stderr.contains(&format!("process {}", first.id())),
        "names the holder: {}",
        second.stderr
    );
    let untouched = std::fs::read_to_string(env.path("work/o/results.json")).unwrap();
    assert!(
        untouched.contains("\"mine\""),
        "nothing written: {untouched}"
    );
    let resumed = env.eval(&["--resume", "o"]);
    assert_eq!(resumed.code, 2, "{}", resumed.stderr);
    // Nor may a merge of shards write its results there.
    let merged = env.eval(&["merge", "shard/results.json", "--out", "o"]);
    assert_eq!(merged.code, 2, "{}", merged.stderr);
    assert!(
        merged.stderr.contains(&format!("process {}", first.id())),
        "names the holder: {}",
        merged.stderr
    );
    let untouched = std::fs::read_to_string(env.path("work/o/results.json")).unwrap();
    assert!(untouched.contains("\"mine\""), "merge wrote: {untouched}");
    signal(first.id(), Signal::SIGINT);
    assert_eq!(first.wait().unwrap().code(), Some(130));
    assert_eq!(env.results("o")["interrupted"], true);
}

#[test]
fn ctrl_c_under_isolate_none_kills_the_agents_commands() {
    let env = EvalEnv::new(None);
    let pid_file = env.path("sleep.pid");
    let command = format!("echo $$ > {}; exec sleep 300", pid_file.display());
    let mock = MockLlm::start(&json!([
        {"tool_calls": [{"id": "c1", "name": "bash", "arguments": {"command": command}}]},
        {"text": ["done"]}
    ]));
    env.serve(&mock);
    let suite = suite(&env, 1, "hi", "");
    let (mut child, _lines) = spawn(&env, &[&suite, "--isolate", "none", "--out", "o"]);
    wait_until("the command runs", || {
        std::fs::read_to_string(&pid_file).is_ok_and(|t| t.ends_with('\n'))
    });
    let sleep: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let cleanup = KillOnDrop(sleep);
    assert!(alive(sleep));
    signal(child.id(), Signal::SIGINT);
    assert_eq!(child.wait().unwrap().code(), Some(130));
    wait_until("the agent's sleep is gone", || !alive(sleep));
    std::mem::forget(cleanup);
}
