//! `workspace_binary`, which tests use to run another crate's binary, never hands out one older
//! than its sources: a crate in a temporary folder is built, its source changed, and the binary
//! asked for again must print what the new source prints (a binary that merely exists is not
//! taken as it is).

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

fn cargo() -> Command {
    Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
}

fn write_main(dir: &Path, says: &str) {
    std::fs::write(
        dir.join("src/main.rs"),
        format!("fn main() {{\n    println!(\"{says}\");\n}}\n"),
    )
    .unwrap();
}

fn says(binary: &Path) -> String {
    let out = Command::new(binary).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[test]
fn a_binary_older_than_its_sources_is_built_again() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        "[package]\nname = \"probe\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    write_main(root, "one");
    let locked = cargo()
        .current_dir(root)
        .args(["generate-lockfile", "--offline"])
        .status()
        .unwrap();
    assert!(locked.success());
    let profile = root.join("target/debug");

    let binary = pi_testkit::built_binary(root, &profile, "probe", "probe").unwrap();
    assert_eq!(says(&binary), "one");

    write_main(root, "two");
    let binary = pi_testkit::built_binary(root, &profile, "probe", "probe").unwrap();
    assert_eq!(says(&binary), "two", "the binary was not built again");
}

/// A fresh binary is left as it is, whatever the test process's environment: what Cargo sets
/// for the test (here `CARGO_MANIFEST_DIR`, which a build script may watch, as ring's does)
/// does not reach the build, else the build and the test's own build would undo each other
/// (a whole rebuild of ring, rustls and reqwest each time, seen before this was so).
#[test]
fn the_test_processs_cargo_variables_do_not_make_a_fresh_binary_stale() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        "[package]\nname = \"watcher\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    let runs = root.join("build-script-runs");
    std::fs::write(
        root.join("build.rs"),
        format!(
            "use std::io::Write;\nfn main() {{\n    \
             println!(\"cargo:rerun-if-changed=build.rs\");\n    \
             println!(\"cargo:rerun-if-env-changed=CARGO_MANIFEST_DIR\");\n    \
             let mut f = std::fs::OpenOptions::new().create(true).append(true)\
             .open({runs:?}).unwrap();\n    writeln!(f, \"ran\").unwrap();\n}}\n"
        ),
    )
    .unwrap();
    write_main(root, "watching");
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    // The program's own build, as `cargo test` run from a shell makes it.
    let built = cargo()
        .current_dir(root)
        .args(["build", "--quiet", "--offline"])
        .env_remove("CARGO_MANIFEST_DIR")
        .status()
        .unwrap();
    assert!(built.success());
    let ran = || std::fs::read_to_string(&runs).unwrap().lines().count();
    assert_eq!(ran(), 1);

    let profile = root.join("target/debug");
    let binary = pi_testkit::built_binary(root, &profile, "watcher", "watcher").unwrap();
    assert_eq!(says(&binary), "watching");
    assert_eq!(
        ran(),
        1,
        "the build script ran again: the binary was rebuilt"
    );
}
