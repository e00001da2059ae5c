//! A cassette records the Pi edition it was made with (its header's `pi`, which is what `pi
//! --version` prints); one of another edition than this build's cannot say anything about this
//! build, so every replay refuses it as unusable (exit 125) with both editions and the command
//! that records it again, and never reports it as a divergence.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{corpus, pi};

/// The edition this build reproduces: what `pi --version` prints.
fn build_edition() -> String {
    let out = pi(&["--version"], &[]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    if stdout.is_empty() {
        stderr
    } else {
        stdout
    }
}

/// A copy of the corpus cassette `name` in `dir` whose header says it was made with `edition`.
pub(crate) fn restamped(name: &str, dir: &Path, edition: &str) -> PathBuf {
    let text = std::fs::read_to_string(corpus().join(name)).unwrap();
    let (header, rest) = text.split_once('\n').unwrap();
    let mut header: Value = serde_json::from_str(header).unwrap();
    header["pi"] = Value::String(edition.to_owned());
    let cassette = dir.join(name);
    std::fs::write(&cassette, format!("{header}\n{rest}")).unwrap();
    cassette
}

fn says_why(stderr: &str, cassette: &Path, recorded: &str, build: &str) {
    assert!(stderr.contains(&format!("Pi {recorded}")), "{stderr}");
    assert!(stderr.contains(&format!("Pi {build}")), "{stderr}");
    let command = format!("pi replay --rerecord {}", cassette.display());
    assert!(stderr.contains(&command), "{stderr}");
    assert!(!stderr.to_lowercase().contains("diverge"), "{stderr}");
}

#[test]
fn a_cassette_of_another_pi_edition_is_unusable_in_every_replay_and_says_how_to_rerecord() {
    let build = build_edition();
    assert!(!build.is_empty());
    let other = "0.0.9";
    assert_ne!(build, other);
    let dir = tempfile::tempdir().unwrap();
    let cassette = restamped("one_tool.jsonl", dir.path(), other);

    let out = pi(&["replay"], &[&cassette]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing is replayed");
    says_why(&stderr, &cassette, other, &build);

    // A folder with one cassette of today's edition and one of another: the other is
    // unusable, not a divergence, and the good one still checks.
    std::fs::copy(
        corpus().join("plain_text.jsonl"),
        dir.path().join("plain_text.jsonl"),
    )
    .unwrap();
    let out = pi(&["replay", "--check"], &[dir.path()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stdout}{stderr}");
    assert!(stdout.contains("UNUSABLE  "), "{stdout}");
    assert!(stdout.contains("ok        "), "{stdout}");
    assert!(
        stdout.contains("1 reproduced, 0 diverged, 1 unusable"),
        "{stdout}"
    );
    says_why(&stderr, &cassette, other, &build);

    let out = pi(&["replay", "--chaos", "1", "--seed", "1"], &[&cassette]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(125), "{stdout}{stderr}");
    assert!(
        format!("{stdout}{stderr}").contains(&format!("Pi {other}")),
        "{stdout}{stderr}"
    );
}

#[test]
fn a_cassette_stamped_with_this_builds_edition_replays() {
    let build = build_edition();
    let dir = tempfile::tempdir().unwrap();
    // Stamped again with the edition it already holds: the stamp alone decides nothing else.
    let cassette = restamped("one_tool.jsonl", dir.path(), &build);
    let out = pi(&["replay", "--check"], &[&cassette]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
