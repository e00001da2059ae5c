//! A notifier (seed 000's `notifierExtension`, as an event subscriber): when a tool fails, a
//! notification naming it goes out at once, while the run goes on — here to stderr; a real
//! program would page someone or post to a chat.
//!
//! Run: `cargo run -p pi-sdk --example notifier -- PROVIDER MODEL WORKSPACE PROMPT`

use pi_sdk::{AgentEvent, Error, Event, Session, SessionBuilder};

/// Runs `prompt` on `session`, calling `notify` with `Tool <name> failed.` for each failed
/// tool call as it ends; returns the notifications sent.
pub async fn run(
    session: &Session,
    prompt: &str,
    mut notify: impl FnMut(&str) + Send + 'static,
) -> Result<Vec<String>, Error> {
    let mut events = session.subscribe();
    let notifier = tokio::spawn(async move {
        let mut sent = Vec::new();
        while let Ok(event) = events.recv().await {
            match event {
                Event::Agent(AgentEvent::ToolExecutionEnd {
                    tool_name,
                    is_error: true,
                    ..
                }) => {
                    let text = format!("Tool {tool_name} failed.");
                    notify(&text);
                    sent.push(text);
                }
                Event::Agent(AgentEvent::AgentEnd { .. }) => break,
                _ => {}
            }
        }
        sent
    });
    session.prompt(prompt).await?;
    notifier.await.map_err(|e| Error::Io(e.to_string()))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [provider, model, workspace, prompt] = args.as_slice() else {
        return Err("usage: notifier PROVIDER MODEL WORKSPACE PROMPT".into());
    };
    let session = SessionBuilder::new(workspace)
        .model_from_registry(provider, model)
        .build()?;
    let sent = run(&session, prompt, |text| eprintln!("⚠️ {text}")).await?;
    println!("{} notification(s)", sent.len());
    Ok(())
}
