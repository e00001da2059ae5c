//! Invariant 1: the core and the providers (pi-core, pi-providers) do no IO. Three checks, each
//! made for both crates:
//!
//! - their dependency closure (normal edges) stays within a list of pure crates; adding anything
//!   else is a design decision, made here on purpose;
//! - `core/clippy.toml` bans the IO items (all of std::fs, std::net, std::process, std::env, the
//!   clocks, OS randomness, stdio), and that ban is shown to work: small crates each using one
//!   banned item are linted with that file and must be refused, naming the item;
//!   `providers/clippy.toml` is the same file (a link to it), so both crates are linted with one ban;
//! - core/src and providers/src are read with a Rust tokenizer, and no path in them names a
//!   banned std module, however written (`use std::{fs, ..}`, `::std::env::..`, renaming std
//!   itself). This covers what an item list cannot: constants, modules, items a later toolchain
//!   adds.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Tests read files and run cargo; the core's IO ban applies to the library, not to its tests.
#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    clippy::disallowed_macros
)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use proc_macro2::{Delimiter, Spacing, TokenStream, TokenTree};

#[path = "purity/front_end_boundary.rs"]
mod front_end_boundary;
#[path = "purity/module_order.rs"]
mod module_order;

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
    // An ECMAScript regex engine: tool schemas' `pattern`s are JavaScript RegExps in Pi
    // (lookarounds, backreferences, `u` semantics), which `regex` cannot run. Pure Rust, and its
    // only dependency, memchr, is already here.
    "regress",
    "foldhash",
    "zmij",
    // NFKC for the edit tool's fuzzy matching.
    "unicode-normalization",
    "tinyvec",
    "tinyvec_macros",
    // WHATWG URL parsing with IDNA (pi-schema's `$ref` resolution and URL formats), and the
    // Unicode tables it carries.
    "url",
    "form_urlencoded",
    "percent-encoding",
    "idna",
    "idna_adapter",
    "utf8_iter",
    "smallvec",
    "displaydoc",
    "icu_collections",
    "icu_locale_core",
    "icu_normalizer",
    "icu_normalizer_data",
    "icu_properties",
    "icu_properties_data",
    "icu_provider",
    "litemap",
    "potential_utf",
    "stable_deref_trait",
    "synstructure",
    "tinystr",
    "utf_types",
    "writeable",
    "yoke",
    "yoke-derive",
    "zerofrom",
    "zerofrom-derive",
    "zerotrie",
    "zerovec",
    "zerovec-derive",
];

/// What the providers may use beyond the core's list.
const PROVIDERS_ALLOWED: &[&str] = &[
    "pi-providers",
    // Which names say their value is a credential: one pure function, no dependencies.
    "pi-credential-names",
    // Response body chunks (`HttpResponse::chunk`): a reference-counted byte buffer, no IO.
    "bytes",
];

#[test]
fn the_core_depends_only_on_pure_crates() {
    let crates = dependency_closure("pi-core");
    let foreign = outside(&crates, ALLOWED);
    assert!(
        foreign.is_empty(),
        "pi-core depends on crates outside the pure list: {foreign:?}"
    );
}

#[test]
fn the_providers_depend_only_on_pure_crates() {
    let allowed: Vec<&str> = ALLOWED.iter().chain(PROVIDERS_ALLOWED).copied().collect();
    let crates = dependency_closure("pi-providers");
    assert!(
        crates.contains("pi-core"),
        "unexpected cargo tree output: {crates:?}"
    );
    let foreign = outside(&crates, &allowed);
    assert!(
        foreign.is_empty(),
        "pi-providers depends on crates outside the pure list: {foreign:?}"
    );
}

/// The crates of this workspace (their names start with `pi-`) in a dependency closure.
fn workspace_crates(crates: &BTreeSet<String>) -> BTreeSet<&str> {
    crates
        .iter()
        .map(String::as_str)
        .filter(|c| c.starts_with("pi-"))
        .collect()
}

/// `pi proxy` reads and writes cassettes and nothing else of the harness: its dependency
/// closure holds the cassette format (and the credential-name rule the format's redaction
/// uses), not the cassettes' replay, the effects, the providers or the core.
#[test]
fn the_proxy_depends_on_the_cassette_format_alone() {
    let crates = dependency_closure("pi-proxy");
    assert_eq!(
        workspace_crates(&crates),
        BTreeSet::from(["pi-proxy", "pi-cassette-format", "pi-credential-names"]),
        "pi-proxy's workspace dependencies"
    );
    let format = dependency_closure("pi-cassette-format");
    assert_eq!(
        workspace_crates(&format),
        BTreeSet::from(["pi-cassette-format", "pi-credential-names"]),
        "pi-cassette-format's workspace dependencies"
    );
}

/// The crates in `crates` that `allowed` does not name.
fn outside<'a>(crates: &'a BTreeSet<String>, allowed: &[&str]) -> Vec<&'a String> {
    crates
        .iter()
        .filter(|c| !allowed.contains(&c.as_str()))
        .collect()
}

/// Every crate `package` depends on through normal edges, itself included.
fn dependency_closure(package: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "tree",
            "-p",
            package,
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
    crates
}

/// One banned item per case, reached the way core code might write it; clippy must refuse each
/// crate and name the item. At least one case per banned module, and the items the ban was once
/// missing (OpenOptions, read_dir, metadata, remove_file, var_os, args, TcpListener, UdpSocket).
const BANNED: &[(&str, &str)] = &[
    (
        "std::fs::OpenOptions",
        r#"pub fn f() { let _ = std::fs::OpenOptions::new().read(true).open("x"); }"#,
    ),
    (
        "std::fs::read_dir",
        r#"pub fn f() { let _ = std::fs::read_dir("."); }"#,
    ),
    (
        "std::fs::metadata",
        r#"use std::fs::metadata as stat; pub fn f() -> bool { stat("x").is_ok() }"#,
    ),
    (
        "std::fs::remove_file",
        r#"use std::{fs as files}; pub fn f() { let _ = files::remove_file("x"); }"#,
    ),
    (
        "std::fs::read_to_string",
        r#"use std::fs::*; pub fn f() { let _ = read_to_string("x"); }"#,
    ),
    (
        "std::path::Path::metadata",
        r#"pub fn f() { let _ = std::path::PathBuf::from("x").metadata(); }"#,
    ),
    (
        "std::env::var_os",
        r#"pub fn f() -> bool { std::env::var_os("HOME").is_some() }"#,
    ),
    (
        "std::env::args",
        r#"pub fn f() -> usize { std::env::args().count() }"#,
    ),
    (
        "std::net::TcpListener",
        r#"pub fn f() { let _ = std::net::TcpListener::bind("127.0.0.1:0"); }"#,
    ),
    (
        "std::net::UdpSocket",
        r#"pub fn f() { let _ = std::net::UdpSocket::bind("127.0.0.1:0"); }"#,
    ),
    (
        "std::net::ToSocketAddrs::to_socket_addrs",
        r#"pub fn f() { let _ = std::net::ToSocketAddrs::to_socket_addrs("localhost:80"); }"#,
    ),
    (
        "std::process::Command",
        r#"pub fn f() { let _ = std::process::Command::new("ls").output(); }"#,
    ),
    (
        "std::process::exit",
        r#"pub fn f() { std::process::exit(1) }"#,
    ),
    (
        "std::time::SystemTime::now",
        r#"pub fn f() { let _ = std::time::SystemTime::now(); }"#,
    ),
    (
        "std::time::Instant::now",
        r#"pub fn f() { let _ = std::time::Instant::now(); }"#,
    ),
    (
        "std::hash::RandomState",
        r#"pub fn f() { let _ = std::collections::hash_map::RandomState::new(); }"#,
    ),
    (
        "std::collections::HashMap",
        r#"pub fn f() -> usize { std::collections::HashMap::<u8, u8>::new().len() }"#,
    ),
    (
        "std::io::stdin",
        r#"pub fn f() { let _ = std::io::stdin(); }"#,
    ),
    ("std::println", r#"pub fn f() { println!("x"); }"#),
    (
        "std::thread::sleep",
        r#"pub fn f() { std::thread::sleep(std::time::Duration::ZERO); }"#,
    ),
];

/// What the core does use from std; it must pass the same lint with no complaint about the file.
const ALLOWED_SNIPPET: &str = r#"
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

pub fn f(now_ms: u64) -> Vec<u8> {
    static ONCE: OnceLock<u8> = OnceLock::new();
    let mut map = BTreeMap::new();
    map.insert(Arc::new("k"), Duration::from_millis(now_ms));
    let set: BTreeSet<u8> = [*ONCE.get_or_init(|| 1)].into();
    let mut out = Vec::new();
    let _ = write!(out, "{map:?} {set:?} {}", std::path::Path::new("a").join("b").display());
    out
}
"#;

struct Linted {
    ok: bool,
    stderr: String,
}

/// Lints a one-file library crate with core/clippy.toml, in a shared target dir under target/.
fn clippy(cargo: &str, name: &str, source: &str) -> Linted {
    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("purity");
    let dir = root.join(name);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        format!("[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[workspace]\n"),
    )
    .unwrap();
    std::fs::write(dir.join("src/lib.rs"), source).unwrap();
    let output = Command::new(cargo)
        .args(["clippy", "--quiet", "--offline", "--", "-D", "warnings"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", root.join("target"))
        .env("CLIPPY_CONF_DIR", env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    Linted {
        ok: output.status.success(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[test]
fn clippy_refuses_each_banned_item_and_accepts_what_the_core_uses() {
    let cargo = env!("CARGO");
    let probe = Command::new(cargo).args(["clippy", "--version"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        // Straight to stderr: the harness shows `eprintln!` output only for failing tests.
        let _ = std::io::Write::write_all(
            &mut std::io::stderr(),
            b"skipped: clippy is not installed (rustup component add clippy)\n",
        );
        return;
    }
    let allowed = clippy(cargo, "purity_allowed", ALLOWED_SNIPPET);
    assert!(
        allowed.ok,
        "the allowed snippet is refused:\n{}",
        allowed.stderr
    );
    assert!(
        !allowed.stderr.contains("clippy.toml"),
        "clippy complains about core/clippy.toml (a path that names nothing? run scripts/gen-purity-ban.py):\n{}",
        allowed.stderr
    );
    for (i, (item, source)) in BANNED.iter().enumerate() {
        let linted = clippy(cargo, &format!("purity_banned_{i}"), source);
        assert!(!linted.ok, "{item} passes clippy:\n{source}");
        assert!(
            !linted.stderr.contains("error["),
            "the snippet for {item} does not compile:\n{}",
            linted.stderr
        );
        assert!(
            linted.stderr.contains("use of a disallowed")
                && linted.stderr.contains(&format!("`{item}`")),
            "clippy refused the snippet for {item} without naming it:\n{}",
            linted.stderr
        );
    }
}

/// The std modules the core may not name at all.
const BANNED_MODULES: &[&str] = &["fs", "net", "process", "env", "os", "thread"];

/// Every place in `source` where a path names a banned std module, or std is renamed or
/// glob-imported (which would hide such paths from this scan).
fn banned_paths(source: &str) -> Vec<String> {
    let stream: TokenStream = source.parse().expect("core sources tokenize");
    let mut found = Vec::new();
    scan(stream, &mut found);
    found
}

fn scan(stream: TokenStream, found: &mut Vec<String>) {
    let tokens: Vec<TokenTree> = stream.into_iter().collect();
    for (i, token) in tokens.iter().enumerate() {
        match token {
            TokenTree::Group(group) => scan(group.stream(), found),
            TokenTree::Ident(ident) if ident == "std" => {
                let mut report = |what: String| found.push(what);
                match (tokens.get(i + 1), tokens.get(i + 2), tokens.get(i + 3)) {
                    (Some(TokenTree::Ident(next)), _, _) if next == "as" => {
                        report("std renamed".into())
                    }
                    (Some(TokenTree::Punct(a)), Some(TokenTree::Punct(b)), Some(after))
                        if a.as_char() == ':'
                            && a.spacing() == Spacing::Joint
                            && b.as_char() == ':' =>
                    {
                        for what in after_std(after) {
                            report(what);
                        }
                    }
                    _ => {}
                }
            }
            _ => {}
        }
    }
}

/// What follows `std::`: a module name, a `{..}` use group (each member's first segment), or `*`.
fn after_std(token: &TokenTree) -> Vec<String> {
    match token {
        TokenTree::Ident(module) if BANNED_MODULES.contains(&module.to_string().as_str()) => {
            vec![format!("std::{module}")]
        }
        TokenTree::Punct(star) if star.as_char() == '*' => vec!["std::*".into()],
        TokenTree::Group(group) if group.delimiter() == Delimiter::Brace => {
            let members: Vec<TokenTree> = group.stream().into_iter().collect();
            members
                .split(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == ','))
                .filter_map(|member| match member {
                    [TokenTree::Ident(this), TokenTree::Ident(as_), ..]
                        if this == "self" && as_ == "as" =>
                    {
                        Some(vec!["std renamed".into()])
                    }
                    [first, ..] => Some(after_std(first)),
                    [] => None,
                })
                .flatten()
                .collect()
        }
        _ => Vec::new(),
    }
}

fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// Every place in the crate folder `krate` (beside core/) whose sources name a banned module;
/// `at_least` files are expected there (a scan of a moved folder must not pass empty).
fn banned_paths_in(krate: &str, at_least: usize) -> Vec<String> {
    let mut files = Vec::new();
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(krate)
        .join("src");
    rust_files(&src, &mut files);
    assert!(
        files.len() >= at_least && files.contains(&src.join("lib.rs")),
        "{krate}/src looks empty: {files:?}"
    );
    let mut wrong = Vec::new();
    for file in &files {
        let source = std::fs::read_to_string(file).unwrap();
        for hit in banned_paths(&source) {
            wrong.push(format!("{}: {hit}", file.display()));
        }
    }
    wrong
}

#[test]
fn the_core_source_names_no_banned_std_module() {
    let wrong = banned_paths_in("core", 20);
    assert!(
        wrong.is_empty(),
        "core/src names banned std modules:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_providers_source_names_no_banned_std_module() {
    let wrong = banned_paths_in("providers", 20);
    assert!(
        wrong.is_empty(),
        "providers/src names banned std modules:\n{}",
        wrong.join("\n")
    );
}

/// The credential-name rule is in the providers' dependency closure as a pure crate: its
/// sources are held to the same ban (one file today).
#[test]
fn the_credential_names_source_names_no_banned_std_module() {
    let wrong = banned_paths_in("credential-names", 1);
    assert!(
        wrong.is_empty(),
        "credential-names/src names banned std modules:\n{}",
        wrong.join("\n")
    );
}

/// Clippy reads `clippy.toml` from the linted crate's folder: the providers' must be the core's
/// ban, not a copy that drifts or a file that bans less.
#[test]
fn the_providers_are_linted_with_the_cores_ban() {
    let core = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ban = std::fs::read(core.join("clippy.toml")).unwrap();
    let providers = std::fs::read(core.join("../providers/clippy.toml"))
        .expect("providers/clippy.toml exists (a link to core/clippy.toml)");
    assert!(
        providers == ban,
        "providers/clippy.toml differs from core/clippy.toml"
    );
}

#[test]
fn the_source_scan_sees_banned_modules_however_written() {
    for (source, expected) in [
        ("use std::fs;", "std::fs"),
        ("use std::{collections::BTreeMap, env};", "std::env"),
        ("use ::std::{io, net::TcpStream as T};", "std::net"),
        ("use std::{os::unix::fs::PermissionsExt};", "std::os"),
        ("fn f() -> u32 { std::process::id() }", "std::process"),
        ("const OS: &str = std::env::consts::OS;", "std::env"),
        (
            "macro_rules! m { () => { std::thread::sleep(d) } }",
            "std::thread",
        ),
        (
            "mod m { fn f() { { let _ = std::fs::read(\"x\"); } } }",
            "std::fs",
        ),
        ("use std as s;", "std renamed"),
        ("extern crate std as s;", "std renamed"),
        ("use std::{self as s};", "std renamed"),
        ("use std::*;", "std::*"),
        ("use std::{*};", "std::*"),
    ] {
        assert_eq!(banned_paths(source), [expected], "{source}");
    }
    let clean = r##"
        // std::fs in a comment
        /// std::env in a doc comment
        use std::io::Write;
        use std::sync::{Arc, OnceLock};
        use std::collections::BTreeMap as Map;
        fn f() -> &'static str { "std::fs::read" }
        fn g() -> &'static str { r#"std::process::exit"# }
        fn h(stdx: u8) -> u8 { stdx }
    "##;
    assert_eq!(banned_paths(clean), Vec::<String>::new());
}
