//! What `pi-mock` does before it runs a command: read a scenario (or a bare mock script), start
//! the mock on a free port, and lay out a scratch HOME, agent dir (with `models.json` pointing at
//! the mock, as the kit's `run.py` writes it) and cwd (with the scenario's files), so any
//! Pi-compatible binary can be tried offline against a scripted model.

use std::ffi::{OsStr, OsString};
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use serde_json::{json, Map, Value};

use crate::mock::{Script, ScriptError, Server};

/// How `pi-mock` is called.
pub const USAGE: &str = "\
usage: pi-mock --scenario FILE [--keep DIR] -- COMMAND [ARG...]

Runs COMMAND (any Pi-compatible binary) against a scripted mock model, offline.

  --scenario FILE  a conformance scenario (an object with \"script\", and optionally \"settings\",
                   \"files\", \"dirs\", \"env\"), or a bare script: a JSON list of mock steps
  --keep DIR       keep the work folder in DIR (created; must be absent or empty): home/, agent/,
                   cwd/ and requests.jsonl, every request the model received
  -h, --help       this text

COMMAND runs in a scratch cwd holding the scenario's files, with HOME and PI_CODING_AGENT_DIR
pointing at scratch folders, PI_OFFLINE=1 and PI_TELEMETRY=0, and no PI_*, *_API_KEY or *_TOKEN
variables from the caller. The agent dir's models.json offers provider `mock` (models mock-model
and mock-reasoner, OpenAI chat completions) and `mock-anthropic` (mock-claude, Anthropic
messages). COMMAND's output passes through and pi-mock exits with its exit code.
";

/// Why `pi-mock` could not run the command.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// The command line is wrong.
    #[error("{0}\n\n{USAGE}")]
    Usage(String),
    /// The scenario file cannot be read or is not valid JSON.
    #[error("{path}: {why}")]
    ScenarioFile {
        /// The scenario file.
        path: PathBuf,
        /// What went wrong reading or parsing it.
        why: String,
    },
    /// A field of the scenario (outside the script) has the wrong shape.
    #[error("{path}: field `{field}`: {why}")]
    ScenarioField {
        /// The scenario file.
        path: PathBuf,
        /// The field, e.g. `files.a.txt`.
        field: String,
        /// What it should be.
        why: String,
    },
    /// The scenario's mock script is wrong.
    #[error("{path}: script {error}")]
    Script {
        /// The scenario file.
        path: PathBuf,
        /// Which step and field, and what is wrong.
        error: ScriptError,
    },
    /// A work folder or file could not be made.
    #[error("cannot {what} {path}: {source}")]
    Io {
        /// What was being done.
        what: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The command could not be started.
    #[error("cannot start {program}: {source}")]
    Start {
        /// The program as given.
        program: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl DemoError {
    /// The exit code `pi-mock` ends with: 2 for a wrong call or scenario, 127 when the command
    /// cannot start, 1 for anything else.
    pub fn exit_code(&self) -> u8 {
        match self {
            DemoError::Usage(_)
            | DemoError::ScenarioFile { .. }
            | DemoError::ScenarioField { .. }
            | DemoError::Script { .. } => 2,
            DemoError::Start { .. } => 127,
            DemoError::Io { .. } => 1,
        }
    }
}

/// A parsed `pi-mock` command line.
#[derive(Debug, PartialEq, Eq)]
pub enum Invocation {
    /// `--help`.
    Help,
    /// Run a command against a scenario.
    Run(Options),
}

/// What to run, against what.
#[derive(Debug, PartialEq, Eq)]
pub struct Options {
    /// The scenario (or bare script) file.
    pub scenario: PathBuf,
    /// Where to keep the work folder, if it is to be kept.
    pub keep: Option<PathBuf>,
    /// The program to run.
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
}

impl Invocation {
    /// Reads `pi-mock`'s arguments (without the program name).
    pub fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Invocation, DemoError> {
        let mut args = args.into_iter();
        let mut scenario = None;
        let mut keep = None;
        let mut command = Vec::new();
        while let Some(arg) = args.next() {
            let text = arg.to_string_lossy();
            let mut value = |name: &str| {
                args.next()
                    .map(PathBuf::from)
                    .ok_or_else(|| DemoError::Usage(format!("{name} needs a value")))
            };
            match text.as_ref() {
                "-h" | "--help" => return Ok(Invocation::Help),
                "--scenario" => scenario = Some(value("--scenario")?),
                "--keep" => keep = Some(value("--keep")?),
                "--" => {
                    command.extend(args.by_ref());
                    break;
                }
                t if t.starts_with("--scenario=") => scenario = Some(PathBuf::from(&t[11..])),
                t if t.starts_with("--keep=") => keep = Some(PathBuf::from(&t[7..])),
                t if t.starts_with('-') => {
                    return Err(DemoError::Usage(format!(
                        "unknown option {t} (put the command after --)"
                    )))
                }
                _ => {
                    command.push(arg);
                    command.extend(args.by_ref());
                    break;
                }
            }
        }
        let scenario =
            scenario.ok_or_else(|| DemoError::Usage("--scenario FILE is required".into()))?;
        let mut command = command.into_iter();
        let program = command
            .next()
            .ok_or_else(|| DemoError::Usage("no command to run (give it after --)".into()))?;
        Ok(Invocation::Run(Options {
            scenario,
            keep,
            program,
            args: command.collect(),
        }))
    }
}

/// A scenario's parts that `pi-mock` uses; the runs and RPC steps are for `run.py`.
#[derive(Debug)]
pub struct Scenario {
    /// The mock script.
    pub script: Script,
    /// `settings.json` for the agent dir.
    pub settings: Option<Value>,
    /// Files to create in the cwd, by relative path.
    pub files: Vec<(PathBuf, String)>,
    /// Folders to create in the cwd.
    pub dirs: Vec<PathBuf>,
    /// Extra environment variables for the command.
    pub env: Vec<(String, String)>,
}

impl Scenario {
    /// Reads a scenario file, or a bare script (a JSON list of steps).
    pub fn load(path: &Path) -> Result<Scenario, DemoError> {
        let text = std::fs::read_to_string(path).map_err(|e| DemoError::ScenarioFile {
            path: path.to_path_buf(),
            why: e.to_string(),
        })?;
        let value: Value = serde_json::from_str(&text).map_err(|e| DemoError::ScenarioFile {
            path: path.to_path_buf(),
            why: format!("not valid JSON: {e}"),
        })?;
        Scenario::from_value(&value, path)
    }

    /// Reads a scenario already parsed; `path` names it in errors.
    pub fn from_value(value: &Value, path: &Path) -> Result<Scenario, DemoError> {
        let field_error = |field: &str, why: &str| DemoError::ScenarioField {
            path: path.to_path_buf(),
            field: field.to_string(),
            why: why.to_string(),
        };
        let empty = Map::new();
        let (script, spec) = match value {
            Value::Array(_) => (value.clone(), &empty),
            Value::Object(spec) => (
                spec.get("script").cloned().unwrap_or_else(|| json!([])),
                spec,
            ),
            _ => return Err(DemoError::ScenarioFile {
                path: path.to_path_buf(),
                why: "a scenario is a JSON object with a \"script\", or a JSON list of mock steps"
                    .into(),
            }),
        };
        let script = Script::parse(&script).map_err(|error| DemoError::Script {
            path: path.to_path_buf(),
            error,
        })?;
        let settings = match spec.get("settings") {
            None => None,
            Some(settings @ Value::Object(_)) => Some(settings.clone()),
            Some(_) => return Err(field_error("settings", "must be an object (settings.json)")),
        };
        let mut files = Vec::new();
        match spec.get("files") {
            None => {}
            Some(Value::Object(map)) => {
                for (name, text) in map {
                    let field = format!("files.{name}");
                    let text = text
                        .as_str()
                        .ok_or_else(|| field_error(&field, "must be the file's text"))?;
                    files.push((
                        relative(name).ok_or_else(|| field_error(&field, INSIDE))?,
                        text.to_string(),
                    ));
                }
            }
            Some(_) => {
                return Err(field_error(
                    "files",
                    "must be an object of relative paths to texts",
                ))
            }
        }
        let mut dirs = Vec::new();
        match spec.get("dirs") {
            None => {}
            Some(Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    let field = format!("dirs[{i}]");
                    let name = item
                        .as_str()
                        .ok_or_else(|| field_error(&field, "must be a relative path"))?;
                    dirs.push(relative(name).ok_or_else(|| field_error(&field, INSIDE))?);
                }
            }
            Some(_) => return Err(field_error("dirs", "must be a list of relative paths")),
        }
        let mut env = Vec::new();
        match spec.get("env") {
            None => {}
            Some(Value::Object(map)) => {
                for (name, value) in map {
                    let value = value
                        .as_str()
                        .ok_or_else(|| field_error(&format!("env.{name}"), "must be a string"))?;
                    env.push((name.clone(), value.to_string()));
                }
            }
            Some(_) => {
                return Err(field_error(
                    "env",
                    "must be an object of variable names to strings",
                ))
            }
        }
        Ok(Scenario {
            script,
            settings,
            files,
            dirs,
            env,
        })
    }
}

const INSIDE: &str = "must be a relative path inside the work folder (no `..`, not absolute)";

/// `name` as a path that stays inside the folder it is joined to.
fn relative(name: &str) -> Option<PathBuf> {
    let path = PathBuf::from(name);
    let inside = !name.is_empty()
        && path
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    inside.then_some(path)
}

/// `models.json` for the agent dir: providers `mock` (OpenAI chat completions) and
/// `mock-anthropic` (Anthropic messages) at the mock on `port`, as the kit's `run.py` writes it.
pub fn models_json(port: u16) -> Value {
    json!({"providers": {
        "mock": {
            "baseUrl": format!("http://127.0.0.1:{port}/v1"), "api": "openai-completions", "apiKey": "mock-key",
            "models": [
                {"id": "mock-model", "name": "Mock Model", "contextWindow": 128000, "maxTokens": 16384,
                 "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0}},
                {"id": "mock-reasoner", "name": "Mock Reasoner", "reasoning": true,
                 "contextWindow": 128000, "maxTokens": 16384}]},
        "mock-anthropic": {
            "baseUrl": format!("http://127.0.0.1:{port}"), "api": "anthropic-messages", "apiKey": "mock-anthropic-key",
            "models": [{"id": "mock-claude", "name": "Mock Claude", "reasoning": true,
                        "contextWindow": 200000, "maxTokens": 8192}]}}})
}

/// A prepared work folder with the mock serving the scenario's script; the mock stops and a
/// temporary folder is deleted when this is dropped.
#[derive(Debug)]
pub struct Workspace {
    server: Server,
    root: PathBuf,
    env: Vec<(String, String)>,
    _temp: Option<tempfile::TempDir>,
}

impl Workspace {
    /// Lays out home/, agent/ (models.json, settings.json), cwd/ (the scenario's files) and the
    /// request log in `keep` (created; must be absent or empty) or a temporary folder, and
    /// starts the mock.
    pub fn prepare(scenario: Scenario, keep: Option<&Path>) -> Result<Workspace, DemoError> {
        let (root, temp) = match keep {
            Some(dir) => {
                let occupied =
                    std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some());
                if occupied {
                    return Err(DemoError::Io {
                        what: "keep the work folder in",
                        path: dir.to_path_buf(),
                        source: std::io::Error::other("the folder is not empty"),
                    });
                }
                create_dir(dir)?;
                let root = std::fs::canonicalize(dir).map_err(io("resolve", dir))?;
                (root, None)
            }
            None => {
                let temp = tempfile::Builder::new()
                    .prefix("pi-mock-")
                    .tempdir()
                    .map_err(io("create a temporary folder in", &std::env::temp_dir()))?;
                (temp.path().to_path_buf(), Some(temp))
            }
        };
        for sub in ["home", "agent", "cwd"] {
            create_dir(&root.join(sub))?;
        }
        let cwd = root.join("cwd");
        for dir in &scenario.dirs {
            create_dir(&cwd.join(dir))?;
        }
        for (name, text) in &scenario.files {
            let path = cwd.join(name);
            if let Some(parent) = path.parent() {
                create_dir(parent)?;
            }
            std::fs::write(&path, text).map_err(io("write", &path))?;
        }
        if let Some(settings) = &scenario.settings {
            write_json(&root.join("agent/settings.json"), settings)?;
        }
        let log = root.join("requests.jsonl");
        let server = Server::start(scenario.script, &log)
            .map_err(io("start the mock with its log at", &log))?;
        write_json(&root.join("agent/models.json"), &models_json(server.port()))?;
        Ok(Workspace {
            server,
            root,
            env: scenario.env,
            _temp: temp,
        })
    }

    /// The port the mock listens on.
    pub fn port(&self) -> u16 {
        self.server.port()
    }

    /// The work folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `program args...` set up to run in the scratch cwd with the scratch HOME and agent dir,
    /// offline; a `program` naming a path (with a `/`) is taken from the caller's cwd.
    pub fn command(&self, program: &OsStr, args: &[OsString]) -> Command {
        let program = PathBuf::from(program);
        let program = if program.components().count() > 1 && program.is_relative() {
            std::env::current_dir().map_or(program.clone(), |here| here.join(&program))
        } else {
            program
        };
        let mut command = Command::new(program);
        command.args(args).current_dir(self.root.join("cwd"));
        for (name, _) in std::env::vars_os() {
            let name_text = name.to_string_lossy();
            if name_text.starts_with("PI_")
                || name_text.ends_with("_API_KEY")
                || name_text.ends_with("_TOKEN")
            {
                command.env_remove(&name);
            }
        }
        command
            .env("HOME", self.root.join("home"))
            .env("PI_CODING_AGENT_DIR", self.root.join("agent"))
            .env("PI_OFFLINE", "1")
            .env("PI_TELEMETRY", "0");
        for (name, value) in &self.env {
            command.env(name, value);
        }
        command
    }
}

fn io<'a>(what: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> DemoError + 'a {
    move |source| DemoError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

fn create_dir(path: &Path) -> Result<(), DemoError> {
    std::fs::create_dir_all(path).map_err(io("create", path))
}

fn write_json(path: &Path, value: &Value) -> Result<(), DemoError> {
    let text = serde_json::to_string_pretty(value).unwrap_or_default() + "\n";
    std::fs::write(path, text).map_err(io("write", path))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Invocation, DemoError> {
        Invocation::parse(args.iter().map(OsString::from))
    }

    #[test]
    fn reads_the_command_line() {
        let run = parse(&["--scenario", "s.json", "--keep=k", "--", "pi", "-p", "hi"]).unwrap();
        assert_eq!(
            run,
            Invocation::Run(Options {
                scenario: "s.json".into(),
                keep: Some("k".into()),
                program: "pi".into(),
                args: vec!["-p".into(), "hi".into()],
            })
        );
        assert_eq!(parse(&["--help"]).unwrap(), Invocation::Help);
        for wrong in [
            &["--scenario"][..],
            &["pi"],
            &["--scenario", "s.json"],
            &["--bogus", "--", "pi"],
        ] {
            let err = parse(wrong).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{wrong:?}: {err}");
        }
    }

    #[test]
    fn reads_scenarios_and_bare_scripts() {
        let path = Path::new("s.json");
        let s = Scenario::from_value(
            &json!({"script": [{"text": "hi"}], "files": {"a/b.txt": "x"},
            "settings": {"theme": "dark"}, "runs": []}),
            path,
        )
        .unwrap();
        assert_eq!(s.script.len(), 1);
        assert_eq!(s.files, vec![(PathBuf::from("a/b.txt"), "x".to_string())]);
        assert!(Scenario::from_value(&json!([{"text": "hi"}]), path).is_ok());
        let err = Scenario::from_value(&json!({"files": {"../x": "y"}}), path).unwrap_err();
        assert!(err.to_string().contains("field `files.../x`"), "{err}");
        let err = Scenario::from_value(&json!({"script": [{"status": []}]}), path).unwrap_err();
        assert_eq!(
            err.to_string(),
            "s.json: script step 0, field `status`: must be an HTTP status code (100-999)"
        );
        assert!(Scenario::from_value(&json!("x"), path).is_err());
    }
}
