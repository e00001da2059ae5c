//! What the decoder tests share: reading Pi's traces, and looking at decoded events the way the
//! oracle's comparison does (types, indices, deltas, contents, tool calls; no snapshots).

#![allow(dead_code)]
// Tests read fixtures and run servers; the providers' IO ban applies to the library, not to its
// tests.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

use std::fs;
use std::path::{Path, PathBuf};

use pi_core::agent::assemble::{Applied, Assembly};
use pi_core::agent::StreamEvent;
use pi_core::message::AssistantMessage;
use pi_core::model::{Model, ModelCost};
use serde_json::{json, Value};

/// Feeds `events` through the core's assembly: the update summaries and the final message.
pub fn observe(events: Vec<StreamEvent>) -> (Vec<Value>, AssistantMessage) {
    let mut assembly = Assembly::default();
    let mut updates = Vec::new();
    for event in events {
        match assembly.apply(event).unwrap() {
            Applied::Update(update) => {
                updates.push(summary(&serde_json::to_value(&update).unwrap()))
            }
            Applied::Finished(message) => return (updates, message),
            Applied::Started(_) | Applied::Silent => {}
        }
    }
    panic!("the stream did not finish");
}

/// The compared fields of an `assistantMessageEvent`.
pub fn summary(event: &Value) -> Value {
    json!({
        "type": event["type"],
        "contentIndex": event["contentIndex"],
        "delta": event["delta"],
        "content": event["content"],
        "toolCall": event["toolCall"],
    })
}

/// A message as JSON without its timestamp and role.
pub fn comparable(message: &AssistantMessage) -> Value {
    let mut v: Value = serde_json::from_str(&pi_core::json::to_string(message).unwrap()).unwrap();
    let object = v.as_object_mut().unwrap();
    object.remove("timestamp");
    object.remove("role");
    v
}

/// Every assistant response in a trace folder's stdout files (in run order): the summaries of
/// its updates and its final message (without timestamp and role).
pub fn responses(dir: &Path) -> Vec<(Vec<Value>, Value)> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            name.starts_with("stdout")
                && name.ends_with(".jsonl")
                && !name.ends_with(".timed.jsonl")
        })
        .collect();
    files.sort();
    let text: String = files
        .iter()
        .map(|f| fs::read_to_string(f).unwrap())
        .collect();
    let mut out = Vec::new();
    let mut updates = Vec::new();
    for line in text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
    {
        match line["type"].as_str() {
            Some("message_update") => {
                let mut e = line["assistantMessageEvent"].clone();
                e.as_object_mut().unwrap().remove("partial");
                updates.push(summary(&e));
            }
            Some("message_end") if line["message"]["role"] == "assistant" => {
                let mut message = line["message"].clone();
                let object = message.as_object_mut().unwrap();
                object.remove("timestamp");
                object.remove("role");
                // Pi 1.5's loop adds these after the stream; no decoder makes them.
                object.remove("durationMs");
                object.remove("thinkingLevel");
                out.push((std::mem::take(&mut updates), message));
            }
            _ => {}
        }
    }
    out
}

/// The mock's script step behind each request of `api` in a trace folder.
pub fn script_indices(dir: &Path, api: &str) -> Vec<u64> {
    fs::read_to_string(dir.join("requests.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["api"] == api)
        .map(|r| r["script_index"].as_u64().unwrap())
        .collect()
}

/// A captured mock response: status and body.
pub fn mock_body(scenario: &str, step: u64, api: &str) -> (u16, Vec<u8>) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mock-sse");
    let status = fs::read_to_string(dir.join(format!("{scenario}-{step}.{api}.status"))).unwrap();
    let body = fs::read(dir.join(format!("{scenario}-{step}.{api}.body"))).unwrap();
    (status.trim().parse().unwrap(), body)
}

/// The reference traces of the conformance kit (Pi 0.73.1's).
pub fn traces() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/traces")
}

/// The kit's reference traces of Pi 1.5.2.
pub fn traces_152() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../conformance/traces-1.5.2")
}

/// The kit's `mock/mock-model` (its models.json), served at `base_url`.
pub fn mock_model_at(base_url: &str) -> Model {
    Model {
        id: "mock-model".into(),
        name: "Mock Model".into(),
        api: "openai-completions".into(),
        provider: "mock".into(),
        base_url: base_url.into(),
        input: vec!["text".into()],
        cost: ModelCost {
            input: 1.0,
            output: 2.0,
            ..ModelCost::default()
        },
        context_window: 128_000,
        max_tokens: 16_384,
        ..Model::default()
    }
}

/// The kit's mock model at a placeholder address (bodies do not contain it).
pub fn mock_model() -> Model {
    mock_model_at("http://127.0.0.1:1/v1")
}

/// The event kinds as the core sees them (`start`, then each update) and the final message.
pub fn kinds(events: Vec<StreamEvent>) -> (Vec<String>, AssistantMessage) {
    let mut assembly = Assembly::default();
    let mut kinds = Vec::new();
    for event in events {
        match assembly.apply(event).unwrap() {
            Applied::Started(_) => kinds.push("start".to_owned()),
            Applied::Update(update) => kinds.push(
                serde_json::to_value(&update).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_owned(),
            ),
            Applied::Silent => {}
            Applied::Finished(message) => return (kinds, message),
        }
    }
    panic!("no final event: {kinds:?}");
}

/// The kit's `mock-anthropic/mock-claude` (its models.json) at a placeholder address.
pub fn mock_claude() -> Model {
    Model {
        id: "mock-claude".into(),
        name: "Mock Claude".into(),
        api: "anthropic-messages".into(),
        provider: "mock-anthropic".into(),
        base_url: "http://127.0.0.1:1".into(),
        reasoning: true,
        input: vec!["text".into()],
        context_window: 200_000,
        max_tokens: 8192,
        ..Model::default()
    }
}

/// Answers one request on 127.0.0.1 with `status`, `content_type` and `body`; returns the port
/// and, once served, the request's head and JSON body as received.
pub fn serve_once(
    status: u16,
    content_type: &'static str,
    body: &'static str,
) -> (u16, std::thread::JoinHandle<(String, Value)>) {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream);
        let mut head = String::new();
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line == "\r\n" || line.is_empty() {
                break;
            }
            head.push_str(&line);
        }
        let length = head
            .lines()
            .find_map(|l| {
                l.to_ascii_lowercase()
                    .strip_prefix("content-length: ")
                    .map(str::to_owned)
            })
            .and_then(|n| n.trim().parse::<usize>().ok())
            .unwrap();
        let mut request = vec![0; length];
        reader.read_exact(&mut request).unwrap();
        let mut stream = reader.into_inner();
        write!(
            stream,
            "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        (head, serde_json::from_slice(&request).unwrap())
    });
    (port, handle)
}

/// A context's `tools` (or a system message's `toolsAdded`) as the request declares them.
pub fn tool_definition(t: &Value) -> pi_core::agent::ToolDefinition {
    pi_core::agent::ToolDefinition {
        name: t["name"].as_str().unwrap().into(),
        description: t["description"].as_str().unwrap().into(),
        parameters: t["parameters"].clone(),
        constrained_sampling: t.get("constrainedSampling").cloned(),
    }
}

/// A fixture's context (pi-ai's `{systemPrompt, messages, tools}`) as the core's machine hands
/// it over: a transcript with Pi 1.5's system messages gives the messages without them, the
/// prompt and tools they fold to, and each of them placed among the messages; otherwise the
/// prompt and tools are the context's own.
pub struct ContextParts {
    pub system_prompt: String,
    pub messages: std::sync::Arc<Vec<pi_core::message::Message>>,
    pub tools: Vec<pi_core::agent::ToolDefinition>,
    pub system_messages: std::sync::Arc<Vec<pi_core::agent::PlacedSystemMessage>>,
}

pub fn context_parts(context: &Value) -> ContextParts {
    use pi_core::agent::system::{self, SystemState};
    use pi_core::message::AgentMessage;
    let transcript: Vec<AgentMessage> =
        serde_json::from_value(context["messages"].clone()).unwrap();
    let folded = SystemState::of(&transcript);
    let placed = system::placed(&transcript, true, |prefix| {
        Ok::<_, ()>(prefix.iter().filter_map(AgentMessage::as_llm).count())
    })
    .unwrap();
    let (system_prompt, tools) = if folded.recorded {
        (
            folded.render(),
            folded.tools.iter().map(tool_definition).collect(),
        )
    } else {
        (
            context["systemPrompt"].as_str().unwrap_or("").into(),
            context["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .map(tool_definition)
                .collect(),
        )
    };
    ContextParts {
        system_prompt,
        messages: std::sync::Arc::new(transcript.iter().filter_map(AgentMessage::as_llm).collect()),
        tools,
        system_messages: std::sync::Arc::new(placed),
    }
}

/// A request as the body fixtures describe it: `{model, context: {systemPrompt, messages,
/// tools}, options: {reasoning, sessionId, maxTokens}}` (pi-ai's `streamSimple` arguments).
pub fn fixture_request(case: &Value) -> pi_core::agent::ModelRequest {
    let (context, options) = (&case["context"], &case["options"]);
    let parts = context_parts(context);
    pi_core::agent::ModelRequest {
        model: serde_json::from_value(case["model"].clone()).unwrap(),
        system_prompt: parts.system_prompt,
        messages: parts.messages,
        tools: parts.tools,
        reasoning: serde_json::from_value(options["reasoning"].clone()).unwrap(),
        session_id: options["sessionId"].as_str().map(str::to_owned),
        max_tokens: options["maxTokens"].as_u64(),
        thread: None,
        session_diagnostics: Default::default(),
        system_messages: parts.system_messages,
        max_retries: None,
        provider_hooked: None,
    }
}

/// The call options of a body fixture (`apiKey`, `cacheRetention`, `temperature`,
/// `thinkingBudgets`), with `default_key` when it names none.
pub fn fixture_options(case: &Value, default_key: &str) -> pi_providers::CallOptions {
    let options = &case["options"];
    pi_providers::CallOptions {
        api_key: options["apiKey"].as_str().unwrap_or(default_key).into(),
        cache_retention: match options["cacheRetention"].as_str() {
            Some("none") => pi_providers::CacheRetention::None,
            Some("long") => pi_providers::CacheRetention::Long,
            _ => pi_providers::CacheRetention::Short,
        },
        temperature: options["temperature"].as_f64(),
        thinking_budgets: serde_json::from_value(
            options.get("thinkingBudgets").cloned().unwrap_or(json!({})),
        )
        .unwrap(),
        ..pi_providers::CallOptions::default()
    }
}

/// All events of `decoder` fed `body` in the pieces `cuts` make (offsets in any order, clamped
/// to the body; a repeated offset gives an empty piece, which must change nothing), then ended
/// with `end`. Unlike [`decode_split`], empty pieces are fed: a decoder's result may not depend
/// on how its input is cut, down to empty reads.
pub fn decode_pieces(
    mut decoder: impl pi_providers::StreamDecoder,
    body: &[u8],
    cuts: &[usize],
    end: pi_providers::StreamEnd,
) -> Vec<StreamEvent> {
    let mut cuts: Vec<usize> = cuts.iter().map(|&c| c.min(body.len())).collect();
    cuts.sort_unstable();
    let mut events = decoder.start();
    let mut last = 0;
    for cut in cuts.into_iter().chain(std::iter::once(body.len())) {
        events.extend(decoder.feed(&body[last..cut]));
        last = cut;
    }
    events.extend(decoder.finish(end));
    events
}

/// Whether `events` are one well-formed stream: the core's assembly accepts each in turn and
/// the last one finishes the message.
pub fn finishes_once(events: &[StreamEvent]) -> Result<(), String> {
    let mut assembly = Assembly::default();
    for (i, event) in events.iter().enumerate() {
        match assembly.apply(event.clone()) {
            Err(error) => return Err(format!("event {i} refused: {error:?}: {event:?}")),
            Ok(Applied::Finished(_)) if i + 1 != events.len() => {
                return Err(format!("finished at event {i} of {}", events.len()))
            }
            Ok(Applied::Finished(_)) => return Ok(()),
            Ok(_) => {}
        }
    }
    Err("the stream did not finish".into())
}

/// All events of `decoder` fed `body` cut at `cuts` (sorted offsets; empty pieces skipped, as a
/// network never delivers them), then ended with `end`.
pub fn decode_split(
    mut decoder: impl pi_providers::StreamDecoder,
    body: &[u8],
    cuts: &[usize],
    end: pi_providers::StreamEnd,
) -> Vec<StreamEvent> {
    let mut events = decoder.start();
    let mut last = 0;
    for &cut in cuts.iter().chain(std::iter::once(&body.len())) {
        let cut = cut.clamp(last, body.len());
        if cut > last {
            events.extend(decoder.feed(&body[last..cut]));
        }
        last = cut;
    }
    events.extend(decoder.finish(end));
    events
}
