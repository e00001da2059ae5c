//! Eval suites for coding agents: a suite (TOML) names tasks, models and trials; each trial runs
//! an agent in a fresh copy of a fixture workspace (live, recorded, or replayed from a
//! cassette); checks score what it did; the results are summarised with pass@k, pass^k and
//! standard errors, written as JSON, JUnit XML, Markdown and HTML, and compared run to run.
//!
//! The crate knows nothing of an agent's insides: a trial runs a Pi-compatible command as a
//! process and reads its JSON events, so the same suites evaluate this harness's `pi`, the
//! original Pi, or any other Pi-compatible command.

pub mod agent;
pub mod agent_options;
mod agent_process;
pub mod check;
pub mod compare;
pub mod convert;
pub mod dataset;
pub mod digest;
pub mod isolate;
pub mod journal;
pub mod judge;
pub mod judge_run;
pub mod merge;
pub mod out_lock;
pub mod outcome;
pub mod pairwise;
pub mod pairwise_run;
pub mod plan;
pub mod report;
pub mod results;
pub mod results_file;
pub mod retry;
pub mod runner;
pub mod score;
mod significance;
pub mod suite;
pub mod suite_error;
mod toml_text;
pub mod trajectory;
pub mod validate;
pub mod workspace;

#[cfg(test)]
mod test_support;
