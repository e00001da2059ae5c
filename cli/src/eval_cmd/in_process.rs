//! Replayed eval trials run in this process: the same replay `pi replay CASSETTE --tools
//! in-place` does, its output captured instead of printed. A replayed trial is a few
//! milliseconds of CPU, less than starting a process for it.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use pi_cassettes::Cassette;
use pi_effects::tools::ToolEnv;
use pi_evals::agent::{InProcessReplay, Invocation, Replayer};

use crate::cassette::UNUSABLE;
use crate::output::Stdout;
use crate::replay_cmd::{recorded_mode, replay, runtime, How};

/// Replays trials in process.
#[derive(Debug, Default)]
pub struct InProcess;

/// A writer into a shared buffer (the replay owns its output; the trial reads it after).
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let mut buffer = self.0.lock().map_err(|_| std::io::ErrorKind::Other)?;
        buffer.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Replayer for InProcess {
    fn replay(&self, path: &Path, inv: &Invocation<'_>) -> InProcessReplay {
        let dirs = inv.dirs;
        let cassette = match Cassette::load(path) {
            Ok(cassette) => Arc::new(cassette),
            Err(error) => {
                return InProcessReplay {
                    exit: UNUSABLE,
                    stderr: error.to_string(),
                    ..InProcessReplay::default()
                }
            }
        };
        let mut env = ToolEnv::new(&dirs.workspace);
        env.shell = inv.shell.map(Path::to_path_buf);
        env.sandbox = true;
        env.variables = inv.options.env.clone();
        let how = How::tools_in_place(env);
        let mode = recorded_mode(&cassette, None);
        let session_dir = dirs.agent_dir.join("sessions");
        if let Err(error) = std::fs::create_dir_all(&session_dir) {
            return InProcessReplay {
                exit: UNUSABLE,
                stderr: format!("cannot make {}: {error}", session_dir.display()),
                ..InProcessReplay::default()
            };
        }
        let buffer = Arc::new(Mutex::new(Vec::new()));
        let mut out = Stdout::captured(Box::new(Captured(Arc::clone(&buffer))));
        let result = runtime().block_on(replay(cassette, mode, &how, &session_dir, &mut out));
        out.flush();
        drop(out);
        let stdout = buffer.lock().map(|b| b.clone()).unwrap_or_default();
        match result {
            Ok(replayed) => InProcessReplay {
                exit: replayed.code,
                stdout,
                stderr: String::new(),
            },
            Err(divergence) => InProcessReplay {
                exit: if divergence.is_cassette_fault() {
                    UNUSABLE
                } else {
                    1
                },
                stdout,
                stderr: divergence.to_string(),
            },
        }
    }
}
