//! A task's MCP servers and the trial's confinement: what of the host their entries bring into
//! the agent's sandbox, whether their programs are there at all, and who starts them (the
//! agent, never its judges).

use super::*;

/// A copy of the `pi-mcp` crate's test server (a stdio MCP server) in a folder every user
/// reaches (a root eval's agents run as another user), and the folder that holds it.
fn test_server() -> (tempfile::TempDir, PathBuf) {
    let folder = tempfile::Builder::new().prefix("pi-mcp").tempdir().unwrap();
    std::fs::set_permissions(folder.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let server = folder.path().join("mcp-server");
    std::fs::copy(
        pi_testkit::workspace_binary("pi-mcp", "pi-mcp-test-server"),
        &server,
    )
    .unwrap();
    (folder, server)
}

/// A suite of one task `leak` whose MCP server `x` is the test server run with `args`, run
/// with an `--agent` that is a script pretending to be Pi (an agent whose tools read any path,
/// as Pi 1.5.2's `read` does): it reads `secret`, and looks for the host's `/var` (which no
/// view holds), and says `LEAK-...` in its final message for what it reached. The eval's exit code, its stderr, and the trial's final text when one ran.
fn read_through_mcp_args(env: &EvalEnv, server: &Path, args: &[&Path], secret: &Path) -> Ran {
    let script = format!(
        r#"#!/bin/bash
out=
grep -q planted '{}' 2>/dev/null && out=LEAK-HOME-AUTH
[ -d /var ] && out="$out LEAK-HOST-ROOT"
printf '{{"type":"message_end","message":{{"role":"assistant","content":[{{"type":"text","text":"%s finished"}}],"stopReason":"stop"}}}}\n' "$out"
"#,
        secret.display()
    );
    let agent = env.write("fake-agent.sh", &script);
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let words: Vec<String> = args
        .iter()
        .map(|a| format!("{:?}", a.to_str().unwrap()))
        .collect();
    let suite = env.write(
        "s/leak.toml",
        &format!(
            "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[task]]\nid = \"leak\"\nprompt = \"read it\"\n\n[task.agent.mcp_servers.x]\ncommand = {:?}\nargs = [{}]\n",
            server.to_str().unwrap(),
            words.join(", ")
        ),
    );
    let _ = std::fs::remove_dir_all(env.path("work/o"));
    let ran = env
        .command(&[
            suite.to_str().unwrap(),
            "--agent",
            agent.to_str().unwrap(),
            "--isolate",
            "bwrap",
            "-q",
            "--out",
            "o",
        ])
        .output()
        .unwrap();
    let results = std::fs::read_to_string(env.path("work/o/results.json"))
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok());
    Ran {
        code: ran.status.code().unwrap_or(-1),
        stdout: results.map_or_else(String::new, |r| r["trials"][0].to_string()),
        stderr: String::from_utf8_lossy(&ran.stderr).into_owned(),
    }
}

/// A hostile suite names the host's root, the user's HOME, the user's Pi folder (its
/// `auth.json`) or a dotfile of HOME (`~/.npmrc`) among its MCP server's arguments, so that
/// the agent's sandbox would bind them read-only: the agent must never see the host's root or
/// the keys planted in `~/.pi/agent/auth.json` and `~/.npmrc`, and `pi eval` refuses the suite
/// before any trial, naming the task and the server.
#[test]
fn an_mcp_servers_arguments_never_bring_the_host_into_the_agents_sandbox() {
    if !bwrap_usable() {
        return;
    }
    let (_folder, server) = test_server();
    let env = EvalEnv::outside_tmp(None);
    std::fs::set_permissions(env.root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let home = env.path("home");
    let secret = env.write("home/.pi/agent/auth.json", "planted-home-auth-key");
    for folder in [&home, &env.path("home/.pi"), &env.path("home/.pi/agent")] {
        std::fs::set_permissions(folder, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let npmrc = env.write("home/.npmrc", "//registry/:_authToken=planted-npm-token");
    for (word, secret) in [
        (Path::new("/"), &secret),
        (&home, &secret),
        (&secret, &secret),
        (&npmrc, &npmrc),
    ] {
        let args = [word];
        let ran = read_through_mcp_args(&env, &server, &args, secret);
        assert!(
            !ran.stdout.contains("LEAK"),
            "{args:?}: the agent reached the host: {}",
            ran.stdout
        );
        assert_eq!(ran.code, 2, "{args:?}: {}", ran.stderr);
        assert!(
            ran.stderr
                .contains("task `leak`: field `agent.mcp_servers`: server `x`:"),
            "{args:?}: {}",
            ran.stderr
        );
        assert!(!env.path("work/o/results.json").exists(), "{args:?}");
    }
}

/// An MCP server whose program its agent could not start (not on the `PATH`, not executable,
/// or, for a root eval, in a folder its agents' user cannot enter) is one message before any
/// trial, naming the suite, the task and the server, and why.
#[test]
fn pi_eval_says_which_mcp_server_its_agent_cannot_start_before_any_trial() {
    if !bwrap_usable() {
        return;
    }
    let mock = MockLlm::start(&json!([text_step("done")]));
    let env = EvalEnv::outside_tmp(Some(&mock));
    std::fs::set_permissions(env.root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let plain = env.write("plain-file", "not a program");
    let closed = closed_folder();
    let hidden = closed.path().join("mcp-server");
    std::fs::copy(
        pi_testkit::workspace_binary("pi-mcp", "pi-mcp-test-server"),
        &hidden,
    )
    .unwrap();
    let mut cases = vec![
        (
            "no-such-mcp-server-program".to_owned(),
            "is not on the PATH the agent gets".to_owned(),
        ),
        (
            plain.display().to_string(),
            "is not an executable file".to_owned(),
        ),
    ];
    if nix::unistd::geteuid().is_root() {
        cases.push((
            hidden.display().to_string(),
            format!("{} lets no other user through", closed.path().display()),
        ));
    }
    for (command, why) in cases {
        let suite = env.write(
            "s/unstartable.toml",
            &format!(
                "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[task]]\nid = \"t\"\nprompt = \"hi\"\n\n[task.agent.mcp_servers.x]\ncommand = {command:?}\n"
            ),
        );
        let ran = env.eval(&[
            suite.to_str().unwrap(),
            "--isolate",
            "bwrap",
            "-q",
            "--out",
            "o",
        ]);
        assert_eq!(ran.code, 2, "{command}: {}", ran.stderr);
        let said = "suite `unstartable`: task `t`: MCP server `x`: its agent cannot start it:";
        assert!(ran.stderr.contains(said), "{command}: {}", ran.stderr);
        assert!(ran.stderr.contains(&why), "{command}: {}", ran.stderr);
    }
    assert!(mock.requests().is_empty());
}

/// A task's MCP servers are its agent's: its judges (a second run of the agent command in the
/// same agent folder) start none of them. The server, started through `sh`, adds a line to a
/// file in the trial's home each time it starts; after a trial whose agent answered and whose
/// judge passed it, the kept home holds one line: the agent's start.
#[test]
fn a_judge_starts_none_of_its_tasks_mcp_servers() {
    if !bwrap_usable() {
        return;
    }
    let (_folder, server) = test_server();
    let mock = MockLlm::start(&json!([
        text_step("Hello, Ada!"),
        text_step("PASS it greets Ada"),
    ]));
    let env = EvalEnv::outside_tmp(Some(&mock));
    std::fs::set_permissions(env.root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let suite = env.write(
        "s/judged.toml",
        &format!(
            "[defaults]\nmodels = [\"mock/mock-model\"]\njudge = \"mock/mock-model\"\n\n[[task]]\nid = \"t\"\nprompt = \"greet Ada\"\n\n[[task.check]]\nkind = \"judge\"\nrubric = \"greets Ada\"\n\n[task.agent.mcp_servers.t]\ncommand = \"sh\"\nargs = [\"-c\", \"echo started >> \\\"$HOME/mcp-starts\\\"; exec \\\"$0\\\"\", {:?}]\nexposure = \"direct\"\n",
            server.to_str().unwrap()
        ),
    );
    let ran = env.eval(&[
        suite.to_str().unwrap(),
        "--isolate",
        "bwrap",
        "--keep",
        "k",
        "-q",
        "--out",
        "o",
    ]);
    assert_eq!(ran.code, 0, "{}{}", ran.stdout, ran.stderr);
    let trial = env.results("o")["trials"][0].clone();
    assert_eq!(trial["status"], "passed", "{trial}");
    assert_eq!(
        mock.requests().len(),
        2,
        "the agent and its judge called the model"
    );
    let workspace = PathBuf::from(trial["workspace"].as_str().unwrap());
    let starts = std::fs::read_to_string(workspace.with_file_name("home").join("mcp-starts"))
        .unwrap_or_default();
    assert_eq!(starts, "started\n", "the server's starts: {trial}");
}
