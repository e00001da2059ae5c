//! Custom tools: tools a program defines (an SDK user, an MCP client, an extension sidecar) and
//! the Live interpreter runs beside Pi's eight built-ins. A tool's declaration is data
//! ([`CustomToolDefinition`], which a run's configuration and so its cassette holds); running
//! it is a [`CustomTool`] found in a [`ToolRegistry`]. A call is an effect like a built-in's:
//! recorded in a cassette and answered from it on replay, where the registry is not consulted
//! unless the tools are run again (`--tools live`, or a hybrid replay after its divergence).
//!
//! As in Pi 1.5.2, a custom tool named as a built-in replaces it (its declaration and its
//! execution), and a tool registered twice under one name is the later registration.

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use pi_core::agent::hook_state::HookState;
use pi_core::agent::hooks::HookAction;
pub use pi_core::agent::ToolExposure;
use pi_core::agent::ToolOutcome;
use pi_core::event::ToolResult;
pub use pi_core::tools::custom::CustomToolDefinition;
use pi_core::tools::tool_search::TOOL_SEARCH_TOOL_NAME;
pub use pi_core::tools::tool_search::{SearchableTool, ToolNamespace};
use serde_json::Value;
use tokio::sync::mpsc::UnboundedSender;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// What [`CustomTool::execute`] returns: the tool's result, or the text of the error it throws
/// (Pi turns a thrown error into a result with `isError: true` and that text).
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = Result<ToolResult, String>> + Send + 'a>>;

/// A tool a program defines. Pi's `ToolDefinition.execute(toolCallId, params, signal, onUpdate,
/// ctx)`: the arguments arrive validated against [`CustomToolDefinition::parameters`] (as Pi's
/// pi-schema validates them, coercions included), the rest in the [`ToolCallContext`].
pub trait CustomTool: Send + Sync {
    /// The tool's declaration: its name, description, parameters and prompt texts.
    fn definition(&self) -> &CustomToolDefinition;

    /// Runs one call. It should stop soon after `cx.signal` is cancelled (Pi's abort signal);
    /// partial results go through [`ToolCallContext::update`].
    fn execute<'a>(&'a self, args: Value, cx: ToolCallContext) -> ToolFuture<'a>;

    /// Whether the tool's context reads the session (Pi's whole `ExtensionContext`: the model,
    /// `isIdle()`, the session manager's reads ...): its calls then get the session's state in
    /// [`ToolCallContext::state`]. Only an extension host's tools do; the others would carry it
    /// for nothing.
    fn reads_session(&self) -> bool {
        false
    }
}

/// What a running custom tool may use besides its arguments (the parts of Pi's
/// `ExtensionToolContext` that do not need the UI or the session runtime).
#[derive(Clone, Debug)]
pub struct ToolCallContext {
    /// The model's id of this call (`toolCallId`).
    pub tool_call_id: String,
    /// The session's working directory (`ctx.cwd`): where a replay with live tools puts its
    /// scratch workspace.
    pub cwd: PathBuf,
    /// The session's id, when the interpreter knows it.
    pub session_id: Option<String>,
    /// The session's file, when it is written to one.
    pub session_file: Option<PathBuf>,
    /// The provider and model id of the latest request (`ctx.model`).
    pub model: Option<(String, String)>,
    /// Cancelled when the call is aborted (Pi's `AbortSignal`).
    pub signal: CancellationToken,
    /// The session's state at the call, for a tool that [`CustomTool::reads_session`] (when
    /// the session machine runs the call).
    pub state: Option<Arc<HookState>>,
    updates: UnboundedSender<ToolResult>,
    /// Where the call's partial results and actions go, in the order sent, when the
    /// interpreter takes actions from tools.
    signals: Option<UnboundedSender<ToolSignal>>,
}

/// What a running custom tool sends its session besides its result, in order: a partial
/// result, or an action its context asked for (applied at once, before the result).
#[derive(Debug)]
pub enum ToolSignal {
    Update(ToolResult),
    Acted(HookAction),
    /// A nested call (`ctx.executeTool`): the session runs `name` with `args` and sends Pi's
    /// outcome object to `answer` once it has one.
    Nested {
        name: String,
        args: Value,
        answer: tokio::sync::oneshot::Sender<Value>,
    },
}

impl ToolCallContext {
    /// Sends a partial result (Pi's `onUpdate`), which the session emits as a
    /// `tool_execution_update` event and a cassette records.
    pub fn update(&self, partial: ToolResult) {
        // A receiver gone means the call's answers are no longer wanted.
        match &self.signals {
            Some(signals) => {
                let _ = signals.send(ToolSignal::Update(partial));
            }
            None => {
                let _ = self.updates.send(partial);
            }
        }
    }

    /// Asks the session for `action` (an extension tool's `pi.appendEntry` ...), which it
    /// applies at once. An error where the interpreter running the call takes no actions (a
    /// replay that runs tools again).
    pub fn act(&self, action: HookAction) -> Result<(), String> {
        let signals = self.signals.as_ref().ok_or_else(|| {
            "an action from a tool's execute is not supported where tools run again in a replay"
                .to_owned()
        })?;
        // A receiver gone means the call's answers are no longer wanted.
        let _ = signals.send(ToolSignal::Acted(action));
        Ok(())
    }

    /// Asks the session to run the tool `name` with `args` on this call's behalf (Pi 1.5's
    /// `ctx.executeTool`); the receiver gets Pi's outcome object (`toolCall`, `result`,
    /// `isError`, `durationMs`?). An error where the interpreter running the call takes no
    /// such requests (a replay that runs tools again).
    pub fn nest(
        &self,
        name: String,
        args: Value,
    ) -> Result<tokio::sync::oneshot::Receiver<Value>, String> {
        let signals = self.signals.as_ref().ok_or_else(|| {
            "a nested tool call is not supported where tools run again in a replay".to_owned()
        })?;
        let (answer, answered) = tokio::sync::oneshot::channel();
        signals
            .send(ToolSignal::Nested { name, args, answer })
            .map_err(|_| "the session no longer takes this call's requests".to_owned())?;
        Ok(answered)
    }
}

/// The custom tools a program registered, by name, in registration order. Cheap to clone:
/// the tools are shared.
#[derive(Clone, Default)]
pub struct ToolRegistry {
    tools: Vec<Arc<dyn CustomTool>>,
    /// Tools of `deferred` exposure with their namespaces: not declared until `tool_search`
    /// loads them, run like the others once it has.
    deferred: Vec<(Arc<dyn CustomTool>, Option<ToolNamespace>)>,
    /// Every name registered here, deferred or not, in the order first registered (Pi's
    /// registry order, which `pi.getAllTools()` lists).
    order: Vec<String>,
    /// Names a recorded run declared as custom tools (see [`ToolRegistry::expecting`]).
    expected: Vec<String>,
    /// Tools registered while the session runs (the deferred tools of an MCP server that
    /// connected in the background), shared by every clone of this registry: the Live
    /// interpreter's copy runs them once registered ([`ToolRegistry::register_late`]).
    late: Arc<Mutex<Vec<Arc<dyn CustomTool>>>>,
    /// Names this accepts may still be registered late, until the receiver turns `true` (see
    /// [`ToolRegistry::late_tools_coming`]).
    late_coming: Option<(Admits, watch::Receiver<bool>)>,
    /// Which names may be registered here at all (see [`ToolRegistry::admitting`]); every one
    /// when `None`.
    admits: Option<Admits>,
}

/// A registry's rule for which tool names it registers.
type Admits = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// What a tool name is to a registry.
pub(crate) enum Lookup {
    /// A registered custom tool.
    Registered(Arc<dyn CustomTool>),
    /// A custom tool the recorded run declared and this program did not register.
    Missing,
    /// Not a custom tool: a built-in, if anything.
    NotCustom,
}

/// The error a call to a custom tool gets when the program running the tools again did not
/// register it (a replay with live tools, a hybrid replay after its divergence).
pub fn missing_tool_message(name: &str) -> String {
    format!(
        "Custom tool {name} is not registered: the recorded run defined it, and the program \
         running its tools again must register it to run it"
    )
}

impl fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// Why a replay cannot run again the tools of a run whose custom tools `missing` this
/// program does not register (the `pi` binary registers none).
pub fn unregistered_tools_message(missing: &[&str]) -> String {
    format!(
        "the recorded run used custom tools this program does not register ({}): replay \
         without --tools live to answer their calls from the cassette",
        missing.join(", ")
    )
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        ToolRegistry::default()
    }

    /// This registry registering only the tools whose names `admits` accepts, in this
    /// registry and every clone of it: a front end's `--tools` and `--exclude-tools`, which
    /// decide which of an MCP server's tools exist at all, wherever they register from.
    pub fn admitting(mut self, admits: impl Fn(&str) -> bool + Send + Sync + 'static) -> Self {
        self.admits = Some(Arc::new(admits));
        self
    }

    /// Whether a tool named `name` would be registered here (see
    /// [`admitting`](Self::admitting)).
    pub fn admits(&self, name: &str) -> bool {
        self.admits.as_ref().is_none_or(|admits| admits(name))
    }

    /// Adds `tool`; one already registered under its name is replaced in its place. A tool
    /// of `deferred` exposure is registered as such, in its namespace (see
    /// [`ToolRegistry::register_deferred`]). A name the registry does not
    /// [admit](Self::admitting) is not registered.
    pub fn register(&mut self, tool: Arc<dyn CustomTool>) {
        let definition = tool.definition();
        if !self.admits(&definition.name) {
            return;
        }
        if definition.exposure() == ToolExposure::Deferred {
            let namespace = definition.namespace.clone();
            return self.register_deferred(tool, namespace);
        }
        let name = definition.name.clone();
        self.ordered(&name);
        match self.tools.iter_mut().find(|t| t.definition().name == name) {
            Some(existing) => *existing = tool,
            None => self.tools.push(tool),
        }
    }

    /// Adds every tool `other` registered (each replacing one of its name in its place), as
    /// [`register`](Self::register) adds them one by one, then its deferred ones in their
    /// namespaces (a reload's tool of `deferred` exposure runs once `tool_search` loads it).
    pub fn register_all(&mut self, other: &ToolRegistry) {
        for tool in &other.tools {
            self.register(Arc::clone(tool));
        }
        for (tool, namespace) in &other.deferred {
            self.register_deferred(Arc::clone(tool), namespace.clone());
        }
    }

    /// Adds `tool` as a tool of `deferred` exposure in `namespace` (an MCP server's): not
    /// declared at the start, found by `tool_search`, which loads it.
    pub fn register_deferred(
        &mut self,
        tool: Arc<dyn CustomTool>,
        namespace: Option<ToolNamespace>,
    ) {
        let name = tool.definition().name.clone();
        if !self.admits(&name) {
            return;
        }
        self.ordered(&name);
        self.deferred.retain(|(t, _)| t.definition().name != name);
        self.deferred.push((tool, namespace));
    }

    /// The deferred tools' declarations with their namespaces, in registration order: what a
    /// run's configuration records for `tool_search` to search.
    pub fn deferred_definitions(&self) -> Vec<SearchableTool> {
        self.deferred
            .iter()
            .map(|(tool, namespace)| SearchableTool {
                tool: tool.definition().clone(),
                namespace: namespace.clone(),
            })
            .collect()
    }

    /// This registry with the deferred tools of `other` (registered or late) in place of its
    /// own: a program that picks which of its tools to register keeps those `tool_search`
    /// loads.
    pub fn with_deferred_of(mut self, other: &ToolRegistry) -> Self {
        self.deferred = other.deferred.clone();
        self.late = Arc::clone(&other.late);
        self
    }

    /// This registry for running again the tools of a run that declared `declared`: a call
    /// to one of those it lacks fails with [`missing_tool_message`] instead of running a
    /// built-in of that name or nothing.
    pub fn expecting(mut self, declared: &[CustomToolDefinition]) -> Self {
        self.expected = declared.iter().map(|d| d.name.clone()).collect();
        self
    }

    /// Tools whose names `coming` accepts are still being registered late (MCP servers
    /// connecting in the background while a replay runs their tools again) until `done` turns
    /// `true`: a call of such a name not registered yet waits for that, as Pi's MCP extension
    /// makes a call wait for its server. Set before the registry is cloned for running.
    pub fn late_tools_coming(
        &mut self,
        coming: impl Fn(&str) -> bool + Send + Sync + 'static,
        done: watch::Receiver<bool>,
    ) {
        self.late_coming = Some((Arc::new(coming), done));
    }

    /// [`lookup`](Self::lookup), once a tool of `name` that may still come late has come (or
    /// will not).
    pub(crate) async fn lookup_coming(&self, name: &str) -> Lookup {
        if let (None, Some((coming, done))) = (self.get(name), &self.late_coming) {
            if coming(name) {
                let _ = done.clone().wait_for(|done| *done).await;
            }
        }
        self.lookup(name)
    }

    /// What `name` is here: registered, expected and missing, or not a custom tool.
    pub(crate) fn lookup(&self, name: &str) -> Lookup {
        match self.get(name) {
            Some(tool) => Lookup::Registered(tool),
            None if self.expected.iter().any(|n| n == name) => Lookup::Missing,
            None => Lookup::NotCustom,
        }
    }

    /// The tool registered under `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn CustomTool>> {
        let registered = self
            .tools
            .iter()
            .chain(self.deferred.iter().map(|(tool, _)| tool))
            .find(|t| t.definition().name == name)
            .cloned();
        registered.or_else(|| {
            self.late
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .find(|t| t.definition().name == name)
                .cloned()
        })
    }

    /// Registers `tool` for running while the session runs, in every clone of this registry:
    /// the declaration reached the session on its own (a hook point's recorded action), so a
    /// replay needs no such tool.
    pub fn register_late(&self, tool: Arc<dyn CustomTool>) {
        let name = tool.definition().name.clone();
        if !self.admits(&name) {
            return;
        }
        let mut late = self.late.lock().unwrap_or_else(PoisonError::into_inner);
        late.retain(|t| t.definition().name != name);
        late.push(tool);
    }

    fn ordered(&mut self, name: &str) {
        if !self.order.iter().any(|n| n == name) {
            self.order.push(name.to_owned());
        }
    }

    /// The names of every tool registered here, deferred or not, in the order first registered.
    pub fn registration_order(&self) -> &[String] {
        &self.order
    }

    /// The registered tools' names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.tools
            .iter()
            .map(|t| t.definition().name.as_str())
            .collect()
    }

    /// The registered tools' declarations, in order: what a run's configuration records.
    pub fn definitions(&self) -> Vec<CustomToolDefinition> {
        self.tools.iter().map(|t| t.definition().clone()).collect()
    }

    /// The names of the registered tools that read the session (see
    /// [`CustomTool::reads_session`]), in order.
    pub fn context_tools(&self) -> Vec<String> {
        self.tools
            .iter()
            .chain(self.deferred.iter().map(|(tool, _)| tool))
            .filter(|t| t.reads_session())
            .map(|t| t.definition().name.clone())
            .collect()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// The names of `declared` tools (a recorded run's) that are not registered here: what a
    /// replay that runs tools again cannot run. `tool_search` is never missing: the session
    /// answers it (see [`pi_core::tools::tool_search`]).
    pub fn missing<'a>(&self, declared: &'a [CustomToolDefinition]) -> Vec<&'a str> {
        declared
            .iter()
            .map(|d| d.name.as_str())
            .filter(|name| *name != TOOL_SEARCH_TOOL_NAME && self.get(name).is_none())
            .collect()
    }
}

/// A recorded custom tool known by its declaration alone (the `pi` binary rebuilding a recorded
/// run's configuration, which has no program of its own to run the tool): declared to the
/// model and in the system prompt as the run declared it; a call fails with
/// [`missing_tool_message`], as a replay running tools again reports a tool it lacks.
#[derive(Debug)]
pub struct DeclaredOnly {
    definition: CustomToolDefinition,
}

impl DeclaredOnly {
    /// The tool `definition` declares.
    pub fn new(definition: CustomToolDefinition) -> Self {
        DeclaredOnly { definition }
    }
}

impl CustomTool for DeclaredOnly {
    fn definition(&self) -> &CustomToolDefinition {
        &self.definition
    }

    fn execute<'a>(&'a self, _args: Value, _cx: ToolCallContext) -> ToolFuture<'a> {
        let message = missing_tool_message(&self.definition.name);
        Box::pin(async move { Err(message) })
    }
}

/// Runs one call of `tool`; an error it returns is the error Pi's loop reports.
pub(crate) async fn run(
    tool: Arc<dyn CustomTool>,
    args: Value,
    cx: ToolCallContext,
) -> ToolOutcome {
    match tool.execute(args, cx).await {
        Ok(result) => ToolOutcome::Ok(result),
        Err(message) => ToolOutcome::Thrown(message),
    }
}

impl ToolCallContext {
    /// The context of call `tool_call_id` in `cwd`, with the call's signal and the channel of
    /// its partial results; the session's parts are set by the caller that knows them.
    pub(crate) fn new(
        signals: Option<UnboundedSender<ToolSignal>>,
        tool_call_id: String,
        cwd: PathBuf,
        signal: CancellationToken,
        updates: UnboundedSender<ToolResult>,
    ) -> Self {
        ToolCallContext {
            tool_call_id,
            cwd,
            session_id: None,
            session_file: None,
            model: None,
            signal,
            state: None,
            updates,
            signals,
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]

    use pi_core::message::ContentBlock;
    use serde_json::json;
    use tokio::sync::mpsc::unbounded_channel;

    use super::*;
    use crate::tools::{self, ToolContext, ToolEnv};

    /// A `read` that answers with a fixed text and never touches a file.
    struct FakeRead(CustomToolDefinition);

    impl CustomTool for FakeRead {
        fn definition(&self) -> &CustomToolDefinition {
            &self.0
        }

        fn execute<'a>(&'a self, args: Value, cx: ToolCallContext) -> ToolFuture<'a> {
            Box::pin(async move {
                if args["path"] == "secret" {
                    return Err(format!("{} refuses secret", cx.tool_call_id));
                }
                Ok(ToolResult {
                    content: vec![ContentBlock::text("from the custom read")],
                    ..ToolResult::error("")
                })
            })
        }
    }

    fn fake_read() -> Arc<dyn CustomTool> {
        Arc::new(FakeRead(CustomToolDefinition::new(
            "read",
            "Reads nothing.",
            json!({"type": "object"}),
        )))
    }

    async fn run(env: &ToolEnv, args: Value) -> ToolOutcome {
        let (updates, _partials) = unbounded_channel();
        let cx = ToolContext {
            cancel: CancellationToken::new(),
            updates,
        };
        tools::run(env, "read", &args, &cx).await
    }

    #[tokio::test]
    async fn a_registered_tool_replaces_the_builtin_of_its_name_and_its_error_is_thrown() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "on disk").unwrap();
        let mut env = ToolEnv::new(dir.path());
        env.tool_call_id = Some("call_7".into());
        let ToolOutcome::Ok(builtin) = run(&env, json!({"path": "a.txt"})).await else {
            panic!("the built-in read failed");
        };
        assert_eq!(builtin.content, vec![ContentBlock::text("on disk")]);
        env.custom.register(fake_read());
        let ToolOutcome::Ok(custom) = run(&env, json!({"path": "a.txt"})).await else {
            panic!("the custom read failed");
        };
        assert_eq!(
            custom.content,
            vec![ContentBlock::text("from the custom read")]
        );
        assert_eq!(
            run(&env, json!({"path": "secret"})).await,
            ToolOutcome::Thrown("call_7 refuses secret".into())
        );
    }

    #[tokio::test]
    async fn an_expected_tool_not_registered_fails_instead_of_running_the_builtin() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "on disk").unwrap();
        let mut env = ToolEnv::new(dir.path());
        env.custom = ToolRegistry::new().expecting(&[fake_read().definition().clone()]);
        assert_eq!(
            run(&env, json!({"path": "a.txt"})).await,
            ToolOutcome::Thrown(missing_tool_message("read"))
        );
        assert_eq!(
            env.custom.missing(&[fake_read().definition().clone()]),
            ["read"]
        );
    }

    /// A tool still coming (an MCP server connecting in the background while a replay runs
    /// its tools again): its call waits until it is registered and runs it; a cancel ends the
    /// wait as an aborted call; a name outside the prefix does not wait.
    #[tokio::test]
    async fn a_call_of_a_tool_still_coming_waits_for_it_or_its_cancel() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "on disk").unwrap();
        let mut env = ToolEnv::new(dir.path());
        let (done, coming) = watch::channel(false);
        env.custom
            .late_tools_coming(|name| name.starts_with("re"), coming.clone());
        let registry = env.custom.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            registry.register_late(fake_read());
            done.send_replace(true);
        });
        let ToolOutcome::Ok(late) = run(&env, json!({"path": "a.txt"})).await else {
            panic!("the late read failed");
        };
        assert_eq!(
            late.content,
            vec![ContentBlock::text("from the custom read")]
        );

        let mut waiting = ToolEnv::new(dir.path());
        let (_never, coming) = watch::channel(false);
        waiting
            .custom
            .late_tools_coming(|name| name.starts_with("re"), coming);
        let (updates, _partials) = unbounded_channel();
        let cx = ToolContext {
            cancel: CancellationToken::new(),
            updates,
        };
        let cancel = cx.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            cancel.cancel();
        });
        assert_eq!(
            tools::run(&waiting, "read", &json!({"path": "a.txt"}), &cx).await,
            ToolOutcome::Thrown("Operation aborted".into())
        );

        let (_never, coming) = watch::channel(false);
        let mut elsewhere = ToolEnv::new(dir.path());
        elsewhere
            .custom
            .late_tools_coming(|name| name.starts_with("mcp__"), coming);
        let ToolOutcome::Ok(builtin) = run(&elsewhere, json!({"path": "a.txt"})).await else {
            panic!("the built-in read failed");
        };
        assert_eq!(builtin.content, vec![ContentBlock::text("on disk")]);
    }

    #[test]
    fn a_second_registration_of_a_name_replaces_the_first_in_its_place() {
        let mut registry = ToolRegistry::new();
        let other = CustomToolDefinition::new("other", "", json!({}));
        registry.register(fake_read());
        registry.register(Arc::new(FakeRead(other)));
        let mut again = CustomToolDefinition::new("read", "Second.", json!({}));
        again.label = "second".into();
        registry.register(Arc::new(FakeRead(again)));
        assert_eq!(registry.names(), ["read", "other"]);
        assert_eq!(registry.definitions()[0].description, "Second.");
    }
}
