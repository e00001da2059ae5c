//! What `pi eval` shows while trials run: a bar with passed/failed counts and an ETA on a
//! terminal, one line per finished trial in CI logs, or nothing; and Ctrl-C (or SIGTERM),
//! which stops the run cleanly.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use indicatif::{ProgressBar, ProgressDrawTarget};
use pi_evals::results::{TrialResult, TrialStatus};

/// How progress is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressStyle {
    Bar,
    Plain,
    Quiet,
}

/// Progress of one run.
#[derive(Debug)]
pub struct Progress {
    style: ProgressStyle,
    total: usize,
    done: AtomicUsize,
    passed: AtomicUsize,
    failed: AtomicUsize,
    bar: Option<ProgressBar>,
}

impl Progress {
    pub fn new(style: ProgressStyle, total: usize) -> Self {
        let bar = (style == ProgressStyle::Bar).then(|| {
            let bar =
                ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
            if let Ok(template) = indicatif::ProgressStyle::with_template(
                "{bar:30.cyan/blue} {pos}/{len} {msg} [{elapsed_precise}, ETA {eta}]",
            ) {
                bar.set_style(template.progress_chars("=> "));
            }
            bar
        });
        Progress {
            style,
            total,
            done: AtomicUsize::new(0),
            passed: AtomicUsize::new(0),
            failed: AtomicUsize::new(0),
            bar,
        }
    }

    /// Clears the bar.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl pi_evals::runner::Progress for Progress {
    fn started(&self, _key: &str) {}

    fn finished(&self, result: &TrialResult) {
        let done = self.done.fetch_add(1, Ordering::SeqCst) + 1;
        if result.status == TrialStatus::Passed {
            self.passed.fetch_add(1, Ordering::SeqCst);
        } else {
            self.failed.fetch_add(1, Ordering::SeqCst);
        }
        let (passed, failed) = (
            self.passed.load(Ordering::SeqCst),
            self.failed.load(Ordering::SeqCst),
        );
        match self.style {
            ProgressStyle::Quiet => {}
            ProgressStyle::Bar => {
                if let Some(bar) = &self.bar {
                    bar.set_message(format!("passed {passed}, failed {failed}"));
                    bar.inc(1);
                }
            }
            ProgressStyle::Plain => {
                let width = self.total.to_string().len();
                let status = serde_json::to_value(result.status)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                let mut line = format!(
                    "[{done:>width$}/{}] {status:<8} {}/{}/{}/{} ({:.2} s)",
                    self.total,
                    result.suite,
                    result.task,
                    result.model,
                    result.trial,
                    result.wall_ms as f64 / 1000.0
                );
                if let Some(reason) = result.reason.as_deref().or_else(|| {
                    result
                        .checks
                        .iter()
                        .find(|c| !c.passed)
                        .map(|c| c.name.as_str())
                }) {
                    if result.status != TrialStatus::Passed {
                        line.push_str(": ");
                        line.push_str(reason.lines().next().unwrap_or_default());
                    }
                }
                eprintln!("{line}");
            }
        }
    }
}

/// Sets `cancel` on SIGINT or SIGTERM: no new trial starts, running ones are stopped, and the
/// results of finished ones are written.
pub fn cancel_on_signals(cancel: Arc<AtomicBool>) -> Option<std::thread::JoinHandle<()>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    std::thread::Builder::new()
        .name("eval-signals".into())
        .spawn(move || {
            runtime.block_on(async move {
                let Ok(mut term) =
                    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                else {
                    return;
                };
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
                eprintln!("\nstopping: the running trials are interrupted, no new one starts");
                cancel.store(true, Ordering::SeqCst);
            });
        })
        .ok()
}
