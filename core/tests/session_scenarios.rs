//! Session-runtime scenarios (Pi's `AgentSession`): retry, compaction, queues and persistence,
//! each script run through the real session machine with its transcript pinned. Where a scenario
//! mirrors a reference trace of Pi 0.73.1, its comment names it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

fn check(script: &str) -> String {
    pi_core::script::run(script).unwrap_or_else(|e| panic!("script error: {e}"))
}

/// The window most compaction scenarios run in: a 1,600-token turn crosses its threshold.
const SMALL_WINDOW: &str = "contextWindow=2000 reserveTokens=500 keepRecentTokens=5";

/// The first answer's usage where the scenario needs one (well under any threshold).
const USAGE: &str = "usage=100/20 ";

/// The opening most scenarios share: a session with `settings`, a first question answered
/// (with `usage`, if any), a second after a second has passed.
fn second_question(settings: &str, usage: &str) -> String {
    format!(
        "\nsession: {settings}\nuser: First question\nmodel: {usage}text First answer.\ntick 1000\nuser: Second question\n"
    )
}

/// The refusals (`! ` lines) a transcript shows, in order.
fn refusals(transcript: &str) -> Vec<&str> {
    transcript
        .lines()
        .filter_map(|line| line.trim_start().strip_prefix("! "))
        .collect()
}

/// A test pinning the transcript of `$script`, or of `$opening` followed by `$rest`.
macro_rules! scenario {
    ($name:ident, $script:expr) => {
        #[test]
        fn $name() {
            insta::with_settings!({omit_expression => true, prepend_module_to_snapshot => false}, {
                insta::assert_snapshot!(stringify!($name), check(&String::from($script)));
            });
        }
    };
    ($name:ident, $opening:expr, $rest:expr) => {
        scenario!($name, format!("{}{}", $opening, $rest));
    };
}

// ---- auto-retry ------------------------------------------------------------------------------

// d2_retry_agent_level: a 500 then a 429 are retried after 2 s and 4 s; the success ends the
// retry right after its message_end. Failed attempts stay in the session, not in the context.
scenario!(
    retry_500_then_429_then_success,
    r#"
session: maxRetries=3 baseDelayMs=2000
user: Hello
model: error 500 mock error 500
tick 1999
tick 1
model: error 429 Rate limit reached
tick 4000
model: text Recovered after 500 and 429.
"#
);

scenario!(
    retry_exhausted,
    r#"
session: maxRetries=2 baseDelayMs=1000
user: Hello
model: error 503 Service Unavailable
tick 1000
model: error 503 Service Unavailable
tick 2000
model: error 503 Service Unavailable
"#
);

scenario!(
    non_retryable_error_is_not_retried,
    r#"
session: maxRetries=3
user: Hello
model: error 401 Invalid API key
"#
);

scenario!(
    retry_disabled,
    r#"
session: retry=off
user: Hello
model: error 500 Internal server error
"#
);

scenario!(
    abort_during_retry_backoff_cancels_it,
    r#"
session: maxRetries=3 baseDelayMs=2000
user: Hello
model: error 429 Too many requests
tick 500
abort
tick 5000
"#
);

// ---- compaction ------------------------------------------------------------------------------

scenario!(
    threshold_compaction_after_a_large_turn,
    second_question(SMALL_WINDOW, USAGE),
    r#"
model: usage=1600/20 text Second answer.
model: text Summary of the first exchange.
"#
);

scenario!(
    overflow_compacts_then_retries_once,
    second_question(SMALL_WINDOW, USAGE),
    r#"
model: error 400 prompt is too long: 2100 tokens > 2000 maximum
model: text Summary of the conversation.
tick 100
model: text Answer after compaction.
"#
);

scenario!(
    overflow_twice_gives_up,
    second_question(SMALL_WINDOW, USAGE),
    r#"
model: error 400 prompt is too long: 2100 tokens > 2000 maximum
model: text Summary of the conversation.
tick 100
model: error 400 prompt is too long: 2050 tokens > 2000 maximum
"#
);

// Pi 1.5: a complete answer whose usage shows the window overrun is compacted after, not
// omitted and not asked again (`_checkCompaction`'s willRetry is false for a stop).
scenario!(
    a_silent_overflow_is_compacted_without_asking_again,
    second_question(SMALL_WINDOW, USAGE),
    r#"
model: usage=2100/20 text A complete answer.
model: text Summary of the conversation.
model: text Summary of the turn's start.
tick 100
"#
);

// Pi 1.5 (length_tool_calls, scenarios-1.5.2): the answer a run ends with, cut at the output
// limit, is omitted by a context_edit, compacted away like an overflow and asked again once.
scenario!(
    a_cut_answer_is_omitted_compacted_and_asked_again,
    second_question(SMALL_WINDOW, USAGE),
    r#"
model: stop=length usage=120/30 text Cut off
model: text Summary of the conversation.
tick 100
model: text Answer after recovery.
"#
);

scenario!(
    a_second_cut_answer_gives_up,
    second_question(SMALL_WINDOW, USAGE),
    r#"
model: stop=length usage=120/30 text Cut off
model: text Summary of the conversation.
tick 100
model: stop=length usage=120/30 text Cut off again
"#
);

// An error no retry can fix ends the compaction at once.
scenario!(
    summary_failure_ends_the_compaction_with_its_error,
    second_question(SMALL_WINDOW, USAGE),
    r#"
model: usage=1600/20 text Second answer.
model: error 400 summary request rejected
"#
);

// Pi 1.5: a summary call that fails with a retryable error is sent again after the session's
// backoff (`summarization_retry_scheduled`, `_attempt_start`, `_finished`).
scenario!(
    a_failed_summary_is_retried_after_the_backoff,
    second_question(
        &format!("{SMALL_WINDOW} maxRetries=2 baseDelayMs=1000"),
        USAGE
    ),
    r#"
model: usage=1600/20 text Second answer.
model: error 500 summary backend down
tick 1000
model: usage=30/10 text Summary after a retry.
"#
);

scenario!(
    manual_compaction_with_instructions,
    second_question("keepRecentTokens=5", USAGE),
    r#"
model: usage=120/20 text Second answer.
tick 1000
compact: Focus on the questions
model: text Summary focused on questions.
tick 1000
compact:
"#
);

// The session listens to its agent again afterwards (the next run's events are emitted and
// persisted).
scenario!(
    manual_compaction_of_an_empty_session,
    r#"
session: keepRecentTokens=5
compact:
user: Hello
model: text Hi.
"#
);

scenario!(
    manual_compaction_while_streaming_aborts_the_run_first,
    second_question("keepRecentTokens=5", USAGE),
    r#"
model~ text "Partial"
compact:
model: text Summary.
"#
);

// ---- prompts while streaming -----------------------------------------------------------------

scenario!(
    prompt_while_streaming_needs_a_behaviour,
    r#"
session: maxRetries=3
tools: bash
user: Run it
model: tool bash {"command": "sleep 1"}
user: Another prompt
user-steer: Use ls instead
user-followup: Then summarise
tool: ok done
model: text Steered.
model: text Summary.
"#
);

scenario!(
    thinking_level_is_clamped_to_the_model,
    r#"
session: maxRetries=3
thinking: high
user: Hello
model: text Hi.
"#
);

// ---- branch navigation -----------------------------------------------------------------------

// Back to the first user message with a summary of the branch left behind: the leaf moves to
// the message's parent, the summary hangs there, the editor gets the message's text.
scenario!(
    navigate_back_with_a_branch_summary,
    second_question("maxRetries=3", ""),
    r#"
model: text Second answer.
tick 1000
navigate: 3 summarize label=explored Keep it short
model: text They asked a second question.
tick 1000
user: A different second question
model: text A different answer.
"#
);

// An abort while a failed summary waits for its retry ends the retry and the compaction at once
// (Pi's sleep rejects on the abort signal: `summarization_retry_finished`, then an aborted
// `compaction_end`).
scenario!(
    an_abort_during_a_summary_retry_ends_the_compaction,
    second_question("keepRecentTokens=5 maxRetries=2 baseDelayMs=1000", ""),
    r#"
model: text Second answer.
tick 1000
compact:
model: error 503 Service Unavailable
abort
tick 1000
user: Third question
model: text Third answer.
"#
);

// Pi 1.5: a branch summary that fails with a retryable error is sent again after the backoff,
// its retry announced with `source: "branchSummary"`.
scenario!(
    a_failed_branch_summary_is_retried,
    second_question("maxRetries=2 baseDelayMs=500", ""),
    r#"
model: text Second answer.
tick 1000
navigate: 3 summarize
model: error 503 Service Unavailable
tick 500
model: usage=20/5 text They asked a second question.
"#
);

scenario!(
    navigate_without_summary_to_an_assistant_message,
    second_question("maxRetries=3", ""),
    r#"
model: text Second answer.
navigate: 2 label=here
navigate: 2
navigate: 99
"#
);

// ---- `!command` results ----------------------------------------------------------------------

// Idle: into the transcript and the session at once. While streaming: held until the next
// prompt, so the tool call and its result stay adjacent.
scenario!(
    bash_results_join_the_context,
    r#"
session: maxRetries=3
tools: bash
bash-result: {"command":"ls","output":"a.txt\n","exitCode":0,"cancelled":false,"truncated":false}
user: What did ls show?
model: tool bash {"command": "cat a.txt"}
bash-result: {"command":"pwd","output":"/work\n","exitCode":0,"cancelled":false,"truncated":false}
tool: ok hello
model: text It showed a.txt.
user: And pwd?
model: text /work.
"#
);

// ---- abort during a tool ---------------------------------------------------------------------

// The running command is cancelled; its aborted result ends the run without another model call
// and without a retry.
scenario!(
    abort_during_bash,
    r#"
session: maxRetries=3
tools: bash
user: Run the tests
model: tool bash {"command": "cargo test"}
tool: update {"content": [{"type": "text", "text": "Compiling..."}]}
abort
tool: error Command aborted
"#
);

// ---- model and thinking level ----------------------------------------------------------------

// A switch records the model and, when the level changes, the thinking level. As in Pi 1.5.2,
// a switch asks for the settings' default level (none here), else the current one: after a
// detour through a model without reasoning (which forces `off`), the reasoning model gets `off`.
scenario!(
    model_switches_record_entries_and_clamp_thinking,
    r#"
session: maxRetries=3
set-model: thinker reasoning
thinking: xhigh
thinking: high
set-model: plain
set-model: thinker reasoning
user: Hello
model: text Hi.
"#
);

// A prompt during a retry's backoff runs at once; when that run overflows, the compaction
// supersedes the waiting retry (`Retry cancelled`), so the old transcript is never continued
// while it is being replaced. (Found by the session properties; Pi's timer races here.)
scenario!(
    a_compaction_supersedes_a_waiting_retry,
    r#"
session: contextWindow=2000 reserveTokens=500 keepRecentTokens=5 maxRetries=2 baseDelayMs=1000
user: first
model: text First answer.
user: question
model: error 429 Too many requests
user: another question
model: error 400 prompt is too long: 2100 tokens > 2000 maximum
tick 1000
model: text Summary.
tick 100
model: text Answer.
"#
);

// While a navigation waits for its branch summary, a compaction is refused (it would write its
// entry on whichever branch the summary leaves).
scenario!(
    compaction_waits_for_a_navigation,
    second_question("keepRecentTokens=5", ""),
    r#"
model: text Second answer.
navigate: 3 summarize
compact:
model: text Summary of the branch.
"#
);

// ---- refusals while busy ---------------------------------------------------------------------

// Pi 1.5.2's texts (`AgentSession.prompt` and `navigateTree`): a prompt while a compaction or a
// branch summary runs, a navigation while the agent answers, and one while a compaction runs.
#[test]
fn prompts_and_navigations_while_busy_are_refused_with_pi_texts() {
    let opening = second_question("keepRecentTokens=5", "");
    let transcript = check(&format!(
        "{opening}{}",
        r#"
model~ text "Partial"
navigate: 2
model: text " answer."
tick 1000
compact:
user: Third question
navigate: 2
model: text Summary.
tick 1000
navigate: 3 summarize
user: Fourth question
model: text Summary of the branch.
"#,
    ));
    assert_eq!(
        refusals(&transcript),
        [
            "Wait for the current response to finish before navigating the session tree.",
            "Cannot submit a prompt while compaction is in progress. Wait for compaction to finish and retry.",
            "Wait for the current compaction or tree navigation to finish before navigating the session tree.",
            "Cannot submit a prompt while compaction is in progress. Wait for compaction to finish and retry.",
        ],
        "{transcript}"
    );
}

// An automatic compaction is not part of the agent's run here (Pi 1.5.2 runs it inside, and
// would ask for a streaming behaviour): a prompt meanwhile, with a behaviour or without, gets
// the manual compaction's refusal.
#[test]
fn a_prompt_during_an_automatic_compaction_is_refused() {
    let opening = second_question(SMALL_WINDOW, USAGE);
    let transcript = check(&format!(
        "{opening}{}",
        r#"
model: usage=1600/20 text Second answer.
user: Third question
user-followup: Fourth question
model: text Summary of the first exchange.
"#,
    ));
    let text = "Cannot submit a prompt while compaction is in progress. Wait for compaction to finish and retry.";
    assert_eq!(refusals(&transcript), [text, text], "{transcript}");
}
