//! No front end reads a clock or writes a cassette: print mode and RPC mode hand everything that
//! reaches them from outside (a stdin line, a user command's result) to the interpreter, which
//! stamps it (Live with its clock), writes it down (`Record`) or supplies it (`Replay`). A front
//! end that stamped or recorded on its own would make a recording and its replay see different
//! worlds, so the sources are read for the names through which that would happen.

use std::path::{Path, PathBuf};

/// Names a front end has no business with: the clocks, the cassette's lines and writer (the
/// recording interpreter writes the outcome and ends its cassette when the loop says the run,
/// or its session, is over), and running a user command itself (the interpreter runs it, or a
/// replay answers it).
const FORBIDDEN: &[&str] = &[
    "execute_bash",
    "now_ms",
    "SystemClock",
    "SystemTime",
    "Instant",
    "Line",
    "write_request",
    "Recorder",
    "recorder",
];

/// The front ends' sources: RPC mode and print mode.
fn front_end_sources() -> Vec<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/src");
    let mut files = vec![src.join("print_mode.rs")];
    let rpc = src.join("rpc");
    for entry in std::fs::read_dir(&rpc).expect("cli/src/rpc") {
        let path = entry.expect("a directory entry").path();
        if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The identifiers of `source` outside comments and string literals, with their line numbers,
/// and whether each is called as a method (`.name(`).
fn identifiers(source: &str) -> Vec<(usize, String, bool)> {
    let mut found = Vec::new();
    for (number, line) in source.lines().enumerate() {
        let code = strip_strings(line.split("//").next().unwrap_or(""));
        let chars: Vec<char> = code.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            if chars[i].is_alphabetic() || chars[i] == '_' {
                let start = i;
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let method = start > 0 && chars[start - 1] == '.' && chars.get(i) == Some(&'(');
                found.push((number + 1, word, method));
            } else {
                i += 1;
            }
        }
    }
    found
}

/// `line` with the contents of its string literals blanked.
fn strip_strings(line: &str) -> String {
    let mut out = String::new();
    let mut in_string = false;
    let mut escaped = false;
    for c in line.chars() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
                out.push('"');
            }
            continue;
        }
        if c == '"' {
            in_string = true;
        }
        out.push(c);
    }
    out
}

/// What in `source` stamps time or writes a cassette: a forbidden name, or a `.write(` call
/// on anything (a recorder's writes; the front ends print through `Stdout`'s own methods).
fn violations(source: &str) -> Vec<String> {
    identifiers(source)
        .into_iter()
        .filter(|(_, word, method)| {
            FORBIDDEN.contains(&word.as_str()) || (*method && word == "write")
        })
        .map(|(line, word, _)| format!("line {line}: {word}"))
        .collect()
}

#[test]
fn no_front_end_reads_a_clock_or_writes_a_cassette() {
    let mut found = Vec::new();
    let files = front_end_sources();
    assert!(
        files.len() > 2,
        "the front ends' sources are where they were"
    );
    for file in files {
        let source = std::fs::read_to_string(&file).unwrap();
        for violation in violations(&source) {
            found.push(format!("{}: {violation}", file.display()));
        }
    }
    assert!(
        found.is_empty(),
        "front ends stamping or recording:\n{}",
        found.join("\n")
    );
}

/// RPC mode steps the session from one loop, whatever the interpreter (live, recording,
/// replaying): one place in its sources asks for the session's next input.
#[test]
fn rpc_mode_steps_the_session_from_one_loop() {
    let mut places = Vec::new();
    for file in front_end_sources() {
        if file.file_name().is_some_and(|n| n == "print_mode.rs") {
            continue;
        }
        let source = std::fs::read_to_string(&file).unwrap();
        for (line, word, method) in identifiers(&source) {
            if method && word == "advance" {
                places.push(format!("{}: line {line}", file.display()));
            }
        }
    }
    assert_eq!(
        places.len(),
        1,
        "the session is advanced from:\n{}",
        places.join("\n")
    );
}

/// Stopping at a signal aborts the run through the driver, as every run is driven: no loop of
/// its own steps the session.
#[test]
fn stopping_at_a_signal_has_no_loop_of_its_own() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/src/signals.rs");
    let source = std::fs::read_to_string(&file).unwrap();
    let stepping: Vec<usize> = identifiers(&source)
        .into_iter()
        .filter(|(_, word, method)| *method && (word == "advance" || word == "submit"))
        .map(|(line, _, _)| line)
        .collect();
    assert!(
        stepping.is_empty(),
        "signals.rs steps the session at lines {stepping:?}"
    );
}

/// The binary only parses the command line and wires the library to the process: print mode,
/// RPC mode and their setup live in the library, where other programs and tests can drive them.
#[test]
fn the_binary_holds_no_module_of_its_own() {
    let main = Path::new(env!("CARGO_MANIFEST_DIR")).join("../cli/src/main.rs");
    let source = std::fs::read_to_string(&main).unwrap();
    let modules: Vec<usize> = identifiers(&source)
        .into_iter()
        .filter(|(_, word, _)| word == "mod")
        .map(|(line, _, _)| line)
        .collect();
    assert!(
        modules.is_empty(),
        "main.rs declares modules at lines {modules:?}"
    );
}

/// The check sees what it is for, and not comments or texts.
#[test]
fn the_check_finds_a_clock_reading_and_a_recorder_write() {
    let stamped = "let t = pi_effects::clock::now_ms();";
    assert_eq!(violations(stamped), ["line 1: now_ms"]);
    let written = "recorder.write(pi_cassettes::Line::Stdin { t, line });";
    assert_eq!(
        violations(written),
        ["line 1: recorder", "line 1: write", "line 1: Line"]
    );
    let outcome = "cassette::finish_recording(&recorder, code, out);\nfn f(r: Recorder) {}";
    assert_eq!(
        violations(outcome),
        ["line 1: recorder", "line 2: Recorder"]
    );
    let explained = "// now_ms() is not read here\nlet s = \"Line .write(\";";
    assert!(violations(explained).is_empty());
}

/// The crates that run the machines, beside the binary's own.
const STEPPING_CRATES: &[&str] = &[
    "core",
    "providers",
    "effects",
    "cassettes",
    "chaos",
    "cli",
    "benches",
];

/// The session machine's own files that step the agent machine it wraps (`machine.rs` and the
/// parts of it split into modules of their own); named one by one, so a new file stepping a
/// machine is still caught.
const SESSION_MACHINE_FILES: &[&str] = &[
    "core/src/agent_session/answer.rs",
    "core/src/agent_session/machine.rs",
    "core/src/agent_session/model_change.rs",
    "core/src/agent_session/prompt.rs",
    "core/src/agent_session/wake.rs",
];

/// Every source file of the crates that run the machines, relative to the workspace root; the
/// machines' own modules aside (the session machine steps the agent machine it wraps).
fn stepping_sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for krate in STEPPING_CRATES {
        rust_files(&root.join(krate).join("src"), &mut files);
    }
    let mut sources: Vec<(String, String)> = files
        .into_iter()
        .map(|file| {
            let relative = file
                .strip_prefix(&root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            (relative, std::fs::read_to_string(&file).unwrap())
        })
        .filter(|(relative, _)| {
            !relative.starts_with("core/src/agent/")
                && !SESSION_MACHINE_FILES.contains(&relative.as_str())
        })
        .collect();
    sources.sort();
    sources
}

fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// The files of `sources` in which `name` is called as a method (`.name(`), or, with
/// `functions`, as a function too (`name(`, a definition included).
fn files_calling(sources: &[(String, String)], name: &str, functions: bool) -> Vec<String> {
    let call = format!("{name}(");
    sources
        .iter()
        .filter(|(_, source)| {
            source.lines().any(|line| {
                let code = strip_strings(line.split("//").next().unwrap_or(""));
                code.match_indices(&call).any(|(at, _)| {
                    let before = code[..at].chars().next_back();
                    match before {
                        Some('.') => true,
                        Some(c) if c.is_alphanumeric() || c == '_' => false,
                        _ => functions,
                    }
                })
            })
        })
        .map(|(file, _)| file.clone())
        .collect()
}

/// Every machine, whoever runs it (a front end, a replay, a chaos run, a scenario of the
/// tests), is stepped by one function: what an input the machine refuses means (a command from
/// outside refused with Pi's text, or an answer breaking the contract) is decided once.
#[test]
fn every_machine_is_stepped_by_one_function() {
    let stepping = files_calling(&stepping_sources(), "step", false);
    assert_eq!(
        stepping,
        ["core/src/agent_session/feed.rs"],
        "machines are stepped from these files"
    );
}

/// One loop waits for a session's answers until it is idle, whatever the interpreter: the
/// driver's (print mode, replays, imports, chaos runs), and RPC mode's, which reads its stdin
/// in the same loop. No runner steps a session from a loop of its own.
#[test]
fn one_loop_waits_for_the_sessions_answers() {
    let waiting = files_calling(&stepping_sources(), "advance", true);
    assert_eq!(
        waiting,
        [
            "cli/src/rpc/mod.rs",
            "effects/src/agent_session.rs",
            "effects/src/driver.rs"
        ],
        "sessions wait for their answers from these files"
    );
}

/// The loop checks see calls however they are written, and not comments, texts or other names.
#[test]
fn the_loop_checks_find_a_step_and_an_advance() {
    let source = |text: &str| vec![("f.rs".to_owned(), text.to_owned())];
    let chained = "let s = self.machine()\n    .step(now, input)?;";
    assert_eq!(files_calling(&source(chained), "step", false), ["f.rs"]);
    let function = "match advance(&mut machine, &mut io, &mut file, on_event) {";
    assert_eq!(files_calling(&source(function), "advance", true), ["f.rs"]);
    assert!(files_calling(&source(function), "advance", false).is_empty());
    let unrelated = "// machine.step(now, input)\nlet s = \".step(\"; stepwise(1); advanced(2);";
    assert!(files_calling(&source(unrelated), "step", false).is_empty());
    assert!(files_calling(&source(unrelated), "advance", true).is_empty());
}
