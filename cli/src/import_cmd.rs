//! `pi import`: session files Pi wrote become cassettes, checked by `pi replay --check` like
//! recorded ones.
//!
//! `pi import SESSION.jsonl -o CASSETTE` imports one file; `pi import FILE... -o DIR` imports
//! several into `DIR/<name>.cassette`. Each is reported: its entries, whether a replay writes
//! the session's current branch byte for byte, and otherwise each entry that differs and why.
//! Exit 0 when every file reproduces exactly, 1 when a cassette was written for every file but
//! some do not reproduce exactly, 2 when a file cannot be imported or the command is wrong.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;
use pi_cassettes::import::import_session;

/// `pi import`'s flags.
#[derive(Debug, Parser)]
#[command(
    name = "pi import",
    about = "Turn session files Pi wrote into cassettes that replay them"
)]
struct ImportArgs {
    /// The cassette to write (one session file), or the directory to write them in.
    #[arg(long, short = 'o', required = true)]
    out: PathBuf,
    /// Session files (JSONL, any version Pi has written).
    #[arg(required = true)]
    sessions: Vec<PathBuf>,
}

/// Runs `pi import` with its arguments (the word `import` left out).
pub fn main(argv: &[String]) -> ExitCode {
    let args = match ImportArgs::try_parse_from(
        std::iter::once("pi import".to_owned()).chain(argv.iter().cloned()),
    ) {
        Ok(args) => args,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() { 2 } else { 0 });
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start: {error}");
            return ExitCode::from(2);
        }
    };
    let several = args.sessions.len() > 1 || args.out.is_dir();
    let secrets = crate::secrets::machine_credentials();
    let rules = match crate::secrets::machine_rules() {
        Ok(rules) => rules,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    let mut code = 0u8;
    for session in &args.sessions {
        let out = match several {
            true => args.out.join(cassette_name(session)),
            false => args.out.clone(),
        };
        match runtime.block_on(import_session(
            session,
            &out,
            crate::VERSION,
            &secrets,
            &rules,
        )) {
            Ok(report) => {
                print!("{report}");
                if !report.identical {
                    code = code.max(1);
                }
            }
            Err(error) => {
                eprintln!("error: {error}");
                code = 2;
            }
        }
    }
    ExitCode::from(code)
}

/// `name.jsonl` -> `name.cassette`.
fn cassette_name(session: &Path) -> PathBuf {
    let stem = session
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "session".into());
    PathBuf::from(format!("{stem}.cassette"))
}
