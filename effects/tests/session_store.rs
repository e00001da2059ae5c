//! Session files on real disk, in temporary directories: the lazy-flush rule, reopening,
//! torn lines, migrations with backups, invalid files, continue-recent, listing, forks and
//! branched sessions, and Pi's own files from the reference traces.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::fs;
use std::path::{Path, PathBuf};

use pi_core::message::{AgentMessage, AssistantMessage, ContentBlock, UserMessage};
use pi_core::session::ids::IdGenerator;
use pi_effects::session::{
    default_session_dir, list_all_sessions, list_sessions, most_recent_session, SessionStore,
};

mod common;

use common::writer::Writer;

const T0: u64 = 1_795_322_284_614;

fn user(text: &str) -> AgentMessage {
    AgentMessage::User(UserMessage::from_text(text, Vec::new(), T0))
}

fn assistant(text: &str) -> AgentMessage {
    AgentMessage::Assistant(AssistantMessage {
        content: vec![ContentBlock::text(text)],
        api: "openai-completions".into(),
        provider: "mock".into(),
        model: "mock-model".into(),
        timestamp: T0 + 5,
        ..AssistantMessage::default()
    })
}

/// Pi's `continueRecent` as the command line does it: the most recent session of `dir`, or a
/// new one.
fn continue_recent(
    cwd: &str,
    dir: &Path,
    now: u64,
    ids: IdGenerator,
) -> Result<SessionStore, pi_effects::session::StoreError> {
    match most_recent_session(dir) {
        Some(path) => SessionStore::open(&path, Some(dir), None, cwd, now, ids),
        None => SessionStore::create(cwd, dir, now, ids),
    }
}

fn lines(path: &Path) -> Vec<String> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn trace_session(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../conformance/traces")
        .join(name)
        .join("sessions/final");
    let cwd_dir = fs::read_dir(dir).unwrap().flatten().next().unwrap().path();
    let mut files: Vec<PathBuf> = fs::read_dir(cwd_dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    files.remove(0)
}

#[test]
fn nothing_is_written_before_the_first_user_message_then_everything_then_appends() {
    let tmp = tempfile::tempdir().unwrap();
    let mut store =
        Writer::new(SessionStore::create("/work/p", tmp.path(), T0, IdGenerator::new(1)).unwrap());
    let file = store.file().unwrap().to_path_buf();
    assert!(file
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .starts_with("2026-11-22T04-38-04-614Z_"));
    store
        .append_model_change("mock", "mock-model", T0 + 1)
        .unwrap();
    assert!(!file.exists(), "no file before a user message");
    // Pi 1.5 (`_hasConversation`): the first user message writes the file; 0.73.1 waited for
    // the first assistant message.
    store.append_message(user("hi"), T0 + 2).unwrap();
    assert_eq!(lines(&file).len(), 3, "header and every entry at once");
    store.append_message(assistant("hello"), T0 + 3).unwrap();
    assert_eq!(lines(&file).len(), 4);
    store.append_message(user("again"), T0 + 4).unwrap();
    assert_eq!(lines(&file).len(), 5);

    let reopened =
        SessionStore::open(&file, None, None, "/elsewhere", T0 + 9, IdGenerator::new(2)).unwrap();
    assert!(reopened.warnings().is_empty());
    assert_eq!(reopened.tree().entries(), store.tree().entries());
    assert_eq!(reopened.tree().context(), store.tree().context());
    assert_eq!(reopened.tree().header().cwd, "/work/p");
    assert_eq!(reopened.dir(), tmp.path());
}

#[test]
fn pi_files_reopen_unchanged_and_only_grow() {
    let tmp = tempfile::tempdir().unwrap();
    for name in ["a_plain_text", "e_rpc", "f_session_resume"] {
        let file = tmp.path().join(format!("{name}.jsonl"));
        fs::copy(trace_session(name), &file).unwrap();
        let before = fs::read_to_string(&file).unwrap();
        let store = SessionStore::open(&file, None, None, "/", T0, IdGenerator::new(3)).unwrap();
        assert!(store.warnings().is_empty(), "{:?}", store.warnings());
        let mut store = Writer::new(store);
        store.append_message(user("one more"), T0).unwrap();
        let after = fs::read_to_string(&file).unwrap();
        assert!(
            after.starts_with(&before),
            "{name}: existing lines were rewritten"
        );
        assert_eq!(after.lines().count(), before.lines().count() + 1);
        let reopened = SessionStore::open(&file, None, None, "/", T0, IdGenerator::new(4)).unwrap();
        assert_eq!(reopened.tree().entries(), store.tree().entries());
    }
}

#[test]
fn unknown_fields_and_entry_types_survive() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("s.jsonl");
    let text = concat!(
        r#"{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w","future":{"x":1}}"#,
        "\n",
        r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi","shade":"blue"}],"api":"x","provider":"p","model":"m","usage":{"input":1,"output":2,"cacheRead":0,"cacheWrite":0,"totalTokens":3,"cost":{"input":0.000001,"output":1e-7,"cacheRead":0,"cacheWrite":0,"total":0.0000011}},"stopReason":"stop","timestamp":5,"mood":"good"},"extraEntryField":true}"#,
        "\n",
        r#"{"type":"hologram","id":"h1","parentId":"a1","timestamp":"2026-01-01T00:00:02.000Z","payload":[1,2.5]}"#,
        "\n",
    );
    fs::write(&file, text).unwrap();
    let store = SessionStore::open(&file, None, None, "/", T0, IdGenerator::new(5)).unwrap();
    assert!(store.warnings().is_empty(), "{:?}", store.warnings());
    let mut store = Writer::new(store);
    assert_eq!(store.tree().leaf_id(), Some("h1"));
    store.append_message(user("next"), T0).unwrap();
    let after = fs::read_to_string(&file).unwrap();
    assert!(after.starts_with(text));
    let rewritten =
        pi_core::session::file::whole_file(store.tree().header(), store.tree().entries());
    assert_eq!(
        rewritten, after,
        "re-serialising everything gives the same bytes"
    );
}

#[test]
fn a_torn_last_line_is_reported_and_kept_apart_from_new_entries() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("torn.jsonl");
    fs::copy(trace_session("b_tool_read"), &file).unwrap();
    let mut text = fs::read_to_string(&file).unwrap();
    text.push_str(r#"{"type":"message","id":"zz","parentId":"#);
    fs::write(&file, &text).unwrap();
    let store = SessionStore::open(&file, None, None, "/", T0, IdGenerator::new(6)).unwrap();
    assert_eq!(store.warnings().len(), 1);
    assert!(
        store.warnings()[0].contains(":8: skipped"),
        "{:?}",
        store.warnings()
    );
    assert!(
        store
            .torn_report()
            .is_some_and(|r| r.contains("torn.jsonl: the last line is torn")),
        "{:?}",
        store.torn_report()
    );
    Writer::new(store)
        .append_message(user("after the tear"), T0)
        .unwrap();
    let reopened = SessionStore::open(&file, None, None, "/", T0, IdGenerator::new(7)).unwrap();
    assert_eq!(
        reopened.tree().entries().len(),
        7,
        "the new entry survived the torn line"
    );
    assert!(
        fs::read_to_string(&file).unwrap().starts_with(&text),
        "the torn text is still there"
    );
}

#[test]
fn old_files_are_migrated_after_a_backup() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("old.jsonl");
    let v1 = concat!(
        r#"{"type":"session","id":"old","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}"#,
        "\n",
        r#"{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}"#,
        "\n",
    );
    fs::write(&file, v1).unwrap();
    let store = SessionStore::open(&file, None, None, "/", T0, IdGenerator::new(8)).unwrap();
    assert_eq!(
        fs::read_to_string(tmp.path().join("old.jsonl.v1.bak")).unwrap(),
        v1
    );
    // As Pi's migration leaves the objects: `version` appended to the header, `id` and
    // `parentId` appended to each entry.
    let id = store.tree().entries()[0].id().to_owned();
    assert_eq!(
        fs::read_to_string(&file).unwrap(),
        format!(
            "{}\n{}\n",
            r#"{"type":"session","id":"old","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w","version":3}"#,
            format_args!(
                r#"{{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{{"role":"user","content":"hi","timestamp":1}},"id":"{id}","parentId":null}}"#
            )
        )
    );
    assert_eq!(store.tree().entries()[0].parent_id(), None);
    assert_eq!(store.warnings().len(), 1);
}

/// Pi 1.5.2's `setSessionFile`: a file with content but no session header is refused with its
/// text and left as it was (nothing written into it or beside it); an empty one gets a header.
#[test]
fn a_file_that_is_not_a_session_is_refused_and_left_as_it_was() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, text) in [
        ("notes.jsonl", "{\"hello\":1}\nprecious data\n"),
        ("prose.jsonl", "precious data\n"),
        ("blank.jsonl", "\n\n"),
    ] {
        let file = tmp.path().join(name);
        fs::write(&file, text).unwrap();
        let error =
            SessionStore::open(&file, None, None, "/w", T0, IdGenerator::new(9)).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!("Session file is not a valid pi session: {}", file.display())
        );
        assert_eq!(fs::read_to_string(&file).unwrap(), text, "{name}");
    }
    let names: Vec<_> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 3, "nothing beside them: {names:?}");

    let empty = tmp.path().join("empty.jsonl");
    fs::write(&empty, "").unwrap();
    SessionStore::open(&empty, None, None, "/w", T0, IdGenerator::new(9)).unwrap();
    assert_eq!(lines(&empty).len(), 1, "an empty file gets a header");

    let missing = tmp.path().join("new.jsonl");
    let store = SessionStore::open(&missing, None, None, "/w", T0, IdGenerator::new(9)).unwrap();
    assert_eq!(store.file(), Some(missing.as_path()));
    assert!(!missing.exists(), "created lazily");
}

#[test]
fn continue_recent_takes_the_latest_valid_session() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = default_session_dir(tmp.path(), "/home/u/proj").unwrap();
    assert!(dir.ends_with("sessions/--home-u-proj--"));
    let fresh = continue_recent("/home/u/proj", &dir, T0, IdGenerator::new(10)).unwrap();
    assert!(fresh.tree().entries().is_empty());

    let mut newer = Writer::new(
        SessionStore::create("/home/u/proj", &dir, T0 + 1, IdGenerator::new(12)).unwrap(),
    );
    newer.append_message(assistant("new"), T0 + 1).unwrap();
    fs::write(dir.join("junk.jsonl"), "not json\n").unwrap();
    let mut older =
        Writer::new(SessionStore::create("/home/u/proj", &dir, T0, IdGenerator::new(11)).unwrap());
    older.append_message(assistant("old"), T0).unwrap();
    // The older session is written last: only these times, a minute apart, make it the older.
    // The newest file is not a session.
    let times = [
        (older.file().unwrap().to_path_buf(), 0),
        (newer.file().unwrap().to_path_buf(), 60),
        (dir.join("junk.jsonl"), 120),
    ];
    for (path, seconds) in times {
        set_mtime(&path, seconds);
    }
    let resumed = continue_recent("/home/u/proj", &dir, T0, IdGenerator::new(13)).unwrap();
    assert_eq!(resumed.tree().id(), newer.tree().id());
}

/// Sets a file's modification time to `seconds` after a fixed instant.
fn set_mtime(path: &Path, seconds: u64) {
    let base = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
    let file = fs::File::options().write(true).open(path).unwrap();
    file.set_modified(base + std::time::Duration::from_secs(seconds))
        .unwrap();
}

#[test]
fn sessions_modified_at_the_same_time_are_ordered_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = default_session_dir(tmp.path(), "/home/u/tie").unwrap();
    // Created in an order unrelated to their names, so the directory's own order cannot decide.
    let mut ids = Vec::new();
    for (seed, name) in [(20, "b"), (21, "c"), (22, "a")] {
        let mut store = Writer::new(
            SessionStore::create("/home/u/tie", &dir, T0, IdGenerator::new(seed)).unwrap(),
        );
        store.append_message(user(name), T0).unwrap();
        store.append_message(assistant(name), T0).unwrap();
        let named = dir.join(format!("2024-01-01T00-00-00-000Z_{name}.jsonl"));
        fs::rename(store.file().unwrap(), &named).unwrap();
        set_mtime(&named, 0);
        ids.push((name, store.tree().id().to_owned()));
    }
    let resumed = continue_recent("/home/u/tie", &dir, T0, IdGenerator::new(23)).unwrap();
    let last = ids.iter().find(|(name, _)| *name == "c").unwrap();
    assert_eq!(
        resumed.tree().id(),
        last.1,
        "the name that sorts last wins a tie"
    );

    let listed: Vec<String> = list_sessions(&dir)
        .iter()
        .map(|i| i.path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        listed,
        [
            "2024-01-01T00-00-00-000Z_a.jsonl",
            "2024-01-01T00-00-00-000Z_b.jsonl",
            "2024-01-01T00-00-00-000Z_c.jsonl"
        ],
        "equal activity times list in path order"
    );
}

#[test]
fn listing_summarises_every_session() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = default_session_dir(tmp.path(), "/p").unwrap();
    fs::copy(trace_session("e_rpc"), dir.join("e.jsonl")).unwrap();
    let mut named =
        Writer::new(SessionStore::create("/p", &dir, T0, IdGenerator::new(14)).unwrap());
    named.append_message(user("first question"), T0).unwrap();
    named.append_message(assistant("first answer"), T0).unwrap();
    named.append_session_info("  Named  ", T0).unwrap();
    fs::write(dir.join("junk.jsonl"), "{\"type\":\"message\"}\n").unwrap();

    let infos = list_sessions(&dir);
    assert_eq!(infos.len(), 2);
    let e = infos.iter().find(|i| i.path.ends_with("e.jsonl")).unwrap();
    assert_eq!(e.message_count, 14);
    assert_eq!(e.first_message, "Run echo one");
    assert_eq!(e.cwd, "@RUN@/cwd");
    assert_eq!(e.created, Some(1_795_322_294_707));
    assert_eq!(e.modified, 1_795_322_300_959);
    assert!(e
        .all_messages_text
        .starts_with("Run echo one Running the command."));
    let n = infos.iter().find(|i| i.name.is_some()).unwrap();
    assert_eq!(n.name.as_deref(), Some("Named"));
    assert_eq!(n.first_message, "first question");
    assert_eq!(list_all_sessions(tmp.path()).len(), 2);
}

#[test]
fn forks_and_branched_sessions_point_back_at_their_source() {
    let tmp = tempfile::tempdir().unwrap();
    let source = tmp.path().join("source.jsonl");
    fs::copy(trace_session("b_tool_read"), &source).unwrap();
    let target = tmp.path().join("target");
    let fork =
        SessionStore::fork_from(&source, "/new/cwd", &target, T0, IdGenerator::new(15), None)
            .unwrap();
    let forked = lines(fork.file().unwrap());
    let original = lines(&source);
    assert_eq!(forked[1..], original[1..], "entries copied verbatim");
    assert_eq!(fork.tree().header().cwd, "/new/cwd");
    assert_eq!(
        fork.tree().header().parent_session.as_deref(),
        Some(source.to_str().unwrap())
    );
    assert!(SessionStore::fork_from(
        &tmp.path().join("none.jsonl"),
        "/x",
        &target,
        T0,
        IdGenerator::new(1),
        None
    )
    .unwrap_err()
    .to_string()
    .starts_with("Cannot fork: source session file is empty or invalid: "));

    let mut store = SessionStore::open(&source, None, None, "/", T0, IdGenerator::new(16)).unwrap();
    let first_answer = store.tree().entries()[4].id().to_owned();
    let branched = store
        .create_branched_session(&first_answer, T0 + 7)
        .unwrap()
        .unwrap();
    assert_eq!(
        lines(&branched).len(),
        6,
        "header and the five entries of the path"
    );
    assert_eq!(
        store.tree().header().parent_session.as_deref(),
        Some(source.to_str().unwrap())
    );
    assert_eq!(lines(&source), original, "the source is untouched");
}
