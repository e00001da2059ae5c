//! Suites whose tasks come from a data file (`[[dataset]]`, one task a row), tagged tasks and
//! `--filter tag:`, and the run-wide cost limit: the real `pi eval` against the kit's mock
//! model, its requests read back to see what reached the model and how many trials ran.

use pi_testkit::MockLlm;
use serde_json::{json, Value};

use std::os::unix::fs::PermissionsExt;

use super::{text_step, tool_step, EvalEnv};

/// A suite in `s/` whose one dataset reads `file` (written with `rows`).
fn dataset_suite(env: &EvalEnv, file: &str, rows: &str, template: &str) -> String {
    env.write(&format!("s/{file}"), rows);
    env.write(
        "s/data.toml",
        &format!(
            "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[dataset]]\nfile = \"{file}\"\n{template}\n"
        ),
    )
    .to_str()
    .unwrap()
    .to_owned()
}

/// The text of the user messages the mock received, in order.
fn prompts(mock: &MockLlm) -> Vec<String> {
    mock.requests()
        .iter()
        .flat_map(|body| body["messages"].as_array().cloned().unwrap_or_default())
        .filter(|m| m["role"] == "user")
        .map(|m| match &m["content"] {
            Value::String(s) => s.clone(),
            other => other
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|part| part["text"].as_str())
                .collect(),
        })
        .collect()
}

const TEMPLATE: &str = "id = \"{{id}}\"\nprompt = \"Say {{word}}\"\ntags = [\"{{kind}}\"]\nmetadata = { difficulty = \"{{level}}\" }\n\n[[dataset.check]]\nkind = \"text_contains\"\ntext = \"{{word}}\"\n";

#[test]
fn each_row_is_a_task_whose_values_are_text_and_whose_tags_select_and_report() {
    // The trials run at once, in either order: one answer that passes both.
    let answer = text_step("alpha {{id}} beta");
    let mock = MockLlm::start(&json!([answer, answer]));
    let env = EvalEnv::new(Some(&mock));
    let rows = concat!(
        "{\"id\": \"a\", \"word\": \"alpha\", \"kind\": \"easy\", \"level\": 1}\n",
        "\n",
        "{\"id\": \"b\", \"word\": \"{{id}} beta\", \"kind\": \"hard\", \"level\": 3}\n",
    );
    let suite = dataset_suite(&env, "rows.jsonl", rows, TEMPLATE);
    let ran = env.eval(&[&suite, "-q", "--out", "o", "--isolate", "none"]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let mut sent = prompts(&mock);
    sent.sort();
    assert_eq!(
        sent,
        ["Say alpha", "Say {{id}} beta"],
        "a value holding a placeholder is inserted as it is"
    );
    let results = env.results("o");
    let trials = results["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 2);
    assert_eq!(trials[0]["task"], "a");
    assert_eq!(trials[0]["status"], "passed");
    assert_eq!(trials[0]["tags"], json!(["easy"]));
    assert_eq!(trials[0]["metadata"], json!({"difficulty": "1"}));
    assert_eq!(trials[1]["tags"], json!(["hard"]));
    assert_eq!(trials[1]["status"], "passed");
    assert_eq!(
        trials[1]["checks"][0]["name"], "final text contains \"{{id}} beta\"",
        "checks are filled from the row too: {}",
        trials[1]
    );
    let summary = std::fs::read_to_string(env.path("work/o/summary.md")).unwrap();
    assert!(summary.contains("| easy |"), "a per-tag table: {summary}");
    assert!(summary.contains("| hard |"), "{summary}");

    let listed = env.eval(&[&suite, "--list", "--filter", "tag:hard"]);
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert_eq!(listed.stdout.trim(), "data/b/mock/mock-model/0");
    let listed = env.eval(&[&suite, "--list", "--filter", "!tag:hard"]);
    assert_eq!(listed.stdout.trim(), "data/a/mock/mock-model/0");
}

#[test]
fn a_row_whose_id_climbs_out_is_refused_naming_the_file_and_row() {
    let env = EvalEnv::new(None);
    let rows = "{\"id\": \"ok\", \"word\": \"x\", \"kind\": \"k\", \"level\": 1}\n{\"id\": \"../../escape\", \"word\": \"x\", \"kind\": \"k\", \"level\": 1}\n";
    let suite = dataset_suite(&env, "rows.jsonl", rows, TEMPLATE);
    let ran = env.eval(&[&suite, "--list"]);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("rows.jsonl:2") && ran.stderr.contains("field `id`"),
        "{}",
        ran.stderr
    );
    assert!(!env.path("escape").exists());
}

#[test]
fn a_placeholder_naming_no_column_is_an_error_not_an_empty_string() {
    let env = EvalEnv::new(None);
    let rows = "{\"id\": \"a\", \"word\": \"x\", \"kind\": \"k\", \"level\": 1}\n";
    let template = "id = \"{{id}}\"\nprompt = \"Say {{wrod}}\"\n";
    let suite = dataset_suite(&env, "rows.jsonl", rows, template);
    let ran = env.eval(&[&suite, "--list"]);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("rows.jsonl:1") && ran.stderr.contains("`wrod`"),
        "{}",
        ran.stderr
    );
}

#[test]
fn csv_rows_keep_quoted_commas_quotes_and_newlines() {
    let mock = MockLlm::start(&json!([text_step("one"), text_step("two")]));
    let env = EvalEnv::new(Some(&mock));
    let rows =
        "id,word,kind,level\r\nfirst,\"a, b\",k,1\r\nsecond,\"line one\nline \"\"two\"\"\",k,2\r\n";
    let suite = dataset_suite(&env, "rows.csv", rows, TEMPLATE);
    let ran = env.eval(&[&suite, "-q", "--out", "o", "--isolate", "none"]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let mut sent = prompts(&mock);
    sent.sort();
    assert_eq!(sent, ["Say a, b", "Say line one\nline \"two\""]);
    let tasks: Vec<Value> = env.results("o")["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["task"].clone())
        .collect();
    assert_eq!(tasks, [json!("first"), json!("second")]);
}

#[test]
fn a_csv_row_with_a_missing_field_names_its_line() {
    let env = EvalEnv::new(None);
    let rows = "id,word,kind,level\nfirst,\"a\nb\",k,1\nsecond,x,k\n";
    let suite = dataset_suite(&env, "rows.csv", rows, TEMPLATE);
    let ran = env.eval(&[&suite, "--list"]);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(ran.stderr.contains("rows.csv:4"), "{}", ran.stderr);
}

#[test]
fn the_cost_limit_starts_no_trial_once_reached_and_resume_finishes_the_run() {
    // Each answer reports a million input tokens: one dollar at the mock model's price (and
    // more than its context window, so compaction, which would ask the model, is off).
    let answer = json!({"text": ["done"], "usage": {"input": 1_000_000, "output": 0}});
    let mock = MockLlm::start(&Value::Array(vec![answer; 5]));
    let env = EvalEnv::new(Some(&mock));
    let suite = env.write(
        "s/cost.toml",
        "[defaults]\nmodels = [\"mock/mock-model\"]\ntrials = 5\nsettings = { compaction = { enabled = false } }\n\n[[task]]\nid = \"t\"\nprompt = \"go\"\n\n[[task.check]]\nkind = \"text_contains\"\ntext = \"done\"\n",
    );
    let suite = suite.to_str().unwrap();
    let args = [
        suite,
        "-q",
        "--out",
        "o",
        "--jobs",
        "1",
        "--isolate",
        "none",
        "--max-cost",
        "2",
    ];
    let ran = env.eval(&args);
    assert_eq!(ran.code, 3, "the run is incomplete: {}", ran.stderr);
    assert_eq!(mock.requests().len(), 2, "no trial started after $2");
    let results = env.results("o");
    assert_eq!(results["trials"].as_array().unwrap().len(), 2);
    assert_eq!(results["planned"], 5);
    assert_eq!(results["stopped"], "cost limit $2.00 reached");
    assert!(
        ran.stderr.contains("cost limit $2.00 reached"),
        "{}",
        ran.stderr
    );
    let summary = std::fs::read_to_string(env.path("work/o/summary.md")).unwrap();
    assert!(
        summary.contains("**Stopped: cost limit $2.00 reached**: 2 of 5 planned trials ran"),
        "{summary}"
    );

    // The $2 the kept trials spent counts: resumed with the same limit, nothing more is spent.
    let resumed = env.eval(&["--resume", "o"]);
    assert_eq!(resumed.code, 3, "{}", resumed.stderr);
    assert_eq!(mock.requests().len(), 2, "no fresh budget on resume");
    assert_eq!(env.results("o")["trials"].as_array().unwrap().len(), 2);
    assert!(
        resumed.stderr.contains("--max-cost"),
        "says how to go on: {}",
        resumed.stderr
    );
    let refused = env.eval(&["--resume", "o", "--max-cost", "-1"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("dollars"), "{}", refused.stderr);
    // A higher limit is the whole run's, and later resumes keep it.
    let resumed = env.eval(&["--resume", "o", "--max-cost", "4"]);
    assert_eq!(resumed.code, 3, "{}", resumed.stderr);
    assert_eq!(mock.requests().len(), 4);
    assert_eq!(env.results("o")["stopped"], "cost limit $4.00 reached");
    let resumed = env.eval(&["--resume", "o"]);
    assert_eq!(resumed.code, 3, "{}", resumed.stderr);
    assert_eq!(mock.requests().len(), 4);
    let resumed = env.eval(&["--resume", "o", "--max-cost", "10"]);
    assert_eq!(resumed.code, 0, "{}", resumed.stderr);
    assert_eq!(mock.requests().len(), 5);
    let results = env.results("o");
    assert_eq!(results["trials"].as_array().unwrap().len(), 5);
    assert!(results.get("stopped").is_none(), "{results}");
}

#[test]
fn a_hit_trial_limit_is_named_in_the_summary() {
    let answer = json!({"text": ["done"], "usage": {"input": 1_000_000, "output": 0}});
    let mock = MockLlm::start(&json!([answer]));
    let env = EvalEnv::new(Some(&mock));
    let suite = env.write(
        "s/lim.toml",
        "[defaults]\nmodels = [\"mock/mock-model\"]\nsettings = { compaction = { enabled = false } }\n\n[[task]]\nid = \"t\"\nprompt = \"go\"\nlimits = { cost = 0.5 }\n",
    );
    let ran = env.eval(&[
        suite.to_str().unwrap(),
        "--out",
        "o",
        "--isolate",
        "none",
        "-q",
    ]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let trial = env.results("o")["trials"][0].clone();
    assert_eq!(trial["status"], "limit", "{trial}");
    let summary = std::fs::read_to_string(env.path("work/o/summary.md")).unwrap();
    assert!(
        summary.contains("trial 0: limit — cost limit: $1.0000, more than $0.5"),
        "{summary}"
    );
}

/// A one-task suite whose `[task.agent]` table is `agent`, for `pi eval --list`'s checks.
fn agent_suite(env: &EvalEnv, agent: &str) -> String {
    env.write(
        "s/agent.toml",
        &format!(
            "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[task]]\nid = \"t\"\nprompt = \"go\"\n\n[task.agent]\n{agent}\n"
        ),
    )
    .to_str()
    .unwrap()
    .to_owned()
}

#[test]
fn an_agent_env_naming_a_key_or_the_harnesss_variables_is_refused() {
    let env = EvalEnv::new(None);
    for (agent, named) in [
        (
            "env = { OPENAI_API_KEY = \"sk-planted\" }",
            "OPENAI_API_KEY",
        ),
        ("env = { PATH = \"/tmp/evil\" }", "PATH"),
        ("env = { PI_TOOLS_SHELL = \"/bin/sh\" }", "PI_TOOLS_SHELL"),
    ] {
        let suite = agent_suite(&env, agent);
        let ran = env.eval(&[&suite, "--list"]);
        assert_eq!(ran.code, 2, "{agent}: {}", ran.stderr);
        assert!(
            ran.stderr.contains("field `agent.env`") && ran.stderr.contains(named),
            "{}",
            ran.stderr
        );
        assert!(!ran.stderr.contains("sk-planted"), "{}", ran.stderr);
    }
}

#[test]
fn extra_agent_flags_that_take_the_trial_away_are_refused() {
    let env = EvalEnv::new(None);
    for flag in [
        "--no-session",
        "--session=/tmp/s.jsonl",
        "--api-key",
        "-nt",
        "--mode",
    ] {
        let suite = agent_suite(&env, &format!("args = [\"{flag}\"]"));
        let ran = env.eval(&[&suite, "--list"]);
        assert_eq!(ran.code, 2, "{flag}: {}", ran.stderr);
        assert!(ran.stderr.contains("field `agent.args`"), "{}", ran.stderr);
    }
}

#[test]
fn a_tasks_system_prompt_text_flags_and_env_reach_its_agent_and_its_replay_reproduces() {
    let script = json!([
        {"tool_calls": [{"id": "c1", "name": "bash", "arguments": {"command": "printf '%s' \"$EVAL_GREETING\" > env.txt"}}]},
        text_step("done"),
    ]);
    let mock = MockLlm::start(&script);
    let env = EvalEnv::new(Some(&mock));
    // Under `--isolate none` the agent's commands inherit its environment, which shows the
    // variable reached the agent; under bwrap they would see none of it.
    let suite = agent_suite(
        &env,
        "args = [\"--no-skills\"]\nenv = { EVAL_GREETING = \"hello from the suite\" }\nappend_system_prompt = \"Always answer in French.\"\n\n[[task.check]]\nkind = \"text_contains\"\ntext = \"done\"",
    );
    let recorded = env.eval(&[
        &suite,
        "-q",
        "--out",
        "rec",
        "--record",
        "cassettes",
        "--isolate",
        "none",
        "--keep",
        "kept",
    ]);
    assert_eq!(recorded.code, 0, "{}", recorded.stderr);
    assert_eq!(env.results("rec")["trials"][0]["status"], "passed");
    let written = std::fs::read_to_string(
        env.path("work/kept/agent__t__mock__mock-model__0/workspace/env.txt"),
    )
    .unwrap();
    assert_eq!(written, "hello from the suite");
    let system = mock.requests()[0]["messages"][0]["content"].to_string();
    assert!(
        system.contains("Always answer in French."),
        "the appended text reaches the model: {system}"
    );
    drop(mock);
    let replayed = env.eval(&[&suite, "-q", "--out", "rep", "--replay", "cassettes"]);
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    let trial = env.results("rep")["trials"][0].clone();
    assert_eq!(trial["status"], "passed", "{trial}");
    assert_eq!(
        trial["transcript"],
        env.results("rec")["trials"][0]["transcript"]
    );
    // A replay runs the recorded commands again, unconfined as recorded: they see the task's
    // variables as the live run's did, whether the replay runs inside `pi eval` or in an agent
    // process of its own.
    for (out, how) in [("in", None), ("own", Some("--replay-processes"))] {
        let kept = format!("kept-{out}");
        let mut args = vec![
            suite.as_str(),
            "-q",
            "--out",
            out,
            "--replay",
            "cassettes",
            "--isolate",
            "none",
            "--keep",
            &kept,
        ];
        args.extend(how);
        let replayed = env.eval(&args);
        assert_eq!(replayed.code, 0, "{}", replayed.stderr);
        let written = std::fs::read_to_string(env.path(&format!(
            "work/{kept}/agent__t__mock__mock-model__0/workspace/env.txt"
        )))
        .unwrap();
        assert_eq!(written, "hello from the suite", "replayed {how:?}");
    }
}

#[test]
fn a_tasks_context_file_reaches_the_system_prompt_and_its_replay_reproduces() {
    let mock = MockLlm::start(&json!([text_step("done")]));
    let env = EvalEnv::new(Some(&mock));
    env.write("s/context/rules.md", "Project rule: tabs, never spaces.\n");
    let suite = agent_suite(&env, "context_file = \"context/rules.md\"");
    let recorded = env.eval(&[&suite, "-q", "--out", "rec", "--record", "cassettes"]);
    assert_eq!(recorded.code, 0, "{}", recorded.stderr);
    let system = mock.requests()[0]["messages"][0]["content"].to_string();
    assert!(
        system.contains("Project rule: tabs, never spaces."),
        "the context file reaches the model: {system}"
    );
    drop(mock);
    let replayed = env.eval(&[&suite, "-q", "--out", "rep", "--replay", "cassettes"]);
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    let trial = env.results("rep")["trials"][0].clone();
    assert_eq!(trial["status"], "passed", "{trial}");

    let missing = agent_suite(&env, "context_file = \"context/nothing.md\"");
    let ran = env.eval(&[&missing, "--list"]);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(
        ran.stderr.contains("field `agent.context_file`"),
        "{}",
        ran.stderr
    );
}

#[test]
fn a_row_whose_fixture_climbs_out_of_the_suite_is_refused() {
    let env = EvalEnv::new(None);
    env.write(
        "secret/key.txt",
        "sk-planted-in-a-folder-beside-the-suite\n",
    );
    env.write("s/fixtures/ok/readme.txt", "fine\n");
    let rows =
        "{\"id\": \"ok\", \"dir\": \"ok\"}\n{\"id\": \"steal\", \"dir\": \"../../secret\"}\n";
    let template =
        "id = \"{{id}}\"\nprompt = \"Summarise the files\"\nfixture = \"fixtures/{{dir}}\"\n";
    let suite = dataset_suite(&env, "rows.jsonl", rows, template);
    let ran = env.eval(&[&suite, "--list"]);
    assert_eq!(ran.code, 2, "{}{}", ran.stdout, ran.stderr);
    assert!(
        ran.stderr.contains("rows.jsonl:2") && ran.stderr.contains("field `dir`"),
        "{}",
        ran.stderr
    );
}

#[test]
fn a_suites_own_cost_limit_stops_the_run_and_the_flag_replaces_it() {
    let answer = json!({"text": ["done"], "usage": {"input": 1_000_000, "output": 0}});
    let mock = MockLlm::start(&Value::Array(vec![answer; 4]));
    let env = EvalEnv::new(Some(&mock));
    let suite = env.write(
        "s/capped.toml",
        "[defaults]\nmodels = [\"mock/mock-model\"]\ntrials = 3\nmax_cost = 1\nsettings = { compaction = { enabled = false } }\n\n[[task]]\nid = \"t\"\nprompt = \"go\"\n",
    );
    let suite = suite.to_str().unwrap();
    let common = [suite, "-q", "--jobs", "1", "--isolate", "none"];
    let ran = env.eval(&[&common[..], &["--out", "a"]].concat());
    assert_eq!(ran.code, 3, "{}", ran.stderr);
    assert_eq!(mock.requests().len(), 1);
    assert_eq!(env.results("a")["stopped"], "cost limit $1.00 reached");
    let ran = env.eval(&[&common[..], &["--out", "b", "--max-cost", "10"]].concat());
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert_eq!(mock.requests().len(), 4);
}

/// Every cassette file under `dir`.
fn cassette_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(cassette_files(&path));
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            found.push(path);
        }
    }
    found
}

#[test]
fn a_trial_cassette_of_another_pi_edition_is_an_unusable_replay_not_a_divergence() {
    let mock = MockLlm::start(&json!([text_step("done")]));
    let env = EvalEnv::new(Some(&mock));
    let suite = agent_suite(
        &env,
        "args = [\"--no-skills\"]\n\n[[task.check]]\nkind = \"text_contains\"\ntext = \"done\"",
    );
    let recorded = env.eval(&[&suite, "-q", "--out", "rec", "--record", "cassettes"]);
    assert_eq!(recorded.code, 0, "{}", recorded.stderr);
    drop(mock);
    let files = cassette_files(&env.path("work/cassettes"));
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    let (header, rest) = text.split_once('\n').unwrap();
    let mut header: Value = serde_json::from_str(header).unwrap();
    header["pi"] = json!("0.0.9");
    std::fs::write(&files[0], format!("{header}\n{rest}")).unwrap();
    for (out, how) in [("in", None), ("own", Some("--replay-processes"))] {
        let mut args = vec![suite.as_str(), "-q", "--out", out, "--replay", "cassettes"];
        args.extend(how);
        env.eval(&args);
        let trial = env.results(out)["trials"][0].clone();
        assert_eq!(trial["status"], "error", "{how:?}: {trial}");
        let reason = trial["reason"].as_str().unwrap_or_default();
        assert!(reason.contains("exit 125"), "{how:?}: {reason}");
        assert!(reason.contains("Pi 0.0.9"), "{how:?}: {reason}");
        assert!(reason.contains("pi replay --rerecord"), "{how:?}: {reason}");
    }
}

/// A task's MCP server (`[task.agent.mcp_servers]`, entries as in Pi's `mcp.json`) is started
/// by the task's agent (this build's `pi`, confined as every trial is) from the trial's agent
/// folder: the mock model calls the server's `echo`, the `pi-mcp` crate's test server (a real
/// process inside the trial) answers, and the trial's checks and transcript hold the answer.
/// The same task without the server fails its `no_tool_errors` check (no such tool); a server
/// entry the suite gets wrong is refused before any trial, naming the task and the field.
#[test]
fn a_tasks_mcp_server_answers_its_agent_inside_the_trial() {
    const ANSWER: &str = "hello from the trial's server";
    let call = || tool_step("c1", "mcp__t__echo", json!({ "text": ANSWER }));
    let mock = MockLlm::start(&json!([
        call(),
        text_step("done"),
        call(),
        text_step("done")
    ]));
    let env = EvalEnv::new(Some(&mock));
    // A copy in a folder every user reaches (a root eval's agents run as another user).
    let folder = tempfile::Builder::new().prefix("pi-mcp").tempdir().unwrap();
    std::fs::set_permissions(folder.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let server = folder.path().join("mcp-server");
    std::fs::copy(
        pi_testkit::workspace_binary("pi-mcp", "pi-mcp-test-server"),
        &server,
    )
    .unwrap();
    let suite = |name: &str, servers: &str| {
        env.write(
            &format!("s/{name}.toml"),
            &format!(
                "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[task]]\nid = \"t\"\nprompt = \"echo\"\n\n[[task.check]]\nkind = \"tool_called\"\ntool = \"mcp__t__echo\"\n\n[[task.check]]\nkind = \"no_tool_errors\"\n\n{servers}"
            ),
        )
        .to_str()
        .unwrap()
        .to_owned()
    };
    let served = suite(
        "served",
        &format!(
            "[task.agent.mcp_servers.t]\ncommand = {:?}\nexposure = \"direct\"\n",
            server.to_str().unwrap()
        ),
    );
    let ran = env.eval(&[&served, "-q", "--out", "served", "--record", "cass"]);
    assert_eq!(ran.code, 0, "{}{}", ran.stdout, ran.stderr);
    let trial = env.results("served")["trials"][0].clone();
    assert_eq!(trial["status"], "passed", "{trial}");
    assert_eq!(trial["score"], 1.0, "{trial}");
    let answered = trial["transcript"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "toolResult")
        .cloned()
        .unwrap_or_default();
    assert_eq!(answered["toolName"], "mcp__t__echo", "{trial}");
    assert_eq!(answered["isError"], false, "{answered}");
    assert_eq!(answered["content"][0]["text"], ANSWER, "{answered}");

    // A replay runs the trial's tools again, the server's too: an agent process starts it.
    let ran = env.eval(&[&served, "-q", "--out", "replayed", "--replay", "cass"]);
    assert_eq!(ran.code, 0, "{}{}", ran.stdout, ran.stderr);
    let replayed = env.results("replayed")["trials"][0].clone();
    assert_eq!(replayed["status"], "passed", "{replayed}");
    assert_eq!(replayed["transcript"], trial["transcript"]);

    let unserved = suite("unserved", "");
    let ran = env.eval(&[&unserved, "-q", "--out", "unserved"]);
    let trial = env.results("unserved")["trials"][0].clone();
    assert_eq!(trial["status"], "failed", "{trial}{}", ran.stderr);
    assert_eq!(trial["score"], 0.5, "{trial}");

    let wrong = env.write(
        "s/wrong.toml",
        "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[defaults.agent.mcp_servers.t]\nargs = [\"x\"]\n\n[[task]]\nid = \"t\"\nprompt = \"echo\"\n",
    );
    let ran = env.eval(&[wrong.to_str().unwrap(), "--list"]);
    assert_eq!(ran.code, 2, "{}", ran.stderr);
    assert!(
        ran.stderr.contains(
            "task `t`: field `agent.mcp_servers`: server `t`: needs a `command` or a `url`"
        ),
        "{}",
        ran.stderr
    );
}

/// An eval replay never starts the user's MCP servers: a trial recorded with the task's server,
/// replayed after the suite dropped it (so the replay runs in the eval's own process), with the
/// eval's agent dir (the user's) holding an `mcp.json` whose server of that name writes a
/// marker before serving. The replay must not start it there, outside the trial's confinement:
/// the trial's tools run again only where the trial's own agent folder starts its servers.
#[test]
fn an_eval_replay_never_starts_the_users_mcp_servers() {
    let call = || tool_step("c1", "mcp__t__echo", json!({ "text": "hi" }));
    let mock = MockLlm::start(&json!([call(), text_step("done")]));
    let env = EvalEnv::new(Some(&mock));
    let folder = tempfile::Builder::new().prefix("pi-mcp").tempdir().unwrap();
    std::fs::set_permissions(folder.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let server = folder.path().join("mcp-server");
    std::fs::copy(
        pi_testkit::workspace_binary("pi-mcp", "pi-mcp-test-server"),
        &server,
    )
    .unwrap();
    let suite = |servers: &str| {
        env.write(
            "s/served.toml",
            &format!(
                "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[task]]\nid = \"t\"\nprompt = \"echo\"\n\n[[task.check]]\nkind = \"tool_called\"\ntool = \"mcp__t__echo\"\n\n{servers}"
            ),
        )
        .to_str()
        .unwrap()
        .to_owned()
    };
    let served = suite(&format!(
        "[task.agent.mcp_servers.t]\ncommand = {:?}\nexposure = \"direct\"\n",
        server.to_str().unwrap()
    ));
    let ran = env.eval(&[&served, "-q", "--out", "served", "--record", "cass"]);
    assert_eq!(ran.code, 0, "{}{}", ran.stdout, ran.stderr);

    let marker = env.path("users-server-ran");
    let script = format!("touch '{}'; exec '{}'", marker.display(), server.display());
    let users = json!({"mcpServers": {"t": {"command": "sh", "args": ["-c", script], "exposure": "direct"}}});
    env.write("agent/mcp.json", &users.to_string());
    let unserved = suite("");
    let ran = env.eval(&[&unserved, "-q", "--out", "replayed", "--replay", "cass"]);
    assert!(
        !marker.exists(),
        "the replay started the user's server: {}",
        ran.stderr
    );
    let trial = env.results("replayed")["trials"][0].clone();
    assert_ne!(trial["status"], "passed", "{trial}");
}
