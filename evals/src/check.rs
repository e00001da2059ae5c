//! Checks: what a trial is scored on. Each looks at what the agent did (its messages) or at
//! what it left in the workspace, and says passed or not, with what it found instead.

use std::path::Path;
use std::time::Duration;

use regex::Regex;
use serde::Deserialize;
use serde_json::Value;

use crate::outcome::AgentOutcome;
use crate::results::CheckResult;

/// The default timeout of a `command` check.
pub const DEFAULT_COMMAND_TIMEOUT: Duration = Duration::from_secs(60);

/// A check with its weight.
#[derive(Clone, Debug)]
pub struct Check {
    pub kind: CheckKind,
    pub weight: f64,
}

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
    /// equal value) and whose JSON text matches `arguments_regex`.
    ToolCalled {
        tool: String,
        arguments: Option<serde_json::Map<String, Value>>,
        arguments_regex: Option<Regex>,
    },
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
    pub(crate) fn from_raw(raw: &RawCheck) -> Result<Check, (String, String)> {
        let kind = raw.kind.as_str();
        let fields: [(&str, bool); 10] = [
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
        ];
        let takes: &[&str] = match kind {
            "text_contains" => &["text", "case_sensitive"],
            "text_matches" => &["regex"],
            "tool_called" => &["tool", "arguments", "arguments_regex"],
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
                    format!("unknown check kind `{other}` (known: text_contains, text_matches, tool_called, tool_not_called, file_exists, file_absent, file_contains, file_matches, file_hash, command, no_error)"),
                ))
            }
        };
        if let Some((field, _)) = fields.iter().find(|(f, set)| *set && !takes.contains(f)) {
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
            },
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
        Ok(Check { kind, weight })
    }

    /// The kind's name as a suite writes it.
    pub fn kind_name(&self) -> &'static str {
        match &self.kind {
            CheckKind::TextContains { .. } => "text_contains",
            CheckKind::TextMatches(_) => "text_matches",
            CheckKind::ToolCalled { .. } => "tool_called",
            CheckKind::ToolNotCalled { .. } => "tool_not_called",
            CheckKind::FileExists { .. } => "file_exists",
            CheckKind::FileAbsent { .. } => "file_absent",
            CheckKind::FileContains { .. } => "file_contains",
            CheckKind::FileMatches { .. } => "file_matches",
            CheckKind::FileHash { .. } => "file_hash",
            CheckKind::Command { .. } => "command",
            CheckKind::NoError => "no_error",
        }
    }

    /// What is checked, in words.
    pub fn describe(&self) -> String {
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
            } => {
                let mut s = format!("tool `{tool}` called");
                if let Some(a) = arguments {
                    s.push_str(&format!(" with {}", Value::Object(a.clone())));
                }
                if let Some(r) = arguments_regex {
                    s.push_str(&format!(" with arguments matching /{}/", r.as_str()));
                }
                s
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
    ) -> CheckResult {
        let (passed, detail) = self.verdict(outcome, workspace, run);
        CheckResult {
            kind: self.kind_name().into(),
            name: self.describe(),
            weight: self.weight,
            passed,
            detail: (!passed).then_some(detail).flatten(),
        }
    }

    fn verdict(
        &self,
        outcome: &AgentOutcome,
        workspace: &Path,
        run: RunCommand<'_>,
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
            } => {
                let calls: Vec<&Value> = outcome
                    .tool_calls()
                    .filter(|(name, _)| name == tool)
                    .map(|(_, args)| args)
                    .collect();
                let matching = calls.iter().any(|args| {
                    arguments
                        .as_ref()
                        .is_none_or(|want| contains_subset(args, want))
                        && arguments_regex
                            .as_ref()
                            .is_none_or(|r| r.is_match(&args.to_string()))
                });
                let detail = if calls.is_empty() {
                    let called: Vec<String> =
                        outcome.tool_calls().map(|(n, _)| n.to_owned()).collect();
                    format!(
                        "tools called: {}",
                        if called.is_empty() {
                            "none".into()
                        } else {
                            called.join(", ")
                        }
                    )
                } else {
                    format!(
                        "`{tool}` called with: {}",
                        calls
                            .iter()
                            .map(|a| excerpt(&a.to_string()))
                            .collect::<Vec<_>>()
                            .join("; ")
                    )
                };
                (matching, Some(detail))
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
