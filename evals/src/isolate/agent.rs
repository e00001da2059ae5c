//! The sandbox of a trial's agent process (an `--agent` command, or this build's `pi` run as a
//! process): the same filesystem built from nothing as the commands' (`view.rs`), plus the
//! agent program's install folder (and its MCP servers', never a folder a word names whole),
//! with the workspace, the trial's temp dir and its agent dir writable. Unlike the commands, the agent keeps the host's network namespace when it calls a
//! model (a provider on the internet, or a model on 127.0.0.1): TCP and UDP ports on the
//! host's loopback and the host's abstract Unix sockets stay reachable, nothing else of the
//! network namespace is the agent's to change. It runs in a session of its own, without the
//! eval's terminal.
//!
//! The agent's bash tool runs its commands through the confined shell, a bwrap of its own
//! inside this one: so the agent's sandbox is a user namespace in which the agent is root with
//! the three capabilities the inner bwrap needs (`CAP_SYS_ADMIN`, `CAP_SETPCAP`,
//! `CAP_NET_ADMIN`), which reach nothing outside its own namespaces. (An inner bwrap that made
//! a user namespace of its own could not mount its `/proc`: the outer `/proc`'s covered
//! folders are locked there.) Mounts the agent undoes reveal only what its host user may read
//! anyway (no file its user could read is hidden by a mask: cargo's token is left out, not
//! masked), so the agent never runs as the host's root: when `pi eval` runs as root, its agent
//! runs as the unprivileged [`AGENT_UID`], and the trial's folders are handed to it. Its
//! commands see neither its environment (their own PID namespace) nor the network.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::{base_options, find_on_path, resolve, Confinement, Isolation};

/// The user (and group) a root `pi eval` runs its agents as: the kernel's overflow id, which
/// owns nothing on the host.
pub const AGENT_UID: u32 = 65534;

/// What one trial's agent process may touch, beyond the system and the toolchains.
#[derive(Clone, Debug)]
pub struct AgentSandbox {
    /// The workspace (its working directory) and the temp dir (its `HOME` and `TMPDIR`),
    /// writable.
    pub confinement: Confinement,
    /// The agent directory (`PI_CODING_AGENT_DIR`), writable.
    pub agent_dir: PathBuf,
    /// The trial's own folder, which holds the others: handed to the agent's user (not its
    /// contents) so that it can reach them.
    pub trial_root: PathBuf,
    /// Files readable at their own path (the confined shell).
    pub readable: Vec<PathBuf>,
    /// Programs the agent starts (a task's MCP servers: their commands, a bare one found on
    /// `PATH`, and absolute arguments): the install folders of those that name files are
    /// readable as the agent program's are; a word naming a folder binds nothing.
    pub programs: Vec<PathBuf>,
    /// A file of the trial's folder seen at another path (a cassette at its place in the
    /// cassette folder): the file, the path the agent sees it at, and whether it may write it.
    pub placed: Vec<(PathBuf, PathBuf, bool)>,
    /// The agent calls a model: it shares the host's network namespace. A replay does not.
    pub network: bool,
}

impl Isolation {
    /// The command that runs the agent `program` with `args` in its sandbox, in a process group
    /// whose id is the command's pid (a session of its own, under bwrap); its working
    /// directory is the workspace. Under `none`, the program itself, unconfined. The caller adds
    /// the environment (the agent keeps the eval's, with `HOME` and `TMPDIR` set to the temp
    /// dir) and its pipes.
    pub fn agent_command(
        &self,
        sandbox: &AgentSandbox,
        program: &Path,
        args: &[OsString],
    ) -> io::Result<Command> {
        let Some(bwrap) = &self.bwrap else {
            let mut command = Command::new(program);
            command
                .args(args)
                .current_dir(&sandbox.confinement.workspace)
                .process_group(0);
            return Ok(command);
        };
        let confinement = resolve(&sandbox.confinement)?;
        let agent_dir = std::path::absolute(&sandbox.agent_dir)?;
        // The real file, which its install folder holds (a link to it may be elsewhere).
        let program = located(program);
        let program = program.canonicalize().unwrap_or(program);
        let as_agent_user = nix::unistd::geteuid().is_root();
        let mut options = base_options();
        if as_agent_user {
            options = reachable_only(options);
        }
        let mut push = |items: &[&OsStr]| options.extend(items.iter().map(|s| s.to_os_string()));
        // A word naming a file placed in the view (the trial's cassette at its place) is the
        // trial's own, not something of the host the program needs.
        let words: Vec<OsString> = args
            .iter()
            .filter(|word| {
                !sandbox
                    .placed
                    .iter()
                    .any(|(_, seen_at, _)| seen_at == Path::new(word))
            })
            .cloned()
            .chain(mcp_program_paths(&sandbox.programs))
            .collect();
        for folder in install_folders(&program, &words) {
            if as_agent_user {
                must_reach(&folder)?;
            }
            push(&[
                OsStr::new("--ro-bind"),
                folder.as_os_str(),
                folder.as_os_str(),
            ]);
        }
        if let Some(resolver) = outside_resolver() {
            push(&[
                OsStr::new("--ro-bind-try"),
                resolver.as_os_str(),
                resolver.as_os_str(),
            ]);
        }
        for dir in [&confinement.workspace, &confinement.temp, &agent_dir] {
            push(&[OsStr::new("--bind"), dir.as_os_str(), dir.as_os_str()]);
        }
        for file in &sandbox.readable {
            push(&[OsStr::new("--ro-bind"), file.as_os_str(), file.as_os_str()]);
        }
        for (file, seen_at, writable) in &sandbox.placed {
            let how = if *writable { "--bind" } else { "--ro-bind" };
            push(&[OsStr::new(how), file.as_os_str(), seen_at.as_os_str()]);
        }
        push(&["--remount-ro", "/"].map(OsStr::new));
        push(
            &[
                "--unshare-user",
                "--uid",
                "0",
                "--gid",
                "0",
                "--cap-add",
                "CAP_SYS_ADMIN",
                "--cap-add",
                "CAP_SETPCAP",
                "--cap-add",
                "CAP_NET_ADMIN",
                "--unshare-pid",
                "--unshare-ipc",
                "--unshare-uts",
                "--die-with-parent",
            ]
            .map(OsStr::new),
        );
        if !sandbox.network {
            push(&[OsStr::new("--unshare-net")]);
        }
        push(&[
            OsStr::new("--chdir"),
            confinement.workspace.as_os_str(),
            OsStr::new("--setenv"),
            OsStr::new("HOME"),
            confinement.temp.as_os_str(),
            OsStr::new("--setenv"),
            OsStr::new("TMPDIR"),
            confinement.temp.as_os_str(),
            OsStr::new("--"),
            program.as_os_str(),
        ]);
        options.extend(args.iter().cloned());
        // A session of its own, not only a process group: in the eval's session, the agent
        // could open the eval's terminal (`/dev/tty`) and type into the user's shell with
        // TIOCSTI, and no mask over `/dev/tty` holds against its unmounting it. `setsid` runs
        // bwrap in place (the child is no group leader), so the group's id is still its pid.
        let mut command = Command::new(
            find_on_path("setsid").unwrap_or_else(|| PathBuf::from("/usr/bin/setsid")),
        );
        // bwrap's working directory is not the agent's (`--chdir`), and must be one the agent's
        // user can enter.
        command.arg(bwrap).args(options).current_dir("/");
        if as_agent_user {
            hand_over(
                sandbox,
                &[&confinement.workspace, &confinement.temp, &agent_dir],
            )?;
            command.uid(AGENT_UID).gid(AGENT_UID);
        }
        Ok(command)
    }
}

/// The view's options without the toolchain folders (`--ro-bind-try`) that [`AGENT_UID`]
/// cannot reach (those under root's `HOME`, say): bwrap, started as that user, would stop at
/// them.
fn reachable_only(options: Vec<OsString>) -> Vec<OsString> {
    let mut kept = Vec::with_capacity(options.len());
    let mut rest = options.as_slice();
    while let Some(first) = rest.first() {
        let arity = match first.to_str() {
            Some("--ro-bind" | "--ro-bind-try" | "--bind" | "--symlink") => 3,
            Some("--tmpfs" | "--remount-ro" | "--dev" | "--proc") => 2,
            _ => 1,
        };
        let (option, after) = rest.split_at(arity.min(rest.len()));
        let unreachable = first == "--ro-bind-try"
            && option
                .get(1)
                .is_some_and(|source| first_closed_folder(Path::new(source)).is_some());
        if !unreachable {
            kept.extend_from_slice(option);
        }
        rest = after;
    }
    kept
}

/// An error unless [`AGENT_UID`] can reach `path` (which bwrap, started as that user, binds).
fn must_reach(path: &Path) -> io::Result<()> {
    match first_closed_folder(path) {
        None => Ok(()),
        Some(closed) => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            unreachable_message(path, &closed),
        )),
    }
}

/// Why the agent's user cannot reach `path`: `closed`, a folder above it, lets no other user
/// through.
pub(super) fn unreachable_message(path: &Path, closed: &Path) -> String {
    format!(
        "{} is not reachable by the unprivileged user (uid {AGENT_UID}) that pi eval run as \
         root runs its agents as: {} lets no other user through (chmod o+x it and the folders \
         above it), or run unconfined with --isolate none",
        path.display(),
        closed.display()
    )
}

/// The folders holding what the agent `program` run with `args` needs of the host (see
/// [`install_folder`]): one per word that is an absolute path to a file that exists. A word
/// naming a folder brings nothing: the host's root or `HOME` is never bound whole.
fn install_folders(program: &Path, args: &[OsString]) -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let temp = std::env::temp_dir();
    let private = pi_folders();
    std::iter::once(program.as_os_str())
        .chain(args.iter().map(OsString::as_os_str))
        .map(Path::new)
        .filter(|p| p.is_absolute())
        .filter_map(|path| path.canonicalize().ok())
        .filter(|real| real.is_file())
        .filter_map(|real| install_folder(&real, home.as_deref(), &temp, &private))
        .collect()
}

/// The user's Pi folders, which hold its keys and settings (`auth.json`, `models.json`), as
/// real paths: the agent folder Pi reads (`PI_CODING_AGENT_DIR`, else `~/.pi/agent`) and
/// `~/.pi`. Nothing in them, nor a folder holding them, is bound into an agent's sandbox.
pub(crate) fn pi_folders() -> Vec<PathBuf> {
    let home_pi = std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".pi"));
    crate::workspace::user_agent_dir()
        .into_iter()
        .chain(home_pi)
        .map(|dir| dir.canonicalize().unwrap_or(dir))
        .collect()
}

/// The programs a task's MCP servers run (their commands and absolute arguments, as
/// [`AgentSandbox::programs`] holds them) as absolute paths: a bare command found on `PATH`,
/// as the agent would find it; a relative path (the agent's, from its workspace) is left out.
fn mcp_program_paths(programs: &[PathBuf]) -> Vec<OsString> {
    programs
        .iter()
        .filter_map(|program| {
            let bare = program.components().count() == 1 && !program.is_absolute();
            match (bare, program.to_str()) {
                (true, Some(name)) => find_on_path(name),
                _ => program.is_absolute().then(|| program.clone()),
            }
        })
        .map(PathBuf::into_os_string)
        .collect()
}

/// Where the agent's user, when `pi eval` runs as root, would be stopped on its way to what
/// the agent `program` needs: the first folder that lets no other user through and the
/// folder it guards. `None` when it reaches all of it, or when the eval is not root.
pub(super) fn unreachable_install(program: &Path, args: &[OsString]) -> Option<(PathBuf, PathBuf)> {
    if !nix::unistd::geteuid().is_root() {
        return None;
    }
    let program = located(program);
    let program = program.canonicalize().unwrap_or(program);
    install_folders(&program, args)
        .into_iter()
        .find_map(|folder| first_closed_folder(&folder).map(|closed| (folder, closed)))
}

/// Where the agent's user, when `pi eval` runs as root, would be stopped on its way into
/// `folder` (one the eval makes its trials' folders in, made if missing): the first folder on
/// the way that exists and lets no other user through. `None` when it gets in, or when the
/// eval is not root.
pub(super) fn unreachable_folder(folder: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    if !nix::unistd::geteuid().is_root() {
        return None;
    }
    let folder = std::path::absolute(folder).unwrap_or_else(|_| folder.to_path_buf());
    let on_the_way: Vec<&Path> = folder.ancestors().collect();
    on_the_way
        .into_iter()
        .rev()
        .find_map(|dir| match std::fs::metadata(dir) {
            Ok(meta) if meta.permissions().mode() & 0o001 == 0 => Some(dir.to_path_buf()),
            _ => None,
        })
}

/// The outermost folder above `path` that lets no other user through (its others' search bit
/// unset, or unreadable).
fn first_closed_folder(path: &Path) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let above: Vec<&Path> = path.ancestors().skip(1).collect();
    above
        .into_iter()
        .rev()
        .find(|dir| {
            !std::fs::metadata(dir).is_ok_and(|meta| meta.permissions().mode() & 0o001 != 0)
        })
        .map(Path::to_path_buf)
}

/// Runs the confined shell inside an agent's sandbox over scratch folders (`:` as the command):
/// where an agent cannot start its commands' sandbox (no user namespaces for the agent's user,
/// a security module denying its capabilities), bwrap cannot confine a trial. How it failed and
/// what it said, if it did.
pub(super) fn probe(isolation: &Isolation) -> Result<(), (String, String)> {
    let failed = |e: io::Error| ("could not prepare the probe".to_owned(), e.to_string());
    let scratch = tempfile::Builder::new()
        .prefix("pi-eval-probe-")
        .tempdir()
        .map_err(failed)?;
    let root = scratch.path().to_path_buf();
    let [workspace, temp, agent_dir] = ["workspace", "home", "agent"].map(|d| root.join(d));
    for dir in [&workspace, &temp, &agent_dir] {
        std::fs::create_dir(dir).map_err(failed)?;
    }
    let confinement = Confinement { workspace, temp };
    let shell = isolation
        .shell_wrapper(&confinement, &root)
        .map_err(failed)?;
    let sandbox = AgentSandbox {
        confinement,
        agent_dir,
        trial_root: root,
        readable: vec![shell.clone()],
        programs: Vec::new(),
        placed: Vec::new(),
        network: false,
    };
    let args = ["-c", ":"].map(OsString::from);
    let output = isolation
        .agent_command(&sandbox, &shell, &args)
        .and_then(|mut command| command.stdin(std::process::Stdio::null()).output())
        .map_err(|e| ("could not start".to_owned(), e.to_string()))?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
    Err((format!("an agent's sandbox: {}", output.status), stderr))
}

/// `program` as a path: found on `PATH` when it is a bare name.
fn located(program: &Path) -> PathBuf {
    let bare = program.components().count() == 1 && !program.is_absolute();
    match program.to_str() {
        Some(name) if bare => find_on_path(name).unwrap_or_else(|| program.to_path_buf()),
        _ => std::path::absolute(program).unwrap_or_else(|_| program.to_path_buf()),
    }
}

/// What of the host the agent needs to run `file` (a program, or a script the program runs):
/// the folder holding the outermost `node_modules` above it (a Node package's install, with
/// its dependencies), else the nearest folder above it with a `package.json`, else for a file
/// in a `bin` folder that folder's parent; else the file alone. Never `/`, `HOME` or a folder
/// above it, the system's temp folder or a folder above it (other trials live there), nor a
/// folder holding one of the user's Pi folders (`private`): then the file alone. `None` for a
/// file in a Pi folder, which is never bound.
fn install_folder(
    file: &Path,
    home: Option<&Path>,
    temp: &Path,
    private: &[PathBuf],
) -> Option<PathBuf> {
    if private.iter().any(|dir| file.starts_with(dir)) {
        return None;
    }
    let allowed = |dir: &Path| {
        dir != Path::new("/")
            && !home.is_some_and(|home| home.starts_with(dir))
            && !temp.starts_with(dir)
            && !private.iter().any(|pi| pi.starts_with(dir))
    };
    let ancestors = || file.ancestors().skip(1);
    let node_install = ancestors()
        .filter(|dir| dir.file_name() == Some(OsStr::new("node_modules")))
        .last()
        .and_then(Path::parent);
    let package = || ancestors().find(|dir| dir.join("package.json").is_file());
    let bin_prefix = || {
        file.parent()
            .filter(|dir| dir.file_name() == Some(OsStr::new("bin")))
            .and_then(Path::parent)
    };
    let folder = node_install
        .or_else(package)
        .or_else(bin_prefix)
        .filter(|dir| allowed(dir))
        .map_or_else(|| file.to_path_buf(), Path::to_path_buf);
    Some(folder)
}

/// Where `/etc/resolv.conf` leads when it is a link out of `/etc` (systemd-resolved's
/// `/run/systemd/resolve/stub-resolv.conf`): an agent that calls a provider by name needs it,
/// and `/run` is not in its view.
fn outside_resolver() -> Option<PathBuf> {
    let real = Path::new("/etc/resolv.conf").canonicalize().ok()?;
    (!real.starts_with("/etc") && !real.starts_with("/usr")).then_some(real)
}

/// Hands the trial's folders to [`AGENT_UID`]: the writable ones whole, the trial's folder
/// itself, the readable and placed files.
fn hand_over(sandbox: &AgentSandbox, writable: &[&Path]) -> io::Result<()> {
    must_reach(&sandbox.trial_root)?;
    for dir in writable {
        must_reach(dir)?;
        chown_tree(dir)?;
    }
    let files = sandbox
        .readable
        .iter()
        .chain(sandbox.placed.iter().map(|(file, _, _)| file));
    for path in std::iter::once(&sandbox.trial_root).chain(files) {
        std::os::unix::fs::lchown(path, Some(AGENT_UID), Some(AGENT_UID))?;
    }
    Ok(())
}

/// Gives `dir` and everything in it to [`AGENT_UID`] (links themselves, not what they point
/// to).
fn chown_tree(dir: &Path) -> io::Result<()> {
    chown_tree_to(dir, AGENT_UID, AGENT_UID)
}

/// Gives `dir` and everything in it to `uid`:`gid` (links themselves, not what they point to).
fn chown_tree_to(dir: &Path, uid: u32, gid: u32) -> io::Result<()> {
    std::os::unix::fs::lchown(dir, Some(uid), Some(gid))?;
    if std::fs::symlink_metadata(dir)?.is_dir() {
        for entry in std::fs::read_dir(dir)? {
            chown_tree_to(&entry?.path(), uid, gid)?;
        }
    }
    Ok(())
}

/// Gives back to the eval's own user what [`hand_over`] gave the agent's, once the agent has
/// ended: the trial's checks run as that user, and must write the workspace and temp folder
/// (a test runner's cache, a temp file) as the agent did.
pub(super) fn hand_back(sandbox: &AgentSandbox) -> io::Result<()> {
    if !nix::unistd::geteuid().is_root() {
        return Ok(());
    }
    let (uid, gid) = (
        nix::unistd::geteuid().as_raw(),
        nix::unistd::getegid().as_raw(),
    );
    let confinement = &sandbox.confinement;
    for dir in [
        &confinement.workspace,
        &confinement.temp,
        &sandbox.agent_dir,
    ] {
        chown_tree_to(dir, uid, gid)?;
    }
    let files = sandbox
        .readable
        .iter()
        .chain(sandbox.placed.iter().map(|(file, _, _)| file));
    for path in std::iter::once(&sandbox.trial_root).chain(files) {
        std::os::unix::fs::lchown(path, Some(uid), Some(gid))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn the_install_folder_is_the_node_install_the_package_or_the_bin_prefix_never_home() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let temp = Path::new("/nonexistent-temp");
        let make = |sub: &str| {
            let path = root.join(sub);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, "").unwrap();
            path
        };
        let folder = |file: &Path, home: Option<&Path>, temp: &Path| {
            install_folder(file, home, temp, &[]).unwrap()
        };
        let cli = make("opt/pi/node_modules/@x/agent/dist/cli.js");
        make("opt/pi/node_modules/@x/agent/package.json");
        assert_eq!(folder(&cli, None, temp), root.join("opt/pi"));
        let script = make("src/agent/dist/main.js");
        make("src/agent/package.json");
        assert_eq!(folder(&script, None, temp), root.join("src/agent"));
        let binary = make("tools/bin/agent");
        assert_eq!(folder(&binary, None, temp), root.join("tools"));
        let lone = make("scripts/agent.sh");
        assert_eq!(folder(&lone, None, temp), lone);
        // HOME itself, or the temp folder, is never the install folder.
        let in_home = make("home/bin/agent");
        assert_eq!(folder(&in_home, Some(&root.join("home")), temp), in_home);
        assert_eq!(folder(&binary, None, &root.join("tools")), binary);
        assert_eq!(folder(&binary, None, root), root.join("tools"));
        // Nor a folder holding the user's Pi folder, and nothing in that folder is bound.
        let pi = root.join("home/.pi");
        let in_pi = make("home/.pi/agent/bin/agent");
        let key = make("home/.pi/agent/auth.json");
        let private = [pi.clone()];
        assert_eq!(install_folder(&in_pi, None, temp, &private), None);
        assert_eq!(install_folder(&key, None, temp, &private), None);
        let beside = make("home/.pi-tools/bin/agent");
        assert_eq!(
            install_folder(&beside, None, temp, &private),
            Some(root.join("home/.pi-tools"))
        );
        let above = make("home/bin/x");
        assert_eq!(install_folder(&above, None, temp, &private), Some(above));
    }

    #[test]
    fn a_word_naming_a_folder_binds_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let program = dir.path().join("agent");
        std::fs::write(&program, "").unwrap();
        let words = ["/", "/etc", dir.path().to_str().unwrap()].map(OsString::from);
        assert_eq!(install_folders(&program, &words), [program]);
    }
}
