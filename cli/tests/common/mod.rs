//! What the binary's end-to-end tests share: the conformance kit's mock LLM as a real server on
//! 127.0.0.1, and a fresh HOME / agent dir / cwd with models.json pointing at it.

#![allow(dead_code, unused_imports)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

pub use pi_testkit::MockLlm;

/// A fresh HOME, agent dir (models.json at the mock, as the kit's run.py writes it) and cwd.
pub struct Env {
    root: tempfile::TempDir,
    port: u16,
}

pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Env {
    pub fn new(mock: &MockLlm) -> Env {
        let env = Env {
            root: tempfile::tempdir().unwrap(),
            port: mock.port,
        };
        for dir in ["home", "agent", "cwd", "pkg"] {
            std::fs::create_dir_all(env.root.path().join(dir)).unwrap();
        }
        let models = pi_testkit::demo::models_json(env.port);
        env.write_agent("models.json", &models.to_string());
        env
    }

    pub fn path(&self, sub: &str) -> PathBuf {
        self.root.path().join(sub)
    }

    pub fn cwd(&self) -> PathBuf {
        self.path("cwd")
    }

    pub fn write_agent(&self, name: &str, text: &str) {
        std::fs::write(self.path("agent").join(name), text).unwrap();
    }

    pub fn write(&self, name: &str, bytes: &[u8]) {
        std::fs::write(self.cwd().join(name), bytes).unwrap();
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.run_with_stdin(args, None)
    }

    /// `pi --provider mock --model mock-model --mode rpc` in this environment.
    pub fn rpc_command(&self) -> Command {
        self.command(&[
            "--provider",
            "mock",
            "--model",
            "mock-model",
            "--mode",
            "rpc",
        ])
    }

    /// The binary with this environment, not started yet.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_pi"));
        command
            .args(args)
            .current_dir(self.cwd())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.path("home"))
            .env("PI_CODING_AGENT_DIR", self.path("agent"))
            .env("PI_PACKAGE_DIR", self.path("pkg"))
            .env("PI_TELEMETRY", "0");
        command
    }

    pub fn run_with_stdin(&self, args: &[&str], stdin: Option<&str>) -> Output {
        let mut child = self
            .command(args)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if let Some(text) = stdin {
            child
                .stdin
                .take()
                .unwrap()
                .write_all(text.as_bytes())
                .unwrap();
        }
        let out = child.wait_with_output().unwrap();
        Output {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Pi's login guidance with this run's package dir.
    pub fn login_help(&self) -> String {
        let docs = self.path("pkg").join("docs");
        format!(
            "Use /login to log into a provider via OAuth or API key. See:\n  {}/providers.md\n  {}/models.md",
            docs.display(),
            docs.display()
        )
    }

    pub fn session_files(&self) -> Vec<PathBuf> {
        let mut files = Vec::new();
        let root = self.path("agent").join("sessions");
        for dir in std::fs::read_dir(root).into_iter().flatten().flatten() {
            for file in std::fs::read_dir(dir.path()).unwrap().flatten() {
                files.push(file.path());
            }
        }
        files.sort();
        files
    }
}
