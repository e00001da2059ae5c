//! `pi eval` refuses a bad suite or bad flags before any trial runs: the real binary, real
//! suite files and fixtures in temp folders, and for the escapes a snapshot of the whole temp
//! folder before and after, so a write anywhere outside the cassette folder is seen.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use pi_testkit::MockLlm;
use serde_json::json;

use super::{EvalEnv, Ran};

/// An eval folder whose models.json points at a model on `port` (a mock, or nothing there).
fn scratch(port: u16) -> EvalEnv {
    let env = EvalEnv::new(None);
    env.serve_port(port);
    env
}

impl EvalEnv {
    /// A suite `work/s/<file>`: one task, the given lines at the top and in the task.
    fn suite(&self, file: &str, top: &str, task: &str) -> String {
        let text = format!(
            "{top}\n[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[task]]\nid = \"t\"\nprompt = \"hi\"\n{task}\n"
        );
        self.write(&format!("work/s/{file}"), &text);
        format!("s/{file}")
    }

    /// Every path under the folder.
    fn snapshot(&self) -> BTreeSet<PathBuf> {
        fn walk(dir: &Path, into: &mut BTreeSet<PathBuf>) {
            for entry in std::fs::read_dir(dir).unwrap() {
                let entry = entry.unwrap();
                into.insert(entry.path());
                if entry.file_type().unwrap().is_dir() {
                    walk(&entry.path(), into);
                }
            }
        }
        let mut paths = BTreeSet::new();
        walk(self.root.path(), &mut paths);
        paths
    }
}

/// `ran` was refused with exit 2, its one message naming `wanted` (file, line, field).
fn refused(ran: &Ran, wanted: &str) {
    assert_eq!(
        ran.code, 2,
        "expected a refusal naming {wanted:?}\nstdout: {}\nstderr: {}",
        ran.stdout, ran.stderr
    );
    assert!(
        ran.stderr.contains(wanted),
        "expected {wanted:?} in: {}",
        ran.stderr
    );
    assert!(
        !ran.stderr.contains("trials ("),
        "refused before the run: {}",
        ran.stderr
    );
}

/// A recording of a suite whose name or model climbs out of the cassette folder writes nothing
/// anywhere: the suite is refused before the first trial, whose recording was made at
/// `cass/../../x/...` (outside the cassette folder, outside even the working directory).
#[test]
fn a_suite_name_or_model_id_that_climbs_out_of_the_cassette_folder_is_refused_and_writes_nothing() {
    let mock = MockLlm::start(&json!([{"text": ["done"]}, {"text": ["done"]}]));
    let scratch = scratch(mock.port);
    let by_name = scratch.suite("name.toml", "name = \"../../x\"", "");
    let by_model = scratch.suite("model.toml", "", "models = [\"mock/../../../y\"]");
    let plain = scratch.suite("plain.toml", "", "");
    let record = ["--record", "cass", "--isolate", "none", "-q", "--out", "o"];
    let cases: [(&[&str], &str); 3] = [
        (&[&by_name], "s/name.toml:1: field `name`"),
        (&[&by_model], "s/model.toml:8: task `t`: field `models`"),
        (&[&plain, "--model", "mock/../../../z"], "--model"),
    ];
    for (args, wanted) in cases {
        let before = scratch.snapshot();
        let ran = scratch.eval(&[args, &record[..]].concat());
        refused(&ran, wanted);
        assert_eq!(
            scratch.snapshot(),
            before,
            "{wanted}: nothing written: {}",
            ran.stderr
        );
    }
    assert!(mock.requests().is_empty(), "no trial asked the model");
}

/// A fixture holding a symbolic link out of itself (to a user's file) would put that file in
/// reach of the agent: the suite is refused, as is a fixture folder that is itself a link.
#[test]
fn a_fixture_with_a_symlink_out_of_it_is_refused() {
    let scratch = scratch(9);
    scratch.write("home/secret.txt", "planted-secret-4711\n");
    scratch.write("work/s/fixtures/leaky/readme.txt", "hello\n");
    std::os::unix::fs::symlink(
        scratch.path("home/secret.txt"),
        scratch.path("work/s/fixtures/leaky/notes.txt"),
    )
    .unwrap();
    std::fs::create_dir_all(scratch.path("work/s/fixtures/deep/sub")).unwrap();
    std::os::unix::fs::symlink(
        "../../../../../home",
        scratch.path("work/s/fixtures/deep/sub/up"),
    )
    .unwrap();
    std::os::unix::fs::symlink(scratch.path("home"), scratch.path("work/s/fixtures/linked"))
        .unwrap();
    std::fs::create_dir_all(scratch.path("work/s/fixtures/fine/d")).unwrap();
    std::os::unix::fs::symlink("../readme.txt", scratch.path("work/s/fixtures/fine/d/ok")).unwrap();
    scratch.write("work/s/fixtures/fine/readme.txt", "hello\n");
    let replay = ["--replay", "cass", "-q", "--out", "o"];
    std::fs::create_dir_all(scratch.path("work/cass")).unwrap();
    for (fixture, wanted) in [
        ("leaky", "fixtures/leaky/notes.txt"),
        ("deep", "fixtures/deep/sub/up"),
        ("linked", "fixtures/linked"),
    ] {
        let suite = scratch.suite(
            &format!("{fixture}.toml"),
            "",
            &format!("fixture = \"fixtures/{fixture}\""),
        );
        let ran = scratch.eval(&[&[suite.as_str()][..], &replay[..]].concat());
        refused(
            &ran,
            &format!("s/{fixture}.toml:8: task `t`: field `fixture`"),
        );
        assert!(ran.stderr.contains(wanted), "{}", ran.stderr);
    }
    let fine = scratch.suite("fine.toml", "", "fixture = \"fixtures/fine\"");
    let ran = scratch.eval(&[&[fine.as_str()][..], &replay[..]].concat());
    assert_eq!(
        ran.code, 1,
        "a link inside the fixture is fine (the cassette is missing): {}",
        ran.stderr
    );
}

/// Each mistake is refused before any trial, exit 2, with the file, the line and the field (or
/// the flag).
#[test]
fn mistakes_a_suite_or_its_flags_make_are_refused_up_front() {
    let scratch = scratch(9);
    std::fs::create_dir_all(scratch.path("work/cass")).unwrap();
    let replay = ["--replay", "cass", "-q", "--out", "o"];
    let live = ["--isolate", "none", "-q", "--out", "o"];
    let cases: Vec<(String, &[&str], &str)> = vec![
        (
            scratch.suite("nofix.toml", "", "fixture = \"fixtures/none\""),
            &replay,
            "s/nofix.toml:8: task `t`: field `fixture`",
        ),
        (
            scratch.suite("tools.toml", "", "tools = [\"read\", \"bsh\"]"),
            &replay,
            "s/tools.toml:8: task `t`: field `tools`",
        ),
        (
            scratch.suite("think.toml", "", "thinking = \"hgih\""),
            &replay,
            "s/think.toml:8: task `t`: field `thinking`",
        ),
        (
            scratch.suite("many.toml", "", "trials = 100000"),
            &replay,
            "s/many.toml:8: task `t`: field `trials`",
        ),
        (
            scratch.suite("dots.toml", "name = \"a b\"", ""),
            &replay,
            "s/dots.toml:1: field `name`",
        ),
        (
            scratch.suite("id.toml", "", "\n[[task]]\nid = \"x y\"\nprompt = \"p\""),
            &replay,
            "s/id.toml:10: task `x y`: field `id`",
        ),
        (
            scratch.suite("dotid.toml", "", "\n[[task]]\nid = \".x\"\nprompt = \"p\""),
            &replay,
            "s/dotid.toml:10: task `.x`: field `id`",
        ),
        (
            scratch.suite("single.toml", "", "\n[task.check]\nkind = \"no_error\""),
            &replay,
            "`[[task.check]]`",
        ),
        (
            scratch.suite("ok.toml", "", ""),
            &["--replay", "missing", "-q"],
            "--replay missing",
        ),
        (
            scratch.suite("ok2.toml", "", ""),
            &["--trials", "5000", "--replay", "cass"],
            "--trials",
        ),
        (
            scratch.suite("provider.toml", "", "models = [\"nosuch/model\"]"),
            &live,
            "s/provider.toml:8: task `t`: field `models`",
        ),
        (
            scratch.suite("ok3.toml", "", ""),
            &["--model", "nosuch/m", "--isolate", "none"],
            "--model nosuch/m",
        ),
    ];
    for (suite, flags, wanted) in cases {
        let ran = scratch.eval(&[&[suite.as_str()][..], flags].concat());
        refused(&ran, wanted);
    }
    let single = scratch.eval(&["s/single.toml", "--replay", "cass"]);
    assert!(single.stderr.contains("field `check`"), "{}", single.stderr);
}

/// An unknown provider is one message before the run, not one error per trial.
#[test]
fn an_unknown_model_is_named_once_before_any_trial() {
    let scratch = scratch(9);
    let suite = scratch.suite("p.toml", "", "models = [\"nosuch/model\"]\ntrials = 4");
    let ran = scratch.eval(&[&suite, "--isolate", "none", "--out", "o"]);
    refused(&ran, "unknown provider `nosuch`");
    assert_eq!(ran.stderr.lines().count(), 1, "one message: {}", ran.stderr);
    assert!(
        !scratch.path("work/o").exists(),
        "no results for a run that did not start"
    );
}

/// A judge check's model is checked with the trials' models: an unknown one is one message
/// before the run, not an error in every trial.
#[test]
fn an_unknown_judge_model_is_named_once_before_any_trial() {
    let mock = MockLlm::start(&json!([{"text": ["a"]}]));
    let scratch = scratch(mock.port);
    let suite = scratch.suite(
        "j.toml",
        "",
        "trials = 3\n\n[[task.check]]\nkind = \"judge\"\nrubric = \"says a\"\nmodel = \"nosuch/judge\"",
    );
    let ran = scratch.eval(&[&suite, "--isolate", "none", "--out", "o"]);
    refused(&ran, "unknown provider `nosuch`");
    assert!(
        ran.stderr.contains("judge"),
        "names the judge: {}",
        ran.stderr
    );
    assert_eq!(ran.stderr.lines().count(), 1, "one message: {}", ran.stderr);
    assert!(mock.requests().is_empty(), "no trial started");
}

/// A provider that ignores the model's name (a local server, the mock) runs a misspelled id
/// silently: `pi eval` says so once, before the run, and runs.
#[test]
fn a_model_id_the_provider_does_not_list_is_warned_about_once() {
    let mock = MockLlm::start(&json!([{"text": ["a"]}, {"text": ["b"]}, {"text": ["c"]}]));
    let scratch = scratch(mock.port);
    let suite = scratch.suite("w.toml", "", "models = [\"mock/mock-modle\"]\ntrials = 3");
    let ran = scratch.eval(&[&suite, "--isolate", "none", "--jobs", "1", "--out", "o"]);
    assert_eq!(ran.code, 0, "{}\n{}", ran.stdout, ran.stderr);
    let warning = "model `mock/mock-modle`: provider `mock` lists no model `mock-modle`";
    assert_eq!(ran.stderr.matches(warning).count(), 1, "{}", ran.stderr);
    let warned_at = ran.stderr.find(warning).unwrap();
    let run_at = ran.stderr.find("trials (").unwrap();
    assert!(warned_at < run_at, "before the run: {}", ran.stderr);
    assert_eq!(mock.requests().len(), 3);
}

/// `--filter '!PATTERN'` leaves out the tasks it matches.
#[test]
fn a_filter_with_a_bang_excludes() {
    let scratch = scratch(9);
    let suite = repo("evals/suites/smoke.toml");
    let ran = scratch.eval(&[
        suite.to_str().unwrap(),
        "--list",
        "--filter",
        "!c*",
        "--filter",
        "!smoke/no-*",
    ]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let tasks: BTreeSet<&str> = ran
        .stdout
        .lines()
        .filter_map(|l| l.split('/').nth(1))
        .collect();
    assert_eq!(
        tasks.into_iter().collect::<Vec<_>>(),
        ["fix-bug", "read-answer", "steered-poem"]
    );
    let both = scratch.eval(&[
        suite.to_str().unwrap(),
        "--list",
        "--filter",
        "*e*",
        "--filter",
        "!*-file",
    ]);
    assert!(!both.stdout.contains("create-file"), "{}", both.stdout);
    assert!(
        both.stdout.contains("smoke/read-answer/"),
        "{}",
        both.stdout
    );
    let none = scratch.eval(&[suite.to_str().unwrap(), "--list", "--filter", "!*"]);
    assert_eq!(none.code, 2, "{}", none.stdout);
}

/// `--list` prints the trials a run would make, `--dry-run` checks everything a run would
/// check; neither runs a trial nor writes a report.
#[test]
fn list_and_dry_run_print_the_plan_and_run_nothing() {
    let scratch = scratch(9);
    let suite = repo("evals/suites/smoke.toml");
    let suite = suite.to_str().unwrap();
    let list = scratch.eval(&[suite, "--list", "--filter", "c*", "--trials", "2"]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    insta::assert_snapshot!("list", list.stdout);
    let dry = scratch.eval(&[suite, "--dry-run", "--filter", "c*"]);
    assert_eq!(dry.code, 0, "{}", dry.stderr);
    insta::assert_snapshot!("dry_run", dry.stdout);
    assert!(!scratch.path("work/eval-results").exists());
    std::fs::create_dir_all(scratch.path("work/empty")).unwrap();
    let missing = scratch.eval(&[
        suite,
        "--dry-run",
        "--filter",
        "create-file",
        "--replay",
        "empty",
    ]);
    assert_eq!(
        missing.code, 1,
        "a replay without its cassettes would error: {}",
        missing.stdout
    );
    assert!(
        missing
            .stdout
            .contains("no cassette for smoke/create-file/mock/mock-model/2"),
        "{}",
        missing.stdout
    );
    let bad = scratch.suite("bad.toml", "", "thinking = \"hgih\"");
    let refused_dry = scratch.eval(&[&bad, "--dry-run"]);
    refused(&refused_dry, "s/bad.toml:8: task `t`: field `thinking`");
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

/// A relative `--keep` names a folder of the working directory, while each agent runs in its
/// trial's workspace: the replays must still match their cassettes, in process and as
/// processes of their own.
#[test]
fn a_relative_keep_folder_replays_without_divergence() {
    use std::os::unix::fs::PermissionsExt;
    let scratch = scratch(9);
    // Run as root, pi eval runs agent processes as an unprivileged user, who must reach the
    // kept folders.
    std::fs::set_permissions(scratch.root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let suite = repo("evals/suites/smoke.toml");
    for (keep, extra) in [
        ("kept", None),
        ("kept-processes", Some("--replay-processes")),
    ] {
        let mut args = vec![suite.to_str().unwrap(), "--keep", keep, "-q", "--out", keep];
        args.extend(extra);
        let ran = scratch.eval(&args);
        assert_eq!(ran.code, 0, "{keep}: {}\n{}", ran.stdout, ran.stderr);
        let results: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(scratch.path("work").join(keep).join("results.json")).unwrap(),
        )
        .unwrap();
        let statuses: Vec<&str> = results["trials"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["status"].as_str().unwrap())
            .collect();
        assert_eq!(statuses.len(), 18);
        assert_eq!(
            statuses.iter().filter(|s| **s == "passed").count(),
            17,
            "{keep}: {statuses:?}"
        );
        assert!(
            scratch
                .path("work")
                .join(keep)
                .join("smoke__fix-bug__mock__mock-model__0/workspace")
                .is_dir(),
            "{keep}: the trial's folders are kept in the relative folder"
        );
    }
}
