//! Replaying with tools run for real (`pi replay --tools live`): the model's side comes from the
//! cassette, but each tool call runs in a scratch copy of a workspace, and its real result is
//! what the machine gets, at the recorded time. A tool that now behaves differently shows up as
//! a divergence at the next model request, whose body carries the result.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use pi_core::agent::ToolOutcome;
use pi_core::event::ToolResult;
use pi_core::tools::tool_search::{SearchableTool, TOOL_SEARCH_TOOL_NAME};
use pi_effects::tools::{self, ToolContext, ToolEnv};
use serde_json::Value;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Tools running for a replay in a scratch workspace.
#[derive(Debug)]
pub struct LiveTools {
    env: ToolEnv,
    running: HashMap<u64, Running>,
}

/// A tool call running, with its partial results (`tool_execution_update`) as they come.
#[derive(Debug)]
struct Running {
    task: JoinHandle<ToolOutcome>,
    /// The task's outcome once it was waited for.
    outcome: Option<ToolOutcome>,
    cancel: CancellationToken,
    partials: UnboundedReceiver<ToolResult>,
}

impl LiveTools {
    /// Tools working in `workspace` (a scratch copy: they may change it).
    pub fn new(workspace: &Path) -> Self {
        LiveTools::with_env(ToolEnv::new(workspace).with_environment_overrides())
    }

    /// Tools as `env` says: its working directory, shell and sandbox.
    pub fn with_env(env: ToolEnv) -> Self {
        LiveTools {
            env,
            running: HashMap::new(),
        }
    }

    /// The tools name the files they leave from the recorded run's seed and start time, as
    /// it did.
    pub fn for_run(mut self, seed: u64, started_at: u64) -> Self {
        self.env = self.env.for_run(seed, started_at);
        self
    }

    /// Starts `tool` for call `call`, the model's `tool_call_id` (inside a tokio runtime), its
    /// context reading the session's `state` at the call when it reads the session; a
    /// `tool_search` call the session gave what to `search` is answered from that alone.
    pub fn start(
        &mut self,
        call: u64,
        tool_call_id: String,
        tool: String,
        args: Value,
        search: Option<Box<Vec<SearchableTool>>>,
        state: Option<std::sync::Arc<pi_core::agent::hook_state::HookState>>,
    ) {
        let mut env = self.env.clone();
        env.tool_call_id = Some(tool_call_id);
        env.call_state = state;
        let cancel = CancellationToken::new();
        let token = cancel.clone();
        let (updates, partials) = unbounded_channel();
        let task = tokio::spawn(async move {
            match search {
                Some(candidates) if tool == TOOL_SEARCH_TOOL_NAME => {
                    tools::tool_search_outcome(&args, &candidates)
                }
                _ => {
                    let cx = ToolContext { cancel, updates };
                    tools::run(&env, &tool, &args, &cx).await
                }
            }
        });
        self.running.insert(
            call,
            Running {
                task,
                outcome: None,
                cancel: token,
                partials,
            },
        );
    }

    /// Where and how the tools run (a user command runs there too).
    pub fn env(&self) -> &ToolEnv {
        &self.env
    }

    /// Whether call `call` runs here.
    pub fn runs(&self, call: u64) -> bool {
        self.running.contains_key(&call)
    }

    /// Cancels call `call` (an abort).
    pub fn cancel(&self, call: u64) {
        if let Some(running) = self.running.get(&call) {
            running.cancel.cancel();
        }
    }

    /// The next partial result of call `call` once it has finished, or its outcome when none is
    /// left: a live call's updates reach the machine before its result, as they do live.
    pub async fn next_answer(&mut self, call: u64) -> Option<Answer> {
        let running = self.running.get_mut(&call)?;
        if running.outcome.is_none() {
            // Every update is sent once the task is over.
            let outcome = (&mut running.task)
                .await
                .unwrap_or_else(|e| ToolOutcome::Thrown(format!("Tool execution failed: {e}")));
            running.outcome = Some(outcome);
        }
        if let Ok(partial) = running.partials.try_recv() {
            return Some(Answer::Update(partial));
        }
        self.running
            .remove(&call)
            .and_then(|running| running.outcome)
            .map(Answer::Finished)
    }
}

/// What a live call gives the machine next.
#[derive(Debug)]
pub enum Answer {
    /// A partial result (`tool_execution_update`).
    Update(ToolResult),
    /// The call's outcome.
    Finished(ToolOutcome),
}

/// Copies `from` (a workspace) into a new folder under `into`; returns the copy. Symbolic links
/// are copied as links.
pub fn scratch_copy(from: &Path, into: &Path) -> std::io::Result<PathBuf> {
    let to = into.join("workspace");
    copy_dir(from, &to)?;
    Ok(to)
}

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_symlink() {
            std::os::unix::fs::symlink(std::fs::read_link(entry.path())?, &target)?;
        } else if kind.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}
