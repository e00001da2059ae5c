//! Models and thinking levels as pi-ai describes them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::Extra;

/// How hard a reasoning model should think. `off` sends no reasoning option at all.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    #[default]
    Off,
    Minimal,
    Low,
    Medium,
    High,
    Xhigh,
    /// Pi 1.5.2's highest level; like `xhigh`, only for models whose map names it.
    Max,
}

impl ThinkingLevel {
    /// Every level, lowest first (Pi 1.5.2's `THINKING_LEVELS`).
    pub const ALL: [ThinkingLevel; 7] = [
        ThinkingLevel::Off,
        ThinkingLevel::Minimal,
        ThinkingLevel::Low,
        ThinkingLevel::Medium,
        ThinkingLevel::High,
        ThinkingLevel::Xhigh,
        ThinkingLevel::Max,
    ];

    /// The name Pi uses on the command line and in files.
    pub fn as_str(self) -> &'static str {
        match self {
            ThinkingLevel::Off => "off",
            ThinkingLevel::Minimal => "minimal",
            ThinkingLevel::Low => "low",
            ThinkingLevel::Medium => "medium",
            ThinkingLevel::High => "high",
            ThinkingLevel::Xhigh => "xhigh",
            ThinkingLevel::Max => "max",
        }
    }

    /// The level with this name, if any.
    pub fn parse(name: &str) -> Option<Self> {
        ThinkingLevel::ALL.into_iter().find(|l| l.as_str() == name)
    }
}

/// Dollars per million tokens.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelCost {
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
    /// Other prices for requests with more input than a threshold (Pi 1.5.2's `cost.tiers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiers: Option<Vec<CostTier>>,
}

/// The prices of requests whose input (with cache reads and writes) passes `input_tokens_above`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CostTier {
    pub input_tokens_above: u64,
    pub input: f64,
    pub output: f64,
    pub cache_read: f64,
    pub cache_write: f64,
}

/// A model of some provider, reachable through one API (pi-ai `Model`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Model {
    pub id: String,
    pub name: String,
    pub api: String,
    pub provider: String,
    pub base_url: String,
    pub reasoning: bool,
    /// Level -> provider value; `null` marks a level unsupported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level_map: Option<BTreeMap<ThinkingLevel, Option<String>>>,
    pub input: Vec<String>,
    pub cost: ModelCost,
    pub context_window: u64,
    pub max_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compat: Option<Value>,
    #[serde(flatten)]
    pub extra: Extra,
}

impl Model {
    /// The placeholder pi-agent-core's `Agent` starts with before a model is chosen.
    pub fn unknown() -> Self {
        Model {
            id: "unknown".into(),
            name: "unknown".into(),
            api: "unknown".into(),
            provider: "unknown".into(),
            ..Model::default()
        }
    }
}

/// `off` only for non-reasoning models; otherwise every level the model's map does not mark
/// unsupported (`null`), with `xhigh` and `max` only when the map names them.
pub fn supported_thinking_levels(model: &Model) -> Vec<ThinkingLevel> {
    if !model.reasoning {
        return vec![ThinkingLevel::Off];
    }
    ThinkingLevel::ALL
        .into_iter()
        .filter(|level| {
            let mapped = model.thinking_level_map.as_ref().and_then(|m| m.get(level));
            match mapped {
                Some(None) => false,
                _ if matches!(level, ThinkingLevel::Xhigh | ThinkingLevel::Max) => mapped.is_some(),
                _ => true,
            }
        })
        .collect()
}

/// The requested level if supported, else the nearest supported level above it, else below it.
pub fn clamp_thinking_level(model: &Model, level: ThinkingLevel) -> ThinkingLevel {
    let available = supported_thinking_levels(model);
    if available.contains(&level) {
        return level;
    }
    let all = ThinkingLevel::ALL;
    let index = all.iter().position(|l| *l == level).unwrap_or(0);
    all[index..]
        .iter()
        .chain(all[..index].iter().rev())
        .find(|l| available.contains(l))
        .copied()
        .unwrap_or(ThinkingLevel::Off)
}
