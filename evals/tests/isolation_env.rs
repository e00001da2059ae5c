//! `Isolation::run` gives a confined command none of the eval's secrets. A test binary of its
//! own, with one test: it sets variables in its own environment, which no other test then sees.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::*;
use pi_evals::isolate::Isolation;

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
}
