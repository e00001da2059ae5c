//! How the handlers' answers at one hook point compose into its decision (Pi 1.5.2's
//! `ExtensionRunner` `emit*` methods), one handler at a time.

use super::boundary::BoundaryDraft;
use super::hooks::{
    CommandAsk, DiscoveredPath, DiscoveredResources, HandlerResult, HookDecision, HookPayload,
    InjectedMessage, InputAction, LoadoutChanges, PreparedArguments, SuppliedCompaction,
    ToolCallVerdict, TreeAnswer, UserBashAnswer, WarmAction, TOOL_BLOCKED,
};
use super::model_route::RouteDecision;
use crate::message::ImageContent;

/// Folds handler results into a decision, one handler at a time, with Pi 1.5.2's rules
/// (`ExtensionRunner.emitToolCall`, `emitToolResult`, `emitInput`, `emitBeforeAgentStart`,
/// `emitContext`: each handler sees the messages the one before it returned;
/// `emitCacheWarmingDecision`: the last action returned wins; `emit` of a `session_before_*`
/// event: the last object returned wins, a cancel ends the round).
#[derive(Clone, Debug)]
pub struct Composer {
    /// What the next handler sees.
    payload: HookPayload,
    decision: Option<HookDecision>,
    stopped: bool,
    result_changed: bool,
    messages: Vec<InjectedMessage>,
    system_prompt: Option<String>,
    original_input: Option<(String, Vec<ImageContent>)>,
    /// The last action a `cache_warming_decision` handler returned.
    warm_action: Option<WarmAction>,
    /// The last object a `session_before_compact` handler returned.
    before_compact: Option<(bool, Option<SuppliedCompaction>)>,
    /// A boundary's drafts and `continue` as the handlers so far left them.
    boundary: Option<(Vec<BoundaryDraft>, bool)>,
    /// Whether the last object a `session_before_switch`/`_fork` handler returned cancels.
    before_replace: bool,
    /// The last object a `session_before_tree` handler returned.
    before_tree: TreeAnswer,
    /// The paths the `resources_discover` handlers named so far.
    discovered: DiscoveredResources,
    /// What a command's handler stopped to ask of the session.
    command_asked: Option<(u64, CommandAsk)>,
    /// The error an invalid answer is reported with (see [`Composer::take_rejected`]).
    rejected: Option<String>,
}

impl Composer {
    /// A fold over the handlers of `payload`'s hook point.
    pub fn new(payload: HookPayload) -> Self {
        let original_input = match &payload {
            HookPayload::Input { text, images, .. } => Some((text.clone(), images.clone())),
            _ => None,
        };
        Composer {
            payload,
            decision: None,
            stopped: false,
            result_changed: false,
            messages: Vec::new(),
            system_prompt: None,
            original_input,
            warm_action: None,
            before_compact: None,
            boundary: None,
            before_replace: false,
            before_tree: TreeAnswer::default(),
            discovered: DiscoveredResources::default(),
            command_asked: None,
            rejected: None,
        }
    }

    /// What the next handler is shown: the event with the earlier handlers' changes.
    pub fn payload(&self) -> &HookPayload {
        &self.payload
    }

    /// Whether a handler ended the fold (a block, a thrown gate, a handled input): the handlers
    /// after it are not called.
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    /// Takes one handler's answer. A result for another hook point is ignored, as Pi ignores
    /// fields it does not read.
    pub fn apply(&mut self, result: Option<HandlerResult>) {
        self.apply_from("", result);
    }

    /// [`apply`](Self::apply) for the answer of extension `extension` (the paths a
    /// `resources_discover` handler names are its).
    pub fn apply_from(&mut self, extension: &str, result: Option<HandlerResult>) {
        if self.stopped {
            return;
        }
        match (&mut self.payload, result) {
            (
                HookPayload::ToolCall { input: current, .. },
                Some(HandlerResult::ToolCall {
                    block,
                    reason,
                    terminate,
                    input,
                }),
            ) => {
                if let Some(input) = input {
                    *current = input;
                }
                if block {
                    self.decision = Some(HookDecision::ToolCall(ToolCallVerdict::Block {
                        reason: reason
                            .filter(|r| !r.is_empty())
                            .unwrap_or_else(|| TOOL_BLOCKED.to_owned()),
                        terminate: terminate.filter(|t| *t),
                    }));
                    self.stopped = true;
                }
            }
            (
                HookPayload::ToolResult {
                    content: c,
                    details: d,
                    is_error: e,
                    ..
                },
                Some(HandlerResult::ToolResult {
                    content,
                    details,
                    is_error,
                }),
            ) => {
                if let Some(content) = content {
                    *c = content;
                    self.result_changed = true;
                }
                if let Some(details) = details {
                    *d = Some(details);
                    self.result_changed = true;
                }
                if let Some(is_error) = is_error {
                    *e = is_error;
                    self.result_changed = true;
                }
            }
            (HookPayload::Input { text, images, .. }, Some(HandlerResult::Input(action))) => {
                match action {
                    InputAction::Continue => {}
                    InputAction::Transform {
                        text: new_text,
                        images: new_images,
                    } => {
                        *text = new_text;
                        if let Some(new_images) = new_images {
                            *images = new_images;
                        }
                    }
                    InputAction::Handled => {
                        self.decision = Some(HookDecision::Input(InputAction::Handled));
                        self.stopped = true;
                    }
                }
            }
            (
                HookPayload::Context { messages: current }
                | HookPayload::ContextWithSystem { messages: current },
                Some(HandlerResult::Context {
                    messages: Some(messages),
                }),
            ) => {
                *current = messages;
                self.result_changed = true;
            }
            (
                HookPayload::BeforeAgentStart { system_prompt, .. },
                Some(HandlerResult::BeforeAgentStart {
                    messages,
                    message,
                    system_prompt: new_prompt,
                }),
            ) => {
                self.messages.extend(messages);
                self.messages.extend(message);
                if let Some(new_prompt) = new_prompt {
                    *system_prompt = new_prompt.clone();
                    self.system_prompt = Some(new_prompt);
                }
            }
            (
                HookPayload::CacheWarmingDecision { .. },
                Some(HandlerResult::CacheWarmingDecision {
                    action: Some(action),
                }),
            ) => self.warm_action = Some(action),
            (
                HookPayload::MessageEnd { message: current },
                Some(HandlerResult::MessageEnd { message }),
            ) if std::mem::discriminant(current) == std::mem::discriminant(&message) => {
                *current = message;
                self.result_changed = true;
            }
            (
                HookPayload::BeforeProviderHeaders {
                    headers: current, ..
                },
                Some(HandlerResult::BeforeProviderHeaders { headers }),
            ) => *current = headers,
            (
                HookPayload::BeforeProviderRequest {
                    payload: current, ..
                },
                Some(HandlerResult::BeforeProviderRequest { payload }),
            ) => *current = payload,
            (
                HookPayload::SessionBeforeCompact { .. },
                Some(HandlerResult::SessionBeforeCompact { cancel, compaction }),
            ) => {
                self.stopped = cancel;
                self.before_compact = Some((cancel, compaction));
            }
            (
                HookPayload::TurnEnd { .. } | HookPayload::AgentBeforeSettle { .. },
                Some(HandlerResult::Boundary {
                    entries,
                    continue_run,
                }),
            ) => {
                let (drafts, go_on) = self.boundary.get_or_insert_with(|| (Vec::new(), false));
                if let Some(entries) = entries {
                    *drafts = entries;
                }
                if let Some(continue_run) = continue_run {
                    *go_on = continue_run;
                }
            }
            (
                HookPayload::SessionBeforeSwitch { .. } | HookPayload::SessionBeforeFork { .. },
                Some(HandlerResult::SessionBeforeReplace { cancel }),
            ) => {
                self.stopped = cancel;
                self.before_replace = cancel;
            }
            (
                HookPayload::Command { .. } | HookPayload::CommandResume { .. },
                Some(HandlerResult::CommandAsked { run, ask }),
            ) => {
                self.command_asked = Some((run, ask));
            }
            (
                HookPayload::PrepareArguments { .. },
                Some(HandlerResult::PrepareArguments(prepared)),
            ) => {
                self.decision = Some(HookDecision::PrepareArguments(prepared));
                self.stopped = true;
            }
            (HookPayload::RouteModel(_), Some(HandlerResult::RouteModel(decision))) => {
                self.decision = Some(HookDecision::RouteModel(decision));
                self.stopped = true;
            }
            (HookPayload::PrepareLoadout { .. }, Some(HandlerResult::PrepareLoadout(changes))) => {
                let HookDecision::PrepareLoadout(merged) = self
                    .decision
                    .get_or_insert_with(|| HookDecision::PrepareLoadout(LoadoutChanges::default()))
                else {
                    return;
                };
                merged.descriptions.extend(changes.descriptions);
                for name in changes.hidden_declarations {
                    if !merged.hidden_declarations.contains(&name) {
                        merged.hidden_declarations.push(name);
                    }
                }
            }
            (
                HookPayload::SessionBeforeTree { .. },
                Some(HandlerResult::SessionBeforeTree(answer)),
            ) => {
                self.stopped = answer.cancel;
                self.before_tree = answer;
            }
            (
                HookPayload::ResourcesDiscover { .. },
                Some(HandlerResult::ResourcesDiscover {
                    skill_paths,
                    prompt_paths,
                    theme_paths,
                }),
            ) => {
                let tag = |paths: Vec<String>| {
                    paths.into_iter().map(|path| DiscoveredPath {
                        path,
                        extension: extension.to_owned(),
                    })
                };
                let found = &mut self.discovered;
                found.skill_paths.extend(tag(skill_paths));
                found.prompt_paths.extend(tag(prompt_paths));
                found.theme_paths.extend(tag(theme_paths));
            }
            (HookPayload::UserBash { .. }, Some(HandlerResult::UserBash(handled))) => {
                // The first handler that answers decides (Pi's `emitUserBash` returns it); an
                // invalid answer is that handler's error.
                let answer = UserBashAnswer::of(handled);
                if let UserBashAnswer::Failed { error } = &answer {
                    self.rejected = Some(error.clone());
                }
                self.decision = Some(HookDecision::UserBash {
                    answer: Some(answer),
                });
                self.stopped = true;
            }
            _ => {}
        }
    }

    /// The error the last handler's answer is reported with, as if it had thrown it (Pi's
    /// `emitUserBash` throws at an invalid answer), taken once.
    pub fn take_rejected(&mut self) -> Option<String> {
        self.rejected.take()
    }

    /// A handler threw. A `tool_call` gate fails the call with the error (Pi lets it propagate);
    /// elsewhere the error is reported and the fold goes on.
    pub fn thrown(&mut self, error: String) {
        if self.stopped {
            return;
        }
        match self.payload {
            HookPayload::ToolCall { .. } => {
                self.decision = Some(HookDecision::ToolCall(ToolCallVerdict::Thrown { error }));
                self.stopped = true;
            }
            // A router's throw fails the request (Pi's `prepareRequest` rejects).
            HookPayload::RouteModel(_) => {
                self.decision = Some(HookDecision::RouteModel(RouteDecision::Failed { error }));
                self.stopped = true;
            }
            // The shim's throw fails the call (Pi's `prepareToolCall` catches it).
            HookPayload::PrepareArguments { .. } => {
                self.decision = Some(HookDecision::PrepareArguments(PreparedArguments::Thrown {
                    error,
                    model_arguments: None,
                }));
                self.stopped = true;
            }
            // Pi's `emitUserBash` reports the error and throws it on: the command fails.
            HookPayload::UserBash { .. } => {
                self.decision = Some(HookDecision::UserBash {
                    answer: Some(UserBashAnswer::Failed { error }),
                });
                self.stopped = true;
            }
            _ => {}
        }
    }

    /// The composed decision.
    pub fn finish(self) -> HookDecision {
        if let Some(decision) = self.decision {
            return decision;
        }
        match self.payload {
            HookPayload::ToolCall { input, .. } => {
                HookDecision::ToolCall(ToolCallVerdict::Run { input })
            }
            HookPayload::ToolResult {
                content,
                details,
                is_error,
                ..
            } => match self.result_changed {
                true => HookDecision::ToolResult {
                    content: Some(content),
                    details,
                    is_error: Some(is_error),
                },
                false => HookDecision::ToolResult {
                    content: None,
                    details: None,
                    is_error: None,
                },
            },
            HookPayload::Input { text, images, .. } => match self.original_input {
                Some((t, i)) if t == text && i == images => {
                    HookDecision::Input(InputAction::Continue)
                }
                _ => HookDecision::Input(InputAction::Transform {
                    text,
                    images: Some(images),
                }),
            },
            HookPayload::BeforeAgentStart { .. } => HookDecision::BeforeAgentStart {
                messages: self.messages,
                system_prompt: self.system_prompt,
            },
            HookPayload::TurnEnd { .. } | HookPayload::AgentBeforeSettle { .. } => {
                match self.boundary {
                    Some((entries, continue_run)) if !entries.is_empty() || continue_run => {
                        HookDecision::Boundary {
                            entries,
                            continue_run,
                        }
                    }
                    _ => HookDecision::Done,
                }
            }
            HookPayload::Command { .. } | HookPayload::CommandResume { .. } => {
                match self.command_asked {
                    Some((run, ask)) => HookDecision::CommandAsked { run, ask },
                    None => HookDecision::Done,
                }
            }
            HookPayload::SessionCompact { .. }
            | HookPayload::SessionCompactFailed { .. }
            | HookPayload::CompactEnd { .. }
            | HookPayload::AgentStart
            | HookPayload::AgentEnd { .. }
            | HookPayload::TurnStart { .. }
            | HookPayload::MessageStart { .. }
            | HookPayload::MessageUpdate { .. }
            | HookPayload::ToolExecutionStart { .. }
            | HookPayload::ToolExecutionUpdate { .. }
            | HookPayload::ToolExecutionEnd { .. }
            | HookPayload::SessionStart { .. }
            | HookPayload::SessionShutdown { .. }
            | HookPayload::ModelSelect { .. }
            | HookPayload::ThinkingLevelSelect { .. }
            | HookPayload::SessionTree { .. }
            | HookPayload::AgentSettled { .. }
            | HookPayload::SessionInfoChanged { .. }
            | HookPayload::McpServersChange { .. }
            | HookPayload::AfterProviderResponse { .. }
            | HookPayload::ProviderStreamEvent { .. } => HookDecision::Done,
            HookPayload::UserBash { .. } => HookDecision::UserBash { answer: None },
            HookPayload::PrepareArguments { arguments, .. } => {
                HookDecision::PrepareArguments(PreparedArguments::Prepared {
                    arguments: Some(arguments),
                    model_arguments: None,
                })
            }
            HookPayload::RouteModel(question) => {
                HookDecision::RouteModel(RouteDecision::unregistered(&question))
            }
            HookPayload::PrepareLoadout { .. } => {
                HookDecision::PrepareLoadout(LoadoutChanges::default())
            }
            HookPayload::ResourcesDiscover { .. } => {
                HookDecision::ResourcesDiscover(Box::new(self.discovered))
            }
            HookPayload::BeforeProviderHeaders { headers, .. } => {
                HookDecision::BeforeProviderHeaders { headers }
            }
            HookPayload::BeforeProviderRequest { payload, .. } => {
                HookDecision::BeforeProviderRequest { payload }
            }
            HookPayload::MessageEnd { message } => match self.result_changed {
                true => HookDecision::MessageEnd { message },
                false => HookDecision::Done,
            },
            HookPayload::SessionBeforeCompact { .. } => {
                let (cancel, compaction) = self.before_compact.unwrap_or((false, None));
                HookDecision::SessionBeforeCompact { cancel, compaction }
            }
            HookPayload::SessionBeforeSwitch { .. } | HookPayload::SessionBeforeFork { .. } => {
                HookDecision::SessionBeforeReplace {
                    cancel: self.before_replace,
                }
            }
            HookPayload::SessionBeforeTree { .. } => {
                HookDecision::SessionBeforeTree(self.before_tree)
            }
            HookPayload::Context { messages } | HookPayload::ContextWithSystem { messages } => {
                HookDecision::Context {
                    messages: self.result_changed.then_some(messages),
                }
            }
            HookPayload::CacheWarmingDecision { action, .. } => {
                HookDecision::CacheWarmingDecision {
                    action: self.warm_action.unwrap_or(action),
                }
            }
        }
    }
}
