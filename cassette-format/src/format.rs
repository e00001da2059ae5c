//! The lines of a cassette, format 1.x (docs/cassette-format.md; versions in `version.rs`): one JSON object per line,
//! tagged by `type`, in the order things happened. These types are the format: they change only
//! with its version, whatever the harness's own types do. What a line holds of the harness (a
//! run's configuration, a model, a message, a tool result, a call's options) is kept as JSON
//! ([`Value`]) here; the harness reads it into its own types when it loads a cassette.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

pub use crate::version::{FormatVersion, FORMAT_VERSION, PROXY_FORMAT_VERSION};

/// One line of a cassette.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Line {
    /// The first line: what the run was built from.
    Cassette(Box<Header>),
    /// The first line of a proxy cassette instead (see [`ProxyHeader`]): the HTTP traffic of
    /// one conversation as `pi proxy` saw it, without a run around it.
    Proxy(Box<ProxyHeader>),
    /// A secret was replaced by `placeholder` from here on (its value never reaches the file).
    Redaction { placeholder: String, what: String },
    /// An input the front end gave (a prompt, an RPC command's input) at `t`.
    Outside { t: u64, input: Box<RecordedInput> },
    /// A line the RPC front end read from stdin at `t`; `with_next` when the same read brought
    /// the next line too (absent: read alone, as every line of a cassette written before it).
    Stdin {
        t: u64,
        line: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        with_next: bool,
    },
    /// A `bash` command of the RPC front end finished at `t`: its `result` (as the RPC
    /// response's data) or the `error` it failed with. Replay answers from it; nothing runs.
    UserBash {
        t: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        id: Option<Value>,
        command: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// An extension asked RPC mode's client at `t`: `request` is Pi's `extension_ui_request`
    /// line as written. Replay writes it in its place; no extension runs.
    ExtensionUi { t: u64, request: Value },
    /// An input from outside that arrived while the session was busy (steering from another
    /// task).
    Command { t: u64, input: Box<RecordedInput> },
    /// The next event decoded from call `call`'s response bytes reached the machine at `t`.
    Event { t: u64, call: u64 },
    /// An answer that is not a model event (a tool's update or result, a call that could not be
    /// made) reached the machine at `t`.
    Answer { t: u64, input: Box<RecordedInput> },
    /// The machine's timer fired at `t`.
    Wake { t: u64 },
    /// The machine asked for an effect.
    Effect { effect: RecordedEffect },
    /// A model call started at `t` with these options (secrets replaced by placeholders).
    Call {
        call: u64,
        t: u64,
        options: Box<Value>,
    },
    /// An HTTP request of call `call`, `dt` ms after it started (more than one with SDK retries).
    /// Its `body`, or a `delta` from the body of the request line before it (a conversation
    /// grows by appending, so each request would otherwise repeat all the ones before).
    /// Read by [`RequestLine`], not through this enum: its body stays text until compared.
    #[serde(skip_deserializing)]
    Request {
        call: u64,
        dt: u64,
        method: String,
        url: String,
        headers: Vec<(String, String)>,
        #[serde(skip_serializing_if = "Option::is_none")]
        body: Option<RawJson>,
        #[serde(skip_serializing_if = "Option::is_none")]
        delta: Option<BodyDelta>,
    },
    /// The response's status and headers.
    Response {
        call: u64,
        dt: u64,
        status: u16,
        headers: Vec<(String, String)>,
    },
    /// Body bytes as one read returned them: `text` when they are UTF-8, else `base64`.
    Chunk {
        call: u64,
        dt: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        base64: Option<String>,
    },
    /// How the request or body ended: `complete`, `dropped` (the call was cancelled), or failed
    /// with `error`.
    End {
        call: u64,
        dt: u64,
        end: RecordedEnd,
    },
    /// The session was replaced (RPC `new_session`, `switch_session`, `fork`, `clone`, or an
    /// extension command's): the lines after it belong to the new session, built from what
    /// this line holds as the header holds the first one's.
    Replaced(Box<ReplacedSession>),
    /// The run ended: its exit code and digests of what it wrote.
    Outcome(RecordedOutcome),
}

/// JSON kept as the text it was read as: a request body holds the whole conversation, and a
/// replay compares it with the text of the request it builds instead of building a tree of it.
#[derive(Clone, Debug)]
pub struct RawJson(Box<RawValue>);

impl RawJson {
    /// `value` as compact JSON text.
    pub fn from_value(value: &Value) -> Self {
        RawJson(serde_json::value::to_raw_value(value).unwrap_or_default())
    }

    /// `text`, which must be JSON.
    pub fn from_text(text: String) -> Result<Self, serde_json::Error> {
        RawValue::from_string(text).map(RawJson)
    }

    /// The JSON text.
    pub fn get(&self) -> &str {
        self.0.get()
    }

    /// The text as a JSON value (for a diff).
    pub fn to_value(&self) -> Value {
        serde_json::from_str(self.get()).unwrap_or(Value::Null)
    }
}

/// Equal when written alike: two texts of one JSON value written otherwise (another key order,
/// number spelling or spacing) are different recordings.
impl PartialEq for RawJson {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

impl Serialize for RawJson {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for RawJson {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Box::<RawValue>::deserialize(deserializer).map(RawJson)
    }
}

/// A request body as a change of the previous request's: the same object, its `array` cut to
/// `keep` elements and `append` added (every other key as it was, in its place).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BodyDelta {
    pub array: String,
    pub keep: usize,
    pub append: Vec<RawJson>,
}

impl BodyDelta {
    /// The delta that turns `previous` into `body`, when there is one: both objects with the
    /// same keys in the same order, differing at most in one array, which keeps a prefix.
    pub fn between(previous: &Value, body: &Value) -> Option<BodyDelta> {
        let (Value::Object(before), Value::Object(after)) = (previous, body) else {
            return None;
        };
        if before.len() != after.len() || !before.keys().eq(after.keys()) {
            return None;
        }
        let mut changed = before.iter().zip(after).filter(|((_, a), (_, b))| a != b);
        let array = match (changed.next(), changed.next()) {
            (None, _) => before.iter().find(|(_, v)| v.is_array())?.0.clone(),
            (Some(((key, _), _)), None) => key.clone(),
            (Some(_), Some(_)) => return None,
        };
        let (Value::Array(old), Value::Array(new)) = (&before[&array], &after[&array]) else {
            return None;
        };
        let keep = old.iter().zip(new).take_while(|(a, b)| a == b).count();
        let append = new[keep..].iter().map(RawJson::from_value).collect();
        Some(BodyDelta {
            array,
            keep,
            append,
        })
    }
}

/// Declares a line type read straight into its fields, and how it becomes its [`Line`]: a
/// frequent line read through the enum's tagged reading would be buffered whole first.
macro_rules! direct_line {
    ($(#[$doc:meta])* $name:ident => $variant:ident { $($(#[$attr:meta])* $field:ident: $ty:ty,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Deserialize)]
        pub struct $name {
            $($(#[$attr])* pub $field: $ty,)*
        }

        impl From<$name> for Line {
            fn from(line: $name) -> Line {
                Line::$variant { $($field: line.$field,)* }
            }
        }
    };
}

direct_line! {
    /// An `event` line (the most frequent).
    EventLine => Event { t: u64, call: u64, }
}

direct_line! {
    /// A `chunk` line.
    ChunkLine => Chunk {
        call: u64,
        dt: u64,
        #[serde(default)]
        text: Option<String>,
        #[serde(default)]
        base64: Option<String>,
    }
}

direct_line! {
    /// An `answer` line.
    AnswerLine => Answer { t: u64, input: Box<RecordedInput>, }
}

direct_line! {
    /// A `call` line.
    CallLine => Call { call: u64, t: u64, options: Box<Value>, }
}

direct_line! {
    /// A `response` line.
    ResponseLine => Response { call: u64, dt: u64, status: u16, headers: Vec<(String, String)>, }
}

direct_line! {
    /// A `request` line: its body stays text (the tagged reading would have parsed it).
    RequestLine => Request {
        call: u64,
        dt: u64,
        method: String,
        url: String,
        headers: Vec<(String, String)>,
        #[serde(default)]
        body: Option<RawJson>,
        #[serde(default)]
        delta: Option<BodyDelta>,
    }
}

impl Line {
    /// The `chunk` line of body bytes: as text when they are UTF-8, else base64.
    pub fn chunk(call: u64, dt: u64, bytes: &[u8]) -> Line {
        let (text, base64) = match std::str::from_utf8(bytes) {
            Ok(text) => (Some(text.to_owned()), None),
            Err(_) => (None, Some(STANDARD.encode(bytes))),
        };
        Line::Chunk {
            call,
            dt,
            text,
            base64,
        }
    }
}

/// The bytes a `chunk` line holds.
pub fn chunk_bytes(text: Option<String>, base64: Option<String>) -> Result<Vec<u8>, String> {
    match (text, base64) {
        (Some(text), _) => Ok(text.into_bytes()),
        (None, Some(encoded)) => STANDARD
            .decode(encoded)
            .map_err(|e| format!("field `base64`: {e}")),
        (None, None) => Ok(Vec::new()),
    }
}

/// The front end a run was recorded through: what a replay prints it as. Any other value makes
/// the cassette unreadable (a damaged or tampered header is never replayed as some other mode).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RecordedMode {
    Text,
    Json,
    Rpc,
}

/// The first line of a cassette.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Header {
    /// The format version ([`FORMAT_VERSION`] when written by this build).
    pub format: FormatVersion,
    /// What a reader must understand to replay it (see [`crate::version`]); none today.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub features: Vec<String>,
    /// The harness version that recorded it.
    pub harness: String,
    /// The Pi version whose behaviour it follows.
    pub pi: String,
    /// The front end the run was recorded through.
    pub mode: RecordedMode,
    /// What the run was built from (the harness's run configuration, as JSON).
    pub config: Value,
    /// The session the run worked in, as it was when the run started.
    pub session: SessionStart,
    /// What was redacted (the kinds of secrets; each placeholder has its own line).
    pub redactions: Vec<String>,
    /// The user's own redaction rules the run was recorded with (a replay puts the recorded
    /// placeholders back where they found values: [`crate::redact::Rules::adopt_placeholders`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redact: Option<crate::redact::RulesSpec>,
    /// The models the run could switch to (those with credentials), for the front end's
    /// answers about them (RPC's `get_available_models`, `set_model`, `cycle_model`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub models: Option<Vec<Value>>,
    /// The `--models` scope as the run resolved it, for cycling through it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scoped_models: Vec<ScopedModel>,
    /// The command line's arguments, for the command that records the run again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// Set when the cassette was imported from a session file rather than recorded: what a
    /// replay is checked on then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imported: Option<Imported>,
    /// Set when an extension's `project_trust` handler decided whether the run trusted its
    /// project (Pi 1.5.2's `resolveProjectTrusted`): an answer from outside the session, which
    /// a run built again from the recorded command line takes instead of asking anyone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_trust: Option<ProjectTrust>,
}

/// An extension's `project_trust` decision, as the run took it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectTrust {
    /// Whether the handler trusted the project.
    pub trusted: bool,
    /// Whether it asked Pi to remember the decision (the run then wrote it to `trust.json`;
    /// a replay writes nothing).
    pub remember: bool,
}

/// What an imported cassette came from. A session file does not hold the system prompt, the
/// tool definitions or the request options, so the requests a replay builds are not compared
/// with anything (the cassette's request lines show what this build sent when it imported);
/// a replay is checked on the session file it writes, which must equal the file's current
/// branch byte for byte, and on the order of inputs, model calls and tool runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Imported {
    /// The session file's name.
    pub from: String,
    /// What a replay is checked on, in words, for whoever reads the cassette.
    pub checked: String,
    /// The session's id and time, as the file holds them.
    pub session: Value,
    /// The session it was forked or branched from, as its header names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
    /// Each entry's id and time, in the order the replay appends them.
    pub entries: Vec<Value>,
}

/// The first line of a proxy cassette: `pi proxy --record` sees only HTTP, so there is no run
/// configuration to hold, only where the traffic went and which request fields replay ignores
/// when it matches requests. The lines after it are `redaction`, `request`, `response`,
/// `chunk` and `end` lines, `call` numbering the exchanges of the conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProxyHeader {
    /// The format version ([`PROXY_FORMAT_VERSION`] when written by this build).
    pub format: FormatVersion,
    /// What a reader must understand to serve it (see [`crate::version`]); none today.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub features: Vec<String>,
    /// The harness version that recorded it.
    pub harness: String,
    /// The provider the requests were forwarded to (its base URL, secrets removed).
    pub upstream: String,
    /// The request fields left out when requests are matched (top-level names or JSON pointers).
    pub ignore: Vec<String>,
    /// What was redacted (the kinds of secrets; each placeholder has its own line).
    pub redactions: Vec<String>,
}

/// A model of the `--models` scope, with the thinking level its pattern named.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScopedModel {
    pub model: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<String>,
}

/// How the session a run started in stood.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionKind {
    /// No file (`--no-session`).
    Memory,
    /// A file not written yet.
    New,
    /// A file that existed (resumed, continued, or forked from another).
    Open,
}

/// The session a run started in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionStart {
    pub kind: SessionKind,
    /// The file's name (for `open` and `fork`, the file the run started from).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// The file's full path as the run saw it (replays report it, writing elsewhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The file's content when the run started (`open` and `fork`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Instead of `content` for a large session: the file beside the cassette that holds it,
    /// named by its SHA-256 (`blobs/<sha256>.jsonl`), so cassettes resuming the same session
    /// share one copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_file: Option<String>,
    /// The state of the id generator once the session was opened.
    pub id_state: u64,
    /// The id a new session was given (`--session-id`) rather than drawn; a replay gives its
    /// session the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// A session replacement inside a recorded run: the session left, and the one the run goes on
/// in. A replay builds the new session from `config` and `session` (as from a header's), so
/// it needs neither the recorded machine's files nor anything the new session read.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReplacedSession {
    /// Why, as the extensions heard it (`new`, `resume`, `fork`).
    pub reason: String,
    /// The session left, as its file was when it was left.
    pub left: SessionLeft,
    /// What the new session was built from (the harness's run configuration, as JSON).
    pub config: Value,
    /// The session the run goes on in, as it was when it was opened.
    pub session: SessionStart,
}

/// A session's file as a run left it (for a session replaced, as the outcome has the last
/// one's): what a replay's own file must equal.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionLeft {
    /// SHA-256 of the session file, `None` in memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// What `session` is the digest of, when it is at most [`MAX_KEPT_TEXT`] bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_text: Option<String>,
}

/// The end of a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedOutcome {
    /// The process's exit code.
    pub exit: i32,
    /// SHA-256 of everything written to stdout.
    pub stdout: String,
    /// SHA-256 of the session file as the run left it, `None` in memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// SHA-256 of the run's events as json mode prints them, one line each, when stdout is not
    /// them (text mode), so that a check compares the events in every mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events: Option<String>,
    /// What `stdout` is the digest of, when it is at most [`MAX_KEPT_TEXT`] bytes: a check
    /// shows a line diff of it instead of two digests. Older cassettes have only the digests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout_text: Option<String>,
    /// What `events` is the digest of, when it is at most [`MAX_KEPT_TEXT`] bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub events_text: Option<String>,
    /// What `session` is the digest of, when it is at most [`MAX_KEPT_TEXT`] bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_text: Option<String>,
    /// `stdout` and `events` (and their texts) leave out the `message_update` lines: the model
    /// streamed a secret in pieces, which the run printed in them and the recording rewrote to
    /// pieces of its placeholder (the messages' ends, which a check compares, hold it whole).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub updates_omitted: bool,
}

/// The largest output or session text an outcome line keeps beside its digest: enough for the
/// runs one checks by hand, without doubling a long run's cassette.
pub const MAX_KEPT_TEXT: usize = 1 << 20;

/// How an HTTP exchange ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordedEnd {
    /// The body ended.
    Complete,
    /// The caller dropped the response or the request (an abort).
    Dropped,
    /// The connection failed or timed out.
    Error(RecordedTransportError),
}

/// A failed HTTP exchange (the harness's transport error), as data.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "message", rename_all = "snake_case")]
pub enum RecordedTransportError {
    Connect(String),
    Timeout,
    Body(String),
    Invalid(String),
}

/// An effect the machine asked for. A model call's request is in its `request` lines.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RecordedEffect {
    CallModel {
        call: u64,
        provider: String,
        model: String,
    },
    RunTool {
        call: u64,
        tool: String,
        args: Value,
    },
    Cancel {
        call: u64,
    },
    /// The machine waited for the extensions at a hook point: Pi's event object, and a digest
    /// of what the extensions' getters read there (the session's state, which is derived, not
    /// recorded): a replay that computes another state there diverges, so what the extensions
    /// were told is checked too. Absent in cassettes recorded before it was kept.
    Hook {
        call: u64,
        payload: Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<String>,
    },
    /// The machine handed the running tool `call` the outcome of the nested call
    /// `toolCallId` it asked for (`ctx.executeTool`): Pi's `ToolCallOutcome`.
    #[serde(rename_all = "camelCase")]
    AnswerNested {
        call: u64,
        tool_call_id: String,
        outcome: Value,
    },
}

/// An input to the session machine other than a model event, as data.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RecordedInput {
    Prompt {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        streaming_behavior: Option<Behavior>,
    },
    Steer {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Value>,
    },
    FollowUp {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Value>,
    },
    PromptWithMessages {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        images: Vec<Value>,
        messages: Vec<Value>,
    },
    Custom {
        custom_type: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<Value>,
    },
    CustomMessage {
        message: Value,
    },
    Label {
        target_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
    },
    Abort,
    SetModel {
        model: Value,
    },
    SetScopedModel {
        model: Value,
        thinking_level: String,
    },
    CycleModel {
        model: Value,
    },
    SetThinkingLevel {
        level: String,
    },
    Compact {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        custom_instructions: Option<String>,
    },
    Navigate {
        target_id: String,
        summarize: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        custom_instructions: Option<String>,
        #[serde(default)]
        replace_instructions: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        label: Option<String>,
    },
    BashResult {
        message: Value,
    },
    SetSteeringMode {
        mode: String,
    },
    SetFollowUpMode {
        mode: String,
    },
    SetAutoCompaction {
        enabled: bool,
    },
    SetAutoRetry {
        enabled: bool,
    },
    AbortRetry,
    ClearQueue,
    /// The front end was ready: the extensions heard `session_start`.
    Start,
    /// The process was about to exit: the extensions heard `session_shutdown`.
    Shutdown,
    /// The front end was about to replace the session: the extensions heard `event`, its
    /// `session_before_switch` or `session_before_fork` (Pi's event object).
    AskReplace {
        event: Value,
    },
    /// An RPC `bash` command was asked of the extensions' `user_bash` handlers first, with its
    /// `excludeFromContext` as sent.
    AskUserBash {
        command: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exclude_from_context: Option<bool>,
    },
    /// RPC `abort_bash` cancelled the `user_bash` hook point being asked.
    AbortUserBash,
    /// The session was being replaced by the one in `target_session_file`: the extensions
    /// heard `session_shutdown` with `reason`.
    Leave {
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        target_session_file: Option<String>,
    },
    /// The extensions were loaded again (a command's `ctx.reload()`): the registered tools
    /// active again, `session_start` and `resources_discover` heard with reason `reload`.
    /// `loaded` is what the new load registered (`handledHooks`, `tools`, `commands`), which
    /// takes the place of what the previous one registered; absent (a cassette recorded before
    /// reloads said it), the registrations stay as they were.
    Reloaded {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        loaded: Option<Value>,
    },
    /// The session replaced the one in `previous_session_file`: the extensions heard
    /// `session_start` with `reason`. `loaded` is what the extensions, loaded again for the
    /// new session, registered (as a `reloaded` line's); absent (a cassette recorded before
    /// replacements said it), the new session keeps what it was built with.
    Replaced {
        reason: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        previous_session_file: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        loaded: Option<Value>,
    },
    /// A command whose handler waited in the session this one replaced goes on here with
    /// `answer` (its run `run`, from the host).
    ResumeCommand {
        name: String,
        run: u64,
        answer: Value,
    },
    SetSessionName {
        name: String,
    },
    /// The prompt's sections and the tools by name from the next turn on (built-in tools as
    /// they are, others by name only).
    SetSystem {
        sections: serde_json::Map<String, Value>,
        tools: Vec<String>,
    },
    ModelFailed {
        call: u64,
        error: String,
    },
    ToolUpdate {
        call: u64,
        partial: Value,
    },
    /// What a running tool's context asked of the session (an extension tool's
    /// `pi.appendEntry` ...), applied at once: Pi's action object, as a hook decision's
    /// `actions` hold them.
    ToolActed {
        call: u64,
        action: Value,
    },
    /// A running tool asked to run the tool `name` with `args` (Pi 1.5's `ctx.executeTool`):
    /// the session runs it as a call of its own, answered by an `answer_nested` effect.
    ToolNested {
        call: u64,
        name: String,
        args: Value,
    },
    ToolFinished {
        call: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        thrown: Option<String>,
    },
    /// The extensions' answer at a hook point: the composed decision, the actions asked for,
    /// the handlers that threw. A replay answers the hook point with it, extensions absent.
    HookDecided {
        call: u64,
        outcome: Value,
    },
}

/// Pi's `streamingBehavior`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Behavior {
    Steer,
    FollowUp,
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::Line;

    /// A `stdin` line written before `with_next` existed reads as read alone, and one read
    /// alone is written as before; a marked one keeps its mark.
    #[test]
    fn a_stdin_line_is_alone_unless_marked() {
        let old = r#"{"type":"stdin","t":5,"line":"{}"}"#;
        let read: Line = serde_json::from_str(old).unwrap();
        let alone = Line::Stdin {
            t: 5,
            line: "{}".into(),
            with_next: false,
        };
        assert_eq!(read, alone);
        assert_eq!(serde_json::to_string(&alone).unwrap(), old);
        let marked = r#"{"type":"stdin","t":5,"line":"{}","with_next":true}"#;
        let read: Line = serde_json::from_str(marked).unwrap();
        assert_eq!(serde_json::to_string(&read).unwrap(), marked);
    }
}
