//! What an extension's synchronous getters read at a hook point (Pi 1.5.2's `pi.getActiveTools()`,
//! `pi.getThinkingLevel()`, `ctx.model`, `ctx.isIdle()`, `ctx.hasPendingMessages()`,
//! `ctx.getContextUsage()`, `ctx.getSystemPrompt()` and the session manager's reads), as data
//! that travels with the hook's [`Effect::Hook`](super::Effect::Hook).
//!
//! Why with the effect: the session machine owns all of it (entries, leaf, model, thinking
//! level, active tools, prompt, whether a run is active), and a getter must answer what Pi's
//! answers at that very point. A state read by the program after the step would be the state
//! after everything else the step did; a snapshot taken by the pure machine as it emits the
//! hook is exact, and parallel hook points in flight each keep their own. It is not recorded:
//! a replay feeds the same inputs to the same machine, which computes the same state at the
//! same point, so the cassette stays as it was and a replay that runs extensions again
//! (`--extensions live`, a hybrid run gone live) shows them what the recording's saw.
//!
//! Why the entries come as a delta: the session's entries only grow within one machine, and
//! sending all of them at every hook point would cost the square of the session's length.
//! Each state holds the entries appended since the machine's previous hook point
//! ([`EntriesSince`]); whoever mirrors them applies every hook point's state in the order the
//! effects came (`from` 0 starts over, as a new session's first does).

use serde::Serialize;
use serde_json::Value;

use super::config::ToolExposure;
use super::custom_tool::SearchableTool;
use super::tool_info::{tool_info, Registered};
use crate::model::{Model, ThinkingLevel};

/// The session's state at one hook point, with Pi's field names.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookState {
    /// `ctx.model`.
    pub model: Model,
    /// `pi.getThinkingLevel()`.
    pub thinking_level: ThinkingLevel,
    /// `pi.getActiveTools()`: the names of the tools the next request declares.
    pub active_tools: Vec<String>,
    /// `pi.getAllTools()`: every registered tool's info, when the session knows its registered
    /// tools (its run's configuration holds their loadout); the getter answers the active
    /// tools' names without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub all_tools: Option<Vec<Value>>,
    /// `ctx.getSystemPrompt()`: the prompt in force, changes not yet sent included.
    pub system_prompt: String,
    /// `ctx.isIdle()`: no prompt's run is active and no compaction runs.
    pub is_idle: bool,
    /// `ctx.hasPendingMessages()`: steering or follow-up texts wait.
    pub has_pending_messages: bool,
    /// A boundary preview's `pendingMessages` (Pi's `_getPendingBoundaryMessages`): the queued
    /// messages the loop would take next, then those held for the turn's end; none is left out.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pending_messages: Vec<crate::message::AgentMessage>,
    /// `ctx.getContextUsage()` (`{tokens, contextWindow, percent}`), absent when the model has
    /// no context window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_usage: Option<Value>,
    /// The session manager's reads.
    pub session: SessionState,
}

impl HookState {
    /// This state as the handlers after one that registered `tools` (of `deferred` exposure)
    /// read it within the same hook point: Pi's `registerTool` is synchronous, so
    /// `pi.getAllTools()` lists them at once, after those registered; a name already registered
    /// deferred is left as it is, one registered with another exposure described again in its
    /// place (as the machine applies the registration once the hook point is decided).
    /// Unchanged when the session does not know its registered tools.
    pub fn with_deferred_tools(&self, tools: &[SearchableTool]) -> HookState {
        let mut state = self.clone();
        if let Some(all) = &mut state.all_tools {
            for tool in tools {
                let registered = Registered {
                    exposure: ToolExposure::Deferred,
                    namespace: tool.namespace.as_ref(),
                    ..Registered::default()
                };
                let info = tool_info(&tool.tool.spec(), registered);
                match all
                    .iter_mut()
                    .find(|info| info["name"] == tool.tool.name.as_str())
                {
                    Some(known) if known["exposure"] == "deferred" => {}
                    Some(known) => *known = info,
                    None => all.push(info),
                }
            }
        }
        state
    }
}

/// What `ctx.sessionManager` reads, but the session file's path, which is the program's.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionState {
    /// `getSessionId()`.
    pub id: String,
    /// `getSessionName()`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `getLeafId()`.
    pub leaf_id: Option<String>,
    /// `getHeader()`.
    pub header: Value,
    /// The entries appended since the previous hook point (`getEntries()`, `getBranch()`).
    /// They travel apart from the other fields (a mirror keeps them), so the state serialises
    /// only how many entries the session holds at this point, as `entryCount`.
    #[serde(rename = "entryCount", serialize_with = "serialize_total")]
    pub entries: EntriesSince,
}

fn serialize_total<S: serde::Serializer>(
    entries: &EntriesSince,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&entries.total(), serializer)
}

/// The entries from position `from` on: what the session's entries became since the previous
/// hook point, to be written over a mirror's entries from `from`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct EntriesSince {
    pub from: usize,
    pub entries: Vec<Value>,
}

impl EntriesSince {
    /// How many entries the session holds at this hook point.
    pub fn total(&self) -> usize {
        self.from + self.entries.len()
    }

    /// Writes these entries over `mirror` from `from` on; false (and `mirror` unchanged) when
    /// the mirror lacks entries before `from`, having missed a hook point's state.
    pub fn apply_to(&self, mirror: &mut Vec<Value>) -> bool {
        if mirror.len() < self.from {
            return false;
        }
        mirror.truncate(self.from);
        mirror.extend(self.entries.iter().cloned());
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entries_since_write_over_the_mirror_and_refuse_a_gap() {
        let mut mirror = vec![json!(1), json!(2), json!(3)];
        let since = EntriesSince {
            from: 2,
            entries: vec![json!("c"), json!("d")],
        };
        assert!(since.apply_to(&mut mirror));
        assert_eq!(mirror, [json!(1), json!(2), json!("c"), json!("d")]);
        assert_eq!(since.total(), 4);
        let restart = EntriesSince {
            from: 0,
            entries: vec![json!("a")],
        };
        assert!(restart.apply_to(&mut mirror));
        assert_eq!(mirror, [json!("a")]);
        let gap = EntriesSince {
            from: 5,
            entries: vec![json!("x")],
        };
        assert!(!gap.apply_to(&mut mirror));
        assert_eq!(mirror, [json!("a")]);
    }
}
