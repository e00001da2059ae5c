//! A task's steps reach the model in order and a failed model call is an error: prompts, steers
//! and follow-ups in every order, retries and compactions waited for, refusals reported.

use super::*;

/// Pi's JSON mode exits 0 when the model call failed: a run whose every request got HTTP 500
/// must not be scored on checks that pass anyway. A failure that a retry recovered from is not
/// an error.
#[test]
fn a_model_error_is_an_error_not_a_pass() {
    let mock = MockLlm::start(&json!([
        {"status": 500, "text": ["boom"]},
        {"status": 500, "text": ["boom"]},
        {"status": 500, "text": ["once"]},
        text_step("Recovered."),
    ]));
    let env = EvalEnv::new(Some(&mock));
    let suite = env.write(
        "s/errors.toml",
        "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[defaults.settings]\nretry = { enabled = true, maxRetries = 1, baseDelayMs = 1 }\n\n\
         [[task]]\nid = \"broken\"\nprompt = \"hi\"\n\n[[task.check]]\nkind = \"tool_not_called\"\ntool = \"write\"\n\n\
         [[task]]\nid = \"flaky\"\nprompt = \"hi\"\n\n[[task.check]]\nkind = \"tool_not_called\"\ntool = \"write\"\n",
    );
    let ran = env.eval(&[suite.to_str().unwrap(), "--jobs", "1", "-q", "--out", "o"]);
    assert_eq!(mock.requests().len(), 4, "one retry each");
    assert_eq!(ran.code, 1, "a model error fails the run: {}", ran.stdout);
    let results = env.results("o");
    let trials = results["trials"].as_array().unwrap();
    let broken = trials.iter().find(|t| t["task"] == "broken").unwrap();
    assert_eq!(broken["status"], "error", "{broken}");
    assert_eq!(broken["score"], 0.0);
    let reason = broken["reason"].as_str().unwrap();
    assert!(reason.contains("model call failed"), "{reason}");
    let flaky = trials.iter().find(|t| t["task"] == "flaky").unwrap();
    assert_eq!(flaky["status"], "passed", "the retry recovered: {flaky}");
    let model = &results["models"][0];
    assert_eq!(model["errors"], 1);
    assert_eq!(
        model["passAt1"], 1.0,
        "the error is left out of the pass rate"
    );
}

/// Every order of steps a task may give (a prompt first, then prompts, steers and follow-ups):
/// each prompt waits for the agent to be idle, so none is refused with "Agent is already
/// processing", every step reaches the model, and nothing after a prompt comes before it.
#[test]
fn every_order_of_prompts_steers_and_follow_ups_reaches_the_model() {
    let orders: [&[&str]; 10] = [
        &["prompt", "steer", "prompt"],
        &["prompt", "follow_up", "prompt"],
        &["prompt", "prompt", "steer"],
        &["prompt", "prompt", "follow_up"],
        &["prompt", "steer", "steer"],
        &["prompt", "steer", "follow_up"],
        &["prompt", "follow_up", "steer"],
        &["prompt", "follow_up", "follow_up"],
        &["prompt", "steer", "follow_up", "prompt", "steer", "prompt"],
        &["-prompt", "prompt", "prompt"],
    ];
    let mut suite = String::from("[defaults]\nmodels = [\"mock/mock-model\"]\n");
    for (i, order) in orders.iter().enumerate() {
        let steps: Vec<String> = order
            .iter()
            .enumerate()
            .map(|(j, kind)| {
                let kind_name = kind.trim_start_matches('-');
                let dash = if kind.starts_with('-') { "-" } else { "" };
                format!("{{ {kind_name} = \"{dash}{kind_name} {j} of order {i}\" }}")
            })
            .collect();
        suite.push_str(&format!(
            "\n[[task]]\nid = \"order-{i}\"\nsteps = [{}]\n\n[[task.check]]\nkind = \"no_error\"\n",
            steps.join(", ")
        ));
    }
    let mock = MockLlm::start(&json!([]));
    let env = EvalEnv::new(Some(&mock));
    let suite = env.write("s/orders.toml", &suite);
    let ran = env.eval(&[suite.to_str().unwrap(), "--jobs", "1", "-q", "--out", "o"]);
    let results = env.results("o");
    for (i, order) in orders.iter().enumerate() {
        let trial = results["trials"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["task"] == format!("order-{i}"))
            .unwrap();
        assert_eq!(trial["status"], "passed", "order {order:?}: {trial}");
        let said: Vec<String> = trial["transcript"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "user")
            .map(|m| {
                let content = &m["content"];
                content.as_str().map_or_else(
                    || content[0]["text"].as_str().unwrap().to_owned(),
                    str::to_owned,
                )
            })
            .collect();
        assert_eq!(said.len(), order.len(), "order {order:?}: {said:?}");
        for (j, kind) in order.iter().enumerate() {
            let kind_name = kind.trim_start_matches('-');
            let dash = if kind.starts_with('-') { "-" } else { "" };
            let text = format!("{dash}{kind_name} {j} of order {i}");
            let at = said.iter().position(|s| *s == text);
            let at = at.unwrap_or_else(|| panic!("order {order:?}: {text:?} not in {said:?}"));
            if kind_name == "prompt" {
                assert_eq!(at, j, "a prompt comes after every step before it: {said:?}");
            }
        }
        let answers = trial["transcript"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == "assistant")
            .count();
        assert_eq!(answers, order.len(), "each step was answered: {trial}");
    }
    assert_eq!(ran.code, 0, "{}\n{}", ran.stdout, ran.stderr);
}

/// A prompt waits for a retry too: the agent is idle between a failed call and its retry (Pi's
/// `get_state` has no retrying flag), and a prompt sent then would start a run in its place.
#[test]
fn the_next_prompt_waits_for_the_retry_of_a_failed_call() {
    let mock = MockLlm::start(&json!([
        {"status": 500, "text": ["boom"]},
        text_step("First answered."),
        text_step("Second answered."),
    ]));
    let env = EvalEnv::new(Some(&mock));
    let suite = env.write(
        "s/retry.toml",
        "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[defaults.settings]\nretry = { enabled = true, maxRetries = 2, baseDelayMs = 400 }\n\n\
         [[task]]\nid = \"two\"\nsteps = [{ prompt = \"-first\" }, { prompt = \"second\" }]\n\n[[task.check]]\nkind = \"text_contains\"\ntext = \"Second answered.\"\n",
    );
    let ran = env.eval(&[suite.to_str().unwrap(), "-q", "--out", "o"]);
    let trial = env.results("o")["trials"][0].clone();
    assert_eq!(trial["status"], "passed", "{trial}");
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let asked: Vec<String> = mock
        .requests()
        .iter()
        .map(|r| r["messages"].as_array().unwrap().last().unwrap()["content"].to_string())
        .collect();
    assert_eq!(asked.len(), 3, "{asked:?}");
    assert!(
        asked[1].contains("-first"),
        "the retry asked again: {asked:?}"
    );
    assert!(asked[2].contains("second"), "{asked:?}");
}

/// An agent that refuses a step (answers its RPC command `success: false`): the trial is an
/// error that names the step and the agent's reason, and no later step is sent.
#[test]
fn a_step_the_agent_refuses_makes_the_trial_an_error_that_says_so() {
    use std::os::unix::fs::PermissionsExt;
    let env = EvalEnv::new(None);
    let suite = env.write(
        "s/refuse.toml",
        "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[task]]\nid = \"steered\"\nsteps = [{ prompt = \"go\" }, { steer = \"faster\" }, { prompt = \"after\" }]\n\n[[task.check]]\nkind = \"no_error\"\n",
    );
    let log = env.path("agent-saw.jsonl");
    let script = format!(
        "#!/bin/sh\nwhile IFS= read -r line; do\n  printf '%s\\n' \"$line\" >> '{}'\n  case \"$line\" in\n    *'\"steer\"'*) echo '{{\"type\":\"response\",\"command\":\"steer\",\"success\":false,\"error\":\"steering is off here\"}}' ;;\n    *'\"prompt\"'*) echo '{{\"type\":\"response\",\"command\":\"prompt\",\"success\":true}}'; echo '{{\"type\":\"agent_end\",\"messages\":[]}}' ;;\n    *get_state*) echo '{{\"type\":\"response\",\"command\":\"get_state\",\"success\":true,\"data\":{{\"isStreaming\":false,\"isCompacting\":false}}}}' ;;\n  esac\ndone\n",
        log.display()
    );
    let agent = env.write("refusing-agent.sh", &script);
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let ran = env.eval(&[
        suite.to_str().unwrap(),
        "--agent",
        agent.to_str().unwrap(),
        "--isolate",
        "none",
        "--live",
        "-q",
        "--out",
        "o",
    ]);
    let trial = env.results("o")["trials"][0].clone();
    assert_eq!(trial["status"], "error", "{trial}");
    assert_eq!(
        trial["reason"],
        "the agent refused the `steer` step: steering is off here"
    );
    assert_eq!(ran.code, 1, "{}", ran.stdout);
    let saw = std::fs::read_to_string(&log).unwrap();
    assert!(
        !saw.contains("after"),
        "no step after the refused one: {saw}"
    );
}

/// A prompt waits for the retry that follows a compaction after a context overflow: between
/// the compaction's end and the retry, Pi's `get_state` calls the agent idle. As in Pi 1.5.2,
/// the compaction cuts past the omitted refusal, so the refused prompt is the split turn's
/// prefix summary and the retry carries it in the compaction's summary.
#[test]
fn the_next_prompt_waits_for_the_retry_after_an_overflow_compaction() {
    let overflow = json!({"status": 400, "error_body": {"error": {"message": "This model's maximum context length is 10 tokens", "type": "invalid_request_error"}}});
    let mock = MockLlm::start(&json!([
        text_step("Warmed up."),
        overflow,
        text_step("Summary of the session."),
        text_step("The user said first."),
        text_step("First answered."),
        text_step("Second answered."),
    ]));
    let env = EvalEnv::new(Some(&mock));
    let suite = env.write(
        "s/overflow.toml",
        "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[defaults.settings]\ncompaction = { enabled = true, keepRecentTokens = 1 }\n\n\
         [[task]]\nid = \"three\"\nsteps = [{ prompt = \"-warm up\" }, { prompt = \"first\" }, { prompt = \"second\" }]\n\n[[task.check]]\nkind = \"text_contains\"\ntext = \"Second answered.\"\n",
    );
    let ran = env.eval(&[suite.to_str().unwrap(), "-q", "--out", "o"]);
    let trial = env.results("o")["trials"][0].clone();
    let asked: Vec<String> = mock
        .requests()
        .iter()
        .map(|r| r["messages"].as_array().unwrap().last().unwrap()["content"].to_string())
        .collect();
    assert_eq!(trial["status"], "passed", "{trial}\n{asked:?}");
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    assert_eq!(asked.len(), 6, "{asked:?}");
    assert!(asked[3].contains("[User]: first"), "{asked:?}");
    assert!(
        asked[4].contains("The user said first."),
        "the retry asked again: {asked:?}"
    );
    assert!(asked[5].contains("second"), "{asked:?}");
}
