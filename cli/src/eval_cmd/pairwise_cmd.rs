//! `pi eval pairwise A B --judge MODEL`: which of two runs answered better, task by task, as a
//! judge model sees it when shown both answers of the same trial in a seeded random order.
//! A form of its own rather than a flag of `compare`: `compare` reads two results files and
//! calls no model, while this one calls a judge and so records and replays cassettes.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use clap::Parser;
use pi_evals::agent::AgentCommand;
use pi_evals::pairwise::{self, PairwiseReport, DEFAULT_RUBRIC};
use pi_evals::pairwise_run::{Cassettes, PairJudge};
use pi_evals::results_file;

#[derive(Debug, Parser)]
#[command(
    name = "pi eval pairwise",
    about = "Which of two runs answered better, by a judge model shown both answers of each trial in a seeded random order",
    after_help = "Trial i of A is paired with trial i of B for each task both ran. The judge says FIRST, SECOND or TIE; that is mapped back to A or B. Per task: B's wins, losses and ties with an exact sign test (Holm-adjusted over the tasks); overall: B's win rate with a 95% Wilson interval; and how often the judge picked whichever answer it was shown first.\n\nExit codes: 0 every pair was judged; 1 a pair errored (the judge could not be had, or did not answer FIRST, SECOND or TIE); 2 bad usage, unreadable results, an unknown judge model, or no task in common; 130 interrupted."
)]
struct PairwiseArgs {
    /// Run A: its results.json, or the folder holding it.
    a: PathBuf,
    /// Run B: its results.json, or the folder holding it.
    b: PathBuf,
    /// The judge model (`provider/id`).
    #[arg(long, value_name = "MODEL")]
    judge: String,
    /// What makes an answer better (a default rubric otherwise).
    #[arg(long, value_name = "TEXT", group = "rubrics")]
    rubric: Option<String>,
    /// The rubric, read from a file.
    #[arg(long, value_name = "FILE", group = "rubrics")]
    rubric_file: Option<PathBuf>,
    /// Seeds the order the two answers of each pair are shown in.
    #[arg(long, value_name = "N", default_value_t = 0)]
    seed: u64,
    /// Only A's trials of this model (when A ran several).
    #[arg(long, value_name = "MODEL")]
    model_a: Option<String>,
    /// Only B's trials of this model (when B ran several).
    #[arg(long, value_name = "MODEL")]
    model_b: Option<String>,
    /// Ask the judge live and record each pair into DIR/<suite>/<task>/<trial>.pairwise.jsonl.
    #[arg(long, value_name = "DIR", group = "cassettes")]
    record: Option<PathBuf>,
    /// Replay each pair's judge from DIR, offline.
    #[arg(long, value_name = "DIR", group = "cassettes")]
    replay: Option<PathBuf>,
    /// Replay the pairs recorded in DIR; ask and record the others.
    #[arg(long, value_name = "DIR", group = "cassettes")]
    once: Option<PathBuf>,
    /// Print the comparison as JSON.
    #[arg(long)]
    json: bool,
    /// Also write the comparison as one self-contained HTML file.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
}

/// `pi eval pairwise`; the exit code.
pub fn main(argv: &[String]) -> u8 {
    let words = std::iter::once("pi eval pairwise".to_owned()).chain(argv.iter().cloned());
    let args = match PairwiseArgs::try_parse_from(words) {
        Ok(args) => args,
        Err(error) => {
            let _ = error.print();
            return if error.use_stderr() { 2 } else { 0 };
        }
    };
    match run(&args) {
        Ok(code) => code,
        Err(message) => {
            eprintln!("pi eval pairwise: {message}");
            2
        }
    }
}

/// A results file, or the `results.json` of a folder.
fn results_path(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join("results.json")
    } else {
        path.to_path_buf()
    }
}

fn run(args: &PairwiseArgs) -> Result<u8, String> {
    let rubric = match (&args.rubric, &args.rubric_file) {
        (Some(text), _) => text.clone(),
        (None, Some(file)) => std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read the rubric {}: {e}", file.display()))?,
        (None, None) => DEFAULT_RUBRIC.to_owned(),
    };
    if rubric.trim().is_empty() {
        return Err("the rubric is empty".into());
    }
    let a = results_file::load(&results_path(&args.a)).map_err(|e| e.to_string())?;
    let b = results_file::load(&results_path(&args.b)).map_err(|e| e.to_string())?;
    let pairing = pairwise::pair(&a, &b, args.model_a.as_deref(), args.model_b.as_deref())
        .map_err(|e| e.to_string())?;
    let cassettes = match (&args.record, &args.replay, &args.once) {
        (Some(dir), _, _) => Cassettes::Record(dir.clone()),
        (_, Some(dir), _) => {
            if !dir.is_dir() {
                return Err(format!(
                    "--replay {}: no such folder: record it with --record DIR (or --once DIR)",
                    dir.display()
                ));
            }
            Cassettes::Replay(dir.clone())
        }
        (_, _, Some(dir)) => Cassettes::Once(dir.clone()),
        _ => Cassettes::Live,
    };
    let user_agent_dir = pi_evals::workspace::user_agent_dir();
    if !matches!(cassettes, Cassettes::Replay(_)) {
        let registry = super::preflight::registry(user_agent_dir.as_deref());
        super::preflight::check_model(&args.judge, || "--judge".to_owned(), &registry, false)?;
    }
    let judge = PairJudge {
        agent: AgentCommand {
            program: std::env::current_exe()
                .map_err(|e| format!("cannot find this program: {e}"))?,
            prefix: Vec::new(),
            replayer: Some(Arc::new(super::in_process::InProcess)),
        },
        model: args.judge.clone(),
        cassettes,
        user_agent_dir,
        seed: args.seed,
        cancel: Arc::new(AtomicBool::new(false)),
    };
    let _signals = super::progress::cancel_on_signals(Arc::clone(&judge.cancel));
    let cancelled = || judge.cancel.load(std::sync::atomic::Ordering::SeqCst);
    let results = pairwise::judge(&pairing.pairs, &rubric, args.seed, &mut |pair, prompt| {
        if cancelled() {
            return Err("interrupted before the judge was asked".into());
        }
        judge.ask(pair, prompt)
    });
    let report = PairwiseReport::new(&args.judge, &rubric, args.seed, results, pairing.unpaired);
    if let Some(path) = &args.html {
        let page = pi_evals::report::pairwise_html::render(&report);
        std::fs::write(path, page).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    if args.json {
        let text = serde_json::to_string_pretty(&report).map_err(|e| e.to_string())?;
        super::summary::say(&text);
    } else {
        super::summary::say(report.render_text().trim_end_matches('\n'));
    }
    if cancelled() {
        eprintln!("pi eval pairwise: interrupted: the pairs not judged are errors");
        return Ok(130);
    }
    Ok(u8::from(report.errors() > 0))
}
