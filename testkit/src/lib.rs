//! What the test suites of several crates share, so each does not carry its own copy: the
//! conformance kit's scripted mock LLM run as a real server on 127.0.0.1 (served from Rust by
//! [`mock`], no Python needed), counting the processes a test started, and the `pi-mock` demo
//! command's setup ([`demo`]). The test helpers panic with what went wrong; [`mock`] and [`demo`]
//! report errors instead, since `pi-mock` runs them on user input.

pub mod demo;
pub mod mock;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The conformance kit kept in the repository (`conformance/`): scenarios, reference traces, the
/// Python mock and the scripts that run the original.
pub fn kit_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance")
}

/// The kit's mock LLM playing a script, one step per request, served in-process by
/// [`mock::Server`] (the same bytes as `conformance/mock/mock_llm.py`); stopped when dropped,
/// which also ends any reply still hanging.
#[derive(Debug)]
pub struct MockLlm {
    _server: mock::Server,
    /// The port it listens on, on 127.0.0.1.
    pub port: u16,
    /// Every request it received (JSONL), and a record when each reply finished.
    pub log: PathBuf,
    dir: tempfile::TempDir,
}

#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
impl MockLlm {
    /// Starts the mock playing `script` (the kit's step format); it listens once this returns.
    /// Panics naming the step and field when the script is wrong.
    pub fn start(script: &Value) -> MockLlm {
        let script = match mock::Script::parse(script) {
            Ok(script) => script,
            Err(e) => panic!("bad mock script: {e}"),
        };
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("log.jsonl");
        let server = mock::Server::start(script, &log).expect("the mock LLM starts");
        MockLlm {
            port: server.port(),
            _server: server,
            log,
            dir,
        }
    }

    /// `http://127.0.0.1:<port>` followed by `path` (e.g. `/v1`).
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Lets a reply waiting for the file `name` (a step's `hang_until_file`) finish.
    pub fn release(&self, name: &str) {
        std::fs::write(self.dir.path().join(name), "").unwrap();
    }

    /// The names of the tools each request received declared (an OpenAI-style body's
    /// `tools[].function.name`), in order.
    pub fn declared_tools(&self) -> Vec<Vec<String>> {
        self.requests()
            .iter()
            .map(|request| {
                let tools = request["tools"].as_array().into_iter().flatten();
                tools
                    .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .collect()
    }

    /// The request bodies received, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.received()
            .into_iter()
            .filter_map(|v| v.get("body").cloned())
            .collect()
    }

    /// The requests received, in order, as the log keeps them (`headers` and `body`, among
    /// others): what a test of the headers a call sent reads.
    pub fn received(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v.get("event").is_none())
            .collect()
    }
}

/// Processes whose command line contains `marker` (zombies have none and are not counted).
#[allow(clippy::unwrap_used)]
pub fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(marker) {
            found.push(format!(
                "{}: {cmdline}",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    found
}

/// Waits up to `within` for at least `count` processes with `marker` to run; panics otherwise.
pub fn wait_until_running(marker: &str, count: usize, within: Duration) {
    let deadline = Instant::now() + within;
    while processes_with(marker).len() < count {
        assert!(Instant::now() < deadline, "the processes did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits up to `within` for every process with `marker` to be gone; panics naming the ones left.
#[allow(clippy::panic)]
pub fn wait_until_gone(marker: &str, within: Duration) {
    let deadline = Instant::now() + within;
    loop {
        let left = processes_with(marker);
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "left behind: {left:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A process name no other test uses.
#[allow(clippy::unwrap_used)]
pub fn unique_marker(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("pi-test-{name}-{}-{nanos}", std::process::id())
}

/// Every file under `root` (following no link), sorted: what a test greps for a planted key or
/// compares before and after a run. An unreadable folder is left out.
pub fn files_under(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => pending.push(entry.path()),
                Ok(_) => files.push(entry.path()),
                Err(_) => {}
            }
        }
    }
    files.sort();
    files
}

/// The string members of `value` named one of `fields`, at any depth, appended to `out` in
/// document order: the streamed text a recording's lines hold (deltas, contents), which a test
/// puts together to look for a key the model sent in pieces.
pub fn field_strings(value: &Value, fields: &[&str], out: &mut String) {
    match value {
        Value::Object(members) => {
            for (name, member) in members {
                match member {
                    Value::String(s) if fields.contains(&name.as_str()) => out.push_str(s),
                    other => field_strings(other, fields, out),
                }
            }
        }
        Value::Array(items) => items
            .iter()
            .for_each(|item| field_strings(item, fields, out)),
        _ => {}
    }
}

/// Says on the terminal, in one line, that a test is skipped and why. Written to stderr directly,
/// not with `eprintln!`, which the test harness captures and shows only when a test fails.
pub fn skip(reason: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "skipped: {reason}");
}

/// Something a test needs from outside the repository, named by `var`; when it is absent the test
/// is skipped with one line, unless `require` is set to `1` (as CI sets it), which makes the
/// absence a failure.
#[allow(clippy::panic)]
fn outside(var: &str, require: &str, what: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(value) if !value.is_empty() => Some(value),
        _ if std::env::var(require).is_ok_and(|v| v == "1") => {
            panic!("{require}=1 but {var} ({what}) is not set")
        }
        _ => {
            skip(&format!("{var} ({what}) is not set"));
            None
        }
    }
}

/// The original Pi's `pi` command (`PI_ORIGINAL`, set by CI after installing Pi 1.5.2 with
/// `conformance/install-pi-1.5.2.sh`). Without it the checks against the original are skipped,
/// unless `PI_REQUIRE_ORIGINAL=1` (CI) makes that a failure.
pub fn original_pi() -> Option<PathBuf> {
    outside("PI_ORIGINAL", "PI_REQUIRE_ORIGINAL", "the original pi").map(PathBuf::from)
}

/// The folder of session files the original Pi wrote in real use, kept beside the repository
/// (`../shared/wild-sessions`, or `PI_WILD_SESSIONS`). Skipped when absent, unless
/// `PI_REQUIRE_WILD_SESSIONS=1` (CI) makes that a failure.
#[allow(clippy::panic)]
pub fn wild_sessions_dir() -> Option<PathBuf> {
    let dir = std::env::var_os("PI_WILD_SESSIONS")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/wild-sessions")
        });
    if dir.is_dir() {
        return Some(dir);
    }
    if std::env::var("PI_REQUIRE_WILD_SESSIONS").is_ok_and(|v| v == "1") {
        panic!(
            "PI_REQUIRE_WILD_SESSIONS=1 but {} is not a folder",
            dir.display()
        );
    }
    skip(&format!("{} (real session files) is absent", dir.display()));
    None
}

/// The context window the local LLM server serves (`scripts/llm/ci-llm.sh`'s `LLM_CTX`, the
/// model's trained context). Pi 1.5.2 clamps a request's output limit to what the window leaves
/// after the context and a 4,096-token margin, so a smaller window would ask for one token.
pub const LIVE_LLM_CONTEXT_WINDOW: u64 = 8192;

/// The real local LLM's base URL (`LLM_BASE_URL`, set by CI, which starts one). Without it the
/// live tests are skipped, unless `PI_REQUIRE_LIVE_LLM=1` (CI) makes that a failure.
pub fn live_llm_base_url() -> Option<String> {
    outside("LLM_BASE_URL", "PI_REQUIRE_LIVE_LLM", "a live LLM server")
}

/// Pi 1.5.2's install, whose loader the extension host runs (`PI_EXTENSION_HOST_PI_DIR`, with
/// its Node in `node/bin`). Without it the tests of TypeScript extensions are skipped, unless
/// `PI_REQUIRE_EXTENSIONS=1` (CI) makes that a failure.
pub fn extension_host_install() -> Option<PathBuf> {
    outside(
        "PI_EXTENSION_HOST_PI_DIR",
        "PI_REQUIRE_EXTENSIONS",
        "Pi 1.5.2's install",
    )
    .map(PathBuf::from)
}

/// The workspace binary `bin` of `package`, in the target folder of the test running (a test
/// binary lives in its `deps`), for a crate's tests that run another crate's binary (Cargo
/// gives a test only its own crate's binaries). Cargo builds it first, whether or not a binary
/// is there, so a test never runs one older than the sources it was built from; its check of a
/// fresh binary (about 0.3 s) is made once per test process and binary.
#[allow(clippy::unwrap_used, clippy::panic)]
pub fn workspace_binary(package: &str, bin: &str) -> PathBuf {
    static BUILT: Mutex<BTreeSet<(String, String)>> = Mutex::new(BTreeSet::new());
    let test = std::env::current_exe().unwrap();
    let profile_dir = test.parent().and_then(Path::parent).unwrap();
    let mut built = BUILT.lock().unwrap_or_else(PoisonError::into_inner);
    if built.contains(&(package.to_owned(), bin.to_owned())) {
        return profile_dir.join(bin);
    }
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    match built_binary(&workspace, profile_dir, package, bin) {
        Ok(binary) => {
            built.insert((package.to_owned(), bin.to_owned()));
            binary
        }
        Err(why) => panic!("{why}"),
    }
}

/// The binary `bin` of `package` of the Cargo workspace at `workspace`, built by Cargo into
/// the profile folder `profile_dir` of a target folder (`target/debug`; another folder's name
/// is its profile's): Cargo rebuilds it when a source is newer, and leaves a fresh one as it
/// is. The error says which build failed.
pub fn built_binary(
    workspace: &Path,
    profile_dir: &Path,
    package: &str,
    bin: &str,
) -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut command = std::process::Command::new(&cargo);
    command
        .current_dir(workspace)
        .args(["build", "--quiet", "--locked", "-p", package, "--bin", bin]);
    // A test may have narrowed its own PATH (no Node, say): Cargo still finds `rustc` beside
    // itself, as a toolchain installs them.
    if let Some(toolchain) = Path::new(&cargo)
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
    {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let dirs = std::iter::once(toolchain.to_path_buf()).chain(std::env::split_paths(&path));
        if let Ok(joined) = std::env::join_paths(dirs) {
            command.env("PATH", joined);
        }
    }
    // What Cargo sets for the test running (its package's manifest folder, name, binaries) is
    // no setting of this build, and a build script that watches one (ring's watches
    // `CARGO_MANIFEST_DIR`) would make the build and the test's own build undo each other.
    for (name, _) in std::env::vars_os() {
        let Some(name) = name.to_str() else { continue };
        let set_for_the_test = name.starts_with("CARGO_PKG_")
            || name.starts_with("CARGO_BIN_EXE_")
            || [
                "CARGO_MANIFEST_DIR",
                "CARGO_MANIFEST_PATH",
                "CARGO_CRATE_NAME",
                "CARGO_BIN_NAME",
                "CARGO_PRIMARY_PACKAGE",
                "CARGO_TARGET_TMPDIR",
                "CARGO_RUSTC_CURRENT_DIR",
                "OUT_DIR",
            ]
            .contains(&name);
        if set_for_the_test {
            command.env_remove(name);
        }
    }
    command.args(placement_args(profile_dir));
    let status = command
        .status()
        .map_err(|e| format!("building {bin} of {package}: {e}"))?;
    if !status.success() {
        return Err(format!("building {bin} of {package}: cargo {status}"));
    }
    Ok(profile_dir.join(bin))
}

/// The Cargo arguments that put a build's binaries in `profile_dir`: its target folder (the
/// one holding Cargo's `CACHEDIR.TAG`), the target triple when the profile folder is under
/// one (a cross-compiled build's `target/<triple>/<profile>`), and the profile.
fn placement_args(profile_dir: &Path) -> Vec<std::ffi::OsString> {
    let mut args = Vec::new();
    let Some(parent) = profile_dir.parent() else {
        return args;
    };
    let tagged = |dir: &Path| dir.join("CACHEDIR.TAG").is_file();
    match (parent.parent(), parent.file_name()) {
        (Some(target_dir), Some(triple)) if !tagged(parent) && tagged(target_dir) => {
            args.extend(["--target-dir".into(), target_dir.as_os_str().to_owned()]);
            args.extend(["--target".into(), triple.to_owned()]);
        }
        _ => args.extend(["--target-dir".into(), parent.as_os_str().to_owned()]),
    }
    match profile_dir.file_name().and_then(|name| name.to_str()) {
        Some("debug") | None => {}
        Some(profile) => args.extend(["--profile".into(), profile.into()]),
    }
    args
}

#[cfg(test)]
mod placement_tests {
    #![allow(clippy::unwrap_used)]

    use super::placement_args;

    #[test]
    fn a_cross_compiled_profile_folder_names_its_target_folder_and_triple() {
        let root = tempfile::tempdir().unwrap();
        let target = root.path().join("target");
        std::fs::create_dir_all(target.join("x86_64-unknown-linux-gnu/release")).unwrap();
        std::fs::create_dir_all(target.join("debug")).unwrap();
        std::fs::write(
            target.join("CACHEDIR.TAG"),
            "Signature: 8a477f597d28d172789f06886806bc55",
        )
        .unwrap();
        let cross = target.join("x86_64-unknown-linux-gnu/release");
        let shown = |dir: &std::path::Path| {
            placement_args(dir)
                .into_iter()
                .map(|a| {
                    a.to_string_lossy()
                        .replace(&*root.path().to_string_lossy(), "R")
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(
            shown(&cross),
            [
                "--target-dir",
                "R/target",
                "--target",
                "x86_64-unknown-linux-gnu",
                "--profile",
                "release"
            ]
        );
        assert_eq!(shown(&target.join("debug")), ["--target-dir", "R/target"]);
    }
}
