//! The sample run the report tests render: two models, three tasks, every trial status, a
//! transcript with each kind of block, and a hostile string in user-provided places. The
//! summaries are computed here from the trials with the estimators' formulas, so the numbers
//! the reports print are consistent.

use pi_evals::results::{
    AtK, Calls, CheckResult, EvalResults, ModelSummary, SuiteRef, TaskSummary, TrialResult,
    TrialStatus, Usage, SCHEMA_VERSION,
};
use serde_json::{json, Value};

/// Markup, entities, quotes, a CDATA end, control characters and a script end: whatever a
/// report does with it, it must come out as text.
pub const HOSTILE: &str =
    "</script><script>alert(1)</script> <b>bold</b> &amp; \"quoted\" 'single' ]]> \u{1}\u{7}\u{1b}[31mred\u{1b}[0m | pipe";

pub const MODELS: [&str; 2] = ["anthropic/claude-sonnet-4-5", "openai/gpt-5-mini"];

pub fn check(kind: &str, name: &str, passed: bool, detail: Option<&str>) -> CheckResult {
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
        judge: Default::default(),
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
        attempts: 1,
        earlier_errors: Vec::new(),
        tags: Vec::new(),
        metadata: serde_json::Map::new(),
        context: Default::default(),
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
            judge: Default::default(),
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
            judge: Default::default(),
        });
    }
    (tasks, models)
}

/// The sample run.
pub fn sample() -> EvalResults {
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
        progress: Default::default(),
    }
}
