//! A trial's confinement tried from the inside: its commands and its agent process reach for
//! keys, the network, host sockets, the user's files and other trials, through a whole trial
//! of the real binary; a run that cannot confine refuses to start.

use super::*;

use std::os::unix::fs::PermissionsExt;

mod mcp;

/// The mock answering `done` once, an eval environment calling it, and the suite of one task
/// that passes on that answer.
fn answered_once() -> (MockLlm, EvalEnv, PathBuf) {
    let mock = MockLlm::start(&json!([text_step("done")]));
    let env = EvalEnv::new(Some(&mock));
    let suite = answer_suite(&env);
    (mock, env, suite)
}

/// Whether bwrap confines here and this process is root: only a root `pi eval` hands its
/// agents to another user (says why not).
fn root_with_bwrap() -> bool {
    if !bwrap_usable() {
        return false;
    }
    if !nix::unistd::geteuid().is_root() {
        pi_testkit::skip("only a root pi eval hands its agents to another user");
        return false;
    }
    true
}

/// A `pi eval` that must have exited 0 (its stderr shown when it did not).
fn exited_0(ran: &std::process::Output) {
    assert_eq!(
        ran.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
}

/// `pi eval SUITE ARGS -q --out o` with `OPENAI_API_KEY` planted as `key`, which must exit 0:
/// its results.
fn eval_with_key(env: &EvalEnv, suite: &Path, args: &[&str], key: &str) -> Value {
    let mut words = vec![suite.to_str().unwrap()];
    words.extend(args);
    words.extend(["-q", "--out", "o"]);
    let ran = env
        .command(&words)
        .env("OPENAI_API_KEY", key)
        .output()
        .unwrap();
    exited_0(&ran);
    env.results("o")
}

/// The content of a trial's tool results, one a line.
fn tool_output(trial: &Value) -> String {
    trial["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .map(|m| m["content"].to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A temporary folder that lets no other user through (mode 700), as a checkout inside
/// `mktemp -d` is.
fn closed_folder() -> tempfile::TempDir {
    let folder = tempfile::tempdir().unwrap();
    std::fs::set_permissions(folder.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    folder
}

/// What the agent's commands could do in a trial run with `isolate`: the tool results' text,
/// the results file, and whether the file outside the workspace was written. The agent is told
/// to pass its credentials to its commands (`shellEnv.passCredentials`), so that only the
/// confinement keeps the key from them.
fn escape_attempt(isolate: &str) -> (String, Value, bool) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("escaped.txt");
    let command = format!(
        "echo \"key=[$OPENAI_API_KEY]\"; touch {0} && echo wrote-outside; (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo reached-network; echo finished",
        target.display()
    );
    let mock = MockLlm::start(&json!([
        tool_step("c1", "bash", json!({"command": command})),
        tool_step("c2", "read", json!({"path": "/etc/hostname"})),
        text_step("done"),
    ]));
    let env = EvalEnv::new(Some(&mock));
    let suite = env.write(
        "s/escape.toml",
        "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[defaults.settings]\nshellEnv = { passCredentials = true }\n\n[[task]]\nid = \"escape\"\nprompt = \"try\"\n\n[[task.check]]\nkind = \"command\"\nrun = \"test -z \\\"$OPENAI_API_KEY\\\"\"\n",
    );
    let results = eval_with_key(
        &env,
        &suite,
        &["--isolate", isolate],
        "sk-planted-eval-key-1234",
    );
    (tool_output(&results["trials"][0]), results, target.exists())
}

#[test]
fn confined_commands_cannot_read_keys_write_outside_or_reach_the_network() {
    if !bwrap_usable() {
        return;
    }
    let (transcript, results, escaped) = escape_attempt("bwrap");
    assert_eq!(results["isolation"], "bwrap");
    assert!(transcript.contains("key=[]"), "{transcript}");
    assert!(
        !transcript.contains("sk-planted"),
        "the key reached the command"
    );
    assert!(
        !transcript.contains("wrote-outside") && !escaped,
        "{transcript}"
    );
    assert!(!transcript.contains("reached-network"), "{transcript}");
    assert!(transcript.contains("finished"), "{transcript}");
    assert!(
        transcript.contains("Path is outside the working directory: /etc/hostname"),
        "the read tool is sandboxed: {transcript}"
    );
    assert_eq!(
        results["trials"][0]["status"], "passed",
        "the check saw no key either"
    );

    let (open, results, escaped) = escape_attempt("none");
    assert_eq!(results["isolation"], "none");
    assert!(
        open.contains("key=[<<secret-") && !open.contains("sk-planted-eval-key-1234"),
        "unconfined, the same command sees the key, which the report replaces: {open}"
    );
    assert!(open.contains("wrote-outside") && escaped);
    assert!(open.contains("reached-network"));
    assert_eq!(results["trials"][0]["status"], "failed");
}

#[test]
fn a_key_the_agent_read_and_repeated_reaches_no_report_and_no_cassette() {
    const KEY: &str = "sk-planted-eval-0123456789";
    let mut steps = Vec::new();
    steps.push(tool_step("c1", "read", json!({"path": "notes.txt"})));
    steps.push(text_step(&format!("The deploy key is {KEY}.")));
    let mock = MockLlm::start(&Value::Array(steps));
    let env = EvalEnv::new(Some(&mock));
    env.write(
        "suite/fixtures/notes/notes.txt",
        &format!("deploy key: {KEY}\n"),
    );
    let suite = env.write(
        "suite/leak.toml",
        r#"
[defaults]
models = ["mock/mock-model"]

[[task]]
id = "leak"
prompt = "What is the deploy key?"
fixture = "fixtures/notes"

[[task.check]]
kind = "text_contains"
text = "deploy key"
"#,
    );
    let out = env
        .command(&[
            suite.to_str().unwrap(),
            "--record",
            "cassettes",
            "--isolate",
            "none",
            "--out",
            "out",
            "--keep",
            env.path("work/kept").to_str().unwrap(),
            "-q",
        ])
        .env("ANTHROPIC_API_KEY", KEY)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let results = env.results("out");
    assert_eq!(verdicts(&results)[0].1, "passed", "{stderr}\n{results}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let reports = ["results.json", "junit.xml", "summary.md", "report.html"];
    for report in reports {
        assert!(env.path("work/out").join(report).is_file(), "{report}");
    }
    for (path, text) in files_under(&env.path("work")) {
        // The fixture the test planted the key in, and its copy in the kept workspace, and
        // Pi's own session files (they hold the conversation, as Pi writes it).
        let name = path.to_string_lossy();
        if name.ends_with("notes.txt") || name.contains("/sessions/") {
            continue;
        }
        assert!(!text.contains(KEY), "the key reached {}", path.display());
    }
}

#[test]
fn a_live_run_refuses_to_start_without_bwrap_unless_isolate_none_is_given() {
    let mock = MockLlm::start(&json!([text_step("done"), text_step("done")]));
    let env = EvalEnv::new(Some(&mock));
    let suite = answer_suite(&env);
    let suite = suite.to_str().unwrap();
    // A PATH without bwrap (bash is found in its usual place).
    let empty = env.path("empty-bin");
    std::fs::create_dir_all(&empty).unwrap();
    let without_bwrap = |args: &[&str]| {
        let out = env.command(args).env("PATH", &empty).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for cassettes in [&[][..], &["--record", "rec"], &["--once", "once"]] {
        let mut args = vec![suite, "-q", "--out", "refused"];
        args.extend(cassettes);
        let (code, stderr) = without_bwrap(&args);
        assert_eq!(code, 2, "{cassettes:?}: {stderr}");
        assert!(
            stderr.contains("bwrap")
                && stderr.contains("apt-get install bubblewrap")
                && stderr.contains("--isolate none"),
            "{cassettes:?}: {stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(!env.path("work/refused").exists(), "nothing ran");
        assert!(!env.path("work/rec").exists() && !env.path("work/once").exists());
    }
    assert!(mock.requests().is_empty(), "no trial started");

    let (code, stderr) = without_bwrap(&[
        suite,
        "--isolate",
        "none",
        "--record",
        "rec",
        "-q",
        "--out",
        "o",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(env.results("o")["isolation"], "none");
    assert_eq!(verdicts(&env.results("o"))[0].1, "passed");

    // A replay may run unconfined without bwrap, and says so.
    let (code, stderr) = without_bwrap(&[suite, "--replay", "rec", "--out", "r"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(env.results("r")["isolation"], "none");
    assert!(stderr.contains("unconfined"), "{stderr}");
}

#[test]
fn kept_trials_hold_no_auth_json() {
    let (_mock, env, suite) = answered_once();
    env.write(
        "agent/auth.json",
        "{\"other\": {\"type\": \"api_key\", \"key\": \"planted-auth-key-5678\"}}",
    );
    let suite = suite.to_str().unwrap();
    for (mode, out) in [("--record", "recorded"), ("--replay", "replayed")] {
        let ran = env.eval(&[
            suite,
            mode,
            "cass",
            "--isolate",
            "none",
            "--keep",
            out,
            "-q",
            "--out",
            out,
        ]);
        let results = env.results(out);
        assert_eq!(ran.code, 0, "{mode}: {}", results["trials"][0]["reason"]);
        assert_eq!(verdicts(&results)[0].1, "passed", "{mode}");
        let kept = files_under(&env.path("work").join(out));
        assert!(
            kept.iter().any(|(path, _)| path.ends_with("settings.json")),
            "{mode}: the trial's agent folder is kept: {kept:?}"
        );
        for (path, text) in &kept {
            assert!(!path.ends_with("auth.json"), "{mode}: {}", path.display());
            assert!(
                !text.contains("planted-auth-key"),
                "{mode}: {}",
                path.display()
            );
        }
    }
}

/// What a trial's commands could reach, under `isolate`: the tool results' text.
fn reach_attempt(isolate: &str) -> String {
    let env = EvalEnv::outside_tmp(None);
    let home_auth = env.write("home/.pi/agent/auth.json", "planted-home-auth");
    let agent_auth = env.write(
        "agent/auth.json",
        "{\"other\": {\"type\": \"api_key\", \"key\": \"planted-agent-auth\"}}",
    );
    let socket_path = env.path("host.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket_path).unwrap();
    let cassettes = env.path("work/cass");
    let suite_path = env.path("s/sealed.toml");
    let command = format!(
        "{{ for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < \"$f\"; done; }} 2>/dev/null | grep -a -q planted-eval-key && echo LEAK-ENV; \
         cat '{home}' '{agent}' '{suite}' 2>/dev/null | grep -a -q planted && echo LEAK-FILE; \
         ls -R '{cass}' 2>/dev/null | grep -a -q jsonl && echo LEAK-CASSETTES; \
         python3 -c \"import socket; s = socket.socket(socket.AF_UNIX); s.connect('{sock}'); print('LEAK-SOCKET')\" 2>/dev/null; \
         echo finished",
        home = home_auth.display(),
        agent = agent_auth.display(),
        suite = suite_path.display(),
        cass = cassettes.display(),
        sock = socket_path.display(),
    );
    let mock = MockLlm::start(&json!([
        tool_step("c1", "bash", json!({"command": command})),
        text_step("done"),
    ]));
    env.serve(&mock);
    let suite = env.write(
        "s/sealed.toml",
        "# planted-hidden-tests\n[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[task]]\nid = \"sealed\"\nprompt = \"try\"\n",
    );
    let ran = env
        .command(&[
            suite.to_str().unwrap(),
            "--isolate",
            isolate,
            "--record",
            "cass",
            "-q",
            "--out",
            "o",
        ])
        .env("OPENAI_API_KEY", "planted-eval-key-1234")
        .env("HOME", env.path("home"))
        .output()
        .unwrap();
    drop(listener);
    exited_0(&ran);
    let results = env.results("o");
    assert_eq!(results["isolation"], isolate);
    tool_output(&results["trials"][0])
}

#[test]
fn confined_commands_cannot_reach_keys_in_proc_host_sockets_or_the_users_files() {
    if !bwrap_usable() {
        return;
    }
    let sealed = reach_attempt("bwrap");
    assert!(sealed.contains("finished"), "{sealed}");
    assert!(!sealed.contains("LEAK"), "{sealed}");
    let open = reach_attempt("none");
    for leak in ["LEAK-ENV", "LEAK-FILE", "LEAK-CASSETTES"] {
        assert!(
            open.contains(leak),
            "unconfined, {leak} gets through: {open}"
        );
    }
}

/// What an `--agent` that is a script pretending to be Pi could do in a trial run with
/// `isolate`: the words its final message reports (`LEAK-...` for each thing it reached), and
/// whether the file it tried to write outside its workspace exists on the host (inside, the
/// path may fall in the sandbox's own `/tmp`, where writing it is harmless). It reads, by absolute path,
/// the real HOME's `~/.pi/agent/auth.json`, the suite file, a cassette beside the trial's own
/// and a workspace shaped like another trial's in the eval's temp folder, and writes outside
/// its workspace.
fn agent_escape_attempt(isolate: &str) -> (String, bool) {
    let env = EvalEnv::outside_tmp(None);
    // Traversable by anyone: an eval run as root runs its agent as an unprivileged user.
    std::fs::set_permissions(env.root.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let home_auth = env.write("home/.pi/agent/auth.json", "planted-home-auth");
    let cassette = env.write("work/cass/planted.jsonl", "planted-cassette");
    let other = env.write(
        "tmp/pi-eval-other/workspace/secret.txt",
        "planted-other-trial",
    );
    // A toolchain home with a registry token that every user may read: its mask is all that
    // hides it, and the agent may undo the mounts of its own sandbox.
    let cargo_token = env.write("cargo/credentials.toml", "planted-cargo-token");
    std::fs::create_dir_all(env.path("cargo/bin")).unwrap();
    let outside = env.path("escaped.txt");
    let suite = env.write(
        "s/agent.toml",
        "# planted-suite\n[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[task]]\nid = \"agent\"\nprompt = \"try\"\n\n[[task.check]]\nkind = \"text_contains\"\ntext = \"finished\"\n",
    );
    let reach = |path: &Path, leak: &str| {
        format!(
            "grep -q planted '{}' 2>/dev/null && out=\"$out {leak}\"\n",
            path.display()
        )
    };
    let script = format!(
        "#!/bin/bash\nout=\n{}{}{}{}touch '{}' 2>/dev/null\n\
         {{ : </dev/tty; }} 2>/dev/null && out=\"$out LEAK-TERMINAL\"\n\
         umount '{}' 2>/dev/null; grep -q planted '{}' 2>/dev/null && out=\"$out LEAK-CARGO-TOKEN\"\n\
         echo mine > inside.txt && out=\"$out wrote-workspace\"\n\
         printf '{{\"type\":\"message_end\",\"message\":{{\"role\":\"assistant\",\"content\":[{{\"type\":\"text\",\"text\":\"%s finished\"}}],\"stopReason\":\"stop\"}}}}\\n' \"$out\"\n",
        reach(&home_auth, "LEAK-HOME-AUTH"),
        reach(&suite, "LEAK-SUITE"),
        reach(&cassette, "LEAK-CASSETTES"),
        reach(&other, "LEAK-OTHER-TRIAL"),
        outside.display(),
        cargo_token.display(),
        cargo_token.display(),
    );
    let agent = env.write("fake-agent.sh", &script);
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut eval = env.command(&[
        suite.to_str().unwrap(),
        "--agent",
        agent.to_str().unwrap(),
        "--isolate",
        isolate,
        "--record",
        "cass",
        "-q",
        "--out",
        "o",
    ]);
    eval.env("TMPDIR", env.path("tmp"))
        .env("CARGO_HOME", env.path("cargo"))
        .env("OPENAI_API_KEY", "planted-eval-key-1234");
    let ran = in_a_terminal(&eval).output().unwrap();
    let output = String::from_utf8_lossy(&ran.stdout);
    let errors = String::from_utf8_lossy(&ran.stderr);
    assert_eq!(ran.status.code(), Some(0), "{output}{errors}");
    let results = env.results("o");
    assert_eq!(results["isolation"], isolate);
    let trial = &results["trials"][0];
    assert_eq!(trial["status"], "passed", "{trial}");
    (
        trial["finalText"].as_str().unwrap().to_owned(),
        outside.exists(),
    )
}

/// `command` run with a terminal of its own as its controlling terminal (a pseudo-terminal,
/// through Python's `pty`), as when a user runs it; its output (stdout and stderr) comes on
/// stdout.
fn in_a_terminal(command: &Command) -> Command {
    const RUN: &str = r#"import os, pty, sys
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
while True:
    try:
        data = os.read(fd, 65536)
    except OSError:
        break
    if not data:
        break
    os.write(1, data)
sys.exit(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
"#;
    let mut wrapped = Command::new("python3");
    wrapped
        .args(["-c", RUN])
        .arg(command.get_program())
        .args(command.get_args())
        .env_clear();
    for (name, value) in command.get_envs() {
        if let Some(value) = value {
            wrapped.env(name, value);
        }
    }
    if let Some(dir) = command.get_current_dir() {
        wrapped.current_dir(dir);
    }
    wrapped
}

#[test]
fn an_agent_process_cannot_read_keys_the_suite_cassettes_or_other_trials_nor_write_outside() {
    if !bwrap_usable() {
        return;
    }
    let (said, escaped) = agent_escape_attempt("bwrap");
    assert!(said.contains("wrote-workspace finished"), "{said}");
    assert!(!said.contains("LEAK"), "{said}");
    assert!(!escaped, "the agent wrote outside its workspace");
    let (open, escaped) = agent_escape_attempt("none");
    for leak in [
        "LEAK-HOME-AUTH",
        "LEAK-SUITE",
        "LEAK-CASSETTES",
        "LEAK-OTHER-TRIAL",
        "LEAK-TERMINAL",
        "LEAK-CARGO-TOKEN",
    ] {
        assert!(
            open.contains(leak),
            "unconfined, {leak} gets through: {open}"
        );
    }
    assert!(escaped);
}

#[test]
fn this_builds_pi_confined_as_the_agent_reaches_the_model_but_its_commands_see_no_key_or_network() {
    if !bwrap_usable() {
        return;
    }
    // A port on the host's loopback, which the agent could reach but its commands must not.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = format!(
        "echo \"key=[$OPENAI_API_KEY]\"; \
        {{ for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < \"$f\"; done; }} 2>/dev/null | grep -a -q 'planted-eval''-key' && echo LEAK-ENV; \
        (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo LEAK-NETWORK; \
        echo finished"
    );
    let mock = MockLlm::start(&json!([
        tool_step("c1", "bash", json!({"command": command})),
        text_step("done"),
    ]));
    let env = EvalEnv::outside_tmp(Some(&mock));
    let suite = env.write(
        "s/live.toml",
        "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[defaults.settings]\nshellEnv = { passCredentials = true }\n\n[[task]]\nid = \"live\"\nprompt = \"run it\"\n\n[[task.check]]\nkind = \"text_contains\"\ntext = \"done\"\n",
    );
    let agent = ["--agent", env.pi.to_str().unwrap(), "--isolate", "bwrap"];
    let results = eval_with_key(&env, &suite, &agent, "planted-eval-key-1234");
    let trial = &results["trials"][0];
    assert_eq!(
        trial["status"], "passed",
        "the agent reached the model: {trial}"
    );
    let output = tool_output(trial);
    assert!(output.contains("key=[]"), "{output}");
    assert!(output.contains("finished"), "{output}");
    assert!(!output.contains("LEAK"), "{output}");
    assert!(!trial.to_string().contains("planted-eval-key"), "{trial}");
    assert_eq!(mock.requests().len(), 2);
}

#[test]
fn a_live_run_refuses_to_start_where_an_agent_cannot_be_confined() {
    if !bwrap_usable() {
        return;
    }
    let (mock, env, suite) = answered_once();
    // bwrap confines commands here, but an agent's sandbox cannot start: its `setsid` fails,
    // as a sandbox would where the agent's user may not have a user namespace.
    let broken = env.write(
        "broken-bin/setsid",
        "#!/bin/sh\necho 'no agent sandbox here' >&2\nexit 1\n",
    );
    std::fs::set_permissions(&broken, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!(
        "{}:{}",
        env.path("broken-bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = env
        .command(&[suite.to_str().unwrap(), "-q", "--out", "refused"])
        .env("PATH", path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("an agent's sandbox")
            && stderr.contains("no agent sandbox here")
            && stderr.contains("--isolate none"),
        "{stderr}"
    );
    assert!(mock.requests().is_empty(), "no trial started");
}

#[test]
fn a_root_run_refuses_to_start_when_its_agent_user_cannot_reach_the_agent_program() {
    if !root_with_bwrap() {
        return;
    }
    let (mock, env, suite) = answered_once();
    // This build's pi at a path whose folder lets no other user through.
    let locked = closed_folder();
    let program = locked.path().join("pi");
    if std::fs::hard_link(env!("CARGO_BIN_EXE_pi"), &program).is_err() {
        std::fs::copy(env!("CARGO_BIN_EXE_pi"), &program).unwrap();
    }
    let out = env
        .command_of(
            &program,
            &[suite.to_str().unwrap(), "-q", "--out", "refused"],
        )
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&locked.path().display().to_string())
            && stderr.contains("chmod o+x")
            && stderr.contains("--isolate none"),
        "names the folder and both ways out: {stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(mock.requests().is_empty(), "no trial started");
    assert!(!env.path("work/refused").exists(), "nothing ran");
}

/// A root `pi eval` hands the trial's folders to its agents' unprivileged user; its checks,
/// run after the agent, must still write there (a test runner's cache, a temp file).
#[test]
fn the_checks_of_a_confined_trial_write_its_workspace_and_temp_folder() {
    if !bwrap_usable() {
        return;
    }
    let mock = MockLlm::start(&json!([text_step("done")]));
    let env = EvalEnv::new(Some(&mock));
    let suite = env.write(
        "s/writes.toml",
        "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[task]]\nid = \"writes\"\nprompt = \"say done\"\n\n[[task.check]]\nkind = \"command\"\nrun = \"mktemp -p \\\"$TMPDIR\\\" && mkdir -p .cache && touch .cache/made-by-check\"\n",
    );
    let ran = env.eval(&[suite.to_str().unwrap(), "-q", "--out", "o"]);
    let results = env.results("o");
    assert_eq!(
        verdicts(&results)[0].1,
        "passed",
        "{}\n{}",
        results["trials"][0],
        ran.stderr
    );
}

/// A root `pi eval` whose `--keep` folder lies below a folder its agents' user cannot pass
/// refuses before any trial starts, naming it, rather than erring in every trial; a cassette
/// folder there is fine, recorded and replayed (the agent sees its cassette at its place in a
/// view of its own).
#[test]
fn a_root_run_refuses_a_keep_folder_its_agents_user_cannot_reach() {
    if !root_with_bwrap() {
        return;
    }
    let (mock, env, suite) = answered_once();
    let suite = suite.to_str().unwrap();
    let locked = closed_folder();
    let inside = |name: &str| locked.path().join(name).to_str().unwrap().to_owned();
    let kept = env.eval(&[suite, "-q", "--out", "refused", "--keep", &inside("k")]);
    assert_eq!(kept.code, 2, "{}\n{}", kept.stdout, kept.stderr);
    assert!(
        kept.stderr.contains(&locked.path().display().to_string())
            && kept.stderr.contains("chmod o+x"),
        "names the folder: {}",
        kept.stderr
    );
    assert_eq!(kept.stderr.lines().count(), 1, "one line: {}", kept.stderr);
    assert!(mock.requests().is_empty(), "no trial started");

    let recorded = env.eval(&[suite, "-q", "--out", "o", "--record", &inside("c")]);
    assert_eq!(recorded.code, 0, "{}\n{}", recorded.stdout, recorded.stderr);
    assert!(locked
        .path()
        .join("c/answer/answer/mock/mock-model/0.jsonl")
        .is_file());
    // Replayed by agents of their own from there: each sees its cassette at its place.
    drop(mock);
    let replayed = env.eval(&[
        suite,
        "-q",
        "--out",
        "r",
        "--replay-processes",
        "--replay",
        &inside("c"),
    ]);
    assert_eq!(replayed.code, 0, "{}\n{}", replayed.stdout, replayed.stderr);
    assert_eq!(verdicts(&env.results("r"))[0].1, "passed");
}
