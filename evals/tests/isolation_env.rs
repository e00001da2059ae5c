//! A confined command gets none of the eval's secrets, neither in its environment nor in any
//! process's `/proc/*/environ` (bwrap itself, the sandbox's PID 1, included). A test binary of
//! its own, with one test: it sets variables in its own environment, which no other test then
//! sees.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::*;
use pi_evals::isolate::Isolation;

/// Prints the lines of every process's environment it can read (its own and PID 1's included)
/// that hold `PATH` or one of the secrets below, each distinct line once (all of it would be cut
/// to the output's tail, and on a busy machine the unconfined run sees many processes' `PATH`).
const READ_ENVIRONS: &str = "{ cat /proc/1/environ; for f in /proc/[0-9]*/environ; do cat \"$f\"; echo; done; } 2>/dev/null | tr '\\0' '\\n' | grep -a -i -e '^PATH=' -e run.secret -e runsecret | sort -u";

#[test]
fn secrets_in_the_evals_environment_never_reach_a_confined_command() {
    let Some(bwrap) = bwrap() else { return };
    let secrets = [
        ("OPENAI_API_KEY", "sk-run-secret-1"),
        ("ANTHROPIC_API_KEY", "sk-ant-run-secret-2"),
        ("GITHUB_TOKEN", "ghp_run_secret_3"),
        ("AWS_ACCESS_KEY_ID", "AKIARUNSECRET4"),
        ("PI_EVAL_TEST_SECRET_KEY", "run-secret-5"),
    ];
    for (name, value) in secrets {
        std::env::set_var(name, value);
    }
    let s = scratch();
    let timeout = Duration::from_secs(20);

    let confined = bwrap.run(&s.confinement, "env", timeout).unwrap();
    assert_eq!(confined.exit, Some(0), "{confined:?}");
    for (name, value) in secrets {
        assert!(
            !confined.output.contains(value),
            "{name} leaked: {}",
            confined.output
        );
    }
    let temp = s.confinement.temp.display();
    assert!(confined.output.contains(&format!("HOME={temp}\n")));
    assert!(confined.output.contains(&format!("TMPDIR={temp}\n")));

    let free = Isolation::none()
        .run(&s.confinement, "env", timeout)
        .unwrap();
    for (name, value) in secrets {
        assert!(
            free.output.contains(value),
            "{name} missing: {}",
            free.output
        );
    }

    // Every process's environment in the sandbox, through `run` and through the wrapper the
    // agent's bash tool uses (started from the agent, whose environment holds the keys).
    let confined = bwrap.run(&s.confinement, READ_ENVIRONS, timeout).unwrap();
    assert!(confined.output.contains("PATH="), "{confined:?}");
    let wrapper = bwrap
        .shell_wrapper(&s.confinement, &bin_dir(&s, "bin"))
        .unwrap();
    let through_wrapper = spawn(
        Command::new(&wrapper)
            .args(["-c", READ_ENVIRONS])
            .current_dir(&s.confinement.workspace)
            .stdout(Stdio::piped()),
    )
    .wait_with_output()
    .unwrap();
    let through_wrapper = String::from_utf8_lossy(&through_wrapper.stdout);
    assert!(through_wrapper.contains("PATH="), "{through_wrapper}");
    let free = Isolation::none()
        .run(&s.confinement, READ_ENVIRONS, timeout)
        .unwrap();
    for (name, value) in secrets {
        assert!(
            !confined.output.contains(value),
            "{name} readable in /proc: {}",
            confined.output
        );
        assert!(
            !through_wrapper.contains(value),
            "{name} readable in /proc through the wrapper: {through_wrapper}"
        );
        assert!(free.output.contains(value), "{name} missing: {free:?}");
    }
}
