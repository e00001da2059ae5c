//! Tasks made from a data file: a suite's `[[dataset]]` names a JSONL or CSV file (relative to
//! the suite) and holds a task's fields with `{{column}}` placeholders; each row of the file is
//! one task. The rows are expanded into `[[task]]` tables appended to the suite's text, so a
//! row's task is read and checked by the same code as a written one, and an error in it is
//! given back naming the data file and the row's line.
//!
//! Values are inserted as text, once: a value that itself holds `{{x}}` stays as it is. A
//! placeholder naming a column the row does not have is an error, never an empty string.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::suite_error::SuiteError;
use crate::toml_text::basic_string;

/// The most rows a dataset may have: a wrong file (a log, a dump) would otherwise plan
/// millions of tasks.
pub const MAX_ROWS: usize = 100_000;

/// A suite's text with its datasets expanded, and where each expanded task came from.
#[derive(Debug)]
pub struct Expanded {
    /// The suite's text, followed by one `[[task]]` table per dataset row.
    pub text: String,
    /// From which line of `text` a row's task starts, in order.
    origins: Vec<Origin>,
}

#[derive(Debug)]
struct Origin {
    /// The one-based line of `text` its `[[task]]` starts on.
    first_line: usize,
    file: PathBuf,
    /// The row's one-based line in its file.
    row_line: usize,
    /// The one-based line of its `[[dataset]]` in the suite.
    dataset_line: usize,
}

impl Expanded {
    /// The row whose task holds `line` of the expanded text; `None` for the suite's own lines.
    fn origin_of(&self, line: usize) -> Option<&Origin> {
        self.origins.iter().rev().find(|o| line >= o.first_line)
    }

    /// The suite's line for `line` of the expanded text: a row's task is on its
    /// `[[dataset]]`'s line.
    pub fn suite_line(&self, line: usize) -> usize {
        self.origin_of(line).map_or(line, |o| o.dataset_line)
    }

    /// `error`, found in the expanded text, as it concerns the suite: an error in a row's task
    /// names the data file and the row's line (and the dataset's line in the suite); a line it
    /// quotes (a duplicate id's first) is named the same way.
    pub fn relocate(&self, mut error: SuiteError) -> SuiteError {
        const FIRST: &str = "(first on line ";
        if let Some(start) = error.message.find(FIRST) {
            let digits = &error.message[start + FIRST.len()..];
            let end = digits.find(')').unwrap_or(digits.len());
            if let Some(origin) = digits[..end].parse().ok().and_then(|l| self.origin_of(l)) {
                let place = format!("(first on {}:{})", origin.file.display(), origin.row_line);
                error
                    .message
                    .replace_range(start..start + FIRST.len() + end + 1, &place);
            }
        }
        if let Some(origin) = self.origin_of(error.line) {
            error.message = format!(
                "{} (a row of the dataset on {}:{})",
                error.message,
                error.file.display(),
                origin.dataset_line
            );
            error.file = origin.file.clone();
            error.line = origin.row_line;
        }
        error
    }
}

/// One row: its line in the file and its columns' values.
type Row = (usize, BTreeMap<String, String>);

/// Expands the `[[dataset]]` tables of the suite `text` read from `path`. A text that is not
/// TOML, or has no datasets, comes back as it is (the suite's reader reports its errors).
pub fn expand(path: &Path, text: &str) -> Result<Expanded, SuiteError> {
    let unchanged = || Expanded {
        text: text.to_owned(),
        origins: Vec::new(),
    };
    let Ok(table) = text.parse::<toml::Table>() else {
        return Ok(unchanged());
    };
    let Some(datasets) = table.get("dataset") else {
        return Ok(unchanged());
    };
    let lines = dataset_lines(text);
    let suite_error = |line: usize, field: Option<&str>, message: String| SuiteError {
        file: path.to_path_buf(),
        line,
        task: None,
        field: field.map(str::to_owned),
        message,
    };
    let Some(datasets) = datasets.as_array() else {
        return Err(suite_error(
            lines.first().copied().unwrap_or(1),
            Some("dataset"),
            "write each dataset as `[[dataset]]` (double brackets)".into(),
        ));
    };
    let folder = path.parent().unwrap_or(Path::new(""));
    let mut out = text.to_owned();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    let mut origins = Vec::new();
    let mut lines_so_far = out.lines().count();
    for (n, dataset) in datasets.iter().enumerate() {
        let dataset_line = lines.get(n).copied().unwrap_or(1);
        let err = |field: &str, message: String| suite_error(dataset_line, Some(field), message);
        let Some(template) = dataset.as_table() else {
            return Err(err("dataset", "a dataset is a table".into()));
        };
        let mut template = template.clone();
        let file = match template.remove("file") {
            Some(toml::Value::String(file)) => file,
            Some(_) => return Err(err("file", "must be a string (a path)".into())),
            None => {
                return Err(err(
                    "file",
                    "a dataset needs a `file` (JSONL or CSV, relative to the suite)".into(),
                ))
            }
        };
        if !template.contains_key("id") {
            return Err(err(
                "id",
                "a dataset needs an `id` template naming each row's task, e.g. `id = \"{{id}}\"`"
                    .into(),
            ));
        }
        let data_path = folder.join(&file);
        let rows = read_rows(&data_path).map_err(|(line, message)| SuiteError {
            file: data_path.clone(),
            line,
            task: None,
            field: None,
            message,
        })?;
        if rows.is_empty() {
            return Err(err("file", format!("`{file}` has no rows")));
        }
        if rows.len() > MAX_ROWS {
            return Err(err(
                "file",
                format!("`{file}` has {} rows, more than {MAX_ROWS}", rows.len()),
            ));
        }
        for (row_line, row) in &rows {
            let task = fill(&toml::Value::Table(template.clone()), row, false).map_err(
                |(column, message)| SuiteError {
                    file: data_path.clone(),
                    line: *row_line,
                    task: None,
                    field: Some(column),
                    message: format!(
                        "{message} (a row of the dataset on {}:{dataset_line})",
                        path.display()
                    ),
                },
            )?;
            let written = task_table(&task);
            origins.push(Origin {
                first_line: lines_so_far + 1,
                file: data_path.clone(),
                row_line: *row_line,
                dataset_line,
            });
            lines_so_far += written.lines().count();
            out.push_str(&written);
        }
    }
    Ok(Expanded { text: out, origins })
}

/// A `[[task]]` table of `task`'s keys, each value written inline (on one line).
fn task_table(task: &toml::Value) -> String {
    let mut out = String::from("\n[[task]]\n");
    if let toml::Value::Table(table) = task {
        for (key, value) in table {
            out.push_str(&basic_string(key));
            out.push_str(" = ");
            inline(value, &mut out);
            out.push('\n');
        }
    }
    out
}

/// `value` as an inline TOML value.
fn inline(value: &toml::Value, out: &mut String) {
    match value {
        toml::Value::String(s) => out.push_str(&basic_string(s)),
        toml::Value::Integer(i) => out.push_str(&i.to_string()),
        toml::Value::Float(f) if f.is_nan() => out.push_str("nan"),
        toml::Value::Float(f) if f.is_infinite() => {
            out.push_str(if *f > 0.0 { "inf" } else { "-inf" });
        }
        toml::Value::Float(f) => out.push_str(&format!("{f:?}")),
        toml::Value::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
        toml::Value::Datetime(d) => out.push_str(&d.to_string()),
        toml::Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                inline(item, out);
            }
            out.push(']');
        }
        toml::Value::Table(table) => {
            out.push('{');
            for (i, (key, item)) in table.iter().enumerate() {
                out.push_str(if i > 0 { ", " } else { " " });
                out.push_str(&basic_string(key));
                out.push_str(" = ");
                inline(item, out);
            }
            out.push_str(" }");
        }
    }
}

/// The one-based lines of the suite's `[[dataset]]` headers, in order.
fn dataset_lines(text: &str) -> Vec<usize> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            let compact: String = line.chars().filter(|c| !c.is_whitespace()).collect();
            compact.starts_with("[[dataset]]")
        })
        .map(|(i, _)| i + 1)
        .collect()
}

/// Why a row could not fill its template: the column, and what is wrong.
type FillError = (String, String);

/// The fields whose values are paths (relative to the suite): a row's value may not make one
/// absolute or climb out with `..`, since a data file may come from anywhere and a fixture or
/// context file reaches the model.
const PATH_FIELDS: &[&str] = &["fixture", "context_file"];

/// `value` with every placeholder in its strings replaced by the row's value (`in_path`: the
/// string is a path); the column and message of a placeholder naming a column the row does
/// not have, or a value a path may not take.
fn fill(
    value: &toml::Value,
    row: &BTreeMap<String, String>,
    in_path: bool,
) -> Result<toml::Value, FillError> {
    Ok(match value {
        toml::Value::String(s) => {
            let value_check = |column: &str, value: &str| {
                if in_path && !is_plain_relative(value) {
                    return Err((
                        column.to_owned(),
                        format!(
                            "the value `{}` would make a path absolute or climb out with `..`",
                            value.escape_debug()
                        ),
                    ));
                }
                Ok(())
            };
            toml::Value::String(substitute_checked(s, row, &value_check)?)
        }
        toml::Value::Array(items) => toml::Value::Array(
            items
                .iter()
                .map(|item| fill(item, row, in_path))
                .collect::<Result<_, _>>()?,
        ),
        toml::Value::Table(table) => toml::Value::Table(
            table
                .iter()
                .map(|(k, v)| Ok((k.clone(), fill(v, row, PATH_FIELDS.contains(&k.as_str()))?)))
                .collect::<Result<_, FillError>>()?,
        ),
        other => other.clone(),
    })
}

/// Whether `value` is a relative path that stays below where it starts: not absolute, no `..`.
fn is_plain_relative(value: &str) -> bool {
    !value.starts_with('/') && !value.split(['/', '\\']).any(|part| part == "..")
}

/// [`substitute`], each value first passed to `check` with its column.
fn substitute_checked(
    template: &str,
    row: &BTreeMap<String, String>,
    check: &dyn Fn(&str, &str) -> Result<(), FillError>,
) -> Result<String, FillError> {
    let mut used = Vec::new();
    let filled = substitute_with(template, row, &mut |column, value| {
        used.push((column.to_owned(), value.to_owned()));
    })
    .map_err(|column| {
        let message = format!(
            "the dataset's template names the column `{column}`, which this row does not have"
        );
        (column, message)
    })?;
    for (column, value) in &used {
        check(column, value)?;
    }
    Ok(filled)
}

/// `template` with each `{{column}}` (a name of letters, digits, `_`, `-` and `.`, spaces
/// around it allowed) replaced by the row's value, once: the values are not read again. Other
/// braces are left as they are.
pub fn substitute(template: &str, row: &BTreeMap<String, String>) -> Result<String, String> {
    substitute_with(template, row, &mut |_, _| {})
}

/// [`substitute`], telling `seen` of each column and value inserted.
fn substitute_with(
    template: &str,
    row: &BTreeMap<String, String>,
    seen: &mut dyn FnMut(&str, &str),
) -> Result<String, String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let name = after
            .find("}}")
            .map(|close| (close, after[..close].trim()))
            .filter(|(_, name)| is_column_name(name));
        match name {
            Some((close, name)) => {
                let value = row.get(name).ok_or_else(|| name.to_owned())?;
                seen(name, value);
                out.push_str(value);
                rest = &after[close + 2..];
            }
            None => {
                out.push_str("{{");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

fn is_column_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// The rows of a JSONL (`.jsonl`, `.ndjson`) or CSV (`.csv`) file; the line and message of
/// what is wrong.
fn read_rows(path: &Path) -> Result<Vec<Row>, (usize, String)> {
    let bytes = std::fs::read(path).map_err(|e| (0, format!("cannot read the dataset: {e}")))?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let line = e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1;
        (line, "the dataset is not UTF-8".to_owned())
    })?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let extension = path
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    match extension.as_deref() {
        Some("jsonl" | "ndjson") => jsonl_rows(text),
        Some("csv") => csv_rows(text),
        _ => Err((
            0,
            "a dataset is a `.jsonl` (one JSON object a line) or a `.csv` file (a header row)"
                .into(),
        )),
    }
}

/// One JSON object a line (blank lines skipped); a string value is its text, any other value
/// its JSON (`null` the empty string).
fn jsonl_rows(text: &str) -> Result<Vec<Row>, (usize, String)> {
    let mut rows = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let value: serde_json::Value =
            serde_json::from_str(line).map_err(|e| (i + 1, format!("not a JSON object: {e}")))?;
        let serde_json::Value::Object(object) = value else {
            return Err((i + 1, "not a JSON object".into()));
        };
        let row = object
            .into_iter()
            .map(|(k, v)| {
                let text = match v {
                    serde_json::Value::String(s) => s,
                    serde_json::Value::Null => String::new(),
                    other => other.to_string(),
                };
                (k, text)
            })
            .collect();
        rows.push((i + 1, row));
    }
    Ok(rows)
}

/// RFC 4180 CSV: a header row of column names, then the rows, each with as many fields;
/// fields may be quoted (`"a, b"`, `""` for a quote) and then hold commas and line breaks.
fn csv_rows(text: &str) -> Result<Vec<Row>, (usize, String)> {
    let records = csv_records(text)?;
    let mut records = records.into_iter();
    let Some((header_line, header)) = records.next() else {
        return Ok(Vec::new());
    };
    let mut seen = BTreeMap::new();
    for name in &header {
        if name.is_empty() {
            return Err((header_line, "a column of the header row has no name".into()));
        }
        if seen.insert(name.clone(), ()).is_some() {
            return Err((header_line, format!("the column `{name}` is named twice")));
        }
    }
    records
        .filter(|(_, fields)| !(fields.len() == 1 && fields[0].is_empty()))
        .map(|(line, fields)| {
            if fields.len() != header.len() {
                return Err((
                    line,
                    format!(
                        "{} fields where the header row has {} columns",
                        fields.len(),
                        header.len()
                    ),
                ));
            }
            Ok((line, header.iter().cloned().zip(fields).collect()))
        })
        .collect()
}

/// A CSV record: the line it starts on and its fields.
type Record = (usize, Vec<String>);

/// The records of a CSV text.
fn csv_records(text: &str) -> Result<Vec<Record>, (usize, String)> {
    let mut records = Vec::new();
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut line = 1;
    let mut start = 1;
    let mut chars = text.chars().peekable();
    let mut at_field_start = true;
    let mut any = false;
    while let Some(c) = chars.next() {
        any = true;
        match c {
            '"' if at_field_start => {
                let opened = line;
                loop {
                    match chars.next() {
                        None => {
                            return Err((opened, "a quoted field is never closed".into()));
                        }
                        Some('"') if chars.peek() == Some(&'"') => {
                            chars.next();
                            field.push('"');
                        }
                        Some('"') => break,
                        Some(c) => {
                            if c == '\n' {
                                line += 1;
                            }
                            field.push(c);
                        }
                    }
                }
                match chars.peek() {
                    None | Some(',' | '\n' | '\r') => {}
                    Some(_) => {
                        return Err((line, "text after the closing quote of a field".into()));
                    }
                }
                at_field_start = false;
            }
            '"' => {
                return Err((line, "a quote inside an unquoted field".into()));
            }
            ',' => {
                fields.push(std::mem::take(&mut field));
                at_field_start = true;
            }
            '\r' if chars.peek() == Some(&'\n') => {}
            '\n' => {
                fields.push(std::mem::take(&mut field));
                records.push((start, std::mem::take(&mut fields)));
                line += 1;
                start = line;
                at_field_start = true;
                any = false;
            }
            c => {
                field.push(c);
                at_field_start = false;
            }
        }
    }
    if any {
        fields.push(field);
        records.push((start, fields));
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn row(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn placeholders_are_filled_once_and_a_missing_column_is_named() {
        let r = row(&[("a", "{{b}}"), ("b", "B")]);
        assert_eq!(substitute("x {{a}} {{ b }}", &r).unwrap(), "x {{b}} B");
        assert_eq!(substitute("{{nope}}", &r), Err("nope".to_owned()));
        assert_eq!(
            substitute("{ {{}} {{a b}} }}", &r).unwrap(),
            "{ {{}} {{a b}} }}"
        );
        assert_eq!(substitute("{{a", &r).unwrap(), "{{a");
    }

    #[test]
    fn a_value_in_a_path_may_not_climb_or_be_absolute() {
        let table = |text: &str| toml::Value::Table(text.parse::<toml::Table>().unwrap());
        let template = table("id = \"{{v}}x\"\nfixture = \"fixtures/{{v}}\"\nagent = { context_file = \"c/{{v}}\" }\nprompt = \"{{v}}\"");
        for bad in ["..", "../etc", "a/../../b", "/etc"] {
            let r = row(&[("v", bad)]);
            let error = fill(&template, &r, false).unwrap_err();
            assert_eq!(error.0, "v", "{bad}");
        }
        let only_prompt = table("prompt = \"{{v}}\"\nfixture = \"f/{{w}}\"");
        let r = row(&[("v", "../x"), ("w", "a/b.c")]);
        assert!(fill(&only_prompt, &r, false).is_ok());
    }

    #[test]
    fn csv_fields_hold_quoted_commas_quotes_and_line_breaks() {
        let rows = csv_rows("id,text\r\n1,\"a, \"\"b\"\"\r\nc\"\r\n2,plain\n\n").unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].0, 2);
        assert_eq!(rows[0].1["text"], "a, \"b\"\r\nc");
        assert_eq!(rows[1].0, 4);
        assert_eq!(rows[1].1["text"], "plain");
        assert_eq!(csv_rows("id\n1").unwrap()[0].1["id"], "1");
        assert_eq!(csv_rows("a,b\n,\n").unwrap()[0].1["b"], "");
    }

    #[test]
    fn broken_csv_is_an_error_naming_its_line() {
        assert_eq!(csv_rows("a,b\n1,2\n3\n").unwrap_err().0, 3);
        assert_eq!(csv_rows("a,b\n1,\"open\n\n").unwrap_err().0, 2);
        assert_eq!(csv_rows("a,b\n1,x\"y\n").unwrap_err().0, 2);
        assert_eq!(csv_rows("a,b\n1,\"x\"y\n").unwrap_err().0, 2);
        assert_eq!(csv_rows("a,a\n1,2\n").unwrap_err().0, 1);
    }

    #[test]
    fn a_filled_template_reads_back_as_the_same_table() {
        let text = "id = \"x\"\nn = 2\nf = 0.5\nb = true\nl = [\"a\\nb\", 1]\nt = { \"k y\" = \"\\\"\" }\ncheck = [{ kind = \"k\" }]\n";
        let table: toml::Table = text.parse().unwrap();
        let written = task_table(&toml::Value::Table(table.clone()));
        #[derive(serde::Deserialize)]
        struct Tasks {
            task: Vec<toml::Table>,
        }
        let back: Tasks = toml::from_str(&written).unwrap();
        assert_eq!(back.task, vec![table]);
    }

    #[test]
    fn an_id_two_rows_share_is_named_by_both_rows() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("rows.jsonl"),
            "{\"id\": \"a\"}\n{\"id\": \"b\"}\n{\"id\": \"a\"}\n",
        )
        .unwrap();
        let suite = dir.path().join("s.toml");
        let text = "[defaults]\nmodels = [\"m/x\"]\n\n[[dataset]]\nfile = \"rows.jsonl\"\nid = \"{{id}}\"\nprompt = \"p\"\n";
        let error = crate::suite::parse(&suite, text).unwrap_err().to_string();
        let rows = dir.path().join("rows.jsonl");
        assert!(
            error.starts_with(&format!("{}:3: task `a`: field `id`", rows.display())),
            "{error}"
        );
        assert!(
            error.contains(&format!("(first on {}:1)", rows.display())),
            "{error}"
        );
        assert!(error.ends_with(&format!("(a row of the dataset on {}:4)", suite.display())));
    }

    #[test]
    fn a_rows_task_is_on_its_datasets_line_of_the_suite() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("rows.csv"), "id\nx\ny\n").unwrap();
        let text = "[[task]]\nid = \"w\"\nprompt = \"p\"\n\n[[dataset]]\nfile = \"rows.csv\"\nid = \"{{id}}\"\nprompt = \"p\"\n";
        let suite = crate::suite::parse(&dir.path().join("s.toml"), text).unwrap();
        let lines: Vec<(&str, usize, usize)> = suite
            .tasks
            .iter()
            .map(|t| (t.id.as_str(), t.line, t.models_line))
            .collect();
        assert_eq!(lines, [("w", 1, 1), ("x", 5, 5), ("y", 5, 5)]);
    }

    #[test]
    fn the_suites_digest_covers_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let text = "[defaults]\nmodels = [\"m/x\"]\n\n[[dataset]]\nfile = \"rows.csv\"\nid = \"{{id}}\"\nprompt = \"{{p}}\"\n";
        let digest = |rows: &str| {
            std::fs::write(dir.path().join("rows.csv"), rows).unwrap();
            crate::suite::parse(&dir.path().join("s.toml"), text)
                .unwrap()
                .digest
        };
        assert_ne!(digest("id,p\na,one\n"), digest("id,p\na,two\n"));
        assert_eq!(digest("id,p\na,one\n"), digest("id,p\na,one\n"));
    }

    #[test]
    fn jsonl_values_are_their_text() {
        let rows = jsonl_rows("{\"s\": \"x\", \"n\": 2, \"z\": null}\n\n[1]\n").unwrap_err();
        assert_eq!(rows.0, 3);
        let rows = jsonl_rows("{\"s\": \"x\", \"n\": 2.5, \"z\": null, \"l\": [1]}\n").unwrap();
        assert_eq!(
            rows[0].1,
            row(&[("s", "x"), ("n", "2.5"), ("z", ""), ("l", "[1]")])
        );
    }
}
