//! `pi eval` end to end: the real binary runs suites whose agents talk to the kit's mock model
//! over real HTTP on 127.0.0.1 (or replay cassettes), in real temp workspaces; the checks run
//! real commands; results and reports are read back from disk.
//!
//! The tests are in modules by subject; here are the helpers they share (the scratch
//! environment `EvalEnv`, suites and mock scripts, verdicts read back).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

#[path = "evals_agents/mod.rs"]
mod agents;
#[path = "evals_checks/mod.rs"]
mod checks;
mod common;
#[path = "evals_confinement/mod.rs"]
mod confinement;
#[path = "evals_datasets/mod.rs"]
mod datasets;
#[path = "evals_interrupt/mod.rs"]
mod interrupt;
#[path = "evals_pairwise/mod.rs"]
mod pairwise;
#[path = "evals_replay/mod.rs"]
mod replay;
#[path = "evals_runs/mod.rs"]
mod runs;
#[path = "evals_steps/mod.rs"]
mod steps;
#[path = "evals_suites/mod.rs"]
mod suites;

use std::path::{Path, PathBuf};
use std::process::Command;

use pi_testkit::MockLlm;
use serde_json::{json, Value};

/// A scratch folder with an agent dir (models.json at the mock, when there is one), a HOME and
/// a working directory, where suites are written and `pi eval` runs.
struct EvalEnv {
    root: tempfile::TempDir,
    /// This build's `pi`, at a path the agents' user can reach (see [`reachable_pi`]).
    pi: PathBuf,
    /// Holds the link to `pi`, when there is one.
    _pi_folder: Option<tempfile::TempDir>,
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

impl EvalEnv {
    fn new(mock: Option<&MockLlm>) -> EvalEnv {
        EvalEnv::in_dir(tempfile::tempdir().unwrap(), mock)
    }

    /// Outside the system's temp folder, which a confined command's private `/tmp` would hide
    /// whatever its confinement.
    /// Under the build's temp folder; in `/var/tmp` (outside every confined view too) when a
    /// root `pi eval`'s agents could not get there (a checkout in a closed folder).
    fn outside_tmp(mock: Option<&MockLlm>) -> EvalEnv {
        let target = Path::new(env!("CARGO_TARGET_TMPDIR"));
        let parent = match nix::unistd::geteuid().is_root() && closed_to_others(&target.join("x")) {
            true => Path::new("/var/tmp"),
            false => target,
        };
        EvalEnv::in_dir(tempfile::tempdir_in(parent).unwrap(), mock)
    }

    fn in_dir(root: tempfile::TempDir, mock: Option<&MockLlm>) -> EvalEnv {
        let (pi, _pi_folder) = reachable_pi();
        let env = EvalEnv {
            root,
            pi,
            _pi_folder,
        };
        for dir in ["home", "agent", "work"] {
            std::fs::create_dir_all(env.path(dir)).unwrap();
        }
        if let Some(mock) = mock {
            env.serve(mock);
        }
        env
    }

    /// Points the agent's models.json at `mock`.
    fn serve(&self, mock: &MockLlm) {
        self.serve_port(mock.port);
    }

    /// Points the agent's models.json at a model on `port`.
    fn serve_port(&self, port: u16) {
        let models = pi_testkit::demo::models_json(port);
        std::fs::write(self.path("agent/models.json"), models.to_string()).unwrap();
    }

    fn path(&self, sub: &str) -> PathBuf {
        self.root.path().join(sub)
    }

    fn write(&self, sub: &str, text: &str) -> PathBuf {
        let path = self.path(sub);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn command(&self, args: &[&str]) -> Command {
        self.command_of(&self.pi, args)
    }

    /// `program eval args` in this folder, as [`EvalEnv::command`] runs this build's `pi`.
    fn command_of(&self, program: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(program);
        command
            .arg("eval")
            .args(args)
            .current_dir(self.path("work"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.path("home"))
            .env("PI_CODING_AGENT_DIR", self.path("agent"))
            .env("PI_TELEMETRY", "0");
        command
    }

    fn eval(&self, args: &[&str]) -> Ran {
        let out = self.command(args).output().unwrap();
        Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    fn results(&self, out: &str) -> Value {
        let text = std::fs::read_to_string(self.path("work").join(out).join("results.json"))
            .unwrap_or_else(|e| panic!("no results.json in {out}: {e}"));
        serde_json::from_str(&text).unwrap()
    }
}

/// Whether a folder above `path` lets no other user through.
fn closed_to_others(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.ancestors()
        .skip(1)
        .any(|dir| std::fs::metadata(dir).is_ok_and(|m| m.permissions().mode() & 0o001 == 0))
}

/// This build's `pi`, or where a root `pi eval` could not hand it to its agents' user (a
/// checkout in a folder that lets no other user through, which the eval refuses: see
/// `a_root_run_refuses_to_start_when_its_agent_user_cannot_reach_the_agent_program`), a link
/// to it in a temp folder open to every user, so that the trials still run confined.
fn reachable_pi() -> (PathBuf, Option<tempfile::TempDir>) {
    use std::os::unix::fs::PermissionsExt;
    let built = PathBuf::from(env!("CARGO_BIN_EXE_pi"));
    if !nix::unistd::geteuid().is_root() || !closed_to_others(&built) {
        return (built, None);
    }
    let folder = tempfile::Builder::new().prefix("pi-bin").tempdir().unwrap();
    std::fs::set_permissions(folder.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let program = folder.path().join("pi");
    if std::fs::hard_link(&built, &program).is_err() {
        std::fs::copy(&built, &program).unwrap();
    }
    assert!(
        !closed_to_others(&program),
        "{} is unreachable to other users",
        folder.path().display()
    );
    (program, Some(folder))
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

/// Each trial's `suite/task/model/trial` and status.
fn verdicts(results: &Value) -> Vec<(String, String)> {
    results["trials"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                format!(
                    "{}/{}/{}/{}",
                    t["suite"].as_str().unwrap(),
                    t["task"].as_str().unwrap(),
                    t["model"].as_str().unwrap(),
                    t["trial"]
                ),
                t["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn text_step(text: &str) -> Value {
    json!({"text": [text]})
}

fn tool_step(id: &str, name: &str, arguments: Value) -> Value {
    json!({"tool_calls": [{"id": id, "name": name, "arguments": arguments}]})
}

/// A two-task suite against the mock: one task writes a file, one answers from a file.
fn two_task_suite(env: &EvalEnv, trials: u32) -> PathBuf {
    env.write("suite/fixtures/notes/notes.txt", "The code is 77.\n");
    env.write(
        "suite/two.toml",
        &format!(
            r#"
[defaults]
models = ["mock/mock-model"]
trials = {trials}

[[task]]
id = "write"
prompt = "Write ok.txt"

[[task.check]]
kind = "file_contains"
path = "ok.txt"
text = "ok"

[[task]]
id = "answer"
prompt = "What is the code?"
fixture = "fixtures/notes"

[[task.check]]
kind = "text_contains"
text = "77"
"#
        ),
    )
}

fn two_task_script(trials: usize) -> Value {
    let mut steps = Vec::new();
    for _ in 0..trials {
        steps.push(tool_step(
            "c1",
            "write",
            json!({"path": "ok.txt", "content": "ok\n"}),
        ));
        steps.push(text_step("Wrote ok.txt."));
    }
    for _ in 0..trials {
        steps.push(tool_step("c1", "read", json!({"path": "notes.txt"})));
        steps.push(text_step("The code is 77."));
    }
    Value::Array(steps)
}

/// Whether bubblewrap can confine commands here; when it cannot, says so and the caller
/// returns (unless CI requires it).
fn bwrap_usable() -> bool {
    match pi_evals::isolate::Isolation::detect(Some(pi_evals::isolate::IsolationKind::Bwrap)) {
        Ok(_) => true,
        Err(error) if std::env::var("PI_REQUIRE_BWRAP").is_ok_and(|v| v == "1") => {
            panic!("bubblewrap is required here: {error}")
        }
        Err(error) => {
            pi_testkit::skip(&format!("bubblewrap cannot run here: {error}"));
            false
        }
    }
}

/// A one-task suite against the mock whose model answers `done`.
fn answer_suite(env: &EvalEnv) -> PathBuf {
    env.write(
        "s/answer.toml",
        "[defaults]\nmodels = [\"mock/mock-model\"]\n\n[[task]]\nid = \"answer\"\nprompt = \"say done\"\n\n[[task.check]]\nkind = \"text_contains\"\ntext = \"done\"\n",
    )
}

/// Every file under `dir` and what it holds.
fn files_under(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                pending.push(entry.path());
            } else if kind.is_file() {
                let text =
                    String::from_utf8_lossy(&std::fs::read(entry.path()).unwrap()).into_owned();
                found.push((entry.path(), text));
            }
        }
    }
    found
}
