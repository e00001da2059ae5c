//! Session mode of the scenario driver: the same scripts, driven through the session machine
//! (persistence, retry, compaction, queues), with the session's own events and its entries in
//! the transcript.

use std::sync::Arc;

use super::driver::Driver;
use super::parse::Command;
use super::render;
use crate::agent::{AgentConfig, Input};
use crate::agent_session::{
    feed, retry::RetrySettings, BusyAnswer, CacheWarming, NavigateRequest, Reply, SessionConfig,
    SessionInput, SessionMachine, SessionStep, StreamingBehavior,
};
use crate::compaction::CompactionSettings;
use crate::event::Event;
use crate::model::{Model, ThinkingLevel};
use crate::session::entry::SessionEntry;
use crate::session::ids::IdGenerator;
use crate::session::tree::SessionTree;

/// The session settings a script chose, and the machine once the first input arrives.
#[derive(Debug)]
pub(super) struct SessionScenario {
    retry: RetrySettings,
    compaction: CompactionSettings,
    context_window: Option<u64>,
    /// `cacheWarming=off|streaming|idle` (no warming when unset).
    cache_warming: Option<CacheWarming>,
    /// `promptCache=SECONDS`: the model's short prompt-cache lifetime.
    prompt_cache: Option<u64>,
    /// `inputPrice=DOLLARS`: the model's input price per million tokens.
    input_price: Option<f64>,
    machine: Option<SessionMachine>,
}

impl SessionScenario {
    /// Reads `session:` settings.
    pub(super) fn from_pairs(pairs: &[(String, String)]) -> Result<Self, String> {
        let mut scenario = SessionScenario {
            retry: RetrySettings::default(),
            compaction: CompactionSettings::default(),
            context_window: None,
            cache_warming: None,
            prompt_cache: None,
            input_price: None,
            machine: None,
        };
        for (key, value) in pairs {
            let number = || {
                value
                    .parse::<u64>()
                    .map_err(|e| format!("session: {key}={value}: {e}"))
            };
            match key.as_str() {
                "maxRetries" => {
                    scenario.retry.max_retries =
                        u32::try_from(number()?).map_err(|e| format!("maxRetries: {e}"))?
                }
                "baseDelayMs" => scenario.retry.base_delay_ms = number()?,
                "retry" => scenario.retry.enabled = value != "off",
                "compaction" => scenario.compaction.enabled = value != "off",
                "reserveTokens" => scenario.compaction.reserve_tokens = number()?,
                "keepRecentTokens" => scenario.compaction.keep_recent_tokens = number()?,
                "contextWindow" => scenario.context_window = Some(number()?),
                "cacheWarming" => {
                    let mode = serde_json::from_value(serde_json::Value::String(value.clone()))
                        .map_err(|e| format!("cacheWarming: {e}"))?;
                    scenario.cache_warming = Some(CacheWarming {
                        mode,
                        ..CacheWarming::default()
                    });
                }
                "promptCache" => scenario.prompt_cache = Some(number()?),
                "inputPrice" => {
                    scenario.input_price = Some(
                        value
                            .parse::<f64>()
                            .map_err(|e| format!("inputPrice: {e}"))?,
                    )
                }
                other => return Err(format!("unknown session setting {other:?}")),
            }
        }
        Ok(scenario)
    }

    /// The model the session is using.
    pub(super) fn model(&self, config: &AgentConfig) -> Model {
        match &self.machine {
            Some(machine) => machine.agent().model().clone(),
            None => self.configured_model(config),
        }
    }

    fn configured_model(&self, config: &AgentConfig) -> Model {
        let mut model = config.model.clone();
        if let Some(window) = self.context_window {
            model.context_window = window;
        }
        if let Some(seconds) = self.prompt_cache {
            model.extra.insert(
                "promptCache".into(),
                serde_json::json!({ "short": seconds }),
            );
        }
        if let Some(price) = self.input_price {
            model.cost.input = price;
        }
        model
    }
}

impl Driver {
    /// The session machine of a `session:` scenario, once the first input created it.
    pub fn session(&self) -> Option<&SessionMachine> {
        self.session.as_ref().and_then(|s| s.machine.as_ref())
    }

    /// The transcript so far, one line per command, event and effect.
    pub fn transcript(&self) -> &[String] {
        &self.log
    }

    fn session_machine(&mut self) -> Option<&mut SessionMachine> {
        let now = self.now;
        let config = &self.config;
        let session = self.session.as_mut()?;
        if session.machine.is_none() {
            let mut agent = config.clone();
            agent.model = session.configured_model(config);
            // The coding agent's converter: summaries and bash executions reach the model.
            let mut hooks = self.hooks.clone();
            hooks.add("convert coding-agent").ok()?;
            agent.hooks = Arc::new(hooks);
            let mut ids = IdGenerator::new(7);
            let tree = SessionTree::new("/work", now, &mut ids, None);
            let mut machine = SessionMachine::new(SessionConfig {
                agent,
                tree,
                ids,
                retry: session.retry,
                compaction: session.compaction,
                default_thinking_level: None,
                model_thinking_levels: Default::default(),
                resources: Default::default(),
            });
            machine.set_cache_warming(session.cache_warming);
            session.machine = Some(machine);
        }
        session.machine.as_mut()
    }

    /// The session-mode meaning of a command, or `None` when it means the same as without.
    pub(super) fn session_command(&mut self, command: &Command) -> Option<Result<(), String>> {
        let input = match command {
            Command::User(text) => prompt(text, None),
            Command::UserQueued { text, follow_up } => prompt(
                text,
                Some(if *follow_up {
                    StreamingBehavior::FollowUp
                } else {
                    StreamingBehavior::Steer
                }),
            ),
            Command::Steer(text) => SessionInput::Steer {
                text: text.clone(),
                images: Vec::new(),
            },
            Command::FollowUp(text) => SessionInput::FollowUp {
                text: text.clone(),
                images: Vec::new(),
            },
            Command::Abort => SessionInput::Abort,
            Command::Compact(instructions) => SessionInput::Compact {
                custom_instructions: instructions.clone(),
            },
            Command::Thinking(level) => match ThinkingLevel::parse(level) {
                Some(level) => SessionInput::SetThinkingLevel(level),
                None => return Some(Err(format!("unknown thinking level {level:?}"))),
            },
            Command::Tick(ms) => {
                self.now += ms;
                let due = self
                    .session
                    .as_ref()
                    .and_then(|s| s.machine.as_ref())
                    .and_then(SessionMachine::wake_at)
                    .is_some_and(|at| at <= self.now);
                if due {
                    self.session_input(SessionInput::Wake);
                }
                return Some(Ok(()));
            }
            Command::Navigate {
                entry,
                summarize,
                label,
                instructions,
            } => {
                let target_id = self
                    .session
                    .as_ref()
                    .and_then(|s| s.machine.as_ref())
                    .and_then(|m| m.tree().entries().get(entry.wrapping_sub(1)))
                    .map_or_else(|| format!("missing-entry-{entry}"), |e| e.id().to_owned());
                SessionInput::Navigate(NavigateRequest {
                    target_id,
                    summarize: *summarize,
                    custom_instructions: instructions.clone(),
                    replace_instructions: false,
                    label: label.clone(),
                })
            }
            Command::BashResult(value) => {
                let mut value = value.clone();
                if let Some(map) = value.as_object_mut() {
                    map.insert("timestamp".into(), self.now.into());
                }
                match serde_json::from_value(value) {
                    Ok(message) => SessionInput::BashResult(message),
                    Err(e) => return Some(Err(format!("bash-result: {e}"))),
                }
            }
            Command::SetModel { id, reasoning } => {
                let mut model = self.config.model.clone();
                model.id = id.clone();
                model.name = id.clone();
                model.reasoning = *reasoning;
                SessionInput::SetModel(model)
            }
            Command::Continue | Command::Reset | Command::Prompt(_) | Command::History(_) => {
                return Some(Err("not a session input".into()))
            }
            _ => return None,
        };
        self.session_input(input);
        Some(Ok(()))
    }

    /// Feeds one input to the session machine and logs what came out.
    pub(super) fn session_input(&mut self, input: SessionInput) {
        let now = self.now;
        let Some(machine) = self.session_machine() else {
            return;
        };
        match feed(machine, now, input) {
            Ok(step) => self.absorb_session(step),
            Err(refused) => self.log.push(format!("  ! {}", refused.into_error())),
        }
    }

    fn absorb_session(&mut self, step: SessionStep) {
        for event in &step.events {
            let line = match event {
                Event::Agent(event) => render::event(event),
                Event::Session(event) => render::json(event),
            };
            self.log.push(format!("  {line}"));
        }
        if step.persist {
            self.log.push("  (entries persisted)".into());
        }
        for reply in &step.replies {
            let line = match reply {
                Reply::Compacted(_, Ok(result)) => {
                    format!("compacted firstKept={}", result.first_kept_entry_id)
                }
                Reply::Compacted(_, Err(error)) => {
                    format!("compaction error {}", render::json(error))
                }
                Reply::Navigated(Ok(n)) => format!(
                    "navigated editorText={} cancelled={} aborted={} summaryEntry={}",
                    render::json(&n.editor_text),
                    n.cancelled,
                    n.aborted,
                    render::json(&n.summary_entry_id)
                ),
                Reply::Navigated(Err(error)) => format!("navigation error {}", render::json(error)),
                Reply::CommandRan { errors } => {
                    format!("command ran errors={}", render::json(errors))
                }
                Reply::BusyPrompt(Ok(BusyAnswer::Handled)) => "busy prompt handled".to_owned(),
                Reply::BusyPrompt(Ok(BusyAnswer::Started)) => "busy prompt started".to_owned(),
                Reply::BusyPrompt(Err(error)) => {
                    format!("busy prompt refused {}", render::json(error))
                }
                Reply::Replacing { cancelled } => format!("replacing cancelled={cancelled}"),
                Reply::UserBash(answer) => format!("user_bash {}", render::json(answer)),
                Reply::ShutdownAsked => "shutdown asked".to_owned(),
                Reply::CommandReplacing(carried) => format!(
                    "command {} replacing {}",
                    carried.name,
                    render::json(&carried.ask)
                ),
            };
            self.log.push(format!("  <- {line}"));
        }
        if let Some(at) = step.wake_at {
            self.log
                .push(format!("  wake_at +{}", at.saturating_sub(self.now)));
        }
        self.absorb_effects(&step.effects);
    }

    pub(super) fn finish_session(&mut self) {
        let Some(machine) = self.session.as_ref().and_then(|s| s.machine.as_ref()) else {
            return;
        };
        let roles: Vec<&str> = machine
            .agent()
            .messages()
            .iter()
            .map(crate::message::AgentMessage::role)
            .collect();
        let entries: Vec<String> = machine.tree().entries().iter().map(entry).collect();
        self.log.push(format!(
            "= {} | messages [{}] | entries [{}]",
            machine.agent().describe(),
            roles.join(", "),
            entries.join(", ")
        ));
    }
}

fn prompt(text: &str, behavior: Option<StreamingBehavior>) -> SessionInput {
    SessionInput::Prompt {
        text: text.to_owned(),
        images: Vec::new(),
        streaming_behavior: behavior,
    }
}

/// An entry in a word: its type, and the role and stop reason of a message.
fn entry(entry: &SessionEntry) -> String {
    match entry.message() {
        Some(crate::message::AgentMessage::Assistant(a)) => {
            format!(
                "assistant({})",
                render::json(&a.stop_reason).trim_matches('"')
            )
        }
        Some(message) => message.role().to_owned(),
        None => entry.kind().to_owned(),
    }
}

impl From<Input> for SessionInput {
    fn from(input: Input) -> Self {
        SessionInput::Answer(input)
    }
}
