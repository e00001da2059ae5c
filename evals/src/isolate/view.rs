//! What of the host a confined command sees: bwrap's options that build its filesystem from
//! nothing (bwrap's root is an empty tmpfs), every place read-only.
//!
//! - The system: `/usr`, `/bin`, `/sbin`, `/lib*` and `/etc` (symbolic links such as a merged
//!   `/bin -> usr/bin` stay links). In `/etc`, what not every user may read (`/etc/shadow`,
//!   `/etc/gshadow`, `/etc/sudoers`, `/etc/ssl/private`, host keys: files without the
//!   others' read bit, folders without their search bit) is masked: a file by an empty one, a
//!   folder by an empty tmpfs. bwrap run as root keeps no capability, but root still owns those
//!   files, so only the mask hides them.
//! - The toolchains: each [`TOOLCHAIN_HOMES`](super::TOOLCHAIN_HOMES) folder (one holding
//!   cargo's credentials is bound entry by entry without them), and each `PATH` folder not
//!   already there; for a folder named `bin` outside `HOME`, the prefix it belongs to (`/opt/node` for `/opt/node/bin`), where its links
//!   point. Never `/`, `HOME` or a folder above it, or anything in the system's temp folder
//!   (other trials live there).
//!
//! The toolchains are bound with `--ro-bind-try`: a command run by an agent in its own sandbox
//! (`agent.rs`) is confined by a bwrap started there, which sees the agent's view, and that
//! lacks the folders the agent's user cannot reach.
//!
//! Nothing else: not `/run` or `/var` (no host Unix socket: a docker socket lives there; abstract
//! sockets belong to the host's network namespace, which the command leaves), not the user's
//! `HOME` (its agent folder, keys and dotfiles), not the suite, the cassettes or other trials.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// The system folders bound when they exist.
const SYSTEM: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc",
];

/// Files in cargo's home that hold a registry token.
const CARGO_SECRETS: &[&str] = &["credentials", "credentials.toml"];

/// How many entries of `/etc` are looked at, at most (a real one has a few thousand).
const ETC_ENTRIES: usize = 100_000;

/// bwrap's options for the host view, given the eval's `PATH`, `HOME`, the toolchain homes
/// (absolute folders) and the system's temp folder.
pub(super) fn host_view(
    path: Option<&OsStr>,
    home: Option<&Path>,
    toolchains: &[PathBuf],
    temp: &Path,
) -> Vec<OsString> {
    let mut options = Vec::new();
    let mut bound: Vec<PathBuf> = Vec::new();
    for dir in SYSTEM {
        let dir = Path::new(dir);
        match std::fs::symlink_metadata(dir) {
            Ok(meta) if meta.file_type().is_symlink() => {
                if let Ok(target) = std::fs::read_link(dir) {
                    push(
                        &mut options,
                        &["--symlink".as_ref(), target.as_os_str(), dir.as_os_str()],
                    );
                }
            }
            Ok(meta) if meta.is_dir() => {
                push(
                    &mut options,
                    &["--ro-bind".as_ref(), dir.as_os_str(), dir.as_os_str()],
                );
                bound.push(dir.to_path_buf());
            }
            _ => {}
        }
    }
    if bound.iter().any(|d| d == Path::new("/etc")) {
        options.extend(masks(Path::new("/etc")));
    }
    let forbidden = |dir: &Path| {
        dir == Path::new("/")
            || home.is_some_and(|home| home.starts_with(dir))
            || dir.starts_with(temp)
    };
    for dir in toolchains {
        if !dir.is_absolute() || !dir.is_dir() || forbidden(dir) || under(&bound, dir) {
            continue;
        }
        options.extend(toolchain(dir));
        bound.push(dir.clone());
    }
    for dir in path.map(std::env::split_paths).into_iter().flatten() {
        let prefix = dir
            .parent()
            .filter(|_| dir.file_name() == Some(OsStr::new("bin")))
            .filter(|p| !home.is_some_and(|home| dir.starts_with(home)) && !forbidden(p));
        let dir = prefix.map_or(dir.clone(), Path::to_path_buf);
        if !dir.is_absolute() || !dir.is_dir() || forbidden(&dir) || under(&bound, &dir) {
            continue;
        }
        push(
            &mut options,
            &["--ro-bind-try".as_ref(), dir.as_os_str(), dir.as_os_str()],
        );
        bound.push(dir);
    }
    options
}

/// The options binding the toolchain folder `dir`: the folder whole, or, when it holds a
/// registry token, each of its entries but the token's file. Not a mask over the file: an
/// agent, root in its own user namespace (`agent.rs`), may unmount a mask.
fn toolchain(dir: &Path) -> Vec<OsString> {
    let mut options = Vec::new();
    let holds_secret = CARGO_SECRETS.iter().any(|s| dir.join(s).exists());
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) if holds_secret => entries,
        _ => {
            push(
                &mut options,
                &["--ro-bind-try".as_ref(), dir.as_os_str(), dir.as_os_str()],
            );
            return options;
        }
    };
    for entry in entries.flatten() {
        if CARGO_SECRETS.iter().any(|s| entry.file_name() == *s) {
            continue;
        }
        let path = entry.path();
        push(
            &mut options,
            &["--ro-bind-try".as_ref(), path.as_os_str(), path.as_os_str()],
        );
    }
    options
}

fn push(options: &mut Vec<OsString>, items: &[&OsStr]) {
    options.extend(items.iter().map(|s| s.to_os_string()));
}

/// Whether `dir` is one of `bound` or inside one.
fn under(bound: &[PathBuf], dir: &Path) -> bool {
    bound.iter().any(|b| dir.starts_with(b))
}

/// The options masking what in `root` not every user may read: files without the others' read
/// bit (an empty file over them), folders without the others' search bit (an empty tmpfs);
/// anything else that is neither file, folder nor link (a socket) too. Links are left (what
/// they point to is masked where it is).
pub(super) fn masks(root: &Path) -> Vec<OsString> {
    let mut options = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    let mut seen = 0usize;
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > ETC_ENTRIES {
                return options;
            }
            let path = entry.path();
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let kind = meta.file_type();
            let others = meta.permissions().mode() & 0o007;
            if kind.is_symlink() {
                continue;
            }
            if kind.is_dir() {
                if others & 0o001 == 0 {
                    push(&mut options, &["--tmpfs".as_ref(), path.as_os_str()]);
                    push(&mut options, &["--remount-ro".as_ref(), path.as_os_str()]);
                } else {
                    pending.push(path);
                }
            } else if !kind.is_file() || others & 0o004 == 0 {
                push(
                    &mut options,
                    &["--ro-bind".as_ref(), "/dev/null".as_ref(), path.as_os_str()],
                );
            }
        }
    }
    options
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path, mode: u32) {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn what_others_may_not_read_is_masked() {
        let etc = tempfile::tempdir().unwrap();
        let root = etc.path();
        for (file, bits) in [("passwd", 0o644), ("shadow", 0o640), ("sudoers", 0o440)] {
            std::fs::write(root.join(file), "x").unwrap();
            mode(&root.join(file), bits);
        }
        std::fs::create_dir_all(root.join("ssl/private")).unwrap();
        std::fs::create_dir_all(root.join("ssl/certs")).unwrap();
        std::fs::write(root.join("ssl/certs/ca.pem"), "x").unwrap();
        std::fs::write(root.join("ssl/certs/key.pem"), "x").unwrap();
        mode(&root.join("ssl/certs/key.pem"), 0o600);
        mode(&root.join("ssl/private"), 0o710);
        std::os::unix::fs::symlink("shadow", root.join("link")).unwrap();
        let _socket = std::os::unix::net::UnixListener::bind(root.join("sock")).unwrap();

        let masks = masks(root);
        let words: Vec<String> = masks
            .iter()
            .map(|w| w.to_string_lossy().replace(&*root.to_string_lossy(), "ETC"))
            .collect();
        let mut triples: Vec<String> = Vec::new();
        let mut i = 0;
        while i < words.len() {
            let n = if words[i] == "--ro-bind" { 3 } else { 2 };
            triples.push(words[i..i + n].join(" "));
            i += n;
        }
        triples.sort();
        assert_eq!(
            triples,
            [
                "--remount-ro ETC/ssl/private",
                "--ro-bind /dev/null ETC/shadow",
                "--ro-bind /dev/null ETC/sock",
                "--ro-bind /dev/null ETC/ssl/certs/key.pem",
                "--ro-bind /dev/null ETC/sudoers",
                "--tmpfs ETC/ssl/private",
            ]
        );
    }

    #[test]
    fn toolchains_are_bound_but_never_home_the_root_or_the_temp_folder() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let cargo = home.join(".cargo");
        let local_bin = home.join(".local/bin");
        let opt = dir.path().join("opt/node");
        let temp = dir.path().join("tmp");
        for d in [
            &cargo.join("bin"),
            &local_bin,
            &opt.join("bin"),
            &temp.join("x/bin"),
        ] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(cargo.join("credentials.toml"), "token").unwrap();
        let path = std::env::join_paths([
            cargo.join("bin"),
            local_bin.clone(),
            opt.join("bin"),
            temp.join("x/bin"),
            home.clone(),
            dir.path().to_path_buf(),
            PathBuf::from("/"),
            PathBuf::from("relative/bin"),
            PathBuf::from("/usr/bin"),
        ])
        .unwrap();
        let view = host_view(
            Some(&path),
            Some(&home),
            std::slice::from_ref(&cargo),
            &temp,
        );
        let binds: Vec<(&OsStr, &OsStr)> = view
            .windows(3)
            .filter(|w| w[0] == "--ro-bind-try")
            .map(|w| (w[1].as_os_str(), w[2].as_os_str()))
            .filter(|(from, _)| Path::new(from).starts_with(dir.path()))
            .collect();
        let cargo_bin = cargo.join("bin");
        assert_eq!(
            binds,
            [
                (cargo_bin.as_os_str(), cargo_bin.as_os_str()),
                (local_bin.as_os_str(), local_bin.as_os_str()),
                (opt.as_os_str(), opt.as_os_str()),
            ],
            "cargo's folder entry by entry, without its credentials"
        );
        assert!(!view
            .iter()
            .any(|w| Path::new(w) == cargo.join("credentials.toml")));
    }
}
