//! A cassette read for chaos runs: what the recorded world answered, indexed the way a
//! perturbed run asks for it. A perturbed run sends other requests and gets other call ids, so
//! model responses are served in call order, tool results by tool name and arguments, the
//! extensions' answers by the question their hook point asked, and the front end's inputs at
//! the step (the number of answers taken) where they arrived.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;
use pi_cassettes::convert::{from_json, transport_error};
use pi_cassettes::format::{chunk_bytes, Line, RecordedEffect, RecordedEnd, RecordedInput};
use pi_cassettes::{Cassette, SessionStart, ToInput};
use pi_core::agent::hooks::HookOutcome;
use pi_core::agent::{Input, ToolOutcome};
use pi_core::agent_session::SessionInput;
use pi_effects::run_config::RunConfig;
use pi_providers::transport::scripted::ScriptedEnd;
use pi_providers::transport::TransportError;
use pi_providers::CallOptions;

use crate::plan::Shape;

/// How a recorded response body ends: complete, failed, or nothing more came (the call was
/// cancelled while it streamed). The canned transport's own ending, which serves it.
pub type BodyEnd = ScriptedEnd;

/// One recorded HTTP attempt of a model call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attempt {
    /// A response: status, headers, body reads, how the body ended.
    Response {
        status: u16,
        headers: Vec<(String, String)>,
        chunks: Vec<Bytes>,
        end: BodyEnd,
    },
    /// No response: the connection failed before one.
    Failed(TransportError),
    /// No response ever came (the call was cancelled before one).
    Hang,
}

/// A recorded model call.
#[derive(Clone, Debug)]
pub struct RecordedCall {
    pub options: CallOptions,
    pub attempts: Vec<Attempt>,
}

/// An input from the front end and the step it arrived at.
#[derive(Clone, Debug)]
pub struct Scheduled {
    /// The answers the run had taken when it arrived.
    pub step: usize,
    /// Its recorded time.
    pub t: u64,
    pub input: SessionInput,
}

/// A recorded tool execution's answers.
#[derive(Clone, Debug)]
pub struct RecordedTool {
    pub updates: Vec<Input>,
    pub outcome: Option<ToolOutcome>,
}

/// A hook point the recorded run asked its extensions about, and their answer.
#[derive(Clone, Debug)]
pub struct RecordedHook {
    /// The question as [`hook_question`] reads it: Pi's event object as recorded, times aside.
    pub question: serde_json::Value,
    /// The composed decision, the actions asked for and the handlers that threw.
    pub outcome: HookOutcome,
}

/// What a hook point asks, to be matched between a recording and a perturbed run: the payload
/// as its `effect` line records it, without the times in it at any depth (`timestamp`,
/// `durationMs`). A chaos run keeps virtual time, so the same question asked again differs
/// only there.
pub fn hook_question(mut payload: serde_json::Value) -> serde_json::Value {
    fn strip(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(fields) => {
                fields.remove("timestamp");
                fields.remove("durationMs");
                fields.values_mut().for_each(strip);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    strip(&mut payload);
    payload
}

/// Why a cassette cannot be chaos-replayed.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    #[error("{path}:{line}: {why}")]
    Line {
        path: PathBuf,
        line: usize,
        why: String,
    },
    #[error("{path}: {why}")]
    Session { path: PathBuf, why: String },
}

/// A cassette indexed for chaos runs (see the module doc).
#[derive(Clone, Debug)]
pub struct ChaosRecording {
    pub path: PathBuf,
    /// The configuration runs are built from; change it to test another configuration
    /// against the same recorded world.
    pub config: RunConfig,
    pub session: SessionStart,
    /// The session file's text when the run resumed one.
    pub session_content: Option<String>,
    /// Model calls in the order they were made.
    pub calls: Vec<RecordedCall>,
    /// Inputs from the front end, in order.
    pub inputs: Vec<Scheduled>,
    /// Tool answers by tool name and arguments (as JSON text), in the order they were made.
    pub tools: HashMap<(String, String), Vec<RecordedTool>>,
    /// The hook points the extensions answered, in the order they were asked.
    pub hooks: Vec<RecordedHook>,
    pub shape: Shape,
}

impl ChaosRecording {
    /// Indexes `cassette` (a loaded one: its lines are already checked).
    pub fn from_cassette(cassette: &Cassette) -> Result<Arc<ChaosRecording>, RecordingError> {
        let path = cassette.path.clone();
        let mut calls: Vec<RecordedCall> = Vec::new();
        let mut call_index: HashMap<u64, usize> = HashMap::new();
        let mut inputs = Vec::new();
        let mut tool_of: HashMap<u64, (String, String)> = HashMap::new();
        let mut tool_answers: HashMap<u64, RecordedTool> = HashMap::new();
        let mut tool_order: Vec<u64> = Vec::new();
        let mut questions: HashMap<u64, serde_json::Value> = HashMap::new();
        let mut hooks: Vec<RecordedHook> = Vec::new();
        let mut steps = 0;
        let mut wakes = 0;
        for (number, line) in &cassette.lines {
            let at = |why: String| RecordingError::Line {
                path: path.clone(),
                line: *number,
                why,
            };
            match line {
                Line::Outside { t, input } | Line::Command { t, input } => inputs.push(Scheduled {
                    step: steps,
                    t: *t,
                    input: input.to_input().map_err(|e| at(e.to_string()))?,
                }),
                Line::Event { .. } => steps += 1,
                Line::Wake { .. } => {
                    steps += 1;
                    wakes += 1;
                }
                Line::Answer { input, .. } => {
                    steps += 1;
                    match &**input {
                        RecordedInput::ToolUpdate { call, .. }
                        | RecordedInput::ToolActed { call, .. }
                        | RecordedInput::ToolFinished { call, .. } => {
                            let answer = tool_answers.entry(*call).or_insert(RecordedTool {
                                updates: Vec::new(),
                                outcome: None,
                            });
                            match input.to_input().map_err(|e| at(e.to_string()))? {
                                SessionInput::Answer(Input::ToolFinished { outcome, .. }) => {
                                    answer.outcome = Some(outcome)
                                }
                                SessionInput::Answer(update) => answer.updates.push(update),
                                _ => {}
                            }
                        }
                        RecordedInput::HookDecided { call, .. } => {
                            if let (
                                Some(question),
                                SessionInput::Answer(Input::HookDecided { outcome, .. }),
                            ) = (
                                questions.remove(call),
                                input.to_input().map_err(|e| at(e.to_string()))?,
                            ) {
                                hooks.push(RecordedHook { question, outcome });
                            }
                        }
                        _ => {}
                    }
                }
                Line::Effect {
                    effect: RecordedEffect::Hook { call, payload, .. },
                } => {
                    questions.insert(*call, hook_question(payload.clone()));
                }
                Line::Effect {
                    effect: RecordedEffect::RunTool { call, tool, args },
                } => {
                    tool_of.insert(*call, (tool.clone(), args.to_string()));
                    tool_order.push(*call);
                }
                Line::Call { call, options, .. } => {
                    call_index.insert(*call, calls.len());
                    calls.push(RecordedCall {
                        options: from_json(options, "options").map_err(|e| at(e.to_string()))?,
                        attempts: Vec::new(),
                    });
                }
                Line::Request { call, .. } => {
                    if let Some(&i) = call_index.get(call) {
                        calls[i].attempts.push(Attempt::Hang);
                    }
                }
                Line::Response {
                    call,
                    status,
                    headers,
                    ..
                } => {
                    if let Some(attempt) = last_attempt(&mut calls, &call_index, *call) {
                        *attempt = Attempt::Response {
                            status: *status,
                            headers: headers.clone(),
                            chunks: Vec::new(),
                            end: BodyEnd::Hang,
                        };
                    }
                }
                Line::Chunk {
                    call, text, base64, ..
                } => {
                    let bytes = chunk_bytes(text.clone(), base64.clone()).map_err(at)?;
                    if let Some(Attempt::Response { chunks, .. }) =
                        last_attempt(&mut calls, &call_index, *call)
                    {
                        chunks.push(Bytes::from(bytes));
                    }
                }
                Line::End { call, end, .. } => {
                    if let Some(attempt) = last_attempt(&mut calls, &call_index, *call) {
                        match (attempt, end) {
                            (Attempt::Response { end: body_end, .. }, end) => {
                                *body_end = match end {
                                    RecordedEnd::Complete => BodyEnd::Complete,
                                    RecordedEnd::Dropped => BodyEnd::Hang,
                                    RecordedEnd::Error(e) => BodyEnd::Fail(transport_error(e)),
                                }
                            }
                            (attempt, RecordedEnd::Error(e)) => {
                                *attempt = Attempt::Failed(transport_error(e))
                            }
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        let mut tools: HashMap<(String, String), Vec<RecordedTool>> = HashMap::new();
        for call in &tool_order {
            if let (Some(key), Some(answer)) = (tool_of.get(call), tool_answers.remove(call)) {
                tools.entry(key.clone()).or_default().push(answer);
            }
        }
        let session_content =
            cassette
                .session_content()
                .map_err(|why| RecordingError::Session {
                    path: path.clone(),
                    why,
                })?;
        let shape = Shape {
            calls: calls.len(),
            steps,
            tools: tool_order.len(),
            wakes,
        };
        Ok(Arc::new(ChaosRecording {
            path,
            config: cassette.config.clone(),
            session: cassette.header.session.clone(),
            session_content,
            calls,
            inputs,
            tools,
            hooks,
            shape,
        }))
    }

    /// What a plan can perturb in this recording.
    pub fn shape(&self) -> Shape {
        self.shape
    }
}

fn last_attempt<'a>(
    calls: &'a mut [RecordedCall],
    index: &HashMap<u64, usize>,
    call: u64,
) -> Option<&'a mut Attempt> {
    let i = *index.get(&call)?;
    calls.get_mut(i)?.attempts.last_mut()
}
