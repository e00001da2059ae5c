//! The Anthropic messages stream for a step: `event: X` / `data: {...}` pairs from
//! `message_start` to `message_stop`, spelled exactly as the kit's Python mock spells them.

use serde_json::{json, Value};

use super::script::Step;
use super::{pyjson, Piece};

/// The stream answering request number `seq`, whose JSON body is `body`.
pub fn stream(step: &Step, body: &Value, seq: u64) -> Vec<Piece> {
    let model = body
        .get("model")
        .cloned()
        .unwrap_or_else(|| json!("mock-model"));
    let mut out = Events::default();
    out.event(
        "message_start",
        json!({"type": "message_start", "message": {
        "id": format!("msg_mock_{seq}"), "type": "message", "role": "assistant", "model": model,
        "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": step.input_tokens, "output_tokens": 1,
                  "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0}}}),
    );
    if !step.reasoning.is_empty() {
        let mut deltas: Vec<Value> = step
            .reasoning
            .iter()
            .map(|r| json!({"type": "thinking_delta", "thinking": r}))
            .collect();
        deltas.push(json!({"type": "signature_delta", "signature": "mocksig=="}));
        out.block(
            json!({"type": "thinking", "thinking": "", "signature": ""}),
            deltas,
        );
    }
    if !step.text.is_empty() {
        let deltas = step
            .text
            .iter()
            .map(|t| json!({"type": "text_delta", "text": t}))
            .collect();
        out.block(json!({"type": "text", "text": ""}), deltas);
    }
    for (i, call) in step.tool_calls.iter().enumerate() {
        let id = call
            .id
            .clone()
            .unwrap_or_else(|| json!(format!("toolu_mock_{seq}_{i}")));
        let deltas = call
            .pieces
            .iter()
            .map(|p| json!({"type": "input_json_delta", "partial_json": p}))
            .collect();
        out.block(
            json!({"type": "tool_use", "id": id, "name": call.name, "input": {}}),
            deltas,
        );
    }
    out.pieces.extend(super::hangs(step));
    let stop_reason = match step.finish_reason.as_deref() {
        None if step.tool_calls.is_empty() => "end_turn",
        None | Some("tool_calls") => "tool_use",
        Some("stop") => "end_turn",
        Some("length") => "max_tokens",
        Some(other) => other,
    };
    out.event(
        "message_delta",
        json!({"type": "message_delta",
        "delta": {"stop_reason": stop_reason, "stop_sequence": null},
        "usage": {"output_tokens": step.output_tokens}}),
    );
    out.event("message_stop", json!({"type": "message_stop"}));
    out.pieces
}

/// The events so far, and the index the next content block gets.
#[derive(Default)]
struct Events {
    pieces: Vec<Piece>,
    index: u64,
}

impl Events {
    fn event(&mut self, name: &str, obj: Value) {
        let text = format!("event: {name}\ndata: {}\n\n", pyjson::dumps(&obj));
        self.pieces.push(Piece::Chunk(text));
    }

    fn block(&mut self, start: Value, deltas: Vec<Value>) {
        let index = self.index;
        self.event(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": start}),
        );
        for delta in deltas {
            self.event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            );
        }
        self.event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        );
        self.index += 1;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::mock::script::Script;

    #[test]
    fn blocks_are_numbered_in_order() {
        let script = Script::parse(&json!([{"reasoning": ["r"], "text": "t",
            "tool_calls": [{"name": "ls", "arguments": "{}"}], "finish_reason": "length"}]))
        .unwrap();
        let pieces = stream(&script.step(0), &json!({"model": "c"}), 3);
        let text: String = pieces
            .iter()
            .map(|p| match p {
                Piece::Chunk(c) => c.as_str(),
                Piece::Hang(_) | Piece::HangUntilFile(_) => "",
            })
            .collect();
        assert!(text.starts_with("event: message_start\ndata: {\"type\": \"message_start\", \"message\": {\"id\": \"msg_mock_3\""));
        assert!(text.contains(
            "\"index\": 2, \"content_block\": {\"type\": \"tool_use\", \"id\": \"toolu_mock_3_0\""
        ));
        assert!(text.contains("{\"type\": \"signature_delta\", \"signature\": \"mocksig==\"}"));
        assert!(
            text.contains("\"partial_json\": \"{\"}"),
            "two-character arguments split in halves"
        );
        assert!(text.contains("\"stop_reason\": \"max_tokens\""));
        assert!(text.ends_with("event: message_stop\ndata: {\"type\": \"message_stop\"}\n\n"));
    }
}
