//! The kit's runners refuse a scenario whose runs share a `suffix`: each run writes
//! `stdout<suffix>.jsonl`, so runs sharing one overwrite each other's output and only the last
//! run's events would ever be compared. `conformance/run.py` refuses such a scenario before it
//! starts anything, and `conformance/extensions/run.py` (record and compare) refuses such a case
//! before any case runs; the repository's own scenario folders and extension cases are all
//! accepted. Each test runs
//! the real scripts; skipped when python3 is absent, unless `PI_REQUIRE_ORIGINAL=1`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::json;

/// Whether python3 runs; its absence fails the test where the kit is required (CI).
fn python_present() -> bool {
    let present = Command::new("python3")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok();
    if !present {
        assert!(
            std::env::var("PI_REQUIRE_ORIGINAL").map_or(true, |v| v != "1"),
            "python3 (the kit's run.py) is required"
        );
        pi_testkit::skip("python3 (the kit's run.py) is not installed");
    }
    present
}

fn python(script: &Path, args: &[&str]) -> Output {
    Command::new("python3")
        .arg(script)
        .args(args)
        .output()
        .unwrap()
}

/// A scenario of two runs, with the suffixes given (`None`: the default, "").
fn two_runs(first: Option<&str>, second: Option<&str>) -> String {
    let run = |suffix: Option<&str>, arg: &str| match suffix {
        Some(s) => json!({"suffix": s, "args": [arg]}),
        None => json!({"args": [arg]}),
    };
    json!({
        "description": "two runs",
        "script": [],
        "runs": [run(first, "--version"), run(second, "--help")],
    })
    .to_string()
}

#[test]
fn the_kit_refuses_a_scenario_whose_runs_share_a_suffix() {
    if !python_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let scenarios = tmp.path().join("scenarios");
    std::fs::create_dir(&scenarios).unwrap();
    let runner = pi_testkit::kit_dir().join("run.py");
    let out = tmp.path().join("out");
    let out_arg = out.to_str().unwrap();
    let dir_arg = scenarios.to_str().unwrap();

    for (first, second) in [(None, None), (Some("-a"), Some("-a")), (None, Some(""))] {
        std::fs::write(scenarios.join("dup.json"), two_runs(first, second)).unwrap();
        let said = python(
            &runner,
            &["--pi", "true", "--scenarios", dir_arg, "--out", out_arg],
        );
        let stderr = String::from_utf8_lossy(&said.stderr);
        assert!(!said.status.success(), "accepted {first:?} {second:?}");
        assert!(
            stderr.contains("dup.json: runs 1, 2 share the suffix")
                && stderr.contains("give each run its own \"suffix\""),
            "{stderr}"
        );
        assert!(!out.exists(), "a refused scenario ran");
    }

    // Each run with its own suffix (one of them the default) is accepted.
    std::fs::write(scenarios.join("dup.json"), two_runs(None, Some("-help"))).unwrap();
    let said = python(&runner, &["--list", "--scenarios", dir_arg]);
    assert!(
        said.status.success(),
        "{}",
        String::from_utf8_lossy(&said.stderr)
    );
    assert!(String::from_utf8_lossy(&said.stdout).contains("dup"));
}

#[test]
fn the_repositorys_scenarios_each_give_their_runs_their_own_suffix() {
    if !python_present() {
        return;
    }
    let runner = pi_testkit::kit_dir().join("run.py");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for folder in [
        "conformance/scenarios",
        "conformance/scenarios-1.5.2",
        "cli/tests/scenarios",
    ] {
        let dir = root.join(folder);
        let said = python(&runner, &["--list", "--scenarios", dir.to_str().unwrap()]);
        assert!(
            said.status.success(),
            "{folder}: {}",
            String::from_utf8_lossy(&said.stderr)
        );
    }
    // The extension set: `compare` checks every case before it runs any, so one with a `--pi`
    // that cannot start (writing only into a temp folder) gets past the check and stops there.
    let keep = tempfile::tempdir().unwrap();
    let said = python(
        &root.join("conformance/extensions/run.py"),
        &[
            "compare",
            "--pi",
            "/nonexistent/pi",
            "--host-pi-dir",
            "/nonexistent",
            "--keep",
            keep.path().to_str().unwrap(),
        ],
    );
    let stderr = String::from_utf8_lossy(&said.stderr);
    assert!(
        !stderr.contains("share the suffix") && stderr.contains("cannot run"),
        "{stderr}"
    );
}

/// The extension set's runner, copied with the kit's runner into a temp folder laid out as the
/// repository's (`kit/run.py`, `kit/extensions/run.py`), with one case of its own.
#[test]
fn the_extension_set_refuses_a_case_whose_runs_share_a_suffix() {
    if !python_present() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let kit = tmp.path().join("kit");
    let set = kit.join("extensions");
    std::fs::create_dir_all(set.join("dup")).unwrap();
    std::fs::copy(pi_testkit::kit_dir().join("run.py"), kit.join("run.py")).unwrap();
    std::fs::copy(
        pi_testkit::kit_dir().join("extensions/run.py"),
        set.join("run.py"),
    )
    .unwrap();
    std::fs::write(
        set.join("dup/extension.ts"),
        "export default function () {}\n",
    )
    .unwrap();
    let runner = set.join("run.py");

    std::fs::write(set.join("dup/scenario.json"), two_runs(None, None)).unwrap();
    for action in [
        &["record", "--pi", "true"][..],
        &["compare", "--pi", "true", "--host-pi-dir", "/nonexistent"][..],
    ] {
        let said = python(&runner, action);
        let stderr = String::from_utf8_lossy(&said.stderr);
        assert!(!said.status.success(), "{action:?} accepted the case");
        assert!(
            stderr.contains("case dup (") && stderr.contains("runs 1, 2 share the suffix ''"),
            "{action:?}: {stderr}"
        );
        assert!(!set.join("traces").exists(), "{action:?} recorded the case");
    }

    // With a suffix each, the case gets past the check: `record` goes on to run it, and with a
    // `--pi` that cannot start fails there instead, naming the command.
    std::fs::write(set.join("dup/scenario.json"), two_runs(None, Some("-help"))).unwrap();
    let said = python(&runner, &["record", "--pi", "/nonexistent/pi"]);
    let stderr = String::from_utf8_lossy(&said.stderr);
    assert!(!said.status.success());
    assert!(
        !stderr.contains("share the suffix") && stderr.contains("cannot run"),
        "{stderr}"
    );
}
