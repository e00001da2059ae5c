//! Session invariants over random histories of appends, branches, leaf resets, labels,
//! compactions and branch summaries: the built context equals a deliberately naive reference
//! model, ids never collide, and files round-trip exactly. 256 cases by default
//! (PROPTEST_CASES for more).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeSet;

use pi_core::message::{AgentMessage, AssistantMessage, ContentBlock, UserContent, UserMessage};
use pi_core::session::file::{parse_session, whole_file};
use pi_core::session::ids::IdGenerator;
use pi_core::session::tree::SessionTree;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    User(u8),
    Assistant(u8),
    Branch(usize),
    ResetLeaf,
    Label(usize, Option<u8>),
    Compact(usize),
    BranchSummary(Option<usize>, u8),
    CustomMessage(u8),
    Model(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => any::<u8>().prop_map(Op::User),
        4 => any::<u8>().prop_map(Op::Assistant),
        2 => any::<usize>().prop_map(Op::Branch),
        1 => Just(Op::ResetLeaf),
        1 => (any::<usize>(), proptest::option::of(any::<u8>())).prop_map(|(t, l)| Op::Label(t, l)),
        1 => any::<usize>().prop_map(Op::Compact),
        1 => (proptest::option::of(any::<usize>()), any::<u8>()).prop_map(|(f, s)| Op::BranchSummary(f, s)),
        1 => any::<u8>().prop_map(Op::CustomMessage),
        1 => any::<u8>().prop_map(Op::Model),
    ]
}

/// The reference: entries as plain records, the context computed the obvious way.
#[derive(Clone, Debug)]
struct Ref {
    id: String,
    parent: Option<String>,
    /// What the entry contributes to the context, if anything.
    message: Option<String>,
    /// For compactions: (summary text, first kept id).
    compaction: Option<(String, String)>,
}

fn reference_context(entries: &[Ref], leaf: Option<&str>) -> Vec<String> {
    let Some(leaf) = leaf else { return Vec::new() };
    let mut path = Vec::new();
    let mut cursor = Some(leaf.to_owned());
    while let Some(id) = cursor {
        let entry = entries.iter().rev().find(|e| e.id == id).unwrap();
        path.insert(0, entry.clone());
        cursor = entry.parent.clone();
    }
    let last_compaction = path.iter().rposition(|e| e.compaction.is_some());
    match last_compaction {
        None => path.iter().filter_map(|e| e.message.clone()).collect(),
        Some(at) => {
            let (summary, first_kept) = path[at].compaction.clone().unwrap();
            let mut out = vec![format!("compaction:{summary}")];
            if let Some(start) = path[..at].iter().position(|e| e.id == first_kept) {
                out.extend(path[start..at].iter().filter_map(|e| e.message.clone()));
            }
            out.extend(path[at + 1..].iter().filter_map(|e| e.message.clone()));
            out
        }
    }
}

fn describe(message: &AgentMessage) -> String {
    match message {
        AgentMessage::User(u) => match &u.content {
            UserContent::Blocks(b) => match &b[0] {
                ContentBlock::Text(t) => format!("user:{}", t.text),
                _ => "user".into(),
            },
            UserContent::Text(t) => format!("user:{t}"),
        },
        AgentMessage::Assistant(a) => match &a.content[0] {
            ContentBlock::Text(t) => format!("assistant:{}", t.text),
            _ => "assistant".into(),
        },
        AgentMessage::CompactionSummary(c) => format!("compaction:{}", c.summary),
        AgentMessage::BranchSummary(b) => format!("branch:{}", b.summary),
        AgentMessage::Custom(c) => format!("custom:{}", c.custom_type),
        other => other.role().to_owned(),
    }
}

fn run(ops: &[Op]) -> (SessionTree, Vec<Ref>) {
    let mut ids = IdGenerator::new(99);
    let mut now = 1_700_000_000_000;
    let mut tree = SessionTree::new("/w", now, &mut ids, None);
    let mut model: Vec<Ref> = Vec::new();
    for op in ops {
        now += 1;
        let leaf = tree.leaf_id().map(str::to_owned);
        let pick = |i: usize| model.get(i % model.len().max(1)).map(|r| r.id.clone());
        let (id, message, compaction) = match op {
            Op::User(n) => {
                let m =
                    AgentMessage::User(UserMessage::from_text(format!("u{n}"), Vec::new(), now));
                (
                    tree.append_message(m, now, &mut ids).0,
                    Some(format!("user:u{n}")),
                    None,
                )
            }
            Op::Assistant(n) => {
                let m = AgentMessage::Assistant(AssistantMessage {
                    content: vec![ContentBlock::text(format!("a{n}"))],
                    ..AssistantMessage::default()
                });
                (
                    tree.append_message(m, now, &mut ids).0,
                    Some(format!("assistant:a{n}")),
                    None,
                )
            }
            Op::Branch(i) => {
                if let Some(target) = pick(*i) {
                    tree.branch(&target).unwrap();
                }
                continue;
            }
            Op::ResetLeaf => {
                tree.reset_leaf();
                continue;
            }
            Op::Label(i, label) => {
                let Some(target) = pick(*i) else { continue };
                let text = label.map(|l| format!("l{l}"));
                (
                    tree.append_label_change(&target, text.as_deref(), now, &mut ids)
                        .unwrap()
                        .0,
                    None,
                    None,
                )
            }
            Op::Compact(i) => {
                let path = tree.branch_path(None);
                let first = path
                    .get(i % path.len().max(1))
                    .map_or("none".to_owned(), |e| e.id().to_owned());
                let summary = format!("c{now}");
                let id = tree
                    .append_compaction(&summary, Some(&first), 1, None, None, None, now, &mut ids)
                    .0;
                (id, None, Some((summary, first)))
            }
            Op::BranchSummary(from, n) => {
                let from = from.and_then(pick);
                let summary = if n % 5 == 0 {
                    String::new()
                } else {
                    format!("b{n}")
                };
                let id = tree
                    .branch_with_summary(from.as_deref(), &summary, None, None, None, now, &mut ids)
                    .unwrap()
                    .0;
                let message = (!summary.is_empty()).then(|| format!("branch:{summary}"));
                model.push(Ref {
                    id,
                    parent: from,
                    message,
                    compaction: None,
                });
                continue;
            }
            Op::CustomMessage(n) => {
                let kind = format!("k{n}");
                let id = tree
                    .append_custom_message_entry(
                        &kind,
                        UserContent::Text("x".into()),
                        true,
                        None,
                        now,
                        &mut ids,
                    )
                    .0;
                (id, Some(format!("custom:{kind}")), None)
            }
            Op::Model(n) => (
                tree.append_model_change("p", &format!("m{n}"), now, &mut ids)
                    .0,
                None,
                None,
            ),
        };
        model.push(Ref {
            id,
            parent: leaf,
            message,
            compaction,
        });
    }
    (tree, model)
}

#[path = "support/properties.rs"]
mod cases;
use cases::config;

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_context_equals_the_reference_model(ops in proptest::collection::vec(op(), 0..60)) {
        let (tree, model) = run(&ops);
        let ours: Vec<String> = tree.context().messages.iter().map(|m| describe(m)).collect();
        prop_assert_eq!(ours, reference_context(&model, tree.leaf_id()));
    }

    #[test]
    fn ids_never_collide(ops in proptest::collection::vec(op(), 0..120)) {
        let (tree, _) = run(&ops);
        let ids: BTreeSet<&str> = tree.entries().iter().map(|e| e.id()).collect();
        prop_assert_eq!(ids.len(), tree.entries().len());
        prop_assert!(tree.entries().iter().all(|e| e.id().len() == 8));
    }

    #[test]
    fn files_round_trip_exactly(ops in proptest::collection::vec(op(), 0..60)) {
        let (tree, _) = run(&ops);
        let text = whole_file(tree.header(), tree.entries());
        let parsed = parse_session(&text, &mut IdGenerator::new(0)).unwrap();
        prop_assert!(parsed.problems.is_empty());
        prop_assert_eq!(&parsed.entries, &tree.entries().to_vec());
        prop_assert_eq!(whole_file(&parsed.header, &parsed.entries), text);
        let reopened = SessionTree::from_entries(parsed.header, parsed.entries, true);
        let last = tree.entries().last().map(|e| e.id().to_owned());
        prop_assert_eq!(reopened.leaf_id().map(str::to_owned), last.clone());
        if let Some(last) = last {
            let mut moved = tree.clone();
            moved.branch(&last).unwrap();
            prop_assert_eq!(reopened.context(), moved.context());
            prop_assert_eq!(reopened.tree(), moved.tree());
        }
    }
}
