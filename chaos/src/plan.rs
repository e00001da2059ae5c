//! Perturbations and plans: what a chaos run changes about a recorded run, as data. A plan is
//! a list of [`Perturbation`]s; it prints as one short word list (`split:0:7,abort:12`) and
//! parses back, so a failing run is reproduced from the command line with `--plan`. Plans are
//! made from a seed ([`PerturbationPlan::generate`]) or by proptest ([`plan_strategy`]), both within the
//! [`Shape`] of a recording (how many calls, steps, tool calls and timers it has).

use std::fmt;
use std::str::FromStr;

use pi_effects::run_config::RunConfig;
use proptest::prelude::*;

/// One change to a recorded run. Indices count from 0 in the order things happen in the run.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Perturbation {
    /// The bytes of recorded model call `call` re-split into other reads, at points drawn from
    /// `seed` (anywhere: inside an SSE line, inside a UTF-8 character).
    Split { call: usize, seed: u64 },
    /// A transient failure answered to the request before recorded call `call`'s first one.
    Transient { call: usize, kind: Transient },
    /// Recorded call `call`'s body cut after `permille`/1000 of its bytes: the connection fails
    /// there (the error Node reports, `terminated`).
    Cut { call: usize, permille: u16 },
    /// A steering message sent once the run has taken `step` answers.
    Steer { step: usize },
    /// A follow-up message sent once the run has taken `step` answers.
    FollowUp { step: usize },
    /// An abort once the run has taken `step` answers.
    Abort { step: usize },
    /// A manual compaction once the run has taken `step` answers (Pi aborts the run first):
    /// the cut lands wherever the run is, between a tool call and its result too.
    Compact { step: usize },
    /// The `tool`-th tool call of the run throws instead of returning its recorded result.
    ToolFails { tool: usize },
    /// At the `choice`-th moment when several answers are ready, the last one started arrives
    /// first (tool results in another order, a tool finishing before the model's last event).
    Reorder { choice: usize },
    /// The `wake`-th timer of the run (a retry's backoff, a pause) fires `ms` late.
    LateTimer { wake: usize, ms: u64 },
    /// The setting `compaction.keepRecentTokens` at `tokens` instead of the recorded value:
    /// with a small one, a compaction's cut lands inside the short recorded conversations.
    KeepRecent { tokens: u64 },
}

/// The kinds of transient failure injected before a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Transient {
    /// `429 Too Many Requests`.
    RateLimited,
    /// `500 Internal Server Error`.
    ServerError,
    /// The connection reset before any response.
    Reset,
}

impl Transient {
    fn word(self) -> &'static str {
        match self {
            Transient::RateLimited => "429",
            Transient::ServerError => "500",
            Transient::Reset => "reset",
        }
    }
}

impl fmt::Display for Perturbation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Perturbation::Split { call, seed } => write!(f, "split:{call}:{seed}"),
            Perturbation::Transient { call, kind } => write!(f, "err:{call}:{}", kind.word()),
            Perturbation::Cut { call, permille } => write!(f, "cut:{call}:{permille}"),
            Perturbation::Steer { step } => write!(f, "steer:{step}"),
            Perturbation::FollowUp { step } => write!(f, "follow:{step}"),
            Perturbation::Abort { step } => write!(f, "abort:{step}"),
            Perturbation::Compact { step } => write!(f, "compact:{step}"),
            Perturbation::ToolFails { tool } => write!(f, "toolfail:{tool}"),
            Perturbation::Reorder { choice } => write!(f, "reorder:{choice}"),
            Perturbation::LateTimer { wake, ms } => write!(f, "late:{wake}:{ms}"),
            Perturbation::KeepRecent { tokens } => write!(f, "keep:{tokens}"),
        }
    }
}

/// Why a plan's text does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("not a chaos plan: `{word}`: {why}")]
pub struct PlanParseError {
    pub word: String,
    pub why: &'static str,
}

impl FromStr for Perturbation {
    type Err = PlanParseError;

    fn from_str(word: &str) -> Result<Self, PlanParseError> {
        let fail = |why| PlanParseError {
            word: word.to_owned(),
            why,
        };
        let parts: Vec<&str> = word.split(':').collect();
        let num = |i: usize| -> Result<u64, PlanParseError> {
            parts
                .get(i)
                .and_then(|p| p.parse().ok())
                .ok_or_else(|| fail("expected a number"))
        };
        let index = |i: usize| num(i).and_then(|n| usize::try_from(n).map_err(|_| fail("too big")));
        let arity = |n: usize| {
            if parts.len() == n {
                Ok(())
            } else {
                Err(fail("wrong number of fields"))
            }
        };
        let perturbation = match parts.first().copied().unwrap_or_default() {
            "split" => Perturbation::Split {
                call: index(1)?,
                seed: num(2)?,
            },
            "err" => Perturbation::Transient {
                call: index(1)?,
                kind: match parts.get(2).copied() {
                    Some("429") => Transient::RateLimited,
                    Some("500") => Transient::ServerError,
                    Some("reset") => Transient::Reset,
                    _ => return Err(fail("expected 429, 500 or reset")),
                },
            },
            "cut" => Perturbation::Cut {
                call: index(1)?,
                permille: u16::try_from(num(2)?)
                    .ok()
                    .filter(|p| *p <= 1000)
                    .ok_or_else(|| fail("expected 0 to 1000"))?,
            },
            "steer" => Perturbation::Steer { step: index(1)? },
            "follow" => Perturbation::FollowUp { step: index(1)? },
            "abort" => Perturbation::Abort { step: index(1)? },
            "compact" => Perturbation::Compact { step: index(1)? },
            "toolfail" => Perturbation::ToolFails { tool: index(1)? },
            "reorder" => Perturbation::Reorder { choice: index(1)? },
            "keep" => Perturbation::KeepRecent { tokens: num(1)? },
            "late" => Perturbation::LateTimer {
                wake: index(1)?,
                ms: num(2)?,
            },
            _ => return Err(fail("unknown perturbation")),
        };
        let fields = match perturbation {
            Perturbation::Split { .. }
            | Perturbation::Transient { .. }
            | Perturbation::Cut { .. }
            | Perturbation::LateTimer { .. } => 3,
            _ => 2,
        };
        arity(fields)?;
        Ok(perturbation)
    }
}

/// The perturbations of one chaos run. The empty plan replays the recording as it was.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct PerturbationPlan(pub Vec<Perturbation>);

impl PerturbationPlan {
    /// No perturbation.
    pub fn none() -> Self {
        PerturbationPlan(Vec::new())
    }

    /// A plan of one to four perturbations drawn from `seed` within `shape`: the same seed
    /// and shape always give the same plan.
    pub fn generate(seed: u64, shape: &Shape) -> Self {
        let mut rng = SplitMix(seed);
        let count = 1 + rng.below(4);
        PerturbationPlan(
            (0..count)
                .map(|_| perturbation_from(&mut rng, shape))
                .collect(),
        )
    }

    /// The plan without its `i`-th perturbation (for shrinking).
    pub fn without(&self, i: usize) -> PerturbationPlan {
        let mut rest = self.0.clone();
        if i < rest.len() {
            rest.remove(i);
        }
        PerturbationPlan(rest)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `config` with the plan's changes to the settings.
    pub fn config(&self, config: &RunConfig) -> RunConfig {
        let mut config = config.clone();
        for p in &self.0 {
            if let Perturbation::KeepRecent { tokens } = p {
                config.compaction.keep_recent_tokens = *tokens;
            }
        }
        config
    }
}

impl fmt::Display for PerturbationPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return f.write_str("none");
        }
        for (i, p) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

impl FromStr for PerturbationPlan {
    type Err = PlanParseError;

    fn from_str(text: &str) -> Result<Self, PlanParseError> {
        let text = text.trim();
        if text == "none" || text.is_empty() {
            return Ok(PerturbationPlan::none());
        }
        text.split(',')
            .map(|w| w.trim().parse())
            .collect::<Result<_, _>>()
            .map(PerturbationPlan)
    }
}

/// What a recording offers to perturb: perturbations are drawn within it (an index past it
/// is harmless: it never applies).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    /// Recorded model calls.
    pub calls: usize,
    /// Answers the recorded run took (stream events, tool answers, timers).
    pub steps: usize,
    /// Recorded tool calls.
    pub tools: usize,
    /// Recorded timers (`wake` lines); plans also make the first two timers of injected
    /// failures late.
    pub wakes: usize,
}

fn perturbation_from(rng: &mut SplitMix, shape: &Shape) -> Perturbation {
    let calls = shape.calls.max(1);
    let steps = shape.steps.max(1);
    loop {
        let p = match rng.below(11) {
            0 | 1 => Perturbation::Split {
                call: rng.below(calls),
                seed: rng.next_u64() % 1_000_000,
            },
            2 => Perturbation::Transient {
                call: rng.below(calls),
                kind: [
                    Transient::RateLimited,
                    Transient::ServerError,
                    Transient::Reset,
                ][rng.below(3)],
            },
            3 => Perturbation::Cut {
                call: rng.below(calls),
                permille: u16::try_from(rng.below(1001)).unwrap_or(500),
            },
            4 => Perturbation::Steer {
                step: rng.below(steps),
            },
            5 => Perturbation::FollowUp {
                step: rng.below(steps),
            },
            6 => Perturbation::Abort {
                step: rng.below(steps),
            },
            7 if shape.tools > 0 => match rng.below(2) {
                0 => Perturbation::ToolFails {
                    tool: rng.below(shape.tools),
                },
                _ => Perturbation::Reorder {
                    choice: rng.below(shape.tools * 2),
                },
            },
            // Injected failures set timers of their own: a recording without one still has
            // a first and a second to make late.
            10 => Perturbation::KeepRecent {
                tokens: rng.next_u64() % 200,
            },
            9 => Perturbation::Compact {
                step: rng.below(steps),
            },
            8 => Perturbation::LateTimer {
                wake: rng.below(shape.wakes + 2),
                ms: 1 + rng.next_u64() % 120_000,
            },
            _ => continue,
        };
        return p;
    }
}

/// The proptest strategy of one perturbation within `shape`.
pub fn perturbation_strategy(shape: &Shape) -> BoxedStrategy<Perturbation> {
    let calls = shape.calls.max(1);
    let steps = shape.steps.max(1);
    let transient = prop_oneof![
        Just(Transient::RateLimited),
        Just(Transient::ServerError),
        Just(Transient::Reset)
    ];
    let mut all = vec![
        (0..calls, any::<u64>())
            .prop_map(|(call, seed)| Perturbation::Split { call, seed })
            .boxed(),
        (0..calls, transient)
            .prop_map(|(call, kind)| Perturbation::Transient { call, kind })
            .boxed(),
        (0..calls, 0u16..=1000)
            .prop_map(|(call, permille)| Perturbation::Cut { call, permille })
            .boxed(),
        (0..steps)
            .prop_map(|step| Perturbation::Steer { step })
            .boxed(),
        (0..steps)
            .prop_map(|step| Perturbation::FollowUp { step })
            .boxed(),
        (0..steps)
            .prop_map(|step| Perturbation::Abort { step })
            .boxed(),
        (0..steps)
            .prop_map(|step| Perturbation::Compact { step })
            .boxed(),
        (0u64..200)
            .prop_map(|tokens| Perturbation::KeepRecent { tokens })
            .boxed(),
    ];
    if shape.tools > 0 {
        all.push(
            (0..shape.tools)
                .prop_map(|tool| Perturbation::ToolFails { tool })
                .boxed(),
        );
        all.push(
            (0..shape.tools * 2)
                .prop_map(|choice| Perturbation::Reorder { choice })
                .boxed(),
        );
    }
    all.push(
        (0..shape.wakes + 2, 1u64..120_000)
            .prop_map(|(wake, ms)| Perturbation::LateTimer { wake, ms })
            .boxed(),
    );
    proptest::strategy::Union::new(all).boxed()
}

/// The proptest strategy of plans of up to `max` perturbations within `shape`; proptest
/// shrinks a failing plan by dropping perturbations and lowering indices.
pub fn plan_strategy(shape: &Shape, max: usize) -> BoxedStrategy<PerturbationPlan> {
    proptest::collection::vec(perturbation_strategy(shape), 0..=max)
        .prop_map(PerturbationPlan)
        .boxed()
}

/// SplitMix64: a small generator whose sequence never changes with a dependency's version,
/// so a seed printed today reproduces its run with any later build.
#[derive(Clone, Debug)]
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`0` when `n` is `0`).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            return 0;
        }
        usize::try_from(self.next_u64() % n as u64).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_print_and_parse_back() {
        let shape = Shape {
            calls: 3,
            steps: 40,
            tools: 2,
            wakes: 1,
        };
        for seed in 0..500 {
            let plan = PerturbationPlan::generate(seed, &shape);
            assert!(!plan.is_empty() && plan.0.len() <= 4);
            assert_eq!(plan.to_string().parse::<PerturbationPlan>(), Ok(plan));
        }
        assert_eq!(
            "none".parse::<PerturbationPlan>(),
            Ok(PerturbationPlan::none())
        );
    }

    #[test]
    fn the_same_seed_gives_the_same_plan() {
        let shape = Shape {
            calls: 2,
            steps: 10,
            tools: 0,
            wakes: 0,
        };
        assert_eq!(
            PerturbationPlan::generate(42, &shape),
            PerturbationPlan::generate(42, &shape)
        );
        assert_ne!(
            PerturbationPlan::generate(42, &shape),
            PerturbationPlan::generate(43, &shape)
        );
    }

    #[test]
    fn bad_plans_are_refused_not_panicked_on() {
        for bad in [
            "split",
            "split:1",
            "err:0:404",
            "cut:0:1001",
            "x:1",
            "abort:1:2",
        ] {
            assert!(bad.parse::<PerturbationPlan>().is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn strategy_plans_stay_in_shape(plan in plan_strategy(&Shape { calls: 2, steps: 5, tools: 0, wakes: 0 }, 4)) {
            prop_assert!(plan.0.len() <= 4);
            for p in &plan.0 {
                let in_shape = match p {
                    Perturbation::Split { call, .. }
                    | Perturbation::Transient { call, .. }
                    | Perturbation::Cut { call, .. } => *call < 2,
                    Perturbation::Steer { step }
                    | Perturbation::FollowUp { step }
                    | Perturbation::Abort { step }
                    | Perturbation::Compact { step } => *step < 5,
                    Perturbation::LateTimer { wake, .. } => *wake < 2,
                    Perturbation::KeepRecent { tokens } => *tokens < 200,
                    Perturbation::ToolFails { .. } | Perturbation::Reorder { .. } => false,
                };
                prop_assert!(in_shape, "{}", p);
            }
            prop_assert_eq!(plan.to_string().parse::<PerturbationPlan>(), Ok(plan));
        }
    }
}
