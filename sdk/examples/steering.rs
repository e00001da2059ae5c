//! Steering mid-run (seed 000's "steer" and "follow-up" recipes): while the agent answers a
//! task, a correction is sent as soon as it starts to write, and a follow-up task is queued for
//! when it would otherwise stop. The correction reaches the model before its next call; the
//! follow-up after it is done.
//!
//! Run: `cargo run -p pi-sdk --example steering -- PROVIDER MODEL WORKSPACE`

use pi_sdk::{AgentEvent, Error, Event, Session, SessionBuilder};

/// The task the agent starts on.
pub const TASK: &str = "Review this project.";
/// The correction sent while it works.
pub const CORRECTION: &str = "Focus on the authentication module, not the UI.";
/// The task queued for after.
pub const FOLLOW_UP: &str = "Now write unit tests for what you found.";

/// Prompts `session` with [`TASK`]; at the model's first streamed text, steers it with
/// [`CORRECTION`] and queues [`FOLLOW_UP`]. Returns once all three are answered.
pub async fn run(session: &Session) -> Result<(), Error> {
    let mut events = session.subscribe();
    let steerer = session.clone();
    let watcher = tokio::spawn(async move {
        while let Ok(event) = events.recv().await {
            if let Event::Agent(AgentEvent::MessageUpdate { .. }) = event {
                steerer.steer(CORRECTION);
                steerer.follow_up(FOLLOW_UP);
                break;
            }
        }
    });
    session.prompt(TASK).await?;
    watcher.await.map_err(|e| Error::Io(e.to_string()))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [provider, model, workspace] = args.as_slice() else {
        return Err("usage: steering PROVIDER MODEL WORKSPACE".into());
    };
    let session = SessionBuilder::new(workspace)
        .model_from_registry(provider, model)
        .build()?;
    run(&session).await?;
    println!("{} messages", session.messages().await.len());
    Ok(())
}
