//! The session tree as Pi's SessionManager behaves (ca-test/session-manager/*, the behaviour
//! digest §3): appends, the lazy-flush rule, labels, branching, summaries, compaction in the
//! context, branched sessions, migrations, torn lines, and very deep sessions.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use pi_core::message::{AgentMessage, AssistantMessage, ContentBlock, UserContent, UserMessage};
use pi_core::session::entry::SessionEntry;
use pi_core::session::file::{parse_session, whole_file};
use pi_core::session::ids::IdGenerator;
use pi_core::session::tree::{Persist, SessionTree};
use serde_json::json;

fn user(text: &str) -> AgentMessage {
    AgentMessage::User(UserMessage::from_text(text, Vec::new(), 1))
}

fn assistant(text: &str) -> AgentMessage {
    AgentMessage::Assistant(AssistantMessage {
        content: vec![ContentBlock::text(text)],
        provider: "mock".into(),
        model: "mock-model".into(),
        ..AssistantMessage::default()
    })
}

fn texts(tree: &SessionTree) -> Vec<String> {
    tree.context()
        .messages
        .iter()
        .map(|m| match &**m {
            AgentMessage::User(u) => format!(
                "user:{}",
                match &u.content {
                    UserContent::Text(t) => t.clone(),
                    UserContent::Blocks(b) => match &b[0] {
                        ContentBlock::Text(t) => t.text.clone(),
                        _ => String::new(),
                    },
                }
            ),
            AgentMessage::Assistant(a) => match &a.content[0] {
                ContentBlock::Text(t) => format!("assistant:{}", t.text),
                _ => "assistant".into(),
            },
            AgentMessage::CompactionSummary(c) => format!("compaction:{}", c.summary),
            AgentMessage::BranchSummary(b) => format!("branch:{}", b.summary),
            AgentMessage::Custom(c) => format!("custom:{}", c.custom_type),
            other => other.role().to_owned(),
        })
        .collect()
}

struct Session {
    tree: SessionTree,
    ids: IdGenerator,
    now: u64,
}

impl Session {
    fn new() -> Self {
        let mut ids = IdGenerator::new(42);
        let tree = SessionTree::new("/work/project", 1_795_322_284_614, &mut ids, None);
        Session {
            tree,
            ids,
            now: 1_795_322_284_614,
        }
    }

    fn tick(&mut self) -> u64 {
        self.now += 10;
        self.now
    }

    fn say(&mut self, message: AgentMessage) -> (String, Persist) {
        let now = self.tick();
        self.tree.append_message(message, now, &mut self.ids)
    }

    /// A compaction of `tokens_before` tokens keeping from `kept`, with no details or usage.
    fn compact(&mut self, summary: &str, kept: Option<&str>, tokens_before: u64) {
        let now = self.tick();
        self.tree.append_compaction(
            summary,
            kept,
            tokens_before,
            None,
            None,
            None,
            now,
            &mut self.ids,
        );
    }
}

#[test]
fn appends_chain_and_flush_from_the_first_user_message() {
    let mut s = Session::new();
    let now = s.tick();
    let (model, persist) = s
        .tree
        .append_model_change("mock", "mock-model", now, &mut s.ids);
    assert_eq!(persist, Persist::Nothing);
    // Pi 1.5 (`_hasConversation`): the first user message writes everything at once.
    let (u, persist) = s.say(user("hi"));
    assert_eq!(persist, Persist::All, "the first user message writes all");
    assert_eq!(s.tree.entry(&u).unwrap().parent_id(), Some(model.as_str()));
    let (a, persist) = s.say(assistant("hello"));
    assert_eq!(persist, Persist::Last, "then one entry at a time");
    assert_eq!(s.tree.leaf_id(), Some(a.as_str()));
    assert_eq!(s.tree.entry(&model).unwrap().parent_id(), None);
    assert_eq!(s.tree.header().version, Some(3));
    assert_eq!(
        s.tree.entry(&u).unwrap().timestamp(),
        "2026-11-22T04:38:04.634Z"
    );
}

#[test]
fn labels_latest_wins_and_clearing_omits_the_field() {
    let mut s = Session::new();
    let (u, _) = s.say(user("hi"));
    let now = s.tick();
    let (l1, _) = s
        .tree
        .append_label_change(&u, Some("first"), now, &mut s.ids)
        .unwrap();
    assert_eq!(
        s.tree.leaf_id(),
        Some(l1.as_str()),
        "labelling moves the leaf onto the label entry"
    );
    let now = s.tick();
    s.tree
        .append_label_change(&u, Some("second"), now, &mut s.ids)
        .unwrap();
    assert_eq!(s.tree.label(&u).unwrap().label, "second");
    let now = s.tick();
    let (cleared, _) = s
        .tree
        .append_label_change(&u, None, now, &mut s.ids)
        .unwrap();
    assert!(s.tree.label(&u).is_none());
    let line = pi_core::json::to_string(s.tree.entry(&cleared).unwrap()).unwrap();
    assert!(!line.contains("\"label\":"), "{line}");
    let now = s.tick();
    let error = s
        .tree
        .append_label_change("nope1234", Some("x"), now, &mut s.ids)
        .unwrap_err();
    assert_eq!(error.to_string(), "Entry nope1234 not found");
    assert_eq!(
        texts(&s.tree),
        ["user:hi"],
        "labels never reach the context"
    );
}

#[test]
fn branching_moves_the_leaf_and_the_context_follows_the_path() {
    let mut s = Session::new();
    let (u1, _) = s.say(user("one"));
    s.say(assistant("a1"));
    s.say(user("two"));
    s.say(assistant("a2"));
    s.tree.branch(&u1).unwrap();
    let (alt, _) = s.say(assistant("alternative"));
    assert_eq!(s.tree.entry(&alt).unwrap().parent_id(), Some(u1.as_str()));
    assert_eq!(texts(&s.tree), ["user:one", "assistant:alternative"]);
    assert_eq!(s.tree.children(Some(&u1)).len(), 2);
    assert_eq!(
        s.tree.branch("missing").unwrap_err().to_string(),
        "Entry missing not found"
    );

    s.tree.reset_leaf();
    assert!(
        texts(&s.tree).is_empty(),
        "before the first entry the context is empty"
    );
    let (root, _) = s.say(user("fresh root"));
    assert_eq!(s.tree.entry(&root).unwrap().parent_id(), None);
    assert_eq!(s.tree.children(None).len(), 2);
}

#[test]
fn branch_summaries_attach_at_the_branch_point_from_the_leaf_left() {
    let mut s = Session::new();
    let (u1, _) = s.say(user("one"));
    let (a1, _) = s.say(assistant("a1"));
    let now = s.tick();
    let (summary, _) = s
        .tree
        .branch_with_summary(
            Some(&u1),
            "explored X",
            Some(json!({"readFiles": []})),
            None,
            None,
            now,
            &mut s.ids,
        )
        .unwrap();
    let SessionEntry::BranchSummary(entry) = s.tree.entry(&summary).unwrap() else {
        panic!()
    };
    assert_eq!(entry.parent_id.as_deref(), Some(u1.as_str()));
    // Pi's `fromId` is the leaf left behind (`root` with none).
    assert_eq!(entry.from_id, a1);
    assert_eq!(texts(&s.tree), ["user:one", "branch:explored X"]);

    let now = s.tick();
    let (root_summary, _) = s
        .tree
        .branch_with_summary(None, "from the top", None, None, None, now, &mut s.ids)
        .unwrap();
    let SessionEntry::BranchSummary(entry) = s.tree.entry(&root_summary).unwrap() else {
        panic!()
    };
    assert_eq!(entry.parent_id, None);
    assert_eq!(entry.from_id, summary);
    s.tree.reset_leaf();
    let now = s.tick();
    let (from_nothing, _) = s
        .tree
        .branch_with_summary(None, "nothing left", None, None, None, now, &mut s.ids)
        .unwrap();
    let SessionEntry::BranchSummary(entry) = s.tree.entry(&from_nothing).unwrap() else {
        panic!()
    };
    assert_eq!(entry.from_id, "root");
}

#[test]
fn the_latest_compaction_replaces_what_it_summarised() {
    let mut s = Session::new();
    let now = s.tick();
    s.tree.append_thinking_level_change("high", now, &mut s.ids);
    s.say(user("one"));
    s.say(assistant("a1"));
    let (kept, _) = s.say(user("two"));
    s.say(assistant("a2"));
    s.compact("first summary", Some(&kept), 1000);
    s.say(user("three"));
    assert_eq!(
        texts(&s.tree),
        [
            "compaction:first summary",
            "user:two",
            "assistant:a2",
            "user:three"
        ]
    );
    let (kept2, _) = s.say(assistant("a3"));
    s.compact("second summary", Some(&kept2), 2000);
    assert_eq!(
        texts(&s.tree),
        ["compaction:second summary", "assistant:a3"]
    );
    s.compact("lost anchor", Some("notonpath"), 3000);
    assert_eq!(
        texts(&s.tree),
        ["compaction:lost anchor"],
        "an anchor off the path keeps nothing"
    );
    assert_eq!(s.tree.context().thinking_level, "high");
}

#[test]
fn model_and_custom_messages_come_from_the_path() {
    let mut s = Session::new();
    let now = s.tick();
    s.tree
        .append_model_change("anthropic", "claude", now, &mut s.ids);
    assert_eq!(s.tree.context().model.unwrap().model_id, "claude");
    s.say(user("hi"));
    s.say(assistant("hello"));
    assert_eq!(
        s.tree.context().model.unwrap().provider,
        "mock",
        "an assistant message sets the model"
    );
    let now = s.tick();
    s.tree
        .append_custom_entry("state", Some(json!({"n": 1})), now, &mut s.ids);
    let now = s.tick();
    s.tree.append_custom_message_entry(
        "note",
        UserContent::Text("see".into()),
        true,
        None,
        now,
        &mut s.ids,
    );
    assert_eq!(
        texts(&s.tree),
        ["user:hi", "assistant:hello", "custom:note"]
    );
    let now = s.tick();
    s.tree
        .append_session_info("  My session  ", now, &mut s.ids);
    assert_eq!(s.tree.name().as_deref(), Some("My session"));
    let now = s.tick();
    s.tree.append_session_info("   ", now, &mut s.ids);
    assert_eq!(s.tree.name(), None, "an empty name clears it");
}

#[test]
fn the_tree_sorts_children_by_time_and_keeps_orphans_as_roots() {
    let text = concat!(
        r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#,
        "\n",
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"a","timestamp":1}}"#,
        "\n",
        r#"{"type":"message","id":"c","parentId":"a","timestamp":"2026-01-01T00:00:09.000Z","message":{"role":"user","content":"c","timestamp":1}}"#,
        "\n",
        r#"{"type":"message","id":"b","parentId":"a","timestamp":"2026-01-01T00:00:05.000Z","message":{"role":"user","content":"b","timestamp":1}}"#,
        "\n",
        r#"{"type":"message","id":"o","parentId":"gone","timestamp":"2026-01-01T00:00:07.000Z","message":{"role":"user","content":"o","timestamp":1}}"#,
        "\n",
        r#"{"type":"label","id":"l","parentId":"o","timestamp":"2026-01-01T00:00:08.000Z","targetId":"b","label":"keep"}"#,
        "\n",
    );
    let parsed = parse_session(text, &mut IdGenerator::new(0)).unwrap();
    let tree = SessionTree::from_entries(parsed.header, parsed.entries, true);
    let t = tree.tree();
    let ids = |list: &[usize]| {
        list.iter()
            .map(|&i| tree.entries()[i].id().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&t.roots), ["a", "o"]);
    assert_eq!(ids(&t.nodes[0].children), ["b", "c"]);
    assert_eq!(t.nodes[2].label.as_ref().unwrap().label, "keep");
    assert_eq!(tree.leaf_id(), Some("l"));
}

#[test]
fn a_branched_session_keeps_the_path_and_its_labels() {
    let mut s = Session::new();
    let (u1, _) = s.say(user("one"));
    let (a1, _) = s.say(assistant("a1"));
    let now = s.tick();
    s.tree
        .append_label_change(&u1, Some("start"), now, &mut s.ids)
        .unwrap();
    let (u2, _) = s.say(user("two"));
    let now = s.tick();
    s.tree
        .append_label_change(&u2, Some("off path"), now, &mut s.ids)
        .unwrap();
    let now = s.tick();
    let branched = s
        .tree
        .branched(&a1, now, &mut s.ids, Some("/old.jsonl".into()))
        .unwrap();
    let kinds: Vec<&str> = branched.entries().iter().map(SessionEntry::kind).collect();
    assert_eq!(kinds, ["message", "message", "label"]);
    assert_eq!(branched.label(&u1).unwrap().label, "start");
    assert!(branched.label(&u2).is_none());
    assert_eq!(branched.entries()[2].parent_id(), Some(a1.as_str()));
    assert_eq!(
        branched.header().parent_session.as_deref(),
        Some("/old.jsonl")
    );
    assert_ne!(branched.id(), s.tree.id());
    assert!(s.tree.branched("zzzzzzzz", now, &mut s.ids, None).is_err());
}

#[test]
fn v1_files_are_migrated_to_a_tree() {
    let text = concat!(
        r#"{"type":"session","id":"old","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#,
        "\n",
        r#"{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#,
        "\n",
        r#"{"type":"message","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"hookMessage","customType":"x","content":"c","display":true,"timestamp":2}}"#,
        "\n",
        r#"{"type":"compaction","timestamp":"2025-01-01T00:00:03.000Z","summary":"s","firstKeptEntryIndex":2,"tokensBefore":5}"#,
        "\n",
    );
    let parsed = parse_session(text, &mut IdGenerator::new(3)).unwrap();
    assert!(parsed.migrated);
    assert_eq!(parsed.header.version, Some(3));
    let e = &parsed.entries;
    assert_eq!(e[0].parent_id(), None);
    assert_eq!(e[1].parent_id(), Some(e[0].id()));
    assert!(
        matches!(e[1].message(), Some(AgentMessage::Custom(_))),
        "hookMessage became custom"
    );
    let SessionEntry::Compaction(c) = &e[2] else {
        panic!("{:?}", e[2])
    };
    assert_eq!(c.first_kept_entry_id, e[1].id());
    assert!(!pi_core::json::to_string(&e[2])
        .unwrap()
        .contains("firstKeptEntryIndex"));
}

#[test]
fn a_torn_last_line_is_skipped_and_reported() {
    let good = concat!(
        r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}"#,
        "\n",
        r#"{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"a","timestamp":1}}"#,
        "\n",
    );
    let torn = format!(
        "{good}{}",
        r#"{"type":"message","id":"b","parentId":"a","timest"#
    );
    let parsed = parse_session(&torn, &mut IdGenerator::new(0)).unwrap();
    assert_eq!(parsed.entries.len(), 1);
    assert_eq!(parsed.problems.len(), 1);
    assert_eq!(parsed.problems[0].line, 3);
    assert!(
        parsed.problems[0].message.starts_with("skipped: EOF"),
        "{:?}",
        parsed.problems
    );
    assert_eq!(whole_file(&parsed.header, &parsed.entries), good);

    let odd = format!(
        "{good}{}\n",
        r#"{"type":"message","id":"c","parentId":"a","timestamp":"x","message":{"role":"user"}}"#
    );
    let parsed = parse_session(&odd, &mut IdGenerator::new(0)).unwrap();
    assert!(
        matches!(parsed.entries[1], SessionEntry::Other(_)),
        "kept, not dropped"
    );
    assert_eq!(whole_file(&parsed.header, &parsed.entries), odd);

    assert!(parse_session("", &mut IdGenerator::new(0)).is_err());
    assert!(parse_session("{\"type\":\"message\"}\n", &mut IdGenerator::new(0)).is_err());
}

#[test]
fn a_hundred_thousand_entry_chain_needs_no_recursion() {
    let mut s = Session::new();
    for i in 0..50_000 {
        s.say(user(&format!("u{i}")));
        s.say(assistant(&format!("a{i}")));
    }
    assert_eq!(s.tree.entries().len(), 100_000);
    let tree = s.tree.tree();
    assert_eq!(tree.roots.len(), 1);
    assert_eq!(s.tree.branch_path(None).len(), 100_000);
    assert_eq!(s.tree.context().messages.len(), 100_000);
    drop(tree);
}

#[test]
fn context_edits_apply_latest_first_along_the_branch_only() {
    let mut s = Session::new();
    let (u1, _) = s.say(user("one"));
    let (a1, _) = s.say(assistant("a1"));
    let (u2, _) = s.say(user("two"));
    let now = s.tick();
    // A string replaces an assistant's content with one text block.
    s.tree
        .append_context_edit(&a1, Some(json!({"content": "short"})), now, &mut s.ids)
        .unwrap();
    assert_eq!(texts(&s.tree), ["user:one", "assistant:short", "user:two"]);
    // The latest edit of a target wins; null omits it.
    let now = s.tick();
    let (omit, _) = s
        .tree
        .append_context_edit(&a1, None, now, &mut s.ids)
        .unwrap();
    assert_eq!(texts(&s.tree), ["user:one", "user:two"]);
    let line = serde_json::to_value(s.tree.entry(&omit).unwrap()).unwrap();
    assert_eq!(line["type"], "context_edit");
    assert_eq!(line["replacement"], serde_json::Value::Null);
    assert_eq!(line["targetId"], a1.as_str());
    // Block content replaces a user message's content as given.
    let now = s.tick();
    s.tree
        .append_context_edit(
            &u2,
            Some(json!({"content": [{"type": "text", "text": "two, edited"}]})),
            now,
            &mut s.ids,
        )
        .unwrap();
    assert_eq!(texts(&s.tree), ["user:one", "user:two, edited"]);

    // Edits belong to their branch: back at the first user message, nothing is edited.
    s.tree.branch(&u1).unwrap();
    s.say(assistant("another a1"));
    assert_eq!(texts(&s.tree), ["user:one", "assistant:another a1"]);
    // And an entry off the branch cannot be edited.
    let now = s.tick();
    assert!(s
        .tree
        .append_context_edit(&u2, None, now, &mut s.ids)
        .is_err());

    // The file keeps the edits and the entries they edit, and reads back byte for byte.
    let file = whole_file(s.tree.header(), s.tree.entries());
    let read = parse_session(&file, &mut IdGenerator::new(0)).unwrap();
    assert!(read.problems.is_empty());
    let kinds: Vec<&str> = read.entries.iter().map(SessionEntry::kind).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "context_edit").count(), 3);
    assert_eq!(whole_file(&read.header, &read.entries), file);
}
