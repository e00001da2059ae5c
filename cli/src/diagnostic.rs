//! A problem found while setting up a run (the command line, the settings, the model, the
//! extensions), said as Pi says it.

/// A problem found while setting up, reported as `Warning: <text>` or `Error: <text>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Diagnostic {
    Warning(String),
    Error(String),
}

impl std::fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Diagnostic::Warning(text) => write!(f, "Warning: {text}"),
            Diagnostic::Error(text) => write!(f, "Error: {text}"),
        }
    }
}
