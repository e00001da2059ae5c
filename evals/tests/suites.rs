//! Reading suites: the shipped ones parse with their defaults applied, and every kind of
//! mistake is an error naming the file, the line, the task and the field.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use pi_evals::check::CheckKind;
use pi_evals::suite::{self, Step};

fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("suites")
        .join(name)
}

#[test]
fn the_smoke_suite_reads_with_its_defaults_applied() {
    let suite = suite::load(&shipped("smoke.toml")).expect("the shipped suite reads");
    assert_eq!(suite.name, "smoke");
    assert_eq!(suite.tasks.len(), 6);
    let cassettes = suite.cassettes.as_deref().expect("it names its cassettes");
    assert!(cassettes.ends_with("cassettes"), "{}", cassettes.display());
    for task in &suite.tasks {
        assert_eq!(task.models, ["mock/mock-model"]);
        assert_eq!(task.trials, 3);
        assert_eq!(task.limits.turns, Some(10));
        assert_eq!(task.settings["retry"]["enabled"], false);
        assert!(!task.checks.is_empty());
    }
    let poem = suite
        .tasks
        .iter()
        .find(|t| t.id == "steered-poem")
        .expect("task");
    assert!(matches!(poem.steps[1], Step::Steer(_)));
    assert!((poem.threshold - 0.5).abs() < 1e-12);
    let fix = suite
        .tasks
        .iter()
        .find(|t| t.id == "fix-bug")
        .expect("task");
    assert!(matches!(fix.checks[0].kind, CheckKind::Command { .. }));
    assert!((fix.checks[0].weight - 3.0).abs() < 1e-12);
    assert!(fix
        .fixture
        .as_deref()
        .is_some_and(|f| f.join("test.sh").is_file()));
}

#[test]
fn a_task_without_checks_is_checked_for_errors_only() {
    let suite = suite::parse(
        Path::new("s.toml"),
        "[defaults]\nmodels = [\"m\"]\n[[task]]\nid = \"a\"\nprompt = \"hi\"\n",
    )
    .expect("reads");
    assert_eq!(suite.tasks[0].checks.len(), 1);
    assert!(matches!(suite.tasks[0].checks[0].kind, CheckKind::NoError));
    assert_eq!(suite.name, "s");
}

/// Each bad suite and the error it gets.
#[test]
fn mistakes_are_named_by_file_line_task_and_field() {
    let head = "[defaults]\nmodels = [\"m\"]\n\n";
    let cases: &[(&str, &str)] = &[
        ("not toml", "name = \n"),
        ("no task", "seed = 3\n"),
        ("unknown top-level field", "nmae = \"x\"\n[[task]]\nid = \"a\"\nprompt = \"p\"\n"),
        ("unknown task field", "[[task]]\nid = \"a\"\nprompt = \"p\"\npromt = \"q\"\n"),
        ("missing prompt", "[[task]]\nid = \"a\"\n"),
        ("prompt and steps", "[[task]]\nid = \"a\"\nprompt = \"p\"\nsteps = [{ prompt = \"q\" }]\n"),
        ("steer first", "[[task]]\nid = \"a\"\nsteps = [{ steer = \"q\" }]\n"),
        ("two kinds in a step", "[[task]]\nid = \"a\"\nsteps = [{ prompt = \"q\", steer = \"r\" }]\n"),
        ("duplicate id", "[[task]]\nid = \"a\"\nprompt = \"p\"\n\n[[task]]\nid = \"a\"\nprompt = \"p\"\n"),
        ("slash in id", "[[task]]\nid = \"a/b\"\nprompt = \"p\"\n"),
        ("zero trials", "[[task]]\nid = \"a\"\nprompt = \"p\"\ntrials = 0\n"),
        ("threshold above one", "[[task]]\nid = \"a\"\nprompt = \"p\"\nthreshold = 2.0\n"),
        ("unknown check kind", "[[task]]\nid = \"a\"\nprompt = \"p\"\n\n[[task.check]]\nkind = \"text_has\"\ntext = \"x\"\n"),
        ("field of another kind", "[[task]]\nid = \"a\"\nprompt = \"p\"\n\n[[task.check]]\nkind = \"file_exists\"\npath = \"a\"\nregex = \"x\"\n"),
        ("missing field", "[[task]]\nid = \"a\"\nprompt = \"p\"\n\n[[task.check]]\nkind = \"file_contains\"\npath = \"a\"\n"),
        ("bad regex", "[[task]]\nid = \"a\"\nprompt = \"p\"\n\n[[task.check]]\nkind = \"text_matches\"\nregex = \"(unclosed\"\n"),
        ("path outside the workspace", "[[task]]\nid = \"a\"\nprompt = \"p\"\n\n[[task.check]]\nkind = \"file_exists\"\npath = \"../secret\"\n"),
        ("bad hash", "[[task]]\nid = \"a\"\nprompt = \"p\"\n\n[[task.check]]\nkind = \"file_hash\"\npath = \"a\"\nsha256 = \"abc\"\n"),
        ("negative timeout", "[[task]]\nid = \"a\"\nprompt = \"p\"\n\n[[task.check]]\nkind = \"command\"\nrun = \"true\"\ntimeout = -1\n"),
        ("negative weight", "[[task]]\nid = \"a\"\nprompt = \"p\"\n\n[[task.check]]\nkind = \"no_error\"\nweight = -1\n"),
        ("bad wall time", "[[task]]\nid = \"a\"\nprompt = \"p\"\nlimits = { wall_time = 0 }\n"),
        ("wrong type", "[[task]]\nid = \"a\"\nprompt = 3\n"),
        ("id with a space", "[[task]]\nid = \"a b\"\nprompt = \"p\"\n"),
        ("id climbing", "[[task]]\nid = \"..\"\nprompt = \"p\"\n"),
        ("model climbing", "[[task]]\nid = \"a\"\nprompt = \"p\"\nmodels = [\"mock/../../y\"]\n"),
        ("unknown tool", "[[task]]\nid = \"a\"\nprompt = \"p\"\ntools = [\"read\", \"bsh\"]\n"),
        ("thinking level", "[[task]]\nid = \"a\"\nprompt = \"p\"\nthinking = \"hgih\"\n"),
        ("too many trials", "[[task]]\nid = \"a\"\nprompt = \"p\"\ntrials = 1001\n"),
        ("single-bracket check", "[[task]]\nid = \"a\"\nprompt = \"p\"\n\n[task.check]\nkind = \"no_error\"\n"),
        ("missing fixture", "[[task]]\nid = \"a\"\nprompt = \"p\"\nfixture = \"fixtures/none\"\n"),
        ("tag with a space", "[[task]]\nid = \"a\"\nprompt = \"p\"\ntags = [\"very hard\"]\n"),
    ];
    let mut report = String::new();
    for (name, body) in cases {
        let text = format!("{head}{body}");
        let error = suite::parse(Path::new("suites/bad.toml"), &text)
            .err()
            .unwrap_or_else(|| panic!("{name}: the suite was accepted"));
        assert!(error.line >= 1, "{name}: {error}");
        report.push_str(&format!("{name}:\n  {error}\n"));
    }
    insta::assert_snapshot!(report);
}

#[test]
fn a_suite_name_that_is_no_folder_name_is_refused() {
    let body = "[[task]]\nid = \"a\"\nprompt = \"p\"\nmodels = [\"m\"]\n";
    let climbing = suite::parse(Path::new("s.toml"), &format!("name = \"../../x\"\n{body}"))
        .expect_err("climbs");
    assert!(
        climbing
            .to_string()
            .starts_with("s.toml:1: field `name`: `../../x` is not a name"),
        "{climbing}"
    );
    let stem = suite::parse(Path::new("my suite.toml"), body).expect_err("a space");
    assert!(
        stem.to_string()
            .starts_with("my suite.toml:1: field `name`: the suite is named after its file"),
        "{stem}"
    );
}

#[test]
fn a_missing_or_non_utf8_file_is_an_error_not_a_panic() {
    let dir = tempfile::tempdir().expect("temp dir");
    let missing = suite::load(&dir.path().join("nope.toml")).expect_err("missing");
    assert!(
        missing.to_string().contains("cannot read the suite"),
        "{missing}"
    );
    let binary = dir.path().join("bin.toml");
    std::fs::write(&binary, b"name = \"a\"\n\xff\xfe").expect("write");
    let error = suite::load(&binary).expect_err("not UTF-8");
    assert!(
        error.to_string().contains(":2: the suite is not UTF-8"),
        "{error}"
    );
}
