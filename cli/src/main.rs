//! `pi`: Pi's command line. Glue only: arguments and settings in, a session built by
//! `pi-effects`, one of the output modes out.

mod args;
mod model_select;
mod output;
mod print_mode;
mod rpc;
mod settings;
mod setup;

use std::process::ExitCode;

use args::{Args, Mode};
use setup::{Runtime, SessionChoice};

/// Why the binary stopped before running anything.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    /// A wrong flag or value; the message says which.
    #[error("{0}")]
    Usage(String),
    #[error("No models available. Use /login to log into a provider via OAuth or API key.")]
    NoModels,
    #[error("{0}")]
    Session(String),
    #[error("cannot use {what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
}

const VERSION: &str = "0.73.1";
const HELP: &str = include_str!("help.txt");

fn main() -> ExitCode {
    let args = match Args::parse_from_args(std::env::args().skip(1)) {
        Ok(args) => args,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(1);
        }
    };
    if args.version {
        println!("{VERSION}");
        return ExitCode::SUCCESS;
    }
    if args.help {
        print!("{HELP}");
        return ExitCode::SUCCESS;
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start: {error}");
            return ExitCode::from(1);
        }
    };
    let code = runtime.block_on(run(args));
    runtime.shutdown_background();
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

async fn run(args: Args) -> i32 {
    match start(args).await {
        Ok(code) => code,
        Err(error) => {
            eprintln!("{error}");
            1
        }
    }
}

async fn start(args: Args) -> Result<i32, CliError> {
    let cwd = std::env::current_dir().map_err(|source| CliError::Io {
        what: "the working directory".into(),
        source,
    })?;
    let runtime = Runtime::from_args(&args, cwd)?;
    for warning in &runtime.warnings {
        eprintln!("Warning: {warning}");
    }
    let choice = session_choice(&args, &runtime)?;
    let mode = args.mode();
    if mode == Mode::Rpc {
        return rpc::run(runtime, choice).await;
    }
    let mut session = runtime.open(&choice)?;
    let prompts: Vec<String> = args
        .text_messages()
        .iter()
        .map(|m| (*m).to_owned())
        .collect();
    Ok(print_mode::run(&mut session, mode, prompts, Vec::new()).await)
}

/// The session a run works in, from `--no-session`, `--session`, `--fork`, `--continue`.
fn session_choice(args: &Args, runtime: &Runtime) -> Result<SessionChoice, CliError> {
    if args.no_session {
        return Ok(SessionChoice::InMemory);
    }
    if let Some(reference) = &args.fork {
        return Ok(SessionChoice::Fork(runtime.find_session(reference)?));
    }
    if let Some(reference) = &args.session {
        return Ok(SessionChoice::Open(runtime.find_session(reference)?));
    }
    if args.continue_session {
        return Ok(SessionChoice::ContinueRecent);
    }
    Ok(SessionChoice::New)
}
