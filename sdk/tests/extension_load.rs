//! A TypeScript extension that fails to load fails the SDK session's build with Pi 1.5.2's
//! text, never a session silently without it; nothing reaches the model.
//!
//! This needs Node and Pi 1.5.2's install (`PI_EXTENSION_HOST_PI_DIR`, its Node in `node/bin`);
//! without them it is skipped with a line, unless `PI_REQUIRE_EXTENSIONS=1` (CI) makes that a
//! failure.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::builder;
use pi_testkit::MockLlm;
use serde_json::json;

#[test]
fn an_extension_that_fails_to_load_fails_the_build_with_pis_text() {
    let Some(install) = pi_testkit::extension_host_install() else {
        return;
    };
    // The extension host runs the install's Node (Pi 1.5.2 needs Node >= 22.19).
    let path = std::env::var("PATH").unwrap_or_default();
    std::env::set_var(
        "PATH",
        format!("{}:{path}", install.join("node/bin").display()),
    );
    let workspace = tempfile::tempdir().unwrap();
    let extension = workspace.path().join("throws.ts");
    std::fs::write(
        &extension,
        "export default function () { throw new Error(\"no greeting today\"); }\n",
    )
    .unwrap();
    let mock = MockLlm::start(&json!([{"text": ["unreached"]}]));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let built = runtime.block_on(async {
        builder(&mock, workspace.path())
            .typescript_extensions([&extension])
            .build()
    });
    let error = built.expect_err("the build failed").to_string();
    assert_eq!(
        error,
        format!(
            "Failed to load extension \"{}\": Failed to load extension: no greeting today",
            extension.display()
        )
    );
    assert!(mock.requests().is_empty());
}
