//! The report writers on a hand-built run (see `report_sample`): snapshots of the JUnit and
//! Markdown, the JUnit parsed as XML, the HTML checked for external references, escaping and
//! completeness, determinism, and arbitrary text in every user-provided place.
//!
//! Set `PI_EVAL_REPORT_OUT=/path/report.html` to also write the sample HTML report there (for
//! `scripts/eval-report-browser.sh`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod report_sample;

use pi_evals::report::{html, junit, markdown};
use pi_evals::results::{EvalResults, Shards};
use report_sample::{check, sample, HOSTILE, MODELS};
use serde_json::json;

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

/// The sample with `s` in every place a user's text can be, in trial `k`.
fn with_text(s: &str, k: usize) -> EvalResults {
    let mut results = sample();
    let t = &mut results.trials[k];
    t.reason = Some(s.to_string());
    t.final_text = s.to_string();
    t.checks.push(check(s, s, false, Some(s)));
    t.transcript.push(json!({"role": "user", "content": s}));
    t.transcript.push(json!({"role": "assistant", "content": [
        {"type": "text", "text": s},
        {"type": "thinking", "thinking": s},
        {"type": "toolCall", "id": s, "name": s, "arguments": {"x": s}}
    ], "errorMessage": s, "stopReason": s}));
    t.transcript
        .push(json!({"role": "toolResult", "toolName": s, "content": s, "isError": true}));
    t.transcript
        .push(json!({"role": "custom", "content": s, "details": {"k": s}}));
    results.tasks[k].model = s.to_string();
    results.models[0].model = s.to_string();
    results.suites[0].digest = s.to_string();
    results
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(64)))]

    /// Any text anywhere a user can put it: the JUnit still parses, the HTML has exactly the
    /// tags it has with a harmless text, and the Markdown tables keep their columns.
    #[test]
    fn any_text_is_inert(s in "\\PC{1,40}|[\\x00-\\x7f]{1,40}", k in 0usize..4) {
        let results = with_text(&s, k);

        let xml = junit::render(&results);
        proptest::prop_assert!(roxmltree::Document::parse(&xml).is_ok(), "{}", xml);

        let html = html::render(&results);
        let plain = html::render(&with_text("x", k));
        proptest::prop_assert_eq!(html.matches('<').count(), plain.matches('<').count());
        proptest::prop_assert_eq!(html.matches("<script").count(), 1);

        let md = markdown::render(&results);
        for line in md.lines().filter(|l| l.starts_with('|')) {
            let cells = line.replace("\\|", "").matches('|').count();
            proptest::prop_assert!(cells == 7 || cells == 9, "{}", line);
        }
    }
}
