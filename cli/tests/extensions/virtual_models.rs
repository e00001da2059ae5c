//! Virtual models an extension registers (`pi.registerVirtualModel`): listed among the models,
//! selectable, and each request routed by the extension's router to a physical model.

use serde_json::json;

use crate::common::{Env, MockLlm};
use crate::support::{fixture, node_path, run, with_host};

/// A virtual model is in `--list-models`, with its limits and thinking, as Pi 1.5.2 lists it;
/// a run on another model goes on without a word about it.
#[test]
fn a_virtual_model_is_listed_and_a_run_on_another_model_says_nothing_of_it() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["done"]}]));
    let env = Env::new(&mock);
    let extension = fixture("virtual_model.ts");
    let mut command = env.command(&["-e", extension.to_str().unwrap(), "--list-models", "auto"]);
    with_host(&mut command, &path);
    let (code, stdout, stderr) = run(&mut command);
    assert_eq!((code, stderr.as_str()), (0, ""), "{stdout}");
    let row: Vec<&str> = stdout
        .lines()
        .nth(1)
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        row,
        ["router", "auto", "100K", "8K", "yes", "yes"],
        "{stdout}"
    );
    let mut command = crate::support::with_extension(&env, &[], &extension, "hi");
    with_host(&mut command, &path);
    let (code, stdout, stderr) = run(&mut command);
    assert_eq!((code, stdout.as_str(), stderr.as_str()), (0, "done\n", ""));
}
