//! Pi 1.5.2's mid-conversation system messages on the Responses API
//! (`compat.supportsMidConvoSystemMessages`, `convertResponsesMessages` over a transcript
//! `resolveTranscript` left whole): each system message goes in place as a developer (or
//! system) message, the first as its prompt, later ones as their update. Their tool changes go
//! as `additional_tools` items (`supportsAdditionalTools`: the request then declares no tools),
//! as a client tool search and its output (`supportsToolSearch`, for the additions after the
//! last change that was not one), or into the request's tools. Without the compat the request
//! sends the folded prompt and tools, as every provider does.

use pi_core::agent::system::{message_text, tool_definitions, update_text};
use pi_core::agent::{ModelRequest, PlacedSystemMessage, ToolDefinition};
use pi_core::message::{Message, StopReason, SystemMessage};
use serde_json::{json, Value};

use crate::compat_flag;
use crate::hash::short_hash;

/// Pi 1.5.2's notice before each `additional_tools` item after the first
/// (`renderIncrementalToolsNotice`), and its line naming the tools still unavailable.
const INCREMENTAL_TOOLS_NOTICE: &str = "This is an incremental tools update. Previously declared tools remain available unless explicitly marked unavailable. A tool declared again here is available again, and its latest definition replaces the earlier one.";
const STILL_UNAVAILABLE: (&str, &str) = ("\nStill unavailable: ", ".");
/// Pi 1.5.2's text for removed tools (`renderToolRemovalNotice`), each name on a line after it.
const TOOLS_REMOVED_NOTICE: &str = "The following tools are no longer available. Do not call them:";
/// The prefix of a client tool search's call id, before the short hash of its seed and names.
const TOOL_LOAD_CALL_PREFIX: &str = "pi_tool_load_";

/// How a model's requests send tool changes (`getResponsesToolSupport`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum ToolSupport {
    Changes,
    Additions,
    None,
}

/// The transcript's system messages as a request of a model with the compat sends them.
pub(crate) struct Transcript<'a> {
    placed: &'a [PlacedSystemMessage],
    support: ToolSupport,
    /// How many leading system messages are folded into the request's tools instead.
    folded: usize,
    /// The request's tools.
    pub tools: Vec<ToolDefinition>,
}

fn tool_name(tool: &Value) -> &str {
    tool["name"].as_str().unwrap_or_default()
}

/// The tools in force after `messages` (`getCurrentTools`).
fn current_tools<'a>(messages: impl IntoIterator<Item = &'a SystemMessage>) -> Vec<Value> {
    let mut tools: Vec<Value> = Vec::new();
    for message in messages {
        for removed in message.tools_removed.iter().flatten() {
            tools.retain(|tool| tool_name(tool) != tool_name(removed));
        }
        for added in message.tools_added.iter().flatten() {
            match tools.iter_mut().find(|t| tool_name(t) == tool_name(added)) {
                Some(tool) => *tool = added.clone(),
                None => tools.push(added.clone()),
            }
        }
    }
    tools
}

/// The index of the last system message that removed or redeclared a tool
/// (`findLastNonAdditiveToolChange`).
fn last_non_additive(messages: &[PlacedSystemMessage]) -> Option<usize> {
    let mut declared: Vec<&str> = Vec::new();
    let mut last = None;
    for (index, placed) in messages.iter().enumerate() {
        let message = &placed.message;
        if message
            .tools_removed
            .as_ref()
            .is_some_and(|r| !r.is_empty())
        {
            last = Some(index);
        }
        for tool in message.tools_added.iter().flatten() {
            if declared.contains(&tool_name(tool)) {
                last = Some(index);
            }
            declared.push(tool_name(tool));
        }
    }
    last
}

/// The request's transcript when its model keeps system messages in it; `None` sends the
/// folded prompt and tools.
pub(crate) fn transcript(request: &ModelRequest) -> Option<Transcript<'_>> {
    let model = &request.model;
    let placed = request.system_messages.as_slice();
    if !compat_flag(model, "supportsMidConvoSystemMessages", false) || placed.is_empty() {
        return None;
    }
    let support = if compat_flag(model, "supportsAdditionalTools", false) {
        ToolSupport::Changes
    } else if compat_flag(model, "supportsToolSearch", false) {
        ToolSupport::Additions
    } else {
        ToolSupport::None
    };
    let folded = match support {
        ToolSupport::None => placed.len(),
        ToolSupport::Changes => 0,
        ToolSupport::Additions => {
            let initial = usize::from(placed[0].at == 0);
            initial.max(last_non_additive(placed).map_or(0, |last| last + 1))
        }
    };
    let tools = match support {
        ToolSupport::Changes => Vec::new(),
        _ => tool_definitions(&current_tools(placed[..folded].iter().map(|p| &p.message))),
    };
    Some(Transcript {
        placed,
        support,
        folded,
        tools,
    })
}

/// Where each system message goes among the transformed messages: `starts[i]` is the place
/// after the transformed counterpart of the `i` messages before it (a failed answer has none;
/// a synthetic result for an unanswered call belongs to the message it precedes).
pub(crate) fn places(original: &[Message], transformed: &[&Message]) -> Vec<usize> {
    let mut starts = vec![0];
    let mut t = 0;
    for message in original {
        let dropped = matches!(message, Message::Assistant(a)
            if matches!(a.stop_reason, StopReason::Error | StopReason::Aborted));
        if !dropped {
            while !matches!(message, Message::ToolResult(_))
                && matches!(transformed.get(t), Some(Message::ToolResult(_)))
            {
                t += 1;
            }
            t = (t + 1).min(transformed.len());
        }
        starts.push(t);
    }
    starts
}

/// The state of a conversion through the transcript's system messages.
pub(crate) struct Emitter<'a> {
    transcript: &'a Transcript<'a>,
    next: usize,
    declared_additional: bool,
    unavailable: Vec<String>,
}

impl<'a> Emitter<'a> {
    pub(crate) fn new(transcript: &'a Transcript<'a>) -> Self {
        Emitter {
            transcript,
            next: 0,
            declared_additional: false,
            unavailable: Vec::new(),
        }
    }

    /// Pushes the system messages placed at `at` or before (all with `None`), each as
    /// `convert_tools` converts declarations (`defer` for a tool search's output), and counts
    /// each later one in `index` (the `msg_pi_<n>` fallback ids count it).
    pub(crate) fn emit(
        &mut self,
        at: Option<usize>,
        starts: &[usize],
        role: &str,
        index: &mut usize,
        convert_tools: &dyn Fn(&[ToolDefinition], bool) -> Value,
        items: &mut Vec<Value>,
    ) {
        while let Some(placed) = self.transcript.placed.get(self.next) {
            let place = starts.get(placed.at).copied().unwrap_or(usize::MAX);
            if at.is_some_and(|at| place > at) {
                return;
            }
            let k = self.next;
            self.next += 1;
            let message = &placed.message;
            let leading = k == 0 && placed.at == 0;
            let anchors = k >= self.transcript.folded;
            if anchors {
                self.tool_additions(message, *index, role, convert_tools, items);
            }
            let mut parts = vec![if leading {
                message_text(message)
            } else {
                update_text(message)
            }];
            if anchors {
                let added: Vec<&str> = message
                    .tools_added
                    .iter()
                    .flatten()
                    .map(tool_name)
                    .collect();
                let removed: Vec<&str> = message
                    .tools_removed
                    .iter()
                    .flatten()
                    .map(tool_name)
                    .filter(|name| !added.contains(name))
                    .collect();
                if !removed.is_empty() {
                    let lines: Vec<String> =
                        removed.iter().map(|name| format!("- {name}")).collect();
                    parts.push(format!("{TOOLS_REMOVED_NOTICE}\n{}", lines.join("\n")));
                }
                for name in removed {
                    if !self.unavailable.iter().any(|n| n == name) {
                        self.unavailable.push(name.to_owned());
                    }
                }
            }
            let text = parts
                .into_iter()
                .filter(|part| !part.is_empty())
                .collect::<Vec<_>>()
                .join("\n\n");
            if !text.is_empty() {
                items.push(json!({"role": role, "content": text}));
            }
            if !leading {
                *index += 1;
            }
        }
    }

    fn tool_additions(
        &mut self,
        message: &SystemMessage,
        index: usize,
        role: &str,
        convert_tools: &dyn Fn(&[ToolDefinition], bool) -> Value,
        items: &mut Vec<Value>,
    ) {
        let tools = message.tools_added.as_deref().unwrap_or_default();
        for tool in tools {
            self.unavailable.retain(|name| name != tool_name(tool));
        }
        if tools.is_empty() {
            return;
        }
        match self.transcript.support {
            ToolSupport::Changes => {
                if self.declared_additional {
                    let mut notice = INCREMENTAL_TOOLS_NOTICE.to_owned();
                    if !self.unavailable.is_empty() {
                        notice.push_str(&format!(
                            "{}{}{}",
                            STILL_UNAVAILABLE.0,
                            self.unavailable.join(", "),
                            STILL_UNAVAILABLE.1
                        ));
                    }
                    items.push(json!({"role": role, "content": notice}));
                }
                self.declared_additional = true;
                items.push(json!({"type": "additional_tools", "role": "developer",
                    "tools": convert_tools(&tool_definitions(tools), false)}));
            }
            ToolSupport::Additions => {
                let names: Vec<&str> = tools.iter().map(tool_name).collect();
                let call_id = format!(
                    "{TOOL_LOAD_CALL_PREFIX}{}",
                    short_hash(&format!("system:{index}:{}", names.join(",")))
                );
                items.push(json!({"type": "tool_search_call", "call_id": call_id,
                    "execution": "client", "status": "completed",
                    "arguments": {"query": names.join(" "), "limit": names.len()}}));
                items.push(json!({"type": "tool_search_output", "call_id": call_id,
                    "execution": "client", "status": "completed",
                    "tools": convert_tools(&tool_definitions(tools), true)}));
            }
            ToolSupport::None => {}
        }
    }
}
