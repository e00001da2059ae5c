//! `pi replay --rerecord PATH...`: records each cassette again with this build, when its model
//! side can be served again: a cassette with a scenario beside it (`scenarios/<name>.json`, the
//! regression corpus's layout) was made against the conformance kit's scripted mock, so the mock
//! is started on that script, the scenario's runs are run with this binary under `--record` in a
//! scratch HOME, agent dir and cwd (its files, settings and environment), RPC runs driven over
//! stdin as the kit's runner drives them, and the last run's cassette replaces the old one —
//! atomically, and only once it replays clean (`--check`). A cassette recorded against a real
//! model, or imported from a session file, cannot be made again here: it is reported and left
//! as it is. Exit 0 when every cassette was recorded again, else 1.

use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use pi_cassettes::CheckedCassette;
use pi_testkit::demo::{Scenario, Workspace};
use pi_testkit::mock::pyjson;
use serde_json::{Map, Value};

use crate::printable::printable;
use crate::replay_cmd::{
    cassette_files, check_one, display_paths, runtime, shown, CheckVerdict, How,
};

/// What became of one cassette.
enum Fate {
    /// Recorded again; the Pi edition it had been made with.
    Rerecorded { from: String },
    /// It cannot be made again here (why, and what to do instead).
    Skipped(String),
    /// Making it again failed; it is left as it was.
    Failed(String),
}

/// Records the cassettes `paths` name (directories walked) again; the exit code.
pub(crate) fn run(paths: &[PathBuf]) -> i32 {
    let files = match cassette_files(paths) {
        Ok(files) => files,
        Err(error) => {
            eprintln!("{error}");
            return 1;
        }
    };
    if files.is_empty() {
        eprintln!("no cassettes found in {}", display_paths(paths));
        return 1;
    }
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(error) => {
            eprintln!("cannot find this program to record with: {error}");
            return 1;
        }
    };
    let runtime = runtime();
    let (mut done, mut skipped, mut failed) = (0, 0, 0);
    for (index, path) in files.iter().enumerate() {
        match rerecord(&exe, &runtime, path, index) {
            Fate::Rerecorded { from } => {
                done += 1;
                println!(
                    "re-recorded {} (made with Pi {}, now Pi {})",
                    shown(path),
                    printable(&from),
                    pi_cassettes::PI_EDITION
                );
            }
            Fate::Skipped(why) => {
                skipped += 1;
                println!("SKIPPED     {}", shown(path));
                eprintln!("{}: {}\n", shown(path), printable(&why));
            }
            Fate::Failed(why) => {
                failed += 1;
                println!("FAILED      {}", shown(path));
                eprintln!("{}: {}\n", shown(path), printable(&why));
            }
        }
    }
    println!(
        "{} cassettes: {done} re-recorded, {skipped} skipped (left as they are), {failed} failed (left as they are)",
        files.len()
    );
    i32::from(skipped + failed > 0)
}

fn rerecord(exe: &Path, runtime: &tokio::runtime::Runtime, path: &Path, index: usize) -> Fate {
    let recorded = match CheckedCassette::load(path) {
        Ok(cassette) => cassette,
        Err(error) => return Fate::Failed(error.to_string()),
    };
    let header = &recorded.header;
    if let Some(imported) = &header.imported {
        return Fate::Skipped(format!(
            "imported from the session file {}, not recorded: import it again with `pi import`",
            imported.from
        ));
    }
    let Some(scenario_file) = scenario_of(path) else {
        return Fate::Skipped(
            "its model side cannot be served again (no scenario script `scenarios/<name>.json` \
             beside it: it was recorded against a real model or by a program of its own); \
             record its run again with `pi --record`"
                .into(),
        );
    };
    let made = ScenarioRuns::load(&scenario_file).and_then(|scenario| {
        if let Some(command) = &header.command {
            let last = scenario.runs.last().map(|run| &run.args);
            if last != Some(command) {
                return Err(format!(
                    "{}: its last run's `args` are not the command line the cassette recorded \
                     ({}): the scenario no longer makes this cassette",
                    scenario_file.display(),
                    command.join(" ")
                ));
            }
        }
        record_scenario(exe, runtime, &scenario_file, &scenario, path, index)
    });
    match made {
        Ok(()) => Fate::Rerecorded {
            from: header.pi.clone(),
        },
        Err(why) => Fate::Failed(why),
    }
}

/// `scenarios/<name>.json` beside the cassette `<name>.jsonl`, when there is one.
fn scenario_of(cassette: &Path) -> Option<PathBuf> {
    let stem = cassette.file_stem()?;
    let mut name = stem.to_os_string();
    name.push(".json");
    let file = cassette.parent()?.join("scenarios").join(name);
    file.is_file().then_some(file)
}

/// Starts the mock on the scenario's script, runs its runs with this build recording, checks
/// the last run's cassette and puts it in `target`'s place.
fn record_scenario(
    exe: &Path,
    runtime: &tokio::runtime::Runtime,
    file: &Path,
    scenario: &ScenarioRuns,
    target: &Path,
    index: usize,
) -> Result<(), String> {
    let parts = Scenario::from_value(&scenario.spec, file).map_err(|e| e.to_string())?;
    let workspace = Workspace::prepare(parts, None).map_err(|e| e.to_string())?;
    let mut last = None;
    for (n, run) in scenario.runs.iter().enumerate() {
        let out = workspace.root().join(format!("run-{n}.jsonl"));
        play(exe, &workspace, run, &out).map_err(|e| format!("run {}: {e}", n + 1))?;
        last = Some(out);
    }
    let made = last.ok_or_else(|| format!("{}: the scenario has no runs", file.display()))?;
    match check_one(runtime, &made, &How::recorded(), index) {
        CheckVerdict::Reproduced { .. } => {}
        CheckVerdict::Diverged(divergence) => {
            return Err(format!(
                "the new recording does not replay clean, so it was not kept:\n{divergence}"
            ))
        }
        CheckVerdict::Unusable(why) => {
            return Err(format!(
                "the new recording cannot be replayed, so it was not kept:\n{why}"
            ))
        }
    }
    replace(target, &made)
}

/// A scenario file's runs, as the kit's runner reads them.
struct ScenarioRuns {
    spec: Value,
    runs: Vec<Run>,
}

/// One run of a scenario: the command line after `pi`, the RPC steps when it reads stdin.
struct Run {
    args: Vec<String>,
    rpc: Option<Vec<Step>>,
    timeout: Duration,
}

/// An RPC step: lines to send (written together until the next wait), a pattern to wait for,
/// a pause.
struct Step {
    delay: Duration,
    send: Option<String>,
    wait: Option<(Value, Duration)>,
}

/// The runner's placeholders, filled in from its work folders and earlier answers: a scenario
/// using them is not made again here.
const PLACEHOLDERS: &[&str] = &[
    "{RUN}",
    "{CWD}",
    "{AGENT}",
    "{SESSION_FILE}",
    "{SESSION_ID",
    "{RESP:",
];

impl ScenarioRuns {
    fn load(file: &Path) -> Result<ScenarioRuns, String> {
        let at = |why: String| format!("{}: {why}", file.display());
        let text = std::fs::read_to_string(file).map_err(|e| at(format!("cannot read: {e}")))?;
        let spec: Value =
            serde_json::from_str(&text).map_err(|e| at(format!("not valid JSON: {e}")))?;
        let object = spec
            .as_object()
            .ok_or_else(|| at("a scenario is a JSON object".into()))?;
        only_keys(
            object,
            "the scenario",
            &[
                "description",
                "env",
                "files",
                "dirs",
                "settings",
                "script",
                "runs",
            ],
        )
        .map_err(at)?;
        let runs = object
            .get("runs")
            .and_then(Value::as_array)
            .ok_or_else(|| at("field `runs`: a list of runs is needed".into()))?;
        let runs = runs
            .iter()
            .enumerate()
            .map(|(i, run)| Run::read(run).map_err(|e| at(format!("runs[{i}]: {e}"))))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ScenarioRuns { spec, runs })
    }
}

impl Run {
    fn read(run: &Value) -> Result<Run, String> {
        let object = run.as_object().ok_or("not an object")?;
        only_keys(
            object,
            "a run",
            &["args", "rpc", "suffix", "snapshot", "timeout_s"],
        )?;
        let args = match object.get("args") {
            None => Vec::new(),
            Some(Value::Array(words)) => words
                .iter()
                .map(|w| w.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or("field `args`: a list of strings")?,
            Some(_) => return Err("field `args`: a list of strings".into()),
        };
        if let Some(word) = args.iter().find(|w| has_placeholder(w)) {
            return Err(format!(
                "field `args`: `{word}` names a value of the runner's work folders, which a re-recording does not fill in"
            ));
        }
        let rpc = match object.get("rpc") {
            None => None,
            Some(Value::Array(steps)) => Some(
                steps
                    .iter()
                    .enumerate()
                    .map(|(i, s)| Step::read(s).map_err(|e| format!("rpc[{i}]: {e}")))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            Some(_) => return Err("field `rpc`: a list of steps".into()),
        };
        let default = if rpc.is_some() { 15 } else { 120 };
        Ok(Run {
            args,
            timeout: seconds(object.get("timeout_s"), default)?,
            rpc,
        })
    }
}

impl Step {
    fn read(step: &Value) -> Result<Step, String> {
        let object = step.as_object().ok_or("not an object")?;
        only_keys(
            object,
            "a step",
            &["send", "send_raw", "wait", "delay_ms", "timeout_s"],
        )?;
        let delay = match object.get("delay_ms") {
            None => Duration::ZERO,
            Some(ms) => Duration::from_millis(ms.as_u64().ok_or("field `delay_ms`: milliseconds")?),
        };
        let send = match (object.get("send"), object.get("send_raw")) {
            (Some(value), None) => {
                let line = pyjson::dumps(value);
                if has_placeholder(&line) {
                    return Err("field `send` names a value the runner fills in, which a re-recording does not".into());
                }
                Some(line)
            }
            (None, Some(Value::String(raw))) => Some(raw.clone()),
            (None, Some(_)) => return Err("field `send_raw`: a string".into()),
            (Some(_), Some(_)) => return Err("both `send` and `send_raw`".into()),
            (None, None) => None,
        };
        let wait = match object.get("wait") {
            None => None,
            Some(pattern) => Some((pattern.clone(), seconds(object.get("timeout_s"), 30)?)),
        };
        Ok(Step { delay, send, wait })
    }
}

fn has_placeholder(text: &str) -> bool {
    PLACEHOLDERS.iter().any(|p| text.contains(p))
}

fn seconds(value: Option<&Value>, default: u64) -> Result<Duration, String> {
    match value {
        None => Ok(Duration::from_secs(default)),
        Some(value) => value
            .as_f64()
            .filter(|s| s.is_finite() && *s > 0.0 && *s <= 3600.0)
            .map(Duration::from_secs_f64)
            .ok_or_else(|| "field `timeout_s`: seconds (at most 3600)".into()),
    }
}

/// A scenario part naming something this runner does not do is refused rather than recorded
/// otherwise than the kit's runner would.
fn only_keys(object: &Map<String, Value>, what: &str, known: &[&str]) -> Result<(), String> {
    match object.keys().find(|k| !known.contains(&k.as_str())) {
        Some(key) => Err(format!(
            "{what} has `{key}`, which a re-recording does not do (it knows {})",
            known.join(", ")
        )),
        None => Ok(()),
    }
}

/// The lines a child printed so far, parsed when they are JSON, and whether it closed stdout.
#[derive(Default)]
struct Printed {
    lines: Vec<Option<Value>>,
    closed: bool,
}

type SharedPrinted = Arc<(Mutex<Printed>, Condvar)>;

/// Runs one run of the scenario with this build recording into `out`.
fn play(exe: &Path, workspace: &Workspace, run: &Run, out: &Path) -> Result<(), String> {
    let mut args: Vec<OsString> = vec!["--record".into(), out.as_os_str().to_owned()];
    args.extend(run.args.iter().map(OsString::from));
    let mut command = workspace.command(exe.as_os_str(), &args);
    let stdin = if run.rpc.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    };
    command
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let printed: SharedPrinted = Arc::default();
    let reader = child.stdout.take().map(|stdout| {
        let printed = Arc::clone(&printed);
        std::thread::spawn(move || collect(stdout, &printed))
    });
    let errors = child.stderr.take().map(|mut stderr| {
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        })
    });
    let driven = match (&run.rpc, child.stdin.take()) {
        (Some(steps), Some(stdin)) => drive(stdin, steps, &printed),
        _ => Ok(()),
    };
    let exited = wait(&mut child, run.timeout);
    if let Some(reader) = reader {
        let _ = reader.join();
    }
    let stderr = errors
        .and_then(|errors| errors.join().ok())
        .unwrap_or_default();
    let tail = || {
        let lines: Vec<&str> = stderr.lines().take(10).collect();
        lines.join("\n")
    };
    driven.map_err(|e| format!("{e}\n{}", tail()))?;
    let code = exited?;
    if !out.is_file() {
        return Err(format!(
            "the run wrote no cassette (exit {code})\n{}",
            tail()
        ));
    }
    Ok(())
}

fn collect(stdout: impl Read, printed: &SharedPrinted) {
    let (lock, changed) = &**printed;
    for line in BufReader::new(stdout).split(b'\n') {
        let Ok(line) = line else { break };
        let value = serde_json::from_slice::<Value>(&line).ok();
        lock.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .lines
            .push(value);
        changed.notify_all();
    }
    lock.lock().unwrap_or_else(PoisonError::into_inner).closed = true;
    changed.notify_all();
}

/// Writes the steps' lines to the run's stdin as the kit's runner does: the lines sent since
/// the last wait are written together, and a wait matches the output that came after the
/// first of them. Stdin is closed at the end.
fn drive(mut stdin: ChildStdin, steps: &[Step], printed: &SharedPrinted) -> Result<(), String> {
    let mut pending: Vec<&str> = Vec::new();
    let (mut mark, mut in_group) = (0, false);
    let mut flush = |pending: &mut Vec<&str>| -> Result<(), String> {
        if pending.is_empty() {
            return Ok(());
        }
        let mut data = pending.join("\n");
        data.push('\n');
        pending.clear();
        stdin
            .write_all(data.as_bytes())
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("cannot write to the run's stdin: {e}"))
    };
    for step in steps {
        if !step.delay.is_zero() {
            flush(&mut pending)?;
            std::thread::sleep(step.delay);
        }
        if let Some(line) = &step.send {
            if !in_group {
                flush(&mut pending)?;
                mark = count(printed);
                in_group = true;
            }
            pending.push(line);
        }
        if let Some((pattern, timeout)) = &step.wait {
            flush(&mut pending)?;
            wait_for(printed, pattern, mark, *timeout)?;
            in_group = false;
        }
    }
    flush(&mut pending)
}

fn count(printed: &SharedPrinted) -> usize {
    printed
        .0
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .lines
        .len()
}

/// Waits until a line from `start` on holds `pattern` (every key of it, recursively).
fn wait_for(
    printed: &SharedPrinted,
    pattern: &Value,
    start: usize,
    timeout: Duration,
) -> Result<(), String> {
    let deadline = Instant::now() + timeout;
    let (lock, changed) = &**printed;
    let mut seen = lock.lock().unwrap_or_else(PoisonError::into_inner);
    let mut from = start;
    loop {
        if seen.lines[from.min(seen.lines.len())..]
            .iter()
            .flatten()
            .any(|line| holds(pattern, line))
        {
            return Ok(());
        }
        from = seen.lines.len();
        if seen.closed {
            return Err(format!(
                "the run's stdout closed while waiting for {pattern}"
            ));
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(format!(
                "timed out after {} s waiting for {pattern}",
                timeout.as_secs_f64()
            ));
        }
        seen = changed
            .wait_timeout(seen, left)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

/// Whether `value` holds every key of `pattern` with its value, recursively.
fn holds(pattern: &Value, value: &Value) -> bool {
    match (pattern, value) {
        (Value::Object(pattern), Value::Object(value)) => pattern
            .iter()
            .all(|(key, want)| value.get(key).is_some_and(|got| holds(want, got))),
        _ => pattern == value,
    }
}

/// Waits for the run to exit, killing it (this child alone) after `timeout`; its exit code.
fn wait(child: &mut Child, timeout: Duration) -> Result<i32, String> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Ok(status.code().unwrap_or(-1)),
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the run did not exit within {} s and was stopped",
                    timeout.as_secs_f64()
                ));
            }
            Err(error) => return Err(format!("cannot wait for the run: {error}")),
        }
    }
}

/// Puts `made` in `target`'s place in one rename (a file beside `target` first, so that a
/// reader sees the old cassette or the new one, never part of one), with the session blob the
/// new one keeps beside it, if any.
fn replace(target: &Path, made: &Path) -> Result<(), String> {
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let made_dir = made.parent().unwrap_or(Path::new("."));
    let header = CheckedCassette::load(made)
        .map_err(|e| e.to_string())?
        .header;
    if let Some(blob) = &header.session.content_file {
        let kept = dir.join(blob);
        if !kept.exists() {
            if let Some(parent) = kept.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
            }
            std::fs::copy(made_dir.join(blob), &kept)
                .map_err(|e| format!("cannot write {}: {e}", kept.display()))?;
        }
    }
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    let temporary = dir.join(format!(".{name}.rerecord-{}", std::process::id()));
    let written = std::fs::copy(made, &temporary)
        .and_then(|_| std::fs::File::open(&temporary).and_then(|f| f.sync_all()))
        .and_then(|()| std::fs::rename(&temporary, target));
    written.map_err(|e| {
        let _ = std::fs::remove_file(&temporary);
        format!("cannot replace {}: {e}", target.display())
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read(scenario: &Value) -> Result<ScenarioRuns, String> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("s.json");
        std::fs::write(&file, scenario.to_string()).unwrap();
        ScenarioRuns::load(&file)
    }

    #[test]
    fn what_the_kits_runner_fills_in_or_this_runner_does_not_do_is_refused() {
        for (scenario, says) in [
            (
                json!({"runs": [{"args": ["--session", "{SESSION_FILE}"]}]}),
                "field `args`",
            ),
            (
                json!({"runs": [{"rpc": [{"send": {"type": "prompt", "message": "{RESP:a:b}"}}]}]}),
                "field `send`",
            ),
            (json!({"fixtures": {}, "runs": []}), "`fixtures`"),
            (json!({"runs": [{"args": [], "stdin": "x"}]}), "`stdin`"),
            (
                json!({"runs": [{"rpc": [{"wait": {}, "timeout_s": 0}]}]}),
                "timeout_s",
            ),
            (json!({"runs": "all"}), "field `runs`"),
        ] {
            let error = read(&scenario).err().unwrap();
            assert!(error.contains(says), "{scenario}: {error}");
        }
    }

    #[test]
    fn sent_lines_are_spelled_as_the_kits_runner_spells_them() {
        let scenario = json!({"runs": [{"args": ["--mode", "rpc"], "rpc": [
            {"send": {"id": "p", "type": "prompt", "message": "héllo"}},
            {"send_raw": "{not json"},
            {"delay_ms": 5, "wait": {"type": "agent_end"}, "timeout_s": 2}
        ]}]});
        let runs = read(&scenario).unwrap().runs;
        let steps = runs[0].rpc.as_ref().unwrap();
        assert_eq!(
            steps[0].send.as_deref(),
            Some(r#"{"id": "p", "type": "prompt", "message": "h\u00e9llo"}"#)
        );
        assert_eq!(steps[1].send.as_deref(), Some("{not json"));
        assert_eq!(steps[2].delay, Duration::from_millis(5));
        assert_eq!(
            steps[2].wait,
            Some((json!({"type": "agent_end"}), Duration::from_secs(2)))
        );
        assert_eq!(runs[0].timeout, Duration::from_secs(15));
    }

    #[test]
    fn a_pattern_matches_a_line_holding_all_of_it() {
        let line = json!({"type": "response", "id": "a", "data": {"x": 1, "y": [1]}});
        assert!(holds(&json!({"type": "response"}), &line));
        assert!(holds(&json!({"data": {"x": 1}}), &line));
        assert!(!holds(&json!({"data": {"x": 2}}), &line));
        assert!(!holds(&json!({"data": {"y": []}}), &line));
        assert!(!holds(&json!({"missing": null}), &line));
    }
}
