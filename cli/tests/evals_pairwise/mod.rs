//! `pi eval pairwise A B --judge MODEL`: two runs made by the real binary against the scripted
//! mock over real HTTP, then judged pair by pair by a judge that is a model call like any
//! other (the mock again, scripted, or the local LLM), recorded into a cassette per pair and
//! replayed from it offline. A judge that always picks the answer shown first is flagged and
//! makes no run win; a tampered cassette or a changed rubric is refused on replay; runs with no
//! task in common exit 2; hostile answers are escaped in the HTML page.

use pi_testkit::MockLlm;
use serde_json::{json, Value};

use super::{text_step, EvalEnv, Ran};

/// A suite of two tasks of three trials each.
const SUITE: &str = "name = \"pw\"\n[defaults]\nmodels = [\"mock/mock-model\"]\ntrials = 3\n\n\
    [[task]]\nid = \"code\"\nprompt = \"What is the code?\"\n\n[[task.check]]\nkind = \"text_contains\"\ntext = \"77\"\n\n\
    [[task]]\nid = \"greet\"\nprompt = \"Greet Ada.\"\n\n[[task.check]]\nkind = \"text_contains\"\ntext = \"Ada\"\n";

/// Runs the suite live against a mock answering `answers` (code's three trials, then
/// greet's), its results into `out`.
fn run(env: &EvalEnv, answers: &[&str], out: &str) {
    let script: Vec<Value> = answers.iter().map(|a| text_step(a)).collect();
    let mock = MockLlm::start(&Value::Array(script));
    env.serve(&mock);
    let suite = env.write("pw.toml", SUITE);
    let ran = env.eval(&[suite.to_str().unwrap(), "--jobs", "1", "-q", "--out", out]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
}

const A: [&str; 6] = [
    "The code is 77.",
    "I do not know.",
    "It is 77.",
    "Hello, Ada!",
    "Hi.",
    "Good day, Ada.",
];
const B: [&str; 6] = [
    "The code is 78.",
    "The code is 77, from the config file.",
    "77",
    "Hello there, Ada.",
    "Hello, Ada, nice to meet you.",
    "Hey.",
];

fn two_runs() -> EvalEnv {
    let env = EvalEnv::new(None);
    run(&env, &A, "a");
    run(&env, &B, "b");
    env
}

fn pairwise(env: &EvalEnv, args: &[&str]) -> Ran {
    let mut all = vec!["pairwise"];
    all.extend_from_slice(args);
    env.eval(&all)
}

fn json_of(ran: &Ran) -> Value {
    serde_json::from_str(&ran.stdout).unwrap_or_else(|e| panic!("{e}: {}", ran.stdout))
}

/// The judge's prompts shows the two answers of each pair in the order the output records, and
/// a judge that always says FIRST is flagged and makes B win only where B was shown first: not
/// a win for B. Recorded, it replays offline to the same output; a cassette whose answer was
/// tampered with, or a changed rubric, is refused for that pair (exit 1).
#[test]
fn a_judge_that_always_picks_the_first_is_flagged_and_replays_exactly_and_tampering_is_refused() {
    let env = two_runs();
    let judge = MockLlm::start(&json!((0..6)
        .map(|_| text_step("FIRST it reads better"))
        .collect::<Vec<_>>()));
    env.serve(&judge);
    let args = [
        "a",
        "b/results.json",
        "--judge",
        "mock/mock-model",
        "--seed",
        "5",
        "--record",
        "c",
        "--json",
        "--html",
        "pw.html",
    ];
    let recorded = pairwise(&env, &args);
    assert_eq!(recorded.code, 0, "{}\n{}", recorded.stdout, recorded.stderr);
    let report = json_of(&recorded);
    let pairs = report["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 6, "{report}");
    // Each prompt shows the answer the output says was first before the other one.
    let requests = judge.requests();
    assert_eq!(requests.len(), 6);
    let mut b_first = 0;
    for (pair, request) in pairs.iter().zip(&requests) {
        let asked = request.to_string();
        let (a, b) = (
            pair["answerA"].as_str().unwrap(),
            pair["answerB"].as_str().unwrap(),
        );
        let (a_at, b_at) = (asked.find(a).unwrap(), asked.find(b).unwrap());
        let first = pair["shownFirst"].as_str().unwrap();
        assert_eq!(first == "A", a_at < b_at, "{pair}");
        // FIRST maps back to whichever run was shown first.
        assert_eq!(pair["judgeSaid"], "first");
        assert_eq!(pair["winner"], first.to_lowercase(), "{pair}");
        b_first += usize::from(first == "B");
    }
    assert!(
        b_first > 0 && b_first < 6,
        "the order is shuffled: {b_first} of 6 B first"
    );
    assert_eq!(report["overall"]["wins"], b_first);
    assert_eq!(report["overall"]["losses"], 6 - b_first);
    assert_ne!(report["verdict"], "b_better");
    assert_eq!(report["positionBias"]["pickedFirst"], 6);
    assert_eq!(report["positionBias"]["flagged"], true);
    assert!(env.path("work/c/pw/code/0.pairwise.jsonl").is_file());
    assert!(env.path("work/c/pw/greet/2.pairwise.jsonl").is_file());
    drop(judge);

    // Replayed with the judge gone: the same output, to the byte.
    std::fs::write(env.path("agent/models.json"), "{}").unwrap();
    let mut replay_args = args;
    replay_args[6] = "--replay";
    let replayed = pairwise(&env, &replay_args);
    assert_eq!(replayed.code, 0, "{}", replayed.stderr);
    assert_eq!(replayed.stdout, recorded.stdout);
    // The text form says it too.
    let text = pairwise(
        &env,
        &[
            "a",
            "b",
            "--judge",
            "mock/mock-model",
            "--seed",
            "5",
            "--replay",
            "c",
        ],
    );
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(text.stdout.contains("FLAGGED"), "{}", text.stdout);

    // Another seed shows another order somewhere: its prompts are not the recorded ones.
    let reseeded = pairwise(
        &env,
        &[
            "a",
            "b",
            "--judge",
            "mock/mock-model",
            "--seed",
            "6",
            "--replay",
            "c",
            "--json",
        ],
    );
    let reseeded_json = json_of(&reseeded);
    let moved = reseeded_json["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .zip(pairs)
        .filter(|(x, y)| x["shownFirst"] != y["shownFirst"])
        .count();
    assert!(moved > 0, "seed 6 moves some pair");
    assert_eq!(reseeded.code, 1, "{}", reseeded.stdout);
    assert_eq!(reseeded_json["overall"]["errors"], moved);

    // A changed rubric: every pair refused, none given the old verdict.
    let rubric = pairwise(
        &env,
        &[
            "a",
            "b",
            "--judge",
            "mock/mock-model",
            "--seed",
            "5",
            "--replay",
            "c",
            "--rubric",
            "Shorter is better.",
            "--json",
        ],
    );
    assert_eq!(rubric.code, 1, "{}", rubric.stderr);
    let refused = json_of(&rubric);
    assert_eq!(refused["overall"]["errors"], 6, "{refused}");
    assert!(
        refused["pairs"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("another prompt"),
        "{refused}"
    );

    // A cassette whose recorded answer was edited: that pair is refused, the others replay.
    let cassette = env.path("work/c/pw/code/1.pairwise.jsonl");
    let text = std::fs::read_to_string(&cassette).unwrap();
    assert!(text.contains("I do not know."));
    std::fs::write(&cassette, text.replace("I do not know.", "I know: 77.")).unwrap();
    let tampered = pairwise(&env, &replay_args);
    assert_eq!(tampered.code, 1, "{}", tampered.stderr);
    let tampered = json_of(&tampered);
    assert_eq!(tampered["overall"]["errors"], 1, "{tampered}");
    let broken = &tampered["pairs"][1];
    assert_eq!(
        (broken["task"].as_str(), broken["trial"].as_u64()),
        (Some("code"), Some(1))
    );
    assert_eq!(broken["error"], true);
    assert!(broken.get("winner").is_none(), "never a verdict: {broken}");
}

/// Hostile answers are text in the page, never markup.
#[test]
fn hostile_answers_are_escaped_in_the_html_page() {
    let env = EvalEnv::new(None);
    let hostile = "<script>alert('pwned')</script><img src=x onerror=alert(1)>";
    run(&env, &A, "a");
    let mut b = B;
    b[0] = hostile;
    run(&env, &b, "b");
    let judge = MockLlm::start(&json!((0..6)
        .map(|_| text_step("SECOND <b>bold</b> claim"))
        .collect::<Vec<_>>()));
    env.serve(&judge);
    let ran = pairwise(
        &env,
        &["a", "b", "--judge", "mock/mock-model", "--html", "pw.html"],
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let page = std::fs::read_to_string(env.path("work/pw.html")).unwrap();
    assert!(page.contains(
        "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"
    ));
    assert!(!page.contains("<script>alert") && !page.contains("<img") && !page.contains("<b>bold"));
    assert_eq!(page.matches("<details class=\"pair\"").count(), 6);
}

/// Runs with no task in common, a missing file, or a missing replay folder: exit 2 with a
/// message, and no judge is asked.
#[test]
fn runs_with_no_task_in_common_exit_2() {
    let env = two_runs();
    let other = std::fs::read_to_string(env.path("work/b/results.json"))
        .unwrap()
        .replace("\"task\": \"code\"", "\"task\": \"code2\"")
        .replace("\"task\": \"greet\"", "\"task\": \"greet2\"");
    env.write("work/c/results.json", &other);
    let judge = MockLlm::start(&json!([text_step("FIRST")]));
    env.serve(&judge);
    let ran = pairwise(&env, &["a", "c", "--judge", "mock/mock-model"]);
    assert_eq!(ran.code, 2, "{}\n{}", ran.stdout, ran.stderr);
    assert!(ran.stderr.contains("no task in common"), "{}", ran.stderr);
    let missing = pairwise(&env, &["a", "nope", "--judge", "mock/mock-model"]);
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    let no_folder = pairwise(
        &env,
        &["a", "b", "--judge", "mock/mock-model", "--replay", "gone"],
    );
    assert_eq!(no_folder.code, 2, "{}", no_folder.stderr);
    let unknown = pairwise(&env, &["a", "b", "--judge", "nobody/model"]);
    assert_eq!(unknown.code, 2, "{}", unknown.stderr);
    assert!(judge.requests().is_empty());
}

/// The local LLM as the judge, when it runs: whatever it answers, each pair is a verdict or an
/// error (never a silent tie), recorded, and replayed to the same output with the model gone.
#[test]
fn the_local_llm_judges_pairs_and_replays_to_the_same_output() {
    let Some(base_url) = pi_testkit::live_llm_base_url() else {
        return;
    };
    let env = two_runs();
    let models = json!({"providers": {"local": {
        "baseUrl": base_url, "api": "openai-completions", "apiKey": "local",
        "compat": {"maxTokensField": "max_tokens"},
        "models": [{"id": "smollm2-135m-instruct", "name": "SmolLM2 135M",
                    "contextWindow": pi_testkit::LIVE_LLM_CONTEXT_WINDOW, "maxTokens": 64}]}}});
    std::fs::write(env.path("agent/models.json"), models.to_string()).unwrap();
    let args = [
        "a",
        "b",
        "--judge",
        "local/smollm2-135m-instruct",
        "--record",
        "c",
        "--json",
    ];
    let live = pairwise(&env, &args);
    assert!(live.code == 0 || live.code == 1, "{}", live.stderr);
    let report = json_of(&live);
    for pair in report["pairs"].as_array().unwrap() {
        assert!(
            pair["error"] == true || pair.get("judgeSaid").is_some(),
            "{pair}"
        );
    }
    std::fs::write(env.path("agent/models.json"), "{}").unwrap();
    let mut again = args;
    again[4] = "--replay";
    let replayed = pairwise(&env, &again);
    assert_eq!(replayed.code, live.code, "{}", replayed.stderr);
    assert_eq!(replayed.stdout, live.stdout);
}
