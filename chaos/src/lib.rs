//! Chaos replay: a recorded run replayed under seeded perturbations, with the agent loop's
//! invariants checked on every run.
//!
//! A cassette holds one path through the world. Chaos replay walks nearby paths: the same
//! recorded responses re-split into other reads, cut off in the middle or preceded by a 429, a
//! 500 or a reset connection; steering, follow-ups, aborts and manual compactions arriving at
//! other moments (with a small `keepRecentTokens`, so the cut lands inside short recordings);
//! tools failing or finishing in another order; timers firing late. Extensions do not run: a
//! hook point gets the recorded answer to the same question, or, for one never asked, that of
//! handlers returning nothing (see [`interpreter`]). A perturbed run ends with
//! one more prompt, so what the perturbations left is sent. On each run a [`Checker`]
//! watches every input, event and effect, and the session file is read back at the end:
//!
//! - every tool call is answered exactly once, before the next model call;
//! - in every request, each tool result follows its tool call and no call lacks a result;
//! - runs, turns, messages, tool executions and compactions are balanced;
//! - automatic retries stay within the settings;
//! - no panic, no contract error, and the run comes back to idle;
//! - the session file loads, holds the machine's entries, and its context is the machine's.
//!
//! That the unperturbed replay is still byte-exact is the binary's check (`pi replay --chaos`
//! runs `pi replay --check` on each cassette first): it compares stdout and the session file
//! with the recorded digests, which needs the front ends. [`run_plan`] of [`PerturbationPlan::none`]
//! checks the invariants on the recorded path.
//!
//! A [`PerturbationPlan`] is data, printed as a short word list (`split:0:7,err:1:429,abort:12`), so a
//! failure found by a seed is shrunk to the fewest perturbations ([`shrink`]) and reported
//! with a command that runs exactly that plan again (`pi replay --chaos 1 --plan '…' FILE`).
//!
//! # Property-testing your own configuration
//!
//! The strategies are public: a recording's [`Shape`] bounds them, and proptest shrinks a
//! failing plan. Change the recording's [`config`](ChaosRecording::config) (retry settings,
//! compaction thresholds, queue modes, tools) to test it against the recorded world:
//!
//! ```
//! use pi_cassettes::Cassette;
//! use pi_chaos::{plan_strategy, run_plan, ChaosRecording};
//! use proptest::prelude::*;
//!
//! let cassette = Cassette::load("../cassettes/corpus/parallel_tools.jsonl".as_ref())?;
//! let mut recording = ChaosRecording::from_cassette(&cassette)?;
//! // Fewer retries than the recording had: the invariants must hold all the same.
//! std::sync::Arc::make_mut(&mut recording).config.retry.max_retries = 1;
//! let dir = tempfile::tempdir()?;
//!
//! let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(16));
//! runner
//!     .run(&plan_strategy(&recording.shape(), 3), |plan| {
//!         let outcome = run_plan(&recording, &plan, dir.path());
//!         prop_assert!(outcome.is_ok(), "{plan}: {:?}", outcome.err());
//!         Ok(())
//!     })
//!     .map_err(|e| e.to_string())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Or many seeded runs at once, each failure shrunk:
//!
//! ```
//! # use pi_cassettes::Cassette;
//! # use pi_chaos::{chaos_runs, ChaosRecording};
//! let cassette = Cassette::load("../cassettes/corpus/steering.jsonl".as_ref())?;
//! let recording = ChaosRecording::from_cassette(&cassette)?;
//! let dir = tempfile::tempdir()?;
//! let summary = chaos_runs(&recording, 20, 7, None, dir.path());
//! assert_eq!(summary.runs, 20);
//! for failure in &summary.failures {
//!     eprintln!("{failure}");
//! }
//! assert!(summary.failures.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod interpreter;
pub mod invariants;
pub mod plan;
pub mod recording;
pub mod run;

pub use interpreter::ChaosInterpreter;
pub use invariants::{check_pairing, Checker, Invariant, Violation};
pub use plan::{
    perturbation_strategy, plan_strategy, Perturbation, PerturbationPlan, Shape, Transient,
};
pub use recording::{ChaosRecording, RecordingError};
pub use run::{chaos_runs, plan_for, run_plan, shrink, Failure, RunStats, Summary};
