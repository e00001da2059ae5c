//! Model-graded checks (`kind = "judge"`): a judge model reads what the agent was asked, the
//! tools it called and its final answer, and grades the answer against the check's rubric.
//!
//! The judge is a second run of the trial's own agent command (print mode, no tools, no
//! session), so its model call goes through the same providers as the trial's and is recorded
//! into a cassette of its own beside the trial's (`<trial>.judge.<check>.jsonl`) and replayed
//! from it: a replayed eval stays offline and gets the recorded verdict. A replay whose
//! recorded prompt is not the one this run would send (the rubric or the answer changed) is an
//! error, never the old verdict.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::outcome::AgentOutcome;

/// Asks the judge `model` the `prompt`; its answer's text, or why it could not be had (the
/// trial is then an error, not a verdict).
pub type RunJudge<'a> = &'a dyn Fn(&str, &str) -> Result<String, String>;

/// The prompt the judge gets (documented in `docs/evals.md`).
pub fn prompt(rubric: &str, outcome: &AgentOutcome, threshold: Option<f64>) -> String {
    let asked: Vec<String> = outcome
        .messages
        .iter()
        .filter(|m| m.get("role").and_then(Value::as_str) == Some("user"))
        .map(|m| text_of(m.get("content").unwrap_or(&Value::Null)))
        .collect();
    let tools = crate::trajectory::tools_used(&outcome.tool_call_records());
    let answer = match threshold {
        None => "Reply with one line: PASS or FAIL, then a space and your reason in one sentence.",
        Some(_) => "Reply with one line: SCORE: and a number from 0 to 1 (how well the answer meets the rubric), then a space and your reason in one sentence.",
    };
    format!(
        "You are judging the work of a coding agent against a rubric. Judge only by the rubric.\n\n\
         # Rubric\n{rubric}\n\n\
         # What the agent was asked\n{}\n\n\
         # The tools it called\n{tools}\n\n\
         # Its final answer\n{}\n\n\
         {answer}",
        asked.join("\n\n"),
        outcome.final_text
    )
}

/// A message's content as text: a string, or its text blocks one per line.
pub(crate) fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Reads the judge's answer: its first non-empty line, `PASS reason` or `FAIL reason` (or
/// `SCORE: x reason` when the check has a threshold, passing at `x >= threshold`). Anything
/// else fails the check: an answer the judge did not give in the format is not a pass.
pub fn verdict(answer: &str, threshold: Option<f64>) -> (bool, String) {
    let line = answer
        .lines()
        .map(|l| l.trim().trim_matches(|c| c == '*' || c == '#').trim())
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let reason = |rest: &str| {
        rest.trim_start_matches(|c: char| c == ':' || c == '-' || c == '.' || c.is_whitespace())
            .to_owned()
    };
    let word = |w: &str| {
        line.strip_prefix(w)
            .filter(|rest| !rest.starts_with(|c: char| c.is_alphanumeric()))
    };
    match threshold {
        None => {
            if let Some(rest) = word("PASS") {
                (true, format!("the judge: PASS {}", reason(rest)))
            } else if let Some(rest) = word("FAIL") {
                (false, format!("the judge: FAIL {}", reason(rest)))
            } else {
                (false, unreadable(answer, "PASS or FAIL"))
            }
        }
        Some(threshold) => {
            let score = word("SCORE").map(reason).and_then(|rest| {
                let number: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_digit() || *c == '.')
                    .collect();
                let value: f64 = number.parse().ok()?;
                (0.0..=1.0)
                    .contains(&value)
                    .then(|| (value, reason(&rest[number.len()..])))
            });
            match score {
                Some((value, why)) => (
                    value + 1e-9 >= threshold,
                    format!("the judge: SCORE {value} (pass at {threshold}) {why}"),
                ),
                None => (false, unreadable(answer, "SCORE: <0 to 1>")),
            }
        }
    }
}

fn unreadable(answer: &str, wanted: &str) -> String {
    let head: String = answer.chars().take(200).collect();
    format!("the judge did not answer {wanted}: {head:?}")
}

/// Where a judge check's cassette is, beside its trial's: `<trial>.judge.<check>.jsonl`,
/// `check` counting the task's checks from 1.
pub fn cassette_path(trial_cassette: &Path, check: usize) -> PathBuf {
    let stem = trial_cassette.with_extension("");
    let mut name = stem.into_os_string();
    name.push(format!(".judge.{check}.jsonl"));
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_answer_in_the_format_can_pass() {
        assert_eq!(
            verdict("PASS it greets the user", None),
            (true, "the judge: PASS it greets the user".into())
        );
        assert!(verdict("\n**PASS**: fine", None).0);
        assert!(!verdict("FAIL: no greeting", None).0);
        for garbage in [
            "",
            "I think it should PASS",
            "PASSED",
            "pass",
            "Sure! PASS",
            "SCORE: 1",
        ] {
            let (passed, why) = verdict(garbage, None);
            assert!(!passed, "{garbage:?}");
            assert!(why.starts_with("the judge did not answer"), "{why}");
        }
    }

    #[test]
    fn a_score_passes_at_its_threshold_and_not_out_of_range() {
        assert!(verdict("SCORE: 0.8 good", Some(0.7)).0);
        assert!(verdict("SCORE: 0.7", Some(0.7)).0);
        assert!(!verdict("SCORE: 0.6 weak", Some(0.7)).0);
        assert!(!verdict("SCORE: 7", Some(0.7)).0);
        assert!(!verdict("SCORE: high", Some(0.7)).0);
        assert!(!verdict("PASS", Some(0.7)).0);
    }

    #[test]
    fn the_judge_cassette_sits_beside_the_trial_cassette() {
        assert_eq!(
            cassette_path(Path::new("s/t/mock/m/0.jsonl"), 3),
            PathBuf::from("s/t/mock/m/0.judge.3.jsonl")
        );
    }
}
