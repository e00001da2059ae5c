//! The words of an import's report: each problem named by the entry it is about (its line in
//! the file, id and type), and each line the run wrote that the file does not have, with the
//! first field that differs.

use pi_core::session::entry::SessionEntry;
use serde_json::Value;
use similar::{DiffOp, TextDiff};

use super::plan::ImportPlan;
use super::Problem;

/// How many problems, and differing lines, are described one by one; the rest are counted.
const DESCRIBED: usize = 20;

/// `problems` in words, each naming its entry (the first few; the rest counted): the file's
/// own first, then in the order of the entries they are about.
pub fn problems(plan: &ImportPlan, problems: &[Problem]) -> Vec<String> {
    let mut sorted: Vec<&Problem> = problems.iter().collect();
    sorted.sort_by_key(|p| (p.entry.is_some(), p.entry.or(p.line)));
    let mut out: Vec<String> = sorted
        .into_iter()
        .take(DESCRIBED)
        .map(|problem| match (problem.entry, problem.line) {
            (Some(position), _) => format!("{}: {}", name(plan, position), problem.why),
            (None, Some(line)) => format!("line {line} of the file: {}", problem.why),
            (None, None) => problem.why.clone(),
        })
        .collect();
    if problems.len() > DESCRIBED {
        out.push(format!("... and {} more", problems.len() - DESCRIBED));
    }
    out
}

/// The entry at `position` of the branch: its line in the branch's file, type and id.
fn name(plan: &ImportPlan, position: usize) -> String {
    match plan.entries.get(position) {
        Some(entry) => {
            let kind = match entry {
                SessionEntry::Message(m) => format!("message {}", m.message.role()),
                other => other.kind().to_owned(),
            };
            format!("line {} ({kind}, id {})", position + 2, entry.id())
        }
        None => format!("entry {position}"),
    }
}

/// An entry's type, with the role for a message.
fn kind(value: &Value) -> String {
    let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("?").to_owned();
    match text(value.get("type")).as_str() {
        "message" => format!("message {}", text(value.pointer("/message/role"))),
        other => other.to_owned(),
    }
}

/// Each place where `written` (what the run wrote) is not the branch's file.
pub fn differences(plan: &ImportPlan, written: &str) -> Vec<String> {
    let diff = TextDiff::from_lines(plan.target.as_str(), written);
    let expected: Vec<&str> = plan.target.lines().collect();
    let actual: Vec<&str> = written.lines().collect();
    let mut out = Vec::new();
    let mut count = 0usize;
    let mut describe = |text: String| {
        count += 1;
        if count <= DESCRIBED {
            out.push(text);
        }
    };
    for op in diff.ops() {
        match *op {
            DiffOp::Equal { .. } => {}
            DiffOp::Delete {
                old_index, old_len, ..
            } => {
                for i in old_index..old_index + old_len {
                    describe(format!("line {}: the replay does not write it", i + 1));
                }
            }
            DiffOp::Insert {
                new_index, new_len, ..
            } => {
                for i in new_index..new_index + new_len {
                    let what = parse(actual.get(i).copied()).map(|v| kind(&v));
                    describe(format!(
                        "after line {}: the replay writes a {} the file does not have",
                        new_index.min(expected.len()),
                        what.unwrap_or_else(|| "line".into())
                    ));
                }
            }
            DiffOp::Replace {
                old_index,
                old_len,
                new_index,
                new_len,
            } => {
                for k in 0..old_len.max(new_len) {
                    let (old, new) = (
                        expected.get(old_index + k).filter(|_| k < old_len),
                        actual.get(new_index + k).filter(|_| k < new_len),
                    );
                    let line = old_index + k.min(old_len.saturating_sub(1)) + 1;
                    describe(match (old, new) {
                        (Some(old), Some(new)) => changed(line, old, new),
                        (Some(_), None) => format!("line {line}: the replay does not write it"),
                        _ => format!("after line {line}: the replay writes a line more"),
                    });
                }
            }
        }
    }
    if count > DESCRIBED {
        out.push(format!("... and {} more lines differ", count - DESCRIBED));
    }
    out
}

fn parse(line: Option<&str>) -> Option<Value> {
    serde_json::from_str(line?).ok()
}

/// A line the replay wrote differently: the first field that differs, with both values.
fn changed(line: usize, old: &str, new: &str) -> String {
    let (Some(a), Some(b)) = (parse(Some(old)), parse(Some(new))) else {
        return format!("line {line}: written differently");
    };
    let what = kind(&a);
    match first_difference(&a, &b, String::new()) {
        Some(path) if path.is_empty() => {
            format!("line {line} ({what}): the same JSON, written with other bytes")
        }
        Some(path) => {
            let show = |v: &Value| {
                let text = v
                    .pointer(&path)
                    .map(Value::to_string)
                    .unwrap_or("absent".into());
                shorten(&text)
            };
            format!(
                "line {line} ({what}): `{}` is {} in the file, {} in the replay",
                path.trim_start_matches('/').replace('/', "."),
                show(&a),
                show(&b)
            )
        }
        None => format!("line {line} ({what}): the same JSON, written with other bytes"),
    }
}

fn shorten(text: &str) -> String {
    const MAX: usize = 80;
    match text.char_indices().nth(MAX) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_owned(),
    }
}

/// The JSON pointer of the first place `a` and `b` differ: members in either's order, then
/// member order itself (the empty pointer when only the order or the bytes differ).
fn first_difference(a: &Value, b: &Value, at: String) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let member = x.keys().chain(y.keys()).find_map(|key| {
                let (p, q) = (x.get(key), y.get(key));
                (p != q).then(|| {
                    let path = format!("{at}/{key}");
                    match (p, q) {
                        (Some(p), Some(q)) => first_difference(p, q, path.clone()).unwrap_or(path),
                        _ => path,
                    }
                })
            });
            member.or_else(|| (!x.keys().eq(y.keys())).then_some(at))
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            x.iter().zip(y).enumerate().find_map(|(i, (p, q))| {
                (p != q).then(|| {
                    let path = format!("{at}/{i}");
                    first_difference(p, q, path.clone()).unwrap_or(path)
                })
            })
        }
        _ => (a != b).then_some(at),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_changed_line_names_the_first_differing_field() {
        let old = r#"{"type":"message","id":"a","message":{"role":"assistant","usage":{"cost":{"total":0.1}}}}"#;
        let new = r#"{"type":"message","id":"a","message":{"role":"assistant","usage":{"cost":{"total":0.2}}}}"#;
        assert_eq!(
            changed(3, old, new),
            "line 3 (message assistant): `message.usage.cost.total` is 0.1 in the file, 0.2 in the replay"
        );
        let reordered = r#"{"id":"a","type":"message"}"#;
        assert_eq!(
            changed(2, r#"{"type":"message","id":"a"}"#, reordered),
            "line 2 (message ?): the same JSON, written with other bytes"
        );
    }
}
