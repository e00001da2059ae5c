//! Shared by the isolation tests: bwrap or a reason to skip, scratch confinements, and a scan of
//! `/proc` for processes still running.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use pi_evals::isolate::{shell_quote, Confinement, Isolation, IsolationKind};

/// bwrap, or `None` (after printing why) when it cannot run here, unless `PI_REQUIRE_BWRAP=1`.
pub fn bwrap() -> Option<Isolation> {
    match Isolation::detect(Some(IsolationKind::Bwrap)) {
        Ok(isolation) => Some(isolation),
        Err(e) if std::env::var("PI_REQUIRE_BWRAP").as_deref() == Ok("1") => {
            panic!("PI_REQUIRE_BWRAP=1 but bwrap cannot run: {e}")
        }
        Err(e) => {
            println!("skipped: bwrap cannot run here: {e}");
            None
        }
    }
}

/// Both isolations, bwrap first; `None` when bwrap cannot run (see [`bwrap`]).
pub fn both() -> Option<[Isolation; 2]> {
    Some([bwrap()?, Isolation::none()])
}

/// A fresh workspace and temp dir (under the system temp dir, so under the private `/tmp`).
pub struct Scratch {
    pub dir: tempfile::TempDir,
    pub confinement: Confinement,
}

pub fn scratch() -> Scratch {
    scratch_named("ws", "tmp")
}

pub fn scratch_named(workspace: &str, temp: &str) -> Scratch {
    let dir = tempfile::tempdir().unwrap();
    let confinement = Confinement {
        workspace: dir.path().join(workspace),
        temp: dir.path().join(temp),
    };
    std::fs::create_dir(&confinement.workspace).unwrap();
    std::fs::create_dir(&confinement.temp).unwrap();
    Scratch { dir, confinement }
}

/// `path` quoted for the shell.
pub fn q(path: &Path) -> String {
    String::from_utf8(shell_quote(path.as_os_str())).unwrap()
}

/// A `sleep` argument unique to this test process and `n`: `300.PPPPPPPNN` (300 seconds).
pub fn marker(n: u32) -> String {
    format!("300.{:07}{n:02}", std::process::id())
}

/// The live processes with an argument that is, or ends with, `marker` (zombies have no
/// command line, so they do not count).
pub fn with_marker(marker: &str) -> Vec<i32> {
    let needle: Vec<u8> = format!("{marker}\0").into_bytes();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            if cmdline
                .windows(needle.len())
                .any(|w| w == needle.as_slice())
            {
                found.push(pid);
            }
        }
    }
    found
}

/// Waits until at least `count` processes carry `marker`; panics after 10 s.
pub fn wait_seen(marker: &str, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while with_marker(marker).len() < count {
        assert!(
            Instant::now() < deadline,
            "{count} processes with {marker} never ran"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until a process carrying `marker` leads a session of its own (a command that detached
/// with `setsid` has left its group: before, a kill of the group would still reach it).
pub fn wait_session_leader(marker: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let leads = |pid: i32| {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|stat| {
                // The fields after the command's `(name)`: state, ppid, pgrp, session.
                let after = stat.rsplit_once(')')?.1;
                after.split_whitespace().nth(3)?.parse::<i32>().ok()
            })
            == Some(pid)
    };
    while !with_marker(marker).into_iter().any(leads) {
        assert!(
            Instant::now() < deadline,
            "no process with {marker} leads a session"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The processes still carrying `marker` after a grace period of up to 2 s for them to go.
pub fn survivors(marker: &str) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let left = with_marker(marker);
        if left.is_empty() || Instant::now() >= deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills what a test left running on purpose.
pub fn kill_all(pids: &[i32]) {
    for &pid in pids {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::SIGKILL);
    }
}

/// Spawns `cmd`, retrying while the program was just written (ETXTBSY: another test thread
/// forked while the file was open for writing).
pub fn spawn(cmd: &mut Command) -> Child {
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 50 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            other => return other.unwrap(),
        }
    }
}

/// Where the wrapper scripts go.
pub fn bin_dir(scratch: &Scratch, name: &str) -> PathBuf {
    let dir = scratch.dir.path().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
