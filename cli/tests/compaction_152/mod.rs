//! Compaction as Pi 1.5.2 does it, through the binary in RPC mode against the mock: a manual
//! compaction with nothing to summarise is refused, a split turn is summarised history first and
//! then its prefix with 1.5.2's prompts, summary requests carry the model's own output limit, the
//! compaction entry holds the prompt's checkpoint and the summaries' usage (so the next turn
//! records no second system message), and a failed summary call is retried with the session's
//! retry settings, announced by the `summarization_retry_*` events.

use serde_json::{json, Value};

use super::Pi;

const TURN_PREFIX_INSTRUCTIONS: &str = "The messages above are earlier context from an ongoing conversation. Later messages are stored separately and do not need to be reconstructed.";
const SUMMARIZER: &str = "You are a context summarization assistant. Your task is to read a conversation between a user and an AI assistant, then produce a structured summary following the exact format specified.";

/// The session file's entries.
fn entries(pi: &Pi) -> Vec<Value> {
    let files: Vec<_> = pi
        ._env
        .session_files()
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    std::fs::read_to_string(&files[0])
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn is_system_entry(entry: &Value) -> bool {
    entry["type"] == "message" && entry["message"]["role"] == "system"
}

/// The text of a request's first user message.
fn user_text(request: &Value) -> String {
    let content = &request["messages"][1]["content"];
    match content {
        Value::String(text) => text.clone(),
        _ => content[0]["text"].as_str().unwrap_or_default().to_owned(),
    }
}

#[test]
fn a_manual_compaction_with_nothing_before_the_cut_is_refused() {
    let mut pi = Pi::start(json!([{"text": ["First answer."]}]));
    pi.send(json!({"id": "p", "type": "prompt", "message": "Question"}));
    pi.wait_type("agent_end");
    let refused = pi.call("c", json!({"type": "compact"}));
    assert_eq!(
        refused,
        json!({"id": "c", "type": "response", "command": "compact", "success": false,
               "error": "Nothing to compact (session too small)"})
    );
    assert!(pi.seen.contains(&json!({
        "type": "compaction_end", "reason": "manual", "aborted": false, "willRetry": false,
        "errorMessage": "Compaction failed: Nothing to compact (session too small)"
    })));
    assert_eq!(pi.mock.requests().len(), 1, "no summary request was sent");
    assert!(entries(&pi).iter().all(|e| e["type"] != "compaction"));
    assert_eq!(pi.finish(), 0);
}

#[test]
fn a_split_turn_is_summarised_history_first_and_the_next_turn_starts_from_the_checkpoint() {
    let settings = json!({"compaction": {"enabled": true, "keepRecentTokens": 400}});
    let mut pi = Pi::start_configured(
        json!([
            {"text": ["Short first answer."]},
            {"tool_calls": [{"id": "call_s1", "name": "bash", "arguments": {"command": "seq -f 'line-1-%04g' 1 60"}}]},
            {"tool_calls": [{"id": "call_s2", "name": "bash", "arguments": {"command": "seq -f 'line-2-%04g' 1 60"}}]},
            {"tool_calls": [{"id": "call_s3", "name": "bash", "arguments": {"command": "seq -f 'line-3-%04g' 1 60"}}]},
            {"text": ["Printed three blocks."]},
            {"text": ["## Goal\nHistory summary."]},
            {"text": ["## Original Request\nTurn prefix summary."]},
            {"text": ["After the compaction."]}
        ]),
        &[],
        Some(&settings),
    );
    pi.send(json!({"id": "p1", "type": "prompt", "message": "Say something short"}));
    pi.wait_type("agent_end");
    pi.send(json!({"id": "p2", "type": "prompt", "message": "Print three blocks of lines"}));
    pi.wait_type("agent_end");
    let compacted = pi.call(
        "c1",
        json!({"type": "compact", "customInstructions": "Keep the line numbers."}),
    );
    assert_eq!(compacted["success"], true, "{compacted}");
    let data = &compacted["data"];
    assert_eq!(
        data["summary"],
        "## Goal\nHistory summary.\n\n---\n\n**Turn Context (split turn):**\n\n## Original Request\nTurn prefix summary."
    );
    assert_eq!(data["usage"]["input"], 20, "both summaries' usage: {data}");
    assert_eq!(data["usage"]["output"], 10);
    assert!(data["estimatedTokensAfter"].as_u64().unwrap() > 0, "{data}");

    let requests = pi.mock.requests();
    assert_eq!(requests.len(), 7);
    let (history, prefix) = (&requests[5], &requests[6]);
    for summary in [history, prefix] {
        assert!(summary["messages"][0]["content"]
            .as_str()
            .is_some_and(|s| s.starts_with(SUMMARIZER)));
        assert_eq!(
            summary["max_completion_tokens"], requests[0]["max_completion_tokens"],
            "a summary asks for the model's own output limit, as the agent's requests do"
        );
    }
    let history_text = user_text(history);
    assert!(history_text.starts_with("<conversation>\n[User]: Say something short"));
    assert!(history_text.ends_with("\n\nAdditional focus: Keep the line numbers."));
    let prefix_text = user_text(prefix);
    assert!(
        prefix_text.starts_with("# Conversation\n[User]: Print three blocks of lines"),
        "{prefix_text}"
    );
    assert!(prefix_text.contains(&format!("\n\n# Instructions\n{TURN_PREFIX_INSTRUCTIONS}")));
    assert!(prefix_text.ends_with(
        "Do not infer or recreate later messages.\n\nAdditional focus: Keep the line numbers."
    ));

    let again = pi.call("c2", json!({"type": "compact"}));
    assert_eq!(again["error"], "Already compacted");

    pi.send(json!({"id": "p3", "type": "prompt", "message": "Go on"}));
    pi.wait_type("agent_end");
    let requests = pi.mock.requests();
    assert_eq!(requests.len(), 8);
    assert_eq!(
        requests[7]["messages"][0], requests[0]["messages"][0],
        "the prompt after the compaction is the checkpoint's"
    );
    assert_eq!(requests[7]["messages"][1]["role"], "user");

    let entries = entries(&pi);
    let first_system = entries.iter().find(|e| is_system_entry(e)).unwrap();
    let at = entries
        .iter()
        .position(|e| e["type"] == "compaction")
        .unwrap();
    let compaction = &entries[at];
    assert_eq!(compaction["usage"]["totalTokens"], 30, "{compaction}");
    let mut checkpoint = compaction["systemMessage"].clone();
    let stamp = checkpoint
        .as_object_mut()
        .unwrap()
        .remove("timestamp")
        .unwrap();
    let mut recorded = first_system["message"].clone();
    recorded.as_object_mut().unwrap().remove("timestamp");
    assert_eq!(checkpoint, recorded);
    let compaction_ms =
        pi_core::session::time::ms_from_iso(compaction["timestamp"].as_str().unwrap()).unwrap();
    assert_eq!(stamp, json!(compaction_ms));
    let keys: Vec<&str> = compaction
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "type",
            "id",
            "parentId",
            "timestamp",
            "summary",
            "firstKeptEntryId",
            "tokensBefore",
            "details",
            "usage",
            "fromHook",
            "systemMessage"
        ]
    );
    assert!(
        entries[at..].iter().all(|e| !is_system_entry(e)),
        "no second system message after the compaction"
    );
    assert_eq!(pi.finish(), 0);
}

#[test]
fn a_failed_summary_is_retried_with_the_sessions_retry_settings() {
    let settings = json!({
        "compaction": {"enabled": true, "keepRecentTokens": 10},
        "retry": {"enabled": true, "maxRetries": 2, "baseDelayMs": 1}
    });
    let mut pi = Pi::start_configured(
        json!([
            {"text": ["First."]},
            {"text": ["Second."]},
            {"status": 500},
            {"text": ["## Goal\nRetried summary."]}
        ]),
        &[],
        Some(&settings),
    );
    pi.send(json!({"id": "p1", "type": "prompt", "message": "one"}));
    pi.wait_type("agent_end");
    pi.send(json!({"id": "p2", "type": "prompt",
                   "message": "A second question, long enough to fill the kept budget."}));
    pi.wait_type("agent_end");
    let compacted = pi.call("c", json!({"type": "compact"}));
    assert_eq!(compacted["success"], true, "{compacted}");
    assert_eq!(compacted["data"]["summary"], "## Goal\nRetried summary.");
    let kinds: Vec<&Value> = pi
        .seen
        .iter()
        .filter(|v| {
            v["type"].as_str().is_some_and(|t| {
                t.starts_with("summarization_retry") || t.starts_with("compaction")
            })
        })
        .collect();
    assert_eq!(kinds.len(), 5, "{kinds:#?}");
    assert_eq!(kinds[0]["type"], "compaction_start");
    let scheduled = kinds[1];
    assert_eq!(scheduled["type"], "summarization_retry_scheduled");
    assert_eq!(scheduled["attempt"], 1);
    assert_eq!(scheduled["maxAttempts"], 2);
    assert_eq!(scheduled["delayMs"], 1);
    assert!(scheduled["errorMessage"]
        .as_str()
        .is_some_and(|m| m.contains("500")));
    assert_eq!(
        kinds[2],
        &json!({"type": "summarization_retry_attempt_start", "source": "compaction", "reason": "manual"})
    );
    assert_eq!(kinds[3], &json!({"type": "summarization_retry_finished"}));
    assert_eq!(kinds[4]["type"], "compaction_end");
    assert_eq!(pi.mock.requests().len(), 4);
    assert_eq!(pi.finish(), 0);
}

#[test]
fn summary_requests_ask_for_no_prompt_caching() {
    let settings = json!({"compaction": {"enabled": true, "keepRecentTokens": 5}});
    let mut pi = Pi::start_configured(
        json!([
            {"text": ["First answer."]},
            {"text": ["Second answer."]},
            {"text": ["## Goal\nSummary."]}
        ]),
        &["--provider", "mock-anthropic", "--model", "mock-claude"],
        Some(&settings),
    );
    pi.send(json!({"id": "p1", "type": "prompt", "message": "One"}));
    pi.wait_type("agent_end");
    pi.send(json!({"id": "p2", "type": "prompt", "message": "Two"}));
    pi.wait_type("agent_end");
    let compacted = pi.call("c", json!({"type": "compact"}));
    assert_eq!(compacted["success"], true, "{compacted}");
    let requests = pi.mock.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests[1].to_string().contains("cache_control"),
        "the agent's own requests mark the cache: {}",
        requests[1]
    );
    assert!(
        !requests[2].to_string().contains("cache_control"),
        "a one-off summary writes no cache (cacheRetention \"none\"): {}",
        requests[2]
    );
    assert_eq!(pi.finish(), 0);
}

/// Two long prompts whose first answer reports 45 tokens against a 100-token threshold, and
/// whose second answer (after `failures` failed attempts) reports no usage; the compaction
/// entries of the file after both runs.
fn threshold_after_an_answer_without_usage(failures: usize) -> (Vec<Value>, Vec<Value>) {
    let words: Vec<String> = (0..80).map(|i| format!("word{i}")).collect();
    let words = words.join(" ");
    let settings = json!({
        "compaction": {"enabled": true, "reserveTokens": 127_900, "keepRecentTokens": 150},
        "retry": {"baseDelayMs": 1, "provider": {"maxRetries": 0}}
    });
    let mut script = vec![
        json!({"text": [format!("First answer: {words}")], "usage": {"input": 40, "output": 5}}),
    ];
    script.extend((0..failures).map(|_| json!({"status": 500})));
    script.push(
        json!({"text": [format!("Second answer: {words}")], "usage": {"input": 0, "output": 0}}),
    );
    script.push(json!({"text": ["## Goal\nThreshold summary."]}));
    let mut pi = Pi::start_configured(Value::Array(script), &[], Some(&settings));
    for (id, prompt) in [("p1", "First"), ("p2", "Second")] {
        pi.send(
            json!({"id": id, "type": "prompt", "message": format!("{prompt} prompt: {words}")}),
        );
        pi.wait_type("agent_settled");
    }
    let starts: Vec<Value> = pi
        .seen
        .iter()
        .filter(|e| e["type"] == "compaction_start")
        .cloned()
        .collect();
    // The step that settles writes the file after its events; the next command's answer
    // comes after that write.
    pi.call("s", json!({"type": "get_state"}));
    let written = entries(&pi);
    assert_eq!(pi.finish(), 0);
    let compactions = written
        .into_iter()
        .filter(|e| e["type"] == "compaction")
        .collect();
    (compactions, starts)
}

#[test]
fn the_threshold_check_estimates_the_projected_context_when_it_holds_context_edits() {
    // The retried 500 leaves a context_edit; the answer's missing usage must not read as an
    // empty context: 1.5.2 estimates the whole projected context (prompt and messages).
    let (compactions, starts) = threshold_after_an_answer_without_usage(1);
    assert_eq!(
        starts,
        vec![json!({"type": "compaction_start", "reason": "threshold"})]
    );
    assert_eq!(compactions.len(), 1);
    assert!(
        compactions[0]["tokensBefore"].as_u64().unwrap() > 100,
        "{compactions:?}"
    );
}

#[test]
fn an_answer_reporting_no_usage_is_estimated_from_the_messages_for_the_threshold() {
    let (compactions, starts) = threshold_after_an_answer_without_usage(0);
    assert_eq!(
        starts,
        vec![json!({"type": "compaction_start", "reason": "threshold"})]
    );
    assert_eq!(compactions.len(), 1);
    assert!(
        compactions[0]["tokensBefore"].as_u64().unwrap() > 100,
        "{compactions:?}"
    );
}
