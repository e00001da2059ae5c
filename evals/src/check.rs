//! Checks: what a trial is scored on. Each looks at what the agent did (its messages) or at
//! what it left in the workspace, and says passed or not, with what it found instead.

use std::path::Path;
use std::time::Duration;

use regex::Regex;
use serde::Deserialize;
use serde_json::Value;

use crate::judge::RunJudge;
use crate::outcome::{AgentOutcome, ToolCall};
use crate::results::CheckResult;
use crate::trajectory::{self, Bounds, RawBounds, SequenceMode};

/// The default timeout of a `command` check.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// A check with its weight.
#[derive(Clone, Debug)]
pub struct Check {
    pub kind: CheckKind,
    pub weight: f64,
    /// Passes when what `kind` says does not hold (`not = true`); a file it cannot read fails
    /// it all the same, since nothing was found not to hold.
    pub not: bool,
}

/// The kinds `not = true` applies to: the rest are refused, as negating them makes no sense
/// (no_error, step_count), would pass on a check that could not run (command), or has a kind
/// of its own (file_exists / file_absent, tool_called / tool_not_called).
const NEGATABLE: &[&str] = &[
    "text_contains",
    "text_matches",
    "tool_called",
    "tool_sequence",
    "file_contains",
    "file_matches",
    "file_hash",
];

/// What is checked.
#[derive(Clone, Debug)]
pub enum CheckKind {
    /// The final text contains `text`.
    TextContains {
        text: String,
        case_sensitive: bool,
    },
    /// The final text matches a regular expression.
    TextMatches(Regex),
    /// `tool` was called, with arguments holding `arguments` (a subset: each given key with an
    /// equal value) and whose JSON text (or the value at `pointer`) matches `arguments_regex`,
    /// a number of times within `count` (at least once unless said otherwise).
    ToolCalled {
        tool: String,
        arguments: Option<serde_json::Map<String, Value>>,
        arguments_regex: Option<Regex>,
        pointer: Option<String>,
        count: Bounds,
    },
    /// The tool calls' names hold `tools` as `mode` says.
    ToolSequence {
        tools: Vec<String>,
        mode: SequenceMode,
    },
    /// The turns the run took and the tools it called are within their bounds.
    StepCount {
        turns: Bounds,
        tool_calls: Bounds,
    },
    /// No tool call's result was an error.
    NoToolErrors,
    /// `tool` was never called.
    ToolNotCalled {
        tool: String,
    },
    FileExists {
        path: String,
    },
    FileAbsent {
        path: String,
    },
    FileContains {
        path: String,
        text: String,
    },
    FileMatches {
        path: String,
        regex: Regex,
    },
    /// The file's SHA-256, lower-case hex.
    FileHash {
        path: String,
        sha256: String,
    },
    /// `bash -c run` in the workspace (confined as the trial's commands are) exits 0 within
    /// `timeout`.
    Command {
        run: String,
        timeout: Duration,
    },
    /// No response ended in an error and the run was not aborted.
    NoError,
    /// A judge model grades the final answer against `rubric` (see [`crate::judge`]): PASS or
    /// FAIL, or a score from 0 to 1 that passes at `threshold` when one is given.
    Judge {
        rubric: String,
        model: String,
        threshold: Option<f64>,
    },
}

/// A command's result, as a check sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandResult {
    pub exit: Option<i32>,
    pub timed_out: bool,
    /// The last part of its output.
    pub output: String,
}

/// Runs a check's command in the trial's workspace.
pub type RunCommand<'a> = &'a dyn Fn(&str, Duration) -> Result<CommandResult, String>;

impl Check {
    /// The check `raw` describes, or the field that is wrong and why.
    /// `judge` is the suite's default judge model (`[defaults] judge`).
    pub(crate) fn from_raw(raw: &RawCheck, judge: Option<&str>) -> Result<Check, (String, String)> {
        let kind = raw.kind.as_str();
        let fields: [(&str, bool); 21] = [
            ("text", raw.text.is_some()),
            ("regex", raw.regex.is_some()),
            ("case_sensitive", raw.case_sensitive.is_some()),
            ("tool", raw.tool.is_some()),
            ("arguments", raw.arguments.is_some()),
            ("arguments_regex", raw.arguments_regex.is_some()),
            ("path", raw.path.is_some()),
            ("sha256", raw.sha256.is_some()),
            ("run", raw.run.is_some()),
            ("timeout", raw.timeout.is_some()),
            ("not", raw.not.is_some()),
            ("min", raw.min.is_some()),
            ("max", raw.max.is_some()),
            ("pointer", raw.pointer.is_some()),
            ("tools", raw.tools.is_some()),
            ("mode", raw.mode.is_some()),
            ("turns", raw.turns.is_some()),
            ("tool_calls", raw.tool_calls.is_some()),
            ("rubric", raw.rubric.is_some()),
            ("model", raw.model.is_some()),
            ("threshold", raw.threshold.is_some()),
        ];
        let takes: &[&str] = match kind {
            "text_contains" => &["text", "case_sensitive"],
            "text_matches" => &["regex"],
            "tool_called" => &["tool", "arguments", "arguments_regex", "pointer", "min", "max"],
            "tool_sequence" => &["tools", "mode"],
            "step_count" => &["turns", "tool_calls"],
            "no_tool_errors" => &[],
            "judge" => &["rubric", "model", "threshold"],
            "tool_not_called" => &["tool"],
            "file_exists" | "file_absent" => &["path"],
            "file_contains" => &["path", "text"],
            "file_matches" => &["path", "regex"],
            "file_hash" => &["path", "sha256"],
            "command" => &["run", "timeout"],
            "no_error" => &[],
            other => {
                return Err((
                    "kind".into(),
                    format!("unknown check kind `{other}` (known: text_contains, text_matches, tool_called, tool_not_called, tool_sequence, step_count, no_tool_errors, file_exists, file_absent, file_contains, file_matches, file_hash, command, no_error, judge)"),
                ))
            }
        };
        if let Some((field, _)) = fields
            .iter()
            .find(|(f, set)| *set && *f != "not" && !takes.contains(f))
        {
            return Err((
                (*field).into(),
                format!("does not apply to a `{kind}` check"),
            ));
        }
        let need = |field: &str, value: &Option<String>| {
            value.clone().ok_or_else(|| {
                (
                    field.to_owned(),
                    format!("a `{kind}` check needs `{field}`"),
                )
            })
        };
        let compile = |field: &str, value: &Option<String>| {
            let pattern = need(field, value)?;
            regex(&pattern).map_err(|m| (field.to_owned(), m))
        };
        let not = raw.not.unwrap_or(false);
        if not && !NEGATABLE.contains(&kind) {
            let instead = match kind {
                "tool_not_called" => ": write `tool_called` with `not = true`, or no `not`",
                "file_exists" => ": write `file_absent`",
                "file_absent" => ": write `file_exists`",
                _ => "",
            };
            return Err((
                "not".into(),
                format!(
                    "a `{kind}` check cannot be negated{instead} (`not` applies to {})",
                    NEGATABLE.join(", ")
                ),
            ));
        }
        let weight = raw.weight.unwrap_or(1.0);
        if !(weight.is_finite() && weight >= 0.0) {
            return Err(("weight".into(), "must be a non-negative number".into()));
        }
        let kind = match kind {
            "text_contains" => CheckKind::TextContains {
                text: need("text", &raw.text)?,
                case_sensitive: raw.case_sensitive.unwrap_or(true),
            },
            "text_matches" => CheckKind::TextMatches(compile("regex", &raw.regex)?),
            "tool_called" => CheckKind::ToolCalled {
                tool: need("tool", &raw.tool)?,
                arguments: raw.arguments.as_ref().map(|t| {
                    t.iter()
                        .map(|(k, v)| (k.clone(), toml_to_json(v)))
                        .collect()
                }),
                arguments_regex: match &raw.arguments_regex {
                    Some(_) => Some(compile("arguments_regex", &raw.arguments_regex)?),
                    None => None,
                },
                pointer: match &raw.pointer {
                    Some(_) if raw.arguments_regex.is_none() => return Err((
                        "pointer".into(),
                        "names the argument `arguments_regex` looks at: give `arguments_regex` too"
                            .into(),
                    )),
                    Some(p) => {
                        trajectory::check_pointer(p).map_err(|m| ("pointer".to_owned(), m))?;
                        Some(p.clone())
                    }
                    None => None,
                },
                count: {
                    let count = Bounds::new(Some(raw.min.unwrap_or(1)), raw.max)
                        .map_err(|m| ("max".to_owned(), m))?;
                    if count.is_open() {
                        return Err((
                            "min".into(),
                            "`min = 0` without `max` passes whatever the agent did: give a `max`"
                                .into(),
                        ));
                    }
                    count
                },
            },
            "tool_sequence" => {
                let tools = raw.tools.clone().ok_or_else(|| {
                    (
                        "tools".to_owned(),
                        "a `tool_sequence` check needs `tools`".to_owned(),
                    )
                })?;
                if tools.is_empty() || tools.iter().any(String::is_empty) {
                    return Err((
                        "tools".into(),
                        "must list one tool name or more, none empty".into(),
                    ));
                }
                CheckKind::ToolSequence {
                    tools,
                    mode: trajectory::mode_of(raw.mode.as_deref())?,
                }
            }
            "step_count" => {
                let bounds = |field: &str, raw: Option<RawBounds>| {
                    raw.map_or(Ok(Bounds::default()), |b| Bounds::new(b.min, b.max))
                        .map_err(|m| (field.to_owned(), m))
                };
                let turns = bounds("turns", raw.turns)?;
                let tool_calls = bounds("tool_calls", raw.tool_calls)?;
                if turns.is_open() && tool_calls.is_open() {
                    return Err((
                        "turns".into(),
                        "a `step_count` check needs a bound: `turns` or `tool_calls` with a `max` (or a `min` above 0)".into(),
                    ));
                }
                CheckKind::StepCount { turns, tool_calls }
            }
            "no_tool_errors" => CheckKind::NoToolErrors,
            "judge" => {
                let rubric = need("rubric", &raw.rubric)?;
                if rubric.trim().is_empty() {
                    return Err((
                        "rubric".into(),
                        "is empty: say what the answer must do".into(),
                    ));
                }
                let model = match (&raw.model, judge) {
                    (Some(model), _) => model.clone(),
                    (None, Some(model)) => model.to_owned(),
                    (None, None) => {
                        return Err((
                            "model".into(),
                            "a `judge` check needs a judge model: its own `model`, or `judge` in [defaults]".into(),
                        ))
                    }
                };
                crate::validate::check_model_name(&model).map_err(|m| ("model".to_owned(), m))?;
                let threshold = match raw.threshold {
                    Some(t) if (0.0..=1.0).contains(&t) => Some(t),
                    Some(_) => {
                        return Err((
                            "threshold".into(),
                            "must be between 0 and 1 (the judge's score that passes)".into(),
                        ))
                    }
                    None => None,
                };
                CheckKind::Judge {
                    rubric,
                    model,
                    threshold,
                }
            }
            "tool_not_called" => CheckKind::ToolNotCalled {
                tool: need("tool", &raw.tool)?,
            },
            "file_exists" => CheckKind::FileExists {
                path: workspace_path("path", &raw.path)?,
            },
            "file_absent" => CheckKind::FileAbsent {
                path: workspace_path("path", &raw.path)?,
            },
            "file_contains" => CheckKind::FileContains {
                path: workspace_path("path", &raw.path)?,
                text: need("text", &raw.text)?,
            },
            "file_matches" => CheckKind::FileMatches {
                path: workspace_path("path", &raw.path)?,
                regex: compile("regex", &raw.regex)?,
            },
            "file_hash" => {
                let sha256 = need("sha256", &raw.sha256)?.to_ascii_lowercase();
                if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(("sha256".into(), "must be 64 hexadecimal digits".into()));
                }
                CheckKind::FileHash {
                    path: workspace_path("path", &raw.path)?,
                    sha256,
                }
            }
            "command" => CheckKind::Command {
                run: need("run", &raw.run)?,
                timeout: match raw.timeout {
                    None => DEFAULT_COMMAND_TIMEOUT,
                    Some(s) if s.is_finite() && s > 0.0 && s < 1e7 => Duration::from_secs_f64(s),
                    Some(_) => {
                        return Err((
                            "timeout".into(),
                            "must be a positive number of seconds".into(),
                        ))
                    }
                },
            },
            _ => CheckKind::NoError,
        };
        Ok(Check { kind, weight, not })
    }

    /// The kind's name as a suite writes it.
    pub fn kind_name(&self) -> &'static str {
        match &self.kind {
            CheckKind::TextContains { .. } => "text_contains",
            CheckKind::TextMatches(_) => "text_matches",
            CheckKind::ToolCalled { .. } => "tool_called",
            CheckKind::ToolNotCalled { .. } => "tool_not_called",
            CheckKind::ToolSequence { .. } => "tool_sequence",
            CheckKind::StepCount { .. } => "step_count",
            CheckKind::NoToolErrors => "no_tool_errors",
            CheckKind::Judge { .. } => "judge",
            CheckKind::FileExists { .. } => "file_exists",
            CheckKind::FileAbsent { .. } => "file_absent",
            CheckKind::FileContains { .. } => "file_contains",
            CheckKind::FileMatches { .. } => "file_matches",
            CheckKind::FileHash { .. } => "file_hash",
            CheckKind::Command { .. } => "command",
            CheckKind::NoError => "no_error",
        }
    }

    /// What is checked, in words; a negated check's words start with `not:`.
    pub fn describe(&self) -> String {
        let what = self.describe_kind();
        if self.not {
            format!("not: {what}")
        } else {
            what
        }
    }

    fn describe_kind(&self) -> String {
        match &self.kind {
            CheckKind::TextContains {
                text,
                case_sensitive,
            } => format!(
                "final text contains {text:?}{}",
                if *case_sensitive { "" } else { " (any case)" }
            ),
            CheckKind::TextMatches(r) => format!("final text matches /{}/", r.as_str()),
            CheckKind::ToolCalled {
                tool,
                arguments,
                arguments_regex,
                pointer,
                count,
            } => {
                let mut s = format!("tool `{tool}` called");
                if *count != Bounds::new(Some(1), None).unwrap_or_default() {
                    s.push_str(&format!(" {} times", count.describe()));
                }
                if let Some(a) = arguments {
                    s.push_str(&format!(" with {}", Value::Object(a.clone())));
                }
                match (arguments_regex, pointer) {
                    (Some(r), Some(p)) => {
                        s.push_str(&format!(" with argument {p} matching /{}/", r.as_str()));
                    }
                    (Some(r), None) => {
                        s.push_str(&format!(" with arguments matching /{}/", r.as_str()));
                    }
                    _ => {}
                }
                s
            }
            CheckKind::ToolSequence { tools, mode } => {
                let how = match mode {
                    SequenceMode::Exact => "exactly",
                    SequenceMode::InOrder => "in order",
                    SequenceMode::Contiguous => "back to back",
                };
                format!("tools called {how}: {}", tools.join(", "))
            }
            CheckKind::StepCount { turns, tool_calls } => {
                let mut parts = Vec::new();
                if !turns.is_open() {
                    parts.push(format!("{} turns", turns.describe()));
                }
                if !tool_calls.is_open() {
                    parts.push(format!("{} tool calls", tool_calls.describe()));
                }
                parts.join(" and ")
            }
            CheckKind::NoToolErrors => "no tool call failed".into(),
            CheckKind::Judge {
                rubric,
                model,
                threshold,
            } => {
                let first = excerpt(rubric.trim().lines().next().unwrap_or_default());
                match threshold {
                    Some(t) => format!("{model} scores the answer at least {t} on {first}"),
                    None => format!("{model} passes the answer on {first}"),
                }
            }
            CheckKind::ToolNotCalled { tool } => format!("tool `{tool}` not called"),
            CheckKind::FileExists { path } => format!("{path} exists"),
            CheckKind::FileAbsent { path } => format!("{path} does not exist"),
            CheckKind::FileContains { path, text } => format!("{path} contains {text:?}"),
            CheckKind::FileMatches { path, regex } => {
                format!("{path} matches /{}/", regex.as_str())
            }
            CheckKind::FileHash { path, sha256 } => format!("{path} has SHA-256 {sha256}"),
            CheckKind::Command { run, .. } => match run.trim_end().split_once('\n') {
                Some((first, rest)) => {
                    let more = rest.lines().count();
                    format!("`{first}` (and {more} more lines) exits 0")
                }
                None => format!("`{run}` exits 0"),
            },
            CheckKind::NoError => "no error".into(),
        }
    }

    /// Runs the check on a trial that ran to its end.
    pub fn evaluate(
        &self,
        outcome: &AgentOutcome,
        workspace: &Path,
        run: RunCommand<'_>,
        judge: RunJudge<'_>,
    ) -> CheckResult {
        let (held, detail) = self.verdict(outcome, workspace, run, judge);
        let (passed, detail) = match (self.not, self.unreadable(workspace)) {
            (false, _) => (held, detail),
            (true, Some(why)) => (false, Some(why)),
            (true, None) => (!held, detail),
        };
        CheckResult {
            kind: self.kind_name().into(),
            name: self.describe(),
            weight: self.weight,
            passed,
            detail: (!passed).then_some(detail).flatten(),
        }
    }

    /// Why the file a file check reads cannot be read, when it cannot: a negated check fails
    /// then, where the check itself would have failed too.
    fn unreadable(&self, workspace: &Path) -> Option<String> {
        let path = match &self.kind {
            CheckKind::FileContains { path, .. }
            | CheckKind::FileMatches { path, .. }
            | CheckKind::FileHash { path, .. } => path,
            _ => return None,
        };
        std::fs::read(workspace.join(path))
            .err()
            .map(|e| format!("cannot read it: {e}"))
    }

    fn verdict(
        &self,
        outcome: &AgentOutcome,
        workspace: &Path,
        run: RunCommand<'_>,
        judge: RunJudge<'_>,
    ) -> (bool, Option<String>) {
        let text = &outcome.final_text;
        let read = |path: &str| std::fs::read(workspace.join(path));
        match &self.kind {
            CheckKind::TextContains {
                text: wanted,
                case_sensitive,
            } => {
                let found = if *case_sensitive {
                    text.contains(wanted.as_str())
                } else {
                    text.to_lowercase().contains(&wanted.to_lowercase())
                };
                let mut detail = format!("final text: {}", excerpt(text));
                if !found && *case_sensitive && text.to_lowercase().contains(&wanted.to_lowercase())
                {
                    detail.push_str(" (it is there in another case)");
                }
                (found, Some(detail))
            }
            CheckKind::TextMatches(regex) => (
                regex.is_match(text),
                Some(format!("final text: {}", excerpt(text))),
            ),
            CheckKind::ToolCalled {
                tool,
                arguments,
                arguments_regex,
                pointer,
                count,
            } => {
                let all = outcome.tool_call_records();
                let calls: Vec<&Value> = all
                    .iter()
                    .filter(|c| c.name == *tool)
                    .map(|c| &c.arguments)
                    .collect();
                let matching = calls
                    .iter()
                    .filter(|args| {
                        arguments
                            .as_ref()
                            .is_none_or(|want| contains_subset(args, want))
                            && arguments_regex.as_ref().is_none_or(|r| {
                                trajectory::argument_text(args, pointer.as_deref())
                                    .is_some_and(|text| r.is_match(&text))
                            })
                    })
                    .count();
                let filtered = arguments.is_some() || arguments_regex.is_some();
                let detail = if calls.is_empty() || !filtered {
                    format!("tools called: {}", trajectory::tools_used(&all))
                } else {
                    format!(
                        "`{tool}` called with: {} ({matching} matching)",
                        calls
                            .iter()
                            .map(|a| excerpt(&a.to_string()))
                            .collect::<Vec<_>>()
                            .join("; ")
                    )
                };
                (count.holds(matching as u64), Some(detail))
            }
            CheckKind::ToolSequence { tools, mode } => {
                let all = outcome.tool_call_records();
                let names: Vec<&str> = all.iter().map(|c: &ToolCall| c.name.as_str()).collect();
                (
                    mode.found(&names, tools),
                    Some(format!("tools called: {}", trajectory::tools_used(&all))),
                )
            }
            CheckKind::StepCount { turns, tool_calls } => {
                let (held, found) = trajectory::step_count(outcome, turns, tool_calls);
                (held, Some(found))
            }
            CheckKind::NoToolErrors => {
                let (held, found) = trajectory::no_tool_errors(outcome);
                (held, Some(found))
            }
            CheckKind::ToolNotCalled { tool } => {
                let calls: Vec<String> = outcome
                    .tool_calls()
                    .filter(|(name, _)| name == tool)
                    .map(|(_, args)| excerpt(&args.to_string()))
                    .collect();
                (
                    calls.is_empty(),
                    Some(format!(
                        "`{tool}` called {} times, with: {}",
                        calls.len(),
                        calls.join("; ")
                    )),
                )
            }
            CheckKind::FileExists { path } => (
                workspace.join(path).exists(),
                Some(missing_file(workspace, path)),
            ),
            CheckKind::FileAbsent { path } => (
                !workspace.join(path).exists(),
                Some(match read(path) {
                    Ok(bytes) => format!(
                        "the file exists ({} bytes): {}",
                        bytes.len(),
                        excerpt(&String::from_utf8_lossy(&bytes))
                    ),
                    Err(_) => "it exists (not a readable file)".into(),
                }),
            ),
            CheckKind::FileContains { path, text: wanted } => match read(path) {
                Ok(bytes) => {
                    let content = String::from_utf8_lossy(&bytes);
                    (
                        content.contains(wanted.as_str()),
                        Some(format!(
                            "the file ({} bytes) holds: {}",
                            bytes.len(),
                            excerpt(&content)
                        )),
                    )
                }
                Err(e) => (false, Some(format!("cannot read it: {e}"))),
            },
            CheckKind::FileMatches { path, regex } => match read(path) {
                Ok(bytes) => {
                    let content = String::from_utf8_lossy(&bytes);
                    (
                        regex.is_match(&content),
                        Some(format!(
                            "the file ({} bytes) holds: {}",
                            bytes.len(),
                            excerpt(&content)
                        )),
                    )
                }
                Err(e) => (false, Some(format!("cannot read it: {e}"))),
            },
            CheckKind::FileHash { path, sha256 } => match read(path) {
                Ok(bytes) => {
                    let actual = crate::digest::sha256_hex(&bytes);
                    (
                        actual == *sha256,
                        Some(format!("its SHA-256 is {actual} ({} bytes)", bytes.len())),
                    )
                }
                Err(e) => (false, Some(format!("cannot read it: {e}"))),
            },
            CheckKind::Command {
                run: command,
                timeout,
            } => match run(command, *timeout) {
                Ok(result) if result.timed_out => (
                    false,
                    Some(format!(
                        "timed out after {:.1} s; output: {}",
                        timeout.as_secs_f64(),
                        tail(&result.output)
                    )),
                ),
                Ok(result) => (
                    result.exit == Some(0),
                    Some(format!(
                        "exit {}; output: {}",
                        result
                            .exit
                            .map_or_else(|| "by signal".into(), |c| c.to_string()),
                        tail(&result.output)
                    )),
                ),
                Err(e) => (false, Some(format!("cannot run it: {e}"))),
            },
            CheckKind::NoError => match outcome.failures.as_slice() {
                [] => (true, None),
                failures => (false, Some(failures.join("; "))),
            },
            CheckKind::Judge {
                rubric,
                model,
                threshold,
            } => {
                let prompt = crate::judge::prompt(rubric, outcome, *threshold);
                match judge(model, &prompt) {
                    Ok(answer) => {
                        let (passed, why) = crate::judge::verdict(&answer, *threshold);
                        (passed, Some(why))
                    }
                    Err(e) => (false, Some(format!("the judge could not run: {e}"))),
                }
            }
        }
    }
}

/// A workspace-relative path: no absolute paths and no `..` (a check looks inside the
/// workspace only).
fn workspace_path(field: &str, value: &Option<String>) -> Result<String, (String, String)> {
    let path = value
        .clone()
        .ok_or_else(|| (field.to_owned(), "this check needs `path`".to_owned()))?;
    let p = Path::new(&path);
    if p.is_absolute()
        || p.components()
            .any(|c| matches!(c, std::path::Component::ParentDir))
    {
        return Err((
            field.to_owned(),
            "must be a path inside the workspace (relative, without `..`)".into(),
        ));
    }
    Ok(path)
}

/// Whether `args` holds every key of `want` with an equal value.
fn contains_subset(args: &Value, want: &serde_json::Map<String, Value>) -> bool {
    want.iter().all(|(k, v)| args.get(k) == Some(v))
}

/// What a check of a file that is not there found: what its folder holds instead (a file
/// written under another name or in another folder is the usual miss), or that the folder is
/// missing too.
fn missing_file(workspace: &Path, path: &str) -> String {
    /// Most names listed.
    const MAX_NAMES: usize = 20;
    let relative = Path::new(path);
    let folder = relative.parent().unwrap_or(Path::new(""));
    let shown = if folder.as_os_str().is_empty() {
        "the workspace".to_owned()
    } else {
        format!("`{}`", folder.display())
    };
    let Ok(entries) = std::fs::read_dir(workspace.join(folder)) else {
        return format!("no such file, and no folder {shown}");
    };
    let mut names: Vec<String> = entries
        .flatten()
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                format!("{name}/")
            } else {
                name
            }
        })
        .collect();
    names.sort();
    let more = names.len().saturating_sub(MAX_NAMES);
    names.truncate(MAX_NAMES);
    let mut listed = if names.is_empty() {
        "nothing".to_owned()
    } else {
        names.join(", ")
    };
    if more > 0 {
        listed.push_str(&format!(" and {more} more"));
    }
    format!("no such file; {shown} holds: {listed}")
}

/// Characters of a long text shown from its start, and from its end.
const EXCERPT_HEAD: usize = 160;
const EXCERPT_TAIL: usize = 80;

/// A text for a detail line: whole when short, else its start and its end (where an answer's
/// conclusion usually is) with its length.
fn excerpt(text: &str) -> String {
    let count = text.chars().count();
    if count <= EXCERPT_HEAD + EXCERPT_TAIL {
        return format!("{text:?}");
    }
    let head: String = text.chars().take(EXCERPT_HEAD).collect();
    let tail: String = text.chars().skip(count - EXCERPT_TAIL).collect();
    format!("{head:?} … {tail:?} ({count} characters)")
}

/// The last 600 characters of a command's output.
fn tail(output: &str) -> String {
    let count = output.chars().count();
    let skip = count.saturating_sub(600);
    let tail: String = output.chars().skip(skip).collect();
    format!("{:?}", tail.trim_end())
}

/// A check as written: every field any kind takes; [`Check::from_raw`] says which apply.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCheck {
    pub kind: String,
    pub weight: Option<f64>,
    pub text: Option<String>,
    pub regex: Option<String>,
    pub case_sensitive: Option<bool>,
    pub tool: Option<String>,
    pub arguments: Option<toml::Table>,
    pub arguments_regex: Option<String>,
    pub path: Option<String>,
    pub sha256: Option<String>,
    pub run: Option<String>,
    /// Seconds.
    pub timeout: Option<f64>,
    pub not: Option<bool>,
    pub min: Option<u64>,
    pub max: Option<u64>,
    pub pointer: Option<String>,
    pub tools: Option<Vec<String>>,
    pub mode: Option<String>,
    pub turns: Option<RawBounds>,
    pub tool_calls: Option<RawBounds>,
    pub rubric: Option<String>,
    pub model: Option<String>,
    pub threshold: Option<f64>,
}

/// A TOML value as JSON (datetimes as their text).
pub(crate) fn toml_to_json(value: &toml::Value) -> Value {
    match value {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::from(*i),
        toml::Value::Float(f) => {
            serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number)
        }
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(a) => Value::Array(a.iter().map(toml_to_json).collect()),
        toml::Value::Table(t) => Value::Object(
            t.iter()
                .map(|(k, v)| (k.clone(), toml_to_json(v)))
                .collect(),
        ),
    }
}

/// Compiles a regular expression, its error in one line.
pub(crate) fn regex(pattern: &str) -> Result<Regex, String> {
    Regex::new(pattern).map_err(|e| {
        let last = e.to_string();
        let last = last.lines().last().unwrap_or_default().trim();
        format!(
            "not a valid regular expression: {}",
            last.strip_prefix("error: ").unwrap_or(last)
        )
    })
}

#[cfg(test)]
#[path = "check_tests.rs"]
mod found_tests;

#[cfg(test)]
mod tests {
    use super::*;

    fn command(run: &str) -> Check {
        Check {
            kind: CheckKind::Command {
                run: run.into(),
                timeout: DEFAULT_COMMAND_TIMEOUT,
            },
            weight: 1.0,
            not: false,
        }
    }

    #[test]
    fn a_command_is_named_by_its_first_line() {
        assert_eq!(command("cargo test").describe(), "`cargo test` exits 0");
        assert_eq!(
            command("python3 - <<'END'\nimport solution\ncheck()\nEND\n").describe(),
            "`python3 - <<'END'` (and 3 more lines) exits 0"
        );
    }
}
