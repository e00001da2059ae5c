//! Confinement, each test with real processes: what bwrap stops, shown against `none`, where the
//! same command gets through (so each test can fail). Without a working bwrap the tests print why
//! and pass, unless `PI_REQUIRE_BWRAP=1`.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use pi_evals::isolate::{Isolation, IsolationKind};

const TIMEOUT: Duration = Duration::from_secs(20);

#[test]
fn detect_prefers_bwrap_when_it_runs() {
    let Some(bwrap) = bwrap() else { return };
    assert_eq!(bwrap.kind(), IsolationKind::Bwrap);
    assert_eq!(
        Isolation::detect(None).unwrap().kind(),
        IsolationKind::Bwrap
    );
    let none = Isolation::detect(Some(IsolationKind::None)).unwrap();
    assert_eq!(none.kind(), IsolationKind::None);
}

#[test]
fn writes_outside_the_workspace_fail() {
    let Some(bwrap) = bwrap() else { return };
    let s = scratch();
    let outside_tmp = tempfile::tempdir().unwrap();
    let outside_target = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let mut targets = vec![
        outside_tmp.path().join("escaped"),
        outside_target.path().join("escaped"),
    ];
    // The test process's HOME, when this process can write there itself.
    if let Some(home) = std::env::var_os("HOME") {
        let probe =
            std::path::Path::new(&home).join(format!(".pi-evals-isolation-{}", std::process::id()));
        if std::fs::write(&probe, "").is_ok() {
            std::fs::remove_file(&probe).unwrap();
            targets.push(probe);
        }
    }
    for target in &targets {
        let command = format!("echo escaped > {}", q(target));
        let confined = bwrap.run(&s.confinement, &command, TIMEOUT).unwrap();
        assert_ne!(confined.exit, Some(0), "{target:?}: {confined:?}");
        assert!(!target.exists(), "bwrap let {target:?} be written");

        let free = Isolation::none()
            .run(&s.confinement, &command, TIMEOUT)
            .unwrap();
        assert_eq!(free.exit, Some(0), "{target:?}: {free:?}");
        assert_eq!(std::fs::read_to_string(target).unwrap(), "escaped\n");
        std::fs::remove_file(target).unwrap();
    }

    // Root in the sandbox keeps no capability to make `/` writable again.
    let target = outside_target.path().join("remounted");
    let command = format!(
        "mount -o remount,rw / ; mount -o remount,bind,rw / ; echo escaped > {}",
        q(&target)
    );
    let confined = bwrap.run(&s.confinement, &command, TIMEOUT).unwrap();
    assert_ne!(confined.exit, Some(0), "{confined:?}");
    assert!(!target.exists());

    // The workspace and the temp dir are writable, and what is written stays.
    let inside = bwrap
        .run(
            &s.confinement,
            "echo inside > inside.txt && mkdir -p sub && echo t > \"$TMPDIR/t.txt\" && echo h > \"$HOME/h.txt\"",
            TIMEOUT,
        )
        .unwrap();
    assert_eq!(inside.exit, Some(0), "{inside:?}");
    let ws = &s.confinement.workspace;
    assert_eq!(
        std::fs::read_to_string(ws.join("inside.txt")).unwrap(),
        "inside\n"
    );
    assert!(ws.join("sub").is_dir());
    assert!(s.confinement.temp.join("t.txt").exists());
    assert!(s.confinement.temp.join("h.txt").exists());
}

#[test]
fn the_network_is_unreachable() {
    let Some(bwrap) = bwrap() else { return };
    let s = scratch();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");

    let confined = bwrap.run(&s.confinement, &command, TIMEOUT).unwrap();
    assert_ne!(confined.exit, Some(0), "{confined:?}");
    assert!(!confined.output.contains("connected"));

    let free = Isolation::none()
        .run(&s.confinement, &command, TIMEOUT)
        .unwrap();
    assert_eq!(free.exit, Some(0), "{free:?}");
    assert!(free.output.contains("connected"));
}

#[test]
fn the_wrapper_passes_no_secret_from_the_agents_environment() {
    let Some(isolations) = both() else { return };
    let s = scratch();
    let secrets = [
        ("OPENAI_API_KEY", "sk-wrapper-secret-1"),
        ("ANTHROPIC_API_KEY", "sk-ant-wrapper-secret-2"),
        ("GITHUB_TOKEN", "ghp_wrapper_secret_3"),
        ("AWS_SECRET_ACCESS_KEY", "aws-wrapper-secret-4"),
        ("PI_EVAL_TEST_SECRET_KEY", "wrapper-secret-5"),
    ];
    for isolation in &isolations {
        let bin = bin_dir(&s, &isolation.kind().to_string());
        let wrapper = isolation.shell_wrapper(&s.confinement, &bin).unwrap();
        let out = spawn(
            Command::new(&wrapper)
                .args(["-c", "env"])
                .current_dir(&s.confinement.workspace)
                .envs(secrets)
                .stdout(Stdio::piped()),
        )
        .wait_with_output()
        .unwrap();
        assert!(out.status.success());
        let env = String::from_utf8_lossy(&out.stdout);
        let leaked = secrets.iter().filter(|(_, v)| env.contains(v)).count();
        match isolation.kind() {
            IsolationKind::Bwrap => {
                assert_eq!(leaked, 0, "{env}");
                let temp = s.confinement.temp.display();
                assert!(env.contains(&format!("\nHOME={temp}\n")), "{env}");
                assert!(env.contains(&format!("\nTMPDIR={temp}\n")), "{env}");
                assert!(env.contains("\nPATH="), "{env}");
            }
            IsolationKind::None => assert_eq!(leaked, secrets.len(), "{env}"),
        }
    }
}

#[test]
fn nothing_outlives_a_command_that_exits() {
    let Some(isolations) = both() else { return };
    for (n, isolation) in isolations.into_iter().enumerate() {
        let s = scratch();
        let m = marker(10 + n as u32);
        // A plain background sleep, and one in a session of its own (out of the process group).
        let command = format!(
            "sleep {m} >/dev/null 2>&1 & setsid sleep {m} >/dev/null 2>&1 & sleep 1; echo done"
        );
        let run = std::thread::spawn(move || isolation.run(&s.confinement, &command, TIMEOUT));
        wait_seen(&m, 2);
        let outcome = run.join().unwrap().unwrap();
        assert_eq!(outcome.exit, Some(0), "{outcome:?}");
        assert!(!outcome.timed_out);
        let left = survivors(&m);
        kill_all(&left);
        if n == 0 {
            assert_eq!(left, Vec::<i32>::new(), "outlived bwrap");
        } else {
            // Unconfined, the group is killed but a new session escapes it.
            assert_eq!(left.len(), 1, "{left:?}");
        }
    }
}

#[test]
fn nothing_outlives_the_wrapper_killed_as_the_bash_tool_kills_it() {
    let Some(isolations) = both() else { return };
    for (n, isolation) in isolations.into_iter().enumerate() {
        let s = scratch();
        let m = marker(20 + n as u32);
        let wrapper = isolation
            .shell_wrapper(&s.confinement, &bin_dir(&s, "bin"))
            .unwrap();
        let mut child = spawn(
            Command::new(&wrapper)
                .arg("-c")
                .arg(format!(
                    "sleep {m} & setsid sleep {m} >/dev/null 2>&1 & sleep {m}"
                ))
                .current_dir(&s.confinement.workspace)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .process_group(0),
        );
        // The three sleeps, and bash, whose command ends with the marker; the `setsid` one
        // in a session of its own (the kill below must be what it outlives, or not).
        wait_seen(&m, 4);
        wait_session_leader(&m);
        let pgid = Pid::from_raw(child.id() as i32);
        killpg(pgid, Signal::SIGKILL).unwrap();
        child.wait().unwrap();
        let left = survivors(&m);
        kill_all(&left);
        if n == 0 {
            assert_eq!(left, Vec::<i32>::new(), "outlived bwrap");
        } else {
            assert_eq!(left.len(), 1, "{left:?}");
        }
    }
}

#[test]
fn a_timeout_kills_the_command_and_returns_quickly() {
    let Some(isolations) = both() else { return };
    for (n, isolation) in isolations.iter().enumerate() {
        let s = scratch();
        let m = marker(30 + n as u32);
        let started = Instant::now();
        let outcome = isolation
            .run(
                &s.confinement,
                &format!("echo before; sleep {m} & sleep {m}"),
                Duration::from_millis(300),
            )
            .unwrap();
        let took = started.elapsed();
        assert!(outcome.timed_out, "{outcome:?}");
        assert_eq!(outcome.exit, None);
        assert_eq!(outcome.output, "before\n");
        assert!(took >= Duration::from_millis(300), "{took:?}");
        assert!(took < Duration::from_secs(3), "{took:?}");
        let left = survivors(&m);
        kill_all(&left);
        assert_eq!(left, Vec::<i32>::new(), "{}", isolation.kind());
    }
}

#[test]
fn the_wrapper_works_as_the_agents_shell_in_awkward_paths() {
    let Some(isolations) = both() else { return };
    for isolation in &isolations {
        let s = scratch_named("it's a \"work space\"", "temp $HOME 'q'");
        let wrapper = isolation
            .shell_wrapper(&s.confinement, &bin_dir(&s, "shell's bin"))
            .unwrap();
        let out = spawn(
            Command::new(&wrapper)
                .args(["-c", "pwd; echo hi > out.txt"])
                .current_dir(&s.confinement.workspace)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
        )
        .wait_with_output()
        .unwrap();
        let kind = isolation.kind();
        assert!(out.status.success(), "{kind}: {out:?}");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            format!("{}\n", s.confinement.workspace.display()),
            "{kind}"
        );
        let written = std::fs::read_to_string(s.confinement.workspace.join("out.txt")).unwrap();
        assert_eq!(written, "hi\n", "{kind}");
    }
}

#[test]
fn run_keeps_the_tail_of_interleaved_output() {
    let Some(isolations) = both() else { return };
    for isolation in &isolations {
        let s = scratch();
        let outcome = isolation
            .run(
                &s.confinement,
                "echo out; echo err >&2; echo out2; seq 1 3000 >&2; exit 3",
                TIMEOUT,
            )
            .unwrap();
        assert_eq!(outcome.exit, Some(3));
        assert!(!outcome.timed_out);
        assert_eq!(outcome.output.chars().count(), 4_000);
        assert!(outcome.output.ends_with("2999\n3000\n"));
        let short = isolation
            .run(&s.confinement, "echo out; echo err >&2; echo out2", TIMEOUT)
            .unwrap();
        assert_eq!(short.output, "out\nerr\nout2\n");
    }
}

/// A Python that can run inside the sandbox (`python3` on PATH), or `None` after saying why.
fn python3() -> Option<()> {
    let found = Command::new("python3")
        .args(["-c", "import socket"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        println!("skipped: no python3 to connect to Unix sockets with");
    }
    found.then_some(())
}

/// A Unix socket listening at `path` (a name starting with `@` is abstract), accepting on a
/// thread of its own so that a connection succeeds.
fn listen(path: &str) -> Option<std::os::unix::net::UnixListener> {
    use std::os::linux::net::SocketAddrExt;
    use std::os::unix::net::{SocketAddr, UnixListener};
    let addr = match path.strip_prefix('@') {
        Some(name) => SocketAddr::from_abstract_name(name.as_bytes()).unwrap(),
        None => SocketAddr::from_pathname(path).unwrap(),
    };
    UnixListener::bind_addr(&addr).ok()
}

#[test]
fn host_unix_sockets_are_unreachable() {
    let Some(bwrap) = bwrap() else { return };
    let Some(()) = python3() else { return };
    let s = scratch();
    // Outside the system temp dir (a private /tmp hides that), in it, in /run when this
    // process may create one there (a docker socket lives there), and abstract.
    let outside = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let pid = std::process::id();
    let _run_socket = RemovedOnDrop(format!("/run/pi-evals-isolation-{pid}.sock"));
    let mut paths = vec![
        outside.path().join("host.sock").display().to_string(),
        s.dir.path().join("tmp.sock").display().to_string(),
        format!("/run/pi-evals-isolation-{pid}.sock"),
        format!("@pi-evals-isolation-{pid}"),
    ];
    let mut listeners = Vec::new();
    paths.retain(|path| match listen(path) {
        Some(listener) => {
            listeners.push(listener);
            true
        }
        None => false,
    });
    assert!(paths.len() >= 3, "{paths:?}");
    for path in &paths {
        let address = match path.strip_prefix('@') {
            Some(name) => format!("'\\0{name}'"),
            None => format!("'{path}'"),
        };
        let command = format!(
            "python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect({address}); print('connected')\""
        );
        let confined = bwrap.run(&s.confinement, &command, TIMEOUT).unwrap();
        assert!(
            !confined.output.contains("connected") && confined.exit != Some(0),
            "bwrap let {path} be reached: {confined:?}"
        );
        let free = Isolation::none()
            .run(&s.confinement, &command, TIMEOUT)
            .unwrap();
        assert!(free.output.contains("connected"), "{path}: {free:?}");
    }
}

/// A file removed when the test ends, failed or not.
struct RemovedOnDrop(String);

impl Drop for RemovedOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn the_users_files_the_suite_and_the_cassettes_cannot_be_read() {
    let Some(bwrap) = bwrap() else { return };
    let s = scratch();
    // Outside the system temp dir, which a private /tmp would hide anyway.
    let host = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let planted = [
        ("home/.pi/agent/auth.json", "planted-auth-secret"),
        ("suites/humaneval.toml", "planted-hidden-tests"),
        ("cassettes/s/t/m/1.jsonl", "planted-cassette"),
        (
            "keep/other-trial/workspace/answer.txt",
            "planted-other-trial",
        ),
    ];
    for (path, text) in planted {
        let path = host.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
    }
    let mut command = String::new();
    for (path, _) in planted {
        command.push_str(&format!("cat {} ; ", q(&host.path().join(path))));
    }
    command.push_str(&format!("ls -R {} ; true", q(host.path())));
    let confined = bwrap.run(&s.confinement, &command, TIMEOUT).unwrap();
    let free = Isolation::none()
        .run(&s.confinement, &command, TIMEOUT)
        .unwrap();
    for (path, text) in planted {
        assert!(!confined.output.contains(text), "{path}: {confined:?}");
        assert!(free.output.contains(text), "{path}: {free:?}");
    }
    assert!(
        confined
            .output
            .contains(&format!("ls: cannot access {}", q(host.path()))),
        "{confined:?}"
    );

    // Of the eval's own HOME, only the toolchains are there.
    if let Some(home) = std::env::var_os("HOME").filter(|h| Path::new(h).is_dir()) {
        let listing = bwrap
            .run(
                &s.confinement,
                &format!("ls -A {}", q(Path::new(&home))),
                TIMEOUT,
            )
            .unwrap();
        for name in listing.output.lines() {
            assert!(
                pi_evals::isolate::TOOLCHAIN_HOMES
                    .iter()
                    .any(|(_, dir)| *dir == name),
                "{name} of HOME is visible: {listing:?}"
            );
        }
    }

    // What only root may read in /etc (the password hashes, private keys) is hidden, while
    // what every user may read is there.
    for secret in ["/etc/shadow", "/etc/gshadow", "/etc/sudoers"] {
        let Ok(meta) = std::fs::metadata(secret) else {
            continue;
        };
        if std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o004 != 0 {
            continue;
        }
        let read = bwrap
            .run(&s.confinement, &format!("wc -c < {secret}"), TIMEOUT)
            .unwrap();
        assert!(
            read.exit != Some(0) || read.output.trim() == "0",
            "{secret} is readable: {read:?}"
        );
    }
    let passwd = bwrap
        .run(&s.confinement, "grep -c : /etc/passwd", TIMEOUT)
        .unwrap();
    assert_eq!(passwd.exit, Some(0), "{passwd:?}");
}
