//! `pi eval merge` (the results of a sharded run joined into one) and `pi eval compare`
//! (what improved and what regressed between two runs, with a test that keeps noise from
//! being called a regression).

use std::path::PathBuf;

use clap::Parser;
use pi_evals::compare::{compare as compare_runs, CompareOptions};
use pi_evals::results_file;

#[derive(Debug, Parser)]
#[command(
    name = "pi eval merge",
    about = "Join the results.json files of a sharded run"
)]
struct MergeArgs {
    /// The shards' results.json files.
    #[arg(required = true)]
    parts: Vec<PathBuf>,
    /// Where the joined reports go.
    #[arg(long, value_name = "DIR", default_value = "eval-results")]
    out: PathBuf,
}

#[derive(Debug, Parser)]
#[command(
    name = "pi eval compare",
    about = "What improved and what regressed from run A (the baseline) to run B",
    after_help = "Exit codes: 0 no regression (or not asked to fail on one); 1 a regression, with --fail-on-regression; 2 bad usage or unreadable results."
)]
struct CompareArgs {
    /// The baseline's results.json.
    a: PathBuf,
    /// The candidate's results.json.
    b: PathBuf,
    /// Exit 1 when something regressed significantly.
    #[arg(long)]
    fail_on_regression: bool,
    /// The chance of any false regression (or improvement) allowed: half for the rows, half for
    /// the models, each family Holm-adjusted.
    #[arg(long, default_value_t = 0.05)]
    alpha: f64,
    /// Print the comparison as JSON.
    #[arg(long)]
    json: bool,
    /// Also write the two runs side by side as one self-contained HTML file.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
}

fn parse<T: Parser>(name: &str, argv: &[String]) -> Result<T, u8> {
    let words = std::iter::once(name.to_owned()).chain(argv.iter().cloned());
    T::try_parse_from(words).map_err(|error| {
        let _ = error.print();
        if error.use_stderr() {
            2
        } else {
            0
        }
    })
}

/// `pi eval merge`; the exit code.
pub fn merge(argv: &[String]) -> u8 {
    let args: MergeArgs = match parse("pi eval merge", argv) {
        Ok(args) => args,
        Err(code) => return code,
    };
    let parts = match args
        .parts
        .iter()
        .map(|p| results_file::load(p))
        .collect::<Result<Vec<_>, _>>()
    {
        Ok(parts) => parts,
        Err(error) => {
            eprintln!("pi eval merge: {error}");
            return 2;
        }
    };
    let merged = match pi_evals::merge::merge(parts) {
        Ok(merged) => merged,
        Err(error) => {
            eprintln!("pi eval merge: {error}");
            return 2;
        }
    };
    // The folder is claimed as a run claims it: never written under a run still going there.
    let _lock = match pi_evals::out_lock::OutLock::acquire(&args.out) {
        Ok(lock) => lock,
        Err(error) => {
            eprintln!("pi eval merge: {error}");
            return 2;
        }
    };
    super::summary::print(&merged);
    // Shards ran elsewhere: their cassettes are not known here, so the report names them
    // without links.
    if let Err(message) = super::write_reports(&args.out, &merged, &|_| None) {
        eprintln!("pi eval merge: {message}");
        return 2;
    }
    if let Err(error) = pi_evals::journal::discard(&args.out) {
        eprintln!("pi eval merge: cannot remove the journal of the run merged over: {error}");
        return 2;
    }
    0
}

/// `pi eval compare`; the exit code.
pub fn compare(argv: &[String]) -> u8 {
    let args: CompareArgs = match parse("pi eval compare", argv) {
        Ok(args) => args,
        Err(code) => return code,
    };
    if !(args.alpha > 0.0 && args.alpha < 1.0) {
        eprintln!("pi eval compare: --alpha must be between 0 and 1");
        return 2;
    }
    let (a, b) = match (results_file::load(&args.a), results_file::load(&args.b)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(error), _) | (_, Err(error)) => {
            eprintln!("pi eval compare: {error}");
            return 2;
        }
    };
    let comparison = compare_runs(&a, &b, &CompareOptions { alpha: args.alpha });
    if let Some(path) = &args.html {
        let page = pi_evals::report::compare_html::render(&a, &b, &comparison);
        if let Err(error) = std::fs::write(path, page) {
            eprintln!("pi eval compare: cannot write {}: {error}", path.display());
            return 2;
        }
    }
    if args.json {
        match serde_json::to_string_pretty(&comparison) {
            Ok(text) => super::summary::say(&text),
            Err(error) => {
                eprintln!("pi eval compare: {error}");
                return 2;
            }
        }
    } else {
        super::summary::say(comparison.render_text().trim_end_matches('\n'));
    }
    u8::from(args.fail_on_regression && comparison.regressions() > 0)
}
