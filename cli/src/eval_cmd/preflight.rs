//! What `pi eval` checks after reading the suites and before the first trial, so that a
//! mistake is one message and exit 2 instead of an error in every trial: the flags that name
//! trials, the cassette folder a replay reads, the models a run that calls a model asks
//! for, and the MCP servers' programs its agents start. `--list` and `--dry-run` print what would run.

use std::collections::BTreeSet;
use std::path::Path;

use pi_evals::check::CheckKind;
use pi_evals::isolate::Isolation;
use pi_evals::plan::TrialSpec;
use pi_evals::runner::{cassette_path, Mode};
use pi_evals::suite::Suite;
use pi_evals::validate;
use pi_providers::registry::ModelRegistry;

/// Checks that the agents of the trials' tasks can start each of their MCP servers' programs
/// in their sandboxes (see [`Isolation::check_mcp_program`]): a server none of them could
/// start is one message naming its suite, task and server.
pub fn check_mcp_programs(specs: &[TrialSpec<'_>], isolation: &Isolation) -> Result<(), String> {
    let mut seen = BTreeSet::new();
    for spec in specs {
        if !seen.insert((spec.suite.name.as_str(), spec.task.id.as_str())) {
            continue;
        }
        for (server, command) in spec.task.agent.mcp_commands() {
            isolation.check_mcp_program(command).map_err(|why| {
                format!(
                    "suite `{}`: task `{}`: MCP server `{}`: its agent cannot start it: {why}",
                    spec.suite.name,
                    spec.task.id,
                    server.escape_debug()
                )
            })?;
        }
    }
    Ok(())
}

/// Checks `--trials` and each `--model`.
pub fn check_flags(trials: Option<u32>, models: &[String]) -> Result<(), String> {
    if let Some(trials) = trials {
        validate::check_trials(trials).map_err(|m| format!("--trials {trials}: {m}"))?;
    }
    for model in models {
        validate::check_model_name(model).map_err(|m| format!("--model {model}: {m}"))?;
    }
    Ok(())
}

/// Checks that a replay's cassette folder exists: `--replay DIR`, or each suite's
/// `cassettes`.
pub fn check_cassette_folders(mode: &Mode, suites: &[Suite]) -> Result<(), String> {
    match mode {
        Mode::Replay(Some(dir)) if !dir.is_dir() => Err(format!(
            "--replay {}: no such folder (record one with --record DIR or --once DIR)",
            dir.display()
        )),
        Mode::Replay(None) => {
            for suite in suites {
                if let Some(dir) = suite.cassettes.as_deref().filter(|d| !d.is_dir()) {
                    return Err(format!(
                        "{}:{}: field `cassettes`: no folder at {}",
                        suite.path.display(),
                        suite.cassettes_line,
                        dir.display()
                    ));
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// For a run that calls a model: refuses a model whose provider neither Pi's built-ins nor the
/// user's `models.json` know (naming where the model was given), and warns once on stderr
/// about each model whose provider does not list its id (Pi runs it as a custom id, which a
/// local server or a proxy may answer with whatever model it serves). The models of `judge`
/// checks are checked the same way. With `--agent` (`other_agent`), whose command may know
/// providers this build does not, an unknown provider is a warning too.
pub fn check_models(
    specs: &[TrialSpec<'_>],
    flags: &[String],
    registry: &ModelRegistry,
    other_agent: bool,
) -> Result<(), String> {
    let mut seen = BTreeSet::new();
    for spec in specs {
        if !seen.insert(spec.model.clone()) {
            continue;
        }
        let place = || {
            if flags.contains(&spec.model) {
                format!("--model {}", spec.model)
            } else {
                format!(
                    "{}:{}: task `{}`: field `models`",
                    spec.suite.path.display(),
                    spec.task.models_line,
                    spec.task.id
                )
            }
        };
        check_model(&spec.model, place, registry, other_agent)?;
    }
    for spec in specs {
        for check in &spec.task.checks {
            let CheckKind::Judge { model, .. } = &check.kind else {
                continue;
            };
            if !seen.insert(model.clone()) {
                continue;
            }
            let place = || {
                format!(
                    "{}:{}: task `{}`: judge check: field `model`",
                    spec.suite.path.display(),
                    spec.task.line,
                    spec.task.id
                )
            };
            check_model(model, place, registry, other_agent)?;
        }
    }
    Ok(())
}

/// One model of [`check_models`], given at `place`.
pub(super) fn check_model(
    model: &str,
    place: impl Fn() -> String,
    registry: &ModelRegistry,
    other_agent: bool,
) -> Result<(), String> {
    match known(model, registry) {
        Known::Yes => Ok(()),
        Known::Unlisted { provider, id } => {
            eprintln!(
                "pi eval: warning: model `{model}`: provider `{provider}` lists no model `{id}`; Pi runs it as a custom id, which a provider that ignores names answers with its own model"
            );
            Ok(())
        }
        Known::No(why) => {
            let unused = registry
                .error()
                .map(|e| format!(" (models.json was not used: {e})"))
                .unwrap_or_default();
            if other_agent {
                eprintln!(
                    "pi eval: warning: {}: {why}{unused}; left to the --agent command",
                    place()
                );
                Ok(())
            } else {
                Err(format!("{}: {why}{unused}", place()))
            }
        }
    }
}

enum Known {
    Yes,
    Unlisted { provider: String, id: String },
    No(String),
}

fn known(model: &str, registry: &ModelRegistry) -> Known {
    let all = registry.all();
    match model.split_once('/') {
        Some((provider, id)) => {
            if !all.iter().any(|m| m.provider == provider) {
                Known::No(format!(
                    "unknown provider `{provider}`: neither built in nor in the agent folder's models.json"
                ))
            } else if registry.find(provider, id).is_none() {
                Known::Unlisted {
                    provider: provider.to_owned(),
                    id: id.to_owned(),
                }
            } else {
                Known::Yes
            }
        }
        None if all.iter().any(|m| m.id == model) => Known::Yes,
        None => Known::No(format!(
            "unknown model `{model}`: no provider lists it (give it as provider/id)"
        )),
    }
}

/// `--list`: each planned trial's name, one a line.
pub fn list(specs: &[TrialSpec<'_>]) -> Vec<String> {
    specs.iter().map(TrialSpec::key).collect()
}

/// `--dry-run`: what the run would do, and the replayed trials whose cassette is missing (a
/// real run reports each as an error).
pub fn dry_run(specs: &[TrialSpec<'_>], suites: &[Suite], mode: &Mode) -> (Vec<String>, bool) {
    let mut lines = Vec::new();
    for suite in suites {
        let trials = specs
            .iter()
            .filter(|s| std::ptr::eq(s.suite, suite))
            .count();
        let tasks: BTreeSet<&str> = specs
            .iter()
            .filter(|s| std::ptr::eq(s.suite, suite))
            .map(|s| s.task.id.as_str())
            .collect();
        lines.push(format!(
            "suite `{}`: {} of {} {}, {trials} {}",
            suite.name,
            tasks.len(),
            suite.tasks.len(),
            plural(suite.tasks.len(), "task"),
            plural(trials, "trial")
        ));
    }
    let missing: Vec<String> = specs
        .iter()
        .filter_map(|spec| {
            let folder = match mode {
                Mode::Replay(Some(dir)) => dir.as_path(),
                Mode::Replay(None) => spec.suite.cassettes.as_deref()?,
                _ => return None,
            };
            let cassette = folder.join(cassette_path(spec));
            (!cassette.is_file()).then(|| format!("no cassette for {}", spec.key()))
        })
        .collect();
    let ok = missing.is_empty();
    lines.extend(missing);
    lines.push(format!(
        "{} {} would run ({}); nothing was run",
        specs.len(),
        plural(specs.len(), "trial"),
        super::describe_mode(mode)
    ));
    (lines, ok)
}

/// `word`, or its plural for any count but 1.
pub fn plural(count: usize, word: &str) -> String {
    if count == 1 {
        word.to_owned()
    } else {
        format!("{word}s")
    }
}

/// The registry a trial's agent will see: built-ins and the user's `models.json`.
pub fn registry(user_agent_dir: Option<&Path>) -> ModelRegistry {
    let catalog = pi_providers::catalog::builtin();
    match user_agent_dir {
        Some(dir) => pi_effects::registry_files::load_models(catalog, &dir.join("models.json")),
        None => ModelRegistry::builtin(catalog),
    }
}
