//! Confinement of the commands an eval trial runs: the shell commands the model wrote (through
//! the agent's bash tool, whose shell is the script [`Isolation::shell_wrapper`] writes) and the
//! task's checks (through [`Isolation::run`]).
//!
//! Under [`IsolationKind::Bwrap`] a command runs in bubblewrap over a filesystem built from
//! nothing: the system (`/usr`, `/bin`, `/lib*`, `/etc` without what only root may read) and the
//! toolchains read-only (see `view.rs`), a private empty `/tmp`, `/dev` and `/proc` of its own,
//! and the workspace and the trial's temp dir as the only writable places. Not there: the
//! user's `HOME` (its agent folder and keys), `/run` and `/var` (host Unix sockets), the suite,
//! the cassettes, other trials. No network (a private loopback only; abstract Unix sockets
//! belong to the host's network namespace), its own PID, IPC and UTS namespaces and session, no
//! capabilities (bwrap run as root keeps them otherwise, and could remount `/` writable), and an
//! environment of [`ENV_ALLOWLIST`] and the [`TOOLCHAIN_HOMES`] only, with `HOME` and `TMPDIR`
//! set to the temp dir. bwrap itself starts with an empty environment: its first process, the
//! sandbox's PID 1, is a copy of it, and its `/proc/1/environ` is readable inside. So API keys
//! and tokens never reach the command. Nothing outlives it: when the command exits, or bwrap is
//! killed, the PID namespace goes with everything in it.
//!
//! The agent process itself runs in a sandbox of its own ([`Isolation::agent_command`],
//! `agent.rs`): the same view, plus its install folder and the host's network when it calls a
//! model; the confined shell is then a bwrap inside it.
//!
//! Under [`IsolationKind::None`] (the escape hatch, for machines without bubblewrap) commands run
//! as plain `bash` with the eval's environment, each in its own process group that is killed
//! whole; only a process that leaves the group (`setsid`) escapes.

mod agent;
mod process;
mod view;

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;
use std::sync::OnceLock;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub(crate) use agent::pi_folders;
pub use agent::{AgentSandbox, AGENT_UID};
pub use process::OUTPUT_TAIL_CHARS;

/// The variables a confined command gets from the eval's environment (when they are set).
pub const ENV_ALLOWLIST: &[&str] = &[
    "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "USER", "LOGNAME",
];

/// Where the toolchains live, with their default place under `HOME`. A confined command's `HOME`
/// is the temp dir, so rustup's `cargo` or pyenv's `python3` would not find their toolchains:
/// each variable passes through when set, and when unset is set to its default under the eval's
/// `HOME` if that directory exists. They name directories, never secrets.
pub const TOOLCHAIN_HOMES: &[(&str, &str)] = &[
    ("CARGO_HOME", ".cargo"),
    ("RUSTUP_HOME", ".rustup"),
    ("PYENV_ROOT", ".pyenv"),
];

/// The file name [`Isolation::shell_wrapper`] writes.
pub const SHELL_WRAPPER_NAME: &str = "confined-bash";

/// How a trial's commands are confined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IsolationKind {
    /// bubblewrap: read-only filesystem, no network, own namespaces, cleared environment.
    Bwrap,
    /// Plain `bash` with the eval's environment, in its own process group.
    None,
}

impl fmt::Display for IsolationKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IsolationKind::Bwrap => "bwrap",
            IsolationKind::None => "none",
        })
    }
}

impl FromStr for IsolationKind {
    type Err = IsolateError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "bwrap" => Ok(IsolationKind::Bwrap),
            "none" => Ok(IsolationKind::None),
            other => Err(IsolateError::UnknownKind(other.to_string())),
        }
    }
}

/// Why the requested isolation cannot be had.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IsolateError {
    #[error(
        "bwrap (bubblewrap) is not installed: no `bwrap` on PATH; install the `bubblewrap` \
         package (apt-get install bubblewrap, dnf install bubblewrap, pacman -S bubblewrap), \
         or run unconfined with --isolate none"
    )]
    NotInstalled,
    #[error(
        "{} is installed but cannot confine commands here ({status}): {stderr}; \
         or run unconfined with --isolate none",
        path.display()
    )]
    Unusable {
        path: PathBuf,
        /// How the probe ended (its exit status, or why it could not start).
        status: String,
        /// What bwrap said.
        stderr: String,
    },
    /// `pi eval` runs as root and hands its agents to an unprivileged user, who cannot reach
    /// the agent program.
    #[error("{message}")]
    Unreachable {
        /// The folder the agent needs.
        path: PathBuf,
        message: String,
    },
    #[error("unknown isolation `{0}`: expected `bwrap` or `none`")]
    UnknownKind(String),
}

/// The isolation a run's commands get; see the module documentation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Isolation {
    kind: IsolationKind,
    /// The bwrap binary (under `Bwrap`).
    bwrap: Option<PathBuf>,
    /// The bash the commands run in.
    bash: PathBuf,
}

/// Where one trial's commands may write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Confinement {
    /// Writable; the commands' working directory. Must exist.
    pub workspace: PathBuf,
    /// Writable; the commands' `TMPDIR` and `HOME`. Must exist.
    pub temp: PathBuf,
}

/// How a command run by [`Isolation::run`] ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandOutcome {
    /// The exit code (`None`: killed by a signal, or timed out).
    pub exit: Option<i32>,
    pub timed_out: bool,
    /// stdout and stderr interleaved as written; the last [`OUTPUT_TAIL_CHARS`] characters,
    /// decoded as lossy UTF-8.
    pub output: String,
}

impl Isolation {
    /// `None` = the strongest available: bwrap if it is installed and works here (probed once per
    /// process by running `bwrap <the confinement's options> true`), else none. Asking for
    /// `Bwrap` when it cannot run is an error saying why.
    pub fn detect(requested: Option<IsolationKind>) -> Result<Isolation, IsolateError> {
        match requested {
            Some(IsolationKind::None) => Ok(Isolation::none()),
            Some(IsolationKind::Bwrap) => probe_bwrap().clone().map(Isolation::bwrap),
            None => Ok(probe_bwrap()
                .clone()
                .map_or_else(|_| Isolation::none(), Isolation::bwrap)),
        }
    }

    /// Whether a trial's agent process can be confined here: under `Bwrap`, the confined shell
    /// is run once per process inside an agent's sandbox (where the agent's user may have no
    /// user namespace, or a security module denies its capabilities, it cannot). Always fine
    /// under `None`.
    pub fn check_agent_sandbox(&self) -> Result<(), IsolateError> {
        static PROBE: OnceLock<Result<(), IsolateError>> = OnceLock::new();
        let Some(bwrap) = &self.bwrap else {
            return Ok(());
        };
        PROBE
            .get_or_init(|| {
                agent::probe(self).map_err(|(status, stderr)| IsolateError::Unusable {
                    path: bwrap.clone(),
                    status,
                    stderr,
                })
            })
            .clone()
    }

    /// Whether the agent `program` (run with `args`) can be reached by the user a root `pi
    /// eval` runs its agents as, checked before any trial starts: a folder above it that lets
    /// no other user through (a checkout inside `mktemp -d`'s folder) would fail every trial.
    /// Always fine unconfined or when not root.
    pub fn check_agent_program(
        &self,
        program: &Path,
        args: &[OsString],
    ) -> Result<(), IsolateError> {
        if self.bwrap.is_none() {
            return Ok(());
        }
        match agent::unreachable_install(program, args) {
            None => Ok(()),
            Some((path, closed)) => Err(IsolateError::Unreachable {
                message: agent::unreachable_message(&path, &closed),
                path,
            }),
        }
    }

    /// Whether a trial's agent can start the MCP server program `command` (an entry's
    /// `command`): a bare name must be on the `PATH` the agent gets, an absolute path an
    /// executable file; under bwrap, the user a root `pi eval` runs its agents as must reach
    /// it. Checked before any trial starts, so that a server no agent could start is one
    /// message, not a notice in every trial. A relative path is the agent's, from its
    /// workspace: not checked. Why not, when it cannot.
    pub fn check_mcp_program(&self, command: &str) -> Result<(), String> {
        let path = Path::new(command);
        let bare = path.components().count() == 1 && !path.is_absolute();
        let program = if bare {
            find_on_path(command)
                .ok_or_else(|| format!("`{command}` is not on the PATH the agent gets"))?
        } else if path.is_absolute() {
            path.to_path_buf()
        } else {
            return Ok(());
        };
        let meta =
            std::fs::metadata(&program).map_err(|e| format!("`{}`: {e}", program.display()))?;
        if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
            return Err(format!("`{}` is not an executable file", program.display()));
        }
        if self.bwrap.is_none() {
            return Ok(());
        }
        match agent::unreachable_install(&program, &[]) {
            None => Ok(()),
            Some((path, closed)) => Err(agent::unreachable_message(&path, &closed)),
        }
    }

    /// Whether the user a root `pi eval` runs its agents as can get into `folder`, where the
    /// trials' folders are made (`--keep`): checked before any trial starts. Always fine
    /// unconfined or when not root.
    pub fn check_agent_folder(&self, folder: &Path) -> Result<(), IsolateError> {
        if self.bwrap.is_none() {
            return Ok(());
        }
        match agent::unreachable_folder(folder) {
            None => Ok(()),
            Some(closed) => Err(IsolateError::Unreachable {
                message: agent::unreachable_message(folder, &closed),
                path: folder.to_path_buf(),
            }),
        }
    }

    /// Once a trial's agent has ended, gives its folders back to this process's user (a root
    /// eval ran the agent as [`AGENT_UID`]), so that the checks can write them.
    pub fn take_back(&self, sandbox: &AgentSandbox) -> io::Result<()> {
        if self.bwrap.is_none() {
            return Ok(());
        }
        agent::hand_back(sandbox)
    }

    /// No confinement: plain `bash`.
    pub fn none() -> Isolation {
        Isolation {
            kind: IsolationKind::None,
            bwrap: None,
            bash: find_bash(),
        }
    }

    fn bwrap(path: PathBuf) -> Isolation {
        Isolation {
            kind: IsolationKind::Bwrap,
            bwrap: Some(path),
            bash: find_bash(),
        }
    }

    pub fn kind(&self) -> IsolationKind {
        self.kind
    }

    /// Writes an executable script ([`SHELL_WRAPPER_NAME`]) into `dir` that runs `bash "$@"`
    /// under the confinement; given to the agent as its shell. Returns its path. The variables
    /// passed through are read from the script's environment when it runs. The script `exec`s
    /// bwrap, so killing its process group (as the bash tool does on abort or timeout) kills
    /// bwrap, and with it everything the command started. (A process forking in another thread
    /// while the file is written can hold it open for a moment: executing it right away may
    /// fail with ETXTBSY, to be retried.)
    pub fn shell_wrapper(&self, confinement: &Confinement, dir: &Path) -> io::Result<PathBuf> {
        let path = dir.join(SHELL_WRAPPER_NAME);
        let script = match &self.bwrap {
            Some(bwrap) => bwrap_script(bwrap, &self.bash, &resolve(confinement)?),
            None => none_script(&self.bash),
        };
        std::fs::write(&path, script)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
        Ok(path)
    }

    /// Runs `bash -c command` in the workspace under the confinement, with a timeout; kills
    /// everything it started when it ends or times out.
    pub fn run(
        &self,
        confinement: &Confinement,
        command: &str,
        timeout: Duration,
    ) -> io::Result<CommandOutcome> {
        let confinement = resolve(confinement)?;
        let cmd = match &self.bwrap {
            Some(bwrap) => {
                let mut cmd = Command::new(bwrap);
                // bwrap's own environment is the sandbox's PID 1's.
                cmd.env_clear().args(bwrap_options(&confinement));
                for (name, value) in confined_env(std::env::vars_os(), &confinement.temp) {
                    cmd.arg("--setenv").arg(name).arg(value);
                }
                cmd.arg("--").arg(&self.bash).arg("-c").arg(command);
                cmd
            }
            None => {
                let mut cmd = Command::new(&self.bash);
                cmd.arg("-c").arg(command);
                cmd
            }
        };
        let mut cmd = cmd;
        cmd.current_dir(&confinement.workspace);
        process::run_in_group(cmd, timeout)
    }
}

/// The environment a confined command gets, given the eval's (`parent`): the allowlisted
/// variables that are set, the toolchain homes, and `HOME` and `TMPDIR` = `temp`. Sorted by name.
pub fn confined_env(
    parent: impl IntoIterator<Item = (OsString, OsString)>,
    temp: &Path,
) -> Vec<(OsString, OsString)> {
    let parent: Vec<(OsString, OsString)> = parent.into_iter().collect();
    let mut env: Vec<(OsString, OsString)> = ENV_ALLOWLIST
        .iter()
        .filter_map(|name| var(&parent, name).map(|v| (OsString::from(name), v)))
        .collect();
    env.extend(toolchain_homes(&parent));
    env.push(("HOME".into(), temp.as_os_str().to_owned()));
    env.push(("TMPDIR".into(), temp.as_os_str().to_owned()));
    env.sort();
    env
}

/// The value of the variable `name` in the environment `parent` (the last one set wins).
fn var(parent: &[(OsString, OsString)], name: &str) -> Option<OsString> {
    parent
        .iter()
        .rev()
        .find(|(k, _)| k.as_os_str() == OsStr::new(name))
        .map(|(_, v)| v.clone())
}

/// The [`TOOLCHAIN_HOMES`] of the environment `parent`: each variable that is set, else its
/// default under `HOME` when that folder exists.
fn toolchain_homes(parent: &[(OsString, OsString)]) -> Vec<(OsString, OsString)> {
    let get = |name: &str| var(parent, name);
    TOOLCHAIN_HOMES
        .iter()
        .filter_map(|(name, default)| {
            let value = get(name).or_else(|| {
                let dir = PathBuf::from(get("HOME")?).join(default);
                dir.is_dir().then(|| dir.into_os_string())
            })?;
            Some((OsString::from(name), value))
        })
        .collect()
}

/// The host as this process's commands see it (`view.rs`), from this process's `PATH`, `HOME`
/// and toolchain homes; worked out once.
fn host_view() -> &'static [OsString] {
    static VIEW: OnceLock<Vec<OsString>> = OnceLock::new();
    VIEW.get_or_init(|| {
        let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
        let toolchains: Vec<PathBuf> = toolchain_homes(&env)
            .into_iter()
            .map(|(_, dir)| PathBuf::from(dir))
            .collect();
        let home = std::env::var_os("HOME").map(PathBuf::from);
        view::host_view(
            std::env::var_os("PATH").as_deref(),
            home.as_deref(),
            &toolchains,
            &std::env::temp_dir(),
        )
    })
}

/// The options every sandbox starts from: the host view, a `/dev` and `/proc` of its own and a
/// private empty `/tmp`.
fn base_options() -> Vec<OsString> {
    let mut options: Vec<OsString> = host_view().to_vec();
    options.extend(["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"].map(OsString::from));
    options
}

/// bwrap's options for `confinement` (absolute paths), up to the environment: `--clearenv` is
/// last, so `--setenv` options may follow.
fn bwrap_options(confinement: &Confinement) -> Vec<OsString> {
    let workspace = confinement.workspace.as_os_str();
    let temp = confinement.temp.as_os_str();
    let mut options = base_options();
    let mut push = |items: &[&OsStr]| options.extend(items.iter().map(|s| s.to_os_string()));
    // After the tmpfs, so that a workspace under /tmp stays visible.
    push(&[OsStr::new("--bind"), workspace, workspace]);
    push(&[OsStr::new("--bind"), temp, temp]);
    // The empty root the mounts hang from is bwrap's own tmpfs: read-only too, once they are
    // made, so that nothing is written where it would vanish unseen.
    push(&["--remount-ro", "/"].map(OsStr::new));
    push(
        &[
            "--unshare-net",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--new-session",
            "--die-with-parent",
            "--cap-drop",
            "ALL",
        ]
        .map(OsStr::new),
    );
    push(&[OsStr::new("--chdir"), workspace, OsStr::new("--clearenv")]);
    options
}

/// The confinement with absolute paths (bwrap's binds and the script need them).
fn resolve(confinement: &Confinement) -> io::Result<Confinement> {
    Ok(Confinement {
        workspace: std::path::absolute(&confinement.workspace)?,
        temp: std::path::absolute(&confinement.temp)?,
    })
}

/// `value` quoted for a POSIX shell: in single quotes, each `'` written as `'\''`.
pub fn shell_quote(value: &OsStr) -> Vec<u8> {
    let mut quoted = vec![b'\''];
    for &byte in value.as_bytes() {
        if byte == b'\'' {
            quoted.extend_from_slice(b"'\\''");
        } else {
            quoted.push(byte);
        }
    }
    quoted.push(b'\'');
    quoted
}

fn none_script(bash: &Path) -> Vec<u8> {
    let mut script = b"#!/bin/sh\n# Runs bash unconfined (isolation `none`).\nexec ".to_vec();
    script.extend(shell_quote(bash.as_os_str()));
    script.extend_from_slice(b" \"$@\"\n");
    script
}

/// The script for bwrap: the same options and environment as [`Isolation::run`], with the
/// variables read when the script runs. It `exec`s bwrap with an empty environment (`env -i`:
/// the agent's holds its keys, and bwrap's is the sandbox's PID 1's), so killing the script's
/// process group kills bwrap, and with it (`--die-with-parent`, then the PID namespace) the
/// command.
fn bwrap_script(bwrap: &Path, bash: &Path, confinement: &Confinement) -> Vec<u8> {
    let temp = shell_quote(confinement.temp.as_os_str());
    let mut s = b"#!/bin/sh\n# Runs bash confined by bubblewrap (isolation `bwrap`): read-only \
filesystem but for the\n# workspace and the temp dir, no network, own namespaces, and only \
allowlisted variables.\nset -- --setenv HOME "
        .to_vec();
    s.extend(&temp);
    s.extend_from_slice(b" --setenv TMPDIR ");
    s.extend(&temp);
    s.extend_from_slice(b" -- ");
    s.extend(shell_quote(bash.as_os_str()));
    s.extend_from_slice(b" \"$@\"\n");
    for name in ENV_ALLOWLIST {
        s.extend_from_slice(
            format!(
                "if [ -n \"${{{name}+x}}\" ]; then set -- --setenv {name} \"${name}\" \"$@\"; fi\n"
            )
            .as_bytes(),
        );
    }
    for (name, default) in TOOLCHAIN_HOMES {
        s.extend_from_slice(
            format!(
                "if [ -n \"${{{name}+x}}\" ]; then set -- --setenv {name} \"${name}\" \"$@\"\n\
                 elif [ -n \"${{HOME+x}}\" ] && [ -d \"$HOME/{default}\" ]; then \
                 set -- --setenv {name} \"$HOME/{default}\" \"$@\"; fi\n"
            )
            .as_bytes(),
        );
    }
    s.extend_from_slice(b"exec ");
    s.extend(shell_quote(find_env().as_os_str()));
    s.extend_from_slice(b" -i ");
    s.extend(shell_quote(bwrap.as_os_str()));
    for option in bwrap_options(confinement) {
        s.push(b' ');
        s.extend(shell_quote(&option));
    }
    s.extend_from_slice(b" \"$@\"\n");
    s
}

/// `name` on `PATH` (an executable file), if any.
fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
}

fn find_bash() -> PathBuf {
    find_on_path("bash").unwrap_or_else(|| PathBuf::from("/bin/bash"))
}

/// `env`, which starts bwrap from the wrapper with an empty environment.
fn find_env() -> PathBuf {
    find_on_path("env").unwrap_or_else(|| PathBuf::from("/usr/bin/env"))
}

/// Finds bwrap and checks, once per process, that it can confine a command here.
fn probe_bwrap() -> &'static Result<PathBuf, IsolateError> {
    static PROBE: OnceLock<Result<PathBuf, IsolateError>> = OnceLock::new();
    PROBE.get_or_init(|| {
        let path = find_on_path("bwrap").ok_or(IsolateError::NotInstalled)?;
        // The binds need an existing directory; the system's temp dir, or else `/`.
        let here = Some(std::env::temp_dir())
            .filter(|dir| dir.is_dir())
            .unwrap_or_else(|| PathBuf::from("/"));
        let confinement = Confinement {
            workspace: here.clone(),
            temp: here,
        };
        let unusable = |status: String, stderr: String| IsolateError::Unusable {
            path: path.clone(),
            status,
            stderr,
        };
        let output = Command::new(&path)
            .env_clear()
            .args(bwrap_options(&confinement))
            .arg("--")
            .arg(find_bash())
            .args(["-c", ":"])
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| unusable("could not start".into(), e.to_string()))?;
        if !output.status.success() {
            let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
            return Err(unusable(output.status.to_string(), stderr));
        }
        Ok(path.clone())
    })
}

#[cfg(test)]
mod tests;
