//! Loading extensions, and the attacks on it: no Node, an untrusted project's extension, a host
//! that dies or misbehaves, a factory that throws; none may hang, panic or leave files behind.

use serde_json::json;

use crate::common::{Env, MockLlm};
use crate::support::{fixture, node_path, run, run_or_hang, with_extension, with_host};

#[test]
fn a_configured_extension_without_node_is_an_error_not_skipped() {
    let mock = MockLlm::start(&json!([{"text": ["unreached"]}]));
    let env = Env::new(&mock);
    let extension = fixture("greet.ts");
    let no_node = env.path("no-node");
    std::fs::create_dir_all(&no_node).unwrap();
    let mut command = with_extension(&env, &[], &extension, "hi");
    command.env("PATH", &no_node);
    let (code, stdout, stderr) = run(&mut command);
    assert_eq!(code, 1, "{stdout}{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "Error: Failed to load extension \"{}\": Node.js >= 22.19 is required to run extensions",
            extension.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.ends_with("Hint: Start without extensions using \"pi -ne\".\n"),
        "{stderr}"
    );
    assert!(
        mock.requests().is_empty(),
        "the run went on without its extension"
    );
}

/// The attack: a project the user never trusted ships `.pi/extensions/marker.ts`, which writes
/// a file when loaded. Untrusted, the run must not load it; `--approve` (trusting the project)
/// loads it, which shows the check can see a load.
#[test]
fn an_untrusted_projects_extension_is_not_loaded() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["one"]}, {"text": ["two"]}]));
    let env = Env::new(&mock);
    let project_extensions = env.cwd().join(".pi/extensions");
    std::fs::create_dir_all(&project_extensions).unwrap();
    std::fs::copy(fixture("marker.ts"), project_extensions.join("marker.ts")).unwrap();
    let marker = env.path("marker.txt");
    for (trust, loaded) in [(None, false), (Some("--approve"), true)] {
        let mut args = vec!["--provider", "mock", "--model", "mock-model", "-p", "hi"];
        args.extend(trust);
        let mut command = env.command(&args);
        with_host(&mut command, &path);
        command.env("PI_TEST_MARKER", &marker);
        let (code, _, stderr) = run(&mut command);
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(marker.exists(), loaded, "trust {trust:?}: {stderr}");
    }
}

/// The attack: the extension host dies while loading (killed outright, as a crash or an
/// out-of-memory kill ends it) or ends normally with an untrusted project's extensions left out
/// (the case whose stand-in folder outlives loading); neither may leave its temporary folder
/// behind in the system's temp dir.
#[test]
fn no_run_leaves_the_extension_hosts_temp_folder_behind() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["one"]}]));
    let env = Env::new(&mock);
    std::fs::create_dir_all(env.cwd().join(".pi/extensions")).unwrap();
    std::fs::copy(
        fixture("marker.ts"),
        env.cwd().join(".pi/extensions/marker.ts"),
    )
    .unwrap();
    for (extension, code) in [("killed.ts", 1), ("greet.ts", 0)] {
        let tmp = env.path(&format!("tmp-{extension}"));
        std::fs::create_dir_all(&tmp).unwrap();
        let mut command = with_extension(&env, &[], &fixture(extension), "hi");
        with_host(&mut command, &path);
        command.env("TMPDIR", &tmp);
        let (got, _, stderr) = run(&mut command);
        assert_eq!(got, code, "{extension}: {stderr}");
        let left: Vec<_> = std::fs::read_dir(&tmp)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| name.starts_with("pi-extension-host-"))
            .collect();
        assert!(left.is_empty(), "{extension} left {left:?}: {stderr}");
    }
}

/// An extension whose factory throws stops the run with the text and hint Pi 1.5.2 prints for
/// it (checked against 1.5.2 with the same file).
#[test]
fn a_failing_extension_is_pis_load_error() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["unreached"]}]));
    let env = Env::new(&mock);
    let extension = fixture("throws.ts");
    let mut command = with_extension(&env, &[], &extension, "hi");
    with_host(&mut command, &path);
    let (code, stdout, stderr) = run(&mut command);
    assert_eq!((code, stdout.as_str()), (1, ""), "{stderr}");
    assert_eq!(
        stderr,
        format!(
            "Error: Failed to load extension \"{}\": Failed to load extension: no greeting today\n\
             Hint: Start without extensions using \"pi -ne\".\n",
            extension.display()
        )
    );
    assert!(mock.requests().is_empty());
}

/// The attack: the extension host's output is outside input. A `node` that writes a line that
/// is not the protocol and stays up, one that writes an endless line, and one that dies
/// half-way through a line must each end the run with Pi's load error naming what went wrong,
/// never a hang or a panic, and no model request.
#[test]
fn a_broken_extension_host_is_a_clear_error_not_a_hang() {
    let mock = MockLlm::start(&json!([{"text": ["unreached"]}]));
    let env = Env::new(&mock);
    let extension = fixture("greet.ts");
    let cases = [
        (
            "garbage",
            "echo 'this is not the protocol'\nexec sleep 60",
            "not its protocol",
        ),
        (
            "huge",
            "head -c 80000000 /dev/zero | tr '\\0' a\nexec sleep 60",
            "longer than",
        ),
        (
            "dies",
            "read -r request\nprintf '{\"id\":0,'\nexit 3",
            "ended in the middle of a line",
        ),
    ];
    for (name, script, said) in cases {
        let bin = env.path(&format!("node-{name}"));
        std::fs::create_dir_all(&bin).unwrap();
        let node = bin.join("node");
        std::fs::write(&node, format!("#!/bin/sh\n{script}\n")).unwrap();
        let mut permissions = std::fs::metadata(&node).unwrap().permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&node, permissions).unwrap();
        let mut command = env.command(&[
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "-e",
            extension.to_str().unwrap(),
            "-p",
            "hi",
        ]);
        command.env("PATH", format!("{}:/usr/bin:/bin", bin.display()));
        let (code, stderr) = run_or_hang(&mut command, &bin, std::time::Duration::from_secs(45));
        assert_eq!(code, 1, "{name}: {stderr}");
        assert!(
            stderr.starts_with(&format!(
                "Error: Failed to load extension \"{}\": the extension host failed: ",
                extension.display()
            )) && stderr.contains(said),
            "{name}: {stderr}"
        );
        assert!(
            stderr.ends_with("Hint: Start without extensions using \"pi -ne\".\n"),
            "{name}: {stderr}"
        );
    }
    assert!(
        mock.requests().is_empty(),
        "a run went on without its extension"
    );
}

/// An extension handling an event this harness does not deliver to extensions (one it does not
/// know) is told about once, by name, on stderr: its handlers for it are not silently skipped.
/// The run goes on; the events it does deliver (`turn_end`, `mcp_servers_change`) are not named.
#[test]
fn handlers_for_events_not_delivered_are_said_not_skipped_silently() {
    assert_runs_with_one_warning("unheard.ts", |extension| {
        format!(
            "Extension \"{extension}\" handles some_later_event, which this harness does not \
             deliver to extensions yet: those handlers never run."
        )
    });
}

/// Runs the `fixture` extension on a prompt: the run answers as without it, and stderr is
/// the one warning `warning` gives for the extension's path.
fn assert_runs_with_one_warning(fixture_name: &str, warning: impl Fn(&str) -> String) {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["done"]}]));
    let env = Env::new(&mock);
    let extension = fixture(fixture_name);
    let mut command = with_extension(&env, &[], &extension, "hi");
    with_host(&mut command, &path);
    let (code, stdout, stderr) = run(&mut command);
    assert_eq!((code, stdout.as_str()), (0, "done\n"), "{stderr}");
    let expected = warning(&extension.display().to_string());
    assert_eq!(stderr, format!("Warning: {expected}\n"));
}
