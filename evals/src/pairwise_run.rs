//! Asking the judge of `pi eval pairwise` about one pair: its model call is an effect like any
//! other, made live, recorded into the pair's cassette or replayed from it
//! ([`crate::judge_run`]), in a scratch trial folder of its own. A pair's cassette is
//! `<suite>/<task>/<trial>.pairwise.jsonl` under the cassette folder.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::agent::AgentCommand;
use crate::isolate::{Confinement, Isolation};
use crate::judge_run::{run_judge, JudgeCassette, JudgeRun};
use crate::pairwise::Pair;
use crate::workspace::TrialDirs;

/// Where the judge's calls are answered from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cassettes {
    Live,
    /// Live, each pair recorded under the folder.
    Record(PathBuf),
    /// Each pair replayed from its cassette under the folder.
    Replay(PathBuf),
    /// Replayed where a pair's cassette exists, else live and recorded.
    Once(PathBuf),
}

/// The judge of a pairwise comparison.
#[derive(Debug)]
pub struct PairJudge {
    pub agent: AgentCommand,
    /// The judge model, `provider/id`.
    pub model: String,
    pub cassettes: Cassettes,
    /// Where the user's `models.json` and `auth.json` are (`auth.json` only for live calls).
    pub user_agent_dir: Option<PathBuf>,
    pub seed: u64,
    pub cancel: Arc<AtomicBool>,
}

/// A pair's cassette, relative to the cassette folder.
pub fn cassette_path(pair: &Pair) -> PathBuf {
    PathBuf::from(&pair.suite)
        .join(&pair.task)
        .join(format!("{}.pairwise.jsonl", pair.trial))
}

impl PairJudge {
    /// Asks the judge `prompt` about `pair`; its answer, or why it could not be had.
    pub fn ask(&self, pair: &Pair, prompt: &str) -> Result<String, String> {
        let absolute = |dir: &Path| {
            std::path::absolute(dir)
                .unwrap_or_else(|_| dir.to_path_buf())
                .join(cassette_path(pair))
        };
        let cassette = match &self.cassettes {
            Cassettes::Live => JudgeCassette::Live,
            Cassettes::Record(dir) => JudgeCassette::Record(absolute(dir)),
            Cassettes::Replay(dir) => JudgeCassette::Replay(absolute(dir)),
            Cassettes::Once(dir) if absolute(dir).is_file() => JudgeCassette::Replay(absolute(dir)),
            Cassettes::Once(dir) => JudgeCassette::Record(absolute(dir)),
        };
        let live = !matches!(cassette, JudgeCassette::Replay(_));
        let dirs = TrialDirs::prepare("pairwise", None, None, self.user_agent_dir.as_deref(), live)
            .map_err(|e| e.to_string())?;
        // One prompt, one answer: a compaction after it (which Pi starts when the model's
        // context window is small) would only ask the judge for a summary nobody reads.
        let mut settings = serde_json::Map::new();
        settings.insert("compaction".into(), serde_json::json!({ "enabled": false }));
        dirs.write_settings(&settings).map_err(|e| e.to_string())?;
        let confinement = Confinement {
            workspace: dirs.workspace.clone(),
            temp: dirs.temp.clone(),
        };
        // The judge is given no tools: nothing it says is run, so it needs no confinement.
        let isolation = Isolation::none();
        let shell = isolation
            .shell_wrapper(&confinement, &dirs.root)
            .map_err(|e| format!("cannot write the judge's shell: {e}"))?;
        let run = JudgeRun {
            agent: &self.agent,
            isolation: &isolation,
            dirs: &dirs,
            confinement: &confinement,
            shell: &shell,
            cassette,
            file: "pairwise.jsonl".into(),
            seed: self.seed,
            cancel: &self.cancel,
            spent: &RefCell::default(),
        };
        run_judge(&run, &self.model, prompt)
    }
}
