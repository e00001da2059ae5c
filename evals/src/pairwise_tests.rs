#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::results::TrialStatus;
use crate::test_support::{results, trial};

fn answered(task: &str, model: &str, n: u32, status: TrialStatus, text: &str) -> TrialResult {
    let mut t = trial("s", task, model, n, status, 1.0);
    t.final_text = text.to_owned();
    t.transcript = vec![json!({"role": "user", "content": format!("do {task}")})];
    t
}

#[test]
fn trial_i_pairs_with_trial_i_and_the_rest_is_said_unpaired() {
    let a = results(vec![
        answered("t", "m", 0, TrialStatus::Passed, "a0"),
        answered("t", "m", 1, TrialStatus::Failed, "a1"),
        answered("t", "m", 2, TrialStatus::Passed, "a2"),
        answered("t", "m", 3, TrialStatus::Error, ""),
        answered("only-a", "m", 0, TrialStatus::Passed, "x"),
    ]);
    let b = results(vec![
        answered("t", "n", 0, TrialStatus::Passed, "b0"),
        answered("t", "n", 1, TrialStatus::Diverged, ""),
        answered("t", "n", 3, TrialStatus::Passed, "b3"),
        answered("t", "n", 4, TrialStatus::Passed, "b4"),
    ]);
    let pairing = pair(&a, &b, None, None).unwrap();
    assert_eq!(pairing.pairs.len(), 1);
    let p = &pairing.pairs[0];
    assert_eq!(
        (p.trial, p.answer_a.as_str(), p.answer_b.as_str()),
        (0, "a0", "b0")
    );
    assert_eq!((p.model_a.as_str(), p.model_b.as_str()), ("m", "n"));
    assert_eq!(p.asked, "do t");
    let why: Vec<(Option<u32>, &str)> = pairing
        .unpaired
        .iter()
        .map(|u| (u.trial, u.why.as_str()))
        .collect();
    assert_eq!(
        why,
        [
            (None, "only A ran this task"),
            (Some(1), "no answer to judge: diverged in B"),
            (Some(2), "only A ran this trial"),
            (Some(3), "no answer to judge: error in A"),
            (Some(4), "only B ran this trial"),
        ]
    );
}

#[test]
fn runs_without_a_task_in_common_or_with_two_models_are_refused() {
    let a = results(vec![answered("x", "m", 0, TrialStatus::Passed, "1")]);
    let b = results(vec![answered("y", "m", 0, TrialStatus::Passed, "2")]);
    let error = pair(&a, &b, None, None).unwrap_err();
    assert_eq!(
        error.to_string(),
        "the two runs have no task in common (A: s/x; B: s/y)"
    );
    let two = results(vec![
        answered("x", "m", 0, TrialStatus::Passed, "1"),
        answered("x", "n", 0, TrialStatus::Passed, "2"),
    ]);
    let error = pair(&a, &two, None, None).unwrap_err();
    assert!(error.to_string().contains("--model-b"), "{error}");
    let picked = pair(&a, &two, None, Some("n")).unwrap();
    assert_eq!(picked.pairs[0].answer_b, "2");
}

#[test]
fn only_a_first_second_or_tie_line_is_read() {
    assert_eq!(pick("FIRST: clearer"), Ok((Pick::First, "clearer".into())));
    assert_eq!(
        pick("\n**SECOND** - right"),
        Ok((Pick::Second, "right".into()))
    );
    assert_eq!(pick("TIE"), Ok((Pick::Tie, String::new())));
    for garbage in [
        "",
        "first",
        "FIRSTLY",
        "I pick FIRST",
        "Answer 1",
        "TIE_BREAK",
    ] {
        let error = pick(garbage).unwrap_err();
        assert!(error.starts_with("the judge did not answer"), "{garbage:?}");
    }
}

#[test]
fn picks_map_back_to_the_run_shown_in_that_place() {
    assert_eq!(winner(Pick::First, Run::A), Winner::A);
    assert_eq!(winner(Pick::First, Run::B), Winner::B);
    assert_eq!(winner(Pick::Second, Run::A), Winner::B);
    assert_eq!(winner(Pick::Second, Run::B), Winner::A);
    assert_eq!(winner(Pick::Tie, Run::B), Winner::Tie);
}

fn made_pair(trial: u32, a: &str, b: &str) -> Pair {
    Pair {
        suite: "s".into(),
        task: format!("t{}", trial % 3),
        trial,
        model_a: "m".into(),
        model_b: "n".into(),
        asked: "q".into(),
        answer_a: a.into(),
        answer_b: b.into(),
    }
}

fn swapped(p: &Pair) -> Pair {
    Pair {
        model_a: p.model_b.clone(),
        model_b: p.model_a.clone(),
        answer_a: p.answer_b.clone(),
        answer_b: p.answer_a.clone(),
        ..p.clone()
    }
}

#[test]
fn the_order_is_seeded_and_shuffled() {
    let pairs: Vec<Pair> = (0..64)
        .map(|i| made_pair(i, &format!("a{i}"), &format!("b{i}")))
        .collect();
    let order = |seed| -> Vec<Run> { pairs.iter().map(|p| shown_first(p, seed)).collect() };
    assert_eq!(order(7), order(7), "a re-run shows the same order");
    assert_ne!(order(7), order(8), "another seed, another order");
    let a_first = order(7).iter().filter(|r| **r == Run::A).count();
    assert!(
        (16..=48).contains(&a_first),
        "{a_first} of 64 shown A first"
    );
}

#[test]
fn a_judge_that_always_picks_the_first_is_flagged_and_makes_neither_run_win() {
    let pairs: Vec<Pair> = (0..40)
        .map(|i| made_pair(i, &format!("a{i}"), &format!("b{i}")))
        .collect();
    let results = judge(&pairs, "r", 3, &mut |_, _| Ok("FIRST".into()));
    let report = PairwiseReport::new("j", "r", 3, results, Vec::new());
    assert!(report.position_bias.flagged);
    assert_eq!(report.position_bias.picked_first, 40);
    assert_eq!(
        report.verdict,
        Verdict::NoSignificantDifference,
        "{report:?}"
    );
    // B wins exactly where B was shown first.
    let b_first = pairs.iter().filter(|p| shown_first(p, 3) == Run::B).count();
    assert_eq!(report.overall.wins as usize, b_first);
}

#[test]
fn an_unreadable_answer_or_a_failed_call_is_an_error_never_a_tie() {
    let pairs = [
        made_pair(0, "x", "y"),
        made_pair(1, "x", "y"),
        made_pair(2, "z", "z"),
    ];
    let mut answers = vec![Ok("maybe".to_owned()), Err("no network".to_owned())].into_iter();
    let results = judge(&pairs, "r", 0, &mut |_, _| answers.next().unwrap());
    assert!(results[0].error && results[1].error);
    assert_eq!(results[1].reason, "no network");
    assert_eq!(results[2].winner, Some(Winner::Tie), "identical answers");
    let report = PairwiseReport::new("j", "r", 0, results, Vec::new());
    assert_eq!((report.overall.ties, report.errors()), (1, 2));
    assert!(report
        .render_text()
        .contains("error: s/t0 trial 0: the judge did not answer"));
}

#[test]
fn the_prompt_shows_the_rubric_the_task_and_both_answers_in_order() {
    let p = made_pair(0, "ANSWER-A", "ANSWER-B");
    let text = prompt("RUBRIC", &p, Run::B);
    let (b_at, a_at) = (
        text.find("ANSWER-B").unwrap(),
        text.find("ANSWER-A").unwrap(),
    );
    assert!(
        b_at < a_at && text.contains("RUBRIC") && text.contains("# What the agent was asked\nq")
    );
}

#[test]
fn statistics_known_values() {
    // 9 wins, 1 loss: two-sided sign test 2 * 11/1024.
    assert!((sign_test_two_sided(9, 1) - 22.0 / 1024.0).abs() < 1e-12);
    assert_eq!(sign_test_two_sided(5, 5), 1.0);
    assert_eq!(sign_test_two_sided(0, 0), 1.0);
    assert!((sign_test_two_sided(0, 6) - 2.0 / 64.0).abs() < 1e-12);
}

fn words() -> impl Strategy<Value = String> {
    prop_oneof![Just("x".to_owned()), Just("y".to_owned()), "[a-z]{1,6}"]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Swapping A and B shows the judge the same prompts, so with any judge (here one that
    /// answers from a hash of the prompt, garbage included) the result is exactly mirrored.
    #[test]
    fn swapping_a_and_b_mirrors_the_result_exactly(
        answers in proptest::collection::vec((words(), words()), 1..24),
        seed in any::<u64>(),
    ) {
        let pairs: Vec<Pair> = answers
            .iter()
            .enumerate()
            .map(|(i, (a, b))| made_pair(u32::try_from(i).unwrap(), a, b))
            .collect();
        let mirror: Vec<Pair> = pairs.iter().map(swapped).collect();
        let fake = |_: &Pair, prompt: &str| -> Result<String, String> {
            let h = crate::digest::sha256_hex(prompt.as_bytes());
            Ok(["FIRST", "SECOND", "TIE", "huh"][usize::from(h.as_bytes()[0] % 4)].to_owned())
        };
        let ab = PairwiseReport::new("j", "r", seed, judge(&pairs, "r", seed, &mut { fake }), Vec::new());
        let ba = PairwiseReport::new("j", "r", seed, judge(&mirror, "r", seed, &mut { fake }), Vec::new());
        prop_assert_eq!(ab.overall.wins, ba.overall.losses);
        prop_assert_eq!(ab.overall.losses, ba.overall.wins);
        prop_assert_eq!(ab.overall.ties, ba.overall.ties);
        prop_assert_eq!(ab.overall.errors, ba.overall.errors);
        prop_assert!((ab.overall.p_value - ba.overall.p_value).abs() < 1e-15);
        prop_assert!((ab.overall.low - (1.0 - ba.overall.high)).abs() < 1e-12);
        prop_assert_eq!(&ab.position_bias, &ba.position_bias);
        for (x, y) in ab.tasks.iter().zip(&ba.tasks) {
            prop_assert_eq!(x.tally.wins, y.tally.losses);
            prop_assert!((x.p_adjusted - y.p_adjusted).abs() < 1e-15);
        }
        let flipped = |v: Verdict| match v {
            Verdict::BBetter => Verdict::ABetter,
            Verdict::ABetter => Verdict::BBetter,
            v => v,
        };
        prop_assert_eq!(ab.verdict, flipped(ba.verdict));
    }

    /// The tallies add up, the interval holds the rate, and p is a probability.
    #[test]
    fn tallies_are_consistent(winners in proptest::collection::vec(0u8..4, 0..60)) {
        let pairs: Vec<Pair> = (0..winners.len())
            .map(|i| made_pair(u32::try_from(i).unwrap(), &format!("a{i}"), &format!("b{i}")))
            .collect();
        let mut said = winners.iter();
        let results = judge(&pairs, "r", 1, &mut |pair, _| {
            let w = *said.next().unwrap();
            let first = shown_first(pair, 1);
            Ok(match (w, first) {
                (0, Run::B) | (1, Run::A) => "FIRST",
                (0, Run::A) | (1, Run::B) => "SECOND",
                (2, _) => "TIE",
                _ => "nonsense",
            }.to_owned())
        });
        let report = PairwiseReport::new("j", "r", 1, results, Vec::new());
        let o = &report.overall;
        let want = |k: u8| u32::try_from(winners.iter().filter(|w| **w == k).count()).unwrap();
        prop_assert_eq!((o.wins, o.losses, o.ties, o.errors), (want(0), want(1), want(2), want(3)));
        if let Some(rate) = o.win_rate {
            prop_assert!(o.low <= rate + 1e-12 && rate <= o.high + 1e-12);
        }
        prop_assert!((0.0..=1.0).contains(&o.p_value));
    }
}
