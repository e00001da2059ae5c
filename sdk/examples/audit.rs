//! An audit log (seed 000's `auditExtension`, as an event subscriber): every tool call the
//! agent makes is written to a JSONL file when it finishes — its name, arguments and whether
//! it failed — so a reviewer can see what an autonomous run did to the workspace.
//!
//! Run: `cargo run -p pi-sdk --example audit -- PROVIDER MODEL WORKSPACE AUDIT_FILE PROMPT`

use std::collections::HashMap;
use std::path::Path;

use pi_sdk::{AgentEvent, Error, Event, Session, SessionBuilder};
use serde_json::{json, Value};

/// Starts auditing `session` into `audit_file` (one line per finished tool call); the returned
/// task ends, having written the file, when the next run ends.
pub fn audit(session: &Session, audit_file: &Path) -> tokio::task::JoinHandle<std::io::Result<()>> {
    let mut events = session.subscribe();
    let audit_file = audit_file.to_path_buf();
    tokio::spawn(async move {
        let mut calls: HashMap<String, Value> = HashMap::new();
        let mut lines = String::new();
        while let Ok(event) = events.recv().await {
            match event {
                Event::Agent(AgentEvent::ToolExecutionStart {
                    tool_call_id, args, ..
                }) => {
                    calls.insert(tool_call_id, args);
                }
                Event::Agent(AgentEvent::ToolExecutionEnd {
                    tool_call_id,
                    tool_name,
                    is_error,
                    ..
                }) => {
                    let args = calls.remove(&tool_call_id).unwrap_or(Value::Null);
                    let line = json!({"tool": tool_name, "args": args, "isError": is_error});
                    lines.push_str(&line.to_string());
                    lines.push('\n');
                }
                Event::Agent(AgentEvent::AgentEnd { .. }) => break,
                _ => {}
            }
        }
        std::fs::write(audit_file, lines)
    })
}

/// Runs `prompt` on `session` under audit.
pub async fn run(session: &Session, audit_file: &Path, prompt: &str) -> Result<(), Error> {
    let auditor = audit(session, audit_file);
    session.prompt(prompt).await?;
    auditor
        .await
        .map_err(|e| Error::Io(e.to_string()))?
        .map_err(|e| Error::Io(e.to_string()))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [provider, model, workspace, audit_file, prompt] = args.as_slice() else {
        return Err("usage: audit PROVIDER MODEL WORKSPACE AUDIT_FILE PROMPT".into());
    };
    let session = SessionBuilder::new(workspace)
        .model_from_registry(provider, model)
        .build()?;
    run(&session, Path::new(audit_file), prompt).await?;
    println!("tool calls audited in {audit_file}");
    Ok(())
}
