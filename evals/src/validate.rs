//! What a suite's values may be, checked when it is read (and, for the same values given as
//! flags, before a run plans its trials): names that become folders, Pi's tools and thinking
//! levels, and a bound on trials. Each rule is documented in `docs/evals.md`.

/// The most trials a task may ask for (per model), and `--trials` too: a typo such as
/// `trials = 10000` would otherwise start ten thousand agents.
pub const MAX_TRIALS: u32 = 1000;

/// Pi's built-in tools, the names its `--tools` takes.
pub const TOOLS: &[&str] = &["read", "bash", "edit", "write", "grep", "find", "ls"];

/// Pi's thinking levels, the values its `--thinking` takes.
pub const THINKING_LEVELS: &[&str] = &["off", "minimal", "low", "medium", "high", "xhigh"];

/// Checks a suite name or task id: each names a folder of the cassette folder, the kept trials
/// and the reports, so it is letters, digits, `.`, `_` and `-`, and does not start with a dot
/// (no `..`, no hidden folder, no slash).
pub fn check_name(name: &str) -> Result<(), String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    if name.is_empty() || name.starts_with('.') || !name.chars().all(allowed) {
        return Err(format!(
            "`{name}` is not a name: letters, digits, `.`, `_` and `-`, not starting with `.` (it names folders)"
        ));
    }
    Ok(())
}

/// Checks a model as a suite or `--model` gives it (`provider/id`, or an id): it names the
/// folders of a trial's cassette, so each of its `/`-separated parts is a folder name: not
/// empty, not `.` or `..`, without `\` or control characters.
pub fn check_model_name(model: &str) -> Result<(), String> {
    let bad_part = model.split('/').find(|part| {
        part.is_empty()
            || *part == "."
            || *part == ".."
            || part.chars().any(|c| c == '\\' || c.is_control())
    });
    match bad_part {
        Some(_) => Err(format!(
            "`{}` is not a model: `provider/id`, each part of it a folder name (not empty, `.` or `..`; no `\\` or control characters), since it names the trial's cassette folder",
            model.escape_debug()
        )),
        None => Ok(()),
    }
}

/// Checks a tool name against Pi's tools.
pub fn check_tool(tool: &str) -> Result<(), String> {
    if TOOLS.contains(&tool) {
        Ok(())
    } else {
        Err(format!(
            "unknown tool `{tool}`: Pi's tools are {}",
            TOOLS.join(", ")
        ))
    }
}

/// Checks a thinking level against Pi's.
pub fn check_thinking(level: &str) -> Result<(), String> {
    if THINKING_LEVELS.contains(&level) {
        Ok(())
    } else {
        Err(format!(
            "`{level}` is not a thinking level: Pi's are {}",
            THINKING_LEVELS.join(", ")
        ))
    }
}

/// Checks a trial count: 1 to [`MAX_TRIALS`].
pub fn check_trials(trials: u32) -> Result<(), String> {
    match trials {
        0 => Err("must be at least 1".into()),
        t if t > MAX_TRIALS => Err(format!(
            "{t} trials is more than the {MAX_TRIALS} a task may ask for"
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_folder_names_that_cannot_climb() {
        for good in ["smoke", "fix-bug", "HumanEval_0", "v1.2", "a..b"] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        for bad in [
            "", ".", "..", ".hidden", "../x", "a/b", "a\\b", "a b", "ü", "a\n",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn models_may_have_slashes_but_no_part_that_climbs() {
        for good in [
            "mock/mock-model",
            "openrouter/anthropic/claude-3.5",
            "gpt-4o",
            "a/b:free",
        ] {
            assert_eq!(check_model_name(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "/x",
            "x/",
            "a//b",
            "../x",
            "a/../../b",
            "a/.",
            "a\\b",
            "a/\u{0}",
        ] {
            assert!(check_model_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn trials_are_bounded_both_ways() {
        assert!(check_trials(0).is_err());
        assert_eq!(check_trials(1), Ok(()));
        assert_eq!(check_trials(MAX_TRIALS), Ok(()));
        assert!(check_trials(MAX_TRIALS + 1).is_err());
    }
}
