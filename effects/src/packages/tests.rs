//! The resolution on real folders: where packages are looked for, which entry of a package
//! wins, what a filter and a manifest leave on, and what is reported missing.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::*;
use crate::settings::Settings;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn skill(dir: &Path, name: &str) {
    write(
        &dir.join(name).join("SKILL.md"),
        &format!("---\nname: {name}\ndescription: {name}\n---\n"),
    );
}

/// An npm package `name` under `root`'s `npm/node_modules` with skills `skills`.
fn npm_package(root: &Path, name: &str, version: &str, skills: &[&str]) -> PathBuf {
    let dir = root.join("npm/node_modules").join(name);
    write(
        &dir.join("package.json"),
        &json!({"name": name, "version": version}).to_string(),
    );
    for s in skills {
        skill(&dir.join("skills"), s);
    }
    dir
}

struct Dirs {
    _root: tempfile::TempDir,
    agent: PathBuf,
    cwd: PathBuf,
    home: PathBuf,
}

fn dirs() -> Dirs {
    let root = tempfile::tempdir().unwrap();
    let agent = root.path().join("agent");
    let cwd = root.path().join("cwd");
    let home = root.path().join("home");
    for dir in [&agent, &cwd, &home] {
        std::fs::create_dir_all(dir).unwrap();
    }
    Dirs {
        _root: root,
        agent,
        cwd,
        home,
    }
}

fn settings(dirs: &Dirs, user: Value, project: Value, trusted: bool) -> Resolved {
    write(&dirs.agent.join("settings.json"), &user.to_string());
    write(&dirs.cwd.join(".pi/settings.json"), &project.to_string());
    let settings = Settings::load(&dirs.agent, &dirs.cwd, trusted);
    resolve(&Wanted {
        agent_dir: &dirs.agent,
        cwd: &dirs.cwd,
        home: &dirs.home,
        listed: settings.listed_resources(),
    })
}

/// The enabled resources of `kind`: each path's last two parts and its scope.
fn on(resolved: &Resolved, kind: Kind) -> Vec<(String, &'static str)> {
    resolved
        .found
        .enabled(kind)
        .iter()
        .map(|r| {
            let parts: Vec<_> = r.path.iter().rev().take(2).collect();
            let name = format!(
                "{}/{}",
                parts[1].to_string_lossy(),
                parts[0].to_string_lossy()
            );
            (name, r.meta.scope)
        })
        .collect()
}

#[test]
fn the_projects_packages_come_first_and_win_and_an_untrusted_projects_are_not_read() {
    let d = dirs();
    npm_package(&d.agent, "shared", "1.0.0", &["user-copy"]);
    npm_package(&d.cwd.join(".pi"), "shared", "1.0.0", &["project-copy"]);
    npm_package(&d.agent, "mine", "2.0.0", &["mine"]);
    let git = d.cwd.join(".pi/git/example.com/team/kit");
    skill(&git.join("skills"), "kit");
    let user = json!({"packages": ["npm:shared", "npm:mine@2.0.0"]});
    let project = json!({"packages": ["git:example.com/team/kit.git@v2", "npm:shared@1"]});

    let trusted = settings(&d, user.clone(), project.clone(), true);
    assert_eq!(
        on(&trusted, Kind::Skills),
        [
            ("kit/SKILL.md".to_owned(), "project"),
            ("project-copy/SKILL.md".to_owned(), "project"),
            ("mine/SKILL.md".to_owned(), "user"),
        ]
    );
    assert!(trusted.missing.is_empty(), "{:?}", trusted.missing);
    let kit = &trusted.found.enabled(Kind::Skills)[0];
    assert_eq!(kit.meta.source, "git:example.com/team/kit.git@v2");
    assert_eq!(kit.meta.origin, "package");
    assert_eq!(kit.meta.base_dir.as_deref(), Some(git.as_path()));

    let untrusted = settings(&d, user, project, false);
    assert_eq!(
        on(&untrusted, Kind::Skills),
        [
            ("user-copy/SKILL.md".to_owned(), "user"),
            ("mine/SKILL.md".to_owned(), "user"),
        ]
    );
}

#[test]
fn a_package_not_installed_or_of_another_version_is_missing() {
    let d = dirs();
    npm_package(&d.agent, "old", "1.0.0", &["old"]);
    std::fs::create_dir_all(d.agent.join("npm/node_modules/unversioned")).unwrap();
    let resolved = settings(
        &d,
        json!({"packages": [
            "npm:old@2.0.0", "npm:unversioned", "git:github.com/a/b", "./nowhere", 7,
            {"skills": []}
        ]}),
        json!({"packages": [{"source": "git:github.com/a/b", "autoload": false, "skills": ["x"]}]}),
        true,
    );
    assert!(on(&resolved, Kind::Skills).is_empty());
    let missing: Vec<(&str, PathBuf)> = resolved
        .missing
        .iter()
        .map(|m| (m.source.as_str(), m.looked_at.clone()))
        .collect();
    assert_eq!(
        missing,
        [
            // The project's delta entry looks where the user's package is, which is reported
            // once for both.
            ("git:github.com/a/b", d.agent.join("git/github.com/a/b")),
            ("npm:old@2.0.0", d.agent.join("npm/node_modules/old")),
            (
                "npm:unversioned",
                d.agent.join("npm/node_modules/unversioned")
            ),
        ]
    );
    // A version range is not checked: the installed package is taken.
    let ranged = settings(&d, json!({"packages": ["npm:old@^1"]}), json!({}), true);
    assert_eq!(on(&ranged, Kind::Skills).len(), 1);
}

#[test]
fn filters_manifests_and_local_paths_give_what_pi_gives() {
    let d = dirs();
    let pkg = d.agent.join("pkgs/tools");
    write(
        &pkg.join("package.json"),
        &json!({"pi": {
            "extensions": ["ext/*.ts", "!ext/skip.ts"],
            "skills": ["skills"],
            "prompts": ["prompts"]
        }})
        .to_string(),
    );
    for ext in ["a.ts", "b.ts", "skip.ts"] {
        write(&pkg.join("ext").join(ext), "");
    }
    for s in ["one", "two", "three"] {
        skill(&pkg.join("skills"), s);
    }
    write(&pkg.join("prompts/p.md"), "P");
    write(&d.agent.join("single.ts"), "");
    std::fs::create_dir_all(d.agent.join("bare")).unwrap();
    write(&d.agent.join("bare/index.ts"), "");

    let plain = settings(
        &d,
        json!({"packages": ["./pkgs/tools", "single.ts", "./bare"]}),
        json!({}),
        true,
    );
    assert_eq!(
        on(&plain, Kind::Extensions),
        [
            ("ext/a.ts".to_owned(), "user"),
            ("ext/b.ts".to_owned(), "user"),
            ("agent/single.ts".to_owned(), "user"),
            ("agent/bare".to_owned(), "user"),
        ]
    );
    assert_eq!(on(&plain, Kind::Skills).len(), 3);

    let filtered = settings(
        &d,
        json!({"packages": [{
            "source": "./pkgs/tools",
            "extensions": ["ext/b.ts", "ext/skip.ts"],
            "skills": ["!t*", "+skills/three"],
            "prompts": []
        }]}),
        json!({}),
        true,
    );
    assert_eq!(
        on(&filtered, Kind::Extensions),
        [("ext/b.ts".to_owned(), "user")]
    );
    assert_eq!(
        on(&filtered, Kind::Skills),
        [
            ("one/SKILL.md".to_owned(), "user"),
            ("three/SKILL.md".to_owned(), "user"),
        ]
    );
    assert!(on(&filtered, Kind::Prompts).is_empty());
}

#[test]
fn a_projects_autoload_false_entry_changes_the_users() {
    let d = dirs();
    npm_package(&d.agent, "kit", "1.0.0", &["a", "b"]);
    let resolved = settings(
        &d,
        json!({"packages": ["npm:kit"]}),
        json!({"packages": [{"source": "npm:kit", "autoload": false, "skills": ["!a"]}]}),
        true,
    );
    assert_eq!(
        on(&resolved, Kind::Skills),
        [("b/SKILL.md".to_owned(), "user")]
    );
    let off = resolved.found.all(Kind::Skills);
    assert_eq!((off[0].enabled, off[0].meta.scope), (false, "project"));
}

/// Where Pi 1.5.2 keeps a `-e` package source (its `DefaultPackageManager` asked for each:
/// `getNpmInstallPath` / `getGitInstallPath` with the `temporary` scope).
#[test]
fn a_command_line_package_is_looked_for_where_pi_installs_it_for_the_run() {
    let agent = Path::new("/agent");
    let expected = [
        (
            "npm:left-pad",
            Some("tmp/extensions/npm/f35b2129/node_modules/left-pad"),
        ),
        (
            "npm:@scope/pkg@1.2.3",
            Some("tmp/extensions/npm/f35b2129/node_modules/@scope/pkg"),
        ),
        (
            "git:github.com/user/repo",
            Some("tmp/extensions/git-github.com/338a1076/user/repo"),
        ),
        (
            "git:github.com/user/repo@v1",
            Some("tmp/extensions/git-github.com/18093e51/user/repo"),
        ),
        (
            "https://github.com/user/repo@main",
            Some("tmp/extensions/git-github.com/244c3927/user/repo"),
        ),
        (
            "git:git@github.com:user/repo",
            Some("tmp/extensions/git-github.com/338a1076/user/repo"),
        ),
        ("./local", None),
    ];
    for (source, path) in expected {
        assert_eq!(
            temporary_install(agent, source),
            path.map(|p| agent.join(p)),
            "{source}"
        );
    }
}

/// A `-e npm:` source installed where Pi keeps it gives its extensions; one not installed
/// gives none and is said missing, as a command-line source.
#[test]
fn a_command_line_package_gives_its_extensions_or_is_missing() {
    let d = dirs();
    let root = temporary_install(&d.agent, "npm:greeter").unwrap();
    write(
        &root.join("package.json"),
        &json!({"name": "greeter", "version": "1.0.0"}).to_string(),
    );
    write(
        &root.join("extensions/greet.ts"),
        "export default () => {};\n",
    );
    let mut acc = Accumulator::default();
    assert_eq!(
        temporary(&d.agent, &d.home, "npm:greeter", &mut acc),
        Some(Ok(()))
    );
    let found: Vec<PathBuf> = acc
        .enabled(Kind::Extensions)
        .into_iter()
        .map(|r| r.path)
        .collect();
    assert_eq!(found, [root.join("extensions/greet.ts")]);

    let missing = temporary(&d.agent, &d.home, "npm:absent", &mut acc)
        .unwrap()
        .unwrap_err();
    assert_eq!(missing.scope, "temporary");
    assert!(missing.to_string().contains("-e npm:absent"), "{missing}");
    assert_eq!(temporary(&d.agent, &d.home, "./local.ts", &mut acc), None);
}
