//! A sandboxed agent over a workspace (seed 000's tutorial and "sandboxing" recipe): the agent
//! works in one directory with the read-only tools only, confined to it, kept in memory, and
//! every event it emits is logged as JSON lines to `<log dir>/<session id>.jsonl` while its
//! answer streams to stdout.
//!
//! Run: `cargo run -p pi-sdk --example sandboxed -- PROVIDER MODEL WORKSPACE LOG_DIR`

use std::io::Write;
use std::path::{Path, PathBuf};

use pi_sdk::{AgentEvent, AssistantMessageEvent, Error, Event, Session, SessionBuilder};

/// What the agent is asked to do.
pub const TASK: &str = "List the files in the current directory and describe what you see.";

/// Prompts `session` with [`TASK`], logging every event to `log_dir`; returns the log file.
pub async fn run(session: &Session, log_dir: &Path) -> Result<PathBuf, Error> {
    std::fs::create_dir_all(log_dir).map_err(|e| Error::Io(e.to_string()))?;
    let log = log_dir.join(format!("{}.jsonl", session.session_id()));
    let mut events = session.subscribe();
    let writer = {
        let log = log.clone();
        tokio::spawn(async move {
            let mut lines = String::new();
            while let Ok(event) = events.recv().await {
                if let Event::Agent(AgentEvent::MessageUpdate {
                    assistant_message_event: AssistantMessageEvent::TextDelta { delta, .. },
                    ..
                }) = &event
                {
                    print!("{delta}");
                    let _ = std::io::stdout().flush();
                }
                let end = matches!(event, Event::Agent(AgentEvent::AgentEnd { .. }));
                lines.push_str(&serde_json::to_string(&event).unwrap_or_default());
                lines.push('\n');
                if end {
                    break;
                }
            }
            std::fs::write(&log, lines)
        })
    };
    session.prompt(TASK).await?;
    writer
        .await
        .map_err(|e| Error::Io(e.to_string()))?
        .map_err(|e| Error::Io(e.to_string()))?;
    println!("\n--- Agent finished ---");
    Ok(log)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [provider, model, workspace, logs] = args.as_slice() else {
        return Err("usage: sandboxed PROVIDER MODEL WORKSPACE LOG_DIR".into());
    };
    let session = SessionBuilder::new(workspace)
        .model_from_registry(provider, model)
        .read_only_tools()
        .confine_to_cwd()
        .build()?;
    let log = run(&session, Path::new(logs)).await?;
    println!("events logged to {}", log.display());
    Ok(())
}
