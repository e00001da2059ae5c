//! A running tool's nested calls (Pi 1.5's `ctx.executeTool`, `Input::ToolNested`): each runs
//! as a call of its own with events carrying `parentToolCallId`, through the `tool_call` gate
//! with the parent named, and is answered to the caller (`Effect::AnswerNested`) with Pi's
//! outcome; the caller's result message gets the `nestedCalls` record. A nested call of a tool
//! not running is refused, and an abort cancels the nested calls running with the rest.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::agent::hooks::{HookDecision, HookEvent, HookPayload, ToolCallVerdict};
use pi_core::agent::{CallId, Effect, Input, ToolOutcome};
use pi_core::agent_session::{SessionInput, SessionMachine, SessionStep};
use pi_core::compaction::CompactionSettings;
use pi_core::event::ToolResult;
use pi_core::tools::definitions::builtin_tool;
use serde_json::{json, Value};

#[path = "support/session.rs"]
mod support;

fn session(handled: &[HookEvent]) -> SessionMachine {
    let tools = ["ls", "read"]
        .iter()
        .map(|n| builtin_tool(n).unwrap().spec())
        .collect();
    support::hooked(handled, tools, &[], CompactionSettings::default())
}

/// The session prompted, its model calling `ls` as `t1`: the step of that answer.
fn calling_ls(s: &mut SessionMachine) -> SessionStep {
    let call = support::prompted(s, 1, "go");
    let content = json!([{"type": "toolCall", "id": "t1", "name": "ls", "arguments": {}}]);
    s.step(2, support::answered_with(call, content, "toolUse"))
        .unwrap()
}

/// The session prompted, its model calling `ls` as `t1`: the call of `ls`.
fn calling(s: &mut SessionMachine) -> CallId {
    runs(&calling_ls(s)).remove(0).0
}

fn runs(step: &SessionStep) -> Vec<(CallId, String, String, Value)> {
    step.effects
        .iter()
        .filter_map(|e| match e {
            Effect::RunTool {
                call,
                tool_call_id,
                tool,
                args,
                ..
            } => Some((*call, tool_call_id.clone(), tool.clone(), args.clone())),
            _ => None,
        })
        .collect()
}

fn answers(step: &SessionStep) -> Vec<(CallId, String, Value)> {
    step.effects
        .iter()
        .filter_map(|e| match e {
            Effect::AnswerNested {
                call,
                tool_call_id,
                outcome,
            } => Some((*call, tool_call_id.clone(), outcome.clone())),
            _ => None,
        })
        .collect()
}

fn events(step: &SessionStep) -> Vec<Value> {
    step.events
        .iter()
        .map(|e| serde_json::to_value(e).unwrap())
        .collect()
}

fn nested(call: CallId, name: &str, args: Value) -> SessionInput {
    SessionInput::Answer(Input::ToolNested {
        call,
        name: name.into(),
        args,
    })
}

fn finished(call: CallId, text: &str) -> SessionInput {
    SessionInput::Answer(Input::ToolFinished {
        call,
        outcome: ToolOutcome::Ok(ToolResult {
            content: vec![pi_core::message::ContentBlock::text(text)],
            ..ToolResult::default()
        }),
    })
}

/// A nested call of `read` on `a` from the running call `outer`.
fn read_a(outer: CallId) -> SessionInput {
    nested(outer, "read", json!({"path": "a"}))
}

#[test]
fn a_nested_call_runs_as_its_own_call_and_is_recorded_on_the_callers_result() {
    let mut s = session(&[]);
    let outer = calling(&mut s);

    let step = s.step(10, read_a(outer)).unwrap();
    assert_eq!(
        events(&step),
        [
            json!({"type": "tool_execution_start", "toolCallId": "t1/1", "toolName": "read",
                "args": {"path": "a"}, "parentToolCallId": "t1"})
        ]
    );
    let (read, id, tool, args) = runs(&step).remove(0);
    assert_eq!((id.as_str(), tool.as_str()), ("t1/1", "read"));
    assert_eq!(args, json!({"path": "a"}));

    let update = SessionInput::Answer(Input::ToolUpdate {
        call: read,
        partial: ToolResult::error("so far"),
    });
    let step = s.step(11, update).unwrap();
    assert_eq!(events(&step)[0]["parentToolCallId"], "t1");

    let step = s.step(14, finished(read, "alpha")).unwrap();
    let ends = events(&step);
    assert_eq!(ends.len(), 1, "{ends:?}");
    assert_eq!(ends[0]["type"], "tool_execution_end");
    assert_eq!(ends[0]["durationMs"], 4, "the time between its inputs");
    assert_eq!(ends[0]["parentToolCallId"], "t1");
    assert_eq!(
        answers(&step),
        [(
            outer,
            "t1/1".to_owned(),
            json!({"toolCall": {"type": "toolCall", "id": "t1/1", "name": "read", "arguments": {"path": "a"}},
                   "result": {"content": [{"type": "text", "text": "alpha"}]},
                   "isError": false, "durationMs": 4})
        )]
    );

    // A tool nobody has fails at once, without a run and without `durationMs`.
    let step = s.step(15, nested(outer, "nope", json!({}))).unwrap();
    assert!(runs(&step).is_empty());
    let (_, id, outcome) = answers(&step).remove(0);
    assert_eq!(id, "t1/2");
    assert_eq!(outcome["isError"], true);
    assert_eq!(
        outcome["result"]["content"][0]["text"],
        "Tool nope not found"
    );
    assert!(outcome.get("durationMs").is_none());

    let step = s.step(16, finished(outer, "listed")).unwrap();
    let message = events(&step)
        .into_iter()
        .find(|e| e["type"] == "message_end" && e["message"]["role"] == "toolResult")
        .unwrap()["message"]
        .clone();
    assert_eq!(
        message["nestedCalls"],
        json!({"calls": [
            {"id": "t1/1", "name": "read", "status": "ok", "arguments": {"path": "a"}, "durationMs": 4},
            {"id": "t1/2", "name": "nope", "status": "error", "arguments": {}, "durationMs": 0,
             "error": "Tool nope not found"}
        ], "complete": true})
    );
    assert!(
        message.get("usage").is_none(),
        "no nested result reported usage"
    );
}

#[test]
fn a_nested_call_passes_the_gate_with_its_parent_named_and_a_block_answers_it() {
    let mut s = session(&[HookEvent::ToolCall]);
    let step = calling_ls(&mut s);
    let (gate, _) = support::hooks(&step).remove(0);
    let run = HookDecision::ToolCall(ToolCallVerdict::Run { input: json!({}) });
    let step = s.step(3, support::decided_as(gate, run, vec![])).unwrap();
    let outer = runs(&step).remove(0).0;

    let step = s.step(4, read_a(outer)).unwrap();
    let (gate, payload) = support::hooks(&step).remove(0);
    assert_eq!(
        payload,
        HookPayload::ToolCall {
            tool_name: "read".into(),
            tool_call_id: "t1/1".into(),
            parent_tool_call_id: Some("t1".into()),
            input: json!({"path": "a"}),
        }
    );
    assert_eq!(
        serde_json::to_value(&payload).unwrap(),
        json!({"type": "tool_call", "toolName": "read", "toolCallId": "t1/1",
               "parentToolCallId": "t1", "input": {"path": "a"}})
    );
    let block = HookDecision::ToolCall(ToolCallVerdict::Block {
        reason: "not from a tool".into(),
        terminate: None,
    });
    let step = s.step(5, support::decided_as(gate, block, vec![])).unwrap();
    assert!(runs(&step).is_empty());
    let (to, _, outcome) = answers(&step).remove(0);
    assert_eq!(to, outer);
    assert_eq!(outcome["result"]["content"][0]["text"], "not from a tool");
    assert_eq!(outcome["isError"], true);
}

#[test]
fn a_nested_call_of_a_call_not_running_is_refused_and_an_abort_cancels_nested_runs() {
    let mut s = session(&[]);
    let outer = calling(&mut s);
    assert!(s
        .step(3, nested(CallId(999), "read", json!({"path": "a"})))
        .is_err());

    let step = s.step(4, read_a(outer)).unwrap();
    let (read, ..) = runs(&step).remove(0);
    let step = s.step(5, SessionInput::Abort).unwrap();
    let cancelled: Vec<CallId> = step
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::Cancel { call } => Some(*call),
            _ => None,
        })
        .collect();
    assert!(
        cancelled.contains(&outer) && cancelled.contains(&read),
        "{cancelled:?}"
    );
}

#[test]
fn a_nested_calls_own_calls_count_from_its_id_and_reach_the_same_record() {
    let mut s = session(&[]);
    let outer = calling(&mut s);
    let step = s.step(3, nested(outer, "ls", json!({}))).unwrap();
    let (inner, ..) = runs(&step).remove(0);
    let step = s
        .step(4, nested(inner, "read", json!({"path": "b"})))
        .unwrap();
    assert_eq!(events(&step)[0]["toolCallId"], "t1/1/1");
    assert_eq!(events(&step)[0]["parentToolCallId"], "t1/1");
    let (deepest, ..) = runs(&step).remove(0);
    let step = s.step(5, finished(deepest, "b")).unwrap();
    assert_eq!(answers(&step)[0].0, inner);
    s.step(6, finished(inner, "a")).unwrap();
    let step = s.step(7, finished(outer, "done")).unwrap();
    let record = events(&step)
        .into_iter()
        .find(|e| e["type"] == "message_end" && e["message"]["role"] == "toolResult")
        .unwrap()["message"]
        .clone();
    let ids: Vec<&str> = record["nestedCalls"]["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["t1/1", "t1/1/1"]);
}

#[test]
fn a_deferred_tool_not_active_is_callable_and_validated_by_its_schema() {
    use pi_core::agent::custom_tool::{CustomToolDefinition, SearchableTool};
    use pi_core::agent_session::ToolLoadout;
    use pi_core::system_prompt::SystemPromptInputs;

    let mut s = session(&[]);
    let fetch = CustomToolDefinition {
        name: "mcp__web__fetch".into(),
        label: "fetch".into(),
        description: "Fetches a page.".into(),
        parameters: json!({"type": "object", "required": ["url"],
                           "properties": {"url": {"type": "string"}}}),
        ..CustomToolDefinition::default()
    };
    s.set_tool_loadout(Some(ToolLoadout {
        deferred_tools: vec![SearchableTool {
            tool: fetch,
            namespace: None,
        }],
        prompt: SystemPromptInputs::default().with_builtin_tools(&["ls", "read"]),
        ..ToolLoadout::default()
    }));
    let outer = calling(&mut s);
    let step = s
        .step(3, nested(outer, "mcp__web__fetch", json!({"url": "u"})))
        .unwrap();
    let (_, id, tool, _) = runs(&step).remove(0);
    assert_eq!((id.as_str(), tool.as_str()), ("t1/1", "mcp__web__fetch"));
    assert!(
        !s.agent()
            .tools()
            .iter()
            .any(|t| t.name == "mcp__web__fetch"),
        "a nested call activates nothing"
    );

    let step = s
        .step(4, nested(outer, "mcp__web__fetch", json!({})))
        .unwrap();
    assert!(
        runs(&step).is_empty(),
        "arguments failing the schema run nothing"
    );
    let (_, _, outcome) = answers(&step).remove(0);
    assert_eq!(outcome["isError"], true);
}

#[test]
fn where_the_agent_runs_tools_one_at_a_time_a_nested_call_waits_for_the_one_ahead() {
    use pi_core::agent::convert::CodingAgentHooks;
    use pi_core::agent::{AgentConfig, ToolExecution};
    use pi_core::script::mock_model;

    let mut s = support::machine(
        AgentConfig {
            model: mock_model(),
            tools: ["ls", "read"]
                .iter()
                .map(|n| builtin_tool(n).unwrap().spec())
                .collect(),
            tool_execution: ToolExecution::Sequential,
            hooks: std::sync::Arc::new(CodingAgentHooks::default()),
            ..AgentConfig::default()
        },
        Default::default(),
    );
    let outer = calling(&mut s);
    let step = s.step(3, read_a(outer)).unwrap();
    let (first, ..) = runs(&step).remove(0);
    // The second is started (its event) but waits for the first to end.
    let step = s
        .step(4, nested(outer, "read", json!({"path": "b"})))
        .unwrap();
    assert_eq!(events(&step)[0]["toolCallId"], "t1/2");
    assert!(runs(&step).is_empty(), "{:?}", step.effects);
    let step = s.step(5, finished(first, "a")).unwrap();
    assert_eq!(answers(&step)[0].1, "t1/1");
    let (second, id, _, args) = runs(&step).remove(0);
    assert_eq!((id.as_str(), args), ("t1/2", json!({"path": "b"})));

    // Another call of the outer tool waits behind t1/2; t1/2's own calls skip the queue it
    // holds (they would otherwise wait for their own caller).
    let step = s.step(6, nested(outer, "ls", json!({}))).unwrap();
    assert!(runs(&step).is_empty(), "t1/2 still runs");
    let step = s.step(7, nested(second, "ls", json!({}))).unwrap();
    assert_eq!(runs(&step)[0].1, "t1/2/1");
}

#[test]
fn a_tool_that_returns_before_its_nested_call_ends_has_its_result_wait_for_it() {
    let mut s = session(&[]);
    let outer = calling(&mut s);
    let step = s.step(3, read_a(outer)).unwrap();
    let (read, ..) = runs(&step).remove(0);
    let step = s.step(4, finished(outer, "returned early")).unwrap();
    let kinds: Vec<Value> = events(&step).iter().map(|e| e["type"].clone()).collect();
    assert_eq!(
        kinds,
        [json!("tool_execution_end")],
        "no result message yet"
    );
    let step = s.step(5, finished(read, "a")).unwrap();
    let message = events(&step)
        .into_iter()
        .find(|e| e["type"] == "message_end" && e["message"]["role"] == "toolResult")
        .expect("the result once the nested call ended")["message"]
        .clone();
    assert_eq!(message["nestedCalls"]["complete"], true);
    assert_eq!(message["content"][0]["text"], "returned early");
}
