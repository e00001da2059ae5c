//! The OpenAI Responses stream for a step: `event: X` / `data: {...}` pairs from
//! `response.created` to `response.completed` (or `response.incomplete` when the step stops at
//! `length`), each output item added, streamed and done in turn, spelled exactly as the kit's
//! Python mock spells them.

use serde_json::{json, Value};

use super::script::Step;
use super::{pyjson, Piece};

/// The stream answering request number `seq` (whose JSON body is `body`) at Unix time `created`.
pub fn stream(step: &Step, body: &Value, seq: u64, created: u64) -> Vec<Piece> {
    let model = body
        .get("model")
        .cloned()
        .unwrap_or_else(|| json!("mock-model"));
    let mut out = Events {
        pieces: Vec::new(),
        sequence: 0,
        done: Vec::new(),
    };
    let response = |status: &str, output: &[Value], usage: Value, incomplete: Value| {
        json!({"id": format!("resp_mock_{seq}"), "object": "response", "created_at": created,
               "status": status, "model": model, "output": output, "usage": usage,
               "incomplete_details": incomplete})
    };
    let started = response("in_progress", &[], Value::Null, Value::Null);
    out.event(json!({"type": "response.created", "response": started}));
    out.event(json!({"type": "response.in_progress", "response": started}));
    if !step.reasoning.is_empty() {
        reasoning(&mut out, step, seq);
    }
    if !step.text.is_empty() {
        message(&mut out, step, seq);
    }
    for (i, call) in step.tool_calls.iter().enumerate() {
        let call_id = call
            .id
            .clone()
            .unwrap_or_else(|| json!(format!("call_mock_{seq}_{i}")));
        let (value, pieces) = match &call.input {
            Some((input, pieces)) => (input, pieces),
            None => (&call.arguments, &call.pieces),
        };
        let (item_id, kind, field, event) = if call.input.is_some() {
            (
                format!("ctc_mock_{seq}_{i}"),
                "custom_tool_call",
                "input",
                "response.custom_tool_call_input",
            )
        } else {
            (
                format!("fc_mock_{seq}_{i}"),
                "function_call",
                "arguments",
                "response.function_call_arguments",
            )
        };
        let item = |value: &str, status: &str| {
            let mut item =
                json!({"type": kind, "id": item_id, "call_id": call_id, "name": call.name});
            if let Some(map) = item.as_object_mut() {
                map.insert(field.into(), json!(value));
                map.insert("status".into(), json!(status));
            }
            item
        };
        let idx = out.added(item("", "in_progress"));
        let pieces = if call.no_deltas { &[][..] } else { &pieces[..] };
        for piece in pieces {
            out.event(json!({"type": format!("{event}.delta"), "item_id": item_id,
                             "output_index": idx, "delta": piece}));
        }
        let mut finished =
            json!({"type": format!("{event}.done"), "item_id": item_id, "output_index": idx});
        if let Some(map) = finished.as_object_mut() {
            map.insert(field.into(), json!(value));
        }
        out.event(finished);
        out.finished(idx, item(value, "completed"));
    }
    out.pieces.extend(super::hangs(step));
    let usage = json!({"input_tokens": step.input_tokens, "input_tokens_details": {"cached_tokens": 0},
                       "output_tokens": step.output_tokens,
                       "output_tokens_details": {"reasoning_tokens": 0},
                       "total_tokens": step.input_tokens + step.output_tokens});
    let end = if step.finish_reason.as_deref() == Some("length") {
        json!({"type": "response.incomplete", "response": response(
            "incomplete", &out.done, usage, json!({"reason": "max_output_tokens"}))})
    } else {
        json!({"type": "response.completed", "response": response("completed", &out.done, usage, Value::Null)})
    };
    out.event(end);
    out.pieces
}

/// The reasoning item: its summary part, streamed in the step's reasoning pieces.
fn reasoning(out: &mut Events, step: &Step, seq: u64) {
    let id = format!("rs_mock_{seq}");
    let summary: String = step.reasoning.concat();
    let idx = out.added(json!({"type": "reasoning", "id": id, "summary": []}));
    let at =
        |kind: &str| json!({"type": kind, "item_id": id, "output_index": idx, "summary_index": 0});
    let with = |mut event: Value, key: &str, value: Value| {
        if let Some(map) = event.as_object_mut() {
            map.insert(key.into(), value);
        }
        event
    };
    out.event(with(
        at("response.reasoning_summary_part.added"),
        "part",
        json!({"type": "summary_text", "text": ""}),
    ));
    for piece in &step.reasoning {
        out.event(with(
            at("response.reasoning_summary_text.delta"),
            "delta",
            json!(piece),
        ));
    }
    out.event(with(
        at("response.reasoning_summary_text.done"),
        "text",
        json!(summary),
    ));
    out.event(with(
        at("response.reasoning_summary_part.done"),
        "part",
        json!({"type": "summary_text", "text": summary}),
    ));
    out.finished(
        idx,
        json!({"type": "reasoning", "id": id, "summary": [{"type": "summary_text", "text": summary}],
               "encrypted_content": "mock-encrypted"}),
    );
}

/// The message item: one output_text part, streamed in the step's text pieces.
fn message(out: &mut Events, step: &Step, seq: u64) {
    let id = format!("msg_mock_{seq}");
    let full: String = step.text.concat();
    let idx = out.added(
        json!({"type": "message", "id": id, "role": "assistant", "status": "in_progress", "content": []}),
    );
    let part = |text: &str| json!({"type": "output_text", "text": text, "annotations": []});
    out.event(
        json!({"type": "response.content_part.added", "item_id": id, "output_index": idx,
                     "content_index": 0, "part": part("")}),
    );
    for piece in &step.text {
        out.event(
            json!({"type": "response.output_text.delta", "item_id": id, "output_index": idx,
                         "content_index": 0, "delta": piece, "logprobs": []}),
        );
    }
    out.event(
        json!({"type": "response.output_text.done", "item_id": id, "output_index": idx,
                     "content_index": 0, "text": full, "logprobs": []}),
    );
    out.event(
        json!({"type": "response.content_part.done", "item_id": id, "output_index": idx,
                     "content_index": 0, "part": part(&full)}),
    );
    out.finished(
        idx,
        json!({"type": "message", "id": id, "role": "assistant", "status": "completed",
               "content": [part(&full)]}),
    );
}

/// The events so far, their running sequence number, and the output items done.
struct Events {
    pieces: Vec<Piece>,
    sequence: u64,
    done: Vec<Value>,
}

impl Events {
    fn event(&mut self, mut obj: Value) {
        let name = obj
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if let Some(map) = obj.as_object_mut() {
            map.insert("sequence_number".into(), json!(self.sequence));
        }
        self.sequence += 1;
        let text = format!("event: {name}\ndata: {}\n\n", pyjson::dumps(&obj));
        self.pieces.push(Piece::Chunk(text));
    }

    /// Announces the next output item; returns its index.
    fn added(&mut self, item: Value) -> usize {
        let idx = self.done.len();
        self.event(
            json!({"type": "response.output_item.added", "output_index": idx, "item": item}),
        );
        idx
    }

    fn finished(&mut self, idx: usize, item: Value) {
        self.event(json!({"type": "response.output_item.done", "output_index": idx, "item": item}));
        self.done.push(item);
    }
}
