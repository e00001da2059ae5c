//! The scenario language, line by line.
//!
//! ```text
//! # comment
//! config: toolExecution=sequential steeringMode=all followUpMode=all thinking=high
//! tools: read bash slow(sequential)
//! hook: block bash Not allowed here
//! user: Say hello                      a text prompt
//! prompt: [{"role":"user",...}]        prompt with messages (one object or an array)
//! history: [{"role":"user",...}]       replace the transcript (before or between runs)
//! continue | abort | reset | tick 2000
//! steer: text / followup: text
//! model: text Hello world              a whole response (one text block)
//! model: text "Hel" "lo" | tool read {"path":"a"}    blocks separated by " | "
//! model: tool read#call_1 {"pa~~th": "a"}   a tool call with a fixed id, arguments in two chunks
//! model~ text "Hel"                    stream without finishing; later model lines continue it
//! model: stop=length usage=10/5 text …  options before the blocks
//! model: error 500 Internal error      the response fails (after whatever streamed)
//! model: throws No API key for provider: mock   the call cannot be made at all
//! tool: ok text | tool: error text | tool: update text | tool: ok {"content":[…],…}
//! tool call_2: ok text                 answers the call with that tool-call id
//!
//! session: maxRetries=3 baseDelayMs=2000 reserveTokens=16384 keepRecentTokens=20000
//!          contextWindow=128000 retry=off compaction=off
//!          cacheWarming=idle promptCache=12 inputPrice=1000   warm a 12 s prompt cache
//!                                      drive the session machine (must come first); then also
//! user-steer: text / user-followup: text   a prompt while streaming, with that behaviour
//! compact: instructions                a manual compaction (instructions optional)
//! thinking: high                       set the thinking level
//! navigate: 3 summarize label=x Focus  go to the 3rd entry, summarising the branch left
//! set-model: big-model reasoning       switch to a mock model (a reasoning one)
//! bash-result: {"command":"ls","output":"a\n","exitCode":0,"cancelled":false,"truncated":false}
//! tick 2000                            in session mode also wakes the machine when due
//! ```

use serde_json::Value;

/// A line that could not be read, with its line number.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct ScriptError {
    pub line: usize,
    pub message: String,
}

/// One block of a scripted model response.
#[derive(Clone, Debug, PartialEq)]
pub enum BlockSpec {
    /// Text arriving as these deltas.
    Text(Vec<String>),
    /// Thinking arriving as these deltas.
    Thinking(Vec<String>),
    /// A tool call; `id` is generated when not given; arguments stream as `chunks` (whole JSON when
    /// empty).
    Tool {
        name: String,
        id: Option<String>,
        args: String,
        chunks: Vec<String>,
    },
}

/// How a scripted response ends.
#[derive(Clone, Debug, PartialEq)]
pub enum Ending {
    /// Keep the stream open (`model~`).
    Open,
    /// Finish normally; the stop reason is `toolUse` when there are tool calls unless given.
    Done { stop: Option<String> },
    /// Fail with this error message (`"<status> <message>"`).
    Error(String),
}

/// How a scripted tool call ends or progresses.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolReply {
    Ok(Value),
    Error(String),
    Update(Value),
}

/// One line of a scenario.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    Config(Vec<(String, String)>),
    Tools(Vec<(String, bool)>),
    Hook(String),
    User(String),
    Prompt(Value),
    History(Value),
    Continue,
    Abort,
    Reset,
    Tick(u64),
    Steer(String),
    FollowUp(String),
    Model {
        blocks: Vec<BlockSpec>,
        usage: Option<(u64, u64)>,
        ending: Ending,
    },
    Tool {
        id: Option<String>,
        reply: ToolReply,
    },
    /// The model call cannot be made at all (the stream function throws).
    ModelThrows(String),
    /// Drive a session machine (retry, compaction, persistence) instead of the bare loop.
    Session(Vec<(String, String)>),
    /// A prompt while streaming, queued as steering or follow-up (session mode).
    UserQueued {
        text: String,
        follow_up: bool,
    },
    /// A manual compaction with optional instructions (session mode).
    Compact(Option<String>),
    /// Set the thinking level (session mode: clamped and recorded).
    Thinking(String),
    /// Navigate to the Nth entry (1-based, file order) with options (session mode).
    Navigate {
        entry: usize,
        summarize: bool,
        label: Option<String>,
        instructions: Option<String>,
    },
    /// A `!command` result: a JSON `bashExecution` message without role and timestamp.
    BashResult(Value),
    /// Switch to the mock model with this id, a reasoning model when `reasoning` (session mode).
    SetModel {
        id: String,
        reasoning: bool,
    },
}

/// A parsed command with the line it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub number: usize,
    pub text: String,
    pub command: Command,
}

/// Parses a whole script.
pub fn parse(script: &str) -> Result<Vec<Line>, ScriptError> {
    let mut out = Vec::new();
    for (i, raw) in script.lines().enumerate() {
        let text = raw.trim();
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let number = i + 1;
        let command = parse_line(text).map_err(|message| ScriptError {
            line: number,
            message,
        })?;
        out.push(Line {
            number,
            text: text.to_owned(),
            command,
        });
    }
    Ok(out)
}

fn parse_line(text: &str) -> Result<Command, String> {
    match text {
        "continue" => return Ok(Command::Continue),
        "abort" => return Ok(Command::Abort),
        "reset" => return Ok(Command::Reset),
        _ => {}
    }
    if let Some(ms) = text.strip_prefix("tick ") {
        return ms
            .trim()
            .parse()
            .map(Command::Tick)
            .map_err(|e| format!("tick: {e}"));
    }
    if let Some(rest) = text.strip_prefix("model~") {
        return parse_model(rest, true);
    }
    let (head, rest) = text
        .split_once(':')
        .ok_or_else(|| format!("expected `keyword: …`, got {text:?}"))?;
    let rest = rest.trim();
    match head.trim() {
        "config" => Ok(Command::Config(pairs(rest)?)),
        "tools" => Ok(Command::Tools(
            rest.split_whitespace()
                .map(|t| match t.strip_suffix("(sequential)") {
                    Some(name) => (name.to_owned(), true),
                    None => (t.to_owned(), false),
                })
                .collect(),
        )),
        "hook" => Ok(Command::Hook(rest.to_owned())),
        "user" => Ok(Command::User(rest.to_owned())),
        "prompt" => serde_json::from_str(rest)
            .map(Command::Prompt)
            .map_err(|e| format!("prompt: {e}")),
        "history" => serde_json::from_str(rest)
            .map(Command::History)
            .map_err(|e| format!("history: {e}")),
        "session" => Ok(Command::Session(pairs(rest)?)),
        "user-steer" => Ok(Command::UserQueued {
            text: rest.to_owned(),
            follow_up: false,
        }),
        "user-followup" => Ok(Command::UserQueued {
            text: rest.to_owned(),
            follow_up: true,
        }),
        "compact" => Ok(Command::Compact(
            (!rest.is_empty()).then(|| rest.to_owned()),
        )),
        "thinking" => Ok(Command::Thinking(rest.to_owned())),
        "navigate" => parse_navigate(rest),
        "set-model" => {
            let mut words = rest.split_whitespace();
            let id = words.next().ok_or("set-model: ID [reasoning]")?.to_owned();
            Ok(Command::SetModel {
                id,
                reasoning: words.any(|w| w == "reasoning"),
            })
        }
        "bash-result" => serde_json::from_str(rest)
            .map(Command::BashResult)
            .map_err(|e| format!("bash-result: {e}")),
        "steer" => Ok(Command::Steer(rest.to_owned())),
        "followup" => Ok(Command::FollowUp(rest.to_owned())),
        "model" => parse_model(rest, false),
        "tool" => parse_tool(None, rest),
        other => match other.strip_prefix("tool ") {
            Some(id) => parse_tool(Some(id.trim().to_owned()), rest),
            None => Err(format!("unknown command {other:?}")),
        },
    }
}

fn parse_navigate(text: &str) -> Result<Command, String> {
    let mut words = text.split_whitespace();
    let entry = words
        .next()
        .and_then(|n| n.parse().ok())
        .ok_or("navigate: N [summarize] [label=L] [text of instructions]")?;
    let (mut summarize, mut label, mut instructions) = (false, None, Vec::new());
    for word in words {
        match word {
            "summarize" => summarize = true,
            _ => match word.strip_prefix("label=") {
                Some(l) => label = Some(l.to_owned()),
                None => instructions.push(word),
            },
        }
    }
    Ok(Command::Navigate {
        entry,
        summarize,
        label,
        instructions: (!instructions.is_empty()).then(|| instructions.join(" ")),
    })
}

fn pairs(text: &str) -> Result<Vec<(String, String)>, String> {
    text.split_whitespace()
        .map(|pair| {
            pair.split_once('=')
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .ok_or_else(|| format!("expected key=value, got {pair:?}"))
        })
        .collect()
}

fn parse_model(text: &str, open: bool) -> Result<Command, String> {
    let mut rest = text.trim().strip_prefix(':').unwrap_or(text.trim()).trim();
    let mut stop = None;
    let mut usage = None;
    loop {
        if let Some(r) = rest.strip_prefix("stop=") {
            let (value, tail) = r.split_once(' ').unwrap_or((r, ""));
            stop = Some(value.to_owned());
            rest = tail.trim();
        } else if let Some(r) = rest.strip_prefix("usage=") {
            let (value, tail) = r.split_once(' ').unwrap_or((r, ""));
            let (i, o) = value.split_once('/').ok_or("usage=INPUT/OUTPUT")?;
            usage = Some((
                i.parse().map_err(|e| format!("usage: {e}"))?,
                o.parse().map_err(|e| format!("usage: {e}"))?,
            ));
            rest = tail.trim();
        } else {
            break;
        }
    }
    if let Some(message) = rest.strip_prefix("throws ") {
        return Ok(Command::ModelThrows(message.trim().to_owned()));
    }
    if let Some(message) = rest.strip_prefix("error ") {
        return Ok(Command::Model {
            blocks: Vec::new(),
            usage,
            ending: Ending::Error(message.trim().to_owned()),
        });
    }
    let blocks = if rest.is_empty() {
        Vec::new()
    } else {
        rest.split(" | ")
            .map(parse_block)
            .collect::<Result<_, _>>()?
    };
    let ending = if open {
        Ending::Open
    } else {
        Ending::Done { stop }
    };
    Ok(Command::Model {
        blocks,
        usage,
        ending,
    })
}

fn parse_block(text: &str) -> Result<BlockSpec, String> {
    let text = text.trim();
    let (kind, rest) = text.split_once(' ').unwrap_or((text, ""));
    match kind {
        "text" => Ok(BlockSpec::Text(deltas(rest)?)),
        "thinking" => Ok(BlockSpec::Thinking(deltas(rest)?)),
        "tool" => {
            let (name, args) = rest.trim().split_once(' ').unwrap_or((rest.trim(), "{}"));
            let (name, id) = match name.split_once('#') {
                Some((n, id)) => (n.to_owned(), Some(id.to_owned())),
                None => (name.to_owned(), None),
            };
            let args = args.trim();
            // `tool read {"pa~~th": "x"}`: the arguments stream in these chunks.
            let chunks: Vec<String> = if args.contains("~~") {
                args.split("~~").map(str::to_owned).collect()
            } else {
                Vec::new()
            };
            let joined = if chunks.is_empty() {
                args.to_owned()
            } else {
                chunks.concat()
            };
            Ok(BlockSpec::Tool {
                name,
                id,
                args: joined,
                chunks,
            })
        }
        other => Err(format!("unknown block {other:?} (text, thinking, tool)")),
    }
}

/// Bare text is one delta; one or more JSON strings are one delta each.
fn deltas(text: &str) -> Result<Vec<String>, String> {
    let text = text.trim();
    if !text.starts_with('"') {
        return Ok(vec![text.to_owned()]);
    }
    let mut out = Vec::new();
    let stream = serde_json::Deserializer::from_str(text).into_iter::<String>();
    for item in stream {
        out.push(item.map_err(|e| format!("deltas: {e}"))?);
    }
    Ok(out)
}

fn parse_tool(id: Option<String>, text: &str) -> Result<Command, String> {
    let (kind, rest) = text.split_once(' ').unwrap_or((text, ""));
    let payload = || -> Result<Value, String> {
        let rest = rest.trim();
        if rest.starts_with('{') {
            serde_json::from_str(rest).map_err(|e| format!("tool result: {e}"))
        } else {
            Ok(serde_json::json!({"content": [{"type": "text", "text": rest}]}))
        }
    };
    let reply = match kind {
        "ok" => ToolReply::Ok(payload()?),
        "update" => ToolReply::Update(payload()?),
        "error" => ToolReply::Error(rest.trim().to_owned()),
        other => return Err(format!("unknown tool reply {other:?} (ok, error, update)")),
    };
    Ok(Command::Tool { id, reply })
}
