//! Suites as data: a TOML file of defaults and tasks (`docs/evals.md` documents every field).
//! Reading is strict: an unknown field, a field that does not apply to a check's kind, a bad
//! regular expression or a missing prompt is an error naming the file, line, task and field,
//! never a panic and never silently ignored.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use toml::Spanned;

use crate::agent_options::{AgentOptions, RawAgentOptions};
use crate::check::{toml_to_json, Check, CheckKind, RawCheck};
use crate::digest::sha256_hex;
use crate::outcome::Limits;
pub use crate::suite_error::SuiteError;
use crate::validate;

/// A suite, resolved: every task has its models, trials, limits and checks.
#[derive(Clone, Debug)]
pub struct Suite {
    pub name: String,
    pub description: Option<String>,
    /// The file it was read from, as given.
    pub path: PathBuf,
    /// SHA-256 of the file's bytes.
    pub digest: String,
    /// The cassette folder the suite ships with (relative paths resolved against the suite's
    /// folder): a run without `--record`/`--replay`/`--once` replays from it.
    pub cassettes: Option<PathBuf>,
    /// The line of `cassettes`, for the error when a replay finds no such folder.
    pub cassettes_line: usize,
    /// `[defaults] max_cost`: dollars of live calls after which the run starts no new trial
    /// (`--max-cost` replaces it).
    pub max_cost: Option<f64>,
    pub tasks: Vec<Task>,
}

/// One task, with the suite's defaults applied.
#[derive(Clone, Debug)]
pub struct Task {
    pub id: String,
    /// The line of its `[[task]]` table.
    pub line: usize,
    pub steps: Vec<Step>,
    /// Copied fresh into every trial's workspace; an empty workspace when `None`.
    pub fixture: Option<PathBuf>,
    pub models: Vec<String>,
    /// The line that gives the task its models (its own `models`, else the defaults'), for
    /// the errors about a model found when a run starts; the task's line when none does.
    pub models_line: usize,
    pub trials: u32,
    pub seed: u64,
    pub tools: Option<Vec<String>>,
    pub thinking: Option<String>,
    pub limits: Limits,
    /// Pi settings (`settings.json` entries) for the trial.
    pub settings: serde_json::Map<String, Value>,
    pub checks: Vec<Check>,
    /// The weighted share of checks a trial must pass (1 = all).
    pub threshold: f64,
    /// Labels that `--filter tag:NAME` selects by and reports group by.
    pub tags: Vec<String>,
    /// Whatever the suite says of the task (a dataset row's columns, say), carried into its
    /// trials' results.
    pub metadata: serde_json::Map<String, Value>,
    /// Extra flags, environment and system prompt text for the task's agent.
    pub agent: AgentOptions,
}

/// What is sent to the agent, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A prompt; the agent runs until it is idle before the next step.
    Prompt(String),
    /// Sent while the agent works on the prompt before it (Pi's steering).
    Steer(String),
    /// Queued while the agent works, delivered when it would stop (Pi's follow-up).
    FollowUp(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSuite {
    name: Option<Spanned<String>>,
    description: Option<String>,
    #[serde(default)]
    defaults: RawDefaults,
    #[serde(default)]
    task: Vec<Spanned<RawTask>>,
    /// Read by [`crate::dataset::expand`], which makes a `[[task]]` of each row.
    #[serde(default, rename = "dataset")]
    _datasets: Option<toml::Value>,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDefaults {
    models: Option<Spanned<Vec<String>>>,
    trials: Option<Spanned<u32>>,
    seed: Option<u64>,
    tools: Option<Spanned<Vec<String>>>,
    thinking: Option<Spanned<String>>,
    cassettes: Option<Spanned<String>>,
    fixture: Option<Spanned<String>>,
    threshold: Option<Spanned<f64>>,
    limits: Option<RawLimits>,
    settings: Option<toml::Table>,
    agent: Option<RawAgentOptions>,
    max_cost: Option<Spanned<f64>>,
    /// The model of `judge` checks that name none.
    judge: Option<Spanned<String>>,
}

#[derive(Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    turns: Option<u32>,
    tokens: Option<u64>,
    cost: Option<f64>,
    /// Seconds.
    wall_time: Option<f64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTask {
    id: Spanned<String>,
    prompt: Option<String>,
    steps: Option<Vec<Spanned<RawStep>>>,
    fixture: Option<Spanned<String>>,
    models: Option<Spanned<Vec<String>>>,
    trials: Option<Spanned<u32>>,
    seed: Option<u64>,
    tools: Option<Spanned<Vec<String>>>,
    thinking: Option<Spanned<String>>,
    threshold: Option<Spanned<f64>>,
    limits: Option<RawLimits>,
    settings: Option<toml::Table>,
    tags: Option<Spanned<Vec<String>>>,
    metadata: Option<toml::Table>,
    agent: Option<RawAgentOptions>,
    #[serde(default)]
    check: Vec<Spanned<RawCheck>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    prompt: Option<String>,
    steer: Option<String>,
    follow_up: Option<String>,
}

/// Reads and checks the suite at `path`.
pub fn load(path: &Path) -> Result<Suite, SuiteError> {
    let bytes = std::fs::read(path).map_err(|e| SuiteError {
        file: path.to_path_buf(),
        line: 0,
        task: None,
        field: None,
        message: format!("cannot read the suite: {e}"),
    })?;
    let text = String::from_utf8(bytes).map_err(|e| SuiteError {
        file: path.to_path_buf(),
        line: line_of(
            &String::from_utf8_lossy(e.as_bytes()),
            e.utf8_error().valid_up_to(),
        ),
        task: None,
        field: None,
        message: "the suite is not UTF-8".into(),
    })?;
    parse(path, &text)
}

/// Reads a suite from `text`, as if from `path` (relative paths in it resolve against the
/// folder of `path`). Its datasets' rows are read as tasks, and its digest covers them.
pub fn parse(path: &Path, text: &str) -> Result<Suite, SuiteError> {
    let expanded = crate::dataset::expand(path, text)?;
    let mut suite = parse_expanded(path, &expanded.text).map_err(|e| expanded.relocate(e))?;
    for task in &mut suite.tasks {
        task.line = expanded.suite_line(task.line);
        task.models_line = expanded.suite_line(task.models_line);
    }
    Ok(suite)
}

/// Reads a suite whose datasets are expanded.
fn parse_expanded(path: &Path, text: &str) -> Result<Suite, SuiteError> {
    let at = |offset: usize, task: Option<&str>, field: Option<&str>, message: String| SuiteError {
        file: path.to_path_buf(),
        line: line_of(text, offset),
        task: task.map(str::to_owned),
        field: field.map(str::to_owned),
        message,
    };
    let raw: RawSuite = toml::from_str(text).map_err(|e| {
        if let Some(offset) = single_bracket_check(text) {
            return at(
                offset,
                locate(text, offset).0.as_deref(),
                Some("check"),
                "`[task.check]` makes one table, not a list of checks: write each check as `[[task.check]]` (double brackets)".into(),
            );
        }
        let offset = e.span().map_or(0, |s| s.start);
        let (task, field) = locate(text, offset);
        let message = e.message().trim().replace('\n', "; ");
        at(offset, task.as_deref(), field.as_deref(), message)
    })?;
    let folder = path.parent().unwrap_or(Path::new("")).to_path_buf();
    let resolve = |p: &str| folder.join(p);
    let name = match &raw.name {
        Some(name) => {
            validate::check_name(name.get_ref())
                .map_err(|m| at(name.span().start, None, Some("name"), m))?;
            name.get_ref().clone()
        }
        None => {
            let stem = path
                .file_stem()
                .map_or_else(|| "suite".to_owned(), |s| s.to_string_lossy().into_owned());
            validate::check_name(&stem).map_err(|m| {
                at(
                    0,
                    None,
                    Some("name"),
                    format!("the suite is named after its file, and {m}: give it a `name`"),
                )
            })?;
            stem
        }
    };
    let defaults = &raw.defaults;
    check_common(
        defaults.trials.as_ref(),
        defaults.models.as_ref(),
        defaults.tools.as_ref(),
        defaults.thinking.as_ref(),
    )
    .map_err(|(offset, field, m)| at(offset, None, Some(field), m))?;
    let mut fixtures_seen = BTreeSet::new();
    if let Some(fixture) = &defaults.fixture {
        check_fixture_at(&folder, fixture, &mut fixtures_seen)
            .map_err(|m| at(fixture.span().start, None, Some("fixture"), m))?;
    }
    if let Some(judge) = &defaults.judge {
        validate::check_model_name(judge.get_ref())
            .map_err(|m| at(judge.span().start, None, Some("judge"), m))?;
    }
    if let Some(t) = &defaults.threshold {
        check_threshold(*t.get_ref())
            .map_err(|m| at(t.span().start, None, Some("threshold"), m))?;
    }
    if let Some(max) = &defaults.max_cost {
        if !(max.get_ref().is_finite() && *max.get_ref() >= 0.0) {
            return Err(at(
                max.span().start,
                None,
                Some("max_cost"),
                "must be a non-negative number of dollars".into(),
            ));
        }
    }
    if raw.task.is_empty() {
        return Err(at(
            text.len(),
            None,
            Some("task"),
            "the suite has no [[task]]".into(),
        ));
    }
    let mut tasks = Vec::with_capacity(raw.task.len());
    let mut seen = BTreeMap::new();
    for spanned in &raw.task {
        let start = spanned.span().start;
        let task = spanned.get_ref();
        let id = task.id.get_ref().clone();
        let id_at = task.id.span().start;
        validate::check_name(&id).map_err(|m| at(id_at, Some(&id), Some("id"), m))?;
        if let Some(first) = seen.insert(id.clone(), line_of(text, id_at)) {
            return Err(at(
                id_at,
                Some(&id),
                Some("id"),
                format!("the id is used twice (first on line {first})"),
            ));
        }
        let err = |offset: usize, field: &str, message: String| {
            at(offset, Some(&id), Some(field), message)
        };
        let steps =
            steps_of(task).map_err(|(offset, field, m)| err(offset.unwrap_or(start), field, m))?;
        check_common(
            task.trials.as_ref(),
            task.models.as_ref(),
            task.tools.as_ref(),
            task.thinking.as_ref(),
        )
        .map_err(|(offset, field, m)| err(offset, field, m))?;
        let fixture = match &task.fixture {
            Some(fixture) => {
                check_fixture_at(&folder, fixture, &mut fixtures_seen)
                    .map_err(|m| err(fixture.span().start, "fixture", m))?;
                Some(fixture)
            }
            None => defaults.fixture.as_ref(),
        };
        let models_given = task.models.as_ref().or(defaults.models.as_ref());
        let models = models_given.map_or_else(Vec::new, |m| m.get_ref().clone());
        let models_line = line_of(text, models_given.map_or(start, |m| m.span().start));
        let trials = task
            .trials
            .as_ref()
            .or(defaults.trials.as_ref())
            .map_or(1, |t| *t.get_ref());
        let threshold = match &task.threshold {
            Some(t) => {
                check_threshold(*t.get_ref()).map_err(|m| err(t.span().start, "threshold", m))?;
                *t.get_ref()
            }
            None => defaults.threshold.as_ref().map_or(1.0, |t| *t.get_ref()),
        };
        let limits = limits_of(task.limits.or(defaults.limits).unwrap_or_default())
            .map_err(|(field, m)| err(start, field, m))?;
        let mut settings = serde_json::Map::new();
        for table in [&defaults.settings, &task.settings].into_iter().flatten() {
            merge_settings(&mut settings, table);
        }
        let mut checks = Vec::with_capacity(task.check.len());
        for raw_check in &task.check {
            let judge = defaults.judge.as_ref().map(|j| j.get_ref().as_str());
            let check = Check::from_raw(raw_check.get_ref(), judge)
                .map_err(|(field, m)| err(raw_check.span().start, &format!("check.{field}"), m))?;
            checks.push(check);
        }
        let tags = match &task.tags {
            Some(tags) => tags_of(tags.get_ref()).map_err(|m| err(tags.span().start, "tags", m))?,
            None => Vec::new(),
        };
        let agent = AgentOptions::resolve(&folder, defaults.agent.as_ref(), task.agent.as_ref())
            .map_err(|(field, m)| err(start, field, m))?;
        if checks.is_empty() {
            checks.push(Check {
                kind: CheckKind::NoError,
                weight: 1.0,
                not: false,
            });
        }
        tasks.push(Task {
            id: id.clone(),
            line: line_of(text, start),
            steps,
            fixture: fixture.map(|f| resolve(f.get_ref())),
            models,
            models_line,
            trials,
            seed: task.seed.or(defaults.seed).unwrap_or(0),
            tools: task
                .tools
                .as_ref()
                .or(defaults.tools.as_ref())
                .map(|t| t.get_ref().clone()),
            thinking: task
                .thinking
                .as_ref()
                .or(defaults.thinking.as_ref())
                .map(|t| t.get_ref().clone()),
            limits,
            settings,
            checks,
            threshold,
            tags,
            metadata: task
                .metadata
                .as_ref()
                .map_or_else(serde_json::Map::new, |m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), toml_to_json(v)))
                        .collect()
                }),
            agent,
        });
    }
    Ok(Suite {
        name,
        description: raw.description,
        path: path.to_path_buf(),
        digest: sha256_hex(text.as_bytes()),
        cassettes: defaults.cassettes.as_ref().map(|c| resolve(c.get_ref())),
        cassettes_line: defaults
            .cassettes
            .as_ref()
            .map_or(0, |c| line_of(text, c.span().start)),
        max_cost: defaults.max_cost.as_ref().map(|m| *m.get_ref()),
        tasks,
    })
}

/// Checks the values the defaults and a task both take: the trial count, the models' names,
/// the tools and the thinking level; the offset and field of what is wrong.
fn check_common(
    trials: Option<&Spanned<u32>>,
    models: Option<&Spanned<Vec<String>>>,
    tools: Option<&Spanned<Vec<String>>>,
    thinking: Option<&Spanned<String>>,
) -> Result<(), (usize, &'static str, String)> {
    if let Some(t) = trials {
        validate::check_trials(*t.get_ref()).map_err(|m| (t.span().start, "trials", m))?;
    }
    if let Some(models) = models {
        for model in models.get_ref() {
            validate::check_model_name(model).map_err(|m| (models.span().start, "models", m))?;
        }
    }
    if let Some(tools) = tools {
        for tool in tools.get_ref() {
            validate::check_tool(tool).map_err(|m| (tools.span().start, "tools", m))?;
        }
    }
    if let Some(level) = thinking {
        validate::check_thinking(level.get_ref())
            .map_err(|m| (level.span().start, "thinking", m))?;
    }
    Ok(())
}

/// Checks the fixture a suite in `folder` names (see [`crate::workspace::check_fixture`]),
/// each folder once.
fn check_fixture_at(
    folder: &Path,
    fixture: &Spanned<String>,
    seen: &mut BTreeSet<PathBuf>,
) -> Result<(), String> {
    let path = folder.join(fixture.get_ref());
    if seen.contains(&path) {
        return Ok(());
    }
    crate::workspace::check_fixture(&path)?;
    seen.insert(path);
    Ok(())
}

/// The offset of a `[task.check]` header (one table, where each check is an element of the
/// `[[task.check]]` array): a mistake serde reports only as a map where a sequence was due.
fn single_bracket_check(text: &str) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
        if compact.starts_with("[task.check]") {
            return Some(offset);
        }
        offset += line.len();
    }
    None
}

/// The steps of a task: `prompt`, or `steps`, not both; a steer or follow-up needs a prompt
/// before it.
fn steps_of(task: &RawTask) -> Result<Vec<Step>, (Option<usize>, &'static str, String)> {
    match (&task.prompt, &task.steps) {
        (Some(_), Some(_)) => Err((None, "steps", "give `prompt` or `steps`, not both".into())),
        (None, None) => Err((
            None,
            "prompt",
            "a task needs a `prompt` (or `steps`)".into(),
        )),
        (Some(prompt), None) => Ok(vec![Step::Prompt(prompt.clone())]),
        (None, Some(raw)) => {
            let mut steps = Vec::with_capacity(raw.len());
            for spanned in raw {
                let s = spanned.get_ref();
                let at = Some(spanned.span().start);
                let step = match (&s.prompt, &s.steer, &s.follow_up) {
                    (Some(p), None, None) => Step::Prompt(p.clone()),
                    (None, Some(p), None) => Step::Steer(p.clone()),
                    (None, None, Some(p)) => Step::FollowUp(p.clone()),
                    _ => {
                        return Err((
                            at,
                            "steps",
                            "each step is exactly one of `prompt`, `steer`, `follow_up`".into(),
                        ))
                    }
                };
                if steps.is_empty() && !matches!(step, Step::Prompt(_)) {
                    return Err((at, "steps", "the first step must be a `prompt`".into()));
                }
                steps.push(step);
            }
            if steps.is_empty() {
                return Err((None, "steps", "`steps` is empty".into()));
            }
            Ok(steps)
        }
    }
}

fn limits_of(raw: RawLimits) -> Result<Limits, (&'static str, String)> {
    if let Some(cost) = raw.cost {
        if !(cost.is_finite() && cost >= 0.0) {
            return Err((
                "limits.cost",
                "must be a non-negative number of dollars".into(),
            ));
        }
    }
    let wall_time = match raw.wall_time {
        None => None,
        Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => Some(Duration::from_secs_f64(s)),
        Some(_) => {
            return Err((
                "limits.wall_time",
                "must be a positive number of seconds".into(),
            ))
        }
    };
    Ok(Limits {
        turns: raw.turns,
        tokens: raw.tokens,
        cost: raw.cost,
        wall_time,
    })
}

/// A task's tags, those left empty (a dataset column with no value) left out; one word each
/// (the HTML report lists a trial's tags separated by spaces) and no control characters,
/// since they are printed in reports.
fn tags_of(tags: &[String]) -> Result<Vec<String>, String> {
    let mut kept = Vec::with_capacity(tags.len());
    for tag in tags.iter().map(|t| t.trim()).filter(|t| !t.is_empty()) {
        if tag.chars().any(|c| c.is_control() || c.is_whitespace()) {
            return Err(format!(
                "the tag `{}` holds a space or a control character: a tag is one word",
                tag.escape_debug()
            ));
        }
        if !kept.iter().any(|k| k == tag) {
            kept.push(tag.to_owned());
        }
    }
    Ok(kept)
}

fn check_threshold(value: f64) -> Result<(), String> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err("must be between 0 and 1 (the weighted share of checks to pass)".into())
    }
}

/// Merges a TOML table into settings JSON, tables deeply (a task's settings refine the
/// suite's).
fn merge_settings(into: &mut serde_json::Map<String, Value>, table: &toml::Table) {
    for (key, value) in table {
        let value = toml_to_json(value);
        match (into.get_mut(key), value) {
            (Some(Value::Object(existing)), Value::Object(new)) => {
                for (k, v) in new {
                    existing.insert(k, v);
                }
            }
            (_, value) => {
                into.insert(key.clone(), value);
            }
        }
    }
}

/// The task and key around byte `offset`, for an error the TOML reader found: the id of the
/// `[[task]]` table the offset is in, and the key its line assigns (or its table's name).
fn locate(text: &str, offset: usize) -> (Option<String>, Option<String>) {
    let end = offset.min(text.len());
    let before = text.get(..end).unwrap_or(text);
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or("");
    let field = line
        .split_once('=')
        .map(|(key, _)| key.trim().trim_matches('"').to_owned())
        .filter(|key| !key.is_empty() && !key.starts_with('['));
    let Some(table) = before.rfind("[[task]]") else {
        return (None, field);
    };
    let id = text[table..]
        .lines()
        .skip(1)
        .take_while(|l| !l.trim_start().starts_with('['))
        .find_map(|l| {
            let (key, value) = l.split_once('=')?;
            (key.trim() == "id").then(|| value.trim().trim_matches('"').to_owned())
        });
    (id, field)
}

/// The one-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}
