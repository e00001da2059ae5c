//! What a trial's agent did, read from its JSON event stream (Pi's `--mode json` lines) as it
//! arrives: the messages, turns, tokens and cost, so that limits can stop a run the moment it
//! passes one, and checks can look at the result. Reading events instead of the agent's
//! insides is what lets a suite evaluate any Pi-compatible command.

use std::time::Duration;

use serde_json::Value;

use crate::results::{Compaction, Usage};

/// What stops a trial early (scored as a failure, status `limit`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Limits {
    pub turns: Option<u32>,
    pub tokens: Option<u64>,
    pub cost: Option<f64>,
    pub wall_time: Option<Duration>,
}

/// A trial's agent run, as its events told it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AgentOutcome {
    /// Every message that ended (user, assistant, tool results), in order: Pi's messages.
    pub messages: Vec<Value>,
    /// Turns that ended.
    pub turns: u32,
    /// Turns that began: a turn limit is passed the moment one more begins.
    pub turns_started: u32,
    /// Model responses (assistant messages), failed ones included.
    pub responses: u32,
    pub usage: Usage,
    /// Dollars, as the agent priced its responses.
    pub cost: f64,
    /// The text blocks of the last assistant message, one per line.
    pub final_text: String,
    /// Why each response that failed or was aborted did, in order, retried ones included:
    /// what the `no_error` check looks at.
    pub failures: Vec<String>,
    /// The model calls that failed for good: a response that ended in `stopReason: "error"`
    /// and was not retried (Pi's auto-retry, or a compaction that retries after an overflow).
    /// Pi's JSON mode exits 0 all the same, so this is how a trial knows its model failed.
    pub model_errors: Vec<String>,
    /// The compactions of the context that ended with a summary, where they happened.
    pub compactions: Vec<Compaction>,
}

/// One tool call of a run, as its events told it.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    pub name: String,
    pub arguments: Value,
    /// Whether its result was an error; `None` when no result came (the run ended first).
    pub is_error: Option<bool>,
}

/// Whether an event line is one of the updates of a message or a tool while it streams: the
/// bulk of a run's output (each carries the whole message so far), and nothing an outcome
/// needs, since the message's end repeats it whole. Pi writes `type` first, so the line's
/// start says.
pub fn is_streaming_update(line: &str) -> bool {
    line.starts_with(r#"{"type":"message_update""#)
        || line.starts_with(r#"{"type":"tool_execution_update""#)
}

impl AgentOutcome {
    /// Reads one event line; streaming updates and lines that are not JSON objects (a stray
    /// print) are skipped.
    pub fn feed_line(&mut self, line: &str) {
        if is_streaming_update(line) {
            return;
        }
        if let Ok(event) = serde_json::from_str::<Value>(line) {
            self.feed(&event);
        }
    }

    /// Reads one event.
    pub fn feed(&mut self, event: &Value) {
        match event.get("type").and_then(Value::as_str) {
            Some("turn_start") => self.turns_started += 1,
            Some("turn_end") => self.turns += 1,
            // The failed response is being tried again: only the retry's outcome counts.
            Some("auto_retry_start") => {
                self.model_errors.pop();
            }
            Some("compaction_end") => {
                if event.get("willRetry").and_then(Value::as_bool) == Some(true) {
                    self.model_errors.pop();
                }
                if let Some(compaction) = self.compaction(event) {
                    self.compactions.push(compaction);
                }
            }
            Some("message_end") => {
                if let Some(message) = event.get("message") {
                    if message.get("role").and_then(Value::as_str) == Some("assistant") {
                        self.assistant(message);
                    }
                    self.messages.push(message.clone());
                }
            }
            _ => {}
        }
    }

    /// The compaction a `compaction_end` event reports, if it ended with a summary.
    fn compaction(&self, event: &Value) -> Option<Compaction> {
        let result = event.get("result").filter(|r| r.is_object())?;
        let text = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_owned);
        Some(Compaction {
            after_messages: u32::try_from(self.messages.len()).unwrap_or(u32::MAX),
            reason: text(event.get("reason")).unwrap_or_default(),
            summary: text(result.get("summary"))?,
            tokens_before: result
                .get("tokensBefore")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            first_kept_entry_id: text(result.get("firstKeptEntryId")).unwrap_or_default(),
        })
    }

    fn assistant(&mut self, message: &Value) {
        self.responses += 1;
        if let Some(usage) = message.get("usage") {
            let n = |key: &str| usage.get(key).and_then(Value::as_u64).unwrap_or(0);
            self.usage.add(&Usage {
                input: n("input"),
                output: n("output"),
                cache_read: n("cacheRead"),
                cache_write: n("cacheWrite"),
                total_tokens: n("totalTokens"),
            });
            self.cost += usage
                .pointer("/cost/total")
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
        }
        self.final_text = message
            .get("content")
            .and_then(Value::as_array)
            .map(|blocks| {
                blocks
                    .iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
                    .filter_map(|b| b.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .unwrap_or_default();
        match message.get("stopReason").and_then(Value::as_str) {
            Some("error") => {
                let why = message
                    .get("errorMessage")
                    .and_then(Value::as_str)
                    .filter(|m| !m.is_empty())
                    .unwrap_or("the response failed")
                    .to_owned();
                self.failures.push(why.clone());
                self.model_errors.push(why);
            }
            Some("aborted") => self.failures.push("the run was aborted".into()),
            _ => {}
        }
    }

    /// Why the model failed for good, in words, when it did: a trial with such a call is an
    /// error, not a verdict on the model.
    pub fn model_error(&self) -> Option<String> {
        let first = self.model_errors.first()?;
        Some(match self.model_errors.len() {
            1 => format!("the model call failed: {first}"),
            n => format!("{n} model calls failed; the first: {first}"),
        })
    }

    /// The tool-call blocks of every response, in order.
    fn tool_call_blocks(&self) -> impl Iterator<Item = &Value> {
        self.messages
            .iter()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("assistant"))
            .filter_map(|m| m.get("content").and_then(Value::as_array))
            .flatten()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("toolCall"))
    }

    /// The tool calls of every response, in order: name and arguments.
    pub fn tool_calls(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.tool_call_blocks().filter_map(|b| {
            let name = b.get("name").and_then(Value::as_str)?;
            Some((name, b.get("arguments").unwrap_or(&Value::Null)))
        })
    }

    /// Every tool call of every response, in order, with whether its result was an error:
    /// what the trajectory checks look at.
    pub fn tool_call_records(&self) -> Vec<ToolCall> {
        let errored: std::collections::BTreeMap<&str, bool> = self
            .messages
            .iter()
            .filter(|m| m.get("role").and_then(Value::as_str) == Some("toolResult"))
            .filter_map(|m| {
                let id = m.get("toolCallId").and_then(Value::as_str)?;
                Some((id, m.get("isError").and_then(Value::as_bool) == Some(true)))
            })
            .collect();
        self.tool_call_blocks()
            .filter_map(|b| {
                let name = b.get("name").and_then(Value::as_str)?;
                let id = b.get("id").and_then(Value::as_str);
                Some(ToolCall {
                    name: name.to_owned(),
                    arguments: b.get("arguments").cloned().unwrap_or(Value::Null),
                    is_error: id.and_then(|id| errored.get(id).copied()),
                })
            })
            .collect()
    }

    /// The first limit this run has passed, in words.
    pub fn passed_limit(&self, limits: &Limits) -> Option<String> {
        if let Some(turns) = limits.turns {
            if self.turns_started > turns {
                return Some(format!("turn limit: more than {turns} turns"));
            }
        }
        if let Some(tokens) = limits.tokens {
            if self.usage.total_tokens > tokens {
                return Some(format!(
                    "token limit: {} tokens, more than {tokens}",
                    self.usage.total_tokens
                ));
            }
        }
        if let Some(cost) = limits.cost {
            if self.cost > cost {
                return Some(format!("cost limit: ${:.4}, more than ${cost}", self.cost));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(lines: &[&str]) -> AgentOutcome {
        let mut outcome = AgentOutcome::default();
        for line in lines {
            outcome.feed_line(line);
        }
        outcome
    }

    #[test]
    fn messages_usage_tool_calls_and_the_final_text_come_from_the_events() {
        let outcome = run(&[
            r#"{"type":"session","version":3,"id":"x"}"#,
            r#"{"type":"message_end","message":{"role":"user","content":"hi"}}"#,
            r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"toolCall","id":"1","name":"write","arguments":{"path":"a.txt","content":"x"}}],"usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,"cost":{"total":0.5}},"stopReason":"toolUse"}}"#,
            r#"{"type":"turn_end"}"#,
            "not json",
            r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"done"},{"type":"text","text":"bye"}],"usage":{"input":20,"output":1,"totalTokens":21,"cost":{"total":0.25}},"stopReason":"stop"}}"#,
            r#"{"type":"turn_end"}"#,
        ]);
        assert_eq!(outcome.messages.len(), 3);
        assert_eq!((outcome.turns, outcome.responses), (2, 2));
        assert_eq!(outcome.usage.total_tokens, 36);
        assert_eq!(outcome.usage.input, 30);
        assert!((outcome.cost - 0.75).abs() < 1e-12);
        assert_eq!(outcome.final_text, "done\nbye");
        assert!(outcome.failures.is_empty() && outcome.model_errors.is_empty());
        let calls: Vec<_> = outcome.tool_calls().collect();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].0, "write");
        assert_eq!(calls[0].1["path"], "a.txt");
    }

    #[test]
    fn each_tool_call_is_kept_with_its_arguments_and_whether_its_result_erred() {
        let outcome = run(&[
            r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"toolCall","id":"a","name":"read","arguments":{"path":"x"}},{"type":"toolCall","id":"b","name":"bash","arguments":{"command":"false"}}],"stopReason":"toolUse"}}"#,
            r#"{"type":"message_end","message":{"role":"toolResult","toolCallId":"a","toolName":"read","content":[],"isError":false}}"#,
            r#"{"type":"message_end","message":{"role":"toolResult","toolCallId":"b","toolName":"bash","content":[],"isError":true}}"#,
            r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"write","arguments":{}}],"stopReason":"toolUse"}}"#,
        ]);
        let calls = outcome.tool_call_records();
        let seen: Vec<(&str, Option<bool>)> = calls
            .iter()
            .map(|c| (c.name.as_str(), c.is_error))
            .collect();
        assert_eq!(
            seen,
            [("read", Some(false)), ("bash", Some(true)), ("write", None)]
        );
        assert_eq!(calls[1].arguments["command"], "false");
    }

    #[test]
    fn streaming_updates_are_skipped_unread_and_change_nothing() {
        let update = r#"{"type":"message_update","message":{"role":"assistant","content":[{"type":"text","text":"partial"}]}}"#;
        assert!(is_streaming_update(update));
        assert!(is_streaming_update(
            r#"{"type":"tool_execution_update","toolCallId":"1"}"#
        ));
        assert!(!is_streaming_update(
            r#"{"type":"message_end","message":{}}"#
        ));
        assert_eq!(run(&[update]), AgentOutcome::default());
    }

    const FAILED: &str = r#"{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"429 rate limited"}}"#;
    const ABORTED: &str = r#"{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"aborted"}}"#;
    const ANSWERED: &str = r#"{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"stopReason":"stop"}}"#;

    #[test]
    fn every_failed_or_aborted_response_is_a_failure_not_only_the_last() {
        let outcome = run(&[FAILED, ANSWERED, ABORTED, ANSWERED]);
        assert_eq!(
            outcome.failures,
            ["429 rate limited", "the run was aborted"]
        );
        assert_eq!(outcome.model_errors, ["429 rate limited"]);
        assert_eq!(
            outcome.model_error().as_deref(),
            Some("the model call failed: 429 rate limited")
        );
        assert_eq!(
            run(&[ABORTED]).model_error(),
            None,
            "an abort is not the model's error"
        );
    }

    #[test]
    fn a_retried_failure_is_not_a_model_error_but_a_final_one_is() {
        let retry = r#"{"type":"auto_retry_start","attempt":1,"maxAttempts":1,"delayMs":1,"errorMessage":"429"}"#;
        let recovered = run(&[FAILED, retry, ANSWERED]);
        assert!(recovered.model_errors.is_empty());
        assert_eq!(recovered.failures.len(), 1, "no_error still sees it");
        let gave_up = run(&[FAILED, retry, FAILED]);
        assert_eq!(gave_up.model_errors.len(), 1);
        let compacted =
            r#"{"type":"compaction_end","reason":"overflow","aborted":false,"willRetry":true}"#;
        assert!(run(&[FAILED, compacted, ANSWERED]).model_errors.is_empty());
        let two = run(&[FAILED, ANSWERED, FAILED]);
        assert_eq!(
            two.model_error().as_deref(),
            Some("2 model calls failed; the first: 429 rate limited")
        );
    }

    #[test]
    fn a_compaction_that_ended_with_a_summary_is_kept_where_it_happened() {
        let summarized = r#"{"type":"compaction_end","reason":"threshold","result":{"summary":"S","firstKeptEntryId":"e2","tokensBefore":9},"aborted":false,"willRetry":false}"#;
        let aborted =
            r#"{"type":"compaction_end","reason":"manual","aborted":true,"willRetry":false}"#;
        let outcome = run(&[FAILED, ANSWERED, summarized, aborted, ANSWERED]);
        assert_eq!(
            outcome.compactions,
            [Compaction {
                after_messages: 2,
                reason: "threshold".into(),
                summary: "S".into(),
                tokens_before: 9,
                first_kept_entry_id: "e2".into(),
            }],
            "only the one that ended with a summary, after the two messages before it"
        );
    }

    #[test]
    fn limits_are_passed_only_beyond_their_value() {
        let mut outcome = AgentOutcome {
            turns_started: 3,
            ..AgentOutcome::default()
        };
        let limits = Limits {
            turns: Some(3),
            ..Limits::default()
        };
        assert_eq!(outcome.passed_limit(&limits), None);
        outcome.turns_started = 4;
        assert_eq!(
            outcome.passed_limit(&limits).as_deref(),
            Some("turn limit: more than 3 turns")
        );
    }
}
