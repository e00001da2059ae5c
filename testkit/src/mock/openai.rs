//! The OpenAI chat-completions stream for a step: `data: {chunk}` events ending with
//! `data: [DONE]`, spelled exactly as the kit's Python mock spells them.

use serde_json::{json, Value};

use super::script::Step;
use super::{pyjson, truthy, Piece};

/// The stream answering request number `seq` (whose JSON body is `body`) at Unix time `created`.
pub fn stream(step: &Step, body: &Value, seq: u64, created: u64) -> Vec<Piece> {
    let id = format!("chatcmpl-mock-{seq}");
    let model = body
        .get("model")
        .cloned()
        .unwrap_or_else(|| json!("mock-model"));
    let chunk = |delta: Value, finish: Value| {
        let obj = json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
                         "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
        event(&obj)
    };
    let mut pieces = vec![chunk(
        json!({"role": "assistant", "content": ""}),
        Value::Null,
    )];
    for r in &step.reasoning {
        pieces.push(chunk(json!({"reasoning_content": r}), Value::Null));
    }
    for t in &step.text {
        pieces.push(chunk(json!({"content": t}), Value::Null));
    }
    for (i, call) in step.tool_calls.iter().enumerate() {
        let call_id = call
            .id
            .clone()
            .unwrap_or_else(|| json!(format!("call_mock_{seq}_{i}")));
        let first = json!({"index": i, "id": call_id, "type": "function",
                           "function": {"name": call.name, "arguments": ""}});
        pieces.push(chunk(json!({"tool_calls": [first]}), Value::Null));
        for piece in &call.pieces {
            let delta = json!({"tool_calls": [{"index": i, "function": {"arguments": piece}}]});
            pieces.push(chunk(delta, Value::Null));
        }
    }
    pieces.extend(super::hangs(step));
    let finish = step.finish_reason.clone().unwrap_or_else(|| {
        if step.tool_calls.is_empty() {
            "stop"
        } else {
            "tool_calls"
        }
        .to_string()
    });
    pieces.push(chunk(json!({}), json!(finish)));
    let include_usage = body
        .get("stream_options")
        .and_then(|o| o.get("include_usage"))
        .is_some_and(truthy);
    if include_usage {
        let (input, output) = (step.input_tokens, step.output_tokens);
        let obj = json!({"id": id, "object": "chat.completion.chunk", "created": created, "model": model,
                         "choices": [],
                         "usage": {"prompt_tokens": input, "completion_tokens": output,
                                   "total_tokens": input + output}});
        pieces.push(event(&obj));
    }
    pieces.push(Piece::Chunk("data: [DONE]\n\n".into()));
    pieces
}

fn event(obj: &Value) -> Piece {
    Piece::Chunk(format!("data: {}\n\n", pyjson::dumps(obj)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::mock::script::Script;

    fn chunks(pieces: &[Piece]) -> Vec<&str> {
        pieces
            .iter()
            .filter_map(|p| match p {
                Piece::Chunk(c) => Some(c.as_str()),
                Piece::Hang(_) | Piece::HangUntilFile(_) => None,
            })
            .collect()
    }

    #[test]
    fn text_then_finish_then_usage() {
        let script =
            Script::parse(&json!([{"text": "hi", "usage": {"input": 3, "output": 4}}])).unwrap();
        let body = json!({"model": "m", "stream_options": {"include_usage": true}});
        let pieces = stream(&script.step(0), &body, 7, 100);
        assert_eq!(
            chunks(&pieces),
            vec![
                "data: {\"id\": \"chatcmpl-mock-7\", \"object\": \"chat.completion.chunk\", \"created\": 100, \"model\": \"m\", \"choices\": [{\"index\": 0, \"delta\": {\"role\": \"assistant\", \"content\": \"\"}, \"finish_reason\": null}]}\n\n",
                "data: {\"id\": \"chatcmpl-mock-7\", \"object\": \"chat.completion.chunk\", \"created\": 100, \"model\": \"m\", \"choices\": [{\"index\": 0, \"delta\": {\"content\": \"hi\"}, \"finish_reason\": null}]}\n\n",
                "data: {\"id\": \"chatcmpl-mock-7\", \"object\": \"chat.completion.chunk\", \"created\": 100, \"model\": \"m\", \"choices\": [{\"index\": 0, \"delta\": {}, \"finish_reason\": \"stop\"}]}\n\n",
                "data: {\"id\": \"chatcmpl-mock-7\", \"object\": \"chat.completion.chunk\", \"created\": 100, \"model\": \"m\", \"choices\": [], \"usage\": {\"prompt_tokens\": 3, \"completion_tokens\": 4, \"total_tokens\": 7}}\n\n",
                "data: [DONE]\n\n",
            ]
        );
    }

    #[test]
    fn tool_call_ids_default_from_the_request_number() {
        let script =
            Script::parse(&json!([{"tool_calls": [{"name": "ls"}], "hang_ms": 5}])).unwrap();
        let pieces = stream(&script.step(0), &json!({}), 2, 0);
        let all = chunks(&pieces).concat();
        assert!(all.contains("\"id\": \"call_mock_2_0\""));
        assert!(all.contains("\"model\": \"mock-model\""));
        assert!(all.contains("\"finish_reason\": \"tool_calls\""));
        assert!(!all.contains("usage"));
        assert!(matches!(pieces[pieces.len() - 3], Piece::Hang(_)));
    }
}
