//! Why a suite could not be read, in a module of its own: the suite reader and the dataset
//! expansion it calls both report it.

use std::path::PathBuf;

/// Why a suite could not be read: where, and what is wrong.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {}{}{message}", task.as_ref().map(|t| format!("task `{t}`: ")).unwrap_or_default(), field.as_ref().map(|f| format!("field `{f}`: ")).unwrap_or_default())]
pub struct SuiteError {
    pub file: PathBuf,
    /// One-based; 0 when the file could not be read at all.
    pub line: usize,
    pub task: Option<String>,
    pub field: Option<String>,
    pub message: String,
}
