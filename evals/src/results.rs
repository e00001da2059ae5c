//! The results of an eval run, as written to `results.json` (schema documented in
//! `docs/evals.md`). Versioned: a reader refuses a newer `schemaVersion` and reads older ones.
//! Everything is sorted (suite, task, model, trial) and holds no clock reading outside the
//! per-trial `wallMs`, so two runs that did the same thing give files that differ only there.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The schema this build writes, and the newest it reads.
pub const SCHEMA_VERSION: u32 = 1;

/// One eval run (or one shard of it, or shards merged).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvalResults {
    pub schema_version: u32,
    /// The harness version that ran it.
    pub harness: String,
    /// The suites run, in the order given.
    pub suites: Vec<SuiteRef>,
    /// How model calls were answered: `live`, `record`, `replay` or `once`.
    pub mode: String,
    /// How the trials' commands were confined: `bwrap` or `none`.
    pub isolation: String,
    /// The shards these results hold (`None`: the whole run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<Shards>,
    /// Every trial, sorted by suite, task, model and trial number.
    pub trials: Vec<TrialResult>,
    /// Per task and model, sorted as the trials.
    pub tasks: Vec<TaskSummary>,
    /// Per model, sorted by model.
    pub models: Vec<ModelSummary>,
    /// Whether the run was cut short and how to finish it (absent from older files).
    #[serde(flatten)]
    pub progress: RunProgress,
}

/// How far a run got, and the command that finishes it (`pi eval --resume OUT`). Every field is
/// optional in the file, so results written before these fields existed still load.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunProgress {
    /// The run was interrupted (Ctrl-C, SIGTERM): `trials` holds only the trials that finished.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// How many trials the run planned (`trials` holds fewer when it was interrupted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned: Option<u32>,
    /// The command line that ran it, so that `--resume` runs the rest the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub invocation: Option<Invocation>,
    /// Why the run started no more trials though it was not interrupted (`cost limit $X
    /// reached`): `trials` holds fewer than `planned`, and `--resume` runs the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

/// The words of a `pi eval` command line and the folder it ran in (its paths are relative to
/// it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Invocation {
    pub cwd: String,
    /// The words after `pi eval`.
    pub args: Vec<String>,
}

/// A suite as run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SuiteRef {
    pub name: String,
    /// The suite file, as given on the command line.
    pub path: String,
    /// SHA-256 of the suite file: results from different suite texts are not compared blindly.
    pub digest: String,
}

/// Which shards of a run results hold: `count` shards in all, `held` of them here.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Shards {
    pub count: u32,
    /// Zero-based shard indexes, sorted.
    pub held: Vec<u32>,
}

/// How a trial ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrialStatus {
    /// The agent ran to the end and the checks passed (score at or above the threshold).
    Passed,
    /// The agent ran to the end and the checks did not pass.
    Failed,
    /// A limit (turns, tokens, cost, wall time) stopped the agent; scored as a failure.
    Limit,
    /// The agent could not run (it crashed, the model could not be reached, the workspace
    /// could not be prepared); not a verdict on the model.
    Error,
    /// Replay: this build did not do what the cassette recorded. Not a verdict on the model
    /// either: the harness or the configuration changed.
    Diverged,
}

impl TrialStatus {
    /// Whether the trial counts as a success for pass@k.
    pub fn is_pass(self) -> bool {
        self == TrialStatus::Passed
    }

    /// Whether the trial says something about the model (errors and divergences do not).
    pub fn is_verdict(self) -> bool {
        matches!(
            self,
            TrialStatus::Passed | TrialStatus::Failed | TrialStatus::Limit
        )
    }
}

/// One trial: one task, one model, one attempt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrialResult {
    pub suite: String,
    pub task: String,
    pub model: String,
    /// Zero-based.
    pub trial: u32,
    /// The seed the agent's ids came from (a trial's own, so trials do not share cassettes or
    /// caches).
    pub seed: u64,
    pub status: TrialStatus,
    /// Weighted share of checks passed, 0 to 1 (0 for errors and divergences).
    pub score: f64,
    pub checks: Vec<CheckResult>,
    /// Tokens of every model call of the trial, its judges' included.
    pub usage: Usage,
    /// Dollars spent on live model calls, its judges' included.
    pub cost: f64,
    /// Dollars the replayed calls cost when they were recorded (not spent by this run), its
    /// judges' included.
    pub replayed_cost: f64,
    /// Model calls made live and answered from a cassette, its judges' included.
    pub calls: Calls,
    /// What the trial's `judge` checks took of the above (absent when it has none).
    #[serde(default, skip_serializing_if = "JudgeSpend::is_empty")]
    pub judge: JudgeSpend,
    /// Agent turns (model responses).
    pub turns: u32,
    /// Wall time of the agent's run, checks excluded.
    pub wall_ms: u64,
    /// The trial's cassette, relative to the cassette directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cassette: Option<String>,
    /// What stopped the trial (the limit, the error, the divergence), in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The text of the agent's last message.
    pub final_text: String,
    /// The messages of the run, as Pi's `agent_end` event gives them.
    pub transcript: Vec<Value>,
    /// Attempts made (`--retry-errors`): 1 unless an error was retried.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub attempts: u32,
    /// Why each earlier attempt errored, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier_errors: Vec<String>,
    /// The task's tags (absent when it has none), which reports group by.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The task's metadata (absent when it has none).
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub metadata: serde_json::Map<String, Value>,
    /// What the trial's trajectory needs beside its transcript (each field absent when empty,
    /// and from older files).
    #[serde(flatten)]
    pub context: TrialContext,
}

/// What the agent of a trial was given and did that its messages do not hold: the tools it
/// was offered, the folder it ran in, and the compactions of its context. `pi eval --atif`
/// rebuilds the trial's system prompt, tool definitions and context boundaries from them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrialContext {
    /// The task's tools (Pi's `--tools`; empty: `--no-tools`); absent: Pi's default four.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<String>>,
    /// The workspace the agent ran in, absolute, when it was kept (`--keep`); a workspace in
    /// a temporary folder is gone with the run and not named.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The compactions of the agent's context, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub compactions: Vec<Compaction>,
}

/// One compaction, as the agent's `compaction_end` event gave it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Compaction {
    /// How many messages of the transcript had ended before it.
    pub after_messages: u32,
    /// Why: `manual`, `threshold` or `overflow`.
    pub reason: String,
    /// The summary that replaced the compacted messages.
    pub summary: String,
    /// The context's tokens before it.
    pub tokens_before: u64,
    /// The agent's session entry the kept messages start at (an id of its own session, which
    /// the transcript does not carry).
    pub first_kept_entry_id: String,
}

fn one() -> u32 {
    1
}

#[allow(clippy::trivially_copy_pass_by_ref)] // serde's skip_serializing_if passes a reference
fn is_one(n: &u32) -> bool {
    *n == 1
}

/// One check of a trial.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckResult {
    /// The check's kind as the suite names it (`text_contains`, `command`, ...).
    pub kind: String,
    /// What was checked, in words (`final text contains "hello"`).
    pub name: String,
    pub weight: f64,
    pub passed: bool,
    /// Why it failed (what was found instead, a command's output tail).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// Tokens, summed over the trial's model responses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub total_tokens: u64,
}

impl Usage {
    /// Adds `other` to this.
    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.total_tokens += other.total_tokens;
    }
}

/// What judge calls took: counted in their trial's (and summary's) usage, cost and calls, and
/// kept apart here so that a report can say how much of a run's spending went on grading.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JudgeSpend {
    pub usage: Usage,
    /// Dollars of live judge calls.
    pub cost: f64,
    /// Dollars the replayed judge calls cost when they were recorded.
    pub replayed_cost: f64,
    pub calls: Calls,
}

impl JudgeSpend {
    /// Whether nothing was spent (no judge ran): the field is then left out of the file.
    pub fn is_empty(&self) -> bool {
        self.calls == Calls::default()
            && self.usage == Usage::default()
            && self.cost == 0.0
            && self.replayed_cost == 0.0
    }

    /// Adds `other` to this.
    pub fn add(&mut self, other: &JudgeSpend) {
        self.usage.add(&other.usage);
        self.cost += other.cost;
        self.replayed_cost += other.replayed_cost;
        self.calls.live += other.calls.live;
        self.calls.replayed += other.calls.replayed;
    }
}

/// Model calls by where their answers came from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Calls {
    pub live: u32,
    pub replayed: u32,
}

/// pass@k or pass^k at one k.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AtK {
    pub k: u32,
    pub value: f64,
}

/// One task against one model, over its trials.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskSummary {
    pub suite: String,
    pub task: String,
    pub model: String,
    /// Trials run.
    pub trials: u32,
    /// Trials that are a verdict on the model (not errors or divergences): the `n` of the
    /// estimators.
    pub counted: u32,
    /// Trials passed: the `c` of the estimators.
    pub passed: u32,
    pub errors: u32,
    pub diverged: u32,
    /// Unbiased pass@k (1 - C(n-c,k)/C(n,k)) for k = 1..=n.
    pub pass_at_k: Vec<AtK>,
    /// pass^k (C(c,k)/C(n,k), tau-bench's reliability) for k = 1..=n.
    pub pass_hat_k: Vec<AtK>,
    /// Mean score over counted trials.
    pub mean_score: f64,
    /// Standard error of the mean score (0 with fewer than two trials).
    pub stderr: f64,
    pub usage: Usage,
    pub cost: f64,
    pub replayed_cost: f64,
    /// What judge calls took of the above (absent when no judge ran).
    #[serde(default, skip_serializing_if = "JudgeSpend::is_empty")]
    pub judge: JudgeSpend,
    pub mean_turns: f64,
    pub mean_wall_ms: f64,
}

/// One model over all its tasks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelSummary {
    pub model: String,
    pub tasks: u32,
    pub trials: u32,
    pub passed: u32,
    pub errors: u32,
    pub diverged: u32,
    /// Mean over tasks of each task's pass@1.
    pub pass_at_1: f64,
    /// Mean over tasks of each task's mean score: the overall score.
    pub score: f64,
    /// Standard error of `score` over tasks.
    pub stderr: f64,
    pub usage: Usage,
    pub cost: f64,
    pub replayed_cost: f64,
    /// What judge calls took of the above (absent when no judge ran).
    #[serde(default, skip_serializing_if = "JudgeSpend::is_empty")]
    pub judge: JudgeSpend,
}
