//! Pairwise comparison of two runs' answers by a judge model (`pi eval pairwise A B`): for
//! each task both runs ran, trial i of A is paired with trial i of B, and the judge says
//! which final answer does the task better under a rubric.
//!
//! Judges favour a position (often the first answer shown), so the order of the two answers is
//! randomised per pair, from the seed: the answer shown first is the one whose
//! `sha256(seed, suite, task, trial, answer)` is smaller. A re-run with the same seed shows the
//! same order (and so replays its cassettes), and swapping A and B shows the judge the very
//! same prompts, so the result is exactly mirrored. Identical answers are a tie without asking.
//! The judge's FIRST / SECOND / TIE is mapped back to A / B; any other answer is an error for
//! that pair, counted and shown, never a tie. The formulas are in `docs/evals.md`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use crate::results::{EvalResults, TrialResult};
use crate::significance::{holm, sign_test_worse, wilson};

/// The rubric when none is given.
pub const DEFAULT_RUBRIC: &str =
    "The better answer does what the task asks: correct, complete, and clear, in that order.";

/// The significance level of the verdicts (the overall one and the tasks' Holm-adjusted ones).
pub const ALPHA: f64 = 0.05;

/// Which run an answer came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Run {
    A,
    B,
}

/// One pair: the same trial of the same task in both runs.
#[derive(Clone, Debug, PartialEq)]
pub struct Pair {
    pub suite: String,
    pub task: String,
    pub trial: u32,
    pub model_a: String,
    pub model_b: String,
    /// What the agent was asked (the user messages of A's trial).
    pub asked: String,
    pub answer_a: String,
    pub answer_b: String,
}

/// A trial or a task that got no partner, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Unpaired {
    pub suite: String,
    pub task: String,
    /// `None`: the whole task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trial: Option<u32>,
    pub why: String,
}

/// The pairs of two runs, and what was left unpaired.
#[derive(Clone, Debug, PartialEq)]
pub struct Pairing {
    pub pairs: Vec<Pair>,
    pub unpaired: Vec<Unpaired>,
}

/// Why two runs cannot be paired at all.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum PairingError {
    #[error("the two runs have no task in common (A: {a}; B: {b})")]
    NoTaskInCommon { a: String, b: String },
    #[error("run {run} ran task `{suite}/{task}` with several models ({models}): pick one with --model-{side} MODEL")]
    SeveralModels {
        run: &'static str,
        side: &'static str,
        suite: String,
        task: String,
        models: String,
    },
}

/// Trials of one task in one run, by model.
type Tasks<'a> = BTreeMap<(String, String), BTreeMap<String, Vec<&'a TrialResult>>>;

fn tasks_of<'a>(run: &'a EvalResults, model: Option<&str>) -> Tasks<'a> {
    let mut tasks: Tasks<'a> = BTreeMap::new();
    for t in run
        .trials
        .iter()
        .filter(|t| model.is_none_or(|m| t.model == m))
    {
        tasks
            .entry((t.suite.clone(), t.task.clone()))
            .or_default()
            .entry(t.model.clone())
            .or_default()
            .push(t);
    }
    tasks
}

/// Pairs trial i of A with trial i of B for each (suite, task) both ran, keeping only the
/// trials of `model_a` in A and `model_b` in B when given. A trial that errored or diverged has
/// no answer to judge and is left unpaired, as is one without a partner.
pub fn pair<'a>(
    a: &'a EvalResults,
    b: &'a EvalResults,
    model_a: Option<&str>,
    model_b: Option<&str>,
) -> Result<Pairing, PairingError> {
    let (tasks_a, tasks_b) = (tasks_of(a, model_a), tasks_of(b, model_b));
    let one_model = |tasks: &Tasks<'_>, run: &'static str, side: &'static str| {
        for ((suite, task), models) in tasks {
            if models.len() > 1 {
                return Err(PairingError::SeveralModels {
                    run,
                    side,
                    suite: suite.clone(),
                    task: task.clone(),
                    models: models.keys().cloned().collect::<Vec<_>>().join(", "),
                });
            }
        }
        Ok(())
    };
    one_model(&tasks_a, "A", "a")?;
    one_model(&tasks_b, "B", "b")?;
    let names = |tasks: &Tasks<'_>| {
        let names: Vec<String> = tasks.keys().map(|(s, t)| format!("{s}/{t}")).collect();
        if names.is_empty() {
            "no trials".to_owned()
        } else {
            names.join(", ")
        }
    };
    if !tasks_a.keys().any(|k| tasks_b.contains_key(k)) {
        return Err(PairingError::NoTaskInCommon {
            a: names(&tasks_a),
            b: names(&tasks_b),
        });
    }
    let keys: BTreeSet<&(String, String)> = tasks_a.keys().chain(tasks_b.keys()).collect();
    let mut pairing = Pairing {
        pairs: Vec::new(),
        unpaired: Vec::new(),
    };
    for key in keys {
        let (suite, task) = key;
        let unpaired = |trial, why: String| Unpaired {
            suite: suite.clone(),
            task: task.clone(),
            trial,
            why,
        };
        let (side_a, side_b) = (trials_of(&tasks_a, key), trials_of(&tasks_b, key));
        if side_a.is_empty() || side_b.is_empty() {
            let only = if side_a.is_empty() { "B" } else { "A" };
            pairing
                .unpaired
                .push(unpaired(None, format!("only {only} ran this task")));
            continue;
        }
        let by_trial = |side: Vec<&'a TrialResult>| -> BTreeMap<u32, &'a TrialResult> {
            side.into_iter().map(|t| (t.trial, t)).collect()
        };
        let (by_a, by_b) = (by_trial(side_a), by_trial(side_b));
        let numbers: BTreeSet<u32> = by_a.keys().chain(by_b.keys()).copied().collect();
        for n in numbers {
            match (by_a.get(&n), by_b.get(&n)) {
                (Some(ta), Some(tb)) if ta.status.is_verdict() && tb.status.is_verdict() => {
                    pairing.pairs.push(Pair {
                        suite: suite.clone(),
                        task: task.clone(),
                        trial: n,
                        model_a: ta.model.clone(),
                        model_b: tb.model.clone(),
                        asked: asked(ta),
                        answer_a: ta.final_text.clone(),
                        answer_b: tb.final_text.clone(),
                    });
                }
                (Some(ta), Some(tb)) => {
                    let broken: Vec<String> = [("A", ta), ("B", tb)]
                        .iter()
                        .filter(|(_, t)| !t.status.is_verdict())
                        .map(|(run, t)| {
                            let status = serde_json::to_value(t.status).unwrap_or_default();
                            format!("{} in {run}", status.as_str().unwrap_or("no verdict"))
                        })
                        .collect();
                    pairing.unpaired.push(unpaired(
                        Some(n),
                        format!("no answer to judge: {}", broken.join(", ")),
                    ));
                }
                (Some(_), None) => pairing
                    .unpaired
                    .push(unpaired(Some(n), "only A ran this trial".into())),
                (None, _) => pairing
                    .unpaired
                    .push(unpaired(Some(n), "only B ran this trial".into())),
            }
        }
    }
    Ok(pairing)
}

/// The trials of the one model that ran `key` in a run (none when it did not).
fn trials_of<'a>(tasks: &Tasks<'a>, key: &(String, String)) -> Vec<&'a TrialResult> {
    tasks
        .get(key)
        .and_then(|m| m.values().next())
        .cloned()
        .unwrap_or_default()
}

/// The user messages of a trial, one after the other.
fn asked(trial: &TrialResult) -> String {
    trial
        .transcript
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .map(|m| crate::judge::text_of(m.get("content").unwrap_or(&Value::Null)))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Which answer of `pair` the judge is shown first with `seed`: the one whose
/// `sha256(seed, suite, task, trial, answer)` is smaller (A when the answers are the same).
/// Seeded, so a re-run shows the same order; symmetric, so swapping the runs shows the same
/// text first.
pub fn shown_first(pair: &Pair, seed: u64) -> Run {
    let key = |answer: &str| {
        crate::digest::sha256_hex(
            format!(
                "{seed}\0{}\0{}\0{}\0{answer}",
                pair.suite, pair.task, pair.trial
            )
            .as_bytes(),
        )
    };
    if key(&pair.answer_a) <= key(&pair.answer_b) {
        Run::A
    } else {
        Run::B
    }
}

/// The prompt the judge gets for `pair` shown in the order `first` says (see `docs/evals.md`).
pub fn prompt(rubric: &str, pair: &Pair, first: Run) -> String {
    let (one, two) = match first {
        Run::A => (&pair.answer_a, &pair.answer_b),
        Run::B => (&pair.answer_b, &pair.answer_a),
    };
    format!(
        "You are comparing two answers a coding agent gave to the same task. Judge only by the rubric.\n\n\
         # Rubric\n{rubric}\n\n\
         # What the agent was asked\n{}\n\n\
         # Answer 1\n{one}\n\n\
         # Answer 2\n{two}\n\n\
         Reply with one line: FIRST (answer 1 is better), SECOND (answer 2 is better) or TIE, then a space and your reason in one sentence.",
        pair.asked
    )
}

/// What the judge said, by position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Pick {
    First,
    Second,
    Tie,
}

/// Reads the judge's answer: its first non-empty line, `FIRST`, `SECOND` or `TIE` as a word,
/// then its reason. Anything else is an error saying what it answered.
pub fn pick(answer: &str) -> Result<(Pick, String), String> {
    let line = answer
        .lines()
        .map(|l| l.trim().trim_matches(|c| c == '*' || c == '#').trim())
        .find(|l| !l.is_empty())
        .unwrap_or("");
    for (word, pick) in [
        ("FIRST", Pick::First),
        ("SECOND", Pick::Second),
        ("TIE", Pick::Tie),
    ] {
        if let Some(rest) = line
            .strip_prefix(word)
            .filter(|rest| !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_'))
        {
            let reason = rest.trim_start_matches(|c: char| {
                c == ':' || c == '-' || c == '.' || c == '*' || c.is_whitespace()
            });
            return Ok((pick, reason.to_owned()));
        }
    }
    let head: String = answer.chars().take(200).collect();
    Err(format!(
        "the judge did not answer FIRST, SECOND or TIE: {head:?}"
    ))
}

/// Which run won a pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Winner {
    A,
    B,
    Tie,
}

/// One pair judged (or not).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PairResult {
    pub suite: String,
    pub task: String,
    pub trial: u32,
    pub model_a: String,
    pub model_b: String,
    /// Which run's answer the judge was shown first.
    pub shown_first: Run,
    /// What the judge said; absent when it was not asked (identical answers) or errored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge_said: Option<Pick>,
    /// Absent when the pair errored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub winner: Option<Winner>,
    /// The judge's reason, or why the pair errored.
    pub reason: String,
    pub error: bool,
    pub answer_a: String,
    pub answer_b: String,
}

/// Judges every pair with `ask(pair, prompt)`, which returns the judge's answer or why it
/// could not be had.
pub fn judge(
    pairs: &[Pair],
    rubric: &str,
    seed: u64,
    ask: &mut dyn FnMut(&Pair, &str) -> Result<String, String>,
) -> Vec<PairResult> {
    pairs
        .iter()
        .map(|pair| {
            let first = shown_first(pair, seed);
            let mut result = PairResult {
                suite: pair.suite.clone(),
                task: pair.task.clone(),
                trial: pair.trial,
                model_a: pair.model_a.clone(),
                model_b: pair.model_b.clone(),
                shown_first: first,
                judge_said: None,
                winner: None,
                reason: String::new(),
                error: false,
                answer_a: pair.answer_a.clone(),
                answer_b: pair.answer_b.clone(),
            };
            if pair.answer_a == pair.answer_b {
                result.winner = Some(Winner::Tie);
                result.reason = "the answers are the same (the judge was not asked)".into();
                return result;
            }
            match ask(pair, &prompt(rubric, pair, first)).and_then(|answer| pick(&answer)) {
                Ok((said, reason)) => {
                    result.judge_said = Some(said);
                    result.winner = Some(winner(said, first));
                    result.reason = reason;
                }
                Err(why) => {
                    result.error = true;
                    result.reason = why;
                }
            }
            result
        })
        .collect()
}

/// The run a pick names, given which was shown first.
pub fn winner(said: Pick, first: Run) -> Winner {
    match (said, first) {
        (Pick::Tie, _) => Winner::Tie,
        (Pick::First, Run::A) | (Pick::Second, Run::B) => Winner::A,
        (Pick::First, Run::B) | (Pick::Second, Run::A) => Winner::B,
    }
}

/// Wins, losses and ties of B against A, with their statistics.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tally {
    /// Pairs B won, lost (A won) and tied; pairs that errored.
    pub wins: u32,
    pub losses: u32,
    pub ties: u32,
    pub errors: u32,
    /// `wins / (wins + losses)`; absent when nothing was decided.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub win_rate: Option<f64>,
    /// Wilson's 95% interval of the win rate (0 to 1 when nothing was decided).
    pub low: f64,
    pub high: f64,
    /// Exact two-sided sign test of wins against losses (ties left out).
    pub p_value: f64,
}

impl Tally {
    fn of<'a>(results: impl Iterator<Item = &'a PairResult>) -> Tally {
        let (mut wins, mut losses, mut ties, mut errors) = (0, 0, 0, 0);
        for r in results {
            match r.winner {
                Some(Winner::B) => wins += 1,
                Some(Winner::A) => losses += 1,
                Some(Winner::Tie) => ties += 1,
                None => errors += 1,
            }
        }
        let decided = wins + losses;
        let (low, high) = wilson(wins, decided);
        Tally {
            wins,
            losses,
            ties,
            errors,
            win_rate: (decided > 0).then(|| f64::from(wins) / f64::from(decided)),
            low,
            high,
            p_value: sign_test_two_sided(wins, losses),
        }
    }
}

/// The exact two-sided sign test: twice the smaller tail of Binomial(wins + losses, 1/2),
/// capped at 1 (1 with nothing decided).
pub(crate) fn sign_test_two_sided(wins: u32, losses: u32) -> f64 {
    let lower = sign_test_worse(wins, losses).min(sign_test_worse(losses, wins));
    (2.0 * lower).min(1.0)
}

/// One task's tally.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskTally {
    pub suite: String,
    pub task: String,
    #[serde(flatten)]
    pub tally: Tally,
    /// The p-value adjusted by Holm's method over the tasks.
    pub p_adjusted: f64,
    pub verdict: Verdict,
}

/// What the judge's picks say about B against A, at [`ALPHA`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    BBetter,
    ABetter,
    NoSignificantDifference,
}

impl Verdict {
    fn of(tally: &Tally, p: f64) -> Verdict {
        match tally.wins.cmp(&tally.losses) {
            std::cmp::Ordering::Greater if p < ALPHA => Verdict::BBetter,
            std::cmp::Ordering::Less if p < ALPHA => Verdict::ABetter,
            _ => Verdict::NoSignificantDifference,
        }
    }

    /// In words.
    pub fn words(self) -> &'static str {
        match self {
            Verdict::BBetter => "B better",
            Verdict::ABetter => "A better",
            Verdict::NoSignificantDifference => "no significant difference",
        }
    }
}

/// How often the judge picked whichever answer it was shown first.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PositionBias {
    /// Pairs where the judge picked one (not a tie, not an error).
    pub decided: u32,
    pub picked_first: u32,
    /// Wilson's 95% interval of the share picked first.
    pub low: f64,
    pub high: f64,
    /// The interval leaves out one half: the judge favours a position.
    pub flagged: bool,
}

impl PositionBias {
    fn of(results: &[PairResult]) -> PositionBias {
        let decided = count(
            results
                .iter()
                .filter(|r| matches!(r.judge_said, Some(Pick::First | Pick::Second)) && !r.error),
        );
        let picked_first = count(
            results
                .iter()
                .filter(|r| r.judge_said == Some(Pick::First) && !r.error),
        );
        let (low, high) = wilson(picked_first, decided);
        PositionBias {
            decided,
            picked_first,
            low,
            high,
            flagged: decided > 0 && (low > 0.5 || high < 0.5),
        }
    }
}

fn count<T>(items: impl Iterator<Item = T>) -> u32 {
    u32::try_from(items.count()).unwrap_or(u32::MAX)
}

/// The whole comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PairwiseReport {
    pub judge: String,
    pub rubric: String,
    pub seed: u64,
    pub alpha: f64,
    /// Every task with a pair, sorted by suite and task.
    pub tasks: Vec<TaskTally>,
    pub overall: Tally,
    pub verdict: Verdict,
    pub position_bias: PositionBias,
    pub unpaired: Vec<Unpaired>,
    pub pairs: Vec<PairResult>,
}

impl PairwiseReport {
    /// Tallies `pairs` per task and overall.
    pub fn new(
        judge: &str,
        rubric: &str,
        seed: u64,
        pairs: Vec<PairResult>,
        unpaired: Vec<Unpaired>,
    ) -> PairwiseReport {
        let keys: BTreeSet<(&str, &str)> = pairs
            .iter()
            .map(|p| (p.suite.as_str(), p.task.as_str()))
            .collect();
        let tallies: Vec<((&str, &str), Tally)> = keys
            .into_iter()
            .map(|(s, t)| {
                let mine = pairs.iter().filter(|p| p.suite == s && p.task == t);
                ((s, t), Tally::of(mine))
            })
            .collect();
        let adjusted = holm(&tallies.iter().map(|(_, t)| t.p_value).collect::<Vec<_>>());
        let tasks = tallies
            .into_iter()
            .zip(adjusted)
            .map(|(((suite, task), tally), p_adjusted)| TaskTally {
                suite: suite.to_owned(),
                task: task.to_owned(),
                verdict: Verdict::of(&tally, p_adjusted),
                tally,
                p_adjusted,
            })
            .collect();
        let overall = Tally::of(pairs.iter());
        PairwiseReport {
            judge: judge.to_owned(),
            rubric: rubric.to_owned(),
            seed,
            alpha: ALPHA,
            tasks,
            verdict: Verdict::of(&overall, overall.p_value),
            overall,
            position_bias: PositionBias::of(&pairs),
            unpaired,
            pairs,
        }
    }

    /// Pairs that errored.
    pub fn errors(&self) -> u32 {
        self.overall.errors
    }

    /// The comparison as text.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "pairwise: B against A, judged by {} (seed {})",
            self.judge, self.seed
        );
        let _ = writeln!(
            out,
            "{:<32} {:>5} {:>6} {:>5} {:>6} {:>9} {:>9}  verdict",
            "task", "wins", "losses", "ties", "errors", "p", "p (Holm)"
        );
        for t in &self.tasks {
            let _ = writeln!(
                out,
                "{:<32} {:>5} {:>6} {:>5} {:>6} {:>9.4} {:>9.4}  {}",
                format!("{}/{}", t.suite, t.task),
                t.tally.wins,
                t.tally.losses,
                t.tally.ties,
                t.tally.errors,
                t.tally.p_value,
                t.p_adjusted,
                t.verdict.words()
            );
        }
        let o = &self.overall;
        let rate = o.win_rate.map_or_else(
            || "none decided".to_owned(),
            |r| format!("{:.1}%", r * 100.0),
        );
        let _ = writeln!(
            out,
            "overall: B won {} and lost {} of {} decided pairs ({} ties, {} errors); win rate {rate} (95% CI {:.1}% to {:.1}%), sign test p = {:.4}: {}",
            o.wins,
            o.losses,
            o.wins + o.losses,
            o.ties,
            o.errors,
            o.low * 100.0,
            o.high * 100.0,
            o.p_value,
            self.verdict.words()
        );
        let b = &self.position_bias;
        let _ = writeln!(
            out,
            "position bias: the judge picked the answer shown first in {} of {} decided pairs (95% CI {:.1}% to {:.1}%){}",
            b.picked_first,
            b.decided,
            b.low * 100.0,
            b.high * 100.0,
            if b.flagged {
                ": FLAGGED, the judge favours a position"
            } else {
                ""
            }
        );
        for e in self.pairs.iter().filter(|p| p.error) {
            let _ = writeln!(
                out,
                "error: {}/{} trial {}: {}",
                e.suite, e.task, e.trial, e.reason
            );
        }
        for u in &self.unpaired {
            let trial = u.trial.map(|n| format!(" trial {n}")).unwrap_or_default();
            let _ = writeln!(out, "unpaired: {}/{}{trial}: {}", u.suite, u.task, u.why);
        }
        out
    }
}

#[cfg(test)]
#[path = "pairwise_tests.rs"]
mod tests;
