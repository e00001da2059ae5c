//! The state mirror: what the extension host's handlers read through their synchronous getters
//! (`pi.getActiveTools()`, `ctx.model`, `ctx.isIdle()`, `ctx.sessionManager`'s reads,
//! `ctx.getContextUsage()`, `ctx.getSystemPrompt()` ...), kept as Pi's field names in JSON.
//!
//! Two sources feed it. The session's state comes with each hook point ([`HookState`], computed
//! by the session machine as it asks: see `pi_core::agent::hook_state`), so every getter answers
//! what Pi's answers there. What only the program knows (`cwd`, `projectTrusted`, the session
//! file) it sets with [`StateMirror::set`].
//!
//! The host keeps a copy, and an event carries only what changed since the previous event sent:
//! the fields whose value differs and the entries the host lacks. So the session's entries
//! cross once, a hook point where nothing changed costs a few bytes, and an event without
//! handlers in the host (`message_update` above all) costs nothing. The mirror is locked from
//! working out the change until the event is written, so the host applies changes in the order
//! they were worked out and its copy is always the sum of what was sent.

use std::sync::{Arc, Mutex, MutexGuard};

use pi_core::agent::hook_state::HookState;
use serde_json::{json, Map, Value};

use crate::extension::HookPayload;

/// The state the handlers' getters read, shared by a host's extensions. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct StateMirror(Arc<Mutex<Mirror>>);

#[derive(Debug, Default)]
pub(super) struct Mirror {
    /// The fields the program set.
    fields: Map<String, Value>,
    /// The session's entries, as the hook points' states built them up.
    entries: Vec<Value>,
    /// How many of those the host holds as they are here.
    host_entries: usize,
    /// The fields as the host holds them.
    sent: Map<String, Value>,
    /// Why the entries are not the session's: a hook point's entries started past the
    /// mirror's end (a state was missed). Every event fails with it until a state starts the
    /// entries over.
    gap: Option<String>,
}

/// What an event told the host, counted as told once the event is written
/// ([`Mirror::sent`]).
#[derive(Debug)]
pub(super) struct Told {
    fields: Map<String, Value>,
    entries: usize,
}

/// One event's state, as the host's `event` request carries it.
#[derive(Debug, PartialEq)]
pub(super) struct EventState {
    /// The fields that changed (`state`), and those the host must forget (`unset`).
    pub changed: Map<String, Value>,
    pub unset: Vec<String>,
    /// The entries the host lacks, from position `from` (`entries`), if any.
    pub entries: Option<(usize, Vec<Value>)>,
}

impl EventState {
    /// The request's fields: `state`, and `unset` and `entries` when there are any.
    pub fn into_request(self, request: &mut Value) {
        request["state"] = Value::Object(self.changed);
        if !self.unset.is_empty() {
            request["unset"] = json!(self.unset);
        }
        if let Some((from, list)) = self.entries {
            request["entries"] = json!({ "from": from, "list": list });
        }
    }
}

impl StateMirror {
    /// Sets `field` (e.g. `"cwd"`, `"projectTrusted"`, `"sessionFile"`) for the events to come.
    /// The session's own state (model, tools, entries ...) comes with the hook points.
    pub fn set(&self, field: &str, value: Value) {
        self.lock().fields.insert(field.to_owned(), value);
    }

    /// Forgets `field`, which the handlers then read as absent.
    pub fn remove(&self, field: &str) {
        self.lock().fields.remove(field);
    }

    /// Takes in a hook point's state, in the order the machine asked: its entries are written
    /// over the mirror's from where they start. A state whose entries start past the mirror's
    /// (the mirror missed a hook point) leaves the entries as they are, and the events from
    /// then on fail with the gap, until a state starts the entries over.
    pub fn observe(&self, state: &HookState) {
        let mut mirror = self.lock();
        let entries = &state.session.entries;
        if entries.apply_to(&mut mirror.entries) {
            mirror.host_entries = mirror.host_entries.min(entries.from);
            if entries.from == 0 {
                mirror.gap = None;
            }
        } else if mirror.gap.is_none() {
            mirror.gap = Some(format!(
                "the session's entries came from {} on, but the extensions' mirror holds {}: a hook point's state was missed",
                entries.from,
                mirror.entries.len()
            ));
        }
    }

    /// Whether `other` is this same mirror (the extensions of one host share it).
    pub fn same(&self, other: &StateMirror) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Mirror> {
        // A panic while it was held left whole values behind.
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Mirror {
    /// What the host must be told for an event about `payload` at the hook point whose state
    /// is `state`, and what it then holds, to be counted as told ([`Mirror::sent`]) once the
    /// event is written: an event that could not be written leaves it to the next one. An
    /// error when the mirror's entries have a gap.
    pub(super) fn for_event(
        &self,
        payload: &HookPayload,
        state: Option<&HookState>,
    ) -> Result<(EventState, Told), String> {
        self.changes(self.full(Some(payload), state))
    }

    /// What the host must be told for a call of one of its tools whose context reads `state`
    /// (none when the call came without one), as [`Mirror::for_event`].
    pub(super) fn for_tool(&self, state: Option<&HookState>) -> Result<(EventState, Told), String> {
        self.changes(self.full(None, state))
    }

    fn changes(&self, full: Map<String, Value>) -> Result<(EventState, Told), String> {
        if let Some(gap) = &self.gap {
            return Err(gap.clone());
        }
        let mut changed = Map::new();
        for (field, value) in &full {
            if self.sent.get(field) != Some(value) {
                changed.insert(field.clone(), value.clone());
            }
        }
        let unset: Vec<String> = self
            .sent
            .keys()
            .filter(|k| !full.contains_key(*k))
            .cloned()
            .collect();
        let entries = (self.host_entries < self.entries.len()).then(|| {
            let from = self.host_entries;
            (from, self.entries[from..].to_vec())
        });
        let told = Told {
            fields: full,
            entries: self.entries.len(),
        };
        let event = EventState {
            changed,
            unset,
            entries,
        };
        Ok((event, told))
    }

    /// Counts an event's state as the host's: it was written.
    pub(super) fn sent(&mut self, told: Told) {
        self.sent = told.fields;
        self.host_entries = told.entries;
    }

    /// Every field the handlers read at this event (a tool's call has no payload).
    fn full(&self, payload: Option<&HookPayload>, state: Option<&HookState>) -> Map<String, Value> {
        let mut full = self.fields.clone();
        // The state serialises its entries as their count (the host keeps them).
        if let Some(Value::Object(session)) = state.and_then(|s| serde_json::to_value(s).ok()) {
            full.extend(session);
        }
        if let Some(HookPayload::BeforeAgentStart { system_prompt, .. }) = payload {
            // The prompt the handlers before this one left.
            full.insert("systemPrompt".into(), json!(system_prompt));
        }
        full
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use pi_core::agent::hook_state::{EntriesSince, SessionState};
    use pi_core::model::ThinkingLevel;
    use pi_core::script::mock_model;

    use super::*;

    fn state(from: usize, ids: &[&str], leaf: &str, idle: bool) -> HookState {
        HookState {
            model: mock_model(),
            thinking_level: ThinkingLevel::Off,
            active_tools: vec!["read".into()],
            all_tools: None,
            system_prompt: "PROMPT".into(),
            is_idle: idle,
            has_pending_messages: false,
            pending_messages: Vec::new(),
            context_usage: None,
            session: SessionState {
                id: "s".into(),
                name: None,
                leaf_id: Some(leaf.into()),
                header: json!({"type": "session"}),
                entries: EntriesSince {
                    from,
                    entries: ids.iter().map(|id| json!({ "id": id })).collect(),
                },
            },
        }
    }

    /// The event's state, counted as written.
    fn told(mirror: &StateMirror, payload: &HookPayload, state: Option<&HookState>) -> EventState {
        let mut mirror = mirror.lock();
        let (event, told) = mirror.for_event(payload, state).unwrap();
        mirror.sent(told);
        event
    }

    fn context() -> HookPayload {
        HookPayload::Context {
            messages: Vec::new(),
        }
    }

    #[test]
    fn an_event_carries_what_changed_since_the_last_one_sent() {
        let mirror = StateMirror::default();
        mirror.set("cwd", json!("/p"));
        let first = state(0, &["a", "b"], "b", true);
        mirror.observe(&first);
        let sent = told(&mirror, &context(), Some(&first));
        assert_eq!(sent.changed["cwd"], json!("/p"));
        assert_eq!(sent.changed["isIdle"], json!(true));
        assert_eq!(sent.changed["activeTools"], json!(["read"]));
        assert_eq!(
            sent.changed["session"],
            json!({"id": "s", "leafId": "b", "header": {"type": "session"}, "entryCount": 2})
        );
        assert_eq!(
            sent.entries,
            Some((0, vec![json!({"id": "a"}), json!({"id": "b"})]))
        );

        // A hook point the host's extensions do not handle still moves the mirror on.
        let unseen = state(2, &["c"], "c", false);
        mirror.observe(&unseen);
        let later = state(3, &["d"], "d", false);
        mirror.observe(&later);
        let sent = told(&mirror, &context(), Some(&later));
        assert_eq!(
            sent.changed.keys().collect::<Vec<_>>(),
            ["isIdle", "session"],
            "only what changed"
        );
        assert_eq!(
            sent.entries,
            Some((2, vec![json!({"id": "c"}), json!({"id": "d"})]))
        );

        let same = told(&mirror, &context(), Some(&later));
        assert!(same.changed.is_empty() && same.unset.is_empty() && same.entries.is_none());
    }

    #[test]
    fn a_new_session_starts_the_hosts_entries_over() {
        let mirror = StateMirror::default();
        let old = state(0, &["a", "b", "c"], "c", false);
        mirror.observe(&old);
        told(&mirror, &context(), Some(&old));
        mirror.observe(&state(0, &["x"], "x", true));
        let grown = state(1, &["y", "z", "w"], "w", true);
        mirror.observe(&grown);
        let sent = told(&mirror, &context(), Some(&grown));
        let ids: Vec<Value> = ["x", "y", "z", "w"]
            .iter()
            .map(|id| json!({ "id": id }))
            .collect();
        assert_eq!(sent.entries, Some((0, ids)));
    }

    #[test]
    fn before_agent_start_shows_the_prompt_the_handlers_before_left() {
        let mirror = StateMirror::default();
        let start = HookPayload::BeforeAgentStart {
            message_type: "user".into(),
            prompt: Some("hi".into()),
            message: None,
            images: Vec::new(),
            system_prompt: "REWRITTEN".into(),
        };
        let at = state(0, &[], "a", false);
        let sent = told(&mirror, &start, Some(&at));
        assert_eq!(sent.changed["systemPrompt"], json!("REWRITTEN"));
        let sent = told(&mirror, &context(), None);
        assert!(sent.unset.contains(&"model".to_owned()), "{:?}", sent.unset);
    }

    #[test]
    fn an_event_not_written_leaves_its_changes_to_the_next() {
        let mirror = StateMirror::default();
        let first = state(0, &["a"], "a", true);
        mirror.observe(&first);
        let (unwritten, _) = mirror.lock().for_event(&context(), Some(&first)).unwrap();
        assert_eq!(unwritten.entries, Some((0, vec![json!({"id": "a"})])));
        let later = state(1, &["b"], "b", true);
        mirror.observe(&later);
        let sent = told(&mirror, &context(), Some(&later));
        assert_eq!(sent.changed["isIdle"], json!(true));
        assert_eq!(
            sent.entries,
            Some((0, vec![json!({"id": "a"}), json!({"id": "b"})]))
        );
    }

    #[test]
    fn a_gap_in_the_entries_fails_the_events_until_they_start_over() {
        let mirror = StateMirror::default();
        mirror.observe(&state(0, &["a"], "a", true));
        let past = state(3, &["d"], "d", true);
        mirror.observe(&past);
        let error = mirror
            .lock()
            .for_event(&context(), Some(&past))
            .unwrap_err();
        assert!(
            error.contains("from 3 on") && error.contains("holds 1"),
            "{error}"
        );
        // A state that follows on does not close the gap; one that starts over does.
        let next = state(4, &["e"], "e", true);
        mirror.observe(&next);
        assert!(mirror.lock().for_event(&context(), Some(&next)).is_err());
        let fresh = state(0, &["x"], "x", true);
        mirror.observe(&fresh);
        let sent = told(&mirror, &context(), Some(&fresh));
        assert_eq!(sent.entries, Some((0, vec![json!({"id": "x"})])));
    }
}
