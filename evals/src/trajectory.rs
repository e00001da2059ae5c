//! Trajectory checks: what the agent did on its way, not only where it ended. The order of its
//! tool calls, how many turns and calls it took, and whether a tool failed, all read from the
//! run's events (see [`crate::outcome::AgentOutcome::tool_call_records`]).

use serde::Deserialize;
use serde_json::Value;

use crate::outcome::{AgentOutcome, ToolCall};

/// How a `tool_sequence` check's `tools` must appear among the calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SequenceMode {
    /// The calls are exactly these, no more, in this order.
    Exact,
    /// These calls in this order, others allowed between them (a subsequence).
    InOrder,
    /// These calls back to back, in this order, anywhere in the run.
    Contiguous,
}

impl SequenceMode {
    fn parse(mode: &str) -> Result<SequenceMode, String> {
        match mode {
            "exact" => Ok(SequenceMode::Exact),
            "in_order" => Ok(SequenceMode::InOrder),
            "contiguous" => Ok(SequenceMode::Contiguous),
            other => Err(format!(
                "`{other}` is not a sequence mode: exact, in_order or contiguous"
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SequenceMode::Exact => "exact",
            SequenceMode::InOrder => "in_order",
            SequenceMode::Contiguous => "contiguous",
        }
    }

    /// Whether `wanted` appears in `called` as this mode says.
    pub fn found(self, called: &[&str], wanted: &[String]) -> bool {
        match self {
            SequenceMode::Exact => called.iter().copied().eq(wanted.iter().map(String::as_str)),
            SequenceMode::InOrder => {
                let mut rest = called.iter();
                wanted.iter().all(|w| rest.any(|c| c == w))
            }
            SequenceMode::Contiguous => called
                .windows(wanted.len())
                .any(|window| window.iter().copied().eq(wanted.iter().map(String::as_str))),
        }
    }
}

/// An inclusive range of counts; either end may be open.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bounds {
    pub min: Option<u64>,
    pub max: Option<u64>,
}

impl Bounds {
    /// Bounds as written, or why they are wrong: `min` above `max` can never hold, and no bound
    /// at all (or `min = 0` alone) always holds — a check that cannot fail.
    pub fn new(min: Option<u64>, max: Option<u64>) -> Result<Bounds, String> {
        if let (Some(lo), Some(hi)) = (min, max) {
            if lo > hi {
                return Err(format!("`min` ({lo}) is more than `max` ({hi})"));
            }
        }
        Ok(Bounds { min, max })
    }

    /// Whether this range holds every count.
    pub fn is_open(&self) -> bool {
        self.min.unwrap_or(0) == 0 && self.max.is_none()
    }

    pub fn holds(&self, n: u64) -> bool {
        self.min.is_none_or(|lo| n >= lo) && self.max.is_none_or(|hi| n <= hi)
    }

    /// `2 to 5`, `at least 1`, `at most 3`, `exactly 0`.
    pub fn describe(&self) -> String {
        match (self.min, self.max) {
            (Some(lo), Some(hi)) if lo == hi => format!("exactly {lo}"),
            (Some(lo), Some(hi)) => format!("{lo} to {hi}"),
            (Some(lo), None) => format!("at least {lo}"),
            (None, Some(hi)) => format!("at most {hi}"),
            (None, None) => "any number of".into(),
        }
    }
}

/// `{ min = 1, max = 4 }` as a suite writes a count's range.
#[derive(Clone, Copy, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawBounds {
    pub min: Option<u64>,
    pub max: Option<u64>,
}

/// Reads a sequence mode (default `in_order`).
pub(crate) fn mode_of(raw: Option<&str>) -> Result<SequenceMode, (String, String)> {
    raw.map_or(Ok(SequenceMode::InOrder), SequenceMode::parse)
        .map_err(|m| ("mode".into(), m))
}

/// Checks a JSON pointer (RFC 6901): empty (the whole value) or starting with `/`.
pub(crate) fn check_pointer(pointer: &str) -> Result<(), String> {
    if pointer.is_empty() || pointer.starts_with('/') {
        Ok(())
    } else {
        Err(format!(
            "`{pointer}` is not a JSON pointer: it starts with `/` (`/path` is the argument `path`)"
        ))
    }
}

/// The text a regular expression over arguments sees: the value at `pointer` (a string as
/// itself, anything else as its JSON), or the whole arguments' JSON; `None` when the pointer
/// names nothing.
pub fn argument_text(arguments: &Value, pointer: Option<&str>) -> Option<String> {
    let value = match pointer {
        Some(p) => arguments.pointer(p)?,
        None => arguments,
    };
    Some(match value {
        Value::String(s) if pointer.is_some() => s.clone(),
        other => other.to_string(),
    })
}

/// The tools called, in order, in words: `read, bash, bash` or `none`.
pub fn tools_used(calls: &[ToolCall]) -> String {
    if calls.is_empty() {
        "none".into()
    } else {
        calls
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Whether the run's turns and tool calls are within their bounds, and what they were.
pub fn step_count(outcome: &AgentOutcome, turns: &Bounds, tool_calls: &Bounds) -> (bool, String) {
    let calls = outcome.tool_call_records().len() as u64;
    let turns_taken = u64::from(outcome.turns);
    (
        turns.holds(turns_taken) && tool_calls.holds(calls),
        format!("{turns_taken} turns, {calls} tool calls"),
    )
}

/// Whether no tool call's result was an error, and the ones that were.
pub fn no_tool_errors(outcome: &AgentOutcome) -> (bool, String) {
    let calls = outcome.tool_call_records();
    let failed: Vec<String> = calls
        .iter()
        .enumerate()
        .filter(|(_, c)| c.is_error == Some(true))
        .map(|(i, c)| format!("call {} (`{}`)", i + 1, c.name))
        .collect();
    if failed.is_empty() {
        (true, format!("tools used: {}", tools_used(&calls)))
    } else {
        (false, format!("failed: {}", failed.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn wanted(names: &[&str]) -> Vec<String> {
        names.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn each_mode_finds_what_it_says_and_nothing_else() {
        let called = ["read", "bash", "edit", "bash"];
        let cases: &[(&[&str], [bool; 3])] = &[
            // exact, in_order, contiguous
            (&["read", "bash", "edit", "bash"], [true, true, true]),
            (&["read", "edit"], [false, true, false]),
            (&["bash", "edit"], [false, true, true]),
            (&["edit", "read"], [false, false, false]),
            (&["bash", "bash"], [false, true, false]),
            (
                &["read", "bash", "edit", "bash", "bash"],
                [false, false, false],
            ),
            (&["write"], [false, false, false]),
        ];
        for (tools, expected) in cases {
            let found = [
                SequenceMode::Exact,
                SequenceMode::InOrder,
                SequenceMode::Contiguous,
            ]
            .map(|m| m.found(&called, &wanted(tools)));
            assert_eq!(found, *expected, "{tools:?}");
        }
    }

    #[test]
    fn bounds_hold_inclusively_and_refuse_an_empty_range() {
        let b = Bounds::new(Some(1), Some(3)).unwrap();
        assert_eq!([0, 1, 3, 4].map(|n| b.holds(n)), [false, true, true, false]);
        assert!(Bounds::new(Some(4), Some(3)).is_err());
        assert!(Bounds::new(Some(0), None).unwrap().is_open());
        assert!(!Bounds::new(None, Some(0)).unwrap().is_open());
        assert_eq!(
            Bounds::new(Some(2), Some(2)).unwrap().describe(),
            "exactly 2"
        );
    }

    #[test]
    fn a_pointer_picks_one_argument_and_a_missing_one_matches_nothing() {
        let args = serde_json::json!({"command": "rm -rf /", "opts": {"n": 3}});
        assert_eq!(
            argument_text(&args, Some("/command")).as_deref(),
            Some("rm -rf /")
        );
        assert_eq!(
            argument_text(&args, Some("/opts")).as_deref(),
            Some(r#"{"n":3}"#)
        );
        assert_eq!(argument_text(&args, Some("/nope")), None);
        assert!(argument_text(&args, None).unwrap().contains("\"command\""));
        assert!(check_pointer("command").is_err());
        assert!(check_pointer("/a/0").is_ok());
    }
}
