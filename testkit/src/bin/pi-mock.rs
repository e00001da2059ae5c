//! `pi-mock`: runs any Pi-compatible command against the conformance kit's scripted mock model,
//! offline, in a scratch HOME / agent dir / cwd. See `pi-mock --help`.

use std::process::ExitCode;

use pi_testkit::demo::{DemoError, Invocation, Scenario, Workspace, USAGE};

fn main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(error) => {
            eprintln!("pi-mock: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}

fn run() -> Result<ExitCode, DemoError> {
    let options = match Invocation::parse(std::env::args_os().skip(1))? {
        Invocation::Help => {
            print!("{USAGE}");
            return Ok(ExitCode::SUCCESS);
        }
        Invocation::Run(options) => options,
    };
    let scenario = Scenario::load(&options.scenario)?;
    let workspace = Workspace::prepare(scenario, options.keep.as_deref())?;
    let status = workspace
        .command(&options.program, &options.args)
        .status()
        .map_err(|source| DemoError::Start {
            program: options.program.to_string_lossy().into_owned(),
            source,
        })?;
    if options.keep.is_some() {
        eprintln!(
            "pi-mock: work folder kept in {} (requests.jsonl: what the model was asked)",
            workspace.root().display()
        );
    }
    drop(workspace);
    Ok(ExitCode::from(exit_code(status)))
}

/// The command's exit code; 128 + the signal's number when a signal ended it.
fn exit_code(status: std::process::ExitStatus) -> u8 {
    if let Some(code) = status.code() {
        return u8::try_from(code & 0xff).unwrap_or(1);
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return u8::try_from(128 + signal).unwrap_or(1);
        }
    }
    1
}
