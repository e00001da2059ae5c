//! The conformance kit's scripted mock LLM, run as a real server process on 127.0.0.1.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use pi_core::model::Model;
use serde_json::Value;

/// A running mock; killed when dropped.
pub struct Mock {
    child: Child,
    pub port: u16,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Mock {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Mock {
    /// Starts the mock playing `script` (one step per request).
    pub fn start(script: Value) -> Mock {
        let dir = tempfile::tempdir().unwrap();
        let kit =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/oracle/mock/mock_llm.py");
        std::fs::write(dir.path().join("script.json"), script.to_string()).unwrap();
        let port_file = dir.path().join("port");
        let log = dir.path().join("log.jsonl");
        let child = Command::new("python3")
            .arg(kit)
            .arg("--script")
            .arg(dir.path().join("script.json"))
            .arg("--log")
            .arg(&log)
            .arg("--port-file")
            .arg(&port_file)
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut mock = Mock {
            child,
            port: 0,
            log,
            _dir: dir,
        };
        for _ in 0..200 {
            if let Some(port) = std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|p| p.trim().parse().ok())
            {
                mock.port = port;
                return mock;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("the mock did not start");
    }

    /// The request bodies the mock received, in order.
    pub fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v.get("event").is_none())
            .filter_map(|v| v.get("body").cloned())
            .collect()
    }

    /// The kit's `mock/mock-model` at this server.
    pub fn model(&self) -> Model {
        Model {
            id: "mock-model".into(),
            name: "Mock Model".into(),
            api: "openai-completions".into(),
            provider: "mock".into(),
            base_url: format!("http://127.0.0.1:{}/v1", self.port),
            input: vec!["text".into()],
            context_window: 128_000,
            max_tokens: 16_384,
            ..Model::default()
        }
    }
}

/// Processes whose command line contains `marker`, zombies aside (their command line is empty).
pub fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(marker) {
            found.push(format!(
                "{}: {cmdline}",
                entry.file_name().to_string_lossy()
            ));
        }
    }
    found
}

/// Waits up to two seconds for the processes with `marker` to be gone.
pub async fn assert_all_gone(marker: &str) {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let left = processes_with(marker);
        if left.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "left behind: {left:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A process name no other test uses.
pub fn unique_marker(name: &str) -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    format!("pi-bash-test-{name}-{}-{nanos}", std::process::id())
}

/// Root reads and writes anything, so permission errors only show to other users. When this
/// process is root, runs the test named `test` again in this test binary as `nobody` (through
/// `setpriv`) and asserts that it passed; returns true, and the caller stops. Otherwise returns
/// false and the caller runs the test itself.
pub fn rerun_unprivileged(test: &str) -> bool {
    if std::env::var_os("PI_TEST_UNPRIVILEGED").is_some() || !is_root() {
        return false;
    }
    let exe = std::env::current_exe().unwrap();
    let output = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(exe)
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env("PI_TEST_UNPRIVILEGED", "1")
        .output()
        .expect("setpriv runs the test as nobody");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success() && text.contains("1 passed"),
        "as nobody: {text}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    true
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|ids| ids.split_whitespace().nth(1))
        == Some("0")
}
