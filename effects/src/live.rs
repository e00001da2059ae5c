//! The Live interpreter: model calls over HTTP (or any [`HttpTransport`]), Pi's tools on real
//! files and processes, timers; all its times from one [`Clock`]. Every effect runs as its own
//! task; answers are collected on one channel in the order they happen, so tools the core runs
//! in parallel really do run in parallel.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::Value;

use pi_core::agent::{CallId, Effect, Input, ModelRequest, StreamEvent, ToolOutcome};
use pi_core::agent_session::SessionInput;
use pi_core::message::{AssistantMessage, StopReason};
use pi_core::model::ThinkingLevel;
use pi_core::tools::tool_search::{SearchableTool, TOOL_SEARCH_TOOL_NAME};
use pi_providers::call::ModelCall;
use pi_providers::transport::HttpTransport;
use pi_providers::CallOptions;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::custom_tool::{CustomToolDefinition, ToolSignal};
use crate::driver::{
    FrontEndInput, FrontEndNext, InterpretError, Interpreter, UserBash, UserCommand,
};
use crate::extension::{
    ExtensionRegistry, HandledHooks, HookEvent, HookPayload, HookState, MissingExtension, World,
};
use crate::tools::user_bash::execute_bash;
use crate::tools::{self, ToolContext, ToolEnv};

/// The per-call options (API key, headers, settings) for a model, or the error Pi throws when
/// there is no key (`No API key for provider: <p>`).
pub type CallOptionsFor = Arc<dyn Fn(&ModelRequest) -> Result<CallOptions, String> + Send + Sync>;

/// A model call as it starts: what a recorder writes down before its bytes.
#[derive(Debug)]
pub struct CallStart<'a> {
    pub call: CallId,
    /// The one clock reading of the call's start (the message's `timestamp`).
    pub started_at: u64,
    /// The options it is sent with (key, headers, settings).
    pub options: &'a CallOptions,
}

/// The transport one model call goes over, given the call as it starts and the interpreter's
/// transport: a recorder wraps it to write the call's bytes down.
pub type CallTransportFor =
    Arc<dyn Fn(&CallStart<'_>, &Arc<dyn HttpTransport>) -> Arc<dyn HttpTransport> + Send + Sync>;

/// Performs effects for real, over any [`HttpTransport`] and reading one [`Clock`].
pub struct Live {
    transport: Arc<dyn HttpTransport>,
    call_transport: Option<CallTransportFor>,
    clock: Arc<dyn Clock>,
    options_for: CallOptionsFor,
    tools: ToolEnv,
    answers_tx: UnboundedSender<(u64, SessionInput)>,
    answers: UnboundedReceiver<(u64, SessionInput)>,
    commands: Option<UnboundedReceiver<SessionInput>>,
    running: HashMap<CallId, CancellationToken>,
    /// Model calls asked for and not yet sent: they go out when the front end next waits.
    unsent_models: Vec<(CallId, ModelRequest, CancellationToken)>,
    extensions: ExtensionRegistry,
    /// The hook points a recording being continued had handlers for (a hybrid replay).
    expected_hooks: HandledHooks,
    /// A hook point reached that the recording handled and no extension loaded here does.
    missing_hook: Option<HookEvent>,
    /// The hook handlers' abort (Pi's `ctx.signal`): cancelled when an abort comes from
    /// outside, then replaced for the hook points after it.
    abort_signal: CancellationToken,
    /// The tools waiting for their nested calls' outcomes, by the nested call's id
    /// (`<caller's id>/<n>`, numbered as the machine numbers them).
    nested: NestedWaiting,
}

type NestedWaiting = Arc<std::sync::Mutex<HashMap<String, tokio::sync::oneshot::Sender<Value>>>>;

impl std::fmt::Debug for Live {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Live")
            .field("tools", &self.tools)
            .field("running", &self.running.len())
            .finish_non_exhaustive()
    }
}

impl Live {
    /// A live interpreter whose model calls go over `transport` and whose every time reading,
    /// wait and retry jitter comes from `clock`. Must be used inside a tokio runtime.
    pub fn new(
        transport: Arc<dyn HttpTransport>,
        clock: Arc<dyn Clock>,
        options_for: CallOptionsFor,
        tools: ToolEnv,
    ) -> Self {
        let (answers_tx, answers) = unbounded_channel();
        Live {
            transport,
            call_transport: None,
            clock,
            options_for,
            tools,
            answers_tx,
            answers,
            commands: None,
            running: HashMap::new(),
            unsent_models: Vec::new(),
            extensions: ExtensionRegistry::new(),
            expected_hooks: HandledHooks::default(),
            missing_hook: None,
            abort_signal: CancellationToken::new(),
            nested: NestedWaiting::default(),
        }
    }

    /// An input from outside: an abort stops the waits of the hook handlers running (a
    /// `tool_search`'s wait for the MCP servers connecting in the background, as Pi's handler
    /// hears the abort on `ctx.signal`).
    fn heard(&mut self, input: &SessionInput) {
        if matches!(input, SessionInput::Abort) {
            std::mem::take(&mut self.abort_signal).cancel();
        }
    }

    /// Tools that name the files they leave from the run of `seed` started at `started_at`
    /// (see `ToolEnv::run`).
    pub fn for_run(mut self, seed: u64, started_at: u64) -> Self {
        self.tools = self.tools.clone().for_run(seed, started_at);
        self
    }

    /// Runs again the tools of a run that declared `declared` as custom tools (a hybrid
    /// replay going live): see [`crate::custom_tool::ToolRegistry::expecting`].
    pub fn expecting_custom_tools(mut self, declared: &[CustomToolDefinition]) -> Self {
        self.tools.custom = self.tools.custom.clone().expecting(declared);
        self
    }

    /// Sends each model call over the transport `for_call` gives (see [`CallTransportFor`]).
    pub fn with_call_transport(mut self, for_call: CallTransportFor) -> Self {
        self.call_transport = Some(for_call);
        self
    }

    /// Answers the machine's hook points with these extensions' decisions.
    pub fn with_extensions(mut self, extensions: ExtensionRegistry) -> Self {
        self.extensions = extensions;
        self
    }

    /// Continues a recording whose extensions handled `recorded`: a hook point among them that
    /// no extension loaded here handles stops the run with [`MissingExtension`] rather than
    /// pass for a point nobody handles (a gate's absence would let every call run).
    pub fn expecting_hooks(mut self, recorded: &HandledHooks) -> Self {
        self.expected_hooks = recorded.clone();
        self
    }

    /// Inputs from outside (steer, abort, prompts while streaming) delivered between answers.
    pub fn with_commands(mut self, commands: UnboundedReceiver<SessionInput>) -> Self {
        self.commands = Some(commands);
        self
    }

    fn spawn_model(&mut self, call: CallId, request: ModelRequest, cancel: CancellationToken) {
        let tx = self.answers_tx.clone();
        let clock = Arc::clone(&self.clock);
        // One reading: the message's `timestamp`, the request's and Gemini's tool-call ids.
        let started_at = clock.now_ms();
        let stamp = Arc::clone(&clock);
        // Every event decoded from one read is stamped with one reading of the clock.
        let send_all = move |inputs: Vec<Input>| {
            let now = stamp.now_ms();
            for input in inputs {
                // The receiver lives as long as the interpreter; a send after it is gone has
                // no one left to tell.
                let _ = tx.send((now, SessionInput::Answer(input)));
            }
        };
        let options = match (self.options_for)(&request) {
            Ok(options) => options,
            Err(error) => {
                send_all(vec![Input::ModelFailed { call, error }]);
                return;
            }
        };
        let transport = match &self.call_transport {
            Some(for_call) => for_call(
                &CallStart {
                    call,
                    started_at,
                    options: &options,
                },
                &self.transport,
            ),
            None => Arc::clone(&self.transport),
        };
        let head = AssistantMessage {
            api: request.model.api.clone(),
            provider: request.model.provider.clone(),
            model: request.model.id.clone(),
            timestamp: started_at,
            ..AssistantMessage::default()
        };
        let started = Arc::new(AtomicBool::new(false));
        let streaming = Arc::clone(&started);
        let send_events = {
            let send_all = send_all.clone();
            move |events: Vec<StreamEvent>| {
                if events.is_empty() {
                    return;
                }
                streaming.store(true, Ordering::Relaxed);
                send_all(
                    events
                        .into_iter()
                        .map(|event| Input::Model { call, event })
                        .collect(),
                );
            }
        };
        let running = tokio::spawn(async move {
            let mut model_call = ModelCall::new(&request, &options, started_at);
            let opened = tokio::select! {
                biased;
                () = cancel.cancelled() => None,
                events = model_call.open(&*transport, &*clock) => Some(events),
            };
            send_events(opened.unwrap_or_else(|| model_call.abort()));
            while !model_call.is_done() {
                let next = tokio::select! {
                    events = model_call.next() => Some(events),
                    () = cancel.cancelled() => None,
                };
                send_events(next.unwrap_or_else(|| model_call.abort()));
            }
        });
        // A call whose task panics still ends, so the run cannot wait for it forever.
        tokio::spawn(async move {
            let Err(panic) = running.await else {
                return;
            };
            let error = format!("Model call failed: {panic}");
            if started.load(Ordering::Relaxed) {
                let error = AssistantMessage {
                    stop_reason: StopReason::Error,
                    error_message: Some(error),
                    ..head
                };
                send_all(vec![Input::Model {
                    call,
                    event: StreamEvent::Error {
                        reason: StopReason::Error,
                        error,
                    },
                }]);
            } else {
                send_all(vec![Input::ModelFailed { call, error }]);
            }
        });
    }

    fn spawn_tool(
        &mut self,
        call: CallId,
        tool_call_id: String,
        tool: String,
        args: serde_json::Value,
        state: Option<Arc<HookState>>,
    ) {
        let cancel = CancellationToken::new();
        self.running.insert(call, cancel.clone());
        let tx = self.answers_tx.clone();
        let mut env = self.tools.clone();
        let nested = Arc::clone(&self.nested);
        let extensions = self.extensions.clone();
        let caller_id = tool_call_id.clone();
        env.tool_call_id = Some(tool_call_id);
        env.call_state = state;
        // A custom tool's updates and actions come on one channel, in the order sent; a
        // built-in's updates on their own.
        let (signals, mut signalled) = unbounded_channel();
        env.tool_signals = Some(signals);
        let env = Arc::new(env);
        let clock = Arc::clone(&self.clock);
        tokio::spawn(async move {
            let (updates, mut partials) = unbounded_channel();
            let cx = ToolContext { cancel, updates };
            let forward_tx = tx.clone();
            let forward_clock = Arc::clone(&clock);
            let forward = tokio::spawn(async move {
                let (mut partials_open, mut signals_open) = (true, true);
                let mut asked = 0u32;
                let mut refused = None;
                while partials_open || signals_open {
                    let input = tokio::select! {
                        partial = partials.recv(), if partials_open => match partial {
                            Some(partial) => Input::ToolUpdate { call, partial },
                            None => {
                                partials_open = false;
                                continue;
                            }
                        },
                        signal = signalled.recv(), if signals_open => match signal {
                            Some(ToolSignal::Update(partial)) => Input::ToolUpdate { call, partial },
                            Some(ToolSignal::Acted(mut action)) => {
                                // A provider change reaches the registry before it is recorded.
                                // One it refuses is dropped, and fails the tool with its error,
                                // as Pi's `pi.registerProvider` throws it into `execute`.
                                if let Err(error) = extensions.apply_tool_action(&mut action) {
                                    refused.get_or_insert(error.error);
                                    continue;
                                }
                                Input::ToolActed { call, action }
                            }
                            Some(ToolSignal::Nested { name, args, answer }) => {
                                asked += 1;
                                if let Ok(mut waiting) = nested.lock() {
                                    waiting.insert(format!("{caller_id}/{asked}"), answer);
                                }
                                Input::ToolNested { call, name, args }
                            }
                            None => {
                                signals_open = false;
                                continue;
                            }
                        },
                    };
                    let now = forward_clock.now_ms();
                    let _ = forward_tx.send((now, SessionInput::Answer(input)));
                }
                refused
            });
            // A tool that panics still answers its call, so the run cannot hang on it.
            let running = tokio::spawn(async move { tools::run(&env, &tool, &args, &cx).await });
            let outcome = running.await.unwrap_or_else(|error| {
                ToolOutcome::Thrown(format!("Tool execution failed: {error}"))
            });
            // Updates sent before the result reach the core before it.
            let outcome = match forward.await {
                Ok(Some(refused)) => ToolOutcome::Thrown(refused),
                _ => outcome,
            };
            let input = Input::ToolFinished { call, outcome };
            let _ = tx.send((clock.now_ms(), SessionInput::Answer(input)));
        });
    }

    /// Answers a `tool_search` call at once: it ranks what the session gave it and runs nothing
    /// (the session loads the matches when the result arrives).
    fn answer_search(
        &mut self,
        call: CallId,
        args: &serde_json::Value,
        candidates: &[SearchableTool],
    ) {
        let outcome = tools::tool_search_outcome(args, candidates);
        self.running.insert(call, CancellationToken::new());
        let input = Input::ToolFinished { call, outcome };
        let _ = self
            .answers_tx
            .send((self.clock.now_ms(), SessionInput::Answer(input)));
    }

    /// Asks the extensions at a hook point. A handler that panics counts as one that threw, so
    /// the machine always gets its decision.
    /// Shows the extensions the session's state at a hook point answered elsewhere (a hybrid
    /// run's replayed part), so that their mirror of it stays whole when the run goes live.
    pub fn observe_hook(&self, state: &HookState) {
        self.extensions.observe(state);
    }

    fn spawn_hook(
        &mut self,
        call: CallId,
        mut payload: HookPayload,
        state: Option<Box<HookState>>,
    ) {
        self.fill_provider_payload(&mut payload);
        let state: Option<Arc<HookState>> = state.map(Arc::from);
        if let Some(state) = &state {
            self.extensions.observe(state);
        }
        let event = payload.event();
        if self.expected_hooks.contains(event) && !self.extensions.handled().contains(event) {
            self.missing_hook.get_or_insert(event);
            return;
        }
        // The session cancels the call to fire the handlers' signal (an aborted compaction's);
        // an abort of the run fires it too.
        let signal = self.abort_signal.child_token();
        self.running.insert(call, signal.clone());
        let tx = self.answers_tx.clone();
        let clock = Arc::clone(&self.clock);
        let extensions = self.extensions.clone();
        tokio::spawn(async move {
            let world = World::of(&payload);
            let outcome = extensions.decide_with(payload, state, signal).await;
            let outcome = world.carry_out(outcome).await;
            let input = Input::HookDecided { call, outcome };
            let _ = tx.send((clock.now_ms(), SessionInput::Answer(input)));
        });
    }
}

impl Live {
    /// The provider hooks are asked with what only the world knows (the registry's headers,
    /// the providers' body): both are filled in here from the request the question carries,
    /// as the call would send them. What a recording holds stays the machine's question.
    fn fill_provider_payload(&self, payload: &mut HookPayload) {
        match payload {
            HookPayload::BeforeProviderHeaders {
                headers,
                request: Some(request),
            } => {
                if let Ok(options) = (self.options_for)(request) {
                    *headers = ModelCall::hook_headers(&options);
                }
            }
            HookPayload::BeforeProviderRequest {
                payload,
                request: Some(request),
            } => {
                if let Ok(options) = (self.options_for)(request) {
                    let call = ModelCall::new(request, &options, self.clock.now_ms());
                    if let Some(http) = call.http_request() {
                        *payload = http.body.to_value().into_owned();
                    }
                }
            }
            _ => {}
        }
    }
}

/// A dropped interpreter cancels what it started: model connections close and tools stop (a
/// command's whole process group is killed), so nothing outlives the session that asked for it.
impl Drop for Live {
    fn drop(&mut self) {
        for token in self.running.values() {
            token.cancel();
        }
    }
}

impl Interpreter for Live {
    fn outside(&mut self, input: SessionInput) -> Result<(u64, SessionInput), InterpretError> {
        self.heard(&input);
        Ok((self.clock.now_ms(), input))
    }

    fn arrived(
        &mut self,
        input: FrontEndInput,
    ) -> Result<Option<(u64, FrontEndInput)>, InterpretError> {
        Ok(Some((self.clock.now_ms(), input)))
    }

    /// The front end's inputs come from its own sources (stdin, its commands).
    fn front_end(&mut self, _busy: bool) -> FrontEndNext {
        FrontEndNext::Nothing
    }

    fn reload_extensions(
        &mut self,
        extensions: ExtensionRegistry,
        tools: &crate::custom_tool::ToolRegistry,
    ) {
        self.extensions = extensions;
        self.tools.custom.register_all(tools);
    }

    /// A real process in the tools' working directory, with their shell, prefix and
    /// environment; it outlives a replaced session, as Pi's does, and its cancel stops it.
    fn run_user_command(&mut self, run: UserCommand) {
        let mut env = self.tools.clone();
        env.session_variables = None;
        tokio::spawn(async move {
            let result = execute_bash(&env, &run.command, &run.cancel, None).await;
            (run.done)(UserBash {
                id: run.id,
                command: run.command,
                result,
            });
        });
    }

    fn start(&mut self, effect: Effect) {
        match effect {
            Effect::CallModel { call, request } => {
                // Tools answer the model of the latest call (the run's model).
                self.tools.model_accepts_images = request.model.input.iter().any(|i| i == "image");
                if let Some(session) = &mut self.tools.session_variables {
                    session.model =
                        Some((request.model.provider.clone(), request.model.id.clone()));
                    let level = request.reasoning.unwrap_or(ThinkingLevel::Off);
                    session.reasoning_level = Some(level.as_str().to_owned());
                }
                // Sent once the front end waits for answers ([`Interpreter::next`]): a call it
                // cancels first (print mode's failed prompt disposing the session) goes out
                // never, as Pi's aborted fetch, rather than whenever a worker thread gets to it.
                let cancel = CancellationToken::new();
                self.running.insert(call, cancel.clone());
                self.unsent_models.push((call, request, cancel));
            }
            Effect::RunTool {
                call,
                tool_call_id,
                tool,
                args,
                search,
                state,
            } => match search {
                Some(candidates) if tool == TOOL_SEARCH_TOOL_NAME => {
                    self.answer_search(call, &args, &candidates)
                }
                _ => {
                    // The state a tool's context reads moves the extensions' mirror on in
                    // effect order, as a hook point's does.
                    let state: Option<Arc<HookState>> = state.map(Arc::from);
                    if let Some(state) = &state {
                        self.extensions.observe(state);
                    }
                    self.spawn_tool(call, tool_call_id, tool, args, state);
                }
            },
            Effect::Cancel { call } => {
                if let Some(token) = self.running.get(&call) {
                    token.cancel();
                }
            }
            Effect::Hook {
                call,
                payload,
                state,
            } => self.spawn_hook(call, payload, state),
            Effect::AnswerNested {
                tool_call_id,
                outcome,
                ..
            } => {
                let waiting = self
                    .nested
                    .lock()
                    .ok()
                    .and_then(|mut w| w.remove(&tool_call_id));
                // A tool gone meanwhile wants no answer.
                if let Some(answer) = waiting {
                    let _ = answer.send(outcome);
                }
            }
        }
    }

    async fn next(&mut self, wake_at: Option<u64>) -> Result<(u64, SessionInput), InterpretError> {
        if let Some(event) = self.missing_hook {
            return Err(InterpretError::Halted(Box::new(MissingExtension { event })));
        }
        for (call, request, cancel) in std::mem::take(&mut self.unsent_models) {
            self.spawn_model(call, request, cancel);
        }
        if self.running.is_empty() && wake_at.is_none() {
            // Nothing can answer: only a command already sent could still move the session.
            return match self.commands.as_mut().map(|c| c.try_recv()) {
                Some(Ok(command)) => {
                    self.heard(&command);
                    Ok((self.clock.now_ms(), command))
                }
                _ => Err(InterpretError::Idle),
            };
        }
        let clock = Arc::clone(&self.clock);
        let sleep = async {
            match wake_at {
                Some(at) => clock.sleep(at.saturating_sub(clock.now_ms())).await,
                None => std::future::pending::<()>().await,
            }
        };
        let command = async {
            match self.commands.as_mut() {
                Some(commands) => commands.recv().await,
                None => std::future::pending().await,
            }
        };
        let next = tokio::select! {
            answer = self.answers.recv() => {
                let answer = answer.ok_or(InterpretError::Idle)?;
                if let SessionInput::Answer(input) = &answer.1 {
                    if let Some(call) = finished_call(input) {
                        self.running.remove(&call);
                    }
                }
                return Ok(answer);
            }
            () = sleep => return Ok((clock.now_ms().max(wake_at.unwrap_or(0)), SessionInput::Wake)),
            Some(command) = command => command,
        };
        self.heard(&next);
        Ok((clock.now_ms(), next))
    }
}

/// The call an input ends, if it is the last answer of its call.
pub fn finished_call(input: &Input) -> Option<CallId> {
    match input {
        Input::ToolFinished { call, .. }
        | Input::ModelFailed { call, .. }
        | Input::HookDecided { call, .. } => Some(*call),
        Input::Model {
            call,
            event: StreamEvent::Done { .. } | StreamEvent::Error { .. },
        } => Some(*call),
        _ => None,
    }
}
