//! Eval suites for coding agents: a suite (TOML) names tasks, models and trials; each trial runs
//! an agent in a fresh copy of a fixture workspace (live, recorded, or replayed from a
//! cassette); checks score what it did; the results are summarised with pass@k, pass^k and
//! standard errors, written as JSON, JUnit XML, Markdown and HTML, and compared run to run.
//!
//! The crate knows nothing of how an agent runs: a [`runner::Agent`] runs one trial and reports
//! the agent's events, so the same suites evaluate this harness's `pi`, the original Pi, or any
//! other Pi-compatible command.

pub mod isolate;
pub mod results;
