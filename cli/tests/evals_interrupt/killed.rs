//! A `pi eval` killed outright (SIGKILL to its process group: no Ctrl-C handler runs, no
//! results.json is written), then `--resume`: the trials that had finished are not run again
//! (counted by the mocks' requests), a torn last journal line is ignored, two resumes at once
//! are refused by the folder's lock, and the finished run is the run an uninterrupted one
//! makes.

use std::os::unix::process::CommandExt as _;
use std::process::{Child, Stdio};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use pi_testkit::{processes_with, unique_marker, MockLlm};
use serde_json::{json, Value};

use super::{pid_of, suite, wait_until, EvalEnv};

/// `pi eval` in a process group of its own, as a shell runs a job.
fn spawn_group(env: &EvalEnv, args: &[&str]) -> Child {
    env.command(args)
        .process_group(0)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// SIGKILLs `child`'s whole process group and then the agents still asking the model.
fn kill_group(mut child: Child, marker: &str) {
    let group = i32::try_from(child.id()).unwrap();
    kill(Pid::from_raw(-group), Signal::SIGKILL).unwrap();
    child.wait().unwrap();
    for agent in processes_with(marker) {
        let _ = kill(Pid::from_raw(pid_of(&agent)), Signal::SIGKILL);
    }
}

/// A trial's result without what differs between two live runs of it: the clock readings
/// (`wallMs` and its mean, the messages' `timestamp` and `durationMs`), the id the mock numbers
/// its responses with, and the system message's `cwd` section (each trial's temporary
/// workspace).
fn timeless(trial: &Value) -> Value {
    fn strip(value: &mut Value) {
        match value {
            Value::Object(fields) => {
                for key in [
                    "wallMs",
                    "meanWallMs",
                    "timestamp",
                    "durationMs",
                    "responseId",
                ] {
                    fields.remove(key);
                }
                if let Some(Value::Object(sections)) = fields.get_mut("sections") {
                    sections.remove("cwd");
                }
                fields.values_mut().for_each(strip);
            }
            Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    let mut trial = trial.clone();
    strip(&mut trial);
    trial
}

fn trials(results: &Value) -> Vec<Value> {
    results["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(timeless)
        .collect()
}

#[test]
fn a_run_killed_outright_is_resumed_without_running_its_finished_trials_again() {
    let marker = unique_marker("eval-killed");
    let mock = MockLlm::start(&json!([
        {"text": ["done"]},
        {"text": ["done"]},
        {"text": ["never"], "hang_ms": 60000}
    ]));
    let env = EvalEnv::new(Some(&mock));
    let suite = suite(&env, 4, &marker, "");
    let args = [&suite, "--jobs", "1", "--isolate", "none", "--out", "o"];
    let child = spawn_group(&env, &args);
    // The third trial asks the model only once the second has finished.
    wait_until("two trials finish and a third asks the model", || {
        mock.requests().len() == 3
    });
    kill_group(child, &marker);
    assert!(
        !env.path("work/o/results.json").exists(),
        "a killed run writes no results.json"
    );
    let journal = env.path("work/o/journal.jsonl");
    let text = std::fs::read_to_string(&journal).unwrap_or_default();
    assert_eq!(
        text.lines().count(),
        3,
        "the journal holds its header and the two finished trials: {text}"
    );
    // A kill in the middle of writing a third trial's line leaves part of it.
    let last = text.lines().last().unwrap();
    assert!(last.contains("\"trial\":1"), "{last}");
    let torn = last.replace("\"trial\":1", "\"trial\":2");
    std::fs::write(&journal, format!("{text}{}", &torn[..torn.len() / 2])).unwrap();
    drop(mock);

    // A resume killed in its turn, while a second resume is refused by the folder's lock.
    let hanging = MockLlm::start(&json!([{"text": ["never"], "hang_ms": 60000}]));
    env.serve(&hanging);
    let first = spawn_group(&env, &["--resume", "o"]);
    wait_until("the resume asks the model", || {
        hanging.requests().len() == 1
    });
    let second = env.eval(&["--resume", "o"]);
    assert_eq!(second.code, 2, "{}", second.stderr);
    assert!(
        second.stderr.contains(&format!("process {}", first.id())),
        "{}",
        second.stderr
    );
    kill_group(first, &marker);
    drop(hanging);

    let fresh = MockLlm::start(&json!([{"text": ["done"]}, {"text": ["done"]}]));
    env.serve(&fresh);
    let resumed = env.eval(&["--resume", "o"]);
    assert_eq!(resumed.code, 0, "{}\n{}", resumed.stdout, resumed.stderr);
    assert_eq!(
        fresh.requests().len(),
        2,
        "only the two unfinished trials ran again"
    );
    let whole = env.results("o");
    assert_eq!(whole.get("interrupted"), None, "{whole}");
    assert!(!journal.exists(), "a finished run leaves no journal");
    let kept: Vec<Value> = text
        .lines()
        .skip(1)
        .map(|line| timeless(&serde_json::from_str(line).unwrap()))
        .collect();
    assert_eq!(
        trials(&whole)[..2],
        kept[..],
        "the finished trials are kept as they were"
    );

    let uninterrupted = MockLlm::start(&Value::Array(vec![json!({"text": ["done"]}); 4]));
    env.serve(&uninterrupted);
    let ran = env.eval(&[
        &suite,
        "--jobs",
        "1",
        "--isolate",
        "none",
        "--out",
        "u",
        "-q",
    ]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let once = env.results("u");
    assert_eq!(trials(&whole), trials(&once));
    assert_eq!(timeless(&whole["tasks"]), timeless(&once["tasks"]));
    assert_eq!(timeless(&whole["models"]), timeless(&once["models"]));
}
