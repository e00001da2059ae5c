//! Check kinds on what the agent did, not only where it ended: trajectory checks (tools used,
//! their order, their arguments, the steps taken, tool errors) and negated checks, through the
//! real binary against the scripted mock, recorded and replayed with the mock gone. Each check
//! that must fail is asserted to fail, beside one of the same kind that must pass.

mod judge;

use pi_testkit::MockLlm;
use serde_json::{json, Value};

use super::{text_step, tool_step, EvalEnv};

/// The `trace` task's run: a read that works, a bash command that fails, a write, an answer.
/// Then the `clean` task's: one read that works, an answer.
fn script() -> Value {
    json!([
        tool_step("c1", "read", json!({"path": "notes.txt"})),
        tool_step("c2", "bash", json!({"command": "cat nope.txt"})),
        tool_step(
            "c3",
            "write",
            json!({"path": "out.txt", "content": "secret=1\n"})
        ),
        text_step("All done."),
        tool_step("d1", "read", json!({"path": "notes.txt"})),
        text_step("Read it."),
    ])
}

/// Each check of the `trace` task, and whether it must pass.
const TRACE_CHECKS: &[(&str, bool)] = &[
    // A forbidden tool was used.
    ("kind = \"tool_called\"\ntool = \"bash\"\nnot = true", false),
    ("kind = \"tool_called\"\ntool = \"edit\"\nnot = true", true),
    // Counts of calls.
    ("kind = \"tool_called\"\ntool = \"read\"\nmax = 1", true),
    ("kind = \"tool_called\"\ntool = \"read\"\nmin = 2", false),
    // Arguments: a pattern over one argument, or over all of them.
    (
        "kind = \"tool_called\"\ntool = \"bash\"\npointer = \"/command\"\narguments_regex = \"^cat \"",
        true,
    ),
    (
        "kind = \"tool_called\"\ntool = \"bash\"\npointer = \"/path\"\narguments_regex = \".\"",
        false,
    ),
    (
        "kind = \"tool_called\"\ntool = \"bash\"\narguments_regex = \"rm -rf\"\nnot = true",
        true,
    ),
    // Sequences.
    (
        "kind = \"tool_sequence\"\ntools = [\"read\", \"bash\", \"write\"]\nmode = \"exact\"",
        true,
    ),
    (
        "kind = \"tool_sequence\"\ntools = [\"read\", \"write\"]\nmode = \"exact\"",
        false,
    ),
    ("kind = \"tool_sequence\"\ntools = [\"read\", \"write\"]", true),
    ("kind = \"tool_sequence\"\ntools = [\"write\", \"read\"]", false),
    (
        "kind = \"tool_sequence\"\ntools = [\"bash\", \"write\"]\nmode = \"contiguous\"",
        true,
    ),
    (
        "kind = \"tool_sequence\"\ntools = [\"read\", \"write\"]\nmode = \"contiguous\"",
        false,
    ),
    (
        "kind = \"tool_sequence\"\ntools = [\"write\", \"read\"]\nnot = true",
        true,
    ),
    // Steps.
    (
        "kind = \"step_count\"\nturns = { max = 4 }\ntool_calls = { min = 3, max = 3 }",
        true,
    ),
    ("kind = \"step_count\"\ntool_calls = { max = 2 }", false),
    ("kind = \"step_count\"\nturns = { max = 3 }", false),
    // The bash call failed.
    ("kind = \"no_tool_errors\"", false),
    // Negated text and file checks.
    ("kind = \"text_contains\"\ntext = \"done\"\nnot = true", false),
    ("kind = \"text_contains\"\ntext = \"password\"\nnot = true", true),
    ("kind = \"text_matches\"\nregex = \"^All\"\nnot = true", false),
    (
        "kind = \"file_contains\"\npath = \"out.txt\"\ntext = \"secret\"\nnot = true",
        false,
    ),
    (
        "kind = \"file_matches\"\npath = \"out.txt\"\nregex = \"key=\"\nnot = true",
        true,
    ),
    // A file that is not there is not a file that holds nothing wrong.
    (
        "kind = \"file_contains\"\npath = \"gone.txt\"\ntext = \"secret\"\nnot = true",
        false,
    ),
    (
        "kind = \"file_hash\"\npath = \"out.txt\"\nsha256 = \"0000000000000000000000000000000000000000000000000000000000000000\"\nnot = true",
        true,
    ),
];

fn suite(env: &EvalEnv) -> String {
    let mut text = String::from(
        "name = \"traj\"\n[defaults]\nmodels = [\"mock/mock-model\"]\nfixture = \"fx\"\nthreshold = 0\n\n[[task]]\nid = \"trace\"\nprompt = \"go\"\n",
    );
    for (check, _) in TRACE_CHECKS {
        text.push_str(&format!("\n[[task.check]]\n{check}\n"));
    }
    text.push_str(
        "\n[[task]]\nid = \"clean\"\nprompt = \"go\"\n\n[[task.check]]\nkind = \"no_tool_errors\"\n",
    );
    env.write("s/fx/notes.txt", "the notes\n");
    env.write("s/traj.toml", &text).to_str().unwrap().to_owned()
}

/// The checks of the trial of `task`.
pub(super) fn checks<'a>(results: &'a Value, task: &str) -> &'a Vec<Value> {
    results["trials"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task"] == task)
        .unwrap_or_else(|| panic!("no trial of {task}: {results}"))["checks"]
        .as_array()
        .unwrap()
}

fn assert_verdicts(results: &Value) {
    let trace = checks(results, "trace");
    assert_eq!(trace.len(), TRACE_CHECKS.len(), "{results}");
    for ((written, must_pass), result) in TRACE_CHECKS.iter().zip(trace) {
        assert_eq!(
            result["passed"].as_bool(),
            Some(*must_pass),
            "{written}\n→ {result}"
        );
        if written.contains("not = true") {
            assert!(
                result["name"].as_str().unwrap().starts_with("not: "),
                "{result}"
            );
        }
    }
    let clean = checks(results, "clean");
    assert_eq!(clean[0]["passed"], true, "{clean:?}");
}

#[test]
fn trajectory_and_negated_checks_fail_what_they_forbid_and_replay_to_the_same_verdicts() {
    let mock = MockLlm::start(&script());
    let env = EvalEnv::new(Some(&mock));
    let suite = suite(&env);
    let recorded = env.eval(&[&suite, "--record", "c", "--jobs", "1", "-q", "--out", "rec"]);
    assert_eq!(recorded.code, 0, "{}", recorded.stderr);
    let rec = env.results("rec");
    assert_verdicts(&rec);
    // What was found, said in the failed checks' details.
    let trace = checks(&rec, "trace");
    let forbidden = &trace[0]["detail"];
    assert_eq!(forbidden, "tools called: read, bash, write", "{forbidden}");
    let steps = &trace[15]["detail"];
    assert_eq!(steps, "4 turns, 3 tool calls");
    let errors = trace[17]["detail"].as_str().unwrap();
    assert!(errors.contains("call 2 (`bash`)"), "{errors}");
    let gone = trace[23]["detail"].as_str().unwrap();
    assert!(gone.starts_with("cannot read it"), "{gone}");
    drop(mock);
    let replayed = env.eval(&[&suite, "--replay", "c", "-q", "--out", "rep"]);
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    let rep = env.results("rep");
    assert_verdicts(&rep);
    assert_eq!(checks(&rec, "trace"), checks(&rep, "trace"));
}

/// Every field of the new kinds is checked when the suite is read: the error names the file,
/// the line of the check and the field, and nothing runs.
#[test]
fn a_bad_trajectory_or_negated_check_is_refused_naming_its_line_and_field() {
    let env = EvalEnv::new(None);
    let cases = [
        (
            "kind = \"tool_called\"\ntool = \"bash\"\narguments_regex = \"(\"",
            "check.arguments_regex",
        ),
        (
            "kind = \"tool_called\"\ntool = \"bash\"\npointer = \"command\"\narguments_regex = \"x\"",
            "check.pointer",
        ),
        (
            "kind = \"tool_called\"\ntool = \"bash\"\npointer = \"/command\"",
            "check.pointer",
        ),
        ("kind = \"tool_called\"\ntool = \"bash\"\nmin = 0", "check.min"),
        (
            "kind = \"tool_called\"\ntool = \"bash\"\nmin = 3\nmax = 2",
            "check.max",
        ),
        (
            "kind = \"tool_sequence\"\ntools = [\"read\"]\nmode = \"sorted\"",
            "check.mode",
        ),
        ("kind = \"tool_sequence\"\ntools = []", "check.tools"),
        ("kind = \"tool_sequence\"", "check.tools"),
        ("kind = \"step_count\"", "check.turns"),
        ("kind = \"step_count\"\nturns = { min = 0 }", "check.turns"),
        (
            "kind = \"step_count\"\ntool_calls = { min = 5, max = 1 }",
            "check.tool_calls",
        ),
        ("kind = \"step_count\"\nturns = { most = 1 }", "turns"),
        ("kind = \"command\"\nrun = \"true\"\nnot = true", "check.not"),
        ("kind = \"no_error\"\nnot = true", "check.not"),
        ("kind = \"no_tool_errors\"\nnot = true", "check.not"),
        ("kind = \"file_exists\"\npath = \"a\"\nnot = true", "check.not"),
        ("kind = \"tool_not_called\"\ntool = \"x\"\nnot = true", "check.not"),
        (
            "kind = \"step_count\"\nturns = { max = 1 }\nnot = true",
            "check.not",
        ),
        ("kind = \"text_contains\"\ntext = \"a\"\nmode = \"exact\"", "check.mode"),
        ("kind = \"judge\"\nrubric = \"greets\"", "check.model"),
        (
            "kind = \"judge\"\nrubric = \" \"\nmodel = \"mock/mock-model\"",
            "check.rubric",
        ),
        ("kind = \"judge\"\nmodel = \"mock/mock-model\"", "check.rubric"),
        (
            "kind = \"judge\"\nrubric = \"r\"\nmodel = \"mock/../../x\"",
            "check.model",
        ),
        (
            "kind = \"judge\"\nrubric = \"r\"\nmodel = \"mock/mock-model\"\nthreshold = 1.5",
            "check.threshold",
        ),
        (
            "kind = \"judge\"\nrubric = \"r\"\nmodel = \"mock/mock-model\"\nnot = true",
            "check.not",
        ),
    ];
    for (check, field) in cases {
        let text = format!(
            "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[task]]\nid = \"t\"\nprompt = \"hi\"\n\n[[task.check]]\n{check}\n"
        );
        let path = env.write("s/bad.toml", &text);
        let ran = env.eval(&[path.to_str().unwrap(), "-q", "--out", "o"]);
        assert_eq!(ran.code, 2, "{check}: {}{}", ran.stdout, ran.stderr);
        assert!(
            ["bad.toml:8:", "bad.toml:9:", "bad.toml:10:"]
                .iter()
                .any(|line| ran.stderr.contains(line)),
            "{check}: the check's line: {}",
            ran.stderr
        );
        assert!(
            ran.stderr.contains(&format!("field `{field}")),
            "{check}: {}",
            ran.stderr
        );
        assert!(!env.path("work/o").exists(), "nothing ran");
    }
}
