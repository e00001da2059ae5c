//! Replaying with tools run for real (`pi replay --tools live`): the model's side comes from the
//! cassette, but each tool call runs in a scratch copy of a workspace, and its real result is
//! what the machine gets, at the recorded time. A tool that now behaves differently shows up as
//! a divergence at the next model request, whose body carries the result.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use pi_core::agent::ToolOutcome;
use pi_effects::tools::{self, ToolContext, ToolEnv};
use serde_json::Value;
use tokio::sync::mpsc::unbounded_channel;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Tools running for a replay in a scratch workspace.
#[derive(Debug)]
pub struct LiveTools {
    env: ToolEnv,
    running: HashMap<u64, (JoinHandle<ToolOutcome>, CancellationToken)>,
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

    /// Starts `tool` for call `call` (inside a tokio runtime).
    pub fn start(&mut self, call: u64, tool: String, args: Value) {
        let env = self.env.clone();
        let cancel = CancellationToken::new();
        let token = cancel.clone();
        let task = tokio::spawn(async move {
            // Partial results are not replayed: the recorded ones are dropped too.
            let (updates, _ignored) = unbounded_channel();
            let cx = ToolContext { cancel, updates };
            tools::run(&env, &tool, &args, &cx).await
        });
        self.running.insert(call, (task, token));
    }

    /// Whether call `call` runs here.
    pub fn runs(&self, call: u64) -> bool {
        self.running.contains_key(&call)
    }

    /// Cancels call `call` (an abort).
    pub fn cancel(&self, call: u64) {
        if let Some((_, token)) = self.running.get(&call) {
            token.cancel();
        }
    }

    /// Waits for call `call` to finish.
    pub async fn finish(&mut self, call: u64) -> Option<ToolOutcome> {
        let (task, _) = self.running.remove(&call)?;
        Some(
            task.await
                .unwrap_or_else(|e| ToolOutcome::Thrown(format!("Tool execution failed: {e}"))),
        )
    }
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
