#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;

use std::collections::BTreeSet;
use std::os::unix::ffi::OsStringExt;
use std::process::Stdio;

fn os(s: &str) -> OsString {
    OsString::from(s)
}

#[test]
fn kind_reads_and_writes_its_names() {
    for (kind, name) in [
        (IsolationKind::Bwrap, "bwrap"),
        (IsolationKind::None, "none"),
    ] {
        assert_eq!(kind.to_string(), name);
        assert_eq!(name.parse::<IsolationKind>(), Ok(kind));
        assert_eq!(
            serde_json::to_string(&kind).ok(),
            Some(format!("\"{name}\""))
        );
    }
    assert_eq!(
        "docker".parse::<IsolationKind>(),
        Err(IsolateError::UnknownKind("docker".into()))
    );
}

#[test]
fn the_environment_keeps_only_the_allowlist_and_the_toolchain_homes() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join(".rustup")).unwrap();
    std::fs::create_dir(home.path().join(".pyenv")).unwrap();
    let parent = vec![
        (os("PATH"), os("/usr/bin:/bin")),
        (os("LANG"), os("C.UTF-8")),
        (os("HOME"), home.path().as_os_str().to_owned()),
        (os("TMPDIR"), os("/var/tmp")),
        (os("OPENAI_API_KEY"), os("sk-secret")),
        (os("ANTHROPIC_API_KEY"), os("sk-ant-secret")),
        (os("GITHUB_TOKEN"), os("ghp_secret")),
        (os("AWS_SECRET_ACCESS_KEY"), os("aws-secret")),
        (os("CARGO_HOME"), os("/opt/cargo")),
        (os("LD_PRELOAD"), os("/evil.so")),
    ];
    let env = confined_env(parent, Path::new("/t"));
    let rustup = home.path().join(".rustup").into_os_string();
    let pyenv = home.path().join(".pyenv").into_os_string();
    assert_eq!(
        env,
        vec![
            (os("CARGO_HOME"), os("/opt/cargo")),
            (os("HOME"), os("/t")),
            (os("LANG"), os("C.UTF-8")),
            (os("PATH"), os("/usr/bin:/bin")),
            (os("PYENV_ROOT"), pyenv),
            (os("RUSTUP_HOME"), rustup),
            (os("TMPDIR"), os("/t")),
        ]
    );
    // Without HOME, no toolchain default; HOME and TMPDIR are always set.
    let env = confined_env(vec![(os("TERM"), os("dumb"))], Path::new("/t"));
    assert_eq!(
        env,
        vec![
            (os("HOME"), os("/t")),
            (os("TERM"), os("dumb")),
            (os("TMPDIR"), os("/t")),
        ]
    );
}

const NASTY: &[&str] = &[
    "plain",
    "with space",
    "it's",
    "''",
    "$HOME `id` $(id) \\ \" ; & | * ? ~ # !",
    "line\nbreak",
    "-dash",
    "",
];

#[test]
fn quoting_survives_the_shell() {
    for value in NASTY {
        let mut script = b"printf %s ".to_vec();
        script.extend(shell_quote(OsStr::new(value)));
        let script = OsString::from_vec(script);
        let out = Command::new("/bin/sh")
            .arg("-c")
            .arg(&script)
            .output()
            .unwrap();
        assert!(out.status.success(), "{value:?}");
        assert_eq!(String::from_utf8_lossy(&out.stdout), *value);
    }
    assert_eq!(shell_quote(OsStr::new("it's")), b"'it'\\''s'".to_vec());
}

/// Runs the script `shell_wrapper` wrote for bwrap, with a stand-in bwrap that prints its
/// arguments and then its own environment's names, under a controlled environment.
fn wrapper_args(
    confinement: &Confinement,
    env: &[(OsString, OsString)],
) -> (Vec<OsString>, String) {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("fake bwrap's");
    std::fs::write(
        &fake,
        "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\0' \"$a\"; done\nprintf '\\0ENV\\0'\nexport -p\n",
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let isolation = Isolation {
        kind: IsolationKind::Bwrap,
        bwrap: Some(fake),
        bash: PathBuf::from("/usr/bin/bash"),
    };
    let wrapper = isolation.shell_wrapper(confinement, dir.path()).unwrap();
    // The script is run by sh explicitly: exec'ing a file just written can fail with ETXTBSY
    // while another test thread forks.
    let out = Command::new("/bin/sh")
        .arg(&wrapper)
        .args(["-c", "echo hi"])
        .env_clear()
        .envs(env.iter().cloned())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success());
    let marker = b"\0ENV\0";
    let at = out
        .stdout
        .windows(marker.len())
        .position(|w| w == marker)
        .unwrap();
    let args = out.stdout[..at]
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| OsString::from_vec(a.to_vec()))
        .collect();
    let exported = String::from_utf8_lossy(&out.stdout[at + marker.len()..]).into_owned();
    (args, exported)
}

#[test]
fn the_wrapper_passes_bwrap_the_options_and_environment_run_uses() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir(home.path().join(".cargo")).unwrap();
    for name in NASTY.iter().filter(|n| !n.is_empty()) {
        let confinement = Confinement {
            workspace: PathBuf::from(format!("/work spaces/{name}")),
            temp: PathBuf::from(format!("/temp/{name}'")),
        };
        let env = vec![
            (os("PATH"), os("/usr/bin:/bin")),
            (os("TZ"), os(name)),
            (os("HOME"), home.path().as_os_str().to_owned()),
            (os("OPENAI_API_KEY"), os("sk-secret")),
            (os("GITHUB_TOKEN"), os("ghp_secret")),
        ];
        let (args, exported) = wrapper_args(&confinement, &env);
        // bwrap starts with nothing of the agent's environment (sh adds only PWD and the like).
        for (name, _) in &env {
            let name = name.to_string_lossy();
            assert!(!exported.contains(&format!(" {name}=")), "{exported}");
        }

        let options = bwrap_options(&confinement);
        assert_eq!(args[..options.len()], options[..]);
        let rest = &args[options.len()..];
        let dashes = rest.iter().position(|a| a == "--").unwrap();
        assert_eq!(
            rest[dashes + 1..],
            [os("/usr/bin/bash"), os("-c"), os("echo hi")]
        );
        let setenv: BTreeSet<(OsString, OsString)> = rest[..dashes]
            .chunks(3)
            .map(|c| {
                assert_eq!(c[0], "--setenv");
                (c[1].clone(), c[2].clone())
            })
            .collect();
        let expected: BTreeSet<_> = confined_env(env, &confinement.temp).into_iter().collect();
        assert_eq!(setenv, expected);
        assert!(setenv
            .iter()
            .all(|(_, v)| !v.as_bytes().ends_with(b"secret")));
    }
}

#[test]
fn the_none_wrapper_runs_bash_with_its_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let confinement = Confinement {
        workspace: dir.path().to_owned(),
        temp: dir.path().to_owned(),
    };
    let wrapper = Isolation::none()
        .shell_wrapper(&confinement, dir.path())
        .unwrap();
    let out = Command::new("/bin/sh")
        .arg(&wrapper)
        .args(["-c", "echo \"$BASH_VERSION\" \"$0\"", "it's me"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.ends_with(" it's me\n"), "{text}");
    assert!(text.len() > " it's me\n".len(), "not bash: {text}");
}

#[test]
fn errors_say_what_to_do() {
    let missing = IsolateError::NotInstalled.to_string();
    assert!(
        missing.contains("bubblewrap") && missing.contains("--isolate none"),
        "{missing}"
    );
    let failing = IsolateError::Unusable {
        path: PathBuf::from("/usr/bin/bwrap"),
        status: "exit status: 1".into(),
        stderr: "bwrap: No permissions to create new namespace".into(),
    }
    .to_string();
    assert!(
        failing.starts_with("/usr/bin/bwrap is installed but cannot confine"),
        "{failing}"
    );
    assert!(
        failing.contains("No permissions to create new namespace")
            && failing.ends_with("--isolate none"),
        "{failing}"
    );
}
