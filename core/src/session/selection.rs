//! The model a session branch records as selected (Pi 1.5.2's `getBranchSelection`), which a
//! resumed session restores. Responses name the physical model that answered, so a virtual
//! model's selection is only in its `model_change`: that change holds until the next one, as
//! long as the model it names is still a registered virtual model; otherwise the latest
//! physical response wins, as in sessions without virtual models.

use super::context::ModelRef;
use super::entry::SessionEntry;
use crate::agent::model_route::VIRTUAL_MODEL_API;
use crate::message::AgentMessage;

/// The selection `branch` (root first) records; `is_virtual` says whether a provider and model
/// id name a registered virtual model. Only the last `model_change` is looked up.
pub fn branch_selection(
    branch: &[&SessionEntry],
    is_virtual: impl Fn(&str, &str) -> bool,
) -> Option<ModelRef> {
    let change = |entry: &SessionEntry| match entry {
        SessionEntry::ModelChange(e) => Some(ModelRef {
            provider: e.provider.clone(),
            model_id: e.model_id.clone(),
        }),
        _ => None,
    };
    for (index, entry) in branch.iter().enumerate().rev() {
        if let Some(selected) = change(entry) {
            return Some(selected);
        }
        let SessionEntry::Message(message) = entry else {
            continue;
        };
        let AgentMessage::Assistant(response) = &message.message else {
            continue;
        };
        if response.api == VIRTUAL_MODEL_API {
            continue;
        }
        let last_change = branch[..index].iter().rev().find_map(|e| change(e));
        return Some(match last_change {
            Some(held) if is_virtual(&held.provider, &held.model_id) => held,
            _ => ModelRef {
                provider: response.provider.clone(),
                model_id: response.model.clone(),
            },
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entries(lines: &[serde_json::Value]) -> Vec<SessionEntry> {
        lines
            .iter()
            .map(|l| serde_json::from_value(l.clone()).unwrap())
            .collect()
    }

    fn branch() -> Vec<SessionEntry> {
        entries(&[
            json!({"type": "model_change", "id": "a", "parentId": null, "timestamp": "t",
                "provider": "router", "modelId": "auto"}),
            json!({"type": "message", "id": "b", "parentId": "a", "timestamp": "t",
                "message": {"role": "assistant", "content": [], "api": "openai-completions",
                    "provider": "mock", "model": "mock-model", "usage": {"input": 0, "output": 0,
                    "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0, "cost": {"input": 0,
                    "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                    "stopReason": "stop", "timestamp": 1}}),
        ])
    }

    #[test]
    fn a_virtual_change_holds_over_the_physical_responses_while_it_is_registered() {
        let entries = branch();
        let refs: Vec<&SessionEntry> = entries.iter().collect();
        let held = branch_selection(&refs, |p, id| (p, id) == ("router", "auto")).unwrap();
        assert_eq!(
            (held.provider.as_str(), held.model_id.as_str()),
            ("router", "auto")
        );
        let gone = branch_selection(&refs, |_, _| false).unwrap();
        assert_eq!(
            (gone.provider.as_str(), gone.model_id.as_str()),
            ("mock", "mock-model")
        );
    }
}
