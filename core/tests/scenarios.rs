//! Agent-loop scenarios: each script runs through the real machine and its transcript is pinned.
//! Where a scenario mirrors a reference trace of Pi 0.73.1 or a test of pi-agent-core, its
//! comment names it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
// Tests read fixtures and run cargo; the core's IO ban applies to the library, not to its tests.
#![allow(clippy::disallowed_methods, clippy::disallowed_types)]

fn check(script: &str) -> String {
    pi_core::script::run(script).unwrap_or_else(|e| panic!("script error: {e}"))
}

macro_rules! scenario {
    ($name:ident, $script:expr) => {
        #[test]
        fn $name() {
            insta::with_settings!({omit_expression => true, prepend_module_to_snapshot => false}, {
                insta::assert_snapshot!(stringify!($name), check($script));
            });
        }
    };
}

// ---- the reference traces -------------------------------------------------------------------

// a_plain_text: five text deltas, one turn.
scenario!(
    trace_a_plain_text,
    r#"
user: Say hello
model: usage=10/5 text "Hello" " from" " the" " mock" "."
"#
);

// b_tool_read: arguments in chunks, a tool result, a second turn.
scenario!(
    trace_b_tool_read,
    r#"
tools: read
user: Read hello.txt and tell me what it says
model: tool read#call_read_1 {"pa~~th": "hel~~lo.txt"}
tool: ok hi there
model: text The file says: hi there.
"#
);

// c_two_tools: text and two tool calls in one message; they run in parallel, the later one
// finishes first: tool_execution_end in completion order, result messages in call order.
scenario!(
    trace_c_two_tools_parallel,
    r#"
tools: bash read
user: Run echo hi and read hello.txt
model: text "I'll run two tools." | tool bash#call_bash_1 {"command":~~ "echo hi"}} | tool read#call_read_2 {"path": "~~hello.txt"}
tool call_bash_1: update {"content": []}
tool call_bash_1: update {"content": [{"type": "text", "text": "hi\n"}], "details": {}}
tool call_read_2: ok hi there
tool call_bash_1: ok {"content": [{"type": "text", "text": "hi\n"}]}
model: text Both done: hi, and the file contents.
"#
);

// e_rpc, first prompt: steering and a follow-up queued while the answer streams; the steering
// message comes after the tool batch and its turn_end, the follow-up only when the agent would stop.
scenario!(
    trace_e_rpc_steer_and_follow_up,
    r#"
tools: bash
user: Run echo one
model~ text "Running "
steer: Also acknowledge this steer.
followup: Then do the follow-up.
user: this prompt is refused while streaming
model: text "the " "command." | tool bash#call_echo {"command": "echo one"}
tool: ok one
model: text "Steer " "acknowledged."
model: text "Follow-up " "done."
"#
);

// e_rpc, second prompt: abort after the third delta.
scenario!(
    trace_e_rpc_abort_while_streaming,
    r#"
user: Give me a long answer
model~ text "This " "is " "a "
abort
user: Try again briefly
model: text Fresh answer after abort.
"#
);

// ---- pi-agent-core agent-loop tests ---------------------------------------------------------

// Custom message roles reach convertToLlm, which decides what the model sees.
scenario!(
    custom_roles_are_left_to_convert_to_llm,
    r#"
history: [{"role": "notification", "text": "build finished", "timestamp": 1}]
user: Hello
model: text Hi there!
"#
);

// transformContext runs before convertToLlm and sees the whole transcript.
scenario!(
    transform_context_runs_before_convert,
    r#"
hook: transform keep-last 2
history: [{"role":"user","content":"one","timestamp":1},{"role":"assistant","content":[{"type":"text","text":"r1"}],"api":"openai-completions","provider":"mock","model":"mock-model","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":2},{"role":"user","content":"two","timestamp":3},{"role":"assistant","content":[{"type":"text","text":"r2"}],"api":"openai-completions","provider":"mock","model":"mock-model","usage":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"totalTokens":0,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"stop","timestamp":4}]
user: new message
model: text ok
"#
);

// prepareArguments runs before validation: the edit tool folds legacy oldText/newText.
scenario!(
    prepare_arguments_before_validation,
    r#"
tools: edit
user: change it
model: tool edit {"path": "a.txt", "oldText": "before", "newText": "after"}
tool: ok Successfully replaced 1 block(s) in a.txt.
model: text done
"#
);

// Steering queued while a sequential batch runs is injected after the whole batch and turn_end.
scenario!(
    steering_waits_for_the_whole_batch,
    r#"
config: toolExecution=sequential
tools: echo
user: start
model: tool echo {"value": "first"} | tool echo {"value": "second"}
steer: interrupt
tool: ok ok:first
tool: ok ok:second
model: text saw the interrupt
"#
);

// A tool with executionMode "sequential" makes its whole batch sequential.
scenario!(
    one_sequential_tool_makes_the_batch_sequential,
    r#"
tools: slow(sequential) fast
user: go
model: tool slow {"value": "a"} | tool fast {"value": "b"}
tool: ok slow:a
tool: ok fast:b
model: text done
"#
);

// shouldStopAfterTurn ends the run after the turn: no steering poll after it, follow-ups stay.
scenario!(
    should_stop_after_turn,
    r#"
tools: echo
hook: stop-after-turn 1
user: Hello
followup: follow up should stay queued
model: tool echo {"value": "hello"}
tool: ok echoed: hello
"#
);

// A batch whose results all say terminate ends the run without another model call.
scenario!(
    terminate_when_every_result_says_so,
    r#"
tools: echo
user: go
model: tool echo {"value": "a"} | tool echo {"value": "b"}
tool: ok {"content": [{"type": "text", "text": "a"}], "terminate": true}
tool: ok {"content": [{"type": "text", "text": "b"}], "terminate": true}
"#
);

// One result without terminate keeps the loop going.
scenario!(
    mixed_terminate_continues,
    r#"
tools: echo
user: go
model: tool echo {"value": "first"} | tool echo {"value": "second"}
tool: ok {"content": [{"type": "text", "text": "first"}], "terminate": true}
tool: ok second
model: text done
"#
);

// afterToolCall can mark the batch as terminating.
scenario!(
    after_tool_call_terminates,
    r#"
tools: echo
hook: after echo terminate
user: go
model: tool echo {"value": "x"}
tool: ok x
"#
);

// beforeToolCall blocks with a reason, or with Pi's default text.
scenario!(
    before_tool_call_blocks,
    r#"
tools: echo bash
hook: block echo Blocked by policy
hook: block bash
user: go
model: tool echo {"value": "x"} | tool bash {"command": "rm -rf /"}
model: text understood
"#
);

// afterToolCall overrides field by field; a throwing hook turns the result into an error.
scenario!(
    after_tool_call_overrides,
    r#"
tools: echo read
hook: after echo content replaced by the hook
hook: after-throws read hook exploded
user: go
model: tool echo {"value": "x"} | tool read {"path": "a"}
tool: ok {"content": [{"type": "text", "text": "original"}], "details": {"kept": true}}
tool: ok file text
model: text done
"#
);

// A throwing beforeToolCall is an error result for that call only.
scenario!(
    before_tool_call_throws,
    r#"
tools: echo
hook: before-throws echo Extension failed, blocking execution: boom
user: go
model: tool echo {"value": "x"}
model: text ok
"#
);

// Continue from a transcript ending in a user message: no message events for existing context.
scenario!(
    continue_from_user_message,
    r#"
history: [{"role": "user", "content": [{"type": "text", "text": "Hello"}], "timestamp": 1}]
continue
model: text Hi
"#
);

// Continue with a custom last message: the caller's converter decides.
scenario!(
    continue_with_custom_last_message,
    r#"
hook: convert coding-agent
history: [{"role": "custom", "customType": "reminder", "content": "Check the build", "display": true, "timestamp": 1}]
continue
model: text Checked.
"#
);

// ---- pi-agent-core Agent tests --------------------------------------------------------------

// The guards and their texts.
scenario!(
    guards_while_running_and_idle,
    r#"
continue
user: first
user: second
continue
reset
model: text answer
continue
"#
);

// continue() from an assistant tail runs a queued follow-up.
scenario!(
    continue_processes_queued_follow_up,
    r#"
user: Initial
model: text Initial response
followup: Queued follow-up
continue
model: text Follow-up response
"#
);

// continue() from an assistant tail keeps one-at-a-time steering: the first steering message
// starts the run (its first poll is skipped), the second becomes its own turn.
scenario!(
    continue_with_one_at_a_time_steering,
    r#"
user: Initial
model: text Initial response
steer: Steering 1
steer: Steering 2
continue
model: text Response 1
model: text Response 2
"#
);

// The session id, reasoning level and system prompt go to every model call.
scenario!(
    request_carries_session_reasoning_and_prompt,
    r#"
config: sessionId=session-abc thinking=high systemPrompt=You_are_helpful.
user: Hello
model: thinking "Let me " "think." | text Hi!
config: sessionId=session-def thinking=off
user: Again
model: text Hi again
"#
);

// Abort while idle does nothing.
scenario!(
    abort_when_idle_is_a_no_op,
    r#"
abort
user: Hello
model: text Hi
abort
"#
);

// ---- loop behaviour from the behaviour digest -----------------------------------------------

// Steering queued before the run is injected in the first turn, after the prompt, with no
// extra turn_start.
scenario!(
    steering_queued_before_the_run,
    r#"
steer: queued before
user: prompt
model: text answer
"#
);

// Steering arriving while the final answer streams causes another turn before follow-ups.
scenario!(
    steering_during_final_answer_comes_before_follow_ups,
    r#"
user: prompt
followup: later
model~ text "partial "
steer: now
model: text answer
model: text steered
model: text followed up
"#
);

// Follow-up mode "all" takes the whole queue in one turn; "one-at-a-time" one per turn.
scenario!(
    follow_up_modes,
    r#"
config: followUpMode=all
user: prompt
followup: f1
followup: f2
model: text a1
model: text a2
config: followUpMode=one-at-a-time
user: again
followup: g1
followup: g2
model: text b1
model: text b2
model: text b3
"#
);

// Tool calls run whatever the stop reason says, except in an answer cut at the output limit
// (Pi 1.5's failToolCallsFromTruncatedMessage): its calls get the not-executed error result,
// since their arguments may be cut, and the loop asks again.
scenario!(
    tool_calls_of_an_answer_cut_at_the_output_limit_are_not_run,
    r#"
tools: echo
user: go
model: stop=stop tool echo {"value": "a"}
tool: ok a
model: stop=length tool echo {"value": "b"}
model: text done
"#
);

// An error response ends the run: no tools, no queue polls (queued messages stay queued).
scenario!(
    error_response_ends_the_run,
    r#"
tools: echo
user: go
steer: stays queued
followup: stays queued too
model~ tool echo {"value": "a"}
model: error 500 Internal server error
"#
);

// A failed request with nothing streamed: message_start and message_end of the final message.
scenario!(
    error_before_any_stream_event,
    r#"
user: go
model: error 429 Rate limit exceeded
"#
);

// Preparation failures: unknown tool, invalid arguments (coerced ones pass), thrown error.
scenario!(
    preparation_failures_and_thrown_errors,
    r#"
tools: read echo
user: go
model: tool nope {} | tool read {"offset": "x"} | tool read {"path": "a", "limit": "10"} | tool echo {"value": "v"}
tool: ok file contents
tool: error ENOENT: no such file or directory
model: text done
"#
);

// Parallel batch with an immediate failure in the middle: results stay in call order.
scenario!(
    parallel_immediate_failure_keeps_call_order,
    r#"
tools: echo
user: go
model: tool echo {"value": "a"} | tool missing {} | tool echo {"value": "c"}
tool: ok c-result
tool: ok a-result
model: text done
"#
);

// Abort while tools run: running tools are cancelled, their results arrive, and the next model
// call comes back aborted at once, as in Pi.
scenario!(
    abort_while_tools_run,
    r#"
tools: bash echo
user: go
model: tool bash {"command": "sleep 10"} | tool echo {"value": "quick"}
tool call_2: ok quick
abort
tool: error Command aborted
"#
);

// Abort before the response started: the request fails with the SDK's abort text.
scenario!(
    abort_before_the_response_starts,
    r#"
user: go
abort
"#
);

// A hook that throws fails the run: Pi's synthetic error message, only agent_end.
scenario!(
    throwing_convert_to_llm_fails_the_run,
    r#"
hook: convert-throws convert exploded
user: go
"#
);

// The coding agent's converter wraps its own roles for the model.
scenario!(
    coding_agent_convert_to_llm,
    r#"
hook: convert coding-agent
history: [{"role":"bashExecution","command":"ls","output":"a\nb","exitCode":2,"cancelled":false,"truncated":true,"fullOutputPath":"/tmp/out.log","timestamp":1},{"role":"bashExecution","command":"secret","output":"","cancelled":false,"truncated":false,"timestamp":2,"excludeFromContext":true},{"role":"bashExecution","command":"true","output":"","exitCode":0,"cancelled":true,"truncated":false,"timestamp":3},{"role":"branchSummary","summary":"Tried X.","fromId":"abcd1234","timestamp":4},{"role":"compactionSummary","summary":"Earlier work.","tokensBefore":1000,"timestamp":5},{"role":"custom","customType":"note","content":"Remember Y","display":false,"timestamp":6}]
user: go on
model: text ok
"#
);

// A batch of prompt messages starts one run.
scenario!(
    prompt_with_a_batch_of_messages,
    r#"
prompt: [{"role":"user","content":"first","timestamp":5},{"role":"user","content":[{"type":"text","text":"second"}],"timestamp":6}]
model: text both seen
"#
);

// Tool updates carry the raw model arguments, even when validation coerced them.
scenario!(
    tool_updates_carry_raw_arguments,
    r#"
tools: read
user: go
model: tool read {"path": "a", "offset": "5"}
tool: update partial 1
tool: update partial 2
tool: ok done
model: text ok
"#
);

// Time passes between inputs: timestamps come from the input's clock.
scenario!(
    timestamps_come_from_the_clock,
    r#"
tools: echo
user: go
tick 1500
model: tool echo {"value": "a"}
tick 250
tool: ok a
tick 10
model: text done
"#
);

// The stream function throws (no API key): Pi's synthetic failure, only agent_end, not a turn_end.
scenario!(
    model_call_that_cannot_be_made_fails_the_run,
    r#"
user: go
model: throws No API key for provider: mock
continue
user: try again
model: text recovered
"#
);
