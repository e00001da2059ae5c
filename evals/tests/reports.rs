//! The report writers on a hand-built run (see `report_sample`): snapshots of the JUnit and
//! Markdown, the JUnit parsed as XML, the HTML checked for external references, escaping and
//! completeness, determinism, and arbitrary text in every user-provided place.
//!
//! Set `PI_EVAL_REPORT_OUT=/path/report.html` to also write the sample HTML report there (for
//! `scripts/eval-report-browser.sh`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod report_sample;

use pi_evals::compare::{compare, CompareOptions};
use pi_evals::report::links::CassetteLinks;
use pi_evals::report::{compare_html, html, junit, markdown};
use pi_evals::results::{EvalResults, Shards, TrialStatus};
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
    // The message, which a CI test tab shows first, says what the first failed check found.
    assert_eq!(
        failure,
        Some("2/3 trials passed; cargo test exits 0: found test tests::bound ... FAILED assertion `left == right` failed: 3 != 4")
    );
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
    // A tool result names the call it answers, as the call shows its id.
    assert!(html.contains("<span class=\"tool-id\">call_1</span></div><pre class=\"json\">"));
    assert!(html.contains("Tool result · <code>bash</code> <span class=\"tool-id\">call_1</span>"));
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

/// The chart on its own: bars, error bars and labels in place.
#[test]
fn chart_snapshot() {
    let html = html_report();
    let start = html.find("<svg id=\"chart\"").unwrap();
    let end = start + html[start..].find("</svg>").unwrap() + "</svg>".len();
    insta::assert_snapshot!(&html[start..end]);
}

#[test]
fn chart_draws_a_wilson_interval_per_bar() {
    let results = sample();
    let html = html_report();
    let bars = results.tasks.iter().filter(|t| t.counted > 0).count();
    assert!(bars > 0);
    assert_eq!(k_view(&html, 1).matches("<g class=\"ci\">").count(), bars);
    // fix-off-by-one, model 0: 2/2 passed, whose 95% Wilson interval is 34.2% to 100%;
    // model 1: 0/2, 0% to 65.8%; add-cli-flag: 2/3, 20.8% to 93.9%.
    assert!(html.contains("2/2 · 34.2%–100.0%"));
    assert!(html.contains("0/2 · 0.0%–65.8%"));
    assert!(html.contains("2/3 · 20.8%–93.9%"));
}

/// The chart's bars at pass@`k`, every task's.
fn k_view(html: &str, k: u32) -> String {
    let head = format!("<g class=\"k-view\" data-k=\"{k}\"");
    html.match_indices(&head)
        .map(|(at, _)| {
            // A view's last line is its closing tag alone.
            let end = at + html[at..].find("\n</g>\n").unwrap();
            &html[at..end]
        })
        .collect()
}

#[test]
fn chart_switches_to_pass_at_k_with_its_interval() {
    let html = html_report();
    // The sample's tasks ran 2 or 3 trials: k = 1, 2 and 3, pass@1 drawn, the others not.
    assert!(html.contains("<div class=\"controls\" hidden id=\"chart-k\">"));
    for k in 1..=3 {
        let checked = if k == 1 { " checked" } else { "" };
        let radio = format!("<input type=\"radio\" name=\"chart-k\" value=\"{k}\"{checked}>");
        assert!(html.contains(&radio), "{radio}");
    }
    assert!(!html.contains("value=\"4\""));
    assert!(html.contains("<g class=\"k-view\" data-k=\"1\">"));
    assert!(html.contains("<g class=\"k-view\" data-k=\"2\" display=\"none\">"));
    // add-cli-flag, 2/3 passed: pass@2 = 1 - C(1,2)/C(3,2) = 1, the Wilson interval
    // 20.8%-93.9% carried through 1-(1-p)^2 to 37.2%-99.6%, widened to hold the 1.
    let two = k_view(&html, 2);
    assert!(
        two.contains("100.0% <tspan class=\"count\">pass@2 · 2/3 · 37.2%–100.0%"),
        "{two}"
    );
    // fix-off-by-one, model 1, 0/2: pass@2 is 0, its interval 0% to 1-(1-0.658)^2 = 88.3%.
    assert!(
        two.contains("0.0% <tspan class=\"count\">pass@2 · 0/2 · 0.0%–88.3%"),
        "{two}"
    );
    // A task of two trials has no pass@3: it says so instead of drawing one.
    let three = k_view(&html, 3);
    assert!(
        three.contains("pass@3 needs 3 counted trials (2 counted)"),
        "{three}"
    );
    assert!(three.contains("pass@3 · 2/3 · "), "{three}");
}

#[test]
fn trials_and_rows_carry_what_the_filters_read() {
    let results = sample();
    let html = html_report();
    assert!(html.contains("id=\"filters\""));
    for model in MODELS {
        assert!(html.contains(&format!("<option value=\"{model}\">")));
    }
    for t in &results.trials {
        let head = format!(
            "data-status=\"{}\" data-suite=\"core\" data-task=\"{}\" data-model=\"{}\" data-tags=\"\"",
            serde_json::to_value(t.status).unwrap().as_str().unwrap(),
            t.task,
            t.model
        );
        assert!(html.contains(&head), "missing {head}");
    }
    assert_eq!(html.matches("<tr data-suite=").count(), results.tasks.len());
    // One suite: no suite filter; no tags in these results: no tag filter.
    assert!(!html.contains("data-filter=\"suite\""));
    assert!(!html.contains("data-filter=\"tags\""));
    // A failed check says what it found, in the list and in the trial's one-line summary.
    assert!(html.contains("<span class=\"label\">found</span><pre class=\"check-detail\">test tests::bound ... FAILED"));
    assert!(html.contains("cargo test exits 0: test tests::bound ... FAILED assertion"));
}

/// Trials whose cassettes are files named with hostile text under a temp folder: each link is
/// relative to the report's folder, percent-encoded (no scheme, no host, no markup), and given
/// only for a cassette that exists and lies under its folder.
#[test]
fn cassette_links_are_relative_and_inert() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let cassettes = dir.path().join("cassettes");
    std::fs::create_dir_all(&out).unwrap();
    let mut results = sample();
    let names = [
        "javascript:alert(1)//\"><script>alert(2)</script>.jsonl",
        "//evil.example/x.jsonl",
        "a b#c?d%e.jsonl",
    ];
    for (t, name) in results.trials.iter_mut().zip(names) {
        t.cassette = Some(format!("core/{name}"));
        let file = cassettes.join("core").join(name.trim_start_matches('/'));
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "{}").unwrap();
    }
    // A cassette that is not there, and one outside its folder, get no link.
    results.trials[3].cassette = Some("core/missing.jsonl".into());
    std::fs::write(dir.path().join("outside.jsonl"), "{}").unwrap();
    results.trials[4].cassette = Some("../outside.jsonl".into());

    let links = CassetteLinks::find(&results, &out, |_| Some(cassettes.clone()));
    let html = html::render_linked(&results, &links);
    let hrefs: Vec<&str> = html
        .split("<a class=\"cassette\" href=\"")
        .skip(1)
        .map(|rest| &rest[..rest.find('"').unwrap()])
        .collect();
    assert_eq!(
        hrefs,
        [
            "../cassettes/core/javascript%3Aalert%281%29/%22%3E%3Cscript%3Ealert%282%29%3C/script%3E.jsonl",
            "../cassettes/core/evil.example/x.jsonl",
            "../cassettes/core/a%20b%23c%3Fd%25e.jsonl",
        ]
    );
    // Each link leads to its file from the report's folder.
    for (href, name) in hrefs.iter().zip(names) {
        assert!(!href.contains(':') && !href.starts_with('/'));
        let decoded = percent_decode(href);
        let target = out.join(&decoded);
        assert!(target.is_file(), "{href} -> {}", target.display());
        assert!(decoded.ends_with(name.rsplit('/').next().unwrap()));
    }
    assert_eq!(html.matches("<script>").count(), 1);
    // Without links (merged shards, say), the cassette is named, not linked.
    assert!(!html::render(&results).contains("class=\"cassette\""));
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            out.push(u8::from_str_radix(&s[i + 1..i + 3], 16).unwrap());
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap()
}

/// Bidirectional controls (a right-to-left override, isolates, marks) in a check's detail and a
/// final text would reorder what the report shows around them (`exit 0` read as `0 tixe`, a
/// name shown backwards): every report shows them as their code point instead.
#[test]
fn bidi_controls_are_shown_not_obeyed() {
    let mut results = sample();
    let trojan =
        "access = \u{202e}\u{2066}// admin only\u{2069}\u{2066}is_admin\u{202c} \u{200f}\u{61c}";
    // A trial that did not pass, which every report lists.
    let t = &mut results.trials[2];
    t.final_text = trojan.to_string();
    t.checks
        .insert(0, check("text_contains", trojan, false, Some(trojan)));
    t.reason = Some(trojan.to_string());
    let (a, b) = (sample(), results.clone());
    let compared = compare_html::render(&a, &b, &compare(&a, &b, &CompareOptions::default()));
    for (name, text) in [
        ("html", html::render(&results)),
        ("markdown", markdown::render(&results)),
        ("junit", junit::render(&results)),
        ("compare", compared),
    ] {
        for c in [
            '\u{202e}', '\u{2066}', '\u{2069}', '\u{202c}', '\u{200f}', '\u{61c}',
        ] {
            assert!(!text.contains(c), "{name} holds U+{:04X}", c as u32);
        }
        assert!(text.contains("U+202E"), "{name} does not show the override");
    }
}

/// The sample run as B against itself as A, model 0's fix-off-by-one now failing in B.
fn compared() -> (EvalResults, EvalResults, String) {
    let a = sample();
    let mut b = sample();
    for t in b
        .trials
        .iter_mut()
        .filter(|t| t.task == "fix-off-by-one" && t.model == MODELS[0])
    {
        t.status = TrialStatus::Failed;
        t.score = 0.0;
        t.checks = vec![check(
            "command",
            "cargo test exits 0",
            false,
            Some("exit 101; output: \"assertion failed: 3 != 4\""),
        )];
        t.final_text = "I could not fix it.".into();
    }
    let page = compare_html::render(&a, &b, &compare(&a, &b, &CompareOptions::default()));
    (a, b, page)
}

/// The part of `page` from the `<details>` of the pair for `task` and `model` to its end.
fn pair<'a>(page: &'a str, task: &str, model: &str) -> &'a str {
    let head = format!("<b>core / {task}</b> <span class=\"model\">{model}</span>");
    let at = page.find(&head).unwrap_or_else(|| panic!("no pair {head}"));
    let start = page[..at].rfind("<details").unwrap();
    let end = at + page[at..].find("</details>").unwrap();
    &page[start..end]
}

#[test]
fn compare_page_sets_both_runs_side_by_side() {
    let (a, b, page) = compared();
    let comparison = compare(&a, &b, &CompareOptions::default());
    assert_eq!(
        page.matches("<details class=\"pair\"").count(),
        comparison.rows.len()
    );
    assert!(page.contains("id=\"compare-models\""));
    // The row that changed: both pass rates with their intervals, the delta and the verdict
    // (2/2 to 0/2 is within noise by Fisher's test: p = 1/6, which Holm's adjustment over the
    // five rows the verdicts come from makes 5/6).
    let row = page
        .lines()
        .find(|l| l.contains("core / fix-off-by-one</a></td><td>anthropic/"))
        .unwrap();
    assert!(row.contains("2/2 · 100.0%"), "{row}");
    assert!(row.contains("0/2 · 0.0%"), "{row}");
    assert!(row.contains("-100 pp"), "{row}");
    assert!(row.contains("0.8333"), "{row}");
    assert!(row.contains("badge verdict-changed"), "{row}");
    // Its trials side by side: what A said, what B said and what B's check found.
    let both = pair(&page, "fix-off-by-one", MODELS[0]);
    assert!(both.contains(" open>"), "a change is shown open");
    let (side_a, side_b) = both.split_once("class=\"side side-b\"").unwrap();
    assert!(side_a.contains("Fixed: the loop bound was off by one."));
    assert!(!side_a.contains("I could not fix it."));
    assert!(side_b.contains("I could not fix it."));
    assert!(side_b.contains("assertion failed: 3 != 4"));
    // Unchanged rows start closed.
    assert!(!pair(&page, "add-cli-flag", MODELS[0]).contains(" open>"));
    // Self-contained, and the sample's hostile text stays text.
    for bad in ["src=", "href=\"http", "<link", "@import", "url(", "://"] {
        assert!(!page.contains(bad), "the page references {bad}");
    }
    assert_eq!(page.matches("<script").count(), 1);
    assert!(!page.contains("<script>alert(1)"));
    assert!(page.contains("&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
}

#[test]
fn compare_page_filters_by_verdict_and_task() {
    let (a, b, page) = compared();
    let comparison = compare(&a, &b, &CompareOptions::default());
    // A box per verdict the rows have, with how many have it; shown only by the script.
    assert!(page.contains("<div class=\"controls\" hidden id=\"verdict-filter\">"));
    let same = comparison
        .rows
        .iter()
        .filter(|r| r.verdict == pi_evals::compare::Difference::Same)
        .count();
    assert!(same > 1);
    for (verdict, n) in [("changed", 1), ("same", same)] {
        let label = format!(
            "<label><input type=\"checkbox\" value=\"{verdict}\" checked> \
             <span class=\"badge verdict-{verdict}\">{verdict}</span> {n}</label>"
        );
        assert!(page.contains(&label), "{label}");
    }
    assert!(
        !page.contains("value=\"regressed\""),
        "no box for a verdict no row has"
    );
    // Rows and pairs carry what the filters read, and all are shown without the script.
    let attributes = format!(
        "data-verdict=\"changed\" data-suite=\"core\" data-task=\"fix-off-by-one\" data-model=\"{}\"",
        MODELS[0]
    );
    let row = page
        .lines()
        .find(|l| l.contains("core / fix-off-by-one</a></td><td>anthropic/"))
        .unwrap();
    assert!(row.starts_with(&format!("<tr {attributes}>")), "{row}");
    let both = pair(&page, "fix-off-by-one", MODELS[0]);
    assert!(both.contains(&format!(" {attributes} open>")), "{both}");
    assert_eq!(
        page.matches(" data-verdict=").count(),
        2 * comparison.rows.len()
    );
    assert!(!page.contains(" hidden data-") && !page.contains("<tr hidden"));
}

/// The sample with `s` in every place a user's text can be, in trial `k`.
fn with_text(s: &str, k: usize) -> EvalResults {
    let mut results = sample();
    let t = &mut results.trials[k];
    t.model = s.to_string();
    t.cassette = Some(s.to_string());
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
        .push(json!({"role": "toolResult", "toolName": s, "toolCallId": s, "content": s, "isError": true}));
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

        // The side-by-side page, the text on either side.
        let base = sample();
        let options = CompareOptions::default();
        let plain = with_text("x", k);
        for (a, b, plain_a, plain_b) in [(&results, &base, &plain, &base), (&base, &results, &base, &plain)] {
            let page = compare_html::render(a, b, &compare(a, b, &options));
            let plain_page = compare_html::render(plain_a, plain_b, &compare(plain_a, plain_b, &options));
            proptest::prop_assert_eq!(page.matches('<').count(), plain_page.matches('<').count());
            proptest::prop_assert_eq!(page.matches("<script").count(), 1);
        }
    }
}
