//! What the read-only commands report (`get_state`, `get_session_stats`, `get_fork_messages`,
//! `get_last_assistant_text`), computed from the session as Pi's `AgentSession` getters do.

use pi_core::agent::QueueMode;
use pi_core::agent_session::SessionMachine;
use pi_core::message::{AgentMessage, ContentBlock, StopReason, Usage};
use pi_core::session::entry::SessionEntry;
use pi_core::session::tree::SessionTree;
use pi_effects::agent_session::AgentSession;
use pi_effects::driver::Interpreter;
use serde_json::{json, Map, Value};

/// Pi's queue-mode spelling.
pub fn queue_mode_name(mode: QueueMode) -> &'static str {
    match mode {
        QueueMode::OneAtATime => "one-at-a-time",
        QueueMode::All => "all",
    }
}

/// `get_state`'s data (`RpcSessionState`); absent values are left out, as `JSON.stringify` does.
pub fn session_state<I: Interpreter>(session: &AgentSession<I>) -> Value {
    let machine = session.machine();
    let agent = machine.agent();
    let (steering, follow_up) = machine.queued_texts();
    let mut state = Map::new();
    state.insert("model".into(), to_value(agent.model()));
    state.insert(
        "thinkingLevel".into(),
        json!(agent.thinking_level().as_str()),
    );
    state.insert("isStreaming".into(), json!(agent.is_streaming()));
    state.insert("isCompacting".into(), json!(machine.is_compacting()));
    state.insert(
        "steeringMode".into(),
        json!(queue_mode_name(machine.steering_mode())),
    );
    state.insert(
        "followUpMode".into(),
        json!(queue_mode_name(machine.follow_up_mode())),
    );
    if let Some(file) = session.file() {
        state.insert("sessionFile".into(), json!(file.display().to_string()));
    }
    state.insert("sessionId".into(), json!(machine.tree().id()));
    if let Some(name) = machine.session_name() {
        state.insert("sessionName".into(), json!(name));
    }
    state.insert(
        "autoCompactionEnabled".into(),
        json!(machine.auto_compaction_enabled()),
    );
    state.insert("messageCount".into(), json!(agent.messages().len()));
    state.insert(
        "pendingMessageCount".into(),
        json!(steering.len() + follow_up.len()),
    );
    Value::Object(state)
}

/// `get_session_stats`'s data (Pi 1.5's `getSessionStats`): counted over every entry of the
/// file, so that what a retry omitted from the context, a compaction summarised away or an
/// abandoned branch spent is still counted, with the tokens spent outside the conversation added:
/// `usage` entries (cache warming), the summaries of `compaction` and `branch_summary` entries,
/// and tool results that report a `usage` of their own.
pub fn session_stats<I: Interpreter>(session: &AgentSession<I>) -> Value {
    let machine = session.machine();
    let entries = machine.tree().entries();
    let messages: Vec<&AgentMessage> = entries.iter().filter_map(SessionEntry::message).collect();
    let count = |role: &str| messages.iter().filter(|m| m.role() == role).count();
    let (mut tool_calls, mut input, mut output, mut cache_read, mut cache_write) = (0, 0, 0, 0, 0);
    let mut cost = 0.0;
    let mut add = |usage: &Usage| {
        input += usage.input;
        output += usage.output;
        cache_read += usage.cache_read;
        cache_write += usage.cache_write;
        cost += usage.cost.total;
    };
    for entry in entries {
        match entry {
            SessionEntry::Usage(spent) => add(&spent.usage),
            SessionEntry::Compaction(c) => {
                summary_usage(c.usage.as_ref()).iter().for_each(&mut add)
            }
            SessionEntry::BranchSummary(b) => {
                summary_usage(b.usage.as_ref()).iter().for_each(&mut add);
            }
            SessionEntry::Message(m) => match &m.message {
                AgentMessage::Assistant(assistant) => {
                    tool_calls += assistant
                        .content
                        .iter()
                        .filter(|b| matches!(b, ContentBlock::ToolCall(_)))
                        .count();
                    add(&assistant.usage);
                }
                AgentMessage::ToolResult(result) => {
                    summary_usage(result.usage.as_ref())
                        .iter()
                        .for_each(&mut add);
                }
                _ => {}
            },
            _ => {}
        }
    }
    let mut stats = Map::new();
    if let Some(file) = session.file() {
        stats.insert("sessionFile".into(), json!(file.display().to_string()));
    }
    stats.insert("sessionId".into(), json!(machine.tree().id()));
    stats.insert("userMessages".into(), json!(count("user")));
    stats.insert("assistantMessages".into(), json!(count("assistant")));
    stats.insert("toolCalls".into(), json!(tool_calls));
    stats.insert("toolResults".into(), json!(count("toolResult")));
    stats.insert("totalMessages".into(), json!(messages.len()));
    stats.insert(
        "tokens".into(),
        json!({
            "input": input,
            "output": output,
            "cacheRead": cache_read,
            "cacheWrite": cache_write,
            "total": input + output + cache_read + cache_write,
        }),
    );
    stats.insert("cost".into(), json!(cost));
    if let Some(usage) = machine.context_usage() {
        stats.insert("contextUsage".into(), usage);
    }
    Value::Object(stats)
}

/// A usage kept as JSON (a summary's, or a tool result's); one this build cannot read counts
/// nothing.
fn summary_usage(usage: Option<&Value>) -> Option<Usage> {
    usage.and_then(|u| serde_json::from_value(u.clone()).ok())
}

/// `get_fork_messages`: every user message of the file with text, in file order.
pub fn fork_messages(machine: &SessionMachine) -> Value {
    let messages: Vec<Value> = machine
        .tree()
        .entries()
        .iter()
        .filter_map(|entry| match entry {
            SessionEntry::Message(m) => match &m.message {
                AgentMessage::User(user) => {
                    let text = user.content.text();
                    (!text.is_empty()).then(|| json!({"entryId": m.id, "text": text}))
                }
                _ => None,
            },
            _ => None,
        })
        .collect();
    json!({ "messages": messages })
}

/// `get_last_assistant_text`: the last answer's text, trimmed; `{}` when there is none (Pi's
/// `{text: undefined}`).
pub fn last_assistant_text(machine: &SessionMachine) -> Value {
    let last = machine
        .agent()
        .messages()
        .iter()
        .rev()
        .find_map(|m| match m {
            AgentMessage::Assistant(a)
                if !(a.stop_reason == StopReason::Aborted && a.content.is_empty()) =>
            {
                Some(a)
            }
            _ => None,
        });
    let text: String = last
        .map(|a| {
            a.content
                .iter()
                .filter_map(|b| match b {
                    ContentBlock::Text(t) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    let text = text.trim();
    if text.is_empty() {
        json!({})
    } else {
        json!({ "text": text })
    }
}

/// `get_entries`' data: every entry but the header, in file order, or only those after
/// `since`; `None` when `since` is given and names no entry (any value but an entry's id).
pub fn entries_since(tree: &SessionTree, since: Option<&Value>) -> Option<Value> {
    let entries = tree.entries();
    let start = match since {
        None => 0,
        Some(since) => {
            entries
                .iter()
                .position(|e| Some(e.id()) == since.as_str())?
                + 1
        }
    };
    let listed: Vec<Value> = entries[start..].iter().map(to_value).collect();
    Some(json!({ "entries": listed, "leafId": tree.leaf_id() }))
}

/// The whole `get_tree` response line: `{tree, leafId}`, each node `{entry, children, label?,
/// labelTimestamp?}` (Pi's `getTree`). Spelled out node by node without recursion, since a
/// session's chain of entries may be as deep as it is long.
pub fn tree_response(id: Option<Value>, tree: &SessionTree) -> String {
    enum Step {
        Open(usize),
        Close(usize),
    }
    let shape = tree.tree();
    let entries = tree.entries();
    let mut out = String::from("{");
    if let Some(id) = id {
        out.push_str("\"id\":");
        out.push_str(&json(&id));
        out.push(',');
    }
    out.push_str("\"type\":\"response\",\"command\":\"get_tree\",\"success\":true,");
    out.push_str("\"data\":{\"tree\":[");
    let mut steps: Vec<Step> = shape.roots.iter().rev().map(|&r| Step::Open(r)).collect();
    let mut after_node = false;
    while let Some(step) = steps.pop() {
        match step {
            Step::Open(index) => {
                if after_node {
                    out.push(',');
                }
                out.push_str("{\"entry\":");
                out.push_str(&json(&entries[index]));
                out.push_str(",\"children\":[");
                after_node = false;
                steps.push(Step::Close(index));
                let children = &shape.nodes[index].children;
                steps.extend(children.iter().rev().map(|&c| Step::Open(c)));
            }
            Step::Close(index) => {
                out.push(']');
                if let Some(label) = &shape.nodes[index].label {
                    out.push_str(",\"label\":");
                    out.push_str(&json(&label.label));
                    out.push_str(",\"labelTimestamp\":");
                    out.push_str(&json(&label.timestamp));
                }
                out.push('}');
                after_node = true;
            }
        }
    }
    out.push_str("],\"leafId\":");
    out.push_str(&json(&tree.leaf_id()));
    out.push_str("}}");
    out
}

/// A value spelled as JSON, as output lines spell it (`null` if it cannot be, which Pi's types
/// never are).
fn json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    pi_core::json::to_string(value).unwrap_or_else(|_| "null".into())
}

/// A value as JSON (`null` if it cannot be, which Pi's types never are).
pub fn to_value<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use pi_core::message::{AgentMessage, UserMessage};
    use pi_core::session::ids::IdGenerator;
    use pi_core::session::tree::SessionTree;
    use serde_json::{json, Value};

    use super::{entries_since, tree_response};

    fn user(text: &str) -> AgentMessage {
        AgentMessage::User(UserMessage::from_text(text, Vec::new(), 0))
    }

    #[test]
    fn the_tree_line_holds_branches_and_labels_as_pi_nests_them() {
        let mut ids = IdGenerator::new(7);
        let mut tree = SessionTree::new("/cwd", 1_000, &mut ids, None);
        let (first, _) = tree.append_message(user("one"), 1_000, &mut ids);
        let (second, _) = tree.append_message(user("two"), 2_000, &mut ids);
        tree.branch(&first).unwrap();
        let (other, _) = tree.append_message(user("other"), 3_000, &mut ids);
        tree.append_label_change(&second, Some("kept"), 4_000, &mut ids)
            .unwrap();
        let line: Value = serde_json::from_str(&tree_response(Some(json!(5)), &tree)).unwrap();
        assert_eq!(line["id"], 5);
        assert_eq!(line["command"], "get_tree");
        let root = &line["data"]["tree"][0];
        assert_eq!(root["entry"]["id"], first.as_str());
        let children = root["children"].as_array().unwrap();
        assert_eq!(children[0]["entry"]["id"], second.as_str());
        assert_eq!(children[0]["label"], "kept");
        assert!(children[0]["labelTimestamp"].is_string());
        assert_eq!(children[1]["entry"]["id"], other.as_str());
        assert!(children[1].get("label").is_none());
        // The label entry hangs under `other`, the leaf when it was written.
        assert_eq!(children[1]["children"][0]["entry"]["type"], "label");
        assert_eq!(line["data"]["leafId"], tree.leaf_id().unwrap());
    }

    #[test]
    fn a_chain_deeper_than_any_stack_is_spelled_out() {
        let mut ids = IdGenerator::new(1);
        let mut tree = SessionTree::new("/cwd", 0, &mut ids, None);
        for n in 0..50_000 {
            tree.append_message(user("x"), n, &mut ids);
        }
        let line = tree_response(None, &tree);
        assert_eq!(line.matches("\"children\":[").count(), 50_000);
        let ending = format!("]}}],\"leafId\":\"{}\"}}}}", tree.leaf_id().unwrap());
        assert_eq!(line.matches("\"children\":[]}").count(), 1);
        assert!(line.ends_with(&ending), "{}", &line[line.len() - 80..]);
        assert_eq!(line.matches("]}").count(), 50_000);
    }

    #[test]
    fn entries_since_an_unknown_or_non_string_id_are_refused() {
        let mut ids = IdGenerator::new(3);
        let mut tree = SessionTree::new("/cwd", 0, &mut ids, None);
        let (first, _) = tree.append_message(user("a"), 1, &mut ids);
        tree.append_message(user("b"), 2, &mut ids);
        let after = entries_since(&tree, Some(&json!(first))).unwrap();
        assert_eq!(after["entries"].as_array().unwrap().len(), 1);
        assert!(entries_since(&tree, Some(&json!("missing"))).is_none());
        assert!(entries_since(&tree, Some(&Value::Null)).is_none());
        assert!(entries_since(&tree, Some(&json!(1))).is_none());
    }

    #[test]
    fn the_builtin_commands_data_parses() {
        let commands: Vec<Value> =
            serde_json::from_str(super::super::commands::BUILTIN_COMMANDS).unwrap();
        assert_eq!(commands.len(), 2);
    }
}
