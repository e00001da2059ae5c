//! Which trials a run makes: every task of every suite against each of its models, `trials`
//! times, narrowed by `--filter` and split by `--shard`. The order and the split depend only
//! on the suites and the flags, so every machine of a sharded run computes the same split.

use std::fmt;
use std::str::FromStr;

use crate::digest::sha256_hex;
use crate::suite::{Suite, Task};

/// One trial to run.
#[derive(Clone, Debug)]
pub struct TrialSpec<'a> {
    pub suite: &'a Suite,
    pub task: &'a Task,
    pub model: String,
    pub trial: u32,
    /// The trial's own seed: from the task's seed and the trial's name, so trials never share
    /// one (and a cache or cassette scoped by it is per trial).
    pub seed: u64,
}

impl TrialSpec<'_> {
    /// `suite/task/model/trial`: the trial's name in reports and its cassette's path.
    pub fn key(&self) -> String {
        format!(
            "{}/{}/{}/{}",
            self.suite.name, self.task.id, self.model, self.trial
        )
    }
}

/// What narrows and widens the suites' own matrix.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// Replace every task's models.
    pub models: Vec<String>,
    /// Replace every task's trial count.
    pub trials: Option<u32>,
    /// Keep the tasks whose `task` or `suite/task` matches any pattern (`*` matches any run of
    /// characters, `?` one), or which have a tag matching `tag:pattern`, and leave out those
    /// that match a pattern written `!pattern` (or `!tag:pattern`).
    pub filters: Vec<String>,
    pub shard: Option<Shard>,
}

/// Shard `index` of `count` (zero-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = String;

    /// `I/N`, zero-based `I` below `N`.
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("`{s}` is not a shard: expected I/N with 0 <= I < N, e.g. 0/4");
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

/// Why no trials could be planned.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlanError {
    #[error("{file}:{line}: task `{task}`: no model to run it with (set `models` in the suite's [defaults] or the task, or pass --model)")]
    NoModel {
        file: String,
        line: usize,
        task: String,
    },
    #[error("no task matches the filter {0:?}")]
    NothingMatches(Vec<String>),
}

/// The trials of `suites` under `selection`, in order: suite, task, model, trial.
pub fn plan<'a>(
    suites: &'a [Suite],
    selection: &Selection,
) -> Result<Vec<TrialSpec<'a>>, PlanError> {
    let mut specs = Vec::new();
    let mut matched = false;
    for suite in suites {
        for task in &suite.tasks {
            if !selected(&selection.filters, &suite.name, &task.id, &task.tags) {
                continue;
            }
            matched = true;
            let models = if selection.models.is_empty() {
                &task.models
            } else {
                &selection.models
            };
            if models.is_empty() {
                return Err(PlanError::NoModel {
                    file: suite.path.display().to_string(),
                    line: task.line,
                    task: task.id.clone(),
                });
            }
            let trials = selection.trials.unwrap_or(task.trials);
            for model in models {
                for trial in 0..trials {
                    let name = format!("{}/{}/{model}/{trial}/{}", suite.name, task.id, task.seed);
                    specs.push(TrialSpec {
                        suite,
                        task,
                        model: model.clone(),
                        trial,
                        seed: seed_of(&name),
                    });
                }
            }
        }
    }
    if !matched {
        return Err(PlanError::NothingMatches(selection.filters.clone()));
    }
    Ok(match selection.shard {
        Some(shard) => specs
            .into_iter()
            .filter(|spec| shard_of(&spec.key(), shard.count) == shard.index)
            .collect(),
        None => specs,
    })
}

/// Whether the task `id` of suite `suite`, tagged `tags`, passes `filters`: it matches a
/// pattern (or none is given but exclusions) and no `!pattern`. A pattern `tag:P` matches a
/// task with a tag that `P` matches.
fn selected(filters: &[String], suite: &str, id: &str, tags: &[String]) -> bool {
    let full = format!("{suite}/{id}");
    let matches = |pattern: &str| match pattern.strip_prefix("tag:") {
        Some(tag) => tags.iter().any(|t| glob_match(tag, t)),
        None => glob_match(pattern, id) || glob_match(pattern, &full),
    };
    let (excluding, including): (Vec<&String>, Vec<&String>) =
        filters.iter().partition(|f| f.starts_with('!'));
    let included = including.is_empty() || including.iter().any(|f| matches(f));
    let excluded = excluding.iter().any(|f| matches(&f[1..]));
    included && !excluded
}

/// The shard a trial belongs to: by a hash of its name, so adding a task or a model moves only
/// the new trials, and a trial's shard never depends on what else is in the run.
pub fn shard_of(key: &str, count: u32) -> u32 {
    let digest = sha256_hex(key.as_bytes());
    let head = u64::from_str_radix(&digest[..16], 16).unwrap_or(0);
    u32::try_from(head % u64::from(count.max(1))).unwrap_or(0)
}

fn seed_of(name: &str) -> u64 {
    let digest = sha256_hex(name.as_bytes());
    // 53 bits: the seed survives a trip through JSON readers that hold numbers as doubles.
    u64::from_str_radix(&digest[..16], 16).unwrap_or(0) >> 11
}

/// Whether `text` matches the shell-style `pattern` (`*`, `?`).
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_like_a_shell() {
        assert!(glob_match("fix-*", "fix-bug"));
        assert!(glob_match("*", ""));
        assert!(glob_match("a?c", "abc"));
        assert!(!glob_match("a?c", "abbc"));
        assert!(glob_match("*b*b", "abab"));
        assert!(!glob_match("smoke/x", "smoke/xy"));
    }

    #[test]
    fn a_bang_excludes_whatever_else_includes() {
        let filters = |f: &[&str]| f.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(selected(&[], "s", "a", &[]));
        assert!(!selected(&filters(&["!a"]), "s", "a", &[]));
        assert!(selected(&filters(&["!a"]), "s", "b", &[]));
        assert!(!selected(&filters(&["s/*", "!s/a"]), "s", "a", &[]));
        assert!(selected(&filters(&["s/*", "!s/a"]), "s", "ab", &[]));
        assert!(!selected(&filters(&["x*", "!s/a"]), "s", "b", &[]));
    }

    #[test]
    fn tag_filters_pick_tasks_by_any_of_their_tags() {
        let filters = |f: &[&str]| f.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let tags = ["easy".to_owned(), "py".to_owned()];
        assert!(selected(&filters(&["tag:py"]), "s", "a", &tags));
        assert!(selected(&filters(&["tag:e*"]), "s", "a", &tags));
        assert!(!selected(&filters(&["tag:hard"]), "s", "a", &tags));
        assert!(!selected(&filters(&["tag:py"]), "s", "a", &[]));
        assert!(!selected(&filters(&["!tag:easy"]), "s", "a", &tags));
        assert!(selected(&filters(&["!tag:easy"]), "s", "b", &[]));
        assert!(
            !selected(&filters(&["tag:*"]), "s", "tag:x", &[]),
            "a tag filter is not a name filter"
        );
    }

    #[test]
    fn shards_parse_and_refuse_nonsense() {
        assert_eq!("1/4".parse::<Shard>(), Ok(Shard { index: 1, count: 4 }));
        assert!("4/4".parse::<Shard>().is_err());
        assert!("0/0".parse::<Shard>().is_err());
        assert!("x".parse::<Shard>().is_err());
    }
}
