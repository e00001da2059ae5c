//! Streams from messages: for each API, the bytes a provider would send for an assistant
//! message, cut where the provider's server cuts them (one server-sent event per read). Each
//! synthesizer is the reverse of the API's decoder: [`decode`] of [`synthesize`] gives the
//! message back, for any message the API can express, however the bytes are re-cut (a property
//! test per API holds it). Import turns session files written elsewhere into cassettes with it,
//! chaos replay perturbs recorded streams with it, and a test can use it as a scripted model.
//!
//! ```
//! use pi_core::message::{AssistantMessage, ContentBlock, StopReason};
//! use pi_providers::catalog::builtin;
//! use pi_providers::synth::{decode, synthesize};
//!
//! let model = builtin().get_model("deepseek", "deepseek-v4-pro").expect("a built-in model");
//! let message = AssistantMessage {
//!     api: model.api.clone(),
//!     provider: model.provider.clone(),
//!     model: model.id.clone(),
//!     timestamp: 1_700_000_000_000,
//!     content: vec![ContentBlock::text("Hello.")],
//!     stop_reason: StopReason::Stop,
//!     raw_stop_reason: Some("stop".into()),
//!     ..AssistantMessage::default()
//! };
//! let response = synthesize(&model, &message).expect("openai-completions can say this");
//! assert_eq!(decode(&model, message.timestamp, &response), message);
//! ```

// Each API's own `synthesize` refuses what it knows its decoder cannot say; the one below also
// decodes what they give and refuses any difference, so it is the one to call.
mod aborted;
pub mod anthropic;
pub mod google;
pub mod openai_completions;
pub mod openai_responses;
mod sse;

pub use aborted::{abort_events, synthesize_aborted};

use bytes::Bytes;
use pi_core::agent::StreamEvent;
use pi_core::message::AssistantMessage;
use pi_core::model::Model;

use crate::call::ModelCall;
use crate::{StreamDecoder, StreamEnd};

/// A response as a provider sends it: status, headers and the body in the reads it arrives in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SynthesizedResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub chunks: Vec<Bytes>,
}

impl SynthesizedResponse {
    /// A `200` event stream of `chunks`.
    pub fn event_stream(chunks: Vec<Bytes>) -> Self {
        SynthesizedResponse {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            chunks,
        }
    }

    /// The whole body, its reads joined.
    pub fn body(&self) -> Vec<u8> {
        self.chunks.iter().flat_map(|c| c.iter().copied()).collect()
    }

    /// The same bytes cut at `cuts` (byte offsets into the whole body, in any order; offsets
    /// past the end are ignored): a server or proxy may cut a stream anywhere.
    pub fn recut(&self, cuts: &[usize]) -> Self {
        let body = self.body();
        let mut cuts: Vec<usize> = cuts.iter().copied().filter(|c| *c < body.len()).collect();
        cuts.sort_unstable();
        cuts.dedup();
        let mut chunks = Vec::with_capacity(cuts.len() + 1);
        let mut start = 0;
        for cut in cuts.into_iter().chain([body.len()]) {
            if cut > start {
                chunks.push(Bytes::copy_from_slice(&body[start..cut]));
                start = cut;
            }
        }
        SynthesizedResponse {
            chunks,
            ..self.clone()
        }
    }
}

/// Why a message cannot be said as a stream of its API (a decoder can only make some shapes:
/// one text block per response in Chat Completions, for example).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{api} cannot stream this message: {why}")]
pub struct Unrepresentable {
    pub api: String,
    pub why: String,
}

impl Unrepresentable {
    pub(crate) fn new(api: &str, why: impl Into<String>) -> Self {
        Unrepresentable {
            api: api.to_owned(),
            why: why.into(),
        }
    }
}

/// The response `model`'s provider would stream for `message` (which `model` wrote at
/// `message.timestamp`: its `api`, `provider` and `model` are the model's). Bytes that the
/// decoder would read as another message are never returned: the response is decoded before
/// it is given, and a difference is an [`Unrepresentable`] naming the first field that differs.
pub fn synthesize(
    model: &Model,
    message: &AssistantMessage,
) -> Result<SynthesizedResponse, Unrepresentable> {
    match synthesize_nearest(model, message)? {
        (response, None) => Ok(response),
        (_, Some(difference)) => Err(difference),
    }
}

/// The response [`synthesize`] would give, also when its decoder would read it as a slightly
/// different message: then with what differs (the first field). For importers, which
/// reproduce what a stream can say and report the rest; `Err` when the API has no stream for
/// the message at all.
pub fn synthesize_nearest(
    model: &Model,
    message: &AssistantMessage,
) -> Result<(SynthesizedResponse, Option<Unrepresentable>), Unrepresentable> {
    let response = match model.api.as_str() {
        "openai-completions" => openai_completions::synthesize(model, message),
        "anthropic-messages" => anthropic::synthesize(model, message),
        "openai-responses" => openai_responses::synthesize(model, message),
        "google-generative-ai" => google::synthesize(model, message),
        api => Err(Unrepresentable::new(
            api,
            "no stream format is known for this API",
        )),
    }?;
    let read_back = decode(model, message.timestamp, &response);
    // How long the call took and at which level are the loop's to add, and the effort asked
    // for the request's, not the stream's.
    let said = AssistantMessage {
        duration_ms: None,
        thinking_level: None,
        provider_thinking_level: None,
        ..message.clone()
    };
    let difference = first_difference(&read_back, &said).map(|field| {
        Unrepresentable::new(
            &model.api,
            format!("its decoder would read `{field}` differently"),
        )
    });
    Ok((response, difference))
}

/// The path of the first field where `a` and `b` differ, as their JSON shows it.
fn first_difference(a: &AssistantMessage, b: &AssistantMessage) -> Option<String> {
    if a == b {
        return None;
    }
    let (a, b) = (serde_json::to_value(a).ok()?, serde_json::to_value(b).ok()?);
    Some(differing_path(&a, &b, String::new()).unwrap_or_default())
}

fn differing_path(a: &serde_json::Value, b: &serde_json::Value, at: String) -> Option<String> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => x.keys().chain(y.keys()).find_map(|key| {
            let (p, q) = (x.get(key), y.get(key));
            (p != q).then(|| {
                let path = format!("{at}.{key}");
                match (p, q) {
                    (Some(p), Some(q)) => differing_path(p, q, path.clone()).unwrap_or(path),
                    _ => path,
                }
            })
        }),
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            x.iter().zip(y).enumerate().find_map(|(i, (p, q))| {
                (p != q).then(|| {
                    let path = format!("{at}[{i}]");
                    differing_path(p, q, path.clone()).unwrap_or(path)
                })
            })
        }
        _ => (a != b).then_some(at),
    }
}

/// The message `model`'s decoder makes of `response` to a request made at `timestamp`: the
/// decoder a live call uses, fed the same way.
pub fn decode(model: &Model, timestamp: u64, response: &SynthesizedResponse) -> AssistantMessage {
    let events = decode_events(model, timestamp, response);
    final_message(&events).unwrap_or_else(|| crate::response_head(model, timestamp))
}

/// Every event `model`'s decoder makes of `response`, in order.
pub fn decode_events(
    model: &Model,
    timestamp: u64,
    response: &SynthesizedResponse,
) -> Vec<StreamEvent> {
    let mut decoder: Box<dyn StreamDecoder> = ModelCall::decoder_for(model, timestamp);
    if !(200..300).contains(&response.status) {
        let body = response.body();
        let content_type = response
            .headers
            .iter()
            .find(|(name, _)| name == "content-type")
            .map(|(_, value)| value.as_str());
        let message = decoder.http_error_message(response.status, content_type, &body);
        return crate::failed_before_start(model, timestamp, message);
    }
    let mut events = decoder.start();
    for chunk in &response.chunks {
        events.extend(decoder.feed(chunk));
    }
    events.extend(decoder.finish(StreamEnd::Complete));
    events
}

/// The message a stream ended with (its `done` or `error` event).
fn final_message(events: &[StreamEvent]) -> Option<AssistantMessage> {
    events.iter().rev().find_map(|event| match event {
        StreamEvent::Done { message, .. } => Some(message.clone()),
        StreamEvent::Error { error, .. } => Some(error.clone()),
        _ => None,
    })
}
