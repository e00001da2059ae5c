//! grep, find and ls against the original tools run on the same trees with the same arguments
//! (`scripts/gen-search-fixtures.mjs`, which ran Pi 1.5.2 with rg and fd): ignore files in and
//! out of git, hidden files, binary files, BOM, CRLF and lone-CR lines, long lines, invalid UTF-8,
//! context, limits, byte truncation, globs, symlinks, the sort order of ls, and the error texts.
//! rg and fd walk in parallel, so the original's lines from different files come in any order:
//! ours must be the original's set in path order (names compared byte-wise, directory by
//! directory, each file's lines as the original gives them); where a limit picks some of many
//! files, ours must be in path order and as many; notices and details always exactly.
//!
//! Then what the fixtures cannot show: the sandbox, cancellation and unreadable files.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use pi_core::agent::ToolOutcome;
use pi_core::message::text_parts;
use pi_effects::tools::{run, ToolContext, ToolEnv};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

fn context() -> ToolContext {
    ToolContext {
        cancel: CancellationToken::new(),
        updates: tokio::sync::mpsc::unbounded_channel().0,
    }
}

/// `{n}` in a fixture template: 001, 002, ...
fn expand(template: &str, n: u64) -> String {
    template.replace("{n}", &format!("{n:03}"))
}

fn build(root: &Path, entries: &[Value]) {
    fs::create_dir_all(root).unwrap();
    for entry in entries {
        let full = root.join(entry["path"].as_str().unwrap());
        fs::create_dir_all(full.parent().unwrap()).unwrap();
        if entry.get("dir").is_some() {
            fs::create_dir_all(&full).unwrap();
        } else if let Some(target) = entry.get("link") {
            std::os::unix::fs::symlink(target.as_str().unwrap(), &full).unwrap();
        } else if let Some(bytes) = entry.get("bytes") {
            let bytes: Vec<u8> = bytes
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b.as_u64().unwrap() as u8)
                .collect();
            fs::write(&full, bytes).unwrap();
        } else if let Some(spec) = entry.get("numberedLines") {
            let template = spec["template"].as_str().unwrap();
            let lines: Vec<String> = (1..=spec["count"].as_u64().unwrap())
                .map(|n| expand(template, n))
                .collect();
            fs::write(&full, lines.join("\n")).unwrap();
        } else if let Some(spec) = entry.get("numberedFiles") {
            fs::create_dir_all(&full).unwrap();
            let template = spec["template"].as_str().unwrap();
            for n in 1..=spec["count"].as_u64().unwrap() {
                fs::write(full.join(expand(template, n)), "").unwrap();
            }
        } else {
            fs::write(&full, entry["text"].as_str().unwrap()).unwrap();
        }
    }
}

/// The result text split into its lines and the `[...]` notice suffix.
fn split_notice(text: &str) -> (&str, &str) {
    match text.rfind("\n\n[") {
        Some(at) if text.ends_with(']') => (&text[..at], &text[at..]),
        _ => (text, ""),
    }
}

fn sorted_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = text.split('\n').collect();
    lines.sort_unstable();
    lines
}

/// The path a grep or find line is about: a find line is a path (a directory's ends in `/`), a
/// grep line is `path:N: text` (a match) or `path-N- text` (context).
fn line_path<'a>(tool: &str, line: &'a str) -> &'a str {
    if tool != "grep" {
        return line;
    }
    let bytes = line.as_bytes();
    for (at, &mark) in bytes.iter().enumerate() {
        if mark != b':' && mark != b'-' {
            continue;
        }
        let digits = bytes[at + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if digits > 0
            && bytes.get(at + 1 + digits) == Some(&mark)
            && bytes.get(at + 2 + digits) == Some(&b' ')
        {
            return &line[..at];
        }
    }
    line
}

/// Where a printed path is in the walk under `dir`. Pi prints a file whose path relative to
/// the searched directory starts with `..` (a directory named `..weird`) by its name alone.
fn walked_path(dir: &Path, printed: &str) -> String {
    fn find(dir: &Path, name: &str) -> Option<std::path::PathBuf> {
        for entry in fs::read_dir(dir).ok()?.flatten() {
            let path = entry.path();
            if path.is_dir() {
                if let Some(found) = find(&path, name) {
                    return Some(found);
                }
            } else if entry.file_name() == name {
                return Some(path);
            }
        }
        None
    }
    if printed.contains('/') || dir.join(printed).exists() || !dir.is_dir() {
        return printed.to_owned();
    }
    fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".."))
        .find_map(|e| find(&e.path(), printed))
        .and_then(|p| {
            p.strip_prefix(dir)
                .ok()
                .map(|p| p.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| printed.to_owned())
}

/// `lines` stably sorted into path order (component by component, each compared byte-wise,
/// as `rg --sort path`): each file's lines keep their order.
fn in_path_order<'a>(tool: &str, dir: &Path, lines: &[&'a str]) -> Vec<&'a str> {
    let mut keyed: Vec<(Vec<Vec<u8>>, &str)> = lines
        .iter()
        .map(|line| {
            let path = walked_path(dir, line_path(tool, line));
            let key = path.split('/').map(|c| c.as_bytes().to_vec()).collect();
            (key, *line)
        })
        .collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    keyed.into_iter().map(|(_, line)| line).collect()
}

/// The paths of `lines`, for short messages.
fn paths<'a>(tool: &str, lines: &[&'a str]) -> Vec<&'a str> {
    let mut paths: Vec<&str> = lines.iter().map(|l| line_path(tool, l)).collect();
    paths.dedup();
    paths
}

fn utf16_prefix(units: &[u16], n: usize) -> String {
    String::from_utf16_lossy(&units[..n.min(units.len())])
}

fn check(case: &Value, outcome: ToolOutcome, root: &Path) {
    let label = format!("{} {} {}", case["tree"], case["tool"], case["args"]);
    let result = match (outcome, case.get("error")) {
        (ToolOutcome::Thrown(message), Some(expected)) => {
            let message = message.replace(root.to_str().unwrap(), "<root>");
            assert_eq!(message, expected.as_str().unwrap(), "{label}");
            return;
        }
        (ToolOutcome::Ok(result), None) => result,
        (outcome, _) => panic!("{label}: expected {case}, got {outcome:?}"),
    };
    let text: String = text_parts(&result.content).collect();
    let (body, notice) = split_notice(&text);
    let mut details = result.details.clone();
    if let Some(truncation) = details
        .as_mut()
        .and_then(|d| d.get_mut("truncation"))
        .and_then(Value::as_object_mut)
    {
        let content = truncation.remove("content").unwrap();
        assert_eq!(
            content.as_str().unwrap(),
            body,
            "{label}: truncated content"
        );
    }
    assert_eq!(details.as_ref(), case.get("details"), "{label}: details");
    let tool = case["tool"].as_str().unwrap();
    let dir = root.join(case["args"]["path"].as_str().unwrap_or(""));
    match case["compare"].as_str().unwrap() {
        "count" => {
            let ours: Vec<&str> = body.split('\n').collect();
            let ordered = in_path_order(tool, &dir, &ours);
            assert!(
                ours == ordered,
                "{label}: path order\n  ours:    {:?}\n  ordered: {:?}",
                paths(tool, &ours),
                paths(tool, &ordered)
            );
            let lines = sorted_lines(body);
            assert_eq!(
                lines.len() as u64,
                case["lines"].as_u64().unwrap(),
                "{label}: lines"
            );
            let mut distinct = lines.clone();
            distinct.dedup();
            assert_eq!(distinct.len(), lines.len(), "{label}: lines repeat");
            assert_eq!(notice, case["notice"].as_str().unwrap(), "{label}: notice");
        }
        "sorted" => {
            let expected = case["text"].as_str().unwrap();
            let (expected_body, expected_notice) = split_notice(expected);
            assert_eq!(
                sorted_lines(body),
                sorted_lines(expected_body),
                "{label}: lines"
            );
            let theirs: Vec<&str> = expected_body.split('\n').collect();
            let ours: Vec<&str> = body.split('\n').collect();
            let ordered = in_path_order(tool, &dir, &theirs);
            assert!(
                ours == ordered,
                "{label}: path order\n  ours:    {:?}\n  ordered: {:?}",
                paths(tool, &ours),
                paths(tool, &ordered)
            );
            assert_eq!(notice, expected_notice, "{label}: notice");
        }
        _ => match case.get("text") {
            Some(expected) => assert_eq!(text, expected.as_str().unwrap(), "{label}"),
            None => {
                let units: Vec<u16> = text.encode_utf16().collect();
                assert_eq!(
                    units.len() as u64,
                    case["length"].as_u64().unwrap(),
                    "{label}"
                );
                assert_eq!(
                    utf16_prefix(&units, 600),
                    case["head"].as_str().unwrap(),
                    "{label}"
                );
                let tail = String::from_utf16_lossy(&units[units.len().saturating_sub(600)..]);
                assert_eq!(tail, case["tail"].as_str().unwrap(), "{label}");
            }
        },
    }
}

#[tokio::test]
async fn grep_find_and_ls_match_the_original() {
    let fixtures: Value = serde_json::from_str(include_str!("fixtures/search_cases.json")).unwrap();
    let base = tempfile::tempdir().unwrap();
    let base = base.path().canonicalize().unwrap();
    for (tree, entries) in fixtures["trees"].as_object().unwrap() {
        build(&base.join(tree), entries.as_array().unwrap());
    }
    let cases = fixtures["cases"].as_array().unwrap();
    assert!(cases.len() > 90);
    let mut failed = 0;
    for case in cases {
        let root = base.join(case["tree"].as_str().unwrap());
        let env = ToolEnv::new(&root);
        let outcome = run(
            &env,
            case["tool"].as_str().unwrap(),
            &case["args"],
            &context(),
        )
        .await;
        let checked = std::panic::catch_unwind(|| check(case, outcome, &root));
        failed += usize::from(checked.is_err());
    }
    assert_eq!(failed, 0, "cases differ from the original (see above)");
}

async fn call(env: &ToolEnv, tool: &str, args: Value, cx: &ToolContext) -> Result<String, String> {
    match run(env, tool, &args, cx).await {
        ToolOutcome::Ok(result) => Ok(text_parts(&result.content).collect()),
        ToolOutcome::Thrown(message) => Err(message),
    }
}

#[tokio::test]
async fn the_sandbox_refuses_paths_outside_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let mut env = ToolEnv::new(dir.path());
    env.sandbox = true;
    let cx = context();
    for (tool, args) in [
        ("grep", json!({"pattern": "x", "path": "../"})),
        ("find", json!({"pattern": "*", "path": "/etc"})),
        ("ls", json!({"path": "../.."})),
    ] {
        let raw = args["path"].as_str().unwrap().to_owned();
        assert_eq!(
            call(&env, tool, args, &cx).await,
            Err(format!("Path is outside the working directory: {raw}")),
            "{tool}"
        );
    }
    fs::write(dir.path().join("inside.txt"), "x marks\n").unwrap();
    assert_eq!(
        call(&env, "grep", json!({"pattern": "x"}), &cx).await,
        Ok("inside.txt:1: x marks".to_owned())
    );
}

#[tokio::test]
async fn an_aborted_call_fails_with_operation_aborted() {
    let dir = tempfile::tempdir().unwrap();
    let env = ToolEnv::new(dir.path());
    let cx = context();
    cx.cancel.cancel();
    for (tool, args) in [
        ("grep", json!({"pattern": "x"})),
        ("find", json!({"pattern": "*"})),
        ("ls", json!({})),
    ] {
        assert_eq!(
            call(&env, tool, args, &cx).await,
            Err("Operation aborted".to_owned()),
            "{tool}"
        );
    }
}

#[tokio::test]
async fn aborting_during_a_walk_fails_with_operation_aborted() {
    let dir = tempfile::tempdir().unwrap();
    for d in 0..40 {
        let sub = dir.path().join(format!("d{d}"));
        fs::create_dir(&sub).unwrap();
        for f in 0..50 {
            fs::write(sub.join(format!("f{f}.txt")), "no match here\n").unwrap();
        }
    }
    let env = ToolEnv::new(dir.path());
    let cx = context();
    let cancel = cx.cancel.clone();
    let search = call(&env, "grep", json!({"pattern": "zzz"}), &cx);
    let abort = async {
        tokio::task::yield_now().await;
        cancel.cancel();
    };
    let (result, ()) = tokio::join!(search, abort);
    assert_eq!(result, Err("Operation aborted".to_owned()));
}

/// Pi passes Node's error for an unreadable directory, and rg's message for an unreadable file
/// (rg then exits with 2, which Pi throws). Root reads everything, so this is skipped for root.
#[tokio::test]
async fn unreadable_entries_give_node_and_rg_errors() {
    if common::rerun_unprivileged("unreadable_entries_give_node_and_rg_errors") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let locked = dir.path().join("locked");
    fs::create_dir(&locked).unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
    assert!(
        fs::read_dir(&locked).is_err(),
        "permissions apply to this user"
    );
    let secret = dir.path().join("secret.txt");
    fs::write(&secret, "needle\n").unwrap();
    fs::set_permissions(&secret, fs::Permissions::from_mode(0o000)).unwrap();
    let env = ToolEnv::new(dir.path());
    let cx = context();
    let ls = call(&env, "ls", json!({"path": "locked"}), &cx).await;
    let grep = call(
        &env,
        "grep",
        json!({"pattern": "needle", "path": "secret.txt"}),
        &cx,
    )
    .await;
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(
        ls,
        Err(format!(
            "Cannot read directory: EACCES: permission denied, scandir '{}'",
            locked.display()
        ))
    );
    assert_eq!(
        grep,
        Err(format!(
            "rg: {}: Permission denied (os error 13)",
            secret.display()
        ))
    );
}
