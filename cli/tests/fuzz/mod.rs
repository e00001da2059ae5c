//! Mutants of the binary's real inputs, fed to the real binary: the corpus and smoke cassettes
//! to `pi replay --check FILE` and `pi replay FILE`, a session file a run against the mock
//! wrote to `pi --session FILE -p hi`, the conformance kit's RPC stdin and that session to
//! `pi --mode rpc` and to `pi import` (its cassette then to `pi replay --check`) and `pi
//! --export`, and the shipped smoke suite to `pi eval --replay`. Each mutant is one to
//! three seeded mutations (`mutate.rs`: flipped bytes, cuts, duplicated, deleted and swapped
//! lines, a JSON or TOML value replaced by one of another type, a huge number, deep nesting or
//! a very long string, invalid UTF-8, a JSON value replaced by one found elsewhere in the file).
//!
//! For every mutant: no panic (exit 101, `panicked at`, or death by a signal), no hang (killed
//! after 20 s and reported with its seed), an exit code the command documents, and its inputs
//! left as they were: a replayed cassette byte for byte with nothing written beside it, a suite
//! and the cassettes and fixtures it replays byte for byte, a session file given to `pi import`
//! or `--export` byte for byte, one a run continues only appended to, or copied whole into the
//! backup the store names (`.v<version>.bak` before a migration).
//!
//! `PI_FUZZ_SEED` (default fixed, so CI is repeatable) and `PI_FUZZ_COUNT` (default 100) choose
//! the mutants; case `k` uses seed `PI_FUZZ_SEED + k`, so a failure printed as
//! `PI_FUZZ_SEED=S PI_FUZZ_COUNT=1` runs that case alone.

mod mutate;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;
use sha2::{Digest, Sha256};

use crate::common::{Env, MockLlm};
use mutate::{mutate, Rng, Syntax};

/// Longer than any mutant should take by far; a run still going then is a hang.
const TIMEOUT: Duration = Duration::from_secs(20);

const DEFAULT_SEED: u64 = 0x5eed_f022;
const DEFAULT_COUNT: u64 = 100;

fn env_number(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(text) => text
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name} must be a number, not {text:?}")),
        Err(_) => default,
    }
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

fn sha256(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Every file under `root` with its digest, sorted by path.
fn tree_digest(root: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push((path.clone(), sha256(&std::fs::read(&path).unwrap())));
            }
        }
    }
    out.sort();
    out
}

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// How a run ended.
struct Finished {
    /// `None`: killed by a signal.
    code: Option<i32>,
    stderr: String,
}

/// Runs `command` with `stdin` written to it, killing it after [`TIMEOUT`]; `Err` on a hang.
fn run(mut command: Command, stdin: Option<Vec<u8>>) -> Result<Finished, String> {
    let mut child = command
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // The process may exit before reading it all: a broken pipe is not the test's concern.
        std::thread::spawn(move || {
            let _ = pipe.write_all(&bytes);
        });
    }
    let mut stdout = child.stdout.take().unwrap();
    let drain = std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    let mut stderr_pipe = child.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stderr_pipe.read_to_end(&mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    });
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("still running after {TIMEOUT:?}: killed"));
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let _ = drain.join();
    Ok(Finished {
        code: status.code(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

/// What a finished run must not show: a panic, a death by signal, an undocumented exit code.
fn check_exit(finished: &Finished, allowed: &[i32]) -> Result<(), String> {
    let tail = || {
        let start = finished.stderr.len().saturating_sub(2000);
        let start = (start..finished.stderr.len())
            .find(|&i| finished.stderr.is_char_boundary(i))
            .unwrap_or(finished.stderr.len());
        finished.stderr[start..].to_owned()
    };
    if finished.stderr.contains("panicked at") || finished.code == Some(101) {
        return Err(format!("panicked: {}", tail()));
    }
    match finished.code {
        None => Err(format!("killed by a signal: {}", tail())),
        Some(code) if !allowed.contains(&code) => {
            Err(format!("exit {code}, not one of {allowed:?}: {}", tail()))
        }
        Some(_) => Ok(()),
    }
}

/// The real inputs the mutants are made from.
struct Inputs {
    env: Env,
    _mock: MockLlm,
    cassettes: Vec<PathBuf>,
    session: Vec<u8>,
    stdin: Vec<u8>,
    /// The smoke suite with its relative paths made absolute, so a copy elsewhere finds them.
    suite: Vec<u8>,
}

impl Inputs {
    fn gather() -> Inputs {
        let mut cassettes: Vec<PathBuf> = std::fs::read_dir(repo("cassettes/corpus"))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        for dir in std::fs::read_dir(repo("evals/cassettes/smoke"))
            .unwrap()
            .flatten()
        {
            cassettes.push(dir.path().join("mock/mock-model/0.jsonl"));
        }
        cassettes.sort();

        // A session written by a real run: a bash call, its result, an answer. The mock then
        // answers every later request with its "script exhausted" text.
        let mock = MockLlm::start(&json!([
            {"tool_calls": [{"id": "call_1", "name": "bash", "arguments": {"command": "echo one"}}]},
            {"text": ["done"]}
        ]));
        let env = Env::new(&mock);
        let base = env.path("base.jsonl");
        let out = env.run(&session_args(&base, "run echo one"));
        assert_eq!(out.code, 0, "the base session's run: {}", out.stderr);
        let session = std::fs::read(&base).unwrap();
        assert!(String::from_utf8_lossy(&session).contains("\"toolResult\""));

        let stdin = std::fs::read(repo("conformance/traces/e_rpc/rpc_stdin.jsonl")).unwrap();
        let evals = repo("evals").canonicalize().unwrap();
        let suite = std::fs::read_to_string(repo("evals/suites/smoke.toml"))
            .unwrap()
            .replace("\"../", &format!("\"{}/", evals.display()))
            .into_bytes();
        Inputs {
            env,
            _mock: mock,
            cassettes,
            session,
            stdin,
            suite,
        }
    }
}

fn session_args<'a>(session: &'a Path, message: &'a str) -> Vec<&'a str> {
    vec![
        "--provider",
        "mock",
        "--model",
        "mock-model",
        "--session",
        session.to_str().unwrap(),
        "-p",
        message,
    ]
}

/// A session file after a run may only have grown at its end, or have been copied whole into a
/// migration's backup beside it (and rewritten); nothing else may appear beside it.
fn check_session(before: &[u8], file: &Path) -> Result<(), String> {
    let after = std::fs::read(file).unwrap_or_default();
    let dir = file.parent().unwrap();
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    let backups: Vec<String> = names_in(dir).into_iter().filter(|n| *n != name).collect();
    for backup in &backups {
        let migrated = backup
            .strip_prefix(&format!("{name}.v"))
            .and_then(|rest| rest.strip_suffix(".bak"))
            .is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()));
        if !migrated {
            return Err(format!("{backup} was left beside the session file"));
        }
        if std::fs::read(dir.join(backup)).unwrap() != before {
            return Err(format!("{backup} does not hold the file as it was"));
        }
    }
    if backups.is_empty() && !after.starts_with(before) {
        let same = before
            .iter()
            .zip(&after)
            .take_while(|(a, b)| a == b)
            .count();
        return Err(format!(
            "the session file was rewritten, not appended to (first change at byte {same} of {})",
            before.len()
        ));
    }
    Ok(())
}

#[derive(Clone, Copy, Debug)]
enum Target {
    Check,
    Replay,
    Session,
    Rpc,
    Eval,
    Import,
}

/// One mutant through one command; `Err` says what went wrong.
fn case(inputs: &Inputs, seed: u64, dir: &Path) -> Result<(), String> {
    let mut rng = Rng::new(seed);
    let target = [
        Target::Check,
        Target::Replay,
        Target::Session,
        Target::Rpc,
        Target::Eval,
        Target::Import,
    ][rng.below(6)];
    std::fs::create_dir_all(dir).unwrap();
    let result = match target {
        Target::Check | Target::Replay => {
            let source = &inputs.cassettes[rng.below(inputs.cassettes.len())];
            let (mutant, done) =
                mutate(&std::fs::read(source).unwrap(), Syntax::JsonLines, &mut rng);
            let file = dir.join("cassette.jsonl");
            std::fs::write(&file, &mutant).unwrap();
            let mut command = inputs.env.command(&["replay"]);
            if matches!(target, Target::Check) {
                command.arg("--check");
            }
            command.arg(&file);
            let outcome = run(command, None).and_then(|f| check_exit(&f, &[0, 1, 125]));
            let outcome = outcome.and_then(|()| {
                if std::fs::read(&file).unwrap() != mutant {
                    return Err("the cassette was changed".into());
                }
                match names_in(dir).as_slice() {
                    [only] if only == "cassette.jsonl" => Ok(()),
                    names => Err(format!("files written beside the cassette: {names:?}")),
                }
            });
            (
                format!("{target:?} of a mutant of {}", source.display()),
                done,
                outcome,
            )
        }
        Target::Import => {
            let (mutant, done) = mutate(&inputs.session, Syntax::JsonLines, &mut rng);
            let file = dir.join("session.jsonl");
            std::fs::write(&file, &mutant).unwrap();
            let cassette = dir.join("imported.cassette");
            let mut import = inputs.env.command(&["import", "-o"]);
            import.arg(&cassette).arg(&file);
            let mut export = inputs.env.command(&["--export"]);
            export.arg(&file).arg(dir.join("exported.html"));
            let outcome = run(import, None)
                .and_then(|f| check_exit(&f, &[0, 1, 2]))
                .and_then(|()| {
                    if !cassette.exists() {
                        return Ok(());
                    }
                    let mut check = inputs.env.command(&["replay", "--check"]);
                    check.arg(&cassette);
                    run(check, None).and_then(|f| check_exit(&f, &[0, 1, 125]))
                })
                .and_then(|()| run(export, None))
                .and_then(|f| check_exit(&f, &[0, 1]))
                .and_then(|()| match std::fs::read(&file).unwrap() == mutant {
                    true => Ok(()),
                    false => Err("the session file was changed".into()),
                });
            (
                "pi import, pi replay --check of the import, pi --export of a mutated session"
                    .to_owned(),
                done,
                outcome,
            )
        }
        Target::Session => {
            let (mutant, done) = mutate(&inputs.session, Syntax::JsonLines, &mut rng);
            let file = dir.join("session.jsonl");
            std::fs::write(&file, &mutant).unwrap();
            let command = inputs.env.command(&session_args(&file, "hi"));
            let outcome = run(command, None)
                .and_then(|f| check_exit(&f, &[0, 1]))
                .and_then(|()| check_session(&mutant, &file));
            (
                "pi --session of a mutated session".to_owned(),
                done,
                outcome,
            )
        }
        Target::Rpc => {
            // Either the commands are mutated, or the session they run in (which may then be
            // refused, with exit 1).
            let stdin_mutated = rng.below(2) == 0;
            let source = if stdin_mutated {
                &inputs.stdin
            } else {
                &inputs.session
            };
            let (mutant, done) = mutate(source, Syntax::JsonLines, &mut rng);
            let (stdin, session, allowed, what) = if stdin_mutated {
                (mutant, inputs.session.clone(), &[0][..], "stdin")
            } else {
                (inputs.stdin.clone(), mutant, &[0, 1][..], "session")
            };
            let file = dir.join("session.jsonl");
            std::fs::write(&file, &session).unwrap();
            let mut command = inputs.env.rpc_command();
            command.arg("--session").arg(&file);
            let outcome = run(command, Some(stdin))
                .and_then(|f| check_exit(&f, allowed))
                .and_then(|()| check_session(&session, &file));
            (
                format!("pi --mode rpc with a mutated {what}"),
                done,
                outcome,
            )
        }
        Target::Eval => {
            let (mutant, done) = mutate(&inputs.suite, Syntax::Toml, &mut rng);
            let suite = dir.join("smoke.toml");
            std::fs::write(&suite, &mutant).unwrap();
            let recorded = repo("evals").canonicalize().unwrap();
            let before = tree_digest(&recorded);
            let out = dir.join("out");
            let mut command = inputs.env.command(&["eval"]);
            command
                .arg(&suite)
                .arg("--replay")
                .arg(recorded.join("cassettes"))
                .args(["--trials", "1", "--isolate", "none", "--quiet", "--out"])
                .arg(&out);
            let outcome = run(command, None)
                .and_then(|f| check_exit(&f, &[0, 1, 2]))
                .and_then(|()| {
                    if std::fs::read(&suite).unwrap() != mutant {
                        return Err("the suite was changed".into());
                    }
                    if tree_digest(&recorded) != before {
                        return Err("the suite's cassettes or fixtures were changed".into());
                    }
                    Ok(())
                });
            (
                "pi eval --replay of a mutated suite".to_owned(),
                done,
                outcome,
            )
        }
    };
    let (what, done, outcome) = result;
    outcome.map_err(|problem| format!("{what} ({}): {problem}", done.join("; ")))
}

#[test]
fn mutants_of_real_inputs_never_panic_hang_or_touch_their_inputs() {
    let seed = env_number("PI_FUZZ_SEED", DEFAULT_SEED);
    let count = env_number("PI_FUZZ_COUNT", DEFAULT_COUNT);
    eprintln!("fuzz: PI_FUZZ_SEED={seed} PI_FUZZ_COUNT={count}");
    let inputs = Inputs::gather();
    let mut failures = Vec::new();
    for k in 0..count {
        let case_seed = seed.wrapping_add(k);
        let dir = inputs.env.path(&format!("cases/{k}"));
        if let Err(problem) = case(&inputs, case_seed, &dir) {
            failures.push(format!(
                "PI_FUZZ_SEED={case_seed} PI_FUZZ_COUNT=1: {problem}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {count} mutants failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
