//! One command line: parsed, dispatched to the session, answered. Responses echo the command's
//! `id` (string or number, as sent).

use pi_core::agent::QueueMode;
use pi_core::agent_session::{SessionInput, StreamingBehavior};
use pi_core::event::Event;
use pi_core::message::{BashExecutionMessage, ImageContent};
use pi_core::model::{supported_thinking_levels, Model, ThinkingLevel};
use pi_core::nullable::Nullable;
use pi_core::resources::Resources;
use pi_core::rpc::RpcResponse;
use pi_effects::agent_session::CancellationToken;
use pi_effects::driver::{UserBash, UserCommand};
use serde_json::{json, Value};

use super::{failure, state, success, Front, Rpc};
use pi_core::json_error;

impl<I: Front> Rpc<I> {
    /// Parses and handles one input line. Every error answer carries the line's `id` when it
    /// has one (Pi 0.73.1 leaves it out of some, so a client matching answers by id would wait
    /// forever); a line that is not valid JSON is read leniently for it.
    pub(super) fn handle_line(&mut self, line: &str) {
        let command: Value = match serde_json::from_str(line) {
            Ok(command) => command,
            Err(error) => {
                let message =
                    json_error::node22_parse_error(line).unwrap_or_else(|| error.to_string());
                let response = failure(
                    salvaged_id(line),
                    "parse",
                    format!("Failed to parse command: {message}"),
                );
                self.respond(&response);
                return;
            }
        };
        if command.get("type").and_then(Value::as_str) == Some("extension_ui_response") {
            // The extension waiting for it gets it; nothing is answered (a replay has no
            // extension running: its tool's result is recorded).
            if let Some(host) = self.runtime.host() {
                if let Err(error) = host.answer_ui(&command) {
                    self.out.say(&error);
                }
            }
            return;
        }
        let id = command.get("id").cloned();
        let kind = match command.get("type") {
            Some(Value::String(kind)) => kind.clone(),
            other => {
                // Pi answers with `command` as the value was (absent when undefined) and the
                // value as JavaScript prints it.
                let mut response = serde_json::Map::new();
                if let Some(id) = id {
                    response.insert("id".into(), id);
                }
                response.insert("type".into(), json!("response"));
                if let Some(value) = other {
                    response.insert("command".into(), value.clone());
                }
                response.insert("success".into(), json!(false));
                let shown = other.map_or_else(|| "undefined".to_owned(), js_string);
                response.insert("error".into(), json!(format!("Unknown command: {shown}")));
                self.out.json_line(&Value::Object(response));
                return;
            }
        };
        match self.dispatch(id.clone(), &kind, &command) {
            Ok(Some(data)) => self.respond(&success(id, &kind, data)),
            Ok(None) => {}
            Err(Failure::Unknown) => {
                self.respond(&failure(id, &kind, format!("Unknown command: {kind}")));
            }
            Err(Failure::Message(message)) => self.respond(&failure(id, &kind, message)),
        }
    }

    /// Runs one command. `Ok(Some(data))` is answered now (`data` `None` = no data key);
    /// `Ok(None)` was answered already or will be later.
    fn dispatch(
        &mut self,
        id: Option<Value>,
        kind: &str,
        command: &Value,
    ) -> Result<Option<Option<Value>>, Failure> {
        let done = |data: Option<Value>| Ok(Some(data));
        match kind {
            "prompt" => {
                self.prompt(id, command)?;
                Ok(None)
            }
            "steer" | "follow_up" => {
                let input = queued_input(kind, command)?;
                done(Some(self.queue(input)?))
            }
            "clear_queue" => {
                let (steering, follow_up) = self.session.machine().queued_texts();
                let cleared = json!({ "steering": steering, "followUp": follow_up });
                self.submit(SessionInput::ClearQueue)?;
                done(Some(cleared))
            }
            "abort" => {
                self.submit(SessionInput::Abort)?;
                self.abort_waiters.push(id);
                Ok(None)
            }
            "get_state" => done(Some(state::session_state(&self.session))),
            "get_messages" => {
                let messages = state::to_value(&self.session.machine().agent().messages());
                done(Some(json!({ "messages": messages })))
            }
            "get_session_stats" => done(Some(state::session_stats(&self.session))),
            "get_fork_messages" => done(Some(state::fork_messages(self.session.machine()))),
            "get_last_assistant_text" => {
                done(Some(state::last_assistant_text(self.session.machine())))
            }
            "get_commands" => done(Some(json!({
                "commands": commands_listed(self.session.machine().resources())
            }))),
            "get_available_models" => {
                let models: Vec<Value> = self
                    .available_models()
                    .iter()
                    .map(state::to_value)
                    .collect();
                done(Some(json!({ "models": models })))
            }
            "set_model" => {
                let provider = text_field(command, "provider")?;
                let model_id = text_field(command, "modelId")?;
                let Some(model) = self
                    .available_models()
                    .into_iter()
                    .find(|m| m.provider == provider && m.id == model_id)
                else {
                    return Err(Failure::Message(format!(
                        "Model not found: {provider}/{model_id}"
                    )));
                };
                self.submit(SessionInput::SetModel(model.clone()))?;
                self.answer_model_change(success(id, kind, Some(state::to_value(&model))));
                Ok(None)
            }
            "cycle_model" => {
                let cycled = self.cycle_model()?;
                self.answer_model_change(success(id, kind, Some(cycled)));
                Ok(None)
            }
            "set_thinking_level" => {
                let level = text_field(command, "level")?;
                // Pi 1.5.2 takes any name: one it does not know clamps to the model's first level.
                let level = ThinkingLevel::parse(&level).unwrap_or_else(|| {
                    let model = self.session.machine().agent().model();
                    supported_thinking_levels(model)
                        .first()
                        .copied()
                        .unwrap_or(ThinkingLevel::Off)
                });
                self.submit(SessionInput::SetThinkingLevel(level))?;
                done(None)
            }
            "cycle_thinking_level" => done(Some(self.cycle_thinking_level()?)),
            "get_available_thinking_levels" => {
                let levels: Vec<&str> =
                    supported_thinking_levels(self.session.machine().agent().model())
                        .into_iter()
                        .map(ThinkingLevel::as_str)
                        .collect();
                done(Some(json!({ "levels": levels })))
            }
            "get_entries" => {
                let since = command.get("since");
                state::entries_since(self.session.machine().tree(), since)
                    .map(|data| Some(Some(data)))
                    .ok_or_else(|| {
                        let shown = command.get("since").map(js_string).unwrap_or_default();
                        Failure::Message(format!("Entry not found: {shown}"))
                    })
            }
            "get_tree" => {
                let response = state::tree_response(id, self.session.machine().tree());
                self.out.spelled_json_line(&response);
                Ok(None)
            }
            "set_steering_mode" => {
                let mode = queue_mode(command)?;
                self.submit(SessionInput::SetSteeringMode(mode))?;
                done(None)
            }
            "set_follow_up_mode" => {
                let mode = queue_mode(command)?;
                self.submit(SessionInput::SetFollowUpMode(mode))?;
                done(None)
            }
            "compact" => {
                let custom_instructions = command
                    .get("customInstructions")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                let number = self.session.machine().compacts_accepted() + 1;
                self.compact_waiters.push_back((number, id));
                let submitted = self.submit(SessionInput::Compact {
                    custom_instructions,
                });
                if submitted.is_err() {
                    self.compact_waiters.pop_back();
                }
                submitted?;
                Ok(None)
            }
            "set_auto_compaction" => {
                let enabled = bool_field(command, "enabled")?;
                self.submit(SessionInput::SetAutoCompaction(enabled))?;
                done(None)
            }
            "set_auto_retry" => {
                let enabled = bool_field(command, "enabled")?;
                self.submit(SessionInput::SetAutoRetry(enabled))?;
                done(None)
            }
            "abort_retry" => {
                self.submit(SessionInput::AbortRetry)?;
                done(None)
            }
            "bash" => {
                let text = text_field(command, "command")?;
                let exclude = command.get("excludeFromContext").and_then(Value::as_bool);
                self.bash(id, text, exclude)?;
                Ok(None)
            }
            "abort_bash" => {
                if let Some(cancel) = &self.bash {
                    cancel.cancel();
                }
                if self.asks_user_bash() {
                    self.submit(SessionInput::AbortUserBash)?;
                }
                done(None)
            }
            "set_session_name" => {
                let name = text_field(command, "name")?;
                let name = name.trim();
                if name.is_empty() {
                    return Err(Failure::Message("Session name cannot be empty".into()));
                }
                self.submit(SessionInput::SetSessionName(name.to_owned()))?;
                done(None)
            }
            "new_session" | "switch_session" | "fork" | "clone" | "export_html" => {
                self.replace_command(kind, command)
            }
            _ => Err(Failure::Unknown),
        }
    }

    /// `prompt`: answered once accepted (before the run's first event), or queued while
    /// streaming (after its `queue_update`); refusals are answered with Pi's error.
    fn prompt(&mut self, id: Option<Value>, command: &Value) -> Result<(), Failure> {
        match self.prompted(id, command)? {
            Prompted::Queued { events, response } => {
                for event in &events {
                    self.out.json_line(event);
                }
                self.respond(&response);
            }
            Prompted::Started { response, events } => self.answer_started(response, &events),
            Prompted::Command { events } | Prompted::Deciding { events } => {
                for event in &events {
                    self.out.json_line(event);
                }
            }
        }
        Ok(())
    }

    /// Queues a steer or a follow-up; its answer's data.
    pub(super) fn queue(&mut self, input: SessionInput) -> Result<Value, Failure> {
        self.submit(input)?;
        // Without extensions nothing handles a queued message: it is always queued.
        Ok(disposition(Disposition::Queued))
    }

    /// Feeds a `prompt` to the session; what it printed and its answer, left to the caller to
    /// write (a read's prompts are answered after its queue updates).
    pub(super) fn prompted(
        &mut self,
        id: Option<Value>,
        command: &Value,
    ) -> Result<Prompted, Failure> {
        let text = text_field(command, "message")?;
        let images = images(command)?;
        let streaming_behavior = match command.get("streamingBehavior").and_then(Value::as_str) {
            Some("steer") => Some(StreamingBehavior::Steer),
            Some("followUp") => Some(StreamingBehavior::FollowUp),
            _ => None,
        };
        if self.session.machine().is_extension_command(&text) {
            // Pi runs the command before anything else of the prompt (no key is needed) and
            // answers once it has run.
            self.command_waiters.push_back(id);
            let mut events = Vec::new();
            let replies = self
                .session
                .submit(
                    SessionInput::Prompt {
                        text,
                        images,
                        streaming_behavior,
                    },
                    |event| events.push(event.clone()),
                )
                .map_err(|e| {
                    self.command_waiters.pop_back();
                    Failure::Message(e.to_string())
                })?;
            self.replies(replies);
            return Ok(Prompted::Command { events });
        }
        let streaming = self.session.machine().agent().is_streaming();
        if !streaming {
            let model = self.session.machine().agent().model();
            if !self
                .runtime
                .has_auth_after(model, self.session.machine().provider_changes())
            {
                return Err(Failure::Message(crate::setup::no_api_key_found(
                    &model.provider,
                )));
            }
        }
        let mut events = Vec::new();
        let replies = self
            .session
            .submit(
                SessionInput::Prompt {
                    text,
                    images,
                    streaming_behavior,
                },
                |event| events.push(event.clone()),
            )
            .map_err(|e| Failure::Message(e.to_string()))?;
        if streaming && streaming_behavior.is_none() {
            // Not refused at once: the `input` handlers decide first.
            self.busy_waiters.push_back(id);
            self.replies(replies);
            return Ok(Prompted::Deciding { events });
        }
        let response = success(
            id,
            "prompt",
            Some(disposition(if streaming {
                Disposition::Queued
            } else {
                Disposition::Started
            })),
        );
        self.replies(replies);
        Ok(if streaming {
            Prompted::Queued { events, response }
        } else {
            Prompted::Started { response, events }
        })
    }

    /// Feeds one input now, writing its events; its replies are handled as they come.
    pub(super) fn submit(&mut self, input: SessionInput) -> Result<(), Failure> {
        let writes = settings_writes(&input);
        let out = &mut self.out;
        let replies = self
            .session
            .submit(input, |event| out.json_line(event))
            .map_err(|e| Failure::Message(e.to_string()))?;
        self.replies(replies);
        if matches!(self.role, super::Role::Replaying) {
            // A replay changes nothing on disk but its session file.
            return Ok(());
        }
        for (path, value) in writes {
            let agent_dir = self.runtime.agent_dir.clone();
            if let Err(error) = self.runtime.settings.set_global(&agent_dir, &path, value) {
                self.out.say(format_args!("Warning: {error}"));
            }
        }
        Ok(())
    }

    /// The models a request could be authenticated for, in the registry's order.
    fn available_models(&self) -> Vec<Model> {
        self.runtime
            .available_models_after(self.session.machine().provider_changes())
    }

    /// Pi's `cycleModel` over the available models: `null` with fewer than two.
    fn cycle_model(&mut self) -> Result<Value, Failure> {
        let runtime = &self.runtime;
        let scoped: Vec<(Model, Option<ThinkingLevel>)> = runtime
            .scoped_models
            .iter()
            .filter(|s| runtime.has_auth(&s.model))
            .map(|s| (s.model.clone(), s.thinking))
            .collect();
        let is_scoped = !runtime.scoped_models.is_empty();
        let models = if is_scoped {
            scoped
        } else {
            self.available_models()
                .into_iter()
                .map(|m| (m, None))
                .collect()
        };
        if models.len() <= 1 {
            return Ok(Value::Null);
        }
        let current = self.session.machine().agent().model();
        let index = models
            .iter()
            .position(|(m, _)| m.provider == current.provider && m.id == current.id)
            .unwrap_or(0);
        let (next, thinking) = models[(index + 1) % models.len()].clone();
        self.submit(match thinking {
            Some(level) => SessionInput::SetScopedModel(next.clone(), level),
            None => SessionInput::CycleModel(next.clone()),
        })?;
        let level = self.session.machine().agent().thinking_level();
        Ok(json!({
            "model": state::to_value(&next),
            "thinkingLevel": level.as_str(),
            "isScoped": is_scoped,
        }))
    }

    /// Answers a model change now, or once the `model_select` handlers it caused are done.
    fn answer_model_change(&mut self, response: RpcResponse) {
        match self.session.machine().hearing_session() || !self.model_waiters.is_empty() {
            true => self.model_waiters.push(response),
            false => self.respond(&response),
        }
    }

    /// Pi's `cycleThinkingLevel`: the next supported level, `null` for a model without reasoning.
    fn cycle_thinking_level(&mut self) -> Result<Value, Failure> {
        let agent = self.session.machine().agent();
        if !agent.model().reasoning {
            return Ok(Value::Null);
        }
        let levels = supported_thinking_levels(agent.model());
        let current = agent.thinking_level();
        let index = levels.iter().position(|l| *l == current);
        let next = match index {
            Some(i) => levels[(i + 1) % levels.len()],
            None => levels.first().copied().unwrap_or(ThinkingLevel::Off),
        };
        self.submit(SessionInput::SetThinkingLevel(next))?;
        Ok(json!({ "level": next.as_str() }))
    }

    /// `bash`: the interpreter runs it beside the session (a replay answers it from its
    /// recording); answered, and recorded in the session (with `excludeFromContext` as sent),
    /// when done.
    pub(super) fn start_bash(&mut self, id: Option<Value>, command: String, exclude: Option<bool>) {
        let cancel = CancellationToken::new();
        self.bash = Some(cancel.clone());
        self.bash_excluded
            .push((id.clone(), command.clone(), exclude));
        let done = self.bash_done.clone();
        let generation = self.generation;
        self.session
            .interpreter_mut()
            .run_user_command(UserCommand {
                id,
                command,
                cancel,
                // The receiver lives as long as RPC mode; after it, nobody waits for the answer.
                done: Box::new(move |bash| {
                    let _ = done.send((generation, bash));
                }),
            });
    }

    /// Records a finished `bash` command (Pi's `recordBashResult`) at `finished_at`, the time
    /// the interpreter gave it, and answers it; one whose session was replaced meanwhile
    /// (`finished_at` `None`) is only answered.
    pub(super) fn bash_finished(&mut self, bash: UserBash, finished_at: Option<u64>) {
        self.bash = None;
        let UserBash {
            id,
            command,
            result,
        } = bash;
        let exclude_from_context = self
            .bash_excluded
            .iter()
            .position(|(i, c, _)| *i == id && *c == command)
            .and_then(|index| self.bash_excluded.remove(index).2);
        let result = match result {
            Ok(result) => result,
            Err(message) => {
                self.respond(&failure(id, "bash", message));
                return;
            }
        };
        let Some(finished_at) = finished_at else {
            self.respond(&success(id, "bash", Some(result.to_json())));
            return;
        };
        if !result.output.is_empty() {
            // Pi 1.5.2 streams each chunk as it comes; here the output arrives whole, in one
            // update (the same line for output that comes in one chunk, as a short command's does).
            let mut update = serde_json::Map::new();
            update.insert("type".into(), json!("bash_execution_update"));
            if let Some(id) = &id {
                update.insert("id".into(), id.clone());
            }
            update.insert("delta".into(), json!(result.output));
            self.out.json_line(&Value::Object(update));
        }
        let message = BashExecutionMessage {
            command,
            output: result.output.clone(),
            exit_code: result
                .exit_code
                .map_or(Nullable::Absent, |code| Nullable::Value(i64::from(code))),
            cancelled: result.cancelled,
            truncated: result.truncated,
            full_output_path: result
                .full_output_path
                .as_ref()
                .map(|p| p.display().to_string()),
            timestamp: finished_at,
            exclude_from_context,
            extra: Default::default(),
        };
        match self.submit(SessionInput::BashResult(message)) {
            Ok(()) => self.respond(&success(id, "bash", Some(result.to_json()))),
            Err(Failure::Message(message)) => self.respond(&failure(id, "bash", message)),
            Err(Failure::Unknown) => {}
        }
    }
}

/// What a `prompt` did.
pub(super) enum Prompted {
    /// Queued while streaming: its `queue_update` comes before its answer.
    Queued {
        events: Vec<Event>,
        response: RpcResponse,
    },
    /// Started a run: its answer comes before the run's first events.
    Started {
        response: RpcResponse,
        events: Vec<Event>,
    },
    /// Ran an extension command: its answer (`handled`) comes once the command has run.
    Command { events: Vec<Event> },
    /// Sent while streaming without a behaviour, to the `input` handlers: its answer (Pi's
    /// refusal, or `handled`) comes with their decision.
    Deciding { events: Vec<Event> },
}

/// The session input of a `steer` (`kind`) or `follow_up` command (the session expands
/// `/skill:name` and `/template` after the `input` handlers, as Pi's `steer` and `followUp` do).
pub(super) fn queued_input(kind: &str, command: &Value) -> Result<SessionInput, Failure> {
    let text = text_field(command, "message")?;
    let images = images(command)?;
    Ok(if kind == "steer" {
        SessionInput::Steer { text, images }
    } else {
        SessionInput::FollowUp { text, images }
    })
}

/// Why a command failed.
pub(super) enum Failure {
    /// Not a command Pi knows (answered with the id, which Pi 0.73.1 leaves out).
    Unknown,
    /// Pi's error text, answered with the id.
    Message(String),
}

/// The `id` of a line that is not valid JSON, read with the lenient parser of streamed tool
/// arguments (a truncated line or a stray comma still shows it); only a string or a number
/// counts.
fn salvaged_id(line: &str) -> Option<Value> {
    let value = pi_core::partial_json::parse_streaming_json(line);
    value
        .get("id")
        .filter(|id| id.is_string() || id.is_number())
        .cloned()
}

/// A JSON value as JavaScript's `String()` prints it.
fn js_string(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(_) => pi_core::json::to_string(value).unwrap_or_default(),
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::Null => String::new(),
                other => js_string(other),
            })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".into(),
    }
}

/// A required string field; its absence is reported by name (Pi would fail on `undefined`).
pub(super) fn text_field(command: &Value, name: &str) -> Result<String, Failure> {
    command
        .get(name)
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| Failure::Message(format!("Missing or invalid field: {name}")))
}

fn bool_field(command: &Value, name: &str) -> Result<bool, Failure> {
    command
        .get(name)
        .and_then(Value::as_bool)
        .ok_or_else(|| Failure::Message(format!("Missing or invalid field: {name}")))
}

fn images(command: &Value) -> Result<Vec<ImageContent>, Failure> {
    match command.get("images") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(images) => serde_json::from_value(images.clone())
            .map_err(|e| Failure::Message(format!("Invalid images: {e}"))),
    }
}

fn queue_mode(command: &Value) -> Result<QueueMode, Failure> {
    match command.get("mode").and_then(Value::as_str) {
        Some("all") => Ok(QueueMode::All),
        Some("one-at-a-time") => Ok(QueueMode::OneAtATime),
        _ => Err(Failure::Message("Missing or invalid field: mode".into())),
    }
}

/// What became of a `prompt`, `steer` or `follow_up` (Pi 1.5.2's `data.disposition`).
pub(super) enum Disposition {
    /// A run started with it.
    Started,
    /// It waits in a queue.
    Queued,
    /// An extension command took it.
    Handled,
}

/// `{disposition}`.
pub(super) fn disposition(disposition: Disposition) -> Value {
    let name = match disposition {
        Disposition::Started => "started",
        Disposition::Queued => "queued",
        Disposition::Handled => "handled",
    };
    json!({ "disposition": name })
}

/// The commands Pi 1.5.2 registers itself (`get_commands` lists them as extension commands).
pub(super) const BUILTIN_COMMANDS: &str = include_str!("builtin_commands.json");

/// [`BUILTIN_COMMANDS`], parsed (an empty list if the data were broken, which a test forbids).
fn builtin_commands() -> Value {
    serde_json::from_str(BUILTIN_COMMANDS).unwrap_or_else(|_| json!([]))
}

/// What `get_commands` lists, in Pi's order: the loaded extensions' commands, its own commands
/// (less those whose name an extension took: Pi then leaves that built-in extension out), the
/// prompt templates, then the skills as `skill:<name>`.
fn commands_listed(resources: &Resources) -> Vec<Value> {
    let extensions = &resources.command_listing;
    let mut commands = extensions.clone();
    if let Value::Array(list) = builtin_commands() {
        let taken = |c: &Value| extensions.iter().any(|e| e["name"] == c["name"]);
        commands.extend(list.into_iter().filter(|c| !taken(c)));
    }
    commands.extend(resources.templates.iter().map(|t| {
        json!({
            "name": t.name,
            "description": t.description,
            "source": "prompt",
            "sourceInfo": t.source_info,
        })
    }));
    commands.extend(resources.skills.iter().map(|s| {
        json!({
            "name": format!("skill:{}", s.skill.name),
            "description": s.skill.description,
            "source": "skill",
            "sourceInfo": s.source_info,
        })
    }));
    commands
}

/// The settings Pi saves when a session setting changes (its settings manager's setters).
fn settings_writes(input: &SessionInput) -> Vec<(Vec<&'static str>, Value)> {
    let mode = |mode: &QueueMode| match mode {
        QueueMode::All => json!("all"),
        QueueMode::OneAtATime => json!("one-at-a-time"),
    };
    match input {
        SessionInput::SetSteeringMode(m) => vec![(vec!["steeringMode"], mode(m))],
        SessionInput::SetFollowUpMode(m) => vec![(vec!["followUpMode"], mode(m))],
        SessionInput::SetAutoCompaction(on) => vec![(vec!["compaction", "enabled"], json!(on))],
        SessionInput::SetAutoRetry(on) => vec![(vec!["retry", "enabled"], json!(on))],
        // Pi 1.5.2 saves neither the model nor the thinking level from RPC (`setModel` and
        // `setThinkingLevel` persist only when asked to, which RPC never does).
        _ => Vec::new(),
    }
}
