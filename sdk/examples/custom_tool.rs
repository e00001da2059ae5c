//! A custom tool (seed 000's `count_lines`): a tool the program defines, with a JSON Schema for
//! its parameters, offered to the model beside the built-ins. It reads files only inside the
//! session's working directory and stops when the call is aborted.
//!
//! Run: `cargo run -p pi-sdk --example custom_tool -- PROVIDER MODEL WORKSPACE PROMPT`

use pi_sdk::{
    ContentBlock, CustomTool, CustomToolDefinition, Error, Session, SessionBuilder,
    ToolCallContext, ToolFuture, ToolResult,
};
use serde_json::{json, Value};

/// Counts the lines of a file in the workspace.
#[derive(Debug)]
pub struct CountLines {
    definition: CustomToolDefinition,
}

impl CountLines {
    /// The tool with its declaration: the name the model calls, a label, a description and
    /// the parameters' schema (validated before `execute` sees them).
    pub fn new() -> Self {
        let mut definition = CustomToolDefinition::new(
            "count_lines",
            "Counts lines in a file",
            json!({
                "type": "object",
                "properties": {"filePath": {"type": "string", "description": "Path to the file"}},
                "required": ["filePath"]
            }),
        );
        definition.label = "Count Lines".into();
        CountLines { definition }
    }
}

impl Default for CountLines {
    fn default() -> Self {
        CountLines::new()
    }
}

impl CustomTool for CountLines {
    fn definition(&self) -> &CustomToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, args: Value, cx: ToolCallContext) -> ToolFuture<'a> {
        Box::pin(async move {
            let path = args["filePath"].as_str().unwrap_or_default();
            let file = cx.cwd.join(path);
            if !file.starts_with(&cx.cwd) || path.contains("..") {
                return Err(format!("{path} is outside the workspace"));
            }
            let text = tokio::select! {
                text = tokio::fs::read_to_string(&file) => text.map_err(|e| format!("{path}: {e}"))?,
                () = cx.signal.cancelled() => return Err("aborted".into()),
            };
            let count = text.lines().count();
            Ok(ToolResult {
                content: vec![ContentBlock::text(format!("{count} lines"))],
                details: Some(json!({"lineCount": count})),
                ..ToolResult::default()
            })
        })
    }
}

/// Asks `session` (built with [`CountLines`]) `prompt`; returns the answer's text.
pub async fn run(session: &Session, prompt: &str) -> Result<String, Error> {
    session.prompt(prompt).await?;
    let messages = session.messages().await;
    Ok(match messages.last() {
        Some(pi_sdk::AgentMessage::Assistant(answer)) => {
            pi_sdk::text_parts(&answer.content).collect()
        }
        _ => String::new(),
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [provider, model, workspace, prompt] = args.as_slice() else {
        return Err("usage: custom_tool PROVIDER MODEL WORKSPACE PROMPT".into());
    };
    let session = SessionBuilder::new(workspace)
        .model_from_registry(provider, model)
        .custom_tool(CountLines::new())
        .build()?;
    println!("{}", run(&session, prompt).await?);
    Ok(())
}
