//! Invariant 1: the core does no IO. Its dependency closure (normal edges) must stay within this
//! list of pure crates; adding anything else is a design decision, made here on purpose. The
//! forbidden calls themselves (clocks, files, processes, environment, OS randomness through
//! HashMap) are refused by `core/clippy.toml`, which CI enforces with `-D warnings`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Tests read fixtures and run cargo; the core's IO ban applies to the library, not to its tests.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::collections::BTreeSet;
use std::process::Command;

const ALLOWED: &[&str] = &[
    "pi-core",
    "serde",
    "serde_core",
    "serde_derive",
    "serde_json",
    "ryu",
    "itoa",
    "memchr",
    "indexmap",
    "hashbrown",
    "equivalent",
    "thiserror",
    "thiserror-impl",
    "proc-macro2",
    "quote",
    "syn",
    "unicode-ident",
    "regex",
    "regex-automata",
    "regex-syntax",
    "aho-corasick",
    "foldhash",
    "zmij",
    // NFKC for the edit tool's fuzzy matching.
    "unicode-normalization",
    "tinyvec",
    "tinyvec_macros",
];

#[test]
fn the_core_depends_only_on_pure_crates() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "tree",
            "-p",
            "pi-core",
            "-e",
            "normal",
            "--prefix",
            "none",
            "--offline",
            "--format",
            "{p}",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let crates: BTreeSet<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect();
    assert!(
        crates.contains("serde_json"),
        "unexpected cargo tree output: {crates:?}"
    );
    let foreign: Vec<&String> = crates
        .iter()
        .filter(|c| !ALLOWED.contains(&c.as_str()))
        .collect();
    assert!(
        foreign.is_empty(),
        "pi-core depends on crates outside the pure list: {foreign:?}"
    );
}

#[test]
fn the_lint_configuration_forbids_clocks_files_processes_and_randomness() {
    let config = include_str!("../clippy.toml");
    for path in [
        "std::time::SystemTime::now",
        "std::time::Instant::now",
        "std::fs::File",
        "std::process::Command",
        "std::env::var",
        "std::collections::HashMap",
    ] {
        assert!(
            config.contains(path),
            "core/clippy.toml no longer forbids {path}"
        );
    }
}
