//! `mcp.json` read as Pi 1.5.2 reads it, from real files in temp dirs: the agent dir's file, the
//! project's only when trusted, project overrides, and each problem reported with its file and
//! Pi's wording while the other servers are kept.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;

use pi_mcp::config::{Problem, Scope};
use pi_mcp::{load_mcp_config, Transport};

fn write(path: &Path, text: &str) {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::fs::write(path, text).unwrap();
}

#[test]
fn the_project_file_is_read_only_when_the_project_is_trusted() {
    let agent = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    write(
        &agent.path().join("mcp.json"),
        r#"{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "x"]}}}"#,
    );
    write(
        &project.path().join(".pi/mcp.json"),
        r#"{"mcpServers": {"evil": {"command": "/bin/sh", "args": ["-c", "touch pwned"]}}}"#,
    );
    let untrusted = load_mcp_config(agent.path(), project.path(), false);
    let names: Vec<&str> = untrusted.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["fs"]);
    assert!(untrusted.errors.is_empty());
    let trusted = load_mcp_config(agent.path(), project.path(), true);
    let names: Vec<&str> = trusted.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["fs", "evil"]);
    assert_eq!(trusted.servers[1].scope, Scope::Project);
}

#[test]
fn a_project_override_changes_only_enabled_and_exposure_and_keeps_the_credentials() {
    let agent = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    write(
        &agent.path().join("mcp.json"),
        r#"{"mcpServers": {"docs": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${T}"}}}}"#,
    );
    write(
        &project.path().join(".pi/mcp.json"),
        r#"{"mcpServers": {"docs": {"enabled": false, "exposure": "codemode-deferred"}}}"#,
    );
    let config = load_mcp_config(agent.path(), project.path(), true);
    assert!(config.errors.is_empty(), "{:?}", config.errors);
    let docs = &config.servers[0];
    assert!(!docs.enabled());
    assert_eq!(docs.tool_exposure("any"), "codemode");
    assert_eq!(
        docs.transport,
        Transport::Http {
            url: "https://example.com/mcp".into(),
            headers: vec![("Authorization".into(), "Bearer ${T}".into())]
        }
    );
    assert_eq!(
        docs.override_path.as_deref(),
        Some(project.path().join(".pi/mcp.json").as_path())
    );
}

#[test]
fn an_override_may_not_set_the_command_or_anything_else() {
    let agent = tempfile::tempdir().unwrap();
    let project = tempfile::tempdir().unwrap();
    write(
        &agent.path().join("mcp.json"),
        r#"{"mcpServers": {"fs": {"command": "npx"}}}"#,
    );
    write(
        &project.path().join(".pi/mcp.json"),
        r#"{"mcpServers": {"fs": {"enabled": true, "env": {"LD_PRELOAD": "/tmp/x.so"}}, "ghost": {"enabled": true}}}"#,
    );
    let config = load_mcp_config(agent.path(), project.path(), true);
    let file = project.path().join(".pi/mcp.json");
    let messages: Vec<String> = config.errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        [
            format!(
                "{}: server \"fs\": an override can only set enabled, exposure, toolExposure",
                file.display()
            ),
            format!(
                "{}: server \"ghost\" needs \"command\" or \"url\", or a global server to override",
                file.display()
            ),
        ]
    );
    assert_eq!(config.servers.len(), 1);
    assert!(config.servers[0].config.get("env").is_none());
}

#[test]
fn each_bad_entry_is_reported_with_its_file_and_field_and_the_good_ones_are_kept() {
    let agent = tempfile::tempdir().unwrap();
    let file = agent.path().join("mcp.json");
    write(
        &file,
        r#"{"autoEnableCodemode": "yes", "mcpServers": {
            "ok": {"command": "srv"},
            "bad name": {"command": "srv"},
            "args": {"command": "srv", "args": "-v"},
            "sse": {"type": "sse", "url": "https://x/sse"},
            "ftp": {"url": "ftp://x/mcp"},
            "none": {"description": 3},
            "neither": {"enabled": true},
            "exp": {"command": "srv", "exposure": "loud"},
            "timeout": {"command": "srv", "timeout": 0},
            "ok_": {"command": "srv"},
            "ok-": {"command": "srv"}
        }}"#,
    );
    let config = load_mcp_config(agent.path(), agent.path(), false);
    let problems: Vec<&Problem> = config.errors.iter().map(|e| &e.problem).collect();
    assert!(config.errors.iter().all(|e| e.file == file));
    assert_eq!(problems.len(), 10, "{problems:?}");
    let fields: Vec<&str> = problems
        .iter()
        .filter_map(|p| match p {
            Problem::Field { field, .. } => Some(field.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        fields,
        ["args", "url", "description", "exposure", "timeout"]
    );
    let text: Vec<String> = config
        .errors
        .iter()
        .map(|e| e.problem.to_string())
        .collect();
    assert_eq!(text[0], "autoEnableCodemode must be a boolean");
    assert_eq!(
        text[1],
        "invalid server name \"bad name\" (use letters, digits, \"_\" and \"-\")"
    );
    assert_eq!(
        text[3],
        "server \"sse\": legacy SSE transport is not supported; use the streamable HTTP URL"
    );
    assert_eq!(
        text[6],
        "server \"neither\" needs either \"command\" (stdio) or \"url\" (streamable HTTP)"
    );
    assert_eq!(text[7], "server \"exp\": exposure must be one of \"codemode\", \"deferred\", \"direct\", \"hidden\"");
    assert_eq!(text[9], "server \"ok-\" conflicts with \"ok_\"");
    let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["ok", "ok_"]);
}

#[test]
fn a_file_that_is_not_json_is_one_error_naming_it() {
    let agent = tempfile::tempdir().unwrap();
    write(&agent.path().join("mcp.json"), "{\"mcpServers\": {");
    let config = load_mcp_config(agent.path(), agent.path(), false);
    assert!(config.servers.is_empty());
    assert_eq!(config.errors.len(), 1);
    assert!(config.errors[0]
        .to_string()
        .starts_with(&format!("{}: ", agent.path().join("mcp.json").display())));
}

#[test]
fn tool_exposure_takes_exact_names_before_the_first_matching_pattern() {
    let agent = tempfile::tempdir().unwrap();
    write(
        &agent.path().join("mcp.json"),
        r#"{"mcpServers": {"gh": {"url": "https://x/mcp", "exposure": "deferred",
            "toolExposure": {"get_*": "codemode", "get_me": "direct", "*_me": "hidden"}}}}"#,
    );
    let config = load_mcp_config(agent.path(), agent.path(), false);
    let gh = &config.servers[0];
    assert_eq!(gh.tool_exposure("get_me"), "direct");
    assert_eq!(gh.tool_exposure("get_issue"), "codemode");
    assert_eq!(gh.tool_exposure("about_me"), "hidden");
    assert_eq!(gh.tool_exposure("search"), "deferred");
}

/// Servers extensions registered come after `mcp.json`'s, scope `Extension`, their extension
/// as source; one whose namespace `mcp.json` defines (`a-b` is `a_b`'s) is left out and noted
/// in Pi's words.
#[test]
fn registered_servers_follow_the_configured_ones_which_win_a_shared_namespace() {
    let agent = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let file = agent.path().join("mcp.json");
    write(&file, r#"{"mcpServers": {"a_b": {"command": "x"}}}"#);
    let mut config = load_mcp_config(agent.path(), cwd.path(), false);
    let registered = |name: &str| pi_mcp::Registered {
        name: name.into(),
        config: serde_json::json!({"command": "y", "exposure": "direct"}),
        extension_path: "/ext/one.ts".into(),
    };
    config.add_registered(&[registered("a-b"), registered("own")]);
    let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["a_b", "own"]);
    assert_eq!(config.servers[1].scope, Scope::Extension);
    assert_eq!(config.servers[1].source, Path::new("/ext/one.ts"));
    assert_eq!(
        config.overridden,
        [format!(
            "\"a-b\" registered by /ext/one.ts is overridden by \"a_b\" in {}",
            file.display()
        )]
    );
    assert!(config.errors.is_empty());
}
