//! Pi 1.5.2's cache warming (`CacheWarmer` in the coding agent, pi-ai's `evaluateCacheWarming`):
//! after each of the session's own model requests, the same request is sent again with a
//! one-token cap shortly before the provider's prompt cache would expire, while the
//! conversation still starts with what that request sent and the expected savings clear a
//! threshold. Each good answer is written as a `usage {kind: "cache_warm"}` entry.
//!
//! The run is held here as data and timed by `wake_at`, so the interpreter reports the time
//! and a replay jumps over the wait; the warm request is a model call like any other, recorded
//! and answered from a cassette. It goes as 1.5.2's `getCacheWarmingRequestOptions` sends
//! it: a one-token cap, no message thread, no SDK retries. 1.5.2 draws no random number for its decision: the
//! "continuation probability" (1 while the agent runs, 0.15 once it settled) weighs the
//! expected savings, which are compared with a fixed threshold.

use serde::{Deserialize, Serialize};

use crate::agent::hooks::{HookDecision, HookEvent, HookOutcome, HookPayload, WarmAction};
use crate::agent::{CallId, Effect, Input, ModelRequest, ThreadState};
use crate::cost::calculate_cost;
use crate::message::{AgentMessage, StopReason, Usage};
use crate::model::{Model, ThinkingLevel};
use crate::session::entry::SessionEntry;
use crate::session::tree::UsageRecord;

use super::compaction::answer_of;
use super::machine::SessionMachine;
use super::provider_hooks::Hooks;

/// A run stops once its next warm would come later than this after the request (while the
/// agent runs): pi-ai's `CACHE_WARMING_MAX_AGE_MS`.
const MAX_AGE_MS: u64 = 60 * 60_000;
/// The same once the agent settled: `CACHE_WARMING_MAX_IDLE_AGE_MS`.
const MAX_IDLE_AGE_MS: u64 = 30 * 60_000;
/// A warm is sent when its expected savings reach this many dollars
/// (`CACHE_WARMING_MINIMUM_EXPECTED_SAVINGS`).
const MINIMUM_EXPECTED_SAVINGS: f64 = 0.05;
/// How likely the conversation goes on once the agent settled
/// (`CACHE_WARMING_IDLE_CONTINUATION_PROBABILITY`); 1 while it runs.
const IDLE_CONTINUATION_PROBABILITY: f64 = 0.15;
/// The warm comes at most this long before the cache expires, and not at all for shorter
/// lifetimes (`getCacheWarmingDelayMs`).
const EXPIRY_MARGIN_MS: u64 = 10_000;
/// The `kind` of the entry a warm writes.
const USAGE_KIND: &str = "cache_warm";
/// The `note` of the entry of a warm the extensions asked for against Pi's decision.
const OVERRIDE_NOTE: &str = "extension override";

/// The setting `cacheWarming` (global settings only in Pi 1.5.2; default `idle`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheWarmingMode {
    /// Never warm.
    Off,
    /// Warm only while the agent runs; its settling stops the run.
    Streaming,
    /// Warm while the agent runs and after it settled (up to 30 minutes).
    #[default]
    Idle,
}

/// Which of the model's `promptCache` lifetimes a request writes (pi-ai's `cacheRetention`:
/// `short` unless `PI_CACHE_RETENTION=long`; `none` writes no cache).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CacheRetentionKind {
    None,
    #[default]
    Short,
    Long,
}

/// What a session warms with, as a run's configuration holds it. A session without it never
/// warms (print and json runs, and runs recorded before warming existed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheWarming {
    pub mode: CacheWarmingMode,
    pub retention: CacheRetentionKind,
}

/// Whether the agent was running when the run was last looked at (pi's `phase`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Streaming,
    Idle,
}

/// One warming run: the request it keeps warm and its timers.
#[derive(Clone, Debug)]
pub(super) struct WarmRun {
    request: ModelRequest,
    /// The agent's transcript when the request was made: the run is current while the
    /// transcript still starts with it.
    context: Vec<AgentMessage>,
    ttl: u64,
    delay: u64,
    started_at: u64,
    next_warm_at: u64,
    refresh_deadline_at: u64,
    phase: Phase,
    /// The warm request in flight.
    call: Option<CallId>,
    /// The `cache_warming_decision` hook asked, with Pi's own action.
    deciding: Option<(CallId, WarmAction)>,
    /// The warm in flight is one the extensions asked for against Pi's decision.
    extension_override: bool,
}

/// pi-ai's `getCacheWarmingDelayMs`: 90 % of the lifetime, at least 10 s before it ends, at
/// least 1 ms; none for lifetimes of 10 s or less.
pub fn warming_delay_ms(ttl_ms: u64) -> Option<u64> {
    if ttl_ms <= EXPIRY_MARGIN_MS {
        return None;
    }
    let ninety = ttl_ms.saturating_mul(9) / 10;
    Some(ninety.min(ttl_ms - EXPIRY_MARGIN_MS).max(1))
}

/// pi-ai's `getPromptCacheTtlMs`: the model's `promptCache` lifetime (seconds) for the retention.
fn prompt_cache_ttl_ms(model: &Model, retention: CacheRetentionKind) -> Option<u64> {
    let key = match retention {
        CacheRetentionKind::None => return None,
        CacheRetentionKind::Short => "short",
        CacheRetentionKind::Long => "long",
    };
    let seconds = model.extra.get("promptCache")?.get(key)?.as_f64()?;
    (seconds >= 0.0).then_some((seconds * 1000.0) as u64)
}

/// pi-ai's `isCacheWarmingReplayable`: an Anthropic request with reasoning is replayed only
/// when the model forces adaptive thinking.
fn replayable(request: &ModelRequest) -> bool {
    let reasoning = request.reasoning.is_some_and(|l| l != ThinkingLevel::Off);
    if !reasoning || request.model.api != "anthropic-messages" {
        return true;
    }
    request
        .model
        .compat
        .as_ref()
        .and_then(|c| c.get("forceAdaptiveThinking"))
        .and_then(serde_json::Value::as_bool)
        == Some(true)
}

/// pi-ai's `calculateCost(...).total` for these tokens, as the providers price an answer.
fn price(model: &Model, tokens: Usage) -> f64 {
    calculate_cost(model, &tokens).total
}

/// pi-ai's `evaluateCacheWarming`: whether a warm is worth its price, and the costs weighed as
/// the `cache_warming_decision` event shows them.
fn evaluate(model: &Model, prompt_tokens: u64, phase: Phase) -> (WarmAction, HookPayload) {
    let hit = price(
        model,
        Usage {
            cache_read: prompt_tokens,
            ..Usage::default()
        },
    );
    let miss = price(
        model,
        if model.cost.cache_write > 0.0 {
            Usage {
                cache_write: prompt_tokens,
                ..Usage::default()
            }
        } else {
            Usage {
                input: prompt_tokens,
                ..Usage::default()
            }
        },
    );
    let warm = price(
        model,
        Usage {
            cache_read: prompt_tokens,
            output: 1,
            ..Usage::default()
        },
    );
    let probability = match phase {
        Phase::Idle => IDLE_CONTINUATION_PROBABILITY,
        Phase::Streaming => 1.0,
    };
    let miss_cost = (miss - hit).max(0.0);
    let action = if probability * miss_cost - warm >= MINIMUM_EXPECTED_SAVINGS {
        WarmAction::Warm
    } else {
        WarmAction::Stop
    };
    let payload = HookPayload::CacheWarmingDecision {
        warm_cost: warm,
        miss_cost,
        continuation_probability: probability,
        action,
    };
    (action, payload)
}

impl SessionMachine {
    /// Sets how the session warms the prompt cache; `None` (the default) never warms.
    pub fn set_cache_warming(&mut self, settings: Option<CacheWarming>) {
        self.cache_warming = settings;
        if settings.is_none_or(|s| s.mode == CacheWarmingMode::Off) {
            self.stop_warming();
        }
    }

    /// Whether a warm is scheduled or in flight: the session wants [`wake_at`](Self::wake_at)
    /// or an answer although it may be idle.
    pub fn is_warming(&self) -> bool {
        self.warm.is_some() || !self.warm_orphans.is_empty()
    }

    /// When the scheduled warm is due.
    pub(super) fn warm_wake_at(&self) -> Option<u64> {
        self.warm
            .as_ref()
            .filter(|run| run.call.is_none() && run.deciding.is_none())
            .map(|run| run.next_warm_at)
    }

    /// Pi's `CacheWarmer.start`: the session's own request `request` replaces any run.
    pub(super) fn start_warming(&mut self, request: &ModelRequest) {
        self.stop_warming();
        let Some(settings) = self.cache_warming else {
            return;
        };
        if settings.mode == CacheWarmingMode::Off || !replayable(request) {
            return;
        }
        let Some(ttl) = prompt_cache_ttl_ms(&request.model, settings.retention) else {
            return;
        };
        let Some(delay) = warming_delay_ms(ttl) else {
            return;
        };
        let mut run = WarmRun {
            request: request.clone(),
            context: self.agent.messages().to_vec(),
            ttl,
            delay,
            started_at: self.now,
            next_warm_at: 0,
            refresh_deadline_at: 0,
            phase: Phase::Streaming,
            call: None,
            deciding: None,
            extension_override: false,
        };
        // Pi's `disableContinuation: true`: the warm goes without a message thread, so it
        // neither continues the session's thread nor changes it.
        run.request.thread = Some(ThreadState::Off);
        self.schedule_warm(run);
    }

    /// Pi's `schedule`: the next warm `delay` from now, unless that passes the safety limit.
    fn schedule_warm(&mut self, mut run: WarmRun) {
        run.call = None;
        run.deciding = None;
        run.extension_override = false;
        run.next_warm_at = self.now.saturating_add(run.delay);
        run.refresh_deadline_at = run
            .next_warm_at
            .saturating_add(run.ttl.saturating_sub(run.delay) / 2);
        let limit = match run.phase {
            Phase::Idle => MAX_IDLE_AGE_MS,
            Phase::Streaming => MAX_AGE_MS,
        };
        let deadline = run.started_at.saturating_add(limit);
        if run.next_warm_at > deadline || self.now >= deadline {
            self.warm = None;
            return;
        }
        self.warm = Some(run);
    }

    /// Ends the run; a warm request in flight is cancelled and its answers are dropped, as is
    /// a decision the extensions are still making.
    fn stop_warming(&mut self) {
        let Some(run) = self.warm.take() else {
            return;
        };
        if let Some(call) = run.call {
            self.out.effects.push(Effect::Cancel { call });
            self.warm_orphans.push(call);
        }
        if let Some((call, _)) = run.deciding {
            self.warm_orphans.push(call);
        }
    }

    /// Pi's `onAgentSettled`: in mode `streaming` the run ends, else it goes on as idle, for
    /// 30 minutes from its request at most.
    pub(super) fn warming_settled(&mut self) {
        let Some(run) = self.warm.as_mut() else {
            return;
        };
        if self.cache_warming.map(|s| s.mode) == Some(CacheWarmingMode::Streaming) {
            self.stop_warming();
            return;
        }
        run.phase = Phase::Idle;
        let deadline = run.started_at.saturating_add(MAX_IDLE_AGE_MS);
        if run.next_warm_at > deadline || self.now >= deadline {
            self.stop_warming();
        }
    }

    /// Whether the agent still uses the request's model and its transcript still starts with
    /// the request's.
    fn warm_is_current(&self, run: &WarmRun) -> bool {
        let model = self.agent.model();
        let messages = self.agent.messages();
        model.provider == run.request.model.provider
            && model.id == run.request.model.id
            && run.context.len() <= messages.len()
            && messages.starts_with(&run.context)
    }

    /// Pi's `refresh`, when the warm is due: the run must still be current and on time, and
    /// the warm worth it; then the request goes out again with a one-token cap.
    ///
    /// Where an extension handles `cache_warming_decision`, it decides first (Pi's `decide`).
    pub(super) fn warm_due(&mut self) {
        let Some(run) = self.warm.take() else {
            return;
        };
        if run.call.is_some() || run.deciding.is_some() || self.now < run.next_warm_at {
            self.warm = Some(run);
            return;
        }
        if !self.warm_is_current(&run) || self.now > run.refresh_deadline_at {
            return;
        }
        let (action, payload) = evaluate(&run.request.model, self.last_prompt_tokens(), run.phase);
        if self
            .agent
            .handled_hooks()
            .contains(HookEvent::CacheWarmingDecision)
        {
            let call = self.agent.reserve_call();
            self.push_hook(call, payload);
            self.warm = Some(WarmRun {
                deciding: Some((call, action)),
                ..run
            });
            return;
        }
        if action == WarmAction::Warm {
            self.send_warm(run, false);
        }
    }

    /// The extensions' decision for the warm `call` asked about: the entries they wrote first;
    /// then, the run still current and on time, their action (Pi's when none returned one).
    pub(super) fn warm_decided(&mut self, call: CallId, outcome: HookOutcome) {
        if let Some(i) = self.warm_orphans.iter().position(|c| *c == call) {
            self.warm_orphans.remove(i);
            return;
        }
        let Some(run) = self.warm.take() else {
            return;
        };
        let Some((_, pi_action)) = run.deciding.filter(|(asked, _)| *asked == call) else {
            self.warm = Some(run);
            return;
        };
        self.append_asked_entries(&outcome.actions);
        if !self.warm_is_current(&run) || self.now > run.refresh_deadline_at {
            return;
        }
        let action = match outcome.decision {
            HookDecision::CacheWarmingDecision { action } => action,
            _ => pi_action,
        };
        if action == WarmAction::Warm {
            self.send_warm(run, action != pi_action);
        }
    }

    /// Sends the run's request again with a one-token cap.
    fn send_warm(&mut self, run: WarmRun, extension_override: bool) {
        let mut request = run.request.clone();
        request.max_tokens = Some(1);
        // Pi's `maxRetries: 0`: a failed warm is not sent again; the next one comes later.
        request.max_retries = Some(0);
        let call = self.agent.reserve_call();
        self.send_call(call, request, Hooks::Both);
        self.warm = Some(WarmRun {
            call: Some(call),
            deciding: None,
            extension_override,
            ..run
        });
    }

    /// The prompt size of the branch's last assistant message, as its provider reported it.
    fn last_prompt_tokens(&self) -> u64 {
        self.tree
            .branch_path(None)
            .iter()
            .rev()
            .find_map(|entry| match entry {
                SessionEntry::Message(m) => match &m.message {
                    AgentMessage::Assistant(a) => Some(&a.usage),
                    _ => None,
                },
                _ => None,
            })
            .map_or(0, |u| {
                u.input
                    .saturating_add(u.cache_read)
                    .saturating_add(u.cache_write)
            })
    }

    /// Whether `call` is a warm request or the extensions' decision about one (in flight or
    /// cancelled).
    pub(super) fn owns_warm_call(&self, call: CallId) -> bool {
        self.warm_orphans.contains(&call)
            || self.warm.as_ref().is_some_and(|r| {
                r.call == Some(call) || r.deciding.is_some_and(|(asked, _)| asked == call)
            })
    }

    /// An answer to a warm request: a good one is written as a `usage` entry; either way the
    /// next warm is scheduled from now. The stream's other events are not the session's.
    pub(super) fn warm_answer(&mut self, input: Input) {
        let Some((call, message)) = answer_of(input) else {
            return;
        };
        if let Some(i) = self.warm_orphans.iter().position(|c| *c == call) {
            self.warm_orphans.remove(i);
            return;
        }
        let Some(run) = self.warm.take() else {
            return;
        };
        if !self.warm_is_current(&run) {
            return;
        }
        if !matches!(message.stop_reason, StopReason::Error | StopReason::Aborted) {
            let model = message.response_model.clone().unwrap_or(message.model);
            let (id, persist) = self.tree.append_usage(
                UsageRecord {
                    kind: USAGE_KIND,
                    provider: &message.provider,
                    model: &model,
                    usage: message.usage,
                    note: run.extension_override.then_some(OVERRIDE_NOTE),
                },
                self.now,
                &mut self.ids,
            );
            self.persist(persist);
            self.emit_entry_appended(&id);
        }
        self.schedule_warm(run);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CostTier, ModelCost};

    #[test]
    fn the_savings_are_priced_as_a_requests_cost_first_of_equal_tiers_included() {
        // Two tiers with the same threshold: pi-ai's cost (and the providers') takes the first.
        let tier = |input: f64| CostTier {
            input_tokens_above: 0,
            input,
            ..CostTier::default()
        };
        let model = Model {
            cost: ModelCost {
                tiers: Some(vec![tier(1000.0), tier(0.0)]),
                ..ModelCost::default()
            },
            ..Model::default()
        };
        assert_eq!(
            evaluate(&model, 100_000, Phase::Streaming).0,
            WarmAction::Warm
        );
    }
}
