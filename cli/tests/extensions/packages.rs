//! Settings `packages` through the real binary: an npm package (at its managed install path), a
//! git package (at its clone path) and a local package folder, made by the test, give an
//! extension's command, skills and prompt templates, with the manifest's patterns and the
//! entry's filters applied, and the top-level pattern entries turning off only what the settings
//! and folders give (a package's file keeps the state its package gave it, as in Pi); RPC `get_commands` lists them as Pi 1.5.2 does with the same agent
//! dir (offline, so it installs nothing either). A package that is not installed is reported
//! once and the run goes on without it.

use serde_json::json;

use crate::common::{Env, MockLlm};
use crate::support::{node_path, original, rpc_commands, with_host};

fn write(path: &std::path::Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// An extension file registering the command `name`.
fn command_extension(name: &str) -> String {
    format!(
        "import type {{ ExtensionAPI }} from \"@earendil-works/pi-coding-agent\";\n\
         export default function (pi: ExtensionAPI) {{\n\
         \tpi.registerCommand(\"{name}\", {{ description: \"From {name}\", handler: async () => {{}} }});\n}}\n"
    )
}

fn skill(dir: &std::path::Path, name: &str) {
    write(
        &dir.join(name).join("SKILL.md"),
        &format!("---\nname: {name}\ndescription: The {name} skill.\n---\nBody of {name}\n"),
    );
}

/// The agent dir of the comparison: three installed packages, one missing, and top-level
/// pattern entries.
fn packages_env(mock: &MockLlm) -> Env {
    let env = Env::new(mock);
    let agent = env.path("agent");
    let npm = agent.join("npm/node_modules/@team/tools");
    write(
        &npm.join("package.json"),
        &json!({"name": "@team/tools", "version": "1.2.0", "pi": {
            "extensions": ["./ext/tools.ts"],
            "skills": ["./skills", "!skills/hidden"],
            "prompts": ["prompts/*.md"]
        }})
        .to_string(),
    );
    write(&npm.join("ext/tools.ts"), &command_extension("tools-hello"));
    skill(&npm.join("skills"), "alpha");
    skill(&npm.join("skills"), "hidden");
    write(
        &npm.join("prompts/fix.md"),
        "---\ndescription: Fix it\n---\nFix $1\n",
    );
    write(&npm.join("prompts/zeta.md"), "Zeta $@\n");
    let git = agent.join("git/github.com/team/kit");
    write(&git.join("extensions/kit.ts"), &command_extension("kit"));
    skill(&git.join("skills"), "gamma");
    write(&git.join("prompts/kit-review.md"), "Review with the kit\n");
    write(&git.join("CHANGELOG.md"), "# 1.0\n");
    let local = agent.join("local-pkg");
    skill(&local.join("skills"), "beta");
    skill(&local.join("skills"), "delta");
    write(&local.join("prompts/local.md"), "Local prompt\n");
    skill(&agent.join("skills"), "old");
    skill(&agent.join("skills"), "kept");
    for name in ["s1", "s2", "s3"] {
        skill(&env.path("shared-skills"), name);
    }
    write(&agent.join("prompts/draft.md"), "A draft\n");
    write(&agent.join("prompts/keep.md"), "Keep this\n");
    write(
        &agent.join("settings.json"),
        &json!({
            "packages": [
                "npm:@team/tools",
                "git:github.com/team/kit@v1",
                {"source": "./local-pkg", "skills": ["skills/*/SKILL.md", "!beta"], "prompts": []},
                "npm:not-installed"
            ],
            "skills": ["!old", "../shared-skills", "!s*", "+../shared-skills/s2"],
            "prompts": ["!draft.md", "!zeta.md"]
        })
        .to_string(),
    );
    env
}

/// RPC `get_commands` of a run with `args` (the extension host on `node`), compared with Pi
/// 1.5.2's offline with the same agent dir when the original is here; ours.
fn commands_like_original(env: &Env, node: &str, args: &[&str]) -> serde_json::Value {
    let mut ours = env.command(args);
    with_host(&mut ours, node);
    let listed = rpc_commands(&mut ours);
    if let Some(mut original) = original(env, node) {
        original.args(args).env("PI_OFFLINE", "1");
        assert_eq!(listed, rpc_commands(&mut original));
    }
    listed
}

/// The names of the extensions' commands `get_commands` listed, in order.
fn extension_names(listed: &serde_json::Value) -> Vec<&str> {
    listed
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["source"] == "extension")
        .map(|c| c["name"].as_str().unwrap())
        .collect()
}

const RPC: [&str; 6] = [
    "--provider",
    "mock",
    "--model",
    "mock-model",
    "--mode",
    "rpc",
];

#[test]
fn packages_give_extensions_skills_and_templates_as_pi_1_5_2_resolves_them() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([]));
    let env = packages_env(&mock);
    let mut ours = env.command(&RPC);
    with_host(&mut ours, &path);
    let listed = rpc_commands(&mut ours);
    let names: Vec<(&str, &str)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["source"].as_str().unwrap(), c["name"].as_str().unwrap()))
        .collect();
    assert_eq!(
        names,
        [
            ("extension", "tools-hello"),
            ("extension", "kit"),
            ("extension", "llama"),
            ("extension", "mcp"),
            ("prompt", "keep"),
            ("prompt", "fix"),
            ("prompt", "zeta"),
            ("prompt", "kit-review"),
            ("skill", "skill:s2"),
            ("skill", "skill:kept"),
            ("skill", "skill:alpha"),
            ("skill", "skill:gamma"),
            ("skill", "skill:delta"),
        ],
        "{listed:#}"
    );
    let kit = env.path("agent/git/github.com/team/kit");
    assert_eq!(
        listed[11]["sourceInfo"],
        json!({
            "path": kit.join("skills/gamma/SKILL.md"),
            "source": "git:github.com/team/kit@v1",
            "scope": "user",
            "origin": "package",
            "baseDir": kit,
            "changelogPath": kit.join("CHANGELOG.md"),
        })
    );
    if let Some(mut original) = original(&env, &path) {
        original.args(RPC).env("PI_OFFLINE", "1");
        assert_eq!(listed, rpc_commands(&mut original));
    }
}

#[test]
fn a_package_not_installed_is_reported_once_and_the_run_goes_on() {
    let mock = MockLlm::start(&json!([{"text": ["done"]}]));
    let env = packages_env(&mock);
    let out = env.run(&[
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--no-extensions",
        "-p",
        "hi",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(out.stdout, "done\n");
    let looked_at = env.path("agent/npm/node_modules/not-installed");
    let line = format!(
        "Warning: Package \"npm:not-installed\" (user settings) is not installed: looked for it \
         at {}. This harness installs nothing; install it with Pi's `pi install \
         npm:not-installed`. Going on without it.\n",
        looked_at.display()
    );
    assert_eq!(out.stderr, line);
    let system = mock.requests()[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(system.contains("<name>alpha</name>"), "{system}");
    assert!(!system.contains("<name>hidden</name>"), "{system}");
}

/// The settings' own `extensions` entries are relative to their file's folder and their
/// pattern entries turn off what the folders give; `-e` comes first, then the settings entries,
/// the folder, the packages: RPC `get_commands` lists them as Pi 1.5.2 does.
#[test]
fn settings_extensions_entries_and_patterns_are_resolved_as_pi_1_5_2_does() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([]));
    let env = packages_env(&mock);
    let agent = env.path("agent");
    write(&agent.join("mine/listed.ts"), &command_extension("listed"));
    write(
        &agent.join("extensions/auto-a.ts"),
        &command_extension("auto-a"),
    );
    write(
        &agent.join("extensions/auto-b.ts"),
        &command_extension("auto-b"),
    );
    write(&env.cwd().join("cli.ts"), &command_extension("from-cli"));
    write(
        &agent.join("settings.json"),
        &json!({
            "packages": ["git:github.com/team/kit"],
            "extensions": ["mine", "!auto-b.ts"]
        })
        .to_string(),
    );
    let args = [&RPC[..], &["-e", "cli.ts"]].concat();
    let listed = commands_like_original(&env, &path, &args);
    let names = extension_names(&listed);
    assert_eq!(
        names,
        ["from-cli", "listed", "auto-a", "kit", "llama", "mcp"],
        "{listed:#}"
    );
}

/// `-e npm:name` names a package Pi installs for the run under the agent dir's
/// `tmp/extensions`: installed there, its extensions load (first, as `-e` paths do); one not
/// installed is said once and the run goes on, as Pi offline goes on. RPC `get_commands` lists
/// them as Pi 1.5.2 does, offline.
#[test]
fn a_command_line_package_loads_from_where_pi_installs_it_for_the_run() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([{"text": ["done"]}]));
    let env = Env::new(&mock);
    let root =
        pi_effects::packages::temporary_install(&env.path("agent"), "npm:@team/cli-tools").unwrap();
    write(
        &root.join("package.json"),
        &json!({"name": "@team/cli-tools", "version": "2.0.0"}).to_string(),
    );
    write(
        &root.join("extensions/cli-tools.ts"),
        &command_extension("cli-tools"),
    );
    write(&env.cwd().join("local.ts"), &command_extension("local"));
    let args = [
        &RPC[..],
        &[
            "-e",
            "npm:@team/cli-tools",
            "-e",
            "npm:not-here",
            "-e",
            "local.ts",
        ],
    ]
    .concat();
    let listed = commands_like_original(&env, &path, &args);
    let names = extension_names(&listed);
    assert_eq!(names, ["cli-tools", "local", "llama", "mcp"], "{listed:#}");

    let out = env.run(&[
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "-e",
        "npm:not-here",
        "-p",
        "hi",
    ]);
    assert_eq!(
        (out.code, out.stdout.as_str()),
        (0, "done\n"),
        "{}",
        out.stderr
    );
    let looked_at =
        pi_effects::packages::temporary_install(&env.path("agent"), "npm:not-here").unwrap();
    assert_eq!(
        out.stderr,
        format!(
            "Warning: Package \"npm:not-here\" (-e) is not installed: looked for it at {}. This \
             harness installs nothing; run Pi once with `-e npm:not-here` to install it. Going on \
             without it.\n",
            looked_at.display()
        )
    );
}

/// An npm package's version in the settings is checked against the installed one as Pi 1.5.2
/// checks it (npm's ranges: a caret, an or, a pre-release left out of a range, an exact
/// version; a tag takes whatever is installed): one that does not satisfy it is not installed,
/// for Pi offline too. RPC `get_commands` lists the same extensions as 1.5.2's, offline.
#[test]
fn npm_package_versions_and_ranges_are_checked_as_pi_1_5_2_checks_them() {
    let Some(path) = node_path() else { return };
    let mock = MockLlm::start(&json!([]));
    let env = Env::new(&mock);
    let agent = env.path("agent");
    let installed = [
        ("caret-ok", "1.2.0", "^1.1"),
        ("caret-other-major", "1.2.0", "^2"),
        ("tag", "0.1.0", "latest"),
        ("pre-release", "1.1.0-beta.1", "^1.0.0"),
        ("either", "1.9.0", ">=3 <4 || 1.x"),
        ("exact-other", "1.2.4", "1.2.3"),
        ("exact", "1.2.3", "v1.2.3"),
    ];
    let mut packages = Vec::new();
    for (name, version, wanted) in installed {
        let root = agent.join("npm/node_modules").join(name);
        write(
            &root.join("package.json"),
            &json!({"name": name, "version": version}).to_string(),
        );
        write(&root.join("extensions/ext.ts"), &command_extension(name));
        packages.push(format!("npm:{name}@{wanted}"));
    }
    write(
        &agent.join("settings.json"),
        &json!({ "packages": packages }).to_string(),
    );
    let listed = commands_like_original(&env, &path, &RPC);
    let names = extension_names(&listed);
    assert_eq!(
        names,
        ["caret-ok", "tag", "either", "exact", "llama", "mcp"],
        "{listed:#}"
    );
}
