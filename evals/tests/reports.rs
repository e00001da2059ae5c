//! The report writers on a hand-built run: two models, three tasks, every trial status, a
//! transcript with each kind of block, and a hostile string in every user-provided place.
//!
//! Set `PI_EVAL_REPORT_OUT=/path/report.html` to also write the sample HTML report there (for
//! `scripts/eval-report-browser.sh`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_evals::report::{html, junit, markdown};
use pi_evals::results::{
    AtK, Calls, CheckResult, EvalResults, ModelSummary, Shards, SuiteRef, TaskSummary, TrialResult,
    TrialStatus, Usage, SCHEMA_VERSION,
};
use serde_json::{json, Value};

/// Markup, entities, quotes, a CDATA end, control characters and a script end: whatever a
/// report does with it, it must come out as text.
const HOSTILE: &str =
    "</script><script>alert(1)</script> <b>bold</b> &amp; \"quoted\" 'single' ]]> \u{1}\u{7}\u{1b}[31mred\u{1b}[0m | pipe";

const MODELS: [&str; 2] = ["anthropic/claude-sonnet-4-5", "openai/gpt-5-mini"];

fn check(kind: &str, name: &str, passed: bool, detail: Option<&str>) -> CheckResult {
    CheckResult {
        kind: kind.to_string(),
        name: name.to_string(),
        weight: 1.0,
        passed,
        detail: detail.map(str::to_string),
    }
}

fn usage(input: u64, output: u64) -> Usage {
    Usage {
        input,
        output,
        cache_read: input / 2,
        cache_write: 0,
        total_tokens: input + output,
    }
}

/// A realistic transcript: the prompt, thinking, a failing tool call, a fix, and an answer.
fn transcript(task: &str, with_hostile: bool) -> Vec<Value> {
    let failing_output = if with_hostile {
        format!("error[E0308]: mismatched types\n{HOSTILE}")
    } else {
        "error[E0308]: mismatched types\n --> src/lib.rs:3:5".to_string()
    };
    vec![
        json!({"role": "user", "content": format!("Fix the failing test in `{task}`."), "timestamp": 1}),
        json!({
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "The test probably fails on an off-by-one; run it first."},
                {"type": "text", "text": "Let me run the tests."},
                {"type": "toolCall", "id": "call_1", "name": "bash", "arguments": {"command": "cargo test", "timeout": 120}}
            ],
            "stopReason": "toolUse",
            "usage": {"input": 1200, "output": 85, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1285}
        }),
        json!({
            "role": "toolResult", "toolCallId": "call_1", "toolName": "bash", "isError": true,
            "content": [{"type": "text", "text": failing_output}]
        }),
        json!({
            "role": "assistant",
            "content": [
                {"type": "toolCall", "id": "call_2", "name": "edit", "arguments": {
                    "path": "src/lib.rs", "oldText": "i <= n", "newText": "i < n"}}
            ],
            "stopReason": "toolUse",
            "usage": {"input": 1500, "output": 40}
        }),
        json!({
            "role": "toolResult", "toolCallId": "call_2", "toolName": "edit", "isError": false,
            "content": [{"type": "text", "text": "Successfully replaced text in src/lib.rs."}]
        }),
        json!({
            "role": "assistant",
            "content": [{"type": "text", "text": "Fixed: the loop bound was off by one."}],
            "stopReason": "stop",
            "usage": {"input": 1700, "output": 20}
        }),
    ]
}

#[allow(clippy::too_many_arguments)]
fn trial(
    task: &str,
    model: usize,
    n: u32,
    status: TrialStatus,
    checks: Vec<CheckResult>,
    reason: Option<&str>,
    hostile: bool,
) -> TrialResult {
    let verdict = status.is_verdict();
    let score = if verdict && !checks.is_empty() {
        checks.iter().filter(|c| c.passed).count() as f64 / checks.len() as f64
    } else {
        0.0
    };
    let replay = model == 0;
    let usage = if verdict {
        usage(4400 + u64::from(n) * 100, 145)
    } else {
        Usage::default()
    };
    TrialResult {
        suite: "core".to_string(),
        task: task.to_string(),
        model: MODELS[model].to_string(),
        trial: n,
        seed: 1000 + u64::from(n),
        status,
        score,
        checks,
        usage,
        cost: if replay { 0.0 } else { 0.0121 },
        replayed_cost: if replay { 0.0342 } else { 0.0 },
        calls: if replay {
            Calls {
                live: 0,
                replayed: 3,
            }
        } else {
            Calls {
                live: 3,
                replayed: 0,
            }
        },
        turns: if verdict { 3 } else { 0 },
        wall_ms: 1500 + u64::from(n) * 250 + model as u64 * 1000,
        cassette: Some(format!(
            "core/{task}/{}/{n}.jsonl",
            MODELS[model].replace('/', "_")
        )),
        reason: reason.map(str::to_string),
        final_text: if verdict {
            "Fixed: the loop bound was off by one.".to_string()
        } else {
            String::new()
        },
        transcript: if verdict {
            transcript(task, hostile)
        } else {
            Vec::new()
        },
    }
}

fn choose(n: u32, k: u32) -> f64 {
    if k > n {
        return 0.0;
    }
    (0..k).fold(1.0, |acc, i| acc * f64::from(n - i) / f64::from(i + 1))
}

fn mean_stderr(xs: &[f64]) -> (f64, f64) {
    if xs.is_empty() {
        return (0.0, 0.0);
    }
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    if xs.len() < 2 {
        return (mean, 0.0);
    }
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, (var / n).sqrt())
}

fn summarise(trials: &[TrialResult]) -> (Vec<TaskSummary>, Vec<ModelSummary>) {
    let mut tasks: Vec<TaskSummary> = Vec::new();
    let mut keys: Vec<(String, String)> = Vec::new();
    for t in trials {
        let key = (t.task.clone(), t.model.clone());
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    for (task, model) in keys {
        let of: Vec<&TrialResult> = trials
            .iter()
            .filter(|t| t.task == task && t.model == model)
            .collect();
        let counted: Vec<&&TrialResult> = of.iter().filter(|t| t.status.is_verdict()).collect();
        let n = counted.len() as u32;
        let c = counted.iter().filter(|t| t.status.is_pass()).count() as u32;
        let (mean_score, stderr) =
            mean_stderr(&counted.iter().map(|t| t.score).collect::<Vec<_>>());
        let mut u = Usage::default();
        for t in &of {
            u.add(&t.usage);
        }
        tasks.push(TaskSummary {
            suite: "core".to_string(),
            task,
            model,
            trials: of.len() as u32,
            counted: n,
            passed: c,
            errors: of.iter().filter(|t| t.status == TrialStatus::Error).count() as u32,
            diverged: of
                .iter()
                .filter(|t| t.status == TrialStatus::Diverged)
                .count() as u32,
            pass_at_k: (1..=n)
                .map(|k| AtK {
                    k,
                    value: 1.0 - choose(n - c, k) / choose(n, k),
                })
                .collect(),
            pass_hat_k: (1..=n)
                .map(|k| AtK {
                    k,
                    value: choose(c, k) / choose(n, k),
                })
                .collect(),
            mean_score,
            stderr,
            usage: u,
            cost: of.iter().map(|t| t.cost).sum(),
            replayed_cost: of.iter().map(|t| t.replayed_cost).sum(),
            mean_turns: mean_stderr(
                &counted
                    .iter()
                    .map(|t| f64::from(t.turns))
                    .collect::<Vec<_>>(),
            )
            .0,
            mean_wall_ms: mean_stderr(&of.iter().map(|t| t.wall_ms as f64).collect::<Vec<_>>()).0,
        });
    }
    let mut models = Vec::new();
    for model in MODELS {
        let of: Vec<&TaskSummary> = tasks.iter().filter(|t| t.model == model).collect();
        let rates: Vec<f64> = of
            .iter()
            .map(|t| {
                if t.counted == 0 {
                    0.0
                } else {
                    f64::from(t.passed) / f64::from(t.counted)
                }
            })
            .collect();
        let (score, stderr) = mean_stderr(&of.iter().map(|t| t.mean_score).collect::<Vec<_>>());
        let mut u = Usage::default();
        for t in &of {
            u.add(&t.usage);
        }
        models.push(ModelSummary {
            model: model.to_string(),
            tasks: of.len() as u32,
            trials: of.iter().map(|t| t.trials).sum(),
            passed: of.iter().map(|t| t.passed).sum(),
            errors: of.iter().map(|t| t.errors).sum(),
            diverged: of.iter().map(|t| t.diverged).sum(),
            pass_at_1: mean_stderr(&rates).0,
            score,
            stderr,
            usage: u,
            cost: of.iter().map(|t| t.cost).sum(),
            replayed_cost: of.iter().map(|t| t.replayed_cost).sum(),
        });
    }
    (tasks, models)
}

/// The sample run.
fn sample() -> EvalResults {
    use TrialStatus::*;
    let ok = |name: &str| check("command", name, true, None);
    let tests_fail = || {
        check(
            "command",
            "cargo test exits 0",
            false,
            Some("test tests::bound ... FAILED\nassertion `left == right` failed: 3 != 4"),
        )
    };
    let hostile_check = || check("text_contains", HOSTILE, false, Some(HOSTILE));
    let text_ok = || {
        check(
            "text_contains",
            "final text contains \"off by one\"",
            true,
            None,
        )
    };

    let mut trials = vec![
        // add-cli-flag: model 0 passes twice and hits a limit once; model 1 fails once.
        trial(
            "add-cli-flag",
            0,
            0,
            Passed,
            vec![ok("cargo test exits 0"), text_ok()],
            None,
            false,
        ),
        trial(
            "add-cli-flag",
            0,
            1,
            Passed,
            vec![ok("cargo test exits 0"), text_ok()],
            None,
            false,
        ),
        trial(
            "add-cli-flag",
            0,
            2,
            Limit,
            vec![tests_fail(), text_ok()],
            Some("turn limit (20) reached"),
            false,
        ),
        trial(
            "add-cli-flag",
            1,
            0,
            Passed,
            vec![ok("cargo test exits 0"), text_ok()],
            None,
            false,
        ),
        trial(
            "add-cli-flag",
            1,
            1,
            Failed,
            vec![tests_fail(), text_ok()],
            None,
            false,
        ),
        trial(
            "add-cli-flag",
            1,
            2,
            Passed,
            vec![ok("cargo test exits 0"), text_ok()],
            None,
            false,
        ),
        // escape-output: the hostile string everywhere.
        trial(
            "escape-output",
            0,
            0,
            Failed,
            vec![hostile_check(), text_ok()],
            Some(HOSTILE),
            true,
        ),
        trial(
            "escape-output",
            0,
            1,
            Passed,
            vec![ok("cargo test exits 0")],
            None,
            true,
        ),
        trial(
            "escape-output",
            1,
            0,
            Error,
            vec![],
            Some("model unreachable: connection refused"),
            false,
        ),
        trial(
            "escape-output",
            1,
            1,
            Diverged,
            vec![],
            Some("request 2 differs from the cassette: tool `bash` arguments"),
            false,
        ),
        // fix-off-by-one: model 0 always passes, model 1 always fails.
        trial(
            "fix-off-by-one",
            0,
            0,
            Passed,
            vec![ok("cargo test exits 0"), text_ok()],
            None,
            false,
        ),
        trial(
            "fix-off-by-one",
            0,
            1,
            Passed,
            vec![ok("cargo test exits 0"), text_ok()],
            None,
            false,
        ),
        trial(
            "fix-off-by-one",
            1,
            0,
            Failed,
            vec![tests_fail(), text_ok()],
            None,
            false,
        ),
        trial(
            "fix-off-by-one",
            1,
            1,
            Failed,
            vec![
                tests_fail(),
                check(
                    "file_contains",
                    "src/lib.rs contains \"i < n\"",
                    false,
                    None,
                ),
            ],
            None,
            false,
        ),
    ];
    trials.sort_by(|a, b| (&a.task, &a.model, a.trial).cmp(&(&b.task, &b.model, b.trial)));
    let (tasks, models) = summarise(&trials);
    EvalResults {
        schema_version: SCHEMA_VERSION,
        harness: "0.1.0".to_string(),
        suites: vec![SuiteRef {
            name: "core".to_string(),
            path: "evals/suites/core.toml".to_string(),
            digest: "9f2c1e0d4b7a".to_string(),
        }],
        mode: "replay".to_string(),
        isolation: "bwrap".to_string(),
        shards: None,
        trials,
        tasks,
        models,
    }
}

#[test]
fn junit_snapshot() {
    insta::assert_snapshot!(junit::render(&sample()));
}

#[test]
fn markdown_snapshot() {
    insta::assert_snapshot!(markdown::render(&sample()));
}

#[test]
fn junit_parses_with_expected_cases() {
    let results = sample();
    let xml = junit::render(&results);
    let doc = match roxmltree::Document::parse(&xml) {
        Ok(doc) => doc,
        Err(e) => panic!("JUnit XML does not parse: {e}\n{xml}"),
    };
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let suites: Vec<_> = root
        .children()
        .filter(|n| n.has_tag_name("testsuite"))
        .collect();
    assert_eq!(suites.len(), 1);
    assert_eq!(suites[0].attribute("name"), Some("core"));
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), 6, "3 tasks x 2 models");
    assert!(cases
        .iter()
        .all(|c| c.attribute("classname") == Some("core")));

    let failed: Vec<&str> = cases
        .iter()
        .filter(|c| c.children().any(|n| n.has_tag_name("failure")))
        .filter_map(|c| c.attribute("name"))
        .collect();
    assert_eq!(
        failed,
        [
            "add-cli-flag [anthropic/claude-sonnet-4-5]",
            "add-cli-flag [openai/gpt-5-mini]",
            "escape-output [anthropic/claude-sonnet-4-5]",
            "fix-off-by-one [openai/gpt-5-mini]",
        ]
    );
    let errored: Vec<&str> = cases
        .iter()
        .filter(|c| c.children().any(|n| n.has_tag_name("error")))
        .filter_map(|c| c.attribute("name"))
        .collect();
    assert_eq!(errored, ["escape-output [openai/gpt-5-mini]"]);
    assert_eq!(suites[0].attribute("failures"), Some("4"));
    assert_eq!(suites[0].attribute("errors"), Some("1"));
    assert_eq!(suites[0].attribute("tests"), Some("6"));

    let failure = doc
        .descendants()
        .find(|n| n.has_tag_name("failure"))
        .and_then(|n| n.attribute("message"));
    assert_eq!(failure, Some("2/3 trials passed"));
    // The hostile text survives the round trip minus the characters XML cannot hold.
    let body: String = doc
        .descendants()
        .filter(|n| n.has_tag_name("failure"))
        .filter_map(|n| n.text())
        .collect();
    assert!(
        body.contains("</script><script>alert(1)</script>"),
        "{body}"
    );
    assert!(body.contains("]]>"));
    assert!(!body.contains('\u{7}'));
    assert!(body.contains("turn limit (20) reached"));
}

#[test]
fn markdown_escapes_cells() {
    let md = markdown::render(&sample());
    for line in md.lines().filter(|l| l.starts_with('|')) {
        // Every row of a table has as many unescaped pipes as the header.
        let cells = line.replace("\\|", "").matches('|').count();
        assert!(cells == 7 || cells == 9, "{line}");
    }
    assert!(!md.contains("<script>"));
    assert!(!md.contains('\u{1b}'));
}

fn html_report() -> String {
    let html = html::render(&sample());
    if let Some(path) = std::env::var_os("PI_EVAL_REPORT_OUT") {
        if let Err(e) = std::fs::write(&path, &html) {
            panic!("cannot write {}: {e}", path.to_string_lossy());
        }
    }
    html
}

#[test]
fn html_is_self_contained() {
    let html = html_report().to_lowercase();
    for bad in [
        "src=\"http",
        "src='http",
        "href=\"http",
        "href='http",
        "<link",
        "@import",
        "url(",
        "<iframe",
        "<img",
    ] {
        assert!(!html.contains(bad), "the report references {bad}");
    }
    assert_eq!(
        html.matches("<script>").count(),
        1,
        "only the report's own script"
    );
}

#[test]
fn html_escapes_hostile_text() {
    let html = html_report();
    assert!(!html.contains("<script>alert(1)"));
    assert!(!html.contains("<b>bold</b>"));
    assert!(html.contains("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(html.contains("&amp;amp; &quot;quoted&quot; &#39;single&#39; ]]&gt;"));
    assert!(!html.contains('\u{1}'));
    assert!(!html.contains('\u{1b}'));
    assert_eq!(html.matches("</script>").count(), 1);
}

#[test]
fn html_contains_everything() {
    let results = sample();
    let html = html_report();
    for id in [
        "id=\"summary\"",
        "id=\"chart\"",
        "id=\"task-table\"",
        "id=\"trials\"",
    ] {
        assert!(html.contains(id), "missing {id}");
    }
    assert!(html.contains("<svg id=\"chart\""));
    for task in ["add-cli-flag", "escape-output", "fix-off-by-one"] {
        assert!(html.contains(task), "missing task {task}");
    }
    for model in MODELS {
        assert!(html.contains(model), "missing model {model}");
    }
    assert_eq!(
        html.matches("<details class=\"trial\"").count(),
        results.trials.len()
    );
    // Each kind of transcript block is shown.
    for class in [
        "msg-user",
        "thinking",
        "tool-call",
        "msg-tool is-error",
        "check fail",
        "check pass",
    ] {
        assert!(html.contains(class), "missing {class}");
    }
    assert!(html.contains("&quot;command&quot;: &quot;cargo test&quot;"));
}

#[test]
fn reports_are_deterministic() {
    let results = sample();
    assert_eq!(html::render(&results), html::render(&sample()));
    assert_eq!(junit::render(&results), junit::render(&sample()));
    assert_eq!(markdown::render(&results), markdown::render(&sample()));
}

#[test]
fn huge_texts_are_cut() {
    let mut results = sample();
    let big = "x".repeat(50_000);
    results.trials[0]
        .transcript
        .push(json!({"role": "user", "content": big}));
    let html = html::render(&results);
    assert!(html.contains("30,000 more characters not shown"));
    assert!(!html.contains(&"x".repeat(20_001)));
}

#[test]
fn odd_inputs_do_not_panic() {
    let mut results = sample();
    results.trials[0].transcript = vec![
        json!(null),
        json!("a bare string"),
        json!({"role": 3}),
        json!({"role": "assistant", "content": "not an array", "usage": "none"}),
        json!({"role": "assistant", "content": [{"type": "toolCall"}, 7, {"type": "mystery"}]}),
        json!({"role": "toolResult", "content": {"odd": true}, "isError": "yes"}),
        json!({"role": "user", "content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]}),
    ];
    results.tasks[0].pass_at_k.clear();
    results.tasks[0].mean_score = f64::NAN;
    results.models[0].stderr = f64::INFINITY;
    results.shards = Some(Shards {
        count: 4,
        held: vec![0, 2],
    });
    results.suites.clear();
    for render in [html::render, junit::render, markdown::render] {
        assert!(!render(&results).is_empty());
    }
    let empty = EvalResults {
        trials: vec![],
        tasks: vec![],
        models: vec![],
        ..results
    };
    for render in [html::render, junit::render, markdown::render] {
        assert!(!render(&empty).is_empty());
    }
    assert!(roxmltree::Document::parse(&junit::render(&empty)).is_ok());
}

#[test]
fn hostile_names_are_escaped() {
    let mut results = sample();
    let task = format!("task {HOSTILE}");
    let model = format!("model {HOSTILE}");
    for t in &mut results.trials {
        if t.task == "escape-output" {
            t.task = task.clone();
            t.model = model.clone();
        }
    }
    for t in &mut results.tasks {
        if t.task == "escape-output" {
            t.task = task.clone();
            t.model = model.clone();
        }
    }
    results.suites[0].digest = HOSTILE.to_string();
    results.mode = HOSTILE.to_string();

    let html = html::render(&results);
    assert!(!html.contains("<script>alert(1)"));
    assert!(!html.contains("<b>bold</b>"));
    assert!(!html.contains('\u{1b}'));
    assert_eq!(html.matches("</script>").count(), 1);

    let xml = junit::render(&results);
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let names: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .filter_map(|n| n.attribute("name"))
        .collect();
    assert!(names
        .iter()
        .any(|n| n.contains("task </script><script>alert(1)</script>")));

    let md = markdown::render(&results);
    assert!(!md.contains("<script>"));
    for line in md.lines().filter(|l| l.starts_with('|')) {
        let cells = line.replace("\\|", "").matches('|').count();
        assert!(cells == 7 || cells == 9, "{line}");
    }
}
