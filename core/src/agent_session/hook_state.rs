//! The session's side of [`HookState`]: what the extensions' getters read, computed by the
//! machine as it emits each hook point (see [`crate::agent::hook_state`] for why), and Pi's
//! `getContextUsage`, which RPC's `get_session_stats` reports too.

use serde_json::{json, Value};

use crate::agent::hook_state::{EntriesSince, HookState, SessionState};
use crate::agent::Effect;
use crate::compaction::prepare::projected_tokens;
use crate::compaction::tokens::calculate_context_tokens;
use crate::message::AgentMessage;
use crate::session::entry::SessionEntry;

use super::SessionMachine;

impl SessionMachine {
    /// Pushes a hook point of the session's own, with the state its getters read now.
    pub(super) fn push_hook(
        &mut self,
        call: crate::agent::CallId,
        payload: crate::agent::hooks::HookPayload,
    ) {
        let state = Some(Box::new(self.hook_state()));
        self.out.effects.push(Effect::Hook {
            call,
            payload,
            state,
        });
    }

    /// Gives the agent's hook points from `first` on in this step's effects the state their
    /// getters read, once the step's events are processed (the messages they ended persisted,
    /// as Pi's session has them when its extensions are asked), and the calls of the tools
    /// that read the session ([`SessionMachine::set_context_tools`]) the same state. A tool's
    /// call alone does not count its entries as sent: only a hook point moves the mirror on, so
    /// the next one carries them again whoever saw the call.
    pub(super) fn fill_hook_states(&mut self, first: usize) {
        let hooks = self.out.effects[first..]
            .iter()
            .any(|e| matches!(e, Effect::Hook { state: None, .. }));
        let tools = self.out.effects[first..].iter().any(|e| {
            matches!(e, Effect::RunTool { state: None, tool, .. } if self.context_tools.contains(tool))
        });
        if !hooks && !tools {
            return;
        }
        let state = self.state_now();
        for effect in &mut self.out.effects[first..] {
            match effect {
                Effect::Hook {
                    state: slot @ None, ..
                } => *slot = Some(Box::new(state.clone())),
                Effect::RunTool {
                    state: slot @ None,
                    tool,
                    ..
                } if self.context_tools.contains(tool) => *slot = Some(Box::new(state.clone())),
                _ => {}
            }
        }
        if hooks {
            self.mirrored_entries = self.tree.entries().len();
        }
    }

    /// Tells the machine which custom tools read the session through their context (an
    /// extension host's registered tools): their calls carry the state a hook point's would.
    pub fn set_context_tools(&mut self, names: Vec<String>) {
        self.context_tools = names;
    }

    /// The state the getters read now; its entries are those appended since the previous hook
    /// point's (all of them at the first).
    pub(super) fn hook_state(&mut self) -> HookState {
        let state = self.state_now();
        self.mirrored_entries = self.tree.entries().len();
        state
    }

    /// The state the getters read now, its entries those appended since the previous hook
    /// point's, not counted as sent.
    fn state_now(&self) -> HookState {
        let entries = self.tree.entries();
        let from = self.mirrored_entries.min(entries.len());
        let appended = entries[from..]
            .iter()
            // An entry that would not serialise keeps its place, so later ones keep theirs.
            .map(|e| serde_json::to_value(e).unwrap_or(Value::Null))
            .collect();
        let agent = &self.agent;
        let (steering, follow_up) = self.queued_texts();
        HookState {
            model: agent.model().clone(),
            thinking_level: agent.thinking_level(),
            active_tools: agent.active_tool_names(),
            all_tools: self.all_tools(),
            system_prompt: agent.system_prompt(),
            is_idle: !self.run_active && !self.is_compacting(),
            has_pending_messages: !steering.is_empty() || !follow_up.is_empty(),
            pending_messages: agent
                .peek_queued_messages()
                .into_iter()
                .chain(agent.held_messages().iter().cloned())
                .collect(),
            context_usage: self.context_usage(),
            session: SessionState {
                id: self.tree.id().to_owned(),
                name: self.tree.name(),
                leaf_id: self.tree.leaf_id().map(str::to_owned),
                header: serde_json::to_value(self.tree.header()).unwrap_or(Value::Null),
                entries: EntriesSince {
                    from,
                    entries: appended,
                },
            },
        }
    }

    /// Pi 1.5's `getContextUsage`: unknown (`null`s) after a compaction until an assistant message
    /// the context still holds (not aborted, not failed) reports usage, else
    /// `estimateProjectedContextTokens` over the context as the session's entries project it.
    pub fn context_usage(&self) -> Option<Value> {
        let context_window = self.agent().model().context_window;
        if context_window == 0 {
            return None;
        }
        let tree = self.tree();
        let branch = tree.branch_path(None);
        let compaction = branch
            .iter()
            .rposition(|e| matches!(e, SessionEntry::Compaction(_)));
        if let Some(index) = compaction {
            let after = &branch[index + 1..];
            // An edit follows its target, so the edits of what follows the compaction follow it too;
            // the latest one of an entry decides whether the context still holds it.
            let omitted = |id: &str| {
                after.iter().rev().find_map(|e| match e {
                    SessionEntry::ContextEdit(edit) if edit.target_id == id => {
                        Some(edit.replacement.is_none())
                    }
                    _ => None,
                }) == Some(true)
            };
            let reported = after.iter().any(|entry| match entry.message() {
                Some(AgentMessage::Assistant(a)) => {
                    !a.stop_reason.ends_run()
                        && calculate_context_tokens(&a.usage) > 0
                        && !omitted(entry.id())
                }
                _ => false,
            });
            if !reported {
                return Some(
                    json!({"tokens": null, "contextWindow": context_window, "percent": null}),
                );
            }
        }
        let tokens = projected_tokens(&branch, &tree.context().into_messages());
        // Token counts stay far below 2^53, where the conversion is exact.
        #[allow(clippy::cast_precision_loss)]
        let percent = tokens as f64 / context_window as f64 * 100.0;
        Some(json!({"tokens": tokens, "contextWindow": context_window, "percent": percent}))
    }
}
