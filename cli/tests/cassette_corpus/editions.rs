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

/// A cassette the 0.73.1 edition recorded (a task of the eval benchmark's suite, with the prompt
/// as that edition sent it in its configuration): refused on its header's stamp before its
/// configuration is read, so nothing of that edition's run can be replayed by this build.
#[test]
fn a_cassette_the_0_73_1_edition_recorded_is_refused_before_its_configuration_is_read() {
    let build = build_edition();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/cassette_corpus/fixtures/edition-0.73.1.jsonl");
    let text = std::fs::read_to_string(&fixture).unwrap();
    let header: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(header["pi"], "0.73.1");
    assert!(header["config"]["systemPrompt"].is_string());
    for args in [
        &["replay"][..],
        &["replay", "--check"],
        &["replay", "--config", "current"],
    ] {
        let out = pi(args, &[&fixture]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(125), "{args:?}: {stderr}");
        says_why(&stderr, &fixture, "0.73.1", &build);
        assert!(!stderr.contains("systemPrompt"), "{stderr}");
    }
}

/// A cassette stamped with this build's edition whose configuration holds a field no run of
/// this edition writes (the prompt as sent, which only the 0.73.1 edition recorded) is unusable,
/// naming the field, instead of replayed with the field silently ignored.
#[test]
fn a_configuration_field_this_edition_never_writes_makes_the_cassette_unusable() {
    let build = build_edition();
    let dir = tempfile::tempdir().unwrap();
    let cassette = restamped("one_tool.jsonl", dir.path(), &build);
    let text = std::fs::read_to_string(&cassette).unwrap();
    let (header, rest) = text.split_once('\n').unwrap();
    let mut header: Value = serde_json::from_str(header).unwrap();
    header["config"]["systemPrompt"] = Value::String("You are a helpful assistant.".into());
    std::fs::write(&cassette, format!("{header}\n{rest}")).unwrap();

    let out = pi(&["replay", "--check"], &[&cassette]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(125), "{stdout}{stderr}");
    assert!(stdout.contains("UNUSABLE  "), "{stdout}");
    assert!(stderr.contains("systemPrompt"), "{stderr}");
    assert!(
        stderr.contains(&format!("{}:1: ", cassette.display())),
        "the header's line is named: {stderr}"
    );
    assert!(!stderr.to_lowercase().contains("diverge"), "{stderr}");
}
