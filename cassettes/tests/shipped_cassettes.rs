//! The format's own types change no byte: every cassette shipped in the repository, read by the
//! format's reader and into the harness's types, and written back from those types as a
//! recording writes them, gives the lines it was read from. A harness type whose JSON drifted
//! from what the cassettes hold (a renamed field, another number spelling, a lost unknown
//! field) fails here, naming the cassette and the line.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use pi_cassettes::convert::{recorded_input, session_input, to_json, to_name};
use pi_cassettes::format::{Imported, Line, RecordedInput, ScopedModel};
use pi_cassettes::Cassette;
use pi_providers::CallOptions;

/// Every `.jsonl` file under `dir`.
fn jsonl_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries {
        let path = entry.unwrap().path();
        if path.is_dir() {
            jsonl_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            out.push(path);
        }
    }
}

/// The cassettes the repository ships: the corpus and the eval suites' recordings.
fn shipped() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in [
        "cassettes/corpus",
        "evals/cassettes",
        "benches/evals/cassettes",
    ] {
        jsonl_files(&root.join(dir), &mut files);
    }
    files.sort();
    files
}

/// An input written back from the harness's type it was read as.
fn again(input: &RecordedInput) -> Box<RecordedInput> {
    Box::new(recorded_input(&session_input(input).unwrap()).unwrap())
}

/// `line` with everything it holds of the harness read into the harness's types and written
/// back from them.
fn through_the_harness(line: &Line) -> Line {
    match line {
        Line::Outside { t, input } => Line::Outside {
            t: *t,
            input: again(input),
        },
        Line::Command { t, input } => Line::Command {
            t: *t,
            input: again(input),
        },
        Line::Answer { t, input } => Line::Answer {
            t: *t,
            input: again(input),
        },
        Line::Call { call, t, options } => {
            let options: CallOptions = serde_json::from_value((**options).clone()).unwrap();
            Line::Call {
                call: *call,
                t: *t,
                options: Box::new(to_json(&options)),
            }
        }
        other => other.clone(),
    }
}

#[test]
fn every_shipped_cassette_is_written_back_byte_for_byte_from_the_harness_types() {
    let files = shipped();
    assert!(files.len() > 100, "found only {files:?}");
    for path in files {
        let cassette = Cassette::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let text = std::fs::read_to_string(&path).unwrap();
        let on_disk: Vec<&str> = text.lines().collect();
        // The header: its harness values written back from the types they were read as.
        let mut header = cassette.header.clone();
        header.config = to_json(&cassette.config);
        header.models = cassette
            .models
            .as_ref()
            .map(|models| models.iter().map(to_json).collect());
        header.scoped_models = cassette
            .scoped_models
            .iter()
            .map(|(model, level)| ScopedModel {
                model: to_json(model),
                thinking_level: level.as_ref().map(to_name),
            })
            .collect();
        if let (Some(ids), Some(imported)) = (&cassette.imported, &header.imported) {
            header.imported = Some(Imported {
                session: to_json(&ids.session),
                entries: ids.entries.iter().map(to_json).collect(),
                ..imported.clone()
            });
        }
        let read = serde_json::to_string(&Line::Cassette(Box::new(cassette.header.clone())));
        let written = serde_json::to_string(&Line::Cassette(Box::new(header)));
        assert_eq!(
            written.unwrap(),
            read.unwrap(),
            "{}:1: the header",
            path.display()
        );
        for (number, line) in &cassette.lines {
            let written = serde_json::to_string(&through_the_harness(line)).unwrap();
            assert_eq!(written, on_disk[number - 1], "{}:{number}", path.display());
        }
    }
}

/// Every shipped print-mode cassette that starts from no file replays in memory to its end:
/// the in-memory replay rebuilds the starting session the one way a replay does.
#[test]
fn shipped_print_mode_cassettes_replay_in_memory() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut replayed = 0;
    for path in shipped() {
        let cassette = Cassette::load(&path).unwrap();
        let header = &cassette.header;
        let resumed = header.session.kind == pi_cassettes::format::SessionKind::Open;
        if header.mode == pi_cassettes::RecordedMode::Rpc || resumed {
            continue;
        }
        let result = runtime.block_on(pi_cassettes::replay_in_memory(std::sync::Arc::new(
            cassette,
        )));
        assert!(result.is_ok(), "{}: {:?}", path.display(), result.err());
        replayed += 1;
    }
    assert!(
        replayed > 10,
        "only {replayed} cassettes replayed in memory"
    );
}
