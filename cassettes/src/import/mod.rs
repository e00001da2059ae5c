//! Import: a session file Pi wrote becomes a cassette, so users' own sessions become
//! regression tests.
//!
//! The loop is run again, in memory, on what the file says happened (`plan`): its user
//! messages and commands as inputs at their times, its assistant messages as the streams
//! their provider would have sent ([`pi_providers::synth`]), its tool results as the tools'
//! answers, its entry ids and times as the session's ids and clock
//! ([`IdGenerator::replaying`]), its model and thinking changes and compactions as the
//! commands that cause them. [`crate::Record`] writes that run down as usual, so the cassette
//! is an ordinary one with an [`Imported`] header: `pi replay --check` reproduces it, checked
//! on the session file it writes. The file the run wrote is compared with the file's current
//! branch line by line, and every entry that differs, or that the loop could not be given, is
//! reported with the reason.

mod answer;
mod models;
mod plan;
mod report;

use std::fmt;
use std::path::{Path, PathBuf};

use pi_core::session::file::whole_file;
use pi_core::session::ids::{IdGenerator, Stamp};
use pi_effects::driver::drive;
use pi_effects::run_config::build_machine;
use pi_effects::session::SessionStore;

use crate::convert::to_json;
use crate::format::{
    Header, Imported, Line, RecordedMode, RecordedOutcome, SessionKind, SessionStart,
    FORMAT_VERSION,
};
use crate::record::Record;
use crate::redact::{Reach, Rules, Secrets, MIN_SCRUBBED_LEN};
use crate::write::Recorder;
use answer::FromSession;
use plan::ImportPlan;

/// What an imported cassette's header says it is checked on.
const CHECKED: &str = "the session file a replay writes (it must equal the imported file's \
     current branch byte for byte) and the order of inputs, model calls and tool runs; a \
     session file holds no system prompt, tool definitions or request options, so requests \
     are not compared";

/// Something of the file an import does not reproduce, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The entry's place on the branch (0 is the first entry after the header).
    pub entry: Option<usize>,
    /// The line of the file, for lines the loader could not read.
    pub line: Option<usize>,
    pub why: String,
}

impl Problem {
    fn entry(position: usize, why: impl Into<String>) -> Problem {
        Problem {
            entry: Some(position),
            line: None,
            why: why.into(),
        }
    }

    fn at_line(line: usize, why: impl Into<String>) -> Problem {
        Problem {
            entry: None,
            line: Some(line),
            why: why.into(),
        }
    }

    fn whole(why: impl Into<String>) -> Problem {
        Problem {
            entry: None,
            line: None,
            why: why.into(),
        }
    }
}

/// What an import did.
#[derive(Debug)]
pub struct ImportReport {
    /// The cassette written.
    pub cassette: PathBuf,
    /// Entries on the branch imported.
    pub entries: usize,
    /// The run wrote the branch byte for byte.
    pub identical: bool,
    /// Each reason it did not, by entry (ids and types named); empty when identical.
    pub problems: Vec<String>,
}

impl fmt::Display for ImportReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let verdict = match self.identical {
            true => "reproduces the session byte for byte",
            false => "does not reproduce the session exactly",
        };
        writeln!(
            f,
            "{}: {} entries, {verdict}",
            self.cassette.display(),
            self.entries
        )?;
        for problem in &self.problems {
            writeln!(f, "  {problem}")?;
        }
        Ok(())
    }
}

/// Why a file could not be imported at all.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {source}", path.display())]
    Session {
        path: PathBuf,
        source: pi_core::session::file::SessionFileError,
    },
    #[error(transparent)]
    Write(#[from] crate::write::CreateError),
    #[error("{}: cannot build the session: {0}", path.display())]
    Build { path: PathBuf, why: String },
}

/// `text` (a session file) with what `rules` find in each line's values replaced by `known`'s
/// placeholders; each new secret is added to `found`, in the order its placeholder was given,
/// so the recorder gives it the same one. A line keeps its bytes but for the values replaced
/// (Pi's number spellings are not serde's), unless a value cannot be replaced as text.
fn redact_lines(
    text: &str,
    rules: &Rules,
    known: &mut Secrets,
    found: &mut Vec<(String, String)>,
) -> String {
    if !rules.searches_lines() {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let (body, end) = match line.strip_suffix('\n') {
            Some(body) => (body, "\n"),
            None => (line, ""),
        };
        out.push_str(&redact_line(body, rules, known, found));
        out.push_str(end);
    }
    out
}

fn redact_line(
    line: &str,
    rules: &Rules,
    known: &mut Secrets,
    found: &mut Vec<(String, String)>,
) -> String {
    let Ok(mut value) = serde_json::from_str::<serde_json::Value>(line) else {
        return line.to_owned();
    };
    let mut replaced = Vec::new();
    // Everywhere, whatever the rule: the session is replayed as this text says it.
    let mut placeholder_of = |value: &str, _: Reach| {
        let (placeholder, new) = known.placeholder_for(value);
        if new {
            found.push((value.to_owned(), crate::write::RULE_SOURCE.to_owned()));
        }
        replaced.push((value.to_owned(), placeholder.clone()));
        placeholder
    };
    let changed = rules.replace_at_paths(&mut value, &mut placeholder_of)
        | rules.replace_in_value(&mut value, &mut placeholder_of);
    if !changed {
        return line.to_owned();
    }
    let mut as_text = line.to_owned();
    for (secret, placeholder) in &replaced {
        let escaped = serde_json::to_string(secret).unwrap_or_default();
        let escaped = escaped.trim_matches('"');
        as_text = as_text.replace(escaped, placeholder);
    }
    match serde_json::from_str::<serde_json::Value>(&as_text) {
        Ok(reread) if reread == value => as_text,
        _ => serde_json::to_string(&value).unwrap_or(as_text),
    }
}

/// Imports the session file at `source` into a cassette at `out` (see the module doc);
/// `pi_version` is the version of Pi whose behaviour the replaying build follows. `secrets`
/// (value, where it came from) are replaced in the cassette as a recording replaces them, and
/// so is what the user's `rules` patterns find in the session's strings.
pub async fn import_session(
    source: &Path,
    out: &Path,
    pi_version: &str,
    secrets: &[(String, String)],
    rules: &Rules,
) -> Result<ImportReport, ImportError> {
    let text = std::fs::read_to_string(source).map_err(|e| ImportError::Read {
        path: source.to_path_buf(),
        source: e,
    })?;
    // The file as the cassette will say it: a secret in a message is replaced before the
    // stream that says it is made (a stream cuts text between deltas, which would leave a key
    // on disk in pieces), so the replay writes the placeholders this digest expects.
    let mut known = Secrets::of(secrets);
    let text = known.replace(&text, MIN_SCRUBBED_LEN);
    let mut secrets = secrets.to_vec();
    let text = redact_lines(&text, rules, &mut known, &mut secrets);
    let mut plan = ImportPlan::of(&text).map_err(|e| ImportError::Session {
        path: source.to_path_buf(),
        source: e,
    })?;
    let from = source
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let session = Stamp {
        id: plan.header.id.clone(),
        timestamp: plan.header.timestamp.clone(),
        result_time: None,
    };
    let header = Header {
        format: FORMAT_VERSION,
        features: Vec::new(),
        harness: env!("CARGO_PKG_VERSION").into(),
        pi: pi_version.into(),
        mode: RecordedMode::Json,
        config: to_json(&plan.config),
        session: SessionStart {
            kind: SessionKind::New,
            file: None,
            path: None,
            content: None,
            content_file: None,
            id_state: plan.config.seed,
            id: None,
        },
        redactions: Vec::new(),
        redact: None,
        models: Some(plan.models.all().iter().map(to_json).collect()),
        scoped_models: Vec::new(),
        command: None,
        imported: Some(Imported {
            from,
            checked: CHECKED.into(),
            session: to_json(&session),
            parent_session: plan.header.parent_session.clone(),
            entries: plan.stamps.iter().map(to_json).collect(),
        }),
        project_trust: None,
    };
    let recorder = Recorder::create(out, &header, &secrets, Rules::default())?;
    let config = &plan.config;
    let store = SessionStore::in_memory_child(
        &config.cwd,
        config.started_at,
        IdGenerator::replaying(0, session, plan.stamps.clone()),
        plan.header.parent_session.clone(),
    );
    let (mut machine, mut file) = build_machine(config, store).map_err(|e| ImportError::Build {
        path: source.to_path_buf(),
        why: e.to_string(),
    })?;
    let answers = FromSession::new(
        recorder.clone(),
        std::mem::take(&mut plan.assistants),
        std::mem::take(&mut plan.results),
        std::mem::take(&mut plan.queued),
    );
    let mut io = Record::new(answers, recorder.clone());
    let mut problems = std::mem::take(&mut plan.problems);
    for input in std::mem::take(&mut plan.inputs) {
        io.inner_mut().next_outside_at(input.at);
        if let Err(error) = drive(&mut machine, &mut io, &mut file, input.item, |_| {}).await {
            problems.push(Problem::entry(
                input.position,
                format!("the run stopped here: {error}"),
            ));
            break;
        }
    }
    let tree = machine.tree();
    let written = whole_file(tree.header(), tree.entries());
    recorder.write(Line::Outcome(RecordedOutcome {
        exit: 0,
        stdout: String::new(),
        session: Some(crate::sha256_hex(plan.target.as_bytes())),
        events: None,
        stdout_text: None,
        events_text: None,
        session_text: (plan.target.len() <= crate::format::MAX_KEPT_TEXT)
            .then(|| plan.target.clone()),
        updates_omitted: false,
    }));
    if let Some(failure) = recorder.failure() {
        return Err(ImportError::Write(crate::write::CreateError::Io {
            path: out.to_path_buf(),
            source: std::io::Error::other(failure),
        }));
    }
    problems.extend(io.into_inner().into_problems());
    let mut lines = report::problems(&plan, &problems);
    lines.extend(report::differences(&plan, &written));
    Ok(ImportReport {
        cassette: out.to_path_buf(),
        entries: plan.entries.len(),
        identical: written == plan.target,
        problems: lines,
    })
}
