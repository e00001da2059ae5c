//! `pi`: Pi's command line. The binary parses the command line and wires the library
//! ([`pi_cli`]) to the process: its environment, allocator, async runtime and exit code.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use pi_cli::{commands, export_html, recorded_command, run, Args, Console, VERSION};

/// mimalloc instead of the system allocator: opening a large session allocates hundreds of
/// thousands of strings on several threads at once, where glibc's per-thread arenas grow a page
/// range at a time (thousands of `mprotect` calls). Built without transparent huge pages: on a
/// virtual machine that hands freed memory back to its host, every fresh 2 MiB page is faulted
/// in from the host again, which made a large session's open two to four times slower.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    set_offline(&argv);
    if argv.first().is_some_and(|a| a == "replay") {
        return commands::replay(&argv[1..]);
    }
    if argv.first().is_some_and(|a| a == "import") {
        return commands::import(&argv[1..]);
    }
    if argv.first().is_some_and(|a| a == "export") {
        return commands::export(&argv[1..]);
    }
    if argv.first().is_some_and(|a| a == "eval") {
        return commands::eval(&argv[1..]);
    }
    if argv.first().is_some_and(|a| a == "proxy") {
        return commands::proxy(&argv[1..]);
    }
    // Pi 1.5's `setupCli`: every command the agent starts can tell it runs under pi. Still
    // single-threaded: nothing else reads the environment yet.
    std::env::set_var("PI_CODING_AGENT", "true");
    std::env::set_var("AI_AGENT", "pi");
    let command = recorded_command(&argv);
    let args = match Args::parse_from_args(argv) {
        Ok(args) => args,
        Err(error) => {
            match pi_cli::pi_usage_error(&error) {
                Some(text) => eprintln!("{text}"),
                None => {
                    let _ = error.print();
                }
            }
            return ExitCode::from(1);
        }
    };
    let console = Console::of(&args, std::io::stdin().is_terminal());
    // Pi 1.5 prints the version and an export's path before it takes stdout over.
    if args.version {
        println!("{VERSION}");
        return ExitCode::SUCCESS;
    }
    if let Some(file) = &args.export {
        let messages = args.text_messages();
        let out = messages.first().map(Path::new);
        return match export_html(Path::new(file), out) {
            Ok(path) => {
                println!("Exported to: {}", path.display());
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("Error: {error}");
                ExitCode::from(1)
            }
        };
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
    let code = runtime.block_on(run(args, console, command));
    // Dropping the tasks still running (a cancelled tool, a command the run left behind) kills
    // their processes; give that a moment instead of exiting past it.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// `--offline` or a true `PI_OFFLINE`: Pi sets `PI_OFFLINE=1` and `PI_SKIP_VERSION_CHECK=1` for
/// the whole process, so commands the tools run see them too.
fn set_offline(argv: &[String]) {
    let truthy = std::env::var("PI_OFFLINE")
        .is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true") || v.eq_ignore_ascii_case("yes"));
    if truthy || argv.iter().any(|a| a == "--offline") {
        // Still single-threaded: nothing else reads the environment yet.
        std::env::set_var("PI_OFFLINE", "1");
        std::env::set_var("PI_SKIP_VERSION_CHECK", "1");
    }
}
