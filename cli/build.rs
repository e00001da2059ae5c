//! Links `pi` as a position-dependent executable on Linux with the GNU toolchain.
//!
//! A position-independent `pi` carries about 31,000 relocations that the dynamic loader applies
//! at every start, each making a private copy of the page it writes: about 150 page faults of
//! fresh memory before `main`, a sixth of a whole 50-turn replay's. `pi` is started per prompt,
//! per replay and per eval trial, so the start is on the hot path; the cost is the address
//! randomisation of the executable's own image (libraries, stack and heap keep theirs).

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
