//! What a session file says happened, as what a run must be given to do it again: the run's
//! configuration, the inputs from outside with their times, the answers to its model calls
//! and tool runs, each entry's id and time, and the file a replay must write.

use std::collections::{HashMap, VecDeque};

use pi_core::agent::system::SystemState;
use pi_core::agent::QueueMode;
use pi_core::agent_session::retry::RetrySettings;
use pi_core::agent_session::{ExtensionEntry, SessionInput};
use pi_core::compaction::CompactionSettings;
use pi_core::message::{
    AgentMessage, AssistantMessage, ContentBlock, CustomMessage, SystemMessage, ToolResultMessage,
    UserContent,
};
use pi_core::model::{Model, ThinkingLevel};
use pi_core::session::entry::{CustomMessageEntry, SessionEntry, SessionHeader};
use pi_core::session::file::{line, parse_session, whole_file, SessionFileError};
use pi_core::session::ids::{IdGenerator, Stamp};
use pi_core::session::time::ms_from_iso;
use pi_core::session::tree::SessionTree;
use pi_core::system_prompt::DocPaths;
use pi_core::tools::definitions::builtin_tool;
use pi_core::tools::selection::DEFAULT_TOOL_NAMES as DEFAULT_TOOLS;
use pi_effects::run_config::{tool_spec, RunConfig};
use serde_json::{json, Value};

use super::models::Models;
use super::Problem;

/// Something the run is given, placed at the entry of the file it stands for.
#[derive(Clone, Debug)]
pub struct Planned<T> {
    /// The entry's place on the branch (0 is the first entry after the header).
    pub position: usize,
    /// The entry's time.
    pub at: u64,
    pub item: T,
}

/// Everything an import needs of one session file.
#[derive(Debug)]
pub struct ImportPlan {
    pub header: SessionHeader,
    /// The file a replay must write: the branch's lines.
    pub target: String,
    /// The branch's entries (their ids and types, for reports).
    pub entries: Vec<SessionEntry>,
    pub stamps: Vec<Stamp>,
    pub config: RunConfig,
    pub models: Models,
    /// Inputs from outside, in order, with their times.
    pub inputs: Vec<Planned<SessionInput>>,
    /// The answers to model calls, in order.
    pub assistants: VecDeque<Planned<AssistantMessage>>,
    /// Tool results by tool call id.
    pub results: HashMap<String, Planned<ToolResultMessage>>,
    /// Messages the user sent while the agent worked (steering, follow-ups), by the
    /// position of the entry they must arrive before the end of: they were queued earlier
    /// than that entry was written.
    pub queued: HashMap<usize, Vec<Planned<SessionInput>>>,
    pub problems: Vec<Problem>,
    /// The branch's system messages so far: the prompt in force folds them.
    systems: Vec<AgentMessage>,
}

impl ImportPlan {
    /// The plan for `text`, a session file of any version the loader reads.
    pub fn of(text: &str) -> Result<ImportPlan, SessionFileError> {
        // Old files are given entry ids when migrated: drawn from a fixed seed, so the
        // same file always imports to the same cassette.
        let parsed = parse_session(text, &mut IdGenerator::new(0))?;
        let mut problems: Vec<Problem> = parsed
            .problems
            .iter()
            .map(|p| Problem::at_line(p.line, p.message.clone()))
            .collect();
        if parsed.migrated {
            problems.push(Problem::whole(
                "an older session format: a replay writes the version 3 file Pi migrates it to",
            ));
        }
        let tree = SessionTree::from_entries(parsed.header.clone(), parsed.entries, true);
        let entries: Vec<SessionEntry> = tree.branch_path(None).into_iter().cloned().collect();
        if entries.len() < tree.entries().len() {
            problems.push(Problem::whole(format!(
                "{} entries are off the current branch: the cassette reproduces the branch",
                tree.entries().len() - entries.len()
            )));
        }
        let header = parsed.header;
        let target = match parsed.migrated {
            true => whole_file(&header, &entries),
            false => original_lines(text, &header, &entries),
        };
        let mut plan = ImportPlan {
            stamps: Vec::new(),
            config: placeholder_config(&header),
            models: Models::default(),
            inputs: Vec::new(),
            assistants: VecDeque::new(),
            results: HashMap::new(),
            queued: HashMap::new(),
            problems,
            systems: Vec::new(),
            target,
            header,
            entries,
        };
        plan.build();
        Ok(plan)
    }

    fn build(&mut self) {
        let entries = std::mem::take(&mut self.entries);
        self.models = models_of(&entries);
        self.tools_of(&entries);
        self.stamps = entries.iter().map(stamp_of).collect();
        let mut rest = entries.iter().enumerate().peekable();
        // A new session starts with the model and thinking level (Pi's createAgentSession).
        let first_model = match rest.peek() {
            Some((_, SessionEntry::ModelChange(change))) => {
                let model = self.models.get(&change.provider, &change.model_id).cloned();
                rest.next();
                model
            }
            _ => None,
        };
        let level = match rest.peek() {
            Some((_, SessionEntry::ThinkingLevelChange(change))) => {
                let level = ThinkingLevel::parse(&change.thinking_level);
                rest.next();
                level
            }
            _ => None,
        };
        if first_model.is_none() || level.is_none() {
            self.problems.push(Problem::whole(
                "the file does not start with the model and thinking level (Pi writes them first \
                 since version 3): a replay writes them",
            ));
        }
        let mut model = first_model
            .or_else(|| self.models.all().into_iter().next())
            .unwrap_or_else(Model::unknown);
        self.config.model = model.clone();
        self.config.thinking_level = level.unwrap_or(ThinkingLevel::Off);
        let mut rest = rest.collect::<Vec<_>>().into_iter().peekable();
        let mut previous: Option<(usize, &SessionEntry)> = None;
        // The entries written since the session was last idle, with their times: a message
        // the user sent while the agent worked arrives before the first of them written
        // after it was sent.
        let mut busy: Vec<(usize, u64)> = Vec::new();
        while let Some((position, entry)) = rest.next() {
            let before = previous.replace((position, entry));
            let at = ms_of(entry);
            match entry {
                SessionEntry::Message(m) => {
                    // Messages extensions added to a prompt follow it in the same run.
                    let mut added = Vec::new();
                    if matches!(m.message, AgentMessage::User(_)) {
                        while let Some(&(_, next)) = rest.peek() {
                            let SessionEntry::CustomMessage(custom) = next else {
                                break;
                            };
                            added.push(custom_message(custom, ms_of(next)));
                            rest.next();
                        }
                    }
                    match queued_behind(&m.message, before) {
                        Some((sent, input)) if added.is_empty() => {
                            let behind = busy
                                .iter()
                                .find(|(_, written)| *written > sent)
                                .map_or(position, |(p, _)| *p);
                            let planned = Planned {
                                position,
                                at: sent,
                                item: input,
                            };
                            self.queued.entry(behind).or_default().push(planned);
                        }
                        _ => {
                            if matches!(m.message, AgentMessage::User(_)) {
                                busy.clear();
                            }
                            self.message(position, at, &m.message, added)
                        }
                    }
                    busy.push((position, at));
                }
                SessionEntry::CustomMessage(custom) => {
                    let message = custom_message(custom, at);
                    let input = SessionInput::Extension(ExtensionEntry::Message(message));
                    self.input(position, at, input);
                }
                SessionEntry::Custom(custom) => {
                    let input = SessionInput::Extension(ExtensionEntry::Custom {
                        custom_type: custom.custom_type.clone(),
                        data: custom.data.clone(),
                    });
                    self.input(position, at, input);
                }
                SessionEntry::Label(label) => {
                    let input = SessionInput::Extension(ExtensionEntry::Label {
                        target_id: label.target_id.clone(),
                        label: label.label.clone(),
                    });
                    self.input(position, at, input);
                }
                SessionEntry::SessionInfo(info) => match &info.name {
                    Some(name) => {
                        self.input(position, at, SessionInput::SetSessionName(name.clone()))
                    }
                    None => self.problem(position, entry, "a session name that clears it"),
                },
                SessionEntry::ModelChange(change) => {
                    match self.models.get(&change.provider, &change.model_id) {
                        Some(next) => {
                            model = next.clone();
                            self.input(position, at, SessionInput::SetModel(next.clone()));
                        }
                        None => self.problem(position, entry, "a model no one can name"),
                    }
                }
                SessionEntry::ThinkingLevelChange(change) => {
                    match ThinkingLevel::parse(&change.thinking_level) {
                        Some(level) => {
                            self.input(position, at, SessionInput::SetThinkingLevel(level))
                        }
                        None => self.problem(position, entry, "an unknown thinking level"),
                    }
                }
                SessionEntry::Compaction(compaction) => {
                    self.input(
                        position,
                        at,
                        SessionInput::Compact {
                            custom_instructions: None,
                        },
                    );
                    let summary = summary_text(&compaction.summary);
                    match summary_message(&model, summary, at) {
                        Some(item) => self.assistants.push_back(Planned { position, at, item }),
                        None => self.problem(position, entry, "a summary no message can hold"),
                    }
                }
                // The session writes these itself when it retries or recovers an attempt.
                SessionEntry::ContextEdit(_) => {}
                _ => self.problem(
                    position,
                    entry,
                    "an entry of a navigation, or of a type this version does not know, is not \
                     imported yet",
                ),
            }
        }
        self.entries = entries;
    }

    /// Pi's default tools, then each other tool the session's results name: built-in ones
    /// as they are, the others (extensions') by name.
    fn tools_of(&mut self, entries: &[SessionEntry]) {
        for entry in entries {
            let SessionEntry::Message(m) = entry else {
                continue;
            };
            let AgentMessage::ToolResult(result) = &m.message else {
                continue;
            };
            let name = &result.tool_name;
            let config = &mut self.config;
            if config.tools.contains(name) || config.named_tools.contains(name) {
                continue;
            }
            match builtin_tool(name) {
                Some(_) => config.tools.push(name.clone()),
                None => config.named_tools.push(name.clone()),
            }
        }
    }

    fn message(
        &mut self,
        position: usize,
        at: u64,
        message: &AgentMessage,
        added: Vec<CustomMessage>,
    ) {
        match message {
            AgentMessage::User(user) => {
                let (text, images, exact) = prompt_of(&user.content);
                if !exact {
                    self.problems.push(Problem::entry(
                        position,
                        "a user message whose content a prompt does not build (several text \
                         blocks, or images before text)",
                    ));
                }
                let input = match added.is_empty() {
                    true => SessionInput::Prompt {
                        text,
                        images,
                        streaming_behavior: None,
                    },
                    false => SessionInput::PromptWithMessages {
                        text,
                        images,
                        messages: added,
                    },
                };
                self.input(position, user.timestamp, input);
            }
            AgentMessage::Assistant(assistant) => self.assistants.push_back(Planned {
                position,
                at,
                item: assistant.clone(),
            }),
            AgentMessage::ToolResult(result) => {
                self.results.insert(
                    result.tool_call_id.clone(),
                    Planned {
                        position,
                        at,
                        item: result.clone(),
                    },
                );
            }
            AgentMessage::BashExecution(bash) => {
                self.input(position, at, SessionInput::BashResult(bash.clone()))
            }
            AgentMessage::System(system) => self.system_message(position, system),
            other => self.problems.push(Problem::entry(
                position,
                format!(
                    "a `{}` message this loop does not write without extensions",
                    other.role()
                ),
            )),
        }
    }

    /// The prompt a run recorded before its first request (Pi 1.5): its sections become the
    /// run's, and the tools it declared the run's tools, so that the replay records the same
    /// message. A later one (Pi resumed with other flags or context files) patched that prompt:
    /// the prompt and tools it leaves in force are given to the run where it stands, so that
    /// the replay's next turn records the same patch. A prompt given as text, which Pi 1.5
    /// writes only as sections, is not imported.
    fn system_message(&mut self, position: usize, system: &SystemMessage) {
        if !system.content.text().is_empty() {
            self.problems.push(Problem::entry(
                position,
                "a `system` message whose prompt is text, not sections: no run of Pi 1.5 writes \
                 one (an earlier Pi's, or the file was edited)",
            ));
            return;
        }
        let first = self.config.system_sections.is_none();
        self.systems.push(AgentMessage::System(system.clone()));
        if !first {
            let state = SystemState::of(&self.systems);
            let tools = state
                .tools
                .iter()
                .filter_map(|tool| tool.get("name").and_then(Value::as_str))
                .map(tool_spec)
                .collect();
            let input = SessionInput::SetSystem {
                sections: state.sections,
                tools,
            };
            // It writes nothing and moves no clock: the patch is stamped at the turn that
            // follows, whose prompt the file times earlier than the patch's entry.
            self.input(position, 0, input);
            return;
        }
        let sections = system.sections.clone().unwrap_or_default();
        if system.tools_removed.is_some() || sections.values().any(|text| !text.is_string()) {
            self.problems.push(Problem::entry(
                position,
                "a first `system` message that removes a part of a prompt never recorded",
            ));
            return;
        }
        let declared: Vec<String> = system
            .tools_added
            .iter()
            .flatten()
            .filter_map(|tool| tool.get("name").and_then(Value::as_str))
            .map(str::to_owned)
            .collect();
        let used: Vec<String> = self
            .config
            .tools
            .iter()
            .chain(&self.config.named_tools)
            .filter(|name| !DEFAULT_TOOLS.contains(&name.as_str()) && !declared.contains(name))
            .cloned()
            .collect();
        let (tools, named): (Vec<String>, Vec<String>) = declared
            .into_iter()
            .chain(used)
            .partition(|name| builtin_tool(name).is_some());
        self.config.tools = tools;
        self.config.named_tools = named;
        self.config.system_sections = Some(sections);
    }

    fn input(&mut self, position: usize, at: u64, item: SessionInput) {
        self.inputs.push(Planned { position, at, item });
    }

    fn problem(&mut self, position: usize, entry: &SessionEntry, why: &str) {
        let kind = entry.kind();
        self.problems
            .push(Problem::entry(position, format!("`{kind}`: {why}")));
    }
}

/// The configuration an imported run starts from before the file's first entries are read.
/// Automatic compaction is off: the file's compactions are given as commands where they
/// happened.
fn placeholder_config(header: &SessionHeader) -> RunConfig {
    RunConfig {
        started_at: ms_from_iso(&header.timestamp)
            .and_then(|ms| u64::try_from(ms).ok())
            .unwrap_or(0),
        seed: 0,
        cwd: header.cwd.clone(),
        model: Model::unknown(),
        thinking_level: ThinkingLevel::Off,
        tools: DEFAULT_TOOLS.iter().map(|t| (*t).to_owned()).collect(),
        custom_tools: Vec::new(),
        named_tools: Vec::new(),
        mcp_servers: Vec::new(),
        system_sections: None,
        docs: DocPaths::default(),
        retry: RetrySettings::default(),
        compaction: CompactionSettings {
            enabled: false,
            ..CompactionSettings::default()
        },
        steering_mode: QueueMode::OneAtATime,
        follow_up_mode: QueueMode::OneAtATime,
        block_images: false,
        default_thinking_level: None,
        model_thinking_levels: Default::default(),
        resources: Default::default(),
        cache_warming: None,
        handled_hooks: Default::default(),
        tool_loadout: None,
        later_sections: Vec::new(),
        start_errors: Vec::new(),
        context_tools: Vec::new(),
    }
}

/// The file's own lines for the header and each entry of the branch, as the file holds them.
fn original_lines(text: &str, header: &SessionHeader, entries: &[SessionEntry]) -> String {
    let mut by_id: HashMap<String, &str> = HashMap::new();
    let mut header_line = None;
    for raw in text.split('\n').filter(|l| !l.trim().is_empty()) {
        let Ok(value) = serde_json::from_str::<Value>(raw) else {
            continue;
        };
        if value.get("type").and_then(Value::as_str) == Some("session") {
            header_line.get_or_insert(raw);
        } else if let Some(id) = value.get("id").and_then(Value::as_str) {
            by_id.insert(id.to_owned(), raw);
        }
    }
    let mut out = match header_line {
        Some(raw) => format!("{raw}\n"),
        None => line(header),
    };
    for entry in entries {
        match by_id.get(entry.id()) {
            Some(raw) => {
                out.push_str(raw);
                out.push('\n');
            }
            None => out.push_str(&line(entry)),
        }
    }
    out
}

fn stamp_of(entry: &SessionEntry) -> Stamp {
    let result_time = match entry {
        SessionEntry::Message(m) => match &m.message {
            AgentMessage::ToolResult(result) => Some(result.timestamp),
            AgentMessage::System(system) => Some(system.timestamp),
            _ => None,
        },
        _ => None,
    };
    Stamp {
        id: entry.id().to_owned(),
        timestamp: entry.timestamp().to_owned(),
        result_time,
    }
}

fn ms_of(entry: &SessionEntry) -> u64 {
    ms_from_iso(entry.timestamp())
        .and_then(|ms| u64::try_from(ms).ok())
        .unwrap_or(0)
}

fn models_of(entries: &[SessionEntry]) -> Models {
    let mut assistants = Vec::new();
    let mut named = Vec::new();
    for entry in entries {
        match entry {
            SessionEntry::Message(m) => {
                if let AgentMessage::Assistant(a) = &m.message {
                    assistants.push(a);
                }
            }
            SessionEntry::ModelChange(change) => {
                named.push((change.provider.clone(), change.model_id.clone()))
            }
            _ => {}
        }
    }
    Models::of(&assistants, &named)
}

/// A user message written after `before` (the entry before it) but sent earlier than that
/// entry was written: the user typed it while the agent worked. Behind a tool result it was
/// steering (delivered after the tool calls), behind an answer a follow-up (delivered when
/// the agent would have stopped). When it was sent, and the input.
fn queued_behind(
    message: &AgentMessage,
    before: Option<(usize, &SessionEntry)>,
) -> Option<(u64, SessionInput)> {
    let AgentMessage::User(user) = message else {
        return None;
    };
    let (_, SessionEntry::Message(entry)) = before? else {
        return None;
    };
    let (text, images, exact) = prompt_of(&user.content);
    let earlier = |t: u64| exact && user.timestamp < t;
    let input = match &entry.message {
        AgentMessage::ToolResult(result) if earlier(result.timestamp) => {
            SessionInput::Steer { text, images }
        }
        AgentMessage::Assistant(answer) if earlier(answer.timestamp) => {
            SessionInput::FollowUp { text, images }
        }
        _ => return None,
    };
    Some((user.timestamp, input))
}

/// The message an extension sent that `entry` holds (its time is not kept in the file).
fn custom_message(entry: &CustomMessageEntry, at: u64) -> CustomMessage {
    CustomMessage {
        custom_type: entry.custom_type.clone(),
        content: entry.content.clone(),
        display: entry.display,
        details: entry.details.clone(),
        timestamp: at,
        extra: Default::default(),
    }
}

/// The text and images of a prompt that builds `content`, and whether it builds it exactly.
fn prompt_of(content: &UserContent) -> (String, Vec<pi_core::message::ImageContent>, bool) {
    match content {
        UserContent::Text(text) => (text.clone(), Vec::new(), false),
        UserContent::Blocks(blocks) => {
            let mut images = Vec::new();
            let mut texts = Vec::new();
            for block in blocks {
                match block {
                    ContentBlock::Text(t) => texts.push(t.text.clone()),
                    ContentBlock::Image(image) => images.push(image.clone()),
                    _ => {}
                }
            }
            let exact = texts.len() == 1
                && matches!(blocks.first(), Some(ContentBlock::Text(_)))
                && blocks.len() == 1 + images.len();
            (texts.concat(), images, exact)
        }
    }
}

/// A compaction's summary as the model wrote it: the lists of files read and modified that
/// the loop appends are taken off again (the replayed loop appends its own).
fn summary_text(summary: &str) -> &str {
    let cut = ["\n\n<read-files>\n", "\n\n<modified-files>\n"]
        .iter()
        .filter_map(|marker| summary.find(marker))
        .min();
    match cut {
        Some(at) => &summary[..at],
        None => summary,
    }
}

/// The answer of a compaction's summary call: `summary` as text, no usage.
fn summary_message(model: &Model, summary: &str, at: u64) -> Option<AssistantMessage> {
    let zero = json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0});
    serde_json::from_value(json!({
        "content": [{"type": "text", "text": summary}],
        "api": model.api,
        "provider": model.provider,
        "model": model.id,
        "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0, "cost": zero},
        "stopReason": "stop",
        "timestamp": at,
    }))
    .ok()
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn file_lists_come_off_a_summary() {
        assert_eq!(
            summary_text(
                "S\n\n<read-files>\na\n</read-files>\n\n<modified-files>\nb\n</modified-files>"
            ),
            "S"
        );
        assert_eq!(
            summary_text("S\n\n<modified-files>\nb\n</modified-files>"),
            "S"
        );
        assert_eq!(summary_text("plain"), "plain");
    }

    #[test]
    fn a_prompt_builds_one_text_then_images() {
        let blocks: UserContent =
            serde_json::from_value(json!([{"type": "text", "text": "hi"}])).expect("content");
        assert_eq!(prompt_of(&blocks), ("hi".into(), Vec::new(), true));
        let two: UserContent = serde_json::from_value(
            json!([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]),
        )
        .expect("content");
        assert!(!prompt_of(&two).2);
    }
}
