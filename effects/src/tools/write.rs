//! The `write` tool: creates the parent directories and writes the content as UTF-8,
//! overwriting. Also the per-file queue that write and edit share (Pi's
//! `withFileMutationQueue`), so that tool calls running in parallel on the same file take turns
//! instead of losing each other's changes.

use std::collections::HashMap;
use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

use pi_core::event::ToolResult;
use pi_core::message::ContentBlock;
use serde_json::Value;

use super::node_error::node_error;
use super::{resolve, str_arg, PathUse, ToolContext, ToolEnv, OPERATION_ABORTED};

pub(super) async fn run(
    env: &ToolEnv,
    args: &Value,
    cx: &ToolContext,
) -> Result<ToolResult, String> {
    let raw = str_arg(args, "path").unwrap_or_default();
    let content = str_arg(args, "content").unwrap_or_default().to_owned();
    let path = resolve(env, raw, PathUse::Other).map_err(|e| e.to_string())?;
    let work = with_file_queue(&path, async {
        if cx.cancel.is_cancelled() {
            return Err(OPERATION_ABORTED.to_owned());
        }
        let target = path.clone();
        tokio::task::spawn_blocking(move || write_file(&target, &content))
            .await
            .map_err(|e| e.to_string())?
    });
    tokio::select! {
        biased;
        () = cx.cancel.cancelled() => return Err(OPERATION_ABORTED.into()),
        result = work => result?,
    }
    Ok(ToolResult {
        // Pi 1.5 no longer names the length (0.73.1 gave it in UTF-16 units, called bytes).
        content: vec![ContentBlock::text(format!("Successfully wrote to {raw}"))],
        ..ToolResult::default()
    })
}

/// Node's `mkdir(dirname, {recursive: true})` then `writeFile`, failing with their texts.
fn write_file(path: &Path, content: &str) -> Result<(), String> {
    let dir = path.parent().unwrap_or(path);
    std::fs::create_dir_all(dir).map_err(|e| node_error(&e, "mkdir", Some(dir)))?;
    let mut file = std::fs::File::create(path).map_err(|e| node_error(&e, "open", Some(path)))?;
    file.write_all(content.as_bytes())
        .map_err(|e| node_error(&e, "write", None))
}

type Queues = Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>;

static QUEUES: LazyLock<Queues> = LazyLock::new(Queues::default);

/// Runs `work` once every earlier mutation of the same file (by real path) has finished;
/// mutations of different files run in parallel. Turns are taken in arrival order.
pub(super) async fn with_file_queue<T>(path: &Path, work: impl Future<Output = T>) -> T {
    let key = tokio::fs::canonicalize(path)
        .await
        .unwrap_or_else(|_| path.to_path_buf());
    let turn = Arc::clone(lock_queues().entry(key.clone()).or_default());
    let place = Place { key, turn };
    let _guard = Arc::clone(&place.turn).lock_owned().await;
    work.await
}

fn lock_queues() -> std::sync::MutexGuard<'static, HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>> {
    QUEUES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A caller's place in a file's queue; the queue is forgotten when its last caller leaves
/// (also when a cancelled call is dropped while waiting).
struct Place {
    key: PathBuf,
    turn: Arc<tokio::sync::Mutex<()>>,
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut queues = lock_queues();
        let last = Arc::strong_count(&self.turn) == 2
            && queues
                .get(&self.key)
                .is_some_and(|q| Arc::ptr_eq(q, &self.turn));
        if last {
            queues.remove(&self.key);
        }
    }
}
