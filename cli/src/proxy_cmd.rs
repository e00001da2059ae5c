//! `pi proxy`: record any LLM client's HTTP traffic as cassettes, or serve it back.
//!
//! `pi proxy --record DIR --upstream URL [--listen ADDR]` forwards every request to `URL` and
//! writes one proxy cassette per conversation into `DIR`; `pi proxy --replay DIR [--timing]
//! [--repeat]` answers from them. The proxy prints `http://ADDR` on stdout once it listens
//! (point the client's base URL there) and runs until SIGINT or SIGTERM. In both modes a request
//! body over `--max-body-mb` is refused with a 413, and a connection that sends nothing for
//! `--idle-timeout` seconds while the proxy waits for its request is closed.
//!
//! Exit codes: 0 stopped by a signal with every request answered (from a recording, when
//! replaying); 1 a replay answered requests it had no recording for (none at all, used up, or a
//! refused body); 2 bad usage, or it cannot
//! start (the address, the upstream URL, the folder); 125 a cassette in the folder cannot be
//! read (so `git bisect run` skips the commit rather than blaming it).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use pi_proxy::{
    IgnoreRule, Limits, Proxy, ProxyError, RecordingProxy, ReplayingProxy, Server, DEFAULT_IGNORE,
};

/// `pi proxy`'s flags.
#[derive(Debug, Parser)]
#[command(
    name = "pi proxy",
    about = "Record an LLM client's HTTP traffic as cassettes, or serve it back",
    after_help = "Exit codes: 0 ok; 1 a replay had no recording for some request; 2 bad usage or cannot start; 125 a cassette cannot be read."
)]
struct ProxyArgs {
    /// Record into this folder (one cassette per conversation).
    #[arg(
        long,
        value_name = "DIR",
        conflicts_with = "replay",
        required_unless_present = "replay"
    )]
    record: Option<PathBuf>,
    /// Serve the cassettes in this folder.
    #[arg(long, value_name = "DIR")]
    replay: Option<PathBuf>,
    /// The provider's base URL requests are forwarded to (with --record); the client's path is
    /// appended to it.
    #[arg(long, value_name = "URL", requires = "record")]
    upstream: Option<String>,
    /// The address to listen on (127.0.0.1:0 picks a free port).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8788")]
    listen: String,
    /// A request body field matching ignores, besides the default ones: a top-level name or a
    /// JSON pointer (`/messages/*/cache_control`). Repeatable.
    #[arg(long, value_name = "FIELD")]
    ignore: Vec<String>,
    /// Ignore only the --ignore fields, not the default ones (metadata, user,
    /// prompt_cache_key, safety_identifier).
    #[arg(long)]
    no_default_ignore: bool,
    /// With --replay: send each chunk at its recorded time instead of at once.
    #[arg(long, requires = "replay")]
    timing: bool,
    /// With --replay: once the recordings of a request are used up, serve them again from the
    /// first (without it, such a request is answered 404 and counts as unmatched).
    #[arg(long, requires = "replay")]
    repeat: bool,
    /// The largest request body read, in MiB; a larger one is answered 413 without being read.
    #[arg(long, value_name = "N", default_value_t = 32,
        value_parser = clap::value_parser!(u64).range(1..=4096))]
    max_body_mb: u64,
    /// Seconds a connection may send nothing while the proxy waits for its request (the head,
    /// the body, or the next request on keep-alive) before it is closed.
    #[arg(long, value_name = "SECS", default_value_t = 30,
        value_parser = clap::value_parser!(u64).range(1..=86_400))]
    idle_timeout: u64,
}

/// Runs `pi proxy` with `argv` (the words after `proxy`).
pub fn main(argv: &[String]) -> ExitCode {
    let words = std::iter::once("pi proxy".to_owned()).chain(argv.iter().cloned());
    let args = match ProxyArgs::try_parse_from(words) {
        Ok(args) => args,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() { 2 } else { 0 });
        }
    };
    if args.record.is_some() && args.upstream.is_none() {
        eprintln!("pi proxy: --record needs --upstream URL (the provider to forward to)");
        return ExitCode::from(2);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("pi proxy: cannot start: {error}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(run(args)) {
        Ok(code) => ExitCode::from(code),
        Err(error) => {
            eprintln!("pi proxy: {error}");
            ExitCode::from(match error {
                ProxyError::Load(_) => 125,
                _ => 2,
            })
        }
    }
}

async fn run(args: ProxyArgs) -> Result<u8, ProxyError> {
    let mut fields: Vec<String> = if args.no_default_ignore {
        Vec::new()
    } else {
        DEFAULT_IGNORE.iter().map(|f| (*f).to_owned()).collect()
    };
    fields.extend(args.ignore.iter().cloned());
    let rule = IgnoreRule::new(fields);
    let (proxy, what) = match (&args.record, &args.replay, &args.upstream) {
        (Some(dir), _, Some(upstream)) => (
            Proxy::Record(RecordingProxy::new(dir, upstream, rule)?),
            format!("recording into {} what goes to {upstream}", dir.display()),
        ),
        (_, Some(dir), _) => {
            let replaying = ReplayingProxy::load(dir, rule, args.timing)?.repeating(args.repeat);
            let what = format!(
                "replaying {} recorded exchanges from {}",
                replaying.len(),
                dir.display()
            );
            (Proxy::Replay(replaying), what)
        }
        _ => return Ok(2),
    };
    let limits = Limits {
        max_body: args.max_body_mb << 20,
        idle: Duration::from_secs(args.idle_timeout),
    };
    let stop = stopped();
    let server = Server::bind(&args.listen, proxy).await?.with_limits(limits);
    let addr = server.local_addr()?;
    eprintln!("pi proxy: {what}, on http://{addr}");
    println!("http://{addr}");
    let summary = server.run_until(stop).await;
    eprintln!(
        "pi proxy: stopped after {} requests{}",
        summary.requests,
        match summary.unmatched {
            0 => String::new(),
            n => format!(", {n} without a recording"),
        }
    );
    Ok(if summary.unmatched > 0 { 1 } else { 0 })
}

/// Completes at SIGINT or SIGTERM. The handlers are installed when this is called, not when
/// the future is first polled: a signal sent as soon as the proxy says where it listens must
/// stop it with its summary and exit code, not kill it.
fn stopped() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let handlers = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    );
    async move {
        let (Ok(mut interrupt), Ok(mut terminate)) = handlers else {
            // Without signal handlers the proxy runs until it is killed.
            return std::future::pending().await;
        };
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    }
}
