//! What a call reports of the provider's answer to the extensions that listen (Pi 1.5.2's
//! `onResponse` and `onProviderStreamEvent`): the response head as pi-ai's `headersToRecord`
//! gives it, and each stream event as the provider's SDK hands it to pi-ai, parsed from the
//! same bytes the decoder reads. Only a call whose request asks builds any of it.
//!
//! Per API, as the SDKs do it: OpenAI's (Chat Completions, Responses) yields the JSON of each
//! SSE event's data and stops at `[DONE]`, throwing (yielding nothing) for an `error` event or
//! a body with an `error`; pi-ai's Anthropic reader yields only the message events (no `ping`),
//! parsed with pi-ai's repair (raw control characters and bad escapes in strings), and reads no
//! further after an `error` event or one whose data does not parse even repaired.
//! Google's SDK yields its own response object converted from each chunk (the fields it knows,
//! and `sdkHttpResponse` with the headers); here each chunk's JSON as sent stands for it.

use pi_core::agent::{Patch, StreamEvent};
use serde_json::{Map, Value};

use crate::js_value::truthy;
use crate::sse::{SseEvent, SseParser};

/// Which SDK's reading of the stream a call reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reader {
    OpenAi,
    Anthropic,
    Google,
}

/// The stream events of one response, read as its SDK reads them.
#[derive(Debug)]
pub(crate) struct StreamReport {
    reader: Reader,
    sse: SseParser,
    /// OpenAI's SDK saw `[DONE]`: it reads no further.
    ended: bool,
}

impl StreamReport {
    /// The report of a response of `api`, where pi-ai reports stream events for it.
    pub(crate) fn for_api(api: &str) -> Option<Self> {
        let reader = match api {
            "openai-completions" | "openai-responses" => Reader::OpenAi,
            "anthropic-messages" => Reader::Anthropic,
            "google-generative-ai" => Reader::Google,
            _ => return None,
        };
        Some(StreamReport {
            sse: match reader {
                Reader::Anthropic => SseParser::anthropic(),
                _ => SseParser::default(),
            },
            reader,
            ended: false,
        })
    }

    /// The events the bytes of one read complete, as patches, each with the offset in `bytes`
    /// where its SSE event ended: the SDK hands an event to pi-ai, which awaits its listeners,
    /// before it decodes the next, so the caller decodes the read up to each offset after
    /// reporting the events that end there.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<(usize, StreamEvent)> {
        let mut out = Vec::new();
        for (end, event) in self.sse.feed_ends(bytes) {
            if let Some(data) = self.reported(event) {
                out.push((end, data));
            }
        }
        out
    }

    /// The event the end of the body completes, if any.
    pub(crate) fn finish(&mut self) -> Vec<StreamEvent> {
        self.sse
            .finish()
            .and_then(|event| self.reported(event))
            .into_iter()
            .collect()
    }

    /// What is reported of `event`, unless the SDK has stopped reading.
    fn reported(&mut self, event: SseEvent) -> Option<StreamEvent> {
        if self.ended {
            return None;
        }
        self.data(event)
            .map(|data| StreamEvent::Patch(Patch::ProviderData(data)))
    }

    /// What the SDK yields for `event`, if anything.
    fn data(&mut self, event: SseEvent) -> Option<Value> {
        match self.reader {
            Reader::OpenAi => {
                if event.data == "[DONE]" {
                    self.ended = true;
                    return None;
                }
                let data: Value = serde_json::from_str(&event.data).ok()?;
                let failed = event.event.as_deref() == Some("error")
                    || data.get("error").is_some_and(truthy);
                (!failed).then_some(data)
            }
            Reader::Anthropic => {
                let name = event.event.as_deref().unwrap_or_default();
                if name == "error" {
                    self.ended = true;
                    return None;
                }
                if !crate::anthropic::MESSAGE_EVENTS.contains(&name) {
                    return None;
                }
                // pi-ai parses with repair, and throws (reading no further) for data that
                // does not parse even so.
                let parsed = pi_core::partial_json::parse_json_with_repair(&event.data).ok();
                self.ended = parsed.is_none();
                parsed
            }
            Reader::Google => serde_json::from_str(&event.data).ok(),
        }
    }
}

/// The response head as pi-ai reports it (`headersToRecord` over Node's `Headers`: names in
/// lower case and sorted, a repeated header's values joined by `, `, `set-cookie`'s last kept).
pub(crate) fn response_head(status: u16, headers: &[(String, String)]) -> StreamEvent {
    let mut sorted: Vec<(String, &str)> = headers
        .iter()
        .map(|(name, value)| (name.to_ascii_lowercase(), value.as_str()))
        .collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut record: Vec<(String, String)> = Vec::new();
    for (name, value) in sorted {
        match record.last_mut() {
            Some((last, joined)) if *last == name => {
                if name == "set-cookie" {
                    *joined = value.to_owned();
                } else {
                    joined.push_str(", ");
                    joined.push_str(value);
                }
            }
            _ => record.push((name, value.to_owned())),
        }
    }
    let headers: Map<String, Value> = record
        .into_iter()
        .map(|(name, value)| (name, Value::String(value)))
        .collect();
    StreamEvent::Patch(Patch::ProviderResponse { status, headers })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(events: Vec<(usize, StreamEvent)>) -> Vec<Value> {
        events
            .into_iter()
            .filter_map(|(_, e)| match e {
                StreamEvent::Patch(Patch::ProviderData(v)) => Some(v),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn openai_reports_each_json_event_until_done_and_no_error() {
        let mut report = StreamReport::for_api("openai-completions").unwrap();
        let first = report.feed(b"data: {\"a\":1}\n\ndata: {\"error\":{\"message\":\"x\"}}\n\n");
        assert_eq!(data(first), [serde_json::json!({"a": 1})]);
        let rest = report.feed(b"data: not json\n\ndata: [DONE]\n\ndata: {\"b\":2}\n\n");
        assert!(data(rest).is_empty());
    }

    #[test]
    fn anthropic_reports_the_message_events_only() {
        let mut report = StreamReport::for_api("anthropic-messages").unwrap();
        let events = report.feed(
            b"event: ping\ndata: {\"type\":\"ping\"}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        );
        assert_eq!(data(events), [serde_json::json!({"type": "message_stop"})]);
    }

    #[test]
    fn the_head_is_lower_case_sorted_and_joined() {
        let head = response_head(
            200,
            &[
                ("X-B".into(), "1".into()),
                ("content-type".into(), "text/event-stream".into()),
                ("x-b".into(), "2".into()),
            ],
        );
        let StreamEvent::Patch(Patch::ProviderResponse { status, headers }) = head else {
            panic!("a head");
        };
        assert_eq!(status, 200);
        assert_eq!(
            serde_json::to_string(&headers).unwrap(),
            r#"{"content-type":"text/event-stream","x-b":"1, 2"}"#
        );
    }

    /// A message event pi-ai repairs is reported repaired; one that does not parse ends the
    /// reading, as pi-ai's reader throws there; so does an `error` event.
    #[test]
    fn anthropic_reports_repaired_events_and_stops_at_one_that_does_not_parse() {
        let mut report = StreamReport::for_api("anthropic-messages").unwrap();
        let events = report.feed(
            b"event: content_block_delta\ndata: {\"text\":\"a\tb \\q\"}\n\n\
              event: content_block_delta\ndata: {\"text\":\n\n\
              event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        );
        assert_eq!(data(events), [serde_json::json!({"text": "a\tb \\q"})]);
        let mut report = StreamReport::for_api("anthropic-messages").unwrap();
        let events = report.feed(
            b"event: error\ndata: {}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
        );
        assert!(data(events).is_empty());
    }
}
